"""The evaluation commands' contract: names, options, exit codes, JSON."""

import re

import pytest
from eval_support import add_items
from model_stub import Scripted


def _evaluate(cli, project, stub, *extra):
    return cli(
        "evaluate",
        project.path,
        "--model",
        "openai:gpt-audio-mini",
        "--base-url",
        stub.openai_url,
        "--mode",
        "audio",
        "--prompt",
        "standard",
        "--retries",
        "2",
        *extra,
    )


def test_help_lists_the_contract(cli, capsys):
    for command in ("evaluate", "runs", "reparse", "parse", "power"):
        with pytest.raises(SystemExit) as done:
            cli(command, "--help")
        assert done.value.code == 0
    text = capsys.readouterr().out
    for option in (
        "--model",
        "--base-url",
        "--mode",
        "--prompt",
        "--orders",
        "--concurrency",
        "--rpm",
        "--budget",
        "--resume",
        "--permutations",
        "--languages",
        "--accents",
        "--voices",
        "--limit",
        "--seed",
        "--out",
    ):
        assert option in text


def test_dry_run_shows_counts_and_sends_nothing(audio_project, stub, cli):
    result = _evaluate(cli, audio_project, stub, "--dry-run", "--json")
    assert result.code == 0, result.err
    prepared = result.json()
    plan = prepared["plan"]
    assert plan["requests"] == 6 and plan["by_factor"]["order"] == {"original": 3, "reversed": 3}
    assert prepared["requests_to_send"] == 6 and prepared["already_cached"] == 0 and prepared["resume_run_id"] is None
    assert prepared["preset"]["spec"] == "openai:gpt-audio-mini" and prepared["estimated_cost_usd"] > 0
    assert stub.requests == [] and audio_project.conn.execute("SELECT count(*) FROM runs").fetchone()[0] == 0
    text = _evaluate(cli, audio_project, stub, "--dry-run")
    assert text.code == 0 and "plan: 6 request(s) over 3 item(s)" in text.out
    assert "to send: 6 model call(s)" in text.out and "cost: at most $" in text.out
    assert stub.requests == [] and audio_project.conn.execute("SELECT count(*) FROM jobs").fetchone()[0] == 0


@pytest.mark.slow
def test_dry_run_after_a_run_counts_what_is_reused(audio_project, stub, cli):
    assert _evaluate(cli, audio_project, stub).code == 0
    again = _evaluate(cli, audio_project, stub, "--dry-run", "--json").json()
    assert again["already_cached"] == 6 and again["requests_to_send"] == 0 and again["estimated_cost_usd"] == 0
    resumed = _evaluate(cli, audio_project, stub, "--dry-run", "--resume", "--json").json()
    assert resumed["resume_run_id"] == 1 and resumed["already_stored"] == 6 and resumed["requests_to_send"] == 0


def test_dry_run_needs_no_key(audio_project, stub, cli, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY")
    monkeypatch.setattr("spokenbench.core.foundation.credentials._from_keyring", lambda variable: None)
    result = _evaluate(cli, audio_project, stub, "--dry-run")
    assert result.code == 0, result.err


@pytest.mark.slow
def test_evaluate_runs_and_lists(audio_project, stub, cli):
    result = _evaluate(cli, audio_project, stub, "--json")
    assert result.code == 0, result.err
    assert result.json()["answered"] == 6 and result.json()["status"] == "finished"
    runs = cli("runs", audio_project.path, "--json").json()
    assert len(runs) == 1 and runs[0]["responses"] == 6 and runs[0]["parsed_ok"] == 6 and runs[0]["simulated"] is False
    table = cli("runs", audio_project.path)
    assert "openai:gpt-audio-mini" in table.out and "finished" in table.out
    again = _evaluate(cli, audio_project, stub, "--resume")
    assert again.code == 0 and "6 from cache" not in again.out and "answered 6/6" in again.out


def test_budget_stop_exits_3(audio_project, stub, cli):
    result = _evaluate(
        cli,
        audio_project,
        stub,
        "--budget",
        "0.0003",
        "--price-input",
        "1",
        "--price-output",
        "1",
        "--max-output-tokens",
        "50",
        "--concurrency",
        "1",
    )
    assert result.code == 3 and "budget" in result.out


def test_missing_key_is_a_clear_user_error(audio_project, stub, cli, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY")
    monkeypatch.setattr("spokenbench.core.foundation.credentials._from_keyring", lambda variable: None)
    result = _evaluate(cli, audio_project, stub)
    assert result.code == 2 and "OPENAI_API_KEY" in result.err and stub.requests == []


def test_bad_model_spec(audio_project, cli):
    result = cli("evaluate", audio_project.path, "--model", "gpt", "--mode", "audio", "--prompt", "standard")
    assert result.code == 2 and "PROVIDER:NAME" in result.err
    result = cli("evaluate", audio_project.path, "--model", "acme:x", "--mode", "audio", "--prompt", "standard")
    assert result.code == 2 and "unknown provider" in result.err


@pytest.mark.slow
def test_text_mode_with_permutations(project, stub, cli):
    add_items(project, 2)
    result = cli(
        "evaluate",
        project.path,
        "--model",
        "vllm:m",
        "--base-url",
        stub.openai_url,
        "--mode",
        "text",
        "--prompt",
        "cot",
        "--permutations",
        "gold-position",
        "--seed",
        "3",
        "--json",
    )
    assert result.code == 0, result.err
    assert result.json()["total"] == 8  # 2 items x 4 gold positions
    orders = [r[0] for r in project.conn.execute("SELECT option_order FROM responses WHERE item_id = 1")]
    assert sorted(order.index("B") for order in orders) == [0, 1, 2, 3]


# -- option ranges ------------------------------------------------------------------------------------------

EVALUATE = ["evaluate", "DIR", "--model", "vllm:m", "--base-url", "http://127.0.0.1:9/v1", "--mode", "audio"]
EVALUATE += ["--prompt", "standard"]
BAD_OPTIONS = [
    (EVALUATE, "--rpm", "0"),
    (EVALUATE, "--tpm", "0"),
    (EVALUATE, "--limit", "-1"),
    (EVALUATE, "--limit", "0"),
    (EVALUATE, "--concurrency", "0"),
    (EVALUATE, "--concurrency", "100000"),
    (EVALUATE, "--timeout", "0"),
    (EVALUATE, "--timeout", "-5"),
    (EVALUATE, "--timeout", "nan"),
    (EVALUATE, "--timeout", "3601"),
    (EVALUATE, "--retries", "21"),
    (EVALUATE, "--temperature", "nan"),
    (EVALUATE, "--temperature", "-0.1"),
    (EVALUATE, "--temperature", "2.5"),
    (EVALUATE, "--max-output-tokens", "0"),
    (EVALUATE, "--retries", "0"),
    (EVALUATE, "--budget", "-1"),
    (EVALUATE, "--budget", "0"),
    (EVALUATE, "--price-input", "-1"),
    (EVALUATE, "--price-output", "inf"),
    (EVALUATE, "--price-audio-input", "-0.5"),
    (EVALUATE, "--thinking", "maybe"),
    (EVALUATE, "--thinking", "-3"),
    (EVALUATE, "--base-url", "not a url"),
    (EVALUATE, "--asr-base-url", "ftp://host/x"),
    (EVALUATE, "--convention", "carrier-pigeon"),
    (EVALUATE, "--seed", "-1"),
    (EVALUATE, "--run", "0"),
    (EVALUATE, "--speeds", "0"),
    (EVALUATE, "--volumes", "-1,1"),
    (EVALUATE, "--snr", "loud"),
    (EVALUATE, "--genders", "robot"),
    (EVALUATE, "--voice-source", "stolen"),
    (EVALUATE, "--identifiers", "maybe"),
    (EVALUATE, "--languages", "zz"),
    (["reparse", "DIR"], "--run", "-2"),
    (["parse", "in.jsonl", "--out", "out.jsonl"], "--letters", "AAAA"),
    (["parse", "in.jsonl", "--out", "out.jsonl"], "--letters", "A"),
    (["parse", "in.jsonl", "--out", "out.jsonl"], "--letters", "AB1"),
    (["parse", "in.jsonl", "--out", "out.jsonl"], "--letters", "ABCDEFGHIJK"),
    (["power", "--effect", "3"], "--simulations", "0"),
    (["power", "--effect", "3"], "--simulations", "9"),
    (["power", "--effect", "3"], "--options", "11"),
    (["power", "--effect", "3"], "--power", "1"),
    (["power", "--effect", "3"], "--alpha", "0"),
    (["power", "--effect", "3"], "--conditions", "0"),
    (["power", "--effect", "3"], "--options", "1"),
    (["power", "--effect", "3"], "--base-accuracy", "1.5"),
    (["power", "--effect", "3"], "--consistency", "1"),
    (["power", "--effect", "3"], "--max-questions", "-5"),
    (["power"], "--effect", "0"),
    (["power", "--effect", "3"], "--metric", "f1"),
]


@pytest.mark.parametrize("command, option, value", BAD_OPTIONS, ids=lambda v: v if isinstance(v, str) else v[0])
def test_out_of_range_options_are_refused_up_front(cli, capsys, tmp_path, command, option, value):
    """Each used to start a run whose every request failed (or a meaningless one); now argparse refuses it
    with the option's name and exit code 2, before a project is opened."""
    args = [str(tmp_path / "no-project") if arg == "DIR" else arg for arg in command]
    with pytest.raises(SystemExit) as done:
        cli(*args, option, value)
    assert done.value.code == 2
    assert f"argument {option}" in capsys.readouterr().err


def _subcommand_parsers():
    from spokenbench.core.cli.main import build_parser

    [subparsers] = [a for a in build_parser()._actions if a.__class__.__name__ == "_SubParsersAction"]
    return {name: subparsers.choices[name] for name in ("evaluate", "runs", "reparse", "parse", "power")}


def test_every_numeric_or_enumerated_option_documents_its_range():
    """The range a value must be in is in the option's --help (enumerations show their choices)."""
    from spokenbench.core.cli.arguments import comma_list, http_url, language_list

    undocumented = []
    for command, parser in _subcommand_parsers().items():
        for action in parser._actions:
            if (
                not action.option_strings
                or action.type in (None, str, comma_list, http_url, language_list)
                or action.choices
            ):
                continue
            if not re.search(
                r"\d+ to \d|more than \d|at least \d|\d or more|between \d|but 0|and/or|any number", action.help
            ):
                undocumented.append(f"{command} {action.option_strings[0]}: {action.help}")
    assert not undocumented


def test_help_shows_the_ranges(cli, capsys):
    with pytest.raises(SystemExit):
        cli("evaluate", "--help")
    text = " ".join(capsys.readouterr().out.split())
    for shown in ("1 to 256 (default 8)", "0 to 2; default 0", "more than 0 and at most 3600", "--wait"):
        assert shown in text


def test_settings_out_of_range_are_refused_by_the_library_too(audio_project):
    """The app and scripts call prepare_evaluation directly: the same ranges hold there."""
    from spokenbench.core.evaluation.adapters import GenerationParams
    from spokenbench.core.evaluation.preparation import RunSettings, prepare_evaluation
    from spokenbench.core.evaluation.presets import Price
    from spokenbench.core.foundation.errors import SpokenBenchError
    from spokenbench.core.jobs.remote import RetryPolicy

    base = dict(model="vllm:m", base_url="http://127.0.0.1:9/v1")
    for changes, option in (
        (dict(params=GenerationParams(temperature=float("nan"))), "--temperature"),
        (dict(params=GenerationParams(timeout_s=0)), "--timeout"),
        (dict(params=GenerationParams(max_output_tokens=0)), "--max-output-tokens"),
        (dict(params=GenerationParams(thinking="maybe")), "--thinking"),
        (dict(base_url="not a url"), "--base-url"),
        (dict(rpm=0.0), "--rpm"),
        (dict(budget_usd=float("inf")), "--budget"),
        (dict(price=Price(input=-1.0)), "--price-input"),
        (dict(retry=RetryPolicy(max_attempts=0)), "--retries"),
        (dict(concurrency=0), "--concurrency"),
    ):
        with pytest.raises(SpokenBenchError, match=option):
            prepare_evaluation(audio_project, RunSettings(**{**base, **changes}))
    with pytest.raises(SpokenBenchError, match="--thinking for gemini:gemini-2.5-flash"):
        prepare_evaluation(
            audio_project, RunSettings(model="gemini:gemini-2.5-flash", params=GenerationParams(thinking="high"))
        )


# -- failed requests ----------------------------------------------------------------------------------------


def _closed_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.mark.slow
def test_a_run_whose_every_request_failed_exits_4_with_a_summary_by_kind(audio_project, cli):
    """An unreachable server used to give exit code 0 and 'finished'."""
    url = f"http://127.0.0.1:{_closed_port()}/v1"
    result = cli(
        "evaluate", audio_project.path, "--model", "vllm:m", "--base-url", url, "--mode", "audio", "--prompt", "standard",
        "--retries", "1",
    )  # fmt: skip
    assert result.code == 4, result.err
    assert "run 1 (vllm:m, audio): failed (all requests failed)" in result.out
    assert "every request failed, none was answered — 6 request(s) failed: 6 connection failed" in result.err
    assert f"is the server at {url} up and reachable?" in result.err
    [run] = cli("runs", audio_project.path, "--json").json()
    assert (run["status"], run["stop_reason"], run["errors"]) == ("failed", "all requests failed", 6)
    [job] = cli("jobs", audio_project.path, "--json").json()
    assert job["status"] == "failed" and "6 connection failed" in job["stop_reason"]


@pytest.mark.slow
def test_some_failed_requests_exit_5_and_are_reported_by_kind(audio_project, stub, cli):
    stub.script(Scripted("400"), Scripted("malformed"))
    result = _evaluate(cli, audio_project, stub, "--concurrency", "1", "--retries", "1")
    assert result.code == 5, result.err
    assert "finished" in result.out and "answered 4/6, errors 2" in result.out
    assert "warning: 2 request(s) failed: 1 HTTP 400, 1 malformed reply" in result.err
    assert "HTTP 400: stub 400" in result.err  # one message of each kind
    again = _evaluate(cli, audio_project, stub, "--resume", "--json")  # the failed ones are retried
    assert again.code == 0 and again.json()["answered"] == 6 and again.json()["error_kinds"] == {}


@pytest.mark.slow
def test_all_failed_is_exit_4_with_json_too(audio_project, stub, cli):
    stub.script(*[Scripted("400")] * 6)
    result = _evaluate(cli, audio_project, stub, "--json")
    assert result.code == 4
    summary = result.json()
    assert summary["status"] == "failed" and summary["error_kinds"] == {"HTTP 400": 6}
