"""Saving ratings into a pack file where that is slow (a pack of real audio on a USB stick or a share): the whole
zip is rewritten, so a save reports its bytes and can be stopped, one process saves at a time, and a save killed
mid-write leaves the pack whole and its temp file to be removed by the next save, not for good. The first
opening, which copies every clip out of the pack, is reported and stoppable the same way."""

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import pytest

from spokenbench.core.foundation.file_system import folder_lock
from spokenbench.core.foundation.processes import owner_tag
from spokenbench.core.foundation.progress import Cancelled, Progress
from spokenbench.core.qc import pack_folders
from spokenbench.core.qc.pack_folders import SAVE_LOCK_FILE, open_pack, pack_folder, save_pack_ratings
from spokenbench.core.qc.packs import read_pack
from spokenbench.core.qc.rating_session import SynchronousRatingSession

QUEUE = "demo-qc"


@pytest.fixture
def rated_pack(demo_copy, tmp_path, cli, monkeypatch):
    """The demo's queue packed for 'ana' (~5 MB), opened, and two clips rated in its folder (not yet in the file);
    saves sync (and report) every 256 KiB, as a pack of real audio does every 4 MiB."""
    monkeypatch.setattr(pack_folders, "SYNC_BYTES", 256 * 1024)
    pack = tmp_path / "stick" / "ana.sbpack"
    pack.parent.mkdir()
    assert cli("pack", demo_copy, "--queue", QUEUE, "--annotator", "ana", "--out", pack).code == 0
    with open_pack(pack) as project:
        session = SynchronousRatingSession.open(project, QUEUE, "ana")
        for key in ("1", "3"):
            session.press(key)
    assert read_pack(pack).ratings == []
    return pack


def temp_files(pack):
    return sorted(path.name for path in pack.parent.iterdir() if path.name.endswith(".part"))


def test_a_save_reports_the_bytes_it_copies_and_the_pack_then_carries_the_ratings(rated_pack):
    reports = []
    assert save_pack_ratings(rated_pack, Progress(lambda done, total, _message: reports.append((done, total)))) == 2
    assert reports and all(total == reports[0][1] for _done, total in reports)
    assert [done for done, _total in reports] == sorted(done for done, _total in reports)
    assert reports[-1][0] > 0.9 * reports[0][1]  # everything but the ratings and signature, copied
    assert len(read_pack(rated_pack).ratings) == 2 and temp_files(rated_pack) == []


def test_a_stopped_save_leaves_the_pack_as_it_was_and_no_temp_file(rated_pack):
    before = rated_pack.read_bytes()
    stop = threading.Event()

    def halfway(done, total, _message):
        if done > total // 2:
            stop.set()

    with pytest.raises(Cancelled):
        save_pack_ratings(rated_pack, Progress(halfway, stop))
    assert rated_pack.read_bytes() == before and temp_files(rated_pack) == []


SLOW_SAVE = textwrap.dedent(
    """
    import sys, time
    from spokenbench.core.foundation.progress import Progress
    from spokenbench.core.qc import pack_folders
    from spokenbench.core.qc.pack_folders import save_pack_ratings

    pack_folders.SYNC_BYTES = 256 * 1024

    print("saving", flush=True)
    save_pack_ratings(sys.argv[1], Progress(lambda done, total, message: time.sleep(0.05)))
    """
)


def test_a_save_killed_mid_write_leaves_the_pack_whole_and_the_next_save_removes_its_temp_file(rated_pack):
    """As when the app is killed, or quit before the save ended: before, the killed save's temp file (as large
    as the pack) stayed beside it for good, one more each time."""
    before = rated_pack.read_bytes()
    saver = subprocess.Popen([sys.executable, "-c", SLOW_SAVE, str(rated_pack)], stdout=subprocess.PIPE, text=True)
    try:
        assert saver.stdout.readline() == "saving\n"
        deadline = time.monotonic() + 30
        while not temp_files(rated_pack) and time.monotonic() < deadline:
            time.sleep(0.02)
        leftover = temp_files(rated_pack)
        assert len(leftover) == 1 and f".{owner_tag().split('.')[0]}.{saver.pid}." in leftover[0]
        time.sleep(0.3)  # some of the pack copied
    finally:
        saver.send_signal(signal.SIGKILL)
        saver.wait()
    assert temp_files(rated_pack) == leftover
    assert rated_pack.read_bytes() == before and read_pack(rated_pack).ratings == []  # whole, as it was
    assert save_pack_ratings(rated_pack) == 2
    assert temp_files(rated_pack) == []


def test_a_temp_file_still_being_written_or_another_machines_recent_one_is_left_alone(rated_pack):
    live = rated_pack.parent / f".ana.sbpack.{owner_tag()}.abc123.part"  # this process: alive
    foreign = rated_pack.parent / ".ana.sbpack.another_host.4242.def456.part"
    foreign_old = rated_pack.parent / ".ana.sbpack.another_host.4243.0a1b2c.part"
    other_pack = rated_pack.parent / f".bo.sbpack.{owner_tag().split('.')[0]}.999999999.x.part"
    for path in (live, foreign, foreign_old, other_pack):
        path.write_bytes(b"partial zip")
    two_days_ago = time.time() - 2 * 86_400
    os.utime(foreign_old, (two_days_ago, two_days_ago))
    assert save_pack_ratings(rated_pack) == 2
    assert temp_files(rated_pack) == sorted([live.name, foreign.name, other_pack.name])


SAVE_WITH_THE_CLI = (
    "from spokenbench.core.cli.main import main; import sys; sys.exit(main(['pack-ratings', sys.argv[1]]))"
)


def test_two_processes_saving_one_pack_take_turns(rated_pack):
    """The app's automatic save and `spokenbench pack-ratings` (or a script) on the same pack: each reads the
    ratings only once it holds the pack folder's lock, so the one that saves last has the latest."""
    with folder_lock(pack_folder(rated_pack), lock_file=SAVE_LOCK_FILE):
        saver = subprocess.Popen(
            [sys.executable, "-c", SAVE_WITH_THE_CLI, str(rated_pack)], stdout=subprocess.PIPE, text=True
        )
        time.sleep(2.0)
        assert saver.poll() is None  # waiting for this process's save
        assert read_pack(rated_pack).ratings == []
    out, _ = saver.communicate(timeout=60)
    assert saver.returncode == 0 and "now carries 2 rating(s)" in out
    assert len(read_pack(rated_pack).ratings) == 2


def test_a_save_waiting_for_another_can_be_stopped(rated_pack):
    stop = threading.Event()
    with folder_lock(pack_folder(rated_pack), lock_file=SAVE_LOCK_FILE):
        timer = threading.Timer(0.3, stop.set)
        timer.start()
        started = time.monotonic()
        with pytest.raises(Cancelled):
            save_pack_ratings(rated_pack, Progress(None, stop))
        assert time.monotonic() - started < 5


def test_where_the_file_system_refuses_locks_saves_in_one_process_still_take_turns(rated_pack, monkeypatch):
    """NFS emulates flock with byte-range locks, which a folder opened for reading cannot take (EBADF): the
    folder lock was skipped and two saves of one pack in the app could rename in either order (review of
    a3203d6). The lock is now a regular file in the pack's folder, and threads of one process take turns
    whatever the file system says."""
    import errno
    import fcntl

    def refused(fd, operation):
        raise OSError(errno.EBADF, "Bad file descriptor")

    monkeypatch.setattr(fcntl, "flock", refused)
    inside, overlapped = [], []

    def hold():
        with folder_lock(pack_folder(rated_pack), lock_file=SAVE_LOCK_FILE):
            overlapped.append(bool(inside))
            inside.append(1)
            time.sleep(0.3)
            inside.pop()

    threads = [threading.Thread(target=hold) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert overlapped == [False, False]
    assert (pack_folder(rated_pack) / SAVE_LOCK_FILE).is_file()


def test_a_first_opening_reports_its_bytes_and_a_stopped_one_leaves_no_folder(demo_copy, tmp_path, cli):
    pack = tmp_path / "stick" / "bo.sbpack"
    pack.parent.mkdir()
    assert cli("pack", demo_copy, "--queue", QUEUE, "--annotator", "bo", "--out", pack).code == 0
    stop, reports = threading.Event(), []

    def stop_halfway(done, total, _message):
        reports.append((done, total))
        if done > total // 2:
            stop.set()

    with pytest.raises(Cancelled):
        open_pack(pack, Progress(stop_halfway, stop))
    assert sorted(path.name for path in pack.parent.iterdir()) == ["bo.sbpack"]  # no folder, no temp folder
    reports.clear()
    open_pack(pack, Progress(lambda done, total, _message: reports.append((done, total)))).close()
    assert reports[-1][0] == reports[-1][1] > 1_000_000 and pack_folder(pack).is_dir()


SLOW_OPENING = textwrap.dedent(
    """
    import sys, time
    from spokenbench.core.foundation.progress import Progress
    from spokenbench.core.qc.pack_folders import open_pack

    open_pack(sys.argv[1], Progress(lambda done, total, message: time.sleep(0.05)))
    """
)


def test_an_opening_killed_midway_leaves_a_temp_folder_the_next_opening_removes(demo_copy, tmp_path, cli):
    """Before, a first opening killed midway (the app quit or killed while it unpacked: ~30 s for 112 MB on a
    USB 2 stick) left its temp folder, as large as the pack's audio, beside the pack for good."""
    pack = tmp_path / "stick" / "bo.sbpack"
    pack.parent.mkdir()
    assert cli("pack", demo_copy, "--queue", QUEUE, "--annotator", "bo", "--out", pack).code == 0
    opener = subprocess.Popen([sys.executable, "-c", SLOW_OPENING, str(pack)])
    try:
        deadline = time.monotonic() + 30
        while len(list(pack.parent.iterdir())) < 2 and time.monotonic() < deadline:
            time.sleep(0.02)
        time.sleep(0.5)  # some clips copied
    finally:
        opener.send_signal(signal.SIGKILL)
        opener.wait()
    left = [path.name for path in pack.parent.iterdir() if path.name != "bo.sbpack"]
    assert len(left) == 1 and left[0].startswith(".bo.sbpack.d.") and not pack_folder(pack).exists()
    open_pack(pack).close()
    assert sorted(path.name for path in pack.parent.iterdir()) == ["bo.sbpack", "bo.sbpack.d"]
