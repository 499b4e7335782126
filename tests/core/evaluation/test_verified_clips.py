"""The user's cache of verified clips (core/store/verified_clips.py): a batch file over clips already hashed on
this machine does not hash them again and writes the same bytes; any change to a clip since (rewritten in place
with its size and mtime put back, replaced, a project copied from elsewhere, a clip written just before its hash)
is hashed again and a damaged clip is refused with the store's message; a cache that is off, damaged, unusable or
busy only means every clip is hashed; two processes may write it at once; it stays bounded."""

import hashlib
import os
import shutil
import sqlite3
import subprocess
import sys
import textwrap
import time
import types

import pytest
from test_batch_file_pinned import PINNED, SETTINGS, written

from spokenbench.core.evaluation import batch_files
from spokenbench.core.evaluation.preparation import RunSettings, prepare_evaluation
from spokenbench.core.foundation.errors import ProjectError
from spokenbench.core.store import Project, audio_files, verified_clips

VLLM = RunSettings(model="vllm:my-audio-model", base_url="http://127.0.0.1:9/v1", mode="audio", prompt="standard")
RACY_NS = 50_000_000  # the racily-clean margin in these tests: clips older than 50 ms are recorded


@pytest.fixture
def hashed(monkeypatch):
    """The names of the clips the store hashes, in order (its hashlib counted; the digests are the real ones)."""
    names: list[str] = []

    def sha256(data=b""):
        digest = hashlib.sha256(data)
        names.append(digest.hexdigest())
        return digest

    monkeypatch.setattr(audio_files, "hashlib", types.SimpleNamespace(sha256=sha256))
    return names


@pytest.fixture
def aged_project(audio_project, monkeypatch):
    """The evaluation tests' project, its clips older than the racily-clean margin."""
    monkeypatch.setattr(verified_clips, "RACY_NS", RACY_NS)
    time.sleep(2 * RACY_NS / 1e9)
    return audio_project


def clip_names(project) -> list[str]:
    return [row[0] for row in project.conn.execute("SELECT sha256 FROM assembled_inputs ORDER BY id")]


def cache_file():
    return verified_clips.cache_dir() / verified_clips.CACHE_FILE_NAME


def test_a_second_batch_file_hashes_no_clip_and_is_the_same_file(aged_project, tmp_path, hashed):
    name = "audio standard"
    assert written(aged_project, SETTINGS[name], tmp_path / "first.jsonl") == PINNED[name]
    assert sorted(hashed) == sorted(clip_names(aged_project))  # cold: every clip hashed once, then recorded
    hashed.clear()
    assert written(aged_project, SETTINGS[name], tmp_path / "second.jsonl") == PINNED[name]
    assert hashed == []  # warm: the cache vouched for every clip
    assert (tmp_path / "first.jsonl").read_bytes() == (tmp_path / "second.jsonl").read_bytes()


@pytest.mark.parametrize("readers", [0, 1], ids=["one thread", "reader thread"])
def test_a_clip_rewritten_in_place_with_its_size_and_mtime_put_back_is_caught(
    aged_project, tmp_path, hashed, monkeypatch, readers
):
    monkeypatch.setattr(batch_files, "READERS_MIN_LINES", 0)
    monkeypatch.setattr(batch_files, "a_core_is_free", lambda: bool(readers))
    prepared = prepare_evaluation(aged_project, VLLM)
    batch_files.write_batch_file(aged_project, prepared, tmp_path / "first.jsonl")
    sha = clip_names(aged_project)[-1]
    path = aged_project.audio.path_for(sha, "wav")
    before = os.stat(path)
    spoiled = bytearray(path.read_bytes())
    spoiled[-1] ^= 0xFF
    with open(path, "r+b") as handle:  # the same inode, the same size
        handle.write(spoiled)
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))  # and the same mtime: only ctime tells
    after = os.stat(path)
    assert (after.st_ino, after.st_size, after.st_mtime_ns) == (before.st_ino, before.st_size, before.st_mtime_ns)
    hashed.clear()
    out = tmp_path / "out"
    with pytest.raises(ProjectError, match=f"audio file .*{sha}.wav is damaged"):
        batch_files.write_batch_file(aged_project, prepared, out / "second.jsonl")
    assert hashed == [hashlib.sha256(spoiled).hexdigest()]  # the others vouched for; the changed one hashed
    assert list(out.iterdir()) == []
    assert aged_project.conn.execute("SELECT count(*) FROM batch_jobs WHERE state = 'writing'").fetchone()[0] == 0


def test_a_replaced_clip_is_hashed_again(aged_project, tmp_path, hashed):
    prepared = prepare_evaluation(aged_project, VLLM)
    batch_files.write_batch_file(aged_project, prepared, tmp_path / "first.jsonl")
    sha = clip_names(aged_project)[0]
    path = aged_project.audio.path_for(sha, "wav")
    before = os.stat(path)
    replacement = path.with_name("replacement")
    replacement.write_bytes(path.read_bytes())  # the same bytes in a new file (a new inode), renamed into place
    os.utime(replacement, ns=(before.st_atime_ns, before.st_mtime_ns))
    os.replace(replacement, path)
    assert os.stat(path).st_ino != before.st_ino
    hashed.clear()
    batch_files.write_batch_file(aged_project, prepared, tmp_path / "second.jsonl")
    assert hashed == [sha]
    assert (tmp_path / "first.jsonl").read_bytes() == (tmp_path / "second.jsonl").read_bytes()


def test_a_project_copied_from_elsewhere_is_hashed_on_first_use(aged_project, tmp_path, hashed):
    batch_files.write_batch_file(aged_project, prepare_evaluation(aged_project, VLLM), tmp_path / "first.jsonl")
    aged_project.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    copy = tmp_path / "copy"
    shutil.copytree(aged_project.path, copy)
    time.sleep(2 * RACY_NS / 1e9)
    hashed.clear()
    with Project.open(copy) as copied:
        prepared = prepare_evaluation(copied, VLLM)
        batch_files.write_batch_file(copied, prepared, tmp_path / "copy.jsonl")
        assert sorted(hashed) == sorted(clip_names(copied))  # its own files: nothing vouched for them
        hashed.clear()
        batch_files.write_batch_file(copied, prepared, tmp_path / "copy-again.jsonl")
    assert hashed == []


def test_a_clip_written_just_before_its_hash_is_not_recorded(audio_project, tmp_path, hashed, monkeypatch):
    """git's racily clean rule: a file changed within the margin of its hash could change again unseen."""
    monkeypatch.setattr(verified_clips, "RACY_NS", 3600 * 10**9)  # every clip is "just written"
    prepared = prepare_evaluation(audio_project, VLLM)
    batch_files.write_batch_file(audio_project, prepared, tmp_path / "first.jsonl")
    hashed.clear()
    batch_files.write_batch_file(audio_project, prepared, tmp_path / "second.jsonl")
    assert sorted(hashed) == sorted(clip_names(audio_project))
    with sqlite3.connect(cache_file()) as conn:
        assert conn.execute("SELECT count(*) FROM verified_clips").fetchone()[0] == 0


def _spoil_cache_file(how: str) -> None:
    folder = verified_clips.cache_dir()
    if how == "damaged":
        folder.mkdir(parents=True, exist_ok=True)
        cache_file().write_bytes(b"not a database, " * 512)
    elif how == "a folder":
        cache_file().mkdir(parents=True)
    elif how == "a link":
        folder.mkdir(parents=True, exist_ok=True)
        cache_file().symlink_to("/dev/zero")
    elif how == "folder unwritable":  # its folder cannot be made: a file is in the way
        folder.parent.mkdir(parents=True, exist_ok=True)
        shutil.rmtree(folder, ignore_errors=True)
        folder.write_bytes(b"")


@pytest.mark.parametrize("how", ["off", "damaged", "a folder", "a link", "folder unwritable"])
def test_a_cache_off_or_unusable_means_every_clip_is_hashed_and_no_error(
    aged_project, tmp_path, hashed, monkeypatch, how
):
    if how == "off":
        monkeypatch.setenv("SPOKENBENCH_VERIFY_EVERY_READ", "1")
    else:
        _spoil_cache_file(how)
    name = "audio standard"
    for _ in range(2):
        hashed.clear()
        assert written(aged_project, SETTINGS[name], tmp_path / "requests.jsonl") == PINNED[name]
        assert sorted(hashed) == sorted(clip_names(aged_project))
    if how == "off":
        assert not cache_file().exists()
    sha = clip_names(aged_project)[0]  # and a damaged clip is still refused with the store's message
    path = aged_project.audio.path_for(sha, "wav")
    path.write_bytes(path.read_bytes()[:-1] + b"\0")
    with pytest.raises(ProjectError, match=f"{sha}.wav is damaged"):
        batch_files.write_batch_file(aged_project, prepare_evaluation(aged_project, VLLM), tmp_path / "r.jsonl")


def test_no_home_folder_to_be_found_means_no_cache(monkeypatch):
    def no_home():
        raise RuntimeError("Could not determine home directory.")

    monkeypatch.setattr(verified_clips, "cache_dir", no_home)
    assert verified_clips.open_verified_clips() is None


def test_a_missing_cache_is_made_before_two_processes_open_it_and_an_existing_one_is_left_alone(monkeypatch):
    """A batch file's second process and its parent open the cache at once: made first, in WAL with its table, so
    neither finds a new file locked while the other sets it up (and goes without: seen as a flaky test); a cache
    already there is not opened for this, and no cache to be had (no home folder) is no error."""
    path = verified_clips.cache_dir() / verified_clips.CACHE_FILE_NAME
    assert not path.exists()
    verified_clips.create_verified_clips()
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert conn.execute("SELECT count(*) FROM verified_clips").fetchone()[0] == 0
    opened, real_open = [], verified_clips.open_verified_clips
    monkeypatch.setattr(verified_clips, "open_verified_clips", lambda: opened.append(True))
    verified_clips.create_verified_clips()
    assert opened == []

    def no_home():
        raise RuntimeError("Could not determine home directory.")

    monkeypatch.setattr(verified_clips, "open_verified_clips", real_open)
    monkeypatch.setattr(verified_clips, "cache_dir", no_home)
    verified_clips.create_verified_clips()


def test_a_cache_another_process_keeps_busy_only_means_hashing_again(aged_project, tmp_path, hashed, monkeypatch):
    """The cache's write lock held by another process past the busy timeout: this file's entries are dropped (the
    file is written all the same), so the next file hashes its clips again, and records them."""
    monkeypatch.setattr(verified_clips, "BUSY_TIMEOUT_MS", 20)
    verified_clips.open_verified_clips().close()
    prepared = prepare_evaluation(aged_project, VLLM)
    blocker = sqlite3.connect(cache_file(), isolation_level=None)
    try:
        blocker.execute("BEGIN IMMEDIATE")
        batch_files.write_batch_file(aged_project, prepared, tmp_path / "first.jsonl")
    finally:
        blocker.close()
    everything = sorted(clip_names(aged_project))
    assert sorted(hashed) == everything
    hashed.clear()
    batch_files.write_batch_file(aged_project, prepared, tmp_path / "second.jsonl")
    assert sorted(hashed) == everything
    hashed.clear()
    batch_files.write_batch_file(aged_project, prepared, tmp_path / "third.jsonl")
    assert hashed == []
    assert (tmp_path / "first.jsonl").read_bytes() == (tmp_path / "third.jsonl").read_bytes()


def cache_knowing_one_clip(tmp_path):
    """The user's cache with one entry: a file of sha256 "a" * 64, and that file's stat."""
    clip = tmp_path / "clip"
    clip.write_bytes(b"audio")
    status = os.stat(clip)
    cache = verified_clips.open_verified_clips()
    cache._pending = [
        ("a" * 64, status.st_dev, status.st_ino, status.st_size, status.st_mtime_ns, status.st_ctime_ns, 0)
    ]
    cache.save()
    return cache, status


def test_look_ups_that_find_nothing_are_skipped_more_and_more_until_one_finds_an_entry(tmp_path):
    """A first batch file (no clip known) queries the cache ~40 times for 20,000 clips, not 625; a look-up that
    finds an entry brings back one per unit. A skipped look-up only means hashing: no entry vouches for anything."""
    cache, status = cache_knowing_one_clip(tmp_path)
    queries = []
    cache._conn.set_trace_callback(queries.append)
    vouched = []
    unit_clips = verified_clips.SKIP_UNIT_CLIPS
    for unit in range(625):  # 600 units of unknown clips, then units holding a known one
        unknown = [f"{unit * unit_clips + n:064x}" for n in range(unit_clips)]
        cache.look_up(unknown if unit < 600 else [*unknown[1:], "a" * 64])
        vouched.append(cache.vouches("a" * 64, status))
    assert 30 <= len(queries) <= 60
    assert not any(vouched[:600]) and vouched.index(True) <= 600 + verified_clips.MAX_SKIPPED_LOOK_UPS
    assert all(vouched[vouched.index(True) :])  # found: looked up every time again
    cache.close()


def test_skipped_look_ups_are_counted_in_clips_so_a_large_unit_skips_no_more_clips(tmp_path):
    """A batch file's second process looks up a whole 512-line unit at once: after units that found nothing it
    skips at most MAX_SKIPPED_LOOK_UPS x SKIP_UNIT_CLIPS clips (one such unit), as 32-clip look-ups would, so a
    known clip is found again within one unit, not after up to 16 units (8,192 clips) hashed needlessly."""
    cache, status = cache_knowing_one_clip(tmp_path)
    unit_clips = verified_clips.MAX_SKIPPED_LOOK_UPS * verified_clips.SKIP_UNIT_CLIPS
    vouched = []
    for unit in range(60):  # 40 units of unknown clips, then units holding a known one
        unknown = [f"{unit * unit_clips + n:064x}" for n in range(unit_clips)]
        cache.look_up(unknown if unit < 40 else [*unknown[1:], "a" * 64])
        vouched.append(cache.vouches("a" * 64, status))
    cache.close()
    assert not any(vouched[:40]) and vouched.index(True) <= 41
    assert all(vouched[vouched.index(True) :])


def test_what_one_process_looked_up_vouches_in_another_unless_its_cache_has_failed(tmp_path):
    """A batch file's second process takes the entries its parent looked up for the clips it reads (their sizes
    planned the offsets); a cache that failed there vouches for nothing, so its clips are hashed."""
    clip = tmp_path / "clip"
    clip.write_bytes(b"audio")
    status = os.stat(clip)
    entry = ("a" * 64, status.st_dev, status.st_ino, status.st_size, status.st_mtime_ns, status.st_ctime_ns)
    parent = verified_clips.open_verified_clips()
    parent._pending = [(*entry, 0)]
    parent.save()
    parent.look_up(["a" * 64, "b" * 64])
    assert parent.sizes() == {"a" * 64: 5} and parent.entries_for({"b" * 64}) == []
    given = parent.entries_for({"a" * 64, "b" * 64})
    parent.close()
    child = verified_clips.open_verified_clips()
    queries = []
    child._conn.set_trace_callback(queries.append)
    child.take(given)
    assert child.vouches("a" * 64, status) and not child.vouches("a" * 64, os.stat(tmp_path)) and queries == []
    child._give_up()
    child.take(given)
    assert not child.vouches("a" * 64, status)


def _entries(count: int, first: int, verified_at: int) -> list[tuple]:
    return [(f"{n:064x}", 1, n, 10, 1, 1, verified_at + n) for n in range(first, first + count)]


def test_the_cache_is_bounded_and_keeps_the_newest(monkeypatch):
    monkeypatch.setattr(verified_clips, "MAX_ENTRIES", 40)
    cache = verified_clips.open_verified_clips()
    cache._pending = _entries(100, 0, 0)
    cache.close()
    with sqlite3.connect(cache_file()) as conn:
        kept = [row[0] for row in conn.execute("SELECT ino FROM verified_clips ORDER BY ino")]
    assert kept == list(range(70, 100))  # three quarters of the bound, the most recently verified


@pytest.mark.slow
def test_two_processes_write_the_cache_at_once(tmp_path):
    script = textwrap.dedent(
        """
        import sys, time
        from spokenbench.core.store import verified_clips
        first = int(sys.argv[1])
        cache = verified_clips.open_verified_clips()
        assert cache is not None
        while time.time() < float(sys.argv[2]):  # both start together
            time.sleep(0.001)
        for chunk in range(40):  # 40 short transactions of 50 entries each
            cache._pending = [("%064x" % n, 1, n, 10, 1, 1, n) for n in range(first + 50 * chunk, first + 50 * (chunk + 1))]
            cache.save()
        assert cache._conn is not None  # never gave up
        cache.close()
        """
    )
    verified_clips.open_verified_clips().close()  # the file made, as a first batch file would
    start_at = str(time.time() + 1.0)
    writers = [
        subprocess.Popen([sys.executable, "-c", script, str(first), start_at], stderr=subprocess.PIPE, text=True)
        for first in (0, 10_000)
    ]
    for writer in writers:
        assert writer.wait(timeout=60) == 0, writer.stderr.read()
    with sqlite3.connect(cache_file()) as conn:
        assert conn.execute("SELECT count(*) FROM verified_clips").fetchone()[0] == 4000
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
