import asyncio
import os
import signal
import subprocess
import sys
import textwrap

import pytest

from spokenbench.core.audio.synthesis import plan_synthesis, run_synthesis
from spokenbench.core.audio.tts import get_backend
from spokenbench.core.store import Project
from spokenbench.core.store.summary import project_summary


def synthesize(project, backend, **plan_options):
    plan = plan_synthesis(project.conn, backend, **plan_options)
    return plan, asyncio.run(run_synthesis(project, plan))


def test_plan_counts_every_part_accent_voice_and_token(mini_project, tone_backend):
    plan = plan_synthesis(mini_project.conn, tone_backend)
    # items: en 2 × 5 parts × 2 accents × 2 voices + ko 1 × 5 × 1 × 2; tokens: en american+british, ko→en american
    assert len(plan.jobs) == 2 * 5 * 2 * 2 + 1 * 5 * 1 * 2 + 2 * 5 * 2
    assert "tone has no indian accent for en" in plan.unsupported
    questions_only = plan_synthesis(
        mini_project.conn, tone_backend, languages=["en"], voices=["low"], parts=("questions",)
    )
    assert len(questions_only.jobs) == 2 * 2


@pytest.mark.slow
def test_synthesis_is_cached_and_resumable(mini_project, tone_backend):
    plan, report = synthesize(mini_project, tone_backend)
    assert report.synthesized + report.reused == len(plan.jobs) and report.failed == 0
    calls = len(tone_backend.calls)
    again, second = synthesize(mini_project, tone_backend)
    assert again.jobs == [] and again.already_done == len(plan.jobs)
    assert len(tone_backend.calls) == calls, "nothing may be synthesized twice"
    rows = mini_project.conn.execute(
        "SELECT count(*), count(DISTINCT sha256) FROM clips WHERE status = 'ok'"
    ).fetchone()
    assert rows[0] == len(plan.jobs)
    for sha, fmt in mini_project.conn.execute("SELECT sha256, audio_format FROM clips LIMIT 5"):
        assert mini_project.audio.read_bytes(sha, fmt)  # stored and intact


def test_identical_text_is_synthesized_once(mini_project, tone_backend, tmp_path):
    from support import write_jsonl

    from spokenbench.core.importers import ImportOptions, import_files

    twin = [
        {
            "id": "q9",
            "language": "en",
            "question": "Which gas do plants take in?",
            "options": ["Oxygen", "Carbon dioxide", "Nitrogen", "Helium"],
            "answer": "B",
        }
    ]
    import_files(mini_project, [write_jsonl(tmp_path / "twin.jsonl", twin)], "mcq", ImportOptions(source="twin"))
    plan, report = synthesize(
        mini_project,
        tone_backend,
        languages=["en"],
        voices=["low"],
        accents=["american"],
        parts=("questions", "options"),
    )
    assert len(plan.jobs) == 3 * 5
    assert report.reused == 5 and len(tone_backend.calls) == 2 * 5


def test_a_silent_clip_is_marked_failed_never_stored_as_good(project, tone_backend, tmp_path):
    from support import write_jsonl

    from spokenbench.core.importers import ImportOptions, import_files

    rows = [
        {"id": "s1", "language": "en", "question": "SILENT question here?", "options": ["yes", "no"], "answer": "A"}
    ]
    import_files(project, [write_jsonl(tmp_path / "s.jsonl", rows)], "mcq", ImportOptions())
    plan, report = synthesize(project, tone_backend, voices=["low"], accents=["american"], parts=("questions",))
    assert report.failed == 1 and "silent" in report.failures[0] and "s1 (en) question" in report.failures[0]
    status, sha, failure = project.conn.execute("SELECT status, sha256, failure FROM clips").fetchone()
    assert (status, sha) == ("failed", None) and "silent" in failure
    assert project_summary(project.conn)["clips"]["failed"] == 1
    retry = plan_synthesis(project.conn, tone_backend, voices=["low"], accents=["american"], parts=("questions",))
    assert len(retry.jobs) == 1, "a failed clip is planned again on the next run"


KILLED_SYNTHESIS = textwrap.dedent(
    """
    import asyncio, sys
    sys.path[:0] = [sys.argv[2], sys.argv[3]]
    from audio_support import ToneBackend
    from spokenbench.core.audio.synthesis import plan_synthesis, run_synthesis
    from spokenbench.core.foundation.progress import Progress
    from spokenbench.core.store import Project

    halfway = []

    def report(done, total, message):
        if done >= 12 and not halfway:  # progress counts committed clips, several per commit
            halfway.append(done)
            print(f"HALFWAY {done}", flush=True)
            sys.stdin.readline()

    with Project.open(sys.argv[1]) as project:
        backend = ToneBackend()
        backend.max_concurrency = 1
        asyncio.run(run_synthesis(project, plan_synthesis(project.conn, backend), Progress(report)))
    """
)


@pytest.mark.slow
def test_killed_synthesis_resumes_without_redoing_stored_clips(mini_project, tone_backend):
    total = len(plan_synthesis(mini_project.conn, tone_backend).jobs)
    process = subprocess.Popen(
        [
            sys.executable,
            "-c",
            KILLED_SYNTHESIS,
            str(mini_project.path),
            os.path.dirname(__file__),
            os.path.dirname(os.path.dirname(os.path.dirname(__file__))),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    line = process.stdout.readline().split()
    assert line[:1] == ["HALFWAY"], process.stderr.read()
    reported = int(line[1])
    os.kill(process.pid, signal.SIGKILL)
    process.wait(10)
    with Project.open(mini_project.path) as reopened:
        stored = reopened.conn.execute("SELECT count(*) FROM clips WHERE status = 'ok'").fetchone()[0]
        assert reported <= stored < total, "every clip reported done survived the kill"
        plan, report = synthesize(reopened, tone_backend)
        assert len(plan.jobs) == total - stored and report.failed == 0
        assert reopened.conn.execute("SELECT count(*) FROM clips").fetchone()[0] == total


@pytest.mark.slow
def test_espeak_synthesizes_the_mini_project(mini_project):
    plan, report = synthesize(mini_project, get_backend("espeak"))
    assert report.failed == 0 and report.synthesized > 0
    voices = {r[0] for r in mini_project.conn.execute("SELECT DISTINCT voice FROM clips")}
    assert voices == {"espeak-male", "espeak-female"}
    assert any("Indian-English" in note for note in plan.unsupported)
