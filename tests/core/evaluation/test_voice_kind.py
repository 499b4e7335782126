"""`spokenbench evaluate … --voice-kind original|neutralized|all` (the gender paper's Section 5): which question
clips a gender-probe run hears. The default is the original male and female voices, so a neutralized clip (which
keeps its source voice's gender) never mixes into the male-vs-female comparison; 'neutralized' hears those clips
alone (condition voice_source 'neutralized'), 'all' both."""

import pytest

from spokenbench.core.evaluation.plans import PlanOptions, build_plan
from spokenbench.core.foundation.errors import SpokenBenchError
from spokenbench.core.store import Project

NEUTRALIZED = {"espeak-male-neutral-approx", "espeak-female-neutral-approx"}


def plan(demo, **options):
    with Project.open(demo) as project:
        return build_plan(project.conn, PlanOptions(mode="audio+text-options", kind="gender-probe", **options))


@pytest.mark.slow
def test_the_default_hears_the_original_voices_only(built_demo):
    requests = plan(built_demo).requests
    assert requests and not {r.condition.voice for r in requests} & NEUTRALIZED
    assert {r.condition.voice_source for r in requests} == {"direct"}
    assert {r.condition.gender for r in requests} == {"male", "female"}


@pytest.mark.slow
def test_neutralized_hears_the_neutralized_clips_alone_with_their_source_gender(built_demo):
    requests = plan(built_demo, voices="neutralized").requests
    assert len(requests) == 24  # 12 probes × the neutralized approximation of one male and one female voice
    assert {r.condition.voice for r in requests} == NEUTRALIZED
    assert {r.condition.voice_source for r in requests} == {"neutralized"}
    genders = {r.condition.voice: r.condition.gender for r in requests}
    assert genders == {"espeak-male-neutral-approx": "male", "espeak-female-neutral-approx": "female"}
    every = plan(built_demo, voices="all").requests
    assert len(every) == len(plan(built_demo).requests) + 24


@pytest.mark.slow
def test_a_simulated_listener_answers_for_the_projects_neutralized_clips(built_demo):
    neutralized = plan(built_demo, voices="neutralized", simulated=True).requests
    assert {r.condition.voice for r in neutralized} == NEUTRALIZED and len(neutralized) == 24
    grid = plan(built_demo, simulated=True).requests  # the listener's metadata grid, as before
    assert not {r.condition.voice for r in grid} & NEUTRALIZED
    assert len(plan(built_demo, voices="all", simulated=True).requests) == len(grid) + 24


def test_the_option_needs_heard_voices_and_keeps_old_runs_identity():
    assert "voices" not in PlanOptions().as_dict()  # runs made before the option resume as they were
    options = PlanOptions(mode="audio+text-options", voices="neutralized")
    assert options.as_dict()["voices"] == "neutralized"
    assert PlanOptions.from_dict(options.as_dict()) == options
    assert PlanOptions.from_dict({"mode": "audio"}).voices == "original"


@pytest.mark.slow
def test_text_mode_refuses_neutralized_voices(built_demo):
    with Project.open(built_demo) as project, pytest.raises(SpokenBenchError, match="needs an audio mode"):
        build_plan(project.conn, PlanOptions(mode="text", kind="gender-probe", voices="neutralized"))


@pytest.mark.slow
def test_cli_voice_kind(built_demo, cli):
    base = ("evaluate", built_demo, "--model", "simulated:male-leaning", "--mode", "audio+text-options")
    base += ("--prompt", "gender-paper", "--kind", "gender-probe", "--dry-run", "--json")
    default = cli(*base)
    assert default.code == 0, default.err
    assert "neutralized" not in default.json()["plan"]["by_factor"].get("voice_source", {})
    result = cli(*base, "--voice-kind", "neutralized")
    assert result.code == 0, result.err
    assert result.json()["plan"]["requests"] == 24
    assert set(result.json()["plan"]["by_factor"]["voice"]) == NEUTRALIZED
    with pytest.raises(SystemExit) as done:
        cli(*base, "--voice-kind", "mixed")
    assert done.value.code == 2
