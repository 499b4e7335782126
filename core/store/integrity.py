"""`spokenbench check`: every audio file the project refers to, verified against the sha256 it is named by.
A missing or damaged file is listed with what refers to it; with repair, what can be re-created is made to be:
clips are marked failed (their rows, transcripts and ratings stay; `synthesize` re-creates the audio), assembled
inputs are removed (`assemble` rebuilds them), damaged files are deleted. Recordings cannot be re-created: they
are listed for re-recording."""

from __future__ import annotations

import hashlib
import os
import sqlite3
from dataclasses import dataclass, field

from spokenbench.core.foundation.errors import InputError, ProjectError
from spokenbench.core.foundation.progress import Progress, no_progress
from spokenbench.core.foundation.safe_files import MAX_AUDIO_FILE_BYTES, open_regular_file
from spokenbench.core.store.audio_files import AudioStore
from spokenbench.core.store.database import transaction

REFERENCES = {
    "clip": "SELECT id, sha256, audio_format FROM clips WHERE status = 'ok' AND sha256 IS NOT NULL",
    "input": "SELECT id, sha256, audio_format FROM assembled_inputs",
    "chunk": "SELECT c.input_id, c.sha256, i.audio_format FROM input_chunks c JOIN assembled_inputs i ON i.id = c.input_id",
    "recording": "SELECT id, sha256, audio_format FROM recordings",
}


@dataclass
class BadFile:
    sha256: str
    audio_format: str
    problem: str  # 'missing' or 'damaged'
    references: dict[str, list[int]] = field(default_factory=dict)  # kind → row ids (chunks: their input's id)

    def as_dict(self) -> dict:
        return dict(self.__dict__)


@dataclass
class IntegrityReport:
    files_checked: int = 0
    bad: list[BadFile] = field(default_factory=list)
    repaired: dict[str, int] = field(default_factory=dict)  # what the repair did, by kind

    @property
    def ok(self) -> bool:
        return not self.bad

    def as_dict(self) -> dict:
        return {
            "files_checked": self.files_checked,
            "missing": sum(1 for b in self.bad if b.problem == "missing"),
            "damaged": sum(1 for b in self.bad if b.problem == "damaged"),
            "bad_files": [b.as_dict() for b in self.bad],
            "repaired": self.repaired,
        }


def referenced_files(conn: sqlite3.Connection) -> dict[tuple[str, str], dict[str, list[int]]]:
    """(sha256, format) → {kind: ids} for every audio file a row refers to."""
    files: dict[tuple[str, str], dict[str, list[int]]] = {}
    for kind, query in REFERENCES.items():
        for row_id, sha, fmt in conn.execute(query):
            files.setdefault((sha, fmt), {}).setdefault(kind, []).append(row_id)
    return files


def check_audio(
    conn: sqlite3.Connection, audio: AudioStore, progress: Progress | None = None, repair: bool = False
) -> IntegrityReport:
    progress = progress or no_progress()
    files = referenced_files(conn)
    report = IntegrityReport(files_checked=len(files))
    for done, ((sha, fmt), references) in enumerate(sorted(files.items()), start=1):
        if done % 200 == 0:
            progress.check_cancelled()
            progress.report(done, len(files), "verifying audio")
        problem = _problem(audio, sha, fmt)
        if problem is not None:
            report.bad.append(BadFile(sha, fmt, problem, references))
    progress.report(len(files), len(files), "verified")
    if repair and report.bad:
        report.repaired = _repair(conn, audio, report.bad)
    return report


def _problem(audio: AudioStore, sha: str, fmt: str) -> str | None:
    path = audio.path_for(sha, fmt)
    digest = hashlib.sha256()
    try:  # never through a link, a FIFO or a device (it could hang or never end): those are damaged files
        with open_regular_file(path, MAX_AUDIO_FILE_BYTES, follow_links=False) as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    except FileNotFoundError:
        return "missing"
    except (InputError, OSError):
        return "damaged"
    return None if digest.hexdigest() == sha else "damaged"


def _check_removable(paths: list) -> None:
    """Refuse the repair up front if a damaged file could not be removed (its folder not writable, a folder with
    files in place of a clip), so `check --repair` changes everything or nothing."""
    for path in paths:
        if path.is_dir() and not path.is_symlink() and any(path.iterdir()):
            raise ProjectError(f"{path}: a folder with files stands where an audio file belongs; remove it by hand")
        if (path.exists() or path.is_symlink()) and not os.access(path.parent, os.W_OK | os.X_OK):
            raise ProjectError(f"{path}: cannot remove the damaged file (its folder is not writable); nothing repaired")


def _repair(conn: sqlite3.Connection, audio: AudioStore, bad: list[BadFile]) -> dict[str, int]:
    clips = sorted({i for b in bad for i in b.references.get("clip", [])})
    inputs = sorted({i for b in bad for kind in ("input", "chunk") for i in b.references.get(kind, [])})
    removable = [audio.path_for(b.sha256, b.audio_format) for b in bad if b.problem == "damaged"]
    _check_removable(removable)  # all or nothing: a file that cannot go is found before any row changes
    removed = 0
    with transaction(conn):
        for clip_id in clips:
            conn.execute(
                "UPDATE clips SET status = 'failed', failure = 'audio file missing or damaged (spokenbench check)' "
                "WHERE id = ?",
                (clip_id,),
            )
        for input_id in inputs:
            conn.execute("DELETE FROM assembled_inputs WHERE id = ?", (input_id,))
        for path in removable:  # inside the transaction: a failure here undoes the rows above
            try:
                os.rmdir(path) if path.is_dir() and not path.is_symlink() else path.unlink()
            except FileNotFoundError:
                continue
            except OSError as error:
                raise ProjectError(f"{path}: cannot remove the damaged file ({error.strerror or error})") from None
            removed += 1
    recordings = sum(len(b.references.get("recording", [])) for b in bad)
    return {
        "clips_to_synthesize_again": len(clips),
        "inputs_to_assemble_again": len(inputs),
        "damaged_files_removed": removed,
        "recordings_to_record_again": recordings,
    }
