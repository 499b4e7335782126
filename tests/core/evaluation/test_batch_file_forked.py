"""The batch file written by a forked sink (large files: the clips read, checked, encoded and written on the other
core while the next lines are planned) is the same file: the pinned digests hold, clips shared by neighbouring
lines give the same bytes however small the cache, and a bad clip, a cancel or a sink that dies leave no file, no
batch record and no process behind, with the store's own message."""

import multiprocessing
import os
import signal

import pytest
from test_batch_file_pinned import PINNED, SETTINGS, written

from spokenbench.core.evaluation import batch_files
from spokenbench.core.evaluation.preparation import RunSettings, prepare_evaluation
from spokenbench.core.foundation.errors import Cancelled, ProjectError, SpokenBenchError
from spokenbench.core.foundation.progress import Progress
from spokenbench.core.store import audio_files

VLLM = RunSettings(model="vllm:my-audio-model", base_url="http://127.0.0.1:9/v1", mode="audio", prompt="standard")


@pytest.fixture
def forked(monkeypatch):
    """Every batch file through a forked sink, in messages of two lines (so several are exercised); the list of
    sinks made."""
    made = []

    class CountedSink(batch_files._ForkedSink):
        def __init__(self, *args):
            super().__init__(*args)
            made.append(self)

    monkeypatch.setattr(batch_files, "_ForkedSink", CountedSink)
    monkeypatch.setattr(batch_files, "FORK_MIN_LINES", 0)
    monkeypatch.setattr(batch_files, "a_core_is_free", lambda: True)
    monkeypatch.setattr(batch_files, "SEND_LINES", 2)
    return made


def no_child_left() -> bool:
    return not multiprocessing.active_children()


@pytest.mark.parametrize("name", list(SETTINGS))
def test_a_forked_sink_writes_the_pinned_file(audio_project, tmp_path, forked, name):
    assert written(audio_project, SETTINGS[name], tmp_path / "requests.jsonl") == PINNED[name]
    assert len(forked) == 1 and no_child_left()


def test_clips_shared_by_lines_give_the_same_bytes_through_either_sink(audio_project, tmp_path, monkeypatch):
    shas = [row[0] for row in audio_project.conn.execute("SELECT sha256 FROM assembled_inputs ORDER BY id")]
    clips = [(sha, "wav", b'"after %d"\n' % n) for n, sha in enumerate(shas)]
    # neighbours sharing a clip, a clip back after others pushed it out of a one-clip cache, two audios in a line
    specs = [(b"head %d:" % n, (clips[n % 3],)) for n in range(7)] + [(b"two:", (clips[4], clips[5])), (b"none\n", ())]
    expected = b""
    for head, audios in specs:
        expected += head + b"".join(
            batch_files._b64encode(audio_project.audio.read_bytes(s, f)) + a for s, f, a in audios
        )
    monkeypatch.setattr(batch_files._LineSink, "CACHED_CLIPS", 1)
    monkeypatch.setattr(batch_files._LineSink, "GATHER_BYTES", 1)  # a write per piece, too
    for make in (batch_files._LineSink, batch_files._ForkedSink):
        path = tmp_path / f"{make.__name__}.jsonl"
        with make(audio_project.audio, os.open(path, os.O_WRONLY | os.O_CREAT)) as sink:
            sink.write(specs[:5])
            sink.write(specs[5:])
        assert path.read_bytes() == expected and sink.written == len(expected)
    assert no_child_left()


def spoil(project, how: str) -> str:
    """Spoil the last clip of the plan; the message the store gives for it."""
    sha = project.conn.execute("SELECT sha256 FROM assembled_inputs ORDER BY id DESC LIMIT 1").fetchone()[0]
    path = project.audio.path_for(sha, "wav")
    if how == "missing":
        path.unlink()
        return "is missing from the project"
    if how == "damaged":
        data = bytearray(path.read_bytes())
        data[-1] ^= 0xFF
        path.write_bytes(bytes(data))
        return "is damaged"
    if how == "link":
        path.unlink()
        path.symlink_to("/dev/zero")
        return "is a symbolic link"
    return "at most"  # too large: the bound is lowered below


@pytest.mark.parametrize("how", ["missing", "damaged", "link", "too large"])
def test_a_bad_clip_is_refused_with_the_stores_message_and_nothing_is_left(
    audio_project, tmp_path, forked, monkeypatch, how
):
    if how == "too large":
        monkeypatch.setattr(audio_files, "MAX_AUDIO_FILE_BYTES", 100)
    words = spoil(audio_project, how)
    prepared = prepare_evaluation(audio_project, VLLM)
    out = tmp_path / "out"
    with pytest.raises(ProjectError, match=words) as forked_error:
        batch_files.write_batch_file(audio_project, prepared, out / "requests.jsonl")
    assert list(out.iterdir()) == []  # neither the file nor its temporary
    assert audio_project.conn.execute("SELECT count(*) FROM batch_jobs").fetchone()[0] == 0
    assert len(forked) == 1 and no_child_left()
    monkeypatch.setattr(batch_files, "FORK_MIN_LINES", 10**9)  # the same message from this process's sink
    with pytest.raises(ProjectError) as here:
        batch_files.write_batch_file(audio_project, prepared, out / "requests.jsonl")
    assert str(here.value) == str(forked_error.value) and len(forked) == 1


def test_a_cancel_while_the_sink_writes_stops_it_and_leaves_nothing(audio_project, tmp_path, forked, monkeypatch):
    monkeypatch.setattr(batch_files, "WRITE_CHUNK", 2)
    progress = Progress(lambda done, total, message: progress.cancel())  # cancelled after the first chunk
    out = tmp_path / "out"
    with pytest.raises(Cancelled):
        batch_files.write_batch_file(audio_project, prepare_evaluation(audio_project, VLLM), out / "r.jsonl", progress)
    assert list(out.iterdir()) == [] and no_child_left()
    assert audio_project.conn.execute("SELECT count(*) FROM batch_jobs").fetchone()[0] == 0


def test_a_sink_that_dies_is_an_error_not_a_hang(audio_project, tmp_path, forked, monkeypatch):
    def die(self, specs):
        os.kill(os.getpid(), signal.SIGKILL)

    monkeypatch.setattr(batch_files._LineSink, "write", die)  # in the forked process: it dies at its first line
    out = tmp_path / "out"
    with pytest.raises(SpokenBenchError, match=r"the process writing the batch file stopped \(exit code -9\)"):
        batch_files.write_batch_file(audio_project, prepare_evaluation(audio_project, VLLM), out / "r.jsonl")
    assert list(out.iterdir()) == [] and no_child_left()
    assert audio_project.conn.execute("SELECT count(*) FROM batch_jobs").fetchone()[0] == 0


@pytest.mark.slow
def test_the_sink_ends_when_its_parent_is_killed_outright(audio_project, tmp_path):
    import subprocess
    import sys
    import time

    from spokenbench.core.foundation.processes import process_alive

    script = (
        "import sys, time\n"
        "from spokenbench.core.evaluation import batch_files\n"
        "from spokenbench.core.evaluation.preparation import RunSettings, prepare_evaluation\n"
        "from spokenbench.core.store import opened\n"
        "batch_files.FORK_MIN_LINES = 0\n"
        "batch_files.a_core_is_free = lambda: True\n"
        "sent = batch_files._ForkedSink.write\n"
        "def write_then_hang(self, specs):\n"
        "    sent(self, specs)\n"
        "    print(self._process.pid, flush=True)\n"
        "    time.sleep(600)\n"
        "batch_files._ForkedSink.write = write_then_hang\n"
        "settings = RunSettings(model='vllm:my-audio-model', base_url='http://127.0.0.1:9/v1', mode='audio')\n"
        "with opened(sys.argv[1]) as project:\n"
        "    batch_files.write_batch_file(project, prepare_evaluation(project, settings), sys.argv[2])\n"
    )
    audio_project.conn.commit()
    parent = subprocess.Popen(
        [sys.executable, "-c", script, str(audio_project.path), str(tmp_path / "r.jsonl")],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        sink = int(parent.stdout.readline())
        assert process_alive(sink)
        parent.kill()
        parent.wait(10)
        deadline = time.monotonic() + 10
        while process_alive(sink) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not process_alive(sink)
    finally:
        parent.kill()
        parent.wait(10)
