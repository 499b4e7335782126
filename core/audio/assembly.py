"""Condition assembly: the exact audio an evaluated model hears for one item under one condition — the
"question" token and the question, then label + option segments in the condition's order, separated by fixed
pauses, every segment brought to one speech level and one sample rate; then speed, volume and noise
perturbations. Each input is stored with its permutation (so answers map back to original options), its text
rendering, and optional chunks for models with input limits. Inputs are built one at a time and written to
disk as they finish, so memory stays bounded, and an input whose recipe is unchanged is never rebuilt."""

from __future__ import annotations

import asyncio
import hashlib
import json
import sqlite3
from collections import OrderedDict
from dataclasses import asdict, dataclass, field

import numpy as np

from spokenbench.core.audio import dsp
from spokenbench.core.audio import store as audio_store
from spokenbench.core.audio.io import AudioError, decode_audio, encode_audio, read_pcm16, write_pcm16_wav
from spokenbench.core.audio.tokens import token_part, token_voice_source
from spokenbench.core.conditions import Condition, check_order, order_strings
from spokenbench.core.errors import SpokenBenchError
from spokenbench.core.items import option_part
from spokenbench.core.jobs import JobLoop, UnitClaims, Write, tracked_job
from spokenbench.core.progress import Progress
from spokenbench.core.store import Project
from spokenbench.core.store.database import utc_now
from spokenbench.core.store.items import items_in_languages

SEGMENT_CACHE_BYTES = 256 * 2**20  # prepared clips kept for reuse; bounds memory whatever the input count

# Bounds of one assembled input (docs/reliability.md). Outside them an input is meaningless (speed 0) or
# too large to build in memory: a 10 MHz rate, an hour of pause, a question of 100,000 characters.
SPEED_RANGE = (0.25, 4.0)
VOLUME_MAX = 4.0
SNR_RANGE_DB = (-10.0, 60.0)
RATE_RANGE = (8_000, 48_000)
PAUSE_MAX_S = 10.0
MAX_INPUT_CHARS = 40_000  # the spoken text of one input (question and options), checked when planning
MAX_INPUT_SECONDS = 30 * 60  # the audio of one input after the speed change, checked before it is built


@dataclass(frozen=True)
class AssemblySettings:
    sample_rate: int = 16_000
    pause_s: float = 0.5
    target_level_db: float = -26.0  # leaves ~20 dB of headroom for ×1.5 volume and noise
    token_language: str = "english"
    audio_format: str = "wav"


@dataclass(frozen=True)
class ClipRef:
    sha256: str
    audio_format: str
    level_db: float | None
    text: str


@dataclass
class AssemblyJob:
    item_id: int
    label: str
    condition: Condition
    option_order: str
    label_sequence: str
    segments: list[tuple[str, ClipRef]]  # (role, clip) in spoken order; role 'pause' has no clip
    text_rendering: str
    recipe_sha256: str


@dataclass
class AssemblyPlan:
    jobs: list[AssemblyJob]
    already_done: int
    missing: list[str] = field(default_factory=list)

    def summary(self) -> dict:
        return {
            "to_assemble": len(self.jobs),
            "already_done": self.already_done,
            "missing": self.missing[:50],
            "missing_count": len(self.missing),
        }


@dataclass
class AssemblyReport:
    assembled: int = 0
    limited_inputs: int = 0  # inputs whose peaks had to be limited (volume ×1.5 on loud speech)
    seconds_of_audio: float = 0.0
    skipped: list[str] = field(default_factory=list)  # inputs not built: a source clip is missing or damaged


def _clip_index(conn: sqlite3.Connection, backend: str | None) -> dict[tuple, ClipRef]:
    """Newest good clip per (item, part, language, accent, voice)."""
    index = {}
    for (
        item_id,
        part,
        language,
        accent,
        voice,
        sha,
        fmt,
        level,
        text,
        gender,
        clip_backend,
    ) in audio_store.good_clips_for_assembly(conn, backend):
        index[(item_id, part, language, accent, voice)] = (ClipRef(sha, fmt, level, text), gender, clip_backend)
    return index


def plan_assembly(
    conn: sqlite3.Connection,
    orders: list[str],
    speeds: list[float] = (1.0,),
    volumes: list[float] = (1.0,),
    snrs: list[float | None] = (None,),
    languages: list[str] | None = None,
    voices: list[str] | None = None,
    accents: list[str] | None = None,
    spoken_labels: bool = True,
    backend: str | None = None,
    settings: AssemblySettings = AssemblySettings(),
) -> AssemblyPlan:
    """One job per item × (accent, voice) with complete clips × order × speed × volume × SNR. Settings outside
    the bounds above, or an item whose spoken text exceeds MAX_INPUT_CHARS, are refused before anything is built."""
    _check_bounds(speeds, volumes, snrs, settings)
    orders = [check_order(order) for order in orders]
    clips = _clip_index(conn, backend)
    voice_combos: dict[tuple[str, str | None], set[str]] = {}
    for item_id, part, language, accent, voice in clips:
        if item_id and part == "question":
            voice_combos.setdefault((language, accent), set()).add(voice)
    stored = audio_store.assembled_recipes(conn)
    jobs, missing, already = [], [], 0
    too_long: set[str] = set()
    for item_id, item in items_in_languages(conn, languages):
        for (language, accent), combo_voices in sorted(voice_combos.items(), key=str):
            if language != item.language or (accents and accent not in accents):
                continue
            for voice in sorted(v for v in combo_voices if not voices or v in voices):
                resolved = _resolve_segments(clips, item_id, item, language, accent, voice, spoken_labels, settings)
                if isinstance(resolved, str):
                    if (item_id, "question", language, accent, voice) in clips:
                        missing.append(resolved)
                    continue
                parts, gender, clip_backend = resolved
                spoken = sum(len(clip.text or "") for clip in parts.values())
                if spoken > MAX_INPUT_CHARS:
                    too_long.add(f"{item.source_id} ({language}): {spoken:,} characters")
                    continue
                for order in orders:
                    option_order, label_sequence = order_strings(order, len(item.options))
                    for speed in speeds:
                        for volume in volumes:
                            for snr in snrs:
                                condition = Condition(
                                    language,
                                    accent,
                                    voice,
                                    gender,
                                    order,
                                    spoken_labels,
                                    float(speed),
                                    float(volume),
                                    None if snr is None else float(snr),
                                    "cloned" if clip_backend == "clone" else "direct",
                                )
                                job = _job(item_id, item, condition, option_order, label_sequence, parts, settings)
                                if stored.get((item_id, condition.key())) == job.recipe_sha256:
                                    already += 1
                                else:
                                    jobs.append(job)
    if too_long:
        listed = sorted(too_long)
        raise SpokenBenchError(
            f"{len(listed)} item(s) are too long to assemble (at most {MAX_INPUT_CHARS:,} characters of question "
            f"and options per input): {'; '.join(listed[:10])}{' …' if len(listed) > 10 else ''}. Give them a "
            "shorter spoken text with `spokenbench review DIR --item ID --part PART --edit TEXT`, synthesize again, "
            "or leave their language out with --languages"
        )
    return AssemblyPlan(jobs, already, missing)


def _check_bounds(speeds, volumes, snrs, settings: AssemblySettings) -> None:
    """The same ranges the CLI's options document, for callers that are not the CLI (the app, scripts)."""
    checks = [
        ("speed", speeds, *SPEED_RANGE),
        ("volume", volumes, 0.0, VOLUME_MAX),
        ("SNR (dB)", [s for s in snrs if s is not None], *SNR_RANGE_DB),
        ("sample rate (Hz)", [settings.sample_rate], *RATE_RANGE),
        ("pause (s)", [settings.pause_s], 0.0, PAUSE_MAX_S),
    ]
    for what, values, low, high in checks:
        for value in values:
            if not (isinstance(value, (int, float)) and low <= value <= high) or (what == "volume" and value <= 0):
                raise SpokenBenchError(f"{what} {value!r} is outside {low:g}–{high:g}")


def _resolve_segments(clips, item_id, item, language, accent, voice, spoken_labels, settings):
    """The clips one item needs in one voice, or a message naming the first missing one."""
    found = {}
    gender = backend = None
    for part in ["question", *(option_part(o.letter) for o in item.options)]:
        entry = clips.get((item_id, part, language, accent, voice))
        if entry is None:
            return f"{item.source_id} ({language}) {accent}/{voice}: no clip for {part}"
        found[part], gender, backend = entry
    if spoken_labels:
        token_lang, token_accent = token_voice_source(language, accent, settings.token_language)
        for label in ["question", *(o.letter for o in item.options)]:
            entry = clips.get((0, token_part(label), token_lang, token_accent, voice))
            if entry is None:
                return f"{item.source_id} ({language}) {accent}/{voice}: no instruction token '{label}' in {token_lang} ({token_accent})"
            found[token_part(label)] = entry[0]
    return found, gender, backend


def _job(item_id, item, condition: Condition, option_order, label_sequence, parts, settings) -> AssemblyJob:
    segments: list[tuple[str, ClipRef | None]] = []
    lines = []
    if condition.spoken_labels:
        segments += [("token", parts[token_part("question")]), ("pause", None)]
    segments += [("question", parts["question"]), ("pause", None)]
    lines.append(f"Question: {parts['question'].text}")
    for presented in label_sequence:
        original = option_order["ABCDEFGHIJ".index(presented)]
        option = parts[option_part(original)]
        if condition.spoken_labels:
            segments += [("token", parts[token_part(presented)]), ("pause", None)]
            lines.append(f"{presented}. {option.text}")
        else:
            lines.append(f"- {option.text}")
        segments += [("option", option), ("pause", None)]
    recipe = json.dumps(
        [condition.key(), option_order, label_sequence, asdict(settings), [(r, c and c.sha256) for r, c in segments]]
    )
    return AssemblyJob(
        item_id,
        f"{item.source_id} ({item.language})",
        condition,
        option_order,
        label_sequence,
        segments,
        "\n".join(lines),
        hashlib.sha256(recipe.encode()).hexdigest(),
    )


class SegmentCache:
    """Decoded, resampled, level-matched clips, reused across the many conditions that share them."""

    def __init__(self, project: Project, settings: AssemblySettings, max_bytes: int = SEGMENT_CACHE_BYTES):
        self.project, self.settings, self.max_bytes = project, settings, max_bytes
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._bytes = 0

    def get(self, clip: ClipRef, what: str) -> np.ndarray:
        cached = self._cache.get(clip.sha256)
        if cached is not None:
            self._cache.move_to_end(clip.sha256)
            return cached
        try:
            data = self.project.audio.read_bytes(clip.sha256, clip.audio_format)
        except SpokenBenchError as error:
            raise AudioError(f"{what}: {error}") from None
        audio = decode_audio(data, what)
        samples = prepare_segment(audio.samples, audio.rate, self.settings)
        self._cache[clip.sha256] = samples
        self._bytes += samples.nbytes
        while self._bytes > self.max_bytes and len(self._cache) > 1:
            self._bytes -= self._cache.popitem(last=False)[1].nbytes
        return samples


def prepare_segment(
    samples: np.ndarray, rate: int, settings: AssemblySettings, match_levels: bool = True
) -> np.ndarray:
    """One clip at the output rate and, with match_levels, at the target speech level."""
    samples = dsp.resample(samples, rate, settings.sample_rate)
    return dsp.match_level(samples, settings.sample_rate, settings.target_level_db) if match_levels else samples


def concatenate(pieces: list[np.ndarray | None], settings: AssemblySettings) -> tuple[np.ndarray, list[int]]:
    """Join segments, a None standing for the fixed pause; returns the audio and the pause centres."""
    pause = dsp.silence(settings.pause_s, settings.sample_rate)
    arrays, cuts, position = [], [], 0
    for piece in pieces:
        if piece is None:
            piece = pause
            cuts.append(position + len(pause) // 2)
        arrays.append(piece)
        position += len(piece)
    return np.concatenate(arrays), cuts


def assemble_wav_bytes(
    question: bytes,
    options: list[bytes],
    labels: list[bytes] | None = None,
    settings: AssemblySettings = AssemblySettings(),
    match_levels: bool = True,
) -> bytes:
    """The assembly for scripts that hold clips as WAV bytes: [label] question, then label + option pairs in
    the given order, with the settings' pauses, rate and levels (the same code path the project assembly uses).
    Without level matching, 16-bit clips already at the output rate are joined as they are, bit for bit."""
    clips = [question] + [
        clip
        for index, option in enumerate(options)
        for clip in ((labels[index], option) if labels is not None else (option,))
    ]
    if not match_levels:
        joined = _join_pcm16(clips, settings)
        if joined is not None:
            return joined

    def segment(data: bytes, what: str) -> np.ndarray:
        audio = decode_audio(data, what)
        return prepare_segment(audio.samples, audio.rate, settings, match_levels)

    pieces: list[np.ndarray | None] = [segment(question, "question"), None]
    for index, option in enumerate(options):
        if labels is not None:
            pieces += [segment(labels[index], f"label {index + 1}"), None]
        pieces += [segment(option, f"option {index + 1}"), None]
    audio, _ = concatenate(pieces, settings)
    return encode_audio(audio, settings.sample_rate, settings.audio_format)


def _join_pcm16(clips: list[bytes], settings: AssemblySettings) -> bytes | None:
    if settings.audio_format != "wav":
        return None
    pause = np.zeros(int(round(settings.pause_s * settings.sample_rate)), dtype=np.int16)
    pieces = []
    for index, clip in enumerate(clips):
        decoded = read_pcm16(clip, f"clip {index + 1}")
        if decoded is None or decoded[1] != settings.sample_rate:
            return None
        pieces += [decoded[0], pause]
    return write_pcm16_wav(np.concatenate(pieces), settings.sample_rate)


def render(
    job: AssemblyJob, cache: SegmentCache, settings: AssemblySettings
) -> tuple[np.ndarray, list[int], np.ndarray, int]:
    """(final audio, cut points at pause centres, clean audio before noise, limited sample count)."""
    rate = settings.sample_rate
    pieces = []
    length = 0
    for role, clip in job.segments:
        piece = None if role == "pause" else cache.get(clip, f"{job.label} {role}")
        length += int(settings.pause_s * rate) if piece is None else len(piece)
        if length / rate / job.condition.speed > MAX_INPUT_SECONDS:
            raise AudioError(
                f"{job.label}: the input would be longer than {MAX_INPUT_SECONDS / 60:g} minutes of audio; "
                "give the item a shorter spoken text"
            )
        pieces.append(piece)
    clean, cuts = concatenate(pieces, settings)
    condition = job.condition
    if condition.speed != 1.0:
        clean = dsp.time_stretch(clean, rate, condition.speed)
        cuts = [int(c / condition.speed) for c in cuts]
    clean, limited = dsp.apply_volume(clean, condition.volume) if condition.volume != 1.0 else (clean, 0)
    final = clean
    if condition.snr_db is not None:
        final, more = dsp.limit_peaks(dsp.add_noise(clean, rate, condition.snr_db, seed=job.recipe_sha256))
        limited += more
    return final, cuts, clean, limited


def chunk_bounds(clean: np.ndarray, rate: int, cuts: list[int], max_seconds: float, what: str) -> list[int]:
    """Chunk boundaries no further apart than `max_seconds`, at the assembly's own pauses where possible,
    else at pauses found inside a long segment; never inside a word. Raises if no pause fits."""
    limit = int(max_seconds * rate)
    total = len(clean)
    inner: list[int] | None = None
    bounds, start = [0], 0
    while total - start > limit:
        window = [c for c in cuts if start < c <= start + limit]
        if not window:
            if inner is None:
                inner = _pause_centres(clean, rate)
            window = [c for c in inner if start < c <= start + limit]
        if not window:
            raise AudioError(
                f"{what}: no pause to split at between {start / rate:.1f} s and {(start + limit) / rate:.1f} s "
                f"for {max_seconds:g}-second chunks"
            )
        start = max(window)
        bounds.append(start)
    bounds.append(total)
    return bounds


def _pause_centres(clean: np.ndarray, rate: int) -> list[int]:
    """Gaps between words, from clear pauses down to the short dips TTS leaves between words."""
    centres: set[int] = set()
    for min_pause, floor in ((0.12, -45.0), (0.04, -35.0), (0.03, -30.0)):
        centres.update(
            (a + b) // 2 for a, b in dsp.find_pauses(clean, rate, min_pause, floor) if 0 < a and b < len(clean)
        )
    return sorted(centres)


def run_assembly(
    project: Project,
    plan: AssemblyPlan,
    chunk_seconds: list[float] = (),
    settings: AssemblySettings = AssemblySettings(),
    progress: Progress | None = None,
    cache_bytes: int = SEGMENT_CACHE_BYTES,
) -> AssemblyReport:
    """Build the plan's inputs as a tracked job on the shared loop: audio files are written here, their rows
    are committed in batches by the job's writer, so a rating saved meanwhile never waits behind assembly."""
    cache = SegmentCache(project, settings, cache_bytes)
    report = AssemblyReport()

    async def assemble(job: AssemblyJob) -> Write | None:
        try:
            final, cuts, clean, limited = render(job, cache, settings)
        except AudioError as error:  # a missing or damaged clip: this input waits, the others go on
            report.skipped.append(f"{job.label}: {error}")
            return None
        chunks = []
        for max_seconds in chunk_seconds:
            bounds = chunk_bounds(clean, settings.sample_rate, cuts, max_seconds, job.label)
            for position, (a, b) in enumerate(zip(bounds, bounds[1:])):
                chunk = encode_audio(final[a:b], settings.sample_rate, settings.audio_format)
                chunks.append(
                    (
                        max_seconds,
                        position,
                        project.audio.put_bytes(chunk, settings.audio_format),
                        (b - a) / settings.sample_rate,
                    )
                )
        sha = project.audio.put_bytes(
            encode_audio(final, settings.sample_rate, settings.audio_format), settings.audio_format
        )
        duration = len(final) / settings.sample_rate
        report.assembled += 1
        report.limited_inputs += int(limited > 0)
        report.seconds_of_audio += duration
        return lambda conn: _store(conn, job, sha, duration, limited, chunks, settings)

    async def run_all(job_progress: Progress) -> None:
        loop = JobLoop(
            project.db_path,
            job_progress,
            concurrency=1,
            describe=lambda job: job.label,
            claims=UnitClaims("assemble", key=_claim_key, already_done=_already_assembled),
        )
        await loop.run(plan.jobs, assemble)

    if plan.jobs:
        label = f"assemble {len(plan.jobs)} inputs"
        with tracked_job(project.path, "assemble", label, progress, total=len(plan.jobs)) as job_progress:
            asyncio.run(run_all(job_progress))
    return report


def _claim_key(job: AssemblyJob) -> str:
    return f"{job.item_id}|{job.recipe_sha256}|{job.condition.key()}"


def _already_assembled(conn, keys: list[str]) -> set[str]:
    wanted = {}
    for key in keys:
        item_id, recipe, condition_key = key.split("|", 2)
        wanted[(int(item_id), condition_key, recipe)] = key
    return {wanted[found] for found in audio_store.inputs_with_recipes(conn, list(wanted))}


def _store(conn, job: AssemblyJob, sha: str, duration: float, limited: int, chunks, settings) -> None:
    audio_store.replace_assembled_input(
        conn,
        job.item_id,
        job.condition.key(),
        job.option_order,
        job.label_sequence,
        job.recipe_sha256,
        sha,
        settings.audio_format,
        duration,
        settings.sample_rate,
        limited,
        job.text_rendering,
        utc_now(),
        chunks,
    )
