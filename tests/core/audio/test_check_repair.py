"""A damaged or deleted clip file: `assemble` builds every other input and lists the ones it skipped,
`check` finds the file, `check --repair` marks it for re-creation (keeping the clip's row, transcripts and
ratings), `synthesize` re-creates it and `assemble` then builds the rest."""

import asyncio

import pytest

from spokenbench.core.audio.assembly import AssemblySettings, plan_assembly, run_assembly
from spokenbench.core.audio.synthesis import plan_synthesis, run_synthesis


def synthesize(project, backend):
    plan = plan_synthesis(project.conn, backend, languages=["en"], voices=["low"])  # two accents
    return plan, asyncio.run(run_synthesis(project, plan))


def assemble(project):
    plan = plan_assembly(project.conn, ["original"], languages=["en"])
    return plan, run_assembly(project, plan, (), AssemblySettings())


def clip_of(project, source_id, part="question"):
    """The American-accent clip of an English item's part (the tone backend gives both accents the same audio,
    so the British clip shares its file)."""
    return project.conn.execute(
        "SELECT c.id, c.sha256, c.audio_format FROM clips c JOIN items i ON i.id = c.item_id "
        "WHERE i.source_id = ? AND i.language = 'en' AND c.accent = 'american' AND c.part = ?",
        (source_id, part),
    ).fetchone()


def clips_sharing(project, sha):
    return {row[0] for row in project.conn.execute("SELECT id FROM clips WHERE sha256 = ?", (sha,))}


@pytest.mark.slow
def test_a_damaged_clip_is_found_skipped_repaired_and_recreated(mini_project, tone_backend, cli):
    project = mini_project
    synthesize(project, tone_backend)
    damaged, deleted = clip_of(project, "q1"), clip_of(project, "q1", "option_B")
    project.conn.execute(
        "INSERT INTO ratings(clip_id, annotator, rating, created_at) VALUES (?, 'ann', 'correct', 'now')", (damaged[0],)
    )
    damaged_path = project.audio.path_for(damaged[1], damaged[2])
    damaged_path.write_bytes(damaged_path.read_bytes()[:200])  # truncated
    project.audio.path_for(deleted[1], deleted[2]).unlink()

    plan, report = assemble(project)
    assert len(plan.jobs) == 4 and report.assembled == 2, "q2's inputs are built"
    assert len(report.skipped) == 2 and all(message.startswith("q1 (en)") for message in report.skipped)

    found = cli("check", project.path, "--json")
    assert found.code == 1
    problems = {b["problem"]: set(b["references"]["clip"]) for b in found.json()["bad_files"]}
    assert problems == {"damaged": clips_sharing(project, damaged[1]), "missing": clips_sharing(project, deleted[1])}
    repaired = cli("check", project.path, "--repair", "--json")
    assert repaired.code == 0 and repaired.json()["repaired"]["clips_to_synthesize_again"] == 4

    plan, report = synthesize(project, tone_backend)
    assert len(plan.jobs) == 4 and report.synthesized == 4 and report.failed == 0
    assert clip_of(project, "q1")[0] == damaged[0], "the clip keeps its id, so its rating stays attached"
    assert project.conn.execute("SELECT count(*) FROM ratings WHERE clip_id = ?", (damaged[0],)).fetchone()[0] == 1
    assert cli("check", project.path).code == 0

    plan, report = assemble(project)
    assert report.skipped == [] and report.assembled == 2, "only the two skipped inputs were left to build"


@pytest.mark.slow
def test_a_deleted_clip_file_is_synthesized_again_without_check(mini_project, tone_backend):
    project = mini_project
    synthesize(project, tone_backend)
    deleted = clip_of(project, "q1")
    project.audio.path_for(deleted[1], deleted[2]).unlink()
    plan, report = synthesize(project, tone_backend)
    assert len(plan.jobs) == 2 and report.synthesized == 2, "both accents' clips shared the file"
    assert project.audio.read_bytes(deleted[1], deleted[2])  # the same recipe gives the same bytes back
