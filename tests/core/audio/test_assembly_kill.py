"""SIGKILL during `assemble` (issue 13, item 7): assembly writes its files in groups — each to a temp file, the
group fsynced together, renamed, each folder fsynced once — and only then commits the group's rows in one
transaction. Killed at any of those moments, the project must hold no row whose file is missing or damaged, no
temp file once reopened, and a rerun must build exactly the inputs not stored yet."""

import asyncio
import hashlib
import os
import signal
import subprocess
import sys
import textwrap

import pytest

from spokenbench.core.audio.assembly import AssemblySettings, plan_assembly, run_assembly
from spokenbench.core.audio.synthesis import plan_synthesis, run_synthesis
from spokenbench.core.store import Project

ORDERS = ["original", "reversed", "order-backward", "token-backward", "CABD", "BADC"]
OPTIONS = {"speeds": [1.0, 1.25], "volumes": [1.0, 1.5]}  # the plain path and the perturbed one
CHUNKS = [4.0]

ASSEMBLE = textwrap.dedent(
    """
    import os, sys
    from spokenbench.core.audio.assembly import AssemblySettings, plan_assembly, run_assembly
    from spokenbench.core.foundation.progress import Progress
    from spokenbench.core.store import Project
    from spokenbench.core.store.audio_files import AudioStore

    moment = sys.argv[2]

    def pause(marker):
        print(marker, flush=True)
        sys.stdin.readline()  # wait here until killed

    if moment == "renaming":  # the second group's files written, the first of them about to be renamed
        real_replace, renames = os.replace, []

        def paused_replace(src, dst):
            renames.append(dst)
            if len(renames) == 12:
                pause("KILL-NOW")
            real_replace(src, dst)

        os.replace = paused_replace
    if moment == "durable":  # a group durable and in place, its rows not yet committed
        real_durable, groups = AudioStore.make_durable, []

        def paused_durable(self, files):
            real_durable(self, files)
            groups.append(files)
            if len(groups) == 2:
                pause("KILL-NOW")

        AudioStore.make_durable = paused_durable

    def report(done, total, message):
        if moment == "committed" and done >= 1:
            print("KILL-NOW", flush=True)  # killed while it goes on building, writing and committing

    with Project.open(sys.argv[1]) as project:
        plan = plan_assembly(project.conn, {orders!r}, languages=["en"], **{options!r})
        if moment == "start":
            print("KILL-NOW", flush=True)
        run_assembly(project, plan, {chunks!r}, AssemblySettings(), Progress(report))
    print("FINISHED", flush=True)
    """
).format(orders=ORDERS, options=OPTIONS, chunks=CHUNKS)


@pytest.fixture
def voiced_project(mini_project, tone_backend):
    plan = plan_synthesis(mini_project.conn, tone_backend, languages=["en"], accents=["american"])
    asyncio.run(run_synthesis(mini_project, plan))
    return mini_project


def plan(project):
    return plan_assembly(project.conn, ORDERS, languages=["en"], **OPTIONS)


def assert_every_row_has_its_whole_file(project) -> int:
    rows = project.conn.execute(
        "SELECT sha256, audio_format FROM assembled_inputs UNION ALL "
        "SELECT c.sha256, a.audio_format FROM input_chunks c JOIN assembled_inputs a ON a.id = c.input_id"
    ).fetchall()
    for sha, audio_format in rows:
        data = project.audio.path_for(sha, audio_format).read_bytes()  # FileNotFoundError if missing
        assert hashlib.sha256(data).hexdigest() == sha, "a stored row refers to a damaged file"
    return project.conn.execute("SELECT count(*) FROM assembled_inputs").fetchone()[0]


def kill_at(project_path, moment: str) -> None:
    process = subprocess.Popen(
        [sys.executable, "-c", ASSEMBLE, str(project_path), moment],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    line = process.stdout.readline().strip()
    assert line == "KILL-NOW", process.stderr.read()
    os.kill(process.pid, signal.SIGKILL)
    process.wait(10)
    assert process.returncode == -signal.SIGKILL


@pytest.mark.slow
@pytest.mark.parametrize("moment", ["start", "committed", "renaming", "durable"])
def test_sigkill_during_assembly_keeps_only_whole_files_and_a_rerun_builds_only_the_rest(voiced_project, moment):
    total = len(plan(voiced_project).jobs)
    assert total >= 40  # several groups of files
    path = voiced_project.path
    voiced_project.close()
    kill_at(path, moment)
    with Project.open(path) as project:  # reopening removes the killed process's temp files
        assert list(project.audio.temp_dir.iterdir()) == []
        stored = assert_every_row_has_its_whole_file(project)
        assert stored < total
        if moment == "durable":  # a group's files in place, its rows never committed: unused, whole, harmless
            on_disk = {path.stem for path in project.audio.root.glob("*/*.wav")}
            referenced = {
                row[0]
                for row in project.conn.execute(
                    "SELECT sha256 FROM assembled_inputs UNION SELECT sha256 FROM input_chunks "
                    "UNION SELECT sha256 FROM clips"
                )
            }
            assert len(on_disk - referenced) >= 8
        rest = plan(project)
        assert len(rest.jobs) == total - stored and rest.already_done == stored, "stored inputs are not redone"
        report = run_assembly(project, rest, CHUNKS, AssemblySettings())
        assert report.assembled == total - stored and report.skipped == []
        assert assert_every_row_has_its_whole_file(project) == total
        assert plan(project).jobs == []
        assert list(project.audio.temp_dir.iterdir()) == []


@pytest.mark.slow
def test_grouped_files_are_the_bytes_the_single_file_path_writes(voiced_project):
    """The grouped, 16-bit fast path stores exactly what encoding the assembled audio gives (same sha256s),
    for plain and perturbed inputs, whole and in chunks."""
    from spokenbench.core.audio import assembly

    settings = AssemblySettings()
    jobs = plan(voiced_project).jobs[:12] + plan(voiced_project).jobs[-12:]
    cache = assembly.SegmentCache(voiced_project, settings)
    for job in jobs:
        final, cuts, clean, _ = assembly.render(job, cache, settings)
        expected = [
            assembly.encode_audio(final[a:b], settings.sample_rate, "wav")
            for a, b in zip(*(lambda b: (b, b[1:]))(assembly.chunk_bounds(clean, settings.sample_rate, cuts, 4.0, "x")))
        ] + [assembly.encode_audio(final, settings.sample_rate, "wav")]
        built = assembly.build_input(job, cache, settings, CHUNKS)
        assert [b"".join(bytes(memoryview(p).cast("B")) for p in parts) for parts in built.outputs] == expected
    assert any(job.condition.speed != 1.0 for job in jobs) and any(job.condition.speed == 1.0 for job in jobs)


@pytest.mark.slow
def test_assemble_wav_bytes_reuses_prepared_clips_and_gives_the_same_audio(voiced_project):
    from spokenbench.core.audio import assembly

    clips = voiced_project.conn.execute("SELECT sha256, audio_format FROM clips LIMIT 5").fetchall()
    data = [voiced_project.audio.read_bytes(sha, fmt) for sha, fmt in clips]
    settings = AssemblySettings(sample_rate=22_050)
    assembly._prepared_clips.clear()
    first = assembly.assemble_wav_bytes(data[0], data[1:], settings=settings)
    calls = []
    real = assembly.prepare_segment
    assembly.prepare_segment = lambda *a, **k: calls.append(1) or real(*a, **k)
    try:
        again = assembly.assemble_wav_bytes(data[0], data[1:], settings=settings)
        assert again == first and calls == []  # every clip came from the cache
        other = assembly.assemble_wav_bytes(data[0], data[1:], settings=AssemblySettings(sample_rate=16_000))
        assert len(calls) == 5 and other != first  # another rate is another key
    finally:
        assembly.prepare_segment = real
    assembly._prepared_clips.clear()
    uncached = assembly.assemble_wav_bytes(data[0], data[1:], settings=settings)
    assert uncached == first


@pytest.mark.slow
@pytest.mark.parametrize("bytes_in_flight, inputs_in_flight", [(1, 4), (2**20, 1), (64 * 2**20, 64)])
def test_any_memory_bound_or_group_size_finishes_every_input(
    voiced_project, monkeypatch, bytes_in_flight, inputs_in_flight
):
    """Admission waits while built inputs hold BYTES_IN_FLIGHT; whatever the bounds, the job finishes (no
    deadlock between waiting to build and waiting to store) and stores everything."""
    from spokenbench.core.audio import assembly

    monkeypatch.setattr(assembly, "BYTES_IN_FLIGHT", bytes_in_flight)
    monkeypatch.setattr(assembly, "INPUTS_IN_FLIGHT", inputs_in_flight)
    jobs = plan_assembly(voiced_project.conn, ORDERS[:3], languages=["en"], speeds=[1.0, 1.25]).jobs
    report = run_assembly(
        voiced_project, plan_assembly(voiced_project.conn, ORDERS[:3], languages=["en"], speeds=[1.0, 1.25])
    )
    assert report.assembled == len(jobs) > 0
    assert assert_every_row_has_its_whole_file(voiced_project) == len(jobs)
