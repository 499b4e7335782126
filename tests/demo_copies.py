"""Copies of the shared demo project that share its audio files, and the checks that no test wrote into one.

The demo's audio is content-addressed and the app only ever replaces a file (a new file renamed into place), never
writes into one, so a copy can hard-link the audio and copy only the database: 3 MB a copy instead of 67 MB. Whole
copies, kept as pytest keeps a run's folders, filled CI's disk (about 20 GB a CI run); deleted as each test ends,
they cost the default run ~20 % more time on a disk mounted with `discard`. A test that wrote into a linked file in
place would change it for every test after it, in every worker: `changed_audio` names it at once, and
`damaged_audio` catches at the session's end what a write that put back size and mtime hid.
"""

import hashlib
import os
import shutil
import sqlite3
from contextlib import closing
from pathlib import Path

AUDIO_FOLDER = "audio"
DATABASE_SUFFIX = ".sqlite"
SQLITE_SIDE_FILES = ("-wal", "-shm", "-journal")


def linked_copy(project: Path, target: Path) -> Path:
    """A writable copy of a project folder whose audio files are hard links to the original's (same file system)."""
    return project_copy(project, target, link_audio=True)


def project_copy(project: Path, target: Path, link_audio: bool = False) -> Path:
    """A copy of a project folder that others may have open.

    The shared demo is read by tests in the other worker while it is copied: each reader's connection makes the
    database's `-wal` and `-shm` files and the last one to close deletes them, so a plain copy of the folder can list
    one and find it gone (seen in CI). The database is copied through SQLite's backup (a consistent snapshot, with
    whatever its log holds) and its side files are left out."""
    audio = Path(project, AUDIO_FOLDER)

    def link_audio_copy_the_rest(source: str, destination: str) -> None:
        if link_audio and Path(source).parent.parent == audio:
            os.link(source, destination)
        elif source.endswith(DATABASE_SUFFIX):
            copy_database(Path(source), Path(destination))
        else:
            shutil.copy2(source, destination)

    def database_side_files(folder: str, names: list[str]) -> list[str]:
        return [name for name in names if name.endswith(tuple(DATABASE_SUFFIX + end for end in SQLITE_SIDE_FILES))]

    return Path(shutil.copytree(project, target, copy_function=link_audio_copy_the_rest, ignore=database_side_files))


def copy_database(source: Path, destination: Path) -> None:
    """A snapshot of a database others may have open, in the same journal mode."""
    with closing(sqlite3.connect(f"{source.resolve().as_uri()}?mode=ro", uri=True)) as reader:
        with closing(sqlite3.connect(destination)) as writer:
            reader.backup(writer)
            mode = reader.execute("PRAGMA journal_mode").fetchone()[0]
            writer.execute(f"PRAGMA journal_mode = {mode}")


def audio_fingerprint(project: Path) -> dict[str, tuple[int, int, int]]:
    """Size, mtime and mode of each audio file: a write into one changes its mtime (linking changes only ctime)."""
    fingerprint = {}
    for path in Path(project, AUDIO_FOLDER).glob("*/*"):
        status = path.stat()
        fingerprint[path.name] = (status.st_size, status.st_mtime_ns, status.st_mode)
    return fingerprint


def changed_audio(before: dict[str, tuple[int, int, int]], after: dict[str, tuple[int, int, int]]) -> list[str]:
    return sorted(name for name in before.keys() | after.keys() if before.get(name) != after.get(name))


def damaged_audio(project: Path) -> list[str]:
    """Audio files whose bytes no longer hash to their name."""
    return sorted(
        path.name
        for path in Path(project, AUDIO_FOLDER).glob("*/*")
        if hashlib.sha256(path.read_bytes()).hexdigest() != path.name.partition(".")[0]
    )


def replace_file(path: Path, data: bytes) -> None:
    """Put new bytes at `path` in a new file, as the app does: a linked file is left as it was for the others."""
    path.unlink()
    path.write_bytes(data)
