"""The batch file written with a writing thread and reader threads (a file of many lines, a core free: the clips
read, checked and encoded on a reader thread and the lines written on another while the caller plans and records
the next lines) is the same file: the pinned digests hold, clips shared by neighbouring lines give the same bytes
however small the cache, the read-ahead stays bounded, and a bad clip, a failing reader or a cancel leave no file,
no batch record and no thread behind, with the store's own message. A writer killed outright leaves its
temporary, never a complete-looking file; writing again gives the same file."""

import os
import threading

import pytest
from test_batch_file_pinned import PINNED, SETTINGS, written

from spokenbench.core.evaluation import batch_files
from spokenbench.core.evaluation.preparation import RunSettings, prepare_evaluation
from spokenbench.core.foundation.errors import Cancelled, ProjectError
from spokenbench.core.foundation.progress import Progress
from spokenbench.core.store import audio_files

VLLM = RunSettings(model="vllm:my-audio-model", base_url="http://127.0.0.1:9/v1", mode="audio", prompt="standard")


def reader_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("spokenbench-batch-clips")]


@pytest.fixture(params=[1, 2], ids=["1 reader", "2 readers"])
def readers(request, monkeypatch):
    """Every batch file read by reader threads, two lines per task and one task ahead (so that several tasks,
    the read-ahead and its bound are exercised); the sinks made."""
    made = []

    class CountedSink(batch_files._LineSink):
        def __init__(self, *args):
            super().__init__(*args)
            made.append(self)

    monkeypatch.setattr(batch_files, "_LineSink", CountedSink)
    monkeypatch.setattr(batch_files, "READERS_MIN_LINES", 0)
    monkeypatch.setattr(batch_files, "READER_THREADS", request.param)
    monkeypatch.setattr(batch_files, "a_core_is_free", lambda: True)
    monkeypatch.setattr(batch_files._LineSink, "UNIT_LINES", 2)
    monkeypatch.setattr(batch_files._LineSink, "AHEAD_UNITS", 1)
    monkeypatch.setattr(batch_files, "SEND_LINES", 3)
    yield made
    assert reader_threads() == []


@pytest.mark.parametrize("name", list(SETTINGS))
def test_reader_threads_write_the_pinned_file(audio_project, tmp_path, readers, name):
    assert written(audio_project, SETTINGS[name], tmp_path / "requests.jsonl") == PINNED[name]
    assert len(readers) == 1 and readers[0]._pool is not None


def test_a_busy_machine_reads_in_the_writing_thread(audio_project, tmp_path, monkeypatch):
    monkeypatch.setattr(batch_files, "READERS_MIN_LINES", 0)
    monkeypatch.setattr(batch_files, "a_core_is_free", lambda: False)
    sink = batch_files._sink_for(audio_project.audio, os.open(tmp_path / "f", os.O_WRONLY | os.O_CREAT), 10**6)
    with sink:
        assert sink._pool is None
    monkeypatch.setattr(batch_files, "a_core_is_free", lambda: True)
    with batch_files._sink_for(audio_project.audio, os.open(tmp_path / "f", os.O_WRONLY), 10**6) as sink:
        assert sink._pool is not None
    assert reader_threads() == []


@pytest.mark.parametrize("readers", [0, 1, 2])
def test_clips_shared_by_lines_give_the_same_bytes_however_they_are_read(audio_project, tmp_path, monkeypatch, readers):
    shas = [row[0] for row in audio_project.conn.execute("SELECT sha256 FROM assembled_inputs ORDER BY id")]
    clips = [(sha, "wav", b'"after %d"\n' % n) for n, sha in enumerate(shas)]
    # neighbours sharing a clip, a clip back after others pushed it out of a one-clip cache, two audios in a line
    specs = [((b"head %d:" % n,), (clips[n % 3],)) for n in range(7)]
    specs += [((b"two", b":"), (clips[4], clips[5])), ((b"none\n",), ())]  # a head in two pieces, as planned lines
    expected = b""
    for head, audios in specs:
        expected += b"".join(head) + b"".join(
            batch_files._b64encode(audio_project.audio.read_bytes(s, f)) + a for s, f, a in audios
        )
    monkeypatch.setattr(batch_files._LineSink, "CACHED_CLIPS", 1)
    monkeypatch.setattr(batch_files, "IOV_MAX", 1)  # a write per piece, too
    monkeypatch.setattr(batch_files._LineSink, "UNIT_LINES", 2)
    monkeypatch.setattr(batch_files._LineSink, "AHEAD_UNITS", 1)
    path = tmp_path / "lines.jsonl"
    with batch_files._LineSink(audio_project.audio, os.open(path, os.O_WRONLY | os.O_CREAT), readers) as sink:
        sink.write(specs[:5])
        sink.write(specs[5:])
    assert path.read_bytes() == expected and sink.written == len(expected)
    assert reader_threads() == []


def test_the_read_ahead_is_bounded(audio_project, tmp_path, monkeypatch):
    """Reading runs at most AHEAD_UNITS tasks ahead of the writing, whatever the number of lines."""
    monkeypatch.setattr(batch_files._LineSink, "UNIT_LINES", 1)
    monkeypatch.setattr(batch_files._LineSink, "AHEAD_UNITS", 2)
    monkeypatch.setattr(batch_files._LineSink, "CACHED_CLIPS", 1)
    sha = audio_project.conn.execute("SELECT sha256 FROM assembled_inputs LIMIT 1").fetchone()[0]
    other = audio_project.conn.execute("SELECT sha256 FROM assembled_inputs ORDER BY id DESC LIMIT 1").fetchone()[0]
    reads, most_ahead = [0], [0]
    real_read, real_write = batch_files._read_clips, batch_files._LineSink._write_unit
    written_units = [0]

    def counted_read(audio, clips):
        real_read(audio, clips)
        reads[0] += 1

    def counted_write(self, *unit):
        real_write(self, *unit)
        written_units[0] += 1
        most_ahead[0] = max(most_ahead[0], len(self._units))

    monkeypatch.setattr(batch_files, "_read_clips", counted_read)
    monkeypatch.setattr(batch_files._LineSink, "_write_unit", counted_write)
    specs = [((b"%d:" % n,), ((sha if n % 2 else other, "wav", b"\n"),)) for n in range(40)]
    path = tmp_path / "lines.jsonl"
    with batch_files._LineSink(audio_project.audio, os.open(path, os.O_WRONLY | os.O_CREAT), 1) as sink:
        sink.write(specs)
    assert reads[0] == written_units[0] == 40 and most_ahead[0] <= 2


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
    audio_project, tmp_path, readers, monkeypatch, how
):
    if how == "too large":
        monkeypatch.setattr(audio_files, "MAX_AUDIO_FILE_BYTES", 100)
    words = spoil(audio_project, how)
    prepared = prepare_evaluation(audio_project, VLLM)
    out = tmp_path / "out"
    with pytest.raises(ProjectError, match=words) as read_beside:
        batch_files.write_batch_file(audio_project, prepared, out / "requests.jsonl")
    assert list(out.iterdir()) == []  # neither the file nor its temporary
    assert audio_project.conn.execute("SELECT count(*) FROM batch_jobs").fetchone()[0] == 0
    assert len(readers) == 1 and readers[0]._pool is not None and reader_threads() == []
    monkeypatch.setattr(batch_files, "a_core_is_free", lambda: False)  # the same message read in this thread
    with pytest.raises(ProjectError) as here:
        batch_files.write_batch_file(audio_project, prepared, out / "requests.jsonl")
    assert str(here.value) == str(read_beside.value) and readers[1]._pool is None


def test_a_reader_that_fails_otherwise_is_an_error_and_leaves_nothing(audio_project, tmp_path, readers, monkeypatch):
    def fail(audio, clips):
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(batch_files, "_read_clips", fail)
    out = tmp_path / "out"
    with pytest.raises(OSError, match="Input/output error"):
        batch_files.write_batch_file(audio_project, prepare_evaluation(audio_project, VLLM), out / "r.jsonl")
    assert list(out.iterdir()) == [] and reader_threads() == []
    assert audio_project.conn.execute("SELECT count(*) FROM batch_jobs").fetchone()[0] == 0


def test_a_cancel_while_the_readers_read_stops_them_and_leaves_nothing(audio_project, tmp_path, readers, monkeypatch):
    monkeypatch.setattr(batch_files, "WRITE_CHUNK", 2)
    progress = Progress(lambda done, total, message: progress.cancel())  # cancelled after the first chunk
    out = tmp_path / "out"
    with pytest.raises(Cancelled):
        batch_files.write_batch_file(audio_project, prepare_evaluation(audio_project, VLLM), out / "r.jsonl", progress)
    assert list(out.iterdir()) == [] and reader_threads() == []
    assert audio_project.conn.execute("SELECT count(*) FROM batch_jobs").fetchone()[0] == 0


@pytest.mark.slow
def test_a_writer_killed_outright_leaves_no_complete_file_and_writing_again_gives_it(audio_project, tmp_path):
    import signal
    import subprocess
    import sys

    script = (
        "import os, sys, time\n"
        "from spokenbench.core.evaluation import batch_files\n"
        "from spokenbench.core.evaluation.preparation import RunSettings, prepare_evaluation\n"
        "from spokenbench.core.store import opened\n"
        "batch_files.READERS_MIN_LINES = 0\n"
        "batch_files.a_core_is_free = lambda: True\n"
        "batch_files._LineSink.UNIT_LINES = 1\n"
        "batch_files._LineSink.AHEAD_UNITS = 1\n"
        "batch_files.SEND_LINES = 1\n"
        "real = batch_files._LineSink._write_unit\n"
        "def write_then_hang(self, *unit):\n"
        "    real(self, *unit)\n"
        "    print('written', flush=True)\n"
        "    time.sleep(600)\n"
        "batch_files._LineSink._write_unit = write_then_hang\n"
        "settings = RunSettings(model='vllm:my-audio-model', base_url='http://127.0.0.1:9/v1', mode='audio')\n"
        "with opened(sys.argv[1]) as project:\n"
        "    batch_files.write_batch_file(project, prepare_evaluation(project, settings), sys.argv[2])\n"
    )
    audio_project.conn.commit()
    target = tmp_path / "out" / "r.jsonl"
    writer = subprocess.Popen(
        [sys.executable, "-c", script, str(audio_project.path), str(target)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert writer.stdout.readline().strip() == "written"
        os.kill(writer.pid, signal.SIGKILL)
        writer.wait(10)
    finally:
        writer.kill()
        writer.wait(10)
    left = list(target.parent.iterdir())
    assert not target.exists() and len(left) == 1 and left[0].name.endswith(".part") and left[0].stat().st_size > 0
    # the killed file's record stays 'writing' (its rows, recorded while the writing thread wrote, are never
    # matched by an import); the file written again, and its rows, are the pinned ones
    from spokenbench.core.store import batches as batch_store

    killed = audio_project.conn.execute("SELECT id, state FROM batch_jobs").fetchall()
    assert [tuple(row) for row in killed] == [(killed[0][0], "writing")]
    assert batch_store.file_request_rows(audio_project.conn) == []
    with audio_project.transaction() as conn:
        batch_store.delete_batch(conn, killed[0][0])
    assert written(audio_project, VLLM, target) == PINNED["audio standard"]


def test_writes_the_system_cuts_short_are_completed(tmp_path, monkeypatch):
    """`_write_all` (the sink's writes) finishes a writev that wrote part of its buffers, bytes or memoryviews."""
    from spokenbench.core.store import audio_files

    real_writev = os.writev
    calls = []

    def short_writev(fd, buffers):  # at most 5 bytes a call, cutting buffers in the middle
        calls.append(len(buffers))
        return real_writev(fd, [bytes(b"".join(bytes(b) for b in buffers)[:5])])

    monkeypatch.setattr(os, "writev", short_writev)
    pieces = [b"first-", memoryview(b"second-"), b"", b"third"]
    path = tmp_path / "out"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT)
    try:
        audio_files._write_all(fd, list(pieces))
    finally:
        os.close(fd)
    assert path.read_bytes() == b"first-second-third" and len(calls) == 4
