"""`spokenbench check`: every audio file the project refers to, verified against the sha256 it is named by.
A missing or damaged file is listed with what refers to it; with repair, what can be re-created is made to be:
clips are marked failed (their rows, transcripts and ratings stay; `synthesize` re-creates the audio), assembled
inputs are removed (`assemble` rebuilds them), damaged files are deleted. Recordings cannot be re-created: they
are listed for re-recording."""

from __future__ import annotations

import contextlib
import hashlib
import sqlite3
from dataclasses import dataclass, field

from spokenbench.core.progress import Progress, no_progress
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
    try:
        with path.open("rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    except FileNotFoundError:
        return "missing"
    except OSError:
        return "damaged"
    return None if digest.hexdigest() == sha else "damaged"


def _repair(conn: sqlite3.Connection, audio: AudioStore, bad: list[BadFile]) -> dict[str, int]:
    clips = sorted({i for b in bad for i in b.references.get("clip", [])})
    inputs = sorted({i for b in bad for kind in ("input", "chunk") for i in b.references.get(kind, [])})
    with transaction(conn):
        for clip_id in clips:
            conn.execute(
                "UPDATE clips SET status = 'failed', failure = 'audio file missing or damaged (spokenbench check)' "
                "WHERE id = ?",
                (clip_id,),
            )
        for input_id in inputs:
            conn.execute("DELETE FROM assembled_inputs WHERE id = ?", (input_id,))
    removed = 0
    for file in bad:
        if file.problem == "damaged":
            with contextlib.suppress(FileNotFoundError):
                audio.path_for(file.sha256, file.audio_format).unlink()
                removed += 1
    recordings = sum(len(b.references.get("recording", [])) for b in bad)
    return {
        "clips_to_synthesize_again": len(clips),
        "inputs_to_assemble_again": len(inputs),
        "damaged_files_removed": removed,
        "recordings_to_record_again": recordings,
    }
