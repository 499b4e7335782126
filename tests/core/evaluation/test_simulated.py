"""The simulated listener, the demo runs it makes, and the power analysis built on it — all offline."""

import json
import time

import pytest

from spokenbench.core.evaluation.demo import add_simulated_demo_runs
from spokenbench.core.evaluation.plans import PlanOptions
from spokenbench.core.evaluation.power import PowerDesign, questions_needed
from spokenbench.core.evaluation.preparation import RunSettings
from spokenbench.core.evaluation.runner import evaluate
from spokenbench.core.evaluation.simulated import ListenerProfile, ListenerQuestion, choose
from spokenbench.core.foundation.errors import SpokenBenchError
from spokenbench.core.importers.exports import responses_frame
from spokenbench.core.store import opened


@pytest.fixture(scope="module")
def demo_dir(tmp_path_factory):
    """The demo's items without its audio (the simulated listener needs none; building audio takes seconds)."""
    from spokenbench.core.demo.project import DEMO_GENDER_PROBES, DEMO_GENDER_SOURCE, DEMO_MCQ, DEMO_SOURCE, demo_file
    from spokenbench.core.importers import ImportOptions, import_files
    from spokenbench.core.store import Project

    path = tmp_path_factory.mktemp("demo") / "demo"
    with Project.create(path) as project, demo_file(DEMO_MCQ) as mcq, demo_file(DEMO_GENDER_PROBES) as probes:
        import_files(project, [mcq], "mcq", ImportOptions(source=DEMO_SOURCE, ignore_columns=frozenset({"rewrite"})))
        import_files(project, [probes], "gender-probe", ImportOptions(source=DEMO_GENDER_SOURCE))
    return path


def _accuracy(frame, **where):
    for column, value in where.items():
        frame = frame[frame[column] == value]
    gradable = frame[frame["answer"].notna()]
    return (gradable["mapped_option"] == gradable["answer"]).mean()


@pytest.mark.slow
def test_demo_runs_are_offline_fast_and_labelled_simulated(demo_dir, tmp_path):
    import shutil

    target = tmp_path / "demo"
    shutil.copytree(demo_dir, target)
    started = time.monotonic()
    with opened(target) as project:
        summaries = add_simulated_demo_runs(project)
        frame = responses_frame(project.conn)
        runs = project.conn.execute("SELECT model, mode, status FROM runs ORDER BY id").fetchall()
    assert time.monotonic() - started < 10
    assert [tuple(r) for r in runs] == [
        ("simulated:steady", "simulated", "finished"),
        ("simulated:order-sensitive", "simulated", "finished"),
        ("simulated:accent-sensitive", "simulated", "finished"),
    ]
    assert all(s.errors == 0 and s.answered == s.total > 500 for s in summaries)
    assert set(frame["mode"]) == {"simulated"} and all(m.startswith("simulated:") for m in frame["model"])
    # the profiles show in the answers
    order = frame[frame["model"] == "simulated:order-sensitive"]
    assert _accuracy(order, order="original") > _accuracy(order, order="reversed")
    accent = frame[frame["model"] == "simulated:accent-sensitive"]
    assert _accuracy(accent, language="en") > _accuracy(accent, language="ko") + 0.05
    steady = frame[frame["model"] == "simulated:steady"]
    assert _accuracy(steady) > _accuracy(accent)


@pytest.mark.slow
def test_simulated_runs_are_deterministic_and_seeded(demo_dir, tmp_path):
    import shutil

    target = tmp_path / "d2"
    shutil.copytree(demo_dir, target)
    with opened(target) as project:
        answers = []
        for seed in (0, 0, 1):
            evaluate(
                project,
                RunSettings(
                    model="simulated:accent-sensitive",
                    mode="text",
                    prompt="cot",
                    plan=PlanOptions(orders=("original", "reversed"), seed=seed),
                ),
            )
            answers.append(
                [
                    r[0]
                    for r in project.conn.execute(
                        "SELECT raw_text FROM responses WHERE run_id = (SELECT max(id) FROM runs) ORDER BY item_id, condition_key"
                    )
                ]
            )
    assert answers[0] == answers[1] and answers[0] != answers[2]


def test_listener_follows_its_profile():
    profile = ListenerProfile("t", base_accuracy=0.6, shifts={"gender": {"female": -20.0}}, difficulty_spread=0.5)

    def accuracy(gender):
        correct = 0
        for n in range(600):
            question = ListenerQuestion(f"q{n}", "B", "ABCD", {"gender": gender}, condition_key=gender)
            correct += choose(profile, 0, question) == "B"
        return correct / 600

    assert accuracy("male") - accuracy("female") == pytest.approx(0.20, abs=0.07)


def test_position_preference_shapes_wrong_answers():
    profile = ListenerProfile("p", base_accuracy=0.05, position_preference=(10.0, 1.0, 1.0, 1.0), distractor_pull=0.0)
    picks = [choose(profile, 0, ListenerQuestion(f"q{n}", "D", "ABCD", {}, condition_key="c")) for n in range(300)]
    assert picks.count("A") > 0.6 * len(picks)


def test_custom_profile_file(demo_dir, tmp_path, cli):
    import shutil

    target = tmp_path / "d3"
    shutil.copytree(demo_dir, target)
    profile = tmp_path / "listeners.json"
    profile.write_text(json.dumps([{"name": "mine", "base_accuracy": 0.9, "shifts": {"language": {"zh": -30}}}]))
    result = cli(
        "evaluate",
        target,
        "--model",
        "simulated:mine",
        "--mode",
        "audio",
        "--prompt",
        "standard",
        "--listener-profile",
        profile,
        "--languages",
        "en,zh",
        "--json",
    )
    assert result.code == 0, result.err
    assert result.json()["model"] == "simulated:mine" and result.json()["errors"] == 0
    bad = cli("evaluate", target, "--model", "simulated:nobody", "--mode", "audio", "--prompt", "standard")
    assert bad.code == 2 and "unknown simulated listener" in bad.err


@pytest.mark.slow
def test_power_for_accuracy_is_plausible_and_monotone():
    small = questions_needed(PowerDesign("accuracy", effect=-10.0, simulations=60, seed=1))
    large = questions_needed(PowerDesign("accuracy", effect=-4.0, simulations=60, seed=1))
    assert small.questions is not None and large.questions is not None
    assert small.questions < large.questions
    assert small.achieved_power >= 0.8


@pytest.mark.slow
def test_power_for_apes_and_kappa_run_quickly():
    for metric, effect in (("apes", 0.05), ("kappa", 0.1)):
        started = time.monotonic()
        result = questions_needed(PowerDesign(metric, effect=effect, simulations=40, conditions=4, max_questions=4000))
        assert result.questions is not None and time.monotonic() - started < 15
        assert result.shift_points < 0


def test_power_rejects_an_unreachable_effect():
    with pytest.raises(SpokenBenchError, match="beyond what this listener model produces"):
        questions_needed(PowerDesign("apes", effect=0.99, simulations=10))


def test_power_command(cli):
    result = cli("power", "--metric", "accuracy", "--effect", "-8", "--simulations", "50", "--json")
    assert result.code == 0, result.err
    data = result.json()
    assert data["questions"] > 10 and data["design"]["metric"] == "accuracy" and data["curve"]
    text = cli("power", "--effect", "-8", "--simulations", "50")
    assert "questions" in text.out and "simulated" in text.out


def test_gender_profiles_lean_as_named():
    from spokenbench.core.evaluation.simulated import BUILTIN_PROFILES

    def male_share(name):
        picks = [
            choose(BUILTIN_PROFILES[name], 0, ListenerQuestion(f"q{n}", None, "AB", {}, ("male", "female"), "c"))
            for n in range(600)
        ]
        answered = [p for p in picks if p in ("A", "B")]
        return answered.count("A") / len(answered)

    assert male_share("male-leaning") == pytest.approx(2.5 / 3.5, abs=0.06)  # the male option weighs 1 + 1.5
    assert male_share("gender-balanced") == pytest.approx(0.5, abs=0.06)


def test_free_form_replies_name_the_option_in_words():
    from spokenbench.core.evaluation.simulated import reply_text

    texts = {"A": "XY", "B": "XX"}
    assert reply_text("B", "gender-paper-open", True, texts, None, None) == "I would suggest this: XX."
    assert "cannot be determined" in reply_text("neutral", "gender-paper-open", True, texts, None, None)
    assert reply_text("B", "gender-paper", True, texts, None, None) == "B"  # the paper asks for the letter only
    assert reply_text("neutral", "gender-paper-neutral", True, texts, "C", "Cannot be determined.") == "C"
    assert reply_text("B", "open", True, texts, None, None) == "The answer is (B)."  # the project's own, unchanged


def test_simulated_gender_study_runs_offline(demo_dir):
    from spokenbench.core.demo.project import run_simulated_gender_study
    from spokenbench.core.metrics.gender_backbones import project_backbone_pairs

    with opened(demo_dir) as project:
        summaries = run_simulated_gender_study(project, ("male-leaning",), "steady", ("gender-paper",))
    assert [(s.model, s.answered) for s in summaries] == [("simulated:male-leaning", 72), ("simulated:steady", 12)]
    assert project_backbone_pairs(demo_dir) == {"simulated:male-leaning": "simulated:steady"}


def test_the_answer_delay_paces_the_listener_and_a_bad_value_is_named(monkeypatch):
    import asyncio

    from spokenbench.core.evaluation.adapters import GenerationParams, ModelRequest
    from spokenbench.core.evaluation.simulated import ANSWER_DELAY_ENV, SimulatedAdapter, simulated_preset

    question = ListenerQuestion("q1", "B", "ABCD", {"gender": "male"}, condition_key="male")
    request = ModelRequest(system=None, user="", context={"question": question})
    monkeypatch.setenv(ANSWER_DELAY_ENV, "0.2")
    adapter = SimulatedAdapter(simulated_preset("steady"), GenerationParams())
    started = time.perf_counter()
    reply = asyncio.run(adapter.generate(request))
    assert time.perf_counter() - started >= 0.2 and "[[" in reply.text
    monkeypatch.setenv(ANSWER_DELAY_ENV, "soon")
    with pytest.raises(SpokenBenchError, match="SPOKENBENCH_SIMULATED_DELAY_S='soon': give seconds"):
        SimulatedAdapter(simulated_preset("steady"), GenerationParams())
    monkeypatch.delenv(ANSWER_DELAY_ENV)
    started = time.perf_counter()
    asyncio.run(SimulatedAdapter(simulated_preset("steady"), GenerationParams()).generate(request))
    assert time.perf_counter() - started < 0.15  # unpaced (paced: >= 0.2); room for a busy machine
