"""The batch file written by two processes (a large file, a core free: each unit's lines split between this process
and a forked child, each writing its part at the offset planned from the clips' sizes) is the same file as one
process writes: the pinned digests hold however the lines are split; a bad clip in either process's part gives the
store's own message (the first in line order), a clip whose size changed after it was sized is refused, a child
killed mid-write or a cancel leave no file, no batch record and no process behind, and writing again gives the
file; the clips the child hashed reach the cache of verified clips."""

import json
import multiprocessing
import os
import signal
import sqlite3
import subprocess
import sys
import time

import pytest
from test_batch_file_pinned import PINNED, SETTINGS, written
from test_batch_file_readers import VLLM, spoil
from test_batch_file_speed_paths import resumed_with_one_answer

from spokenbench.core.evaluation import batch_files
from spokenbench.core.evaluation.preparation import prepare_evaluation
from spokenbench.core.foundation.errors import Cancelled, ProjectError, SpokenBenchError
from spokenbench.core.foundation.processes import process_alive
from spokenbench.core.foundation.progress import Progress
from spokenbench.core.store import audio_files, verified_clips

PARENT = os.getpid()


@pytest.fixture
def split(monkeypatch):
    """Every batch file written by two processes, three lines a unit (the first here, two in the child: with the
    tests' six lines, two units, both processes writing in each); the sinks made."""
    made = []

    class CountedSplit(batch_files._SplitSink):
        def __init__(self, *args):
            super().__init__(*args)
            made.append(self)

    monkeypatch.setattr(batch_files, "_SplitSink", CountedSplit)
    monkeypatch.setattr(batch_files, "READERS_MIN_LINES", 0)
    monkeypatch.setattr(batch_files, "SPLIT_MIN_LINES", 0)
    monkeypatch.setattr(batch_files, "SPLIT_LINES", 3)
    monkeypatch.setattr(batch_files, "SHARE_STEP", 0)  # the same lines here and in the child, whatever the timing
    monkeypatch.setattr(batch_files, "LEAD_LINES", 0)  # no chunk's last lines given whole to the child (see below)
    monkeypatch.setattr(batch_files, "a_core_is_free", lambda: True)
    monkeypatch.setattr(batch_files, "child_start_method", lambda: "fork")  # as in the CLI (pytest-xdist: threads)
    yield made
    assert multiprocessing.active_children() == []


def one_process(monkeypatch) -> None:
    monkeypatch.setattr(batch_files, "a_core_is_free", lambda: False)


@pytest.mark.parametrize("name", list(SETTINGS))
def test_two_processes_write_the_pinned_file(audio_project, tmp_path, split, name):
    assert written(audio_project, SETTINGS[name], tmp_path / "requests.jsonl") == PINNED[name]
    assert len(split) == 1


@pytest.mark.parametrize(("unit", "share"), [(1, 0.4), (2, 0.5), (4, 0.4), (5, 0.0), (5, 1.0), (100, 0.7)])
def test_however_the_lines_are_split_the_file_is_the_one_process_file(
    audio_project, tmp_path, split, monkeypatch, unit, share
):
    monkeypatch.setattr(batch_files, "SPLIT_LINES", unit)
    monkeypatch.setattr(batch_files, "PARENT_SHARE", share)
    monkeypatch.setattr(batch_files, "IOV_MAX", 2)
    two = written(audio_project, VLLM, tmp_path / "two.jsonl")
    one_process(monkeypatch)
    assert written(audio_project, VLLM, tmp_path / "one.jsonl") == two == PINNED["audio standard"]
    assert (tmp_path / "two.jsonl").read_bytes() == (tmp_path / "one.jsonl").read_bytes()
    assert len(split) == 1


def _shares_written_here(monkeypatch) -> list[tuple[int, list]]:
    """The (offset, lines) of every share this process writes itself (not its child), filled as they are written."""
    real, here = batch_files._write_share, []

    def counted(source, fd, offset, specs, sizes):
        if os.getpid() == PARENT:
            here.append((offset, specs))
        real(source, fd, offset, specs, sizes)

    monkeypatch.setattr(batch_files, "_write_share", counted)
    return here


def test_a_child_falling_behind_is_given_fewer_lines_and_the_file_is_the_same(
    audio_project, tmp_path, split, monkeypatch
):
    """One line a unit, all of it the child's at first; the child slowed, its lines pile up in a pipe of one page,
    so this process takes the next lines (its share moved by SHARE_STEP), and the file is the pinned one."""
    monkeypatch.setattr(batch_files, "SPLIT_LINES", 1)
    monkeypatch.setattr(batch_files, "PARENT_SHARE", 0.0)
    monkeypatch.setattr(batch_files, "SHARE_STEP", 0.5)
    monkeypatch.setattr(batch_files, "SHARE_PIPE_BYTES", 4096)
    monkeypatch.setattr(batch_files, "SHARE_QUEUE_BYTES", 2048)
    in_the_child(monkeypatch, lambda offset: time.sleep(0.05))
    shares = _shares_written_here(monkeypatch)
    assert written(audio_project, VLLM, tmp_path / "r.jsonl") == PINNED["audio standard"]
    assert 0 < sum(len(specs) for _, specs in shares) < 6  # both wrote lines


def test_near_the_end_this_process_takes_the_lines_a_slow_child_would_leave_it_waiting_for(
    audio_project, tmp_path, split, monkeypatch
):
    """One line a unit, all of them the child's by the steady share (SHARE_STEP 0); the child slowed, so lines pile
    up in its hands, and the last lines are written here instead of waiting for them there; the file is the
    pinned one."""
    monkeypatch.setattr(batch_files, "SPLIT_LINES", 1)
    monkeypatch.setattr(batch_files, "PARENT_SHARE", 0.0)
    in_the_child(monkeypatch, lambda offset: time.sleep(0.05))
    shares = _shares_written_here(monkeypatch)
    path = tmp_path / "r.jsonl"
    assert written(audio_project, VLLM, path) == PINNED["audio standard"]
    here = [offset for offset, _ in shares]
    line_starts = [0] + [n + 1 for n, byte in enumerate(path.read_bytes()) if byte == ord("\n")][:-1]
    assert here and here == line_starts[len(line_starts) - len(here) :]  # the last lines, and only those


@pytest.mark.parametrize("lead", [0, 2])
def test_a_chunks_last_lines_go_to_the_child_and_are_all_handed_out_before_its_rows_are_recorded(
    audio_project, tmp_path, split, monkeypatch, lead
):
    """Chunks of four of the six lines, planned two at a time, three a unit: the lines the sink holds back for a
    unit are split when the chunk ends, before its rows are recorded (this process pauses there); with a lead of
    two lines, the first chunk's last lines are all the child's (in units: its first unit is split after the lead
    began), so its queue lasts through the pause; the last chunk is shared as before, its shares ending together
    (how many of its lines are written here depends on the child's pace: `_ending_share`); the file is the pinned
    one."""
    monkeypatch.setattr(batch_files, "WRITE_CHUNK", 4)
    monkeypatch.setattr(batch_files, "PLAN_LINES", 2)
    monkeypatch.setattr(batch_files, "LEAD_LINES", lead)
    events = []
    real_split, real_insert = batch_files._SplitSink._split, batch_files.batch_store.insert_requests

    def split_unit(self, specs):
        events.append(("split", len(specs)))
        real_split(self, specs)

    def insert(conn, batch_id, rows):
        events.append(("rows", len(rows)))
        real_insert(conn, batch_id, rows)

    monkeypatch.setattr(batch_files._SplitSink, "_split", split_unit)
    monkeypatch.setattr(batch_files.batch_store, "insert_requests", insert)
    shares = _shares_written_here(monkeypatch)
    path = tmp_path / "r.jsonl"
    assert written(audio_project, VLLM, path) == PINNED["audio standard"]
    assert events == [("split", 3), ("split", 1), ("rows", 4), ("split", 2), ("rows", 2)]
    line_starts = [0] + [n + 1 for n, byte in enumerate(path.read_bytes()) if byte == ord("\n")][:-1]
    here = [offset for offset, _ in shares]
    if lead:  # lines 0-2 (the unit split after the lead began) the child's; the last chunk shared as before
        assert here and min(here) >= line_starts[3]
    else:
        assert here[0] == line_starts[0]  # PARENT_SHARE of the first unit


@pytest.mark.parametrize(("chunk", "most"), [(4, 2048), (8, 2048), (4, 0)])
def test_the_last_chunks_lines_go_to_the_child_while_this_process_records_their_rows(
    audio_project, tmp_path, split, monkeypatch, chunk, most
):
    """One line a unit, every line written here by the steady share (PARENT_SHARE 1), recording rows slowed to
    0.2 s a chunk. Chunks of four of the six lines: the first chunk's four rows took 0.2 s, so the last chunk's two
    will take ~0.1 s, far longer than two lines take here; both go to the child, which writes them while this
    process records their rows (`_SplitSink.last_pause`), unless no line may be left to it for that
    (LAST_PAUSE_LINES 0). One chunk of all six: nothing was measured before the last chunk, and every line is
    written here. The file is the pinned one in every case."""
    monkeypatch.setattr(batch_files, "WRITE_CHUNK", chunk)
    monkeypatch.setattr(batch_files, "LAST_PAUSE_LINES", most)
    monkeypatch.setattr(batch_files, "SPLIT_LINES", 1)
    monkeypatch.setattr(batch_files, "PARENT_SHARE", 1.0)
    real_insert = batch_files.batch_store.insert_requests

    def slowed(conn, batch_id, rows):
        time.sleep(0.2)
        real_insert(conn, batch_id, rows)

    monkeypatch.setattr(batch_files.batch_store, "insert_requests", slowed)
    shares = _shares_written_here(monkeypatch)
    path = tmp_path / "r.jsonl"
    assert written(audio_project, VLLM, path) == PINNED["audio standard"]
    line_starts = [0] + [n + 1 for n, byte in enumerate(path.read_bytes()) if byte == ord("\n")][:-1]
    here = [offset for offset, _ in shares]
    assert here == (line_starts[:4] if chunk == 4 and most else line_starts)


def test_a_unit_sent_to_the_child_carries_each_shared_middle_once(audio_project, tmp_path, split, monkeypatch):
    """The planner's lines keep their key apart from the presentation's middle (the body up to the audio), which
    the lines of a presentation share: pickled once per unit, so the child's pipe holds ~3x the lines; the file is
    the pinned one."""
    from multiprocessing.connection import Connection
    from multiprocessing.reduction import ForkingPickler

    monkeypatch.setattr(batch_files, "SPLIT_LINES", 6)
    monkeypatch.setattr(batch_files, "PARENT_SHARE", 0.0)
    sent: list[tuple[int, int, int]] = []  # per unit: its lines, its distinct middles, the middles in its pickle
    real_send = Connection.send

    def measured(self, message):
        if message is not None:
            specs = message[2]
            heads = [b"".join(head) for head, _audios in specs]
            middles = {head[head.index(b',"method"') :] for head in heads}
            pickled = bytes(ForkingPickler.dumps(message))
            sent.append((len(specs), len(middles), pickled.count(b'"method":"POST"')))
        real_send(self, message)

    monkeypatch.setattr(Connection, "send", measured)
    assert written(audio_project, VLLM, tmp_path / "r.jsonl") == PINNED["audio standard"]
    assert sent and all(pickled == middles for _lines, middles, pickled in sent)
    assert sum(middles for _lines, middles, _pickled in sent) < sum(lines for lines, _middles, _pickled in sent)


def test_the_decision_follows_the_cores_the_size_and_the_start_method(audio_project, tmp_path, monkeypatch):
    monkeypatch.setattr(batch_files, "READERS_MIN_LINES", 0)
    monkeypatch.setattr(batch_files, "SPLIT_MIN_LINES", 100)
    path = str(tmp_path / "f")

    def sink(free: bool, method: str | None, requests: int):
        monkeypatch.setattr(batch_files, "a_core_is_free", lambda: free)
        monkeypatch.setattr(batch_files, "child_start_method", lambda: method)
        made = batch_files._sink_for(audio_project.audio, os.open(path, os.O_WRONLY | os.O_CREAT), requests, path)
        with made:
            return type(made).__name__, getattr(made, "_pool", None) is not None

    assert sink(True, "fork", 100) == ("_SplitSink", False)
    assert sink(True, "fork", 99) == ("_LineSink", True)  # a small file: a reader thread
    assert sink(True, "spawn", 100) == ("_LineSink", True)  # other threads run: no fork
    assert sink(False, "fork", 100) == ("_LineSink", False)  # a busy machine: one thread
    assert multiprocessing.active_children() == []


def test_a_resumed_runs_file_holds_only_what_it_has_not_answered_and_counts_it_before_planning(
    audio_project, tmp_path, split, monkeypatch
):
    """The plan is keyed and written as it is made (no list of it first): the sink and the progress are given the
    count of requests left before any is planned, and the file holds exactly those lines."""
    stored, resumed = resumed_with_one_answer(audio_project, VLLM)
    counts, reports = [], []
    real_sink_for = batch_files._sink_for

    def sink_for(audio, fd, requests, path=None):
        counts.append(requests)
        return real_sink_for(audio, fd, requests, path)

    monkeypatch.setattr(batch_files, "_sink_for", sink_for)
    monkeypatch.setattr(batch_files, "WRITE_CHUNK", 2)  # three chunks, reported one by one
    progress = Progress(lambda done, total, message: reports.append((done, total)))
    out = tmp_path / "resumed.jsonl"
    summary = batch_files.write_batch_file(audio_project, resumed, out, progress)
    assert counts == [5] and summary.requests == summary.lines == 5 and reports == [(2, 5), (4, 5), (5, 5)]
    keys = [json.loads(line)["custom_id"] for line in out.read_text().splitlines()]
    rows = audio_project.conn.execute("SELECT item_id, condition_key FROM batch_requests ORDER BY rowid").fetchall()
    assert len(keys) == len(set(keys)) == 5 and len(rows) == 5
    assert (stored.planned.item_id, stored.planned.condition_key) not in {tuple(row) for row in rows}
    assert len(split) == 1


def test_when_no_second_process_can_start_one_writes_the_file(audio_project, tmp_path, split, monkeypatch):
    def no_fork(process):
        raise BlockingIOError(11, "Resource temporarily unavailable")

    monkeypatch.setattr(multiprocessing.get_context("fork").Process, "start", no_fork)
    assert written(audio_project, VLLM, tmp_path / "r.jsonl") == PINNED["audio standard"]
    assert split == []  # the one-process sink wrote it


def in_the_child(monkeypatch, before) -> None:
    """Call `before(share)` in the child before it writes each share (the fork inherits the patch)."""
    real = batch_files._write_share

    def patched(source, fd, offset, specs, sizes):
        if os.getpid() != PARENT:
            before(offset)
        real(source, fd, offset, specs, sizes)

    monkeypatch.setattr(batch_files, "_write_share", patched)


def last_clip(project):
    sha = project.conn.execute("SELECT sha256 FROM assembled_inputs ORDER BY id DESC LIMIT 1").fetchone()[0]
    return sha, project.audio.path_for(sha, "wav")


def nothing_left(project, out) -> None:
    assert not out.exists() or list(out.iterdir()) == []  # neither the file nor its temporary
    assert project.conn.execute("SELECT count(*) FROM batch_jobs").fetchone()[0] == 0
    assert project.conn.execute("SELECT count(*) FROM batch_requests").fetchone()[0] == 0


@pytest.mark.parametrize("how", ["missing", "damaged", "link", "too large"])
def test_a_bad_clip_in_the_childs_part_is_the_stores_message_and_nothing_is_left(
    audio_project, tmp_path, split, monkeypatch, how
):
    if how == "too large":
        monkeypatch.setattr(audio_files, "MAX_AUDIO_FILE_BYTES", 100)
    words = spoil(audio_project, how)  # the last line's clip: the child's part of the last unit
    prepared = prepare_evaluation(audio_project, VLLM)
    out = tmp_path / "out"
    with pytest.raises(ProjectError, match=words) as two:
        batch_files.write_batch_file(audio_project, prepared, out / "requests.jsonl")
    nothing_left(audio_project, out)
    assert len(split) == 1
    one_process(monkeypatch)
    with pytest.raises(ProjectError) as one:
        batch_files.write_batch_file(audio_project, prepared, out / "requests.jsonl")
    assert str(one.value) == str(two.value)


def damage(project, row: int) -> str:
    sha = project.conn.execute("SELECT sha256 FROM assembled_inputs ORDER BY id LIMIT 1 OFFSET ?", (row,)).fetchone()
    path = project.audio.path_for(sha[0], "wav")
    data = bytearray(path.read_bytes())
    data[-1] ^= 0xFF
    path.write_bytes(bytes(data))
    return sha[0]


@pytest.mark.parametrize(
    ("rows", "named"),
    [((0,), 0), ((2,), 2), ((1, 3), 1), ((2, 3), 2), ((4, 3), 3)],
    ids=["parent's part", "child's part", "child first", "parent after the child", "both in one unit"],
)
def test_of_several_bad_clips_the_first_in_line_order_is_named_by_either_process(
    audio_project, tmp_path, split, monkeypatch, rows, named
):
    """Lines 0 and 3 are this process's (the first of each unit of three), 1, 2, 4 and 5 the child's."""
    order = prepare_evaluation(audio_project, VLLM)
    shas = {row: damage(audio_project, row) for row in rows}
    with pytest.raises(ProjectError) as two:
        batch_files.write_batch_file(audio_project, order, tmp_path / "out" / "r.jsonl")
    one_process(monkeypatch)
    with pytest.raises(ProjectError) as one:
        batch_files.write_batch_file(audio_project, order, tmp_path / "out" / "r.jsonl")
    assert str(one.value) == str(two.value) and shas[named] in str(two.value)
    nothing_left(audio_project, tmp_path / "out")


def test_a_clip_whose_size_changed_after_it_was_sized_is_refused(audio_project, tmp_path, split, monkeypatch):
    """The clip was longer when this process sized it (a damaged copy) and is whole again when the child reads it:
    its base64 is not the length its line's offset was planned with, so it is refused, never spliced in."""
    sha, path = last_clip(audio_project)
    whole = path.read_bytes()
    path.write_bytes(whole + b"more")

    shares = []

    def put_back(offset):  # before the child's second part (its line sized by then), not before its first
        shares.append(offset)
        if len(shares) == 2:
            path.write_bytes(whole)

    in_the_child(monkeypatch, put_back)
    out = tmp_path / "out"
    with pytest.raises(ProjectError, match=f"audio file .*{sha}.wav changed while the batch file was written"):
        batch_files.write_batch_file(audio_project, prepare_evaluation(audio_project, VLLM), out / "r.jsonl")
    nothing_left(audio_project, out)
    assert written(audio_project, VLLM, out / "r.jsonl") == PINNED["audio standard"]  # whole: written again


def test_a_child_killed_mid_write_leaves_no_file_and_writing_again_gives_it(
    audio_project, tmp_path, split, monkeypatch
):
    shares = []

    def killed_after_one(offset):
        shares.append(offset)
        if len(shares) == 2:  # its first part written, killed before the second
            os.kill(os.getpid(), signal.SIGKILL)

    in_the_child(monkeypatch, killed_after_one)
    out = tmp_path / "out"
    with pytest.raises(SpokenBenchError, match="second process writing the batch file ended before it was done"):
        batch_files.write_batch_file(audio_project, prepare_evaluation(audio_project, VLLM), out / "r.jsonl")
    nothing_left(audio_project, out)
    monkeypatch.undo()
    assert written(audio_project, VLLM, out / "r.jsonl") == PINNED["audio standard"]


def test_a_cancel_stops_the_child_and_leaves_nothing(audio_project, tmp_path, split, monkeypatch):
    monkeypatch.setattr(batch_files, "WRITE_CHUNK", 3)
    monkeypatch.setattr(batch_files, "SEND_LINES", 1)
    progress = Progress(lambda done, total, message: progress.cancel())  # cancelled after the first chunk
    out = tmp_path / "out"
    with pytest.raises(Cancelled):
        batch_files.write_batch_file(audio_project, prepare_evaluation(audio_project, VLLM), out / "r.jsonl", progress)
    nothing_left(audio_project, out)
    assert len(split) == 1 and multiprocessing.active_children() == []


def caught_signals(pid: int) -> int:
    with open(f"/proc/{pid}/status") as status:
        return int(next(line for line in status if line.startswith("SigCgt:")).split()[1], 16)


def test_the_child_ends_on_sigterm_whatever_handler_it_inherited(audio_project, tmp_path):
    """The CLI turns SIGTERM into Ctrl-C, which the child ignores: a child keeping that handler would outlive the
    SIGTERM its parent ends it with."""
    previous = signal.signal(signal.SIGTERM, lambda signum, frame: None)
    try:
        path = str(tmp_path / "f")
        sink = batch_files._SplitSink(audio_project.audio, os.open(path, os.O_WRONLY | os.O_CREAT), path)
    finally:
        signal.signal(signal.SIGTERM, previous)
    try:
        (child, _pipe), *_ = sink._children.calls
        deadline = time.monotonic() + 10
        while caught_signals(child.pid) & 1 << (signal.SIGTERM - 1) and time.monotonic() < deadline:
            time.sleep(0.01)  # until the child has set its own SIGTERM handling (it starts with the parent's)
        os.kill(child.pid, signal.SIGTERM)
        child.join(10)
        assert child.exitcode == -signal.SIGTERM
    finally:
        sink.__exit__(Cancelled, Cancelled(), None)


def cached_entries() -> set[tuple]:
    path = verified_clips.cache_dir() / verified_clips.CACHE_FILE_NAME
    with sqlite3.connect(path) as conn:
        return set(conn.execute("SELECT * FROM verified_clips"))


def test_clips_the_child_hashed_reach_the_cache_and_are_not_hashed_again(audio_project, tmp_path, split, monkeypatch):
    monkeypatch.setattr(verified_clips, "RACY_NS", 50_000_000)
    time.sleep(0.1)  # the clips older than the racily-clean margin
    assert written(audio_project, VLLM, tmp_path / "cold.jsonl") == PINNED["audio standard"]
    cold = cached_entries()
    clips = [row[0] for row in audio_project.conn.execute("SELECT sha256 FROM assembled_inputs")]
    assert sorted(entry[0] for entry in cold) == sorted(clips)  # both processes' clips, each recorded once
    assert written(audio_project, VLLM, tmp_path / "warm.jsonl") == PINNED["audio standard"]
    assert cached_entries() == cold  # nothing hashed again (a hash is recorded with its own time)


@pytest.mark.slow
def test_the_child_of_a_writer_killed_outright_ends_and_leaves_no_complete_file(audio_project, tmp_path):
    script = (
        "import json, os, sys, time\n"
        "from spokenbench.core.evaluation import batch_files\n"
        "from spokenbench.core.evaluation.preparation import RunSettings\n"
        "from spokenbench.core.store import opened\n"
        "batch_files.READERS_MIN_LINES = batch_files.SPLIT_MIN_LINES = 0\n"
        "batch_files.SPLIT_LINES = 3\n"
        "batch_files.LEAD_LINES = 0\n"  # this process writes a part of each unit
        "batch_files.a_core_is_free = lambda: True\n"
        "parent, real = os.getpid(), batch_files._write_share\n"
        "def write_then_hang(*args):\n"
        "    real(*args)\n"
        "    if os.getpid() == parent:\n"
        "        print(next(p.pid for p in __import__('multiprocessing').active_children()), flush=True)\n"
        "        time.sleep(600)\n"
        "batch_files._write_share = write_then_hang\n"
        "with opened(sys.argv[1]) as project:\n"
        "    batch_files.write_batch_file_for_settings(project, RunSettings(**json.loads(sys.argv[3])), sys.argv[2])\n"
    )
    audio_project.conn.commit()
    target = tmp_path / "out" / "r.jsonl"
    settings = json.dumps({"model": VLLM.model, "base_url": VLLM.base_url, "mode": VLLM.mode, "prompt": VLLM.prompt})
    command = [sys.executable, "-c", script, str(audio_project.path), str(target), settings]
    with subprocess.Popen(command, stdout=subprocess.PIPE, text=True) as writer:
        try:
            child = int(writer.stdout.readline())  # the parent has written its first part, the child is alive
        finally:
            writer.kill()  # SIGKILL: no handler, no clean-up
    deadline = time.monotonic() + 10
    while process_alive(child) and time.monotonic() < deadline:  # its pipe's end: the child stops
        time.sleep(0.05)
    assert not process_alive(child)
    left = list(target.parent.iterdir())
    assert not target.exists() and len(left) == 1 and left[0].name.endswith(".part")
    from spokenbench.core.store import batches as batch_store

    (killed,) = audio_project.conn.execute("SELECT id, state FROM batch_jobs").fetchall()
    assert killed[1] == "writing" and batch_store.file_request_rows(audio_project.conn) == []
    with audio_project.transaction() as conn:
        batch_store.delete_batch(conn, killed[0])
    assert written(audio_project, VLLM, target) == PINNED["audio standard"]


def warm_cache(project, tmp_path, monkeypatch) -> None:
    """Every clip of the project in the cache of verified clips (a first file written, its record then removed)."""
    monkeypatch.setattr(verified_clips, "RACY_NS", 50_000_000)
    time.sleep(0.1)  # the clips older than the racily-clean margin
    assert written(project, VLLM, tmp_path / "cold.jsonl") == PINNED["audio standard"]
    assert len(cached_entries()) == project.conn.execute("SELECT count(*) FROM assembled_inputs").fetchone()[0]
    project.conn.execute("DELETE FROM batch_jobs")


def test_a_unit_is_sized_from_the_cache_and_its_child_asks_the_cache_nothing(
    audio_project, tmp_path, split, monkeypatch
):
    """The next model's file: the cache knows every clip, so this process stats none of them to plan the offsets,
    and the child vouches for its clips by what this process looked up with the unit (one query per unit here,
    none there); the file is the same."""
    warm_cache(audio_project, tmp_path, monkeypatch)
    stats, queries = [], tmp_path / "queries"
    real_stat, real_look_up = os.stat, verified_clips.VerifiedClips.look_up

    def counted_stat(path, *args, **kwargs):
        stats.append(str(path))
        return real_stat(path, *args, **kwargs)

    def counted_look_up(self, sha256s):
        with open(queries, "a") as out:
            out.write(f"{'parent' if os.getpid() == PARENT else 'child'}\n")
        real_look_up(self, sha256s)

    monkeypatch.setattr(batch_files.os, "stat", counted_stat)
    monkeypatch.setattr(verified_clips.VerifiedClips, "look_up", counted_look_up)
    assert written(audio_project, VLLM, tmp_path / "warm.jsonl") == PINNED["audio standard"]
    assert not [path for path in stats if str(audio_project.audio.root) in path]
    assert queries.read_text().split() == ["parent", "parent"]  # two units of three lines, one look-up each


@pytest.mark.parametrize("row", [0, 2], ids=["parent's part", "child's part"])
@pytest.mark.parametrize("change", ["removed", "longer"])
def test_a_clip_the_cache_sized_that_is_gone_or_changed_is_the_stores_message(
    audio_project, tmp_path, split, monkeypatch, row, change
):
    """Sized from the cache, a clip removed since, or with other bytes of another size, is refused when it is read
    with the store's own message (missing, or damaged: its stat no longer matches the cache's, so it is hashed),
    the same as one process gives; nothing is left."""
    warm_cache(audio_project, tmp_path, monkeypatch)
    sha = audio_project.conn.execute(
        "SELECT sha256 FROM assembled_inputs ORDER BY id LIMIT 1 OFFSET ?", (row,)
    ).fetchone()[0]
    path = audio_project.audio.path_for(sha, "wav")
    path.unlink() if change == "removed" else path.write_bytes(path.read_bytes() + b"more")
    prepared = prepare_evaluation(audio_project, VLLM)
    out = tmp_path / "out"
    with pytest.raises(ProjectError) as two:
        batch_files.write_batch_file(audio_project, prepared, out / "requests.jsonl")
    assert sha in str(two.value) and ("missing" if change == "removed" else "damaged") in str(two.value)
    nothing_left(audio_project, out)
    one_process(monkeypatch)
    with pytest.raises(ProjectError) as one:
        batch_files.write_batch_file(audio_project, prepared, out / "requests.jsonl")
    assert str(one.value) == str(two.value)
