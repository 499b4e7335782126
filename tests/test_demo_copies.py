"""The demo copies that share their audio (tests/demo_copies.py): what a test may do to one, and what is caught."""

import hashlib
import os

import pytest
from demo_copies import audio_fingerprint, changed_audio, damaged_audio, linked_copy, replace_file


@pytest.fixture
def original(tmp_path):
    """A project folder's shape: a database and content-addressed audio in two-letter folders."""
    folder = tmp_path / "original"
    for data in (b"first clip", b"second clip"):
        sha = hashlib.sha256(data).hexdigest()
        (folder / "audio" / sha[:2]).mkdir(parents=True, exist_ok=True)
        (folder / "audio" / sha[:2] / f"{sha}.flac").write_bytes(data)
    (folder / "project.sqlite").write_bytes(b"the database")
    return folder


def audio_files(folder):
    return sorted((folder / "audio").glob("*/*"))


def test_a_copy_shares_the_audio_and_owns_its_database(original, tmp_path):
    copy = linked_copy(original, tmp_path / "copy")
    assert [path.stat().st_ino for path in audio_files(copy)] == [path.stat().st_ino for path in audio_files(original)]
    assert (copy / "project.sqlite").stat().st_ino != (original / "project.sqlite").stat().st_ino
    (copy / "project.sqlite").write_bytes(b"changed in the copy")
    assert (original / "project.sqlite").read_bytes() == b"the database"


def test_a_file_replaced_in_a_copy_leaves_the_original_as_it_was(original, tmp_path):
    before = audio_fingerprint(original)
    copy = linked_copy(original, tmp_path / "copy")
    replace_file(audio_files(copy)[0], b"not audio at all")
    audio_files(copy)[1].unlink()
    assert changed_audio(before, audio_fingerprint(original)) == []
    assert damaged_audio(original) == []


def test_a_write_into_a_copy_is_named(original, tmp_path):
    before = audio_fingerprint(original)
    copy = linked_copy(original, tmp_path / "copy")
    audio_files(copy)[0].write_bytes(b"not audio at all")
    assert changed_audio(before, audio_fingerprint(original)) == [audio_files(original)[0].name]
    assert damaged_audio(original) == [audio_files(original)[0].name]


def test_a_write_that_puts_back_size_and_mtime_is_caught_by_the_hashes(original, tmp_path):
    before = audio_fingerprint(original)
    copy = linked_copy(original, tmp_path / "copy")
    target = audio_files(copy)[1]
    status = target.stat()
    with open(target, "r+b") as handle:
        handle.write(b"X")  # the same size
    os.utime(target, ns=(status.st_atime_ns, status.st_mtime_ns))
    assert changed_audio(before, audio_fingerprint(original)) == []
    assert damaged_audio(original) == [audio_files(original)[1].name]
