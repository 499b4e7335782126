"""Synthesis jobs: every (item part | instruction token) × accent × voice a plan asks for, each keyed by its
recipe (backend, model, voice, prompt, text) so nothing is synthesized — or paid for — twice. Jobs run
concurrently up to the backend's limit; each clip is checked on arrival and committed in its own short
transaction, so a killed job resumes where it stopped and a failing clip is recorded as failed, never good.
A local engine (espeak-ng) runs on every core instead, in worker processes (core/audio/clip_workers.py), its
clips' files made durable in groups before their rows are committed in batches, as `assemble` does."""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
from dataclasses import dataclass, field

from spokenbench.core.audio.assembly import BYTES_IN_FLIGHT, GroupDurability
from spokenbench.core.audio.checks import check_clip
from spokenbench.core.audio.clip_workers import MIN_CLIPS_FOR_PROCESSES, ClipWorkers
from spokenbench.core.audio.io import AudioError, encode_audio
from spokenbench.core.audio.store import ClipRow, clips_with_files, store_clip_rows, stored_clip_audio
from spokenbench.core.audio.tokens import QUESTION_WORD, has_question_word, token_part, token_texts, token_voice_source
from spokenbench.core.audio.tts.base import SynthesisRequest, TTSBackend, UnsupportedRequest
from spokenbench.core.domain.items import option_part
from spokenbench.core.foundation.errors import SpokenBenchError
from spokenbench.core.foundation.progress import Progress
from spokenbench.core.jobs.batch_writer import Write
from spokenbench.core.jobs.loop import JobLoop, UnitClaims
from spokenbench.core.jobs.registry import tracked_job
from spokenbench.core.jobs.remote import ProviderLimiter, RemoteCallFailed, RetryPolicy
from spokenbench.core.store import Project
from spokenbench.core.store.audio_files import AudioStore
from spokenbench.core.store.items import item_languages, iter_items
from spokenbench.core.store.project import audio_store_of
from spokenbench.core.store.rewrites import latest_rewrites

PART_KINDS = ("questions", "options", "tokens")
STORED_FORMAT = "flac"  # lossless and about half the size of WAV
READY_REWRITE_STATUSES = ("accepted", "edited")
# The longest text one clip may speak (about 20 minutes of speech); the import ceiling (--max-text-chars) is the
# same, so only items stored otherwise can exceed it. Longer text would make clips of hours and gigabytes.
MAX_SYNTHESIS_CHARS = 20_000
FILES_PER_GROUP = 32  # a local engine's clips made durable together (at least; more when the disk is slow)

# The accents of the BiasInEar study (its Table 4); a backend lacking one is reported, never substituted.
ACCENTS_BY_LANGUAGE = {
    "en": ("american", "british", "indian"),
    "zh": ("beijing", "northeastern"),
    "ko": ("seoul", "jeolla"),
}


@dataclass(frozen=True)
class ClipJob:
    item_id: int | None  # None for instruction tokens
    part: str
    request: SynthesisRequest
    cache_key: str
    label: str  # names the clip in messages: "demo/001 (en) option_B, american, espeak-female"


@dataclass
class SynthesisPlan:
    backend: TTSBackend
    jobs: list[ClipJob]
    already_done: int
    unsupported: list[str] = field(default_factory=list)  # what the backend cannot do, said once each

    @property
    def characters(self) -> int:
        return sum(len(job.request.text) for job in self.jobs)

    def summary(self) -> dict:
        return {
            "backend": self.backend.name,
            "model": self.backend.model,
            "to_synthesize": len(self.jobs),
            "already_done": self.already_done,
            "characters": self.characters,
            "estimated_cost_usd": round(self.backend.estimate_cost(self.characters), 4),
            "unsupported": self.unsupported,
        }


@dataclass
class SynthesisReport:
    synthesized: int = 0
    reused: int = 0
    failed: int = 0
    failures: list[str] = field(default_factory=list)


def _part_text(item, part: str, rewrites: dict, use_rewrites: bool) -> str:
    rewrite = rewrites.get(part)
    if use_rewrites and rewrite is not None and rewrite["status"] in READY_REWRITE_STATUSES:
        return rewrite["text"]
    if part == "question":
        return item.question
    letter = part.removeprefix("option_")
    return next(o.text for o in item.options if o.letter == letter)


def plan_synthesis(
    conn: sqlite3.Connection,
    backend: TTSBackend,
    languages: list[str] | None = None,
    voices: list[str] | None = None,
    accents: list[str] | None = None,
    parts: tuple[str, ...] = PART_KINDS,
    token_language: str = "english",
    use_rewrites: bool = True,
    audio: AudioStore | None = None,
    kinds: tuple[str, ...] | None = None,
) -> SynthesisPlan:
    """Every clip the selection needs that is not stored yet (or whose audio file has gone missing). Accents the
    backend lacks are reported, not faked. `voices` None means the backend's default voices; `kinds` limits the
    items to those kinds ('mcq', 'gender-probe')."""
    unknown = set(parts) - set(PART_KINDS)
    if unknown:
        raise SpokenBenchError(f"unknown part kind(s) {', '.join(sorted(unknown))}; use {', '.join(PART_KINDS)}")
    voice_specs = [backend.voice(v) for v in voices] if voices else list(backend.default_voices)
    audio = audio or audio_store_of(conn)
    stored = {  # a good clip whose file was deleted is synthesized again
        (item_id, part, key) for item_id, part, key, sha, fmt in clips_with_files(conn) if audio.has(sha, fmt)
    }
    jobs: dict[tuple, ClipJob] = {}
    unsupported: set[str] = set()
    token_sources: set[tuple[str, str | None, int]] = set()
    project_languages = item_languages(conn)
    for language in languages or project_languages:
        spoken_as = backend.spoken_as(language)  # 'ar-eg' items spoken as 'ar'
        if spoken_as is None:
            why = backend.notes.get(language) or backend.notes.get(language.split("-")[0])
            unsupported.add(f"{backend.name} cannot speak {language}" + (f": {why}" if why else ""))
            continue
        language_accents = backend.accents[spoken_as]
        for missing in set(ACCENTS_BY_LANGUAGE.get(spoken_as, ())) - set(language_accents):
            if not accents or missing in accents:
                unsupported.add(
                    backend.notes.get(f"{spoken_as}:{missing}")
                    or f"{backend.name} has no {missing} accent for {language}"
                )
        for accent in accents or language_accents:
            if accent not in language_accents:
                continue
            where = "language = ?" + (f" AND kind IN ({', '.join('?' * len(kinds))})" if kinds else "")
            for item_id, item in iter_items(conn, where=where, params=(language, *(kinds or ()))):
                rewrites = latest_rewrites(conn, item_id) if use_rewrites else {}
                wanted = (["question"] if "questions" in parts else []) + (
                    [option_part(o.letter) for o in item.options] if "options" in parts else []
                )
                for voice in voice_specs:
                    if not backend.voice_speaks(voice, language, accent):
                        continue
                    token_sources.add((*token_voice_source(language, accent, token_language), len(item.options)))
                    for part in wanted:
                        text = _part_text(item, part, rewrites, use_rewrites)
                        label = f"{item.source_id} ({language}) {part}, {accent or 'default accent'}, {voice.name}"
                        _add_job(jobs, stored, backend, item_id, part, text, language, accent, voice, label)
    if "tokens" in parts:
        for token_lang, token_accent, option_count in sorted(token_sources, key=str):
            spoken_as = backend.spoken_as(token_lang)
            if spoken_as is None or token_accent not in backend.accents[spoken_as]:
                unsupported.add(f"{backend.name} cannot speak instruction tokens in {token_lang} ({token_accent})")
                continue
            if not has_question_word(token_lang):  # never an English word in another language's voice
                unsupported.add(
                    f"no native word for 'question' is known in {token_lang} (only {', '.join(QUESTION_WORD)}): its "
                    "instruction tokens are left out; use --token-language english, as the paper did"
                )
                continue
            for voice in voice_specs:
                if not backend.voice_speaks(voice, token_lang, token_accent):
                    continue
                for label_name, text in token_texts(token_lang, option_count, "native").items():
                    label = f"token '{label_name}' ({token_lang}, {token_accent or 'default accent'}, {voice.name})"
                    _add_job(
                        jobs,
                        stored,
                        backend,
                        None,
                        token_part(label_name),
                        text,
                        token_lang,
                        token_accent,
                        voice,
                        label,
                    )
    already = _count_done(stored, jobs)
    to_do = [j for k, j in jobs.items() if k not in stored]
    _refuse_long_texts(to_do)
    return SynthesisPlan(backend, to_do, already, sorted(unsupported))


def _refuse_long_texts(jobs: list[ClipJob]) -> None:
    too_long = [
        f"{job.label} ({len(job.request.text):,} characters)"
        for job in jobs
        if len(job.request.text) > MAX_SYNTHESIS_CHARS
    ]
    if too_long:
        raise SpokenBenchError(
            f"{len(too_long)} clip(s) would speak more than {MAX_SYNTHESIS_CHARS:,} characters: "
            f"{'; '.join(too_long[:10])}{' …' if len(too_long) > 10 else ''}. Give the item a shorter spoken text "
            "with `spokenbench review DIR --item ID --part PART --edit TEXT`, or leave its language out with --languages"
        )


def _add_job(jobs, stored, backend, item_id, part, text, language, accent, voice, label) -> None:
    request = SynthesisRequest(text, language, accent, voice, backend.render_prompt(text, language, accent))
    key = request.cache_key(backend.name, backend.model)
    jobs.setdefault((item_id or 0, part, key), ClipJob(item_id, part, request, key, label))


def _count_done(stored: set, jobs: dict) -> int:
    return sum(1 for key in jobs if key in stored)


async def run_synthesis(
    project: Project,
    plan: SynthesisPlan,
    progress: Progress | None = None,
    retry_policy: RetryPolicy | None = None,
    workers: ClipWorkers | None = None,
) -> SynthesisReport:
    """Synthesize the plan's clips on the shared job loop (core.jobs.registry), within the backend's concurrency and
    rate limits, retrying 429s, 5xx and timeouts with backoff. A recipe needed by several parts is
    synthesized once. An authentication error stops the job (RemoteAuthError); anything else marks just
    that clip failed. The job is visible to every process (`spokenbench jobs`) and can be cancelled there.
    A local engine (`synthesizes_in_processes`) runs in `workers` (made here when not given) instead."""
    report = SynthesisReport()
    backend = plan.backend
    if plan.jobs:
        backend.prepare()
    groups: dict[str, list[ClipJob]] = {}
    for job in plan.jobs:
        groups.setdefault(job.cache_key, []).append(job)
    label = f"synthesize {len(plan.jobs)} clips with {backend.name} ({backend.model})"
    with tracked_job(project.path, "synthesize", label, progress, total=len(groups)) as job_progress:
        if backend.synthesizes_in_processes:
            if workers is None:
                in_processes = len(groups) >= MIN_CLIPS_FOR_PROCESSES
                with ClipWorkers(backend, in_processes) as workers:
                    await _run_local(project, backend, groups, job_progress, workers, report)
            else:
                await _run_local(project, backend, groups, job_progress, workers, report)
        else:
            await _run_remote(project, backend, groups, job_progress, retry_policy, report)
    return report


def _reused_clip(project: Project, first: ClipJob) -> tuple | None:
    """The stored audio of a recipe already synthesized (by another part, job or process), if its file is there."""
    stored = stored_clip_audio(project.conn, first.cache_key)
    return stored if stored is not None and project.audio.has(stored[0], stored[1]) else None


def _failed(report: SynthesisReport, backend: TTSBackend, group: list[ClipJob], message: str) -> Write:
    report.failed += len(group)
    report.failures.append(message)
    return _clip_rows_write(backend, group, "failed", message, (None,) * 5)


def _job_loop(project: Project, job_progress: Progress, concurrency: int, paid: bool) -> JobLoop:
    return JobLoop(
        project.db_path,
        job_progress,
        concurrency=concurrency,
        describe=lambda group: group[0].label,
        claims=UnitClaims("synthesize", key=lambda group: group[0].cache_key),
        wait_for_room=paid,
    )


async def _run_remote(project, backend, groups, job_progress, retry_policy, report) -> None:
    """A service (or a local engine of its own threads): each paid clip's file and rows are durable at once."""
    limiter = ProviderLimiter(backend.name, backend.max_concurrency, backend.requests_per_minute)
    loop = _job_loop(project, job_progress, backend.max_concurrency, backend.paid_requests)

    async def synthesize(group: list[ClipJob]) -> Write | None:
        """One recipe, possibly needed by several parts: synthesize (or reuse) once, store for all."""
        first = group[0]
        stored = _reused_clip(project, first)
        if stored is not None:
            report.reused += len(group)
            return _clip_rows_write(backend, group, "ok", None, stored)
        try:
            data, _ = await loop.remote(
                lambda: backend.synthesize(first.request),
                limiter,
                retry_policy,
                secrets=backend.secrets(),
                paid=backend.paid_requests,
            )
            audio, level = check_clip(data, first.request.text, first.label, backend.output_rate)
        except (AudioError, UnsupportedRequest, RemoteCallFailed) as error:
            message = f"{first.label}: {error}" if isinstance(error, RemoteCallFailed) else str(error)
            return _failed(report, backend, group, message)
        encoded = encode_audio(audio.samples, audio.rate, STORED_FORMAT)
        sha = await loop.store_file(lambda: project.audio.put_bytes(encoded, STORED_FORMAT))  # paid: room awaited
        report.synthesized += 1
        report.reused += len(group) - 1
        stored = (sha, STORED_FORMAT, audio.duration, audio.rate, level)
        await loop.save_now(_clip_rows_write(backend, group, "ok", None, stored))  # paid: kept at once
        return None

    await loop.run(list(groups.values()), synthesize)


async def _run_local(project, backend, groups, job_progress, workers: ClipWorkers, report) -> None:
    """A local engine on every core: clips rendered in `workers`, their files written and made durable in groups
    (GroupDurability, as `assemble` does), and only then their rows handed to the job's writer, which commits them
    in batches — so a row never refers to a file that could be lost, and a kill loses at most a group's work.
    Rows are handed over in the plan's order (`_InPlanOrder`), so clip ids are those one-at-a-time synthesis gives.
    Neutralized voices' clips (signal processing after synthesis) are rendered ahead of that order: the slowest work
    first, so it does not end the job on one worker."""
    files = GroupDurability(project.audio, STORED_FORMAT, FILES_PER_GROUP, BYTES_IN_FLIGHT)
    loop = _job_loop(project, job_progress, workers.in_flight + FILES_PER_GROUP, paid=False)
    order = _InPlanOrder()

    async def synthesize(group: list[ClipJob]) -> Write | None:
        async with order.turn():
            first = group[0]
            stored = _reused_clip(project, first)
            if stored is not None:
                report.reused += len(group)
                return _clip_rows_write(backend, group, "ok", None, stored)
            await files.admit()
            files.building += 1
            try:
                clip = await workers.render(first.request, first.label, STORED_FORMAT)
            finally:
                files.building -= 1
                files.poke()
            if clip.failure is not None:
                return _failed(report, backend, group, clip.failure)
            (sha,) = await files.durable([[clip.data]])
            report.synthesized += 1
            report.reused += len(group) - 1
            audio = (sha, STORED_FORMAT, clip.duration_s, clip.sample_rate, clip.speech_level_db)
            return _clip_rows_write(backend, group, "ok", None, audio)

    slow = [(group[0].request, group[0].label) for group in groups.values() if group[0].request.voice.neutralization]
    workers.render_ahead(slow, STORED_FORMAT)
    try:
        await loop.run(list(groups.values()), synthesize)
    finally:
        await files.close()


class _InPlanOrder:
    """Units start in the plan's order; each hands its write back only after every unit started before it did (the
    job loop queues a write for the writer as soon as its unit returns), whatever order the workers finish in. A
    unit that fails or is cancelled steps aside at once, so nothing waits for it."""

    def __init__(self):
        self.started = 0
        self.next = 0  # the unit whose turn it is
        self.finished: set[int] = set()
        self.waiting: dict[int, asyncio.Future] = {}

    @contextlib.asynccontextmanager
    async def turn(self):
        mine = self.started
        self.started += 1
        try:
            yield
            if self.next != mine:
                self.waiting[mine] = asyncio.get_running_loop().create_future()
                await self.waiting[mine]
        finally:
            self.waiting.pop(mine, None)
            self.finished.add(mine)
            while self.next in self.finished:
                self.finished.discard(self.next)
                self.next += 1
            woken = self.waiting.get(self.next)
            if woken is not None and not woken.done():
                woken.set_result(None)


def _clip_rows_write(backend: TTSBackend, jobs: list[ClipJob], status: str, failure: str | None, audio) -> Write:
    """The rows of one recipe's clips, committed together by the job's writer."""
    sha, fmt, duration, rate, level = audio
    rows = [
        ClipRow(
            item_id=job.item_id,
            part=job.part,
            text=job.request.text,
            language=job.request.language,
            accent=job.request.accent,
            voice=job.request.voice.name,
            speaker_gender=job.request.voice.gender,
            neutralization=job.request.voice.neutralization,
            backend=backend.name,
            model=backend.model,
            prompt=job.request.prompt,
            cache_key=job.cache_key,
            sha256=sha,
            audio_format=fmt,
            duration_s=duration,
            sample_rate=rate,
            speech_level_db=level,
            status=status,
            failure=failure,
        )
        for job in jobs
    ]
    return lambda conn: store_clip_rows(conn, rows)
