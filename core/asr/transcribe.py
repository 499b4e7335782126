"""Transcribing stored clips with ASR backends, importing transcripts made elsewhere, and listing clips for an
external ASR. Identical audio (the same recipe reused for several parts) is transcribed once per system.
Each transcript is committed in its own short transaction, so a killed run resumes where it stopped; a clip
that fails is recorded in transcript_failures and listed, and never stops the batch — only a rejected API
key does (every further request would fail the same way)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from pathlib import Path

from spokenbench.core.asr.backends import ASRBackend, Transcript, get_asr_backend
from spokenbench.core.asr.store import (
    all_clip_ids,
    clips_for_context,
    clips_to_transcribe,
    clips_transcribed_by,
    store_no_speech,
    store_transcript_failures,
    store_transcripts,
    transcribed_pairs,
    transcript_failure_rows,
)
from spokenbench.core.audio.io import AudioError
from spokenbench.core.foundation.errors import InputError, ProjectError, SpokenBenchError
from spokenbench.core.foundation.progress import Progress
from spokenbench.core.foundation.tables import read_table
from spokenbench.core.jobs.batch_writer import Write
from spokenbench.core.jobs.loop import JobLoop, UnitClaims
from spokenbench.core.jobs.registry import tracked_job
from spokenbench.core.jobs.remote import (
    ProviderLimiter,
    RemoteCallFailed,
    RetryPolicy,
    redact,
)
from spokenbench.core.store import Project

MAX_LISTED_FAILURES = 50


@dataclass(frozen=True)
class TranscriptionJob:
    asr: str
    sha256: str
    audio_format: str
    language: str
    clip_ids: tuple[int, ...]
    label: str
    parts: tuple = ()  # in context: (clip id, text, sha256, audio format) of each part, in reading order


@dataclass
class TranscriptionPlan:
    backends: list[ASRBackend]
    jobs: list[TranscriptionJob]
    clips_to_do: dict[str, int]  # asr → clips without a transcript from it
    already_done: dict[str, int]  # asr → clips already transcribed by it
    unsupported: dict[str, dict[str, int]] = field(default_factory=dict)  # asr → {language: clips it cannot do}

    def summary(self) -> dict:
        summary = {
            "asr": [b.name for b in self.backends],
            "requests": len(self.jobs),
            "clips_to_transcribe": self.clips_to_do,
            "already_transcribed": self.already_done,
        }
        if self.unsupported:
            summary["skipped_unsupported_language"] = self.unsupported
        return summary


@dataclass
class TranscriptionReport:
    requests: int = 0
    transcripts: int = 0
    failed_clips: int = 0
    failures: list[str] = field(default_factory=list)


def plan_transcription(
    conn, backends: list[ASRBackend], languages: list[str] | None = None, include_tokens: bool = False
) -> TranscriptionPlan:
    """Every (clip, ASR system) pair without a transcript, grouped by identical audio. Clips in a language a
    backend cannot transcribe (an English-only local model) are left out for it and counted in `unsupported`."""
    names = [b.name for b in backends]
    if len(set(names)) != len(names):
        raise SpokenBenchError(
            f"the same ASR system is named twice ({', '.join(names)}); screening needs two different ones"
        )
    rows = clips_to_transcribe(conn, languages, include_tokens)
    jobs, to_do, done, unsupported = [], {}, {}, {}
    for backend in backends:
        have = clips_transcribed_by(conn, backend.name)
        if getattr(backend, "in_context", False):
            _plan_in_context(conn, backend, languages, have, jobs, to_do, done, unsupported)
            continue
        supports = getattr(backend, "supports", None)
        groups: dict[tuple, list] = {}
        for row in rows:
            if row["id"] in have:
                continue
            if supports is not None and not supports(row["language"]):
                skipped = unsupported.setdefault(backend.name, {})
                skipped[row["language"]] = skipped.get(row["language"], 0) + 1
                continue
            groups.setdefault((row["sha256"], row["audio_format"], row["language"]), []).append(row)
        for (sha, fmt, language), members in groups.items():
            first = members[0]
            label = f"clip {first['id']} ({first['source_id'] or 'token'} {language} {first['part']}, {first['accent']}, {first['voice']})"
            jobs.append(TranscriptionJob(backend.name, sha, fmt, language, tuple(r["id"] for r in members), label))
        to_do[backend.name] = sum(len(m) for m in groups.values())
        done[backend.name] = sum(1 for row in rows if row["id"] in have)
    return TranscriptionPlan(backends, jobs, to_do, done, unsupported)


async def run_transcription(
    project: Project, plan: TranscriptionPlan, progress: Progress | None = None, retry_policy: RetryPolicy | None = None
) -> TranscriptionReport:
    """Transcribe the plan's audio on the shared job loop (core.jobs.registry), each ASR system within its own limits.
    A clip that fails is recorded and listed; a rejected key stops the job (RemoteAuthError)."""
    report = TranscriptionReport()
    by_name = {b.name: b for b in plan.backends}
    for backend in plan.backends:
        if any(job.asr == backend.name for job in plan.jobs):
            backend.prepare()  # a missing key or extra fails here, before any request
    limiters = {b.name: ProviderLimiter(b.name, b.max_concurrency, b.requests_per_minute) for b in plan.backends}
    concurrency = sum(b.max_concurrency for b in plan.backends) or 1
    label = f"transcribe with {', '.join(by_name)} ({len(plan.jobs)} requests)"
    try:
        with tracked_job(project.path, "transcribe", label, progress, total=len(plan.jobs)) as job_progress:
            loop = JobLoop(
                project.db_path,
                job_progress,
                concurrency=concurrency,
                describe=lambda job: job.label,
                claims=UnitClaims("transcribe", key=_claim_key, already_done=_already_transcribed),
                wait_for_room=any(backend.paid_requests for backend in plan.backends),
            )

            async def transcribe(job: TranscriptionJob) -> Write | None:
                backend = by_name[job.asr]
                try:
                    audio = (
                        _context_audio(project, job)
                        if job.parts
                        else project.audio.read_bytes(job.sha256, job.audio_format)
                    )
                    heard, _attempts = await loop.remote(
                        lambda: backend.transcribe(audio, job.audio_format, job.language),
                        limiters[job.asr],
                        retry_policy,
                        secrets=backend.secrets(),
                        paid=backend.paid_requests,
                    )
                except (RemoteCallFailed, ProjectError, AudioError) as error:
                    message = redact(f"{job.asr}: {job.label}: {error}", backend.secrets())
                    report.failed_clips += len(job.clip_ids)
                    if len(report.failures) < MAX_LISTED_FAILURES:
                        report.failures.append(message)
                    return lambda conn: store_transcript_failures(conn, job.asr, job.clip_ids, message)
                report.requests += 1
                report.transcripts += len(job.clip_ids)
                text, no_speech = (heard.text, heard.no_speech_prob) if isinstance(heard, Transcript) else (heard, None)
                if job.parts:  # one transcript of the whole item, split back into its parts
                    from spokenbench.core.asr.context import split_transcript

                    pieces = split_transcript([part[1] for part in job.parts], text, job.language)
                    rows = [(part[0], backend.model, piece) for part, piece in zip(job.parts, pieces)]
                    no_speech = None  # the whole item's, not a part's
                else:
                    rows = [(clip_id, backend.model, text) for clip_id in job.clip_ids]

                def save(conn) -> None:
                    store_transcripts(conn, job.asr, rows)
                    if no_speech is not None:
                        store_no_speech(conn, job.asr, job.clip_ids, no_speech)

                await loop.save_now(save)  # paid: kept at once
                return None

            await loop.run(plan.jobs, transcribe)
    finally:
        for backend in plan.backends:
            await backend.aclose()
    return report


def transcribe_missing(project: Project, specs: list[str], progress: Progress | None = None) -> dict:
    """Transcribe every clip not yet transcribed by each ASR system in `specs` (PROVIDER:MODEL): what the Rating
    page's Transcribe does, as one picklable call for a job process. Returns the counts it made."""
    plan = plan_transcription(project.conn, [get_asr_backend(spec) for spec in specs])
    if not plan.jobs:
        return {"transcripts": 0, "failed_clips": 0}
    report = asyncio.run(run_transcription(project, plan, progress))
    return {"transcripts": report.transcripts, "failed_clips": report.failed_clips}


def _plan_in_context(conn, backend, languages, have, jobs, to_do, done, unsupported) -> None:
    """One job per item as one voice read it (question and options joined); a group with any clip left to do is
    transcribed whole."""
    from spokenbench.core.asr.context import context_groups

    to_do[backend.name] = done[backend.name] = 0
    for group in context_groups(clips_for_context(conn, languages)):
        language = group[0]["language"]
        if not backend.supports(language):
            skipped = unsupported.setdefault(backend.name, {})
            skipped[language] = skipped.get(language, 0) + len(group)
            continue
        missing = sum(1 for row in group if row["id"] not in have)
        done[backend.name] += len(group) - missing
        if not missing:
            continue
        to_do[backend.name] += len(group)
        first = group[0]
        label = (
            f"item {first['source_id']} ({language}, {first['accent']}, {first['voice']}) in context, "
            f"{len(group)} parts"
        )
        parts = tuple((row["id"], row["text"], row["sha256"], row["audio_format"]) for row in group)
        jobs.append(
            TranscriptionJob(
                backend.name, first["sha256"], "wav", language, tuple(r["id"] for r in group), label, parts
            )
        )


def _context_audio(project: Project, job: TranscriptionJob) -> bytes:
    from spokenbench.core.asr.context import CONTEXT_RATE, join_audio
    from spokenbench.core.audio.io import decode_audio, encode_wav

    clips = []
    for clip_id, _text, sha256, audio_format in job.parts:
        decoded = decode_audio(project.audio.read_bytes(sha256, audio_format), f"clip {clip_id}")
        clips.append((decoded.samples, decoded.rate))
    return encode_wav(join_audio(clips), CONTEXT_RATE)


def _claim_key(job: TranscriptionJob) -> str:
    return f"{job.clip_ids[0]}|{job.asr}"


def _already_transcribed(conn, keys: list[str]) -> set[str]:
    pairs = {(asr, int(clip_id)): key for key in keys for clip_id, asr in [key.split("|", 1)]}
    return {pairs[found] for found in transcribed_pairs(conn, list(pairs))}


def transcript_failures(conn, limit: int = MAX_LISTED_FAILURES) -> list[dict]:
    return transcript_failure_rows(conn, limit)


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
    known = all_clip_ids(project.conn)
    problems, records, seen = [], [], {}
    for number, row in enumerate(table.rows, start=1):
        raw_id, text = row.get("clip_id"), row.get("text")
        clip_id = as_clip_id(raw_id)
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
    with project.transaction() as conn:
        existing = clips_transcribed_by(conn, asr)
        store_transcripts(conn, asr, [(clip_id, row_model, text) for clip_id, row_model, text in records])
    return TranscriptImport(len(records), sum(1 for r in records if r[0] in existing), asr)


def as_clip_id(value) -> int | None:
    """A clip id as a table cell holds it (an int, a whole float, decimal digits), or None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and value.strip().isdecimal() and value.strip().isascii():
        return int(value.strip())
    return None


def clips_for_transcription(
    project: Project, languages: list[str] | None = None, include_tokens: bool = False
) -> list[dict]:
    """The clips screening needs, with their audio files, for transcribing with an ASR outside this tool."""
    rows = []
    for row in clips_to_transcribe(project.conn, languages, include_tokens):
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
