"""Hearing the Order's own setup (issue 13 item 3): the simple-evals prompt verbatim with its 1024-token limit,
and the paper's data filter — exactly four options, audio of at most 180 s — as plan options and CLI flags."""

import pytest
from eval_support import add_assembled, add_items

from spokenbench.core.domain.conditions import Condition
from spokenbench.core.domain.items import Item, Option
from spokenbench.core.evaluation.plans import PlanOptions, build_plan
from spokenbench.core.evaluation.prompts import prompt_output_tokens, render_prompt
from spokenbench.core.foundation.errors import SpokenBenchError
from spokenbench.core.store.items import insert_items

SIMPLE_EVALS = (  # openai/simple-evals, QUERY_TEMPLATE_MULTICHOICE, filled for this question
    "Answer the following multiple choice question. The last line of your response should be of the following "
    "format: 'Answer: $LETTER' (without quotes) where LETTER is one of ABCD. Think step by step before answering."
    "\n\nWhat is 2+2?\n\nA) 3\nB) 4\nC) 5\nD) 6"
)


def test_the_simple_evals_prompt_is_the_template_verbatim_with_no_system_prompt():
    rendered = render_prompt("simple-evals", "text", "What is 2+2?", ["3", "4", "5", "6"], "ABCD", "ABCD", True, "en")
    assert rendered.system is None and rendered.user == SIMPLE_EVALS
    spoken = render_prompt("simple-evals", "audio", "What is 2+2?", ["3", "4", "5", "6"], "ABCD", "ABCD", True, "en")
    assert spoken.system is None and spoken.user == SIMPLE_EVALS.split("\n\n")[0]  # the rest is heard
    three = render_prompt("simple-evals", "text", "Q?", ["x", "y", "z"], "CAB", "ABC", True, "en")
    assert "LETTER is one of ABC." in three.user and three.user.endswith("A) z\nB) x\nC) y")


def test_the_prompt_sets_output_limit_is_the_runs_default():
    assert prompt_output_tokens("simple-evals") == 1024
    assert prompt_output_tokens("standard") == 4096


def _five_option_item() -> Item:
    options = tuple(Option(letter, text) for letter, text in zip("ABCDE", "vwxyz"))
    return Item(source="t", source_id="five", language="en", question="Q?", options=options, answer="A")


def test_only_questions_with_the_asked_number_of_options_are_planned(project):
    four = add_items(project, 2)
    with project.transaction() as conn:
        [five] = insert_items(conn, [_five_option_item()])
    plan = build_plan(project.conn, PlanOptions(mode="text", option_count=4))
    assert sorted(plan.items) == sorted(four) and five not in {r.item_id for r in plan.requests}
    only_five = build_plan(project.conn, PlanOptions(mode="text", option_count=5))
    assert list(only_five.items) == [five]
    with pytest.raises(SpokenBenchError, match="--option-count"):
        build_plan(project.conn, PlanOptions(mode="text", option_count=3))


def test_a_question_with_an_input_over_the_limit_is_left_out_whole_and_said(project):
    ids = add_items(project, 3)
    for item_id, long_reversed in zip(ids, (False, True, False)):
        for order in ("original", "reversed"):
            seconds = 200.0 if (long_reversed and order == "reversed") else 60.0
            condition = Condition(language="en", accent="american", voice="Zephyr", gender="female", order=order)
            add_assembled(project, item_id, condition, seconds=seconds)
    options = PlanOptions(mode="audio", orders=("original", "reversed"), max_audio_s=180.0)
    plan = build_plan(project.conn, options)
    assert {r.item_id for r in plan.requests} == {ids[0], ids[2]} and len(plan.requests) == 4
    assert plan.warnings == ["1 question(s) left out: an input is longer than 180 s (--max-audio-seconds)"]
    assert PlanOptions.from_dict(options.as_dict()) == options  # stored with the run, resumed alike
    everything = build_plan(project.conn, PlanOptions(mode="audio", orders=("original", "reversed")))
    assert len(everything.requests) == 6 and everything.warnings == []


def test_the_cli_takes_the_filter_and_the_prompt(cli, project):
    add_items(project, 2)
    path = project.path
    project.close()
    result = cli(
        "evaluate", path, "--model", "simulated:steady", "--mode", "text", "--prompt", "simple-evals",
        "--option-count", "4", "--dry-run", "--json",
    )  # fmt: skip
    assert result.code == 0, result.err
    with pytest.raises(SystemExit) as refused:  # argparse refuses it before anything runs
        cli("evaluate", path, "--model", "simulated:steady", "--mode", "text", "--prompt", "standard",
            "--option-count", "1", "--dry-run")  # fmt: skip
    assert refused.value.code == 2
