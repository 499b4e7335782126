"""Transcribing stored clips with ASR backends, importing transcripts made elsewhere, and listing clips for an
external ASR. Identical audio (the same recipe reused for several parts) is transcribed once per system.
Each transcript is committed in its own short transaction, so a killed run resumes where it stopped; a clip
that fails is recorded in transcript_failures and listed, and never stops the batch — only a rejected API
key does (every further request would fail the same way)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from pathlib import Path

from spokenbench.core.asr.backends import ASRBackend
from spokenbench.core.audio.io import AudioError
from spokenbench.core.errors import Cancelled, InputError, ProjectError, SpokenBenchError
from spokenbench.core.progress import Progress, no_progress
from spokenbench.core.remote import (
    ProviderLimiter,
    RemoteAuthError,
    RemoteCallFailed,
    RetryPolicy,
    call_with_retries,
    redact,
)
from spokenbench.core.store import Project
from spokenbench.core.store.database import utc_now
from spokenbench.core.tables import read_table

MAX_LISTED_FAILURES = 50


@dataclass(frozen=True)
class TranscriptionJob:
    asr: str
    sha256: str
    audio_format: str
    language: str
    clip_ids: tuple[int, ...]
    label: str


@dataclass
class TranscriptionPlan:
    backends: list[ASRBackend]
    jobs: list[TranscriptionJob]
    clips_to_do: dict[str, int]  # asr → clips without a transcript from it
    already_done: dict[str, int]  # asr → clips already transcribed by it

    def summary(self) -> dict:
        return {
            "asr": [b.name for b in self.backends],
            "requests": len(self.jobs),
            "clips_to_transcribe": self.clips_to_do,
            "already_transcribed": self.already_done,
        }


@dataclass
class TranscriptionReport:
    requests: int = 0
    transcripts: int = 0
    failed_clips: int = 0
    failures: list[str] = field(default_factory=list)


def _clip_rows(conn, languages: list[str] | None, include_tokens: bool):
    where = ["c.status = 'ok'", "c.sha256 IS NOT NULL"]
    params: list = []
    if not include_tokens:
        where.append("c.item_id IS NOT NULL")
    if languages:
        where.append(f"c.language IN ({','.join('?' * len(languages))})")
        params += languages
    return conn.execute(
        "SELECT c.id, c.sha256, c.audio_format, c.language, c.accent, c.voice, c.part, c.text, i.source_id "
        f"FROM clips c LEFT JOIN items i ON i.id = c.item_id WHERE {' AND '.join(where)} ORDER BY c.id",
        params,
    ).fetchall()


def plan_transcription(
    conn, backends: list[ASRBackend], languages: list[str] | None = None, include_tokens: bool = False
) -> TranscriptionPlan:
    """Every (clip, ASR system) pair without a transcript, grouped by identical audio."""
    names = [b.name for b in backends]
    if len(set(names)) != len(names):
        raise SpokenBenchError(
            f"the same ASR system is named twice ({', '.join(names)}); screening needs two different ones"
        )
    rows = _clip_rows(conn, languages, include_tokens)
    jobs, to_do, done = [], {}, {}
    for backend in backends:
        have = {r[0] for r in conn.execute("SELECT clip_id FROM transcripts WHERE asr = ?", (backend.name,))}
        groups: dict[tuple, list] = {}
        for row in rows:
            if row["id"] in have:
                continue
            groups.setdefault((row["sha256"], row["audio_format"], row["language"]), []).append(row)
        for (sha, fmt, language), members in groups.items():
            first = members[0]
            label = f"clip {first['id']} ({first['source_id'] or 'token'} {language} {first['part']}, {first['accent']}, {first['voice']})"
            jobs.append(TranscriptionJob(backend.name, sha, fmt, language, tuple(r["id"] for r in members), label))
        to_do[backend.name] = sum(len(m) for m in groups.values())
        done[backend.name] = sum(1 for row in rows if row["id"] in have)
    return TranscriptionPlan(backends, jobs, to_do, done)


async def run_transcription(
    project: Project, plan: TranscriptionPlan, progress: Progress | None = None, retry_policy: RetryPolicy | None = None
) -> TranscriptionReport:
    progress = progress or no_progress()
    report = TranscriptionReport()
    by_name = {b.name: b for b in plan.backends}
    for backend in plan.backends:
        if any(job.asr == backend.name for job in plan.jobs):
            backend.prepare()  # a missing key or extra fails here, before any request
    limiters = {b.name: ProviderLimiter(b.name, b.max_concurrency, b.requests_per_minute) for b in plan.backends}
    total, done = len(plan.jobs), 0
    stopped = asyncio.Event()  # set by a rejected key: requests already queued must not go out

    async def guarded(backend: ASRBackend, audio: bytes, job: TranscriptionJob) -> str:
        if stopped.is_set() or progress.cancelled:  # checked after the limiter's wait, right before sending
            raise asyncio.CancelledError()
        return await backend.transcribe(audio, job.audio_format, job.language)

    async def attempt(job: TranscriptionJob) -> None:
        nonlocal done
        progress.check_cancelled()
        backend = by_name[job.asr]
        try:
            audio = project.audio.read_bytes(job.sha256, job.audio_format)
            text, _attempts = await call_with_retries(
                lambda: guarded(backend, audio, job), limiters[job.asr], retry_policy, secrets=backend.secrets()
            )
        except RemoteAuthError:
            stopped.set()
            raise
        except asyncio.CancelledError:
            if progress.cancelled:  # the user's cancel, seen mid-request: stop the job as Cancelled, not as a crash
                raise Cancelled() from None
            raise
        except (RemoteCallFailed, ProjectError, AudioError) as error:
            message = redact(f"{job.asr}: {job.label}: {error}", backend.secrets())
            _store_failure(project, job, message)
            report.failed_clips += len(job.clip_ids)
            if len(report.failures) < MAX_LISTED_FAILURES:
                report.failures.append(message)
        else:
            _store_transcripts(project, job, backend.model, text)
            report.requests += 1
            report.transcripts += len(job.clip_ids)
        done += 1
        progress.report(done, total, job.label)

    tasks = [asyncio.ensure_future(attempt(job)) for job in plan.jobs]
    try:
        await asyncio.gather(*tasks)
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for backend in plan.backends:
            await backend.aclose()
    return report


def _store_transcripts(project: Project, job: TranscriptionJob, model: str, text: str) -> None:
    now = utc_now()
    with project.transaction() as conn:
        for clip_id in job.clip_ids:
            conn.execute(
                "INSERT INTO transcripts(clip_id, asr, model, text, created_at) VALUES (?, ?, ?, ?, ?) "
                "ON CONFLICT(clip_id, asr) DO UPDATE SET model = excluded.model, text = excluded.text, "
                "created_at = excluded.created_at",
                (clip_id, job.asr, model, text, now),
            )
            conn.execute("DELETE FROM transcript_failures WHERE clip_id = ? AND asr = ?", (clip_id, job.asr))


def _store_failure(project: Project, job: TranscriptionJob, message: str) -> None:
    now = utc_now()
    with project.transaction() as conn:
        conn.executemany(
            "INSERT INTO transcript_failures(clip_id, asr, message, created_at) VALUES (?, ?, ?, ?) "
            "ON CONFLICT(clip_id, asr) DO UPDATE SET message = excluded.message, created_at = excluded.created_at",
            [(clip_id, job.asr, message, now) for clip_id in job.clip_ids],
        )


def transcript_failures(conn, limit: int = MAX_LISTED_FAILURES) -> list[dict]:
    rows = conn.execute("SELECT clip_id, asr, message FROM transcript_failures ORDER BY asr, clip_id LIMIT ?", (limit,))
    return [dict(row) for row in rows]


# --------------------------------------------------------------------------------------------------
# Transcripts from any other ASR


@dataclass
class TranscriptImport:
    rows: int
    replaced: int
    asr: str


def import_transcripts(project: Project, path: str | Path, asr: str, model: str | None = None) -> TranscriptImport:
    """Import a table (CSV, TSV, JSONL or Parquet) with columns `clip_id` and `text` (optional `model`) as the
    transcripts of ASR system `asr`. The whole file is checked first; any problem names the file, row and
    column and nothing is imported. An existing transcript of the same clip by the same system is replaced."""
    asr = asr.strip()
    if not asr:
        raise SpokenBenchError("--asr must name the ASR system the transcripts come from")
    table = read_table(path)
    missing = [c for c in ("clip_id", "text") if c not in table.columns]
    if missing:
        raise InputError(
            [
                table.problem(f"missing column (the file has: {', '.join(table.columns) or 'no columns'})", column=c)
                for c in missing
            ]
        )
    known = {row[0] for row in project.conn.execute("SELECT id FROM clips")}
    problems, records, seen = [], [], {}
    for number, row in enumerate(table.rows, start=1):
        raw_id, text = row.get("clip_id"), row.get("text")
        clip_id = _as_clip_id(raw_id)
        if clip_id is None:
            problems.append(table.problem(f"not a clip id: {raw_id!r} (a whole number)", number, "clip_id"))
            continue
        if clip_id not in known:
            problems.append(table.problem(f"no clip {clip_id} in this project", number, "clip_id"))
            continue
        if clip_id in seen:
            problems.append(
                table.problem(f"clip {clip_id} appears again (first in row {seen[clip_id]})", number, "clip_id")
            )
            continue
        seen[clip_id] = number
        if text is None or not isinstance(text, str):
            problems.append(
                table.problem("missing transcript text (an empty string stands for silence)", number, "text")
            )
            continue
        row_model = row.get("model")
        records.append((clip_id, str(row_model).strip() if row_model not in (None, "") else model, text.strip()))
    if problems:
        raise InputError(problems)
    now = utc_now()
    with project.transaction() as conn:
        existing = {r[0] for r in conn.execute("SELECT clip_id FROM transcripts WHERE asr = ?", (asr,))}
        conn.executemany(
            "INSERT INTO transcripts(clip_id, asr, model, text, created_at) VALUES (?, ?, ?, ?, ?) "
            "ON CONFLICT(clip_id, asr) DO UPDATE SET model = excluded.model, text = excluded.text, created_at = excluded.created_at",
            [(clip_id, asr, row_model, text, now) for clip_id, row_model, text in records],
        )
        conn.executemany(
            "DELETE FROM transcript_failures WHERE clip_id = ? AND asr = ?", [(r[0], asr) for r in records]
        )
    return TranscriptImport(len(records), sum(1 for r in records if r[0] in existing), asr)


def _as_clip_id(value) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    return None


def clips_for_transcription(
    project: Project, languages: list[str] | None = None, include_tokens: bool = False
) -> list[dict]:
    """The clips screening needs, with their audio files, for transcribing with an ASR outside this tool."""
    rows = []
    for row in _clip_rows(project.conn, languages, include_tokens):
        rows.append(
            {
                "clip_id": row["id"],
                "language": row["language"],
                "accent": row["accent"],
                "voice": row["voice"],
                "item": row["source_id"],
                "part": row["part"],
                "reference_text": row["text"],
                "audio_path": str(project.audio.path_for(row["sha256"], row["audio_format"]).resolve()),
            }
        )
    return rows
