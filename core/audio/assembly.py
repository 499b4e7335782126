"""Condition assembly: the exact audio an evaluated model hears for one item under one condition — the
"question" token and the question, then label + option segments in the condition's order, separated by fixed
pauses, every segment brought to one speech level and one sample rate; then speed, volume and noise
perturbations. Each input is stored with its permutation (so answers map back to original options), its text
rendering, and optional chunks for models with input limits. Inputs are built a few at a time on worker threads
and written to disk as they finish, so memory stays bounded, and an input whose recipe is unchanged is never
rebuilt. Files are made durable in groups (one grouped fsync, one transaction for the group's rows; see
docs/reliability.md), and an input with no perturbation is joined from its segments' 16-bit samples directly."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import hashlib
import io
import json
import os
import sqlite3
import struct
import threading
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field

import numpy as np
import soundfile

from spokenbench.core.audio import dsp
from spokenbench.core.audio import store as audio_store
from spokenbench.core.audio.io import AudioError, decode_audio, encode_audio, read_pcm16, write_pcm16_wav
from spokenbench.core.audio.tokens import token_part, token_voice_source
from spokenbench.core.domain.conditions import Condition, check_order, order_strings
from spokenbench.core.domain.items import option_part
from spokenbench.core.foundation.errors import SpokenBenchError
from spokenbench.core.foundation.progress import Progress
from spokenbench.core.jobs.batch_writer import Write
from spokenbench.core.jobs.loop import JobLoop, UnitClaims
from spokenbench.core.jobs.registry import tracked_job
from spokenbench.core.store import Project
from spokenbench.core.store.audio_files import PendingFile
from spokenbench.core.store.database import utc_now
from spokenbench.core.store.items import items_in_languages

SEGMENT_CACHE_BYTES = 256 * 2**20  # prepared clips kept for reuse; bounds memory whatever the input count
WAV_BYTES_CACHE_BYTES = 64 * 2**20  # assemble_wav_bytes: prepared clips kept across calls (by sha256 and settings)
RENDER_THREADS = max(1, min(4, os.cpu_count() or 1))  # inputs built at once (numpy, scipy, I/O release the GIL)
INPUTS_IN_FLIGHT = 32  # inputs being built or waiting for their group's fsync; bounds a group's size
BYTES_IN_FLIGHT = 32 * 2**20  # built inputs' buffers waiting to be stored: no new input starts above this

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

    @functools.cached_property
    def condition_key(self) -> str:
        """condition.key(), worked out once: claims, plans and stores all ask for it."""
        return self.condition.key()


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
    item_ids: set[int] | None = None,
    kind: str | None = None,
) -> AssemblyPlan:
    """One job per item × (accent, voice) with complete clips × order × speed × volume × SNR. Settings outside
    the bounds above, or an item whose spoken text exceeds MAX_INPUT_CHARS, are refused before anything is built.
    `item_ids` narrows the items (the Evaluate page assembles what one run asks about)."""
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
        if item_ids is not None and item_id not in item_ids:
            continue
        if kind is not None and item.kind != kind:  # e.g. rotations of four options for the mcq items only
            continue
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
                                if stored.get((item_id, job.condition_key)) == job.recipe_sha256:
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
    condition_key = condition.key()
    recipe = json.dumps(
        [condition_key, option_order, label_sequence, asdict(settings), [(r, c and c.sha256) for r, c in segments]]
    )
    job = AssemblyJob(
        item_id,
        f"{item.source_id} ({item.language})",
        condition,
        option_order,
        label_sequence,
        segments,
        "\n".join(lines),
        hashlib.sha256(recipe.encode()).hexdigest(),
    )
    job.__dict__["condition_key"] = condition_key  # the cached property, already known
    return job


class SegmentCache:
    """Decoded, resampled, level-matched clips, reused across the many conditions that share them; with their
    16-bit samples once an unperturbed input needs them. Safe to share between the building threads."""

    def __init__(self, project: Project, settings: AssemblySettings, max_bytes: int = SEGMENT_CACHE_BYTES):
        self.project, self.settings, self.max_bytes = project, settings, max_bytes
        self._cache: OrderedDict[str, list] = OrderedDict()  # sha256 → [float32 samples, int16 samples or None]
        self._bytes = 0
        self._lock = threading.Lock()
        self._loading: dict[str, threading.Event] = {}  # clips being prepared by a thread right now

    def get(self, clip: ClipRef, what: str) -> np.ndarray:
        return self._entry(clip, what)[0]

    def get_pcm16(self, clip: ClipRef, what: str) -> np.ndarray:
        """The clip as the int16 samples encode_audio would write for it."""
        entry = self._entry(clip, what)
        pcm = entry[1]
        if pcm is None:
            pcm = pcm16(entry[0])
            with self._lock:
                if entry[1] is None:
                    entry[1] = pcm
                    if self._cache.get(clip.sha256) is entry:
                        self._bytes += pcm.nbytes
                        self._evict()
        return pcm

    def _entry(self, clip: ClipRef, what: str) -> list:
        while True:
            with self._lock:
                cached = self._cache.get(clip.sha256)
                if cached is not None:
                    self._cache.move_to_end(clip.sha256)
                    return cached
                loading = self._loading.get(clip.sha256)
                if loading is None:  # this thread prepares it; others wanting it wait instead of doing it twice
                    loading = self._loading[clip.sha256] = threading.Event()
                    break
            loading.wait()  # then look again (if preparing it failed, the next one tries and reports the error)
        try:
            try:
                data = self.project.audio.read_bytes(clip.sha256, clip.audio_format)
            except SpokenBenchError as error:
                raise AudioError(f"{what}: {error}") from None
            samples, rate = _decode(data, what)
            entry = [prepare_segment(samples, rate, self.settings), None]
            with self._lock:
                self._cache[clip.sha256] = entry
                self._bytes += entry[0].nbytes
                self._evict()
            return entry
        finally:
            with self._lock:
                del self._loading[clip.sha256]
            loading.set()

    def _evict(self) -> None:
        while self._bytes > self.max_bytes and len(self._cache) > 1:
            samples, pcm = self._cache.popitem(last=False)[1]
            self._bytes -= samples.nbytes + (0 if pcm is None else pcm.nbytes)


def _decode(data: bytes, what: str) -> tuple[np.ndarray, int]:
    """Mono float32 samples and rate, as decode_audio gives them; 16-bit mono WAV (every TTS clip) is read with
    the stdlib's reader, without libsndfile's per-file cost, to the same values."""
    pcm = read_pcm16(data, what)
    if pcm is None or len(pcm[0]) == 0:
        audio = decode_audio(data, what)
        return audio.samples, audio.rate
    return pcm[0].astype(np.float32) / np.float32(32768), pcm[1]


def pcm16(samples: np.ndarray) -> np.ndarray:
    """The 16-bit samples encode_audio writes for float samples (clipped to full scale), elementwise: the
    samples of a concatenation are the concatenation of its pieces' samples."""
    return (np.clip(samples, -1.0, 1.0) * np.float32(32767)).astype("<i2")


def _wav_header(samples: int, rate: int) -> bytes:
    """The 44-byte header encode_audio (libsndfile) writes for mono 16-bit PCM WAV."""
    size = 2 * samples
    return struct.pack(
        "<4sI4s4sIHHIIHH4sI", b"RIFF", 36 + size, b"WAVE", b"fmt ", 16, 1, 1, rate, 2 * rate, 2, 16, b"data", size
    )


def encoded_parts(pieces: list[np.ndarray], rate: int, audio_format: str) -> list:
    """The bytes of encode_audio(concatenation of `pieces`) as a list of buffers, without joining them for WAV."""
    if audio_format == "wav":
        return [_wav_header(sum(len(piece) for piece in pieces), rate), *pieces]
    joined = np.concatenate(pieces) if len(pieces) != 1 else pieces[0]
    buffer = io.BytesIO()
    soundfile.write(buffer, joined, rate, format=audio_format.upper(), subtype="PCM_16")
    return [buffer.getvalue()]


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
        return _prepared_clips.get(data, what, settings, match_levels)

    pieces: list[np.ndarray | None] = [segment(question, "question"), None]
    for index, option in enumerate(options):
        if labels is not None:
            pieces += [segment(labels[index], f"label {index + 1}"), None]
        pieces += [segment(option, f"option {index + 1}"), None]
    audio, _ = concatenate(pieces, settings)
    return encode_audio(audio, settings.sample_rate, settings.audio_format)


class _PreparedClips:
    """A bounded LRU of clips as prepare_segment made them, by the clip's sha256 and everything the preparation
    depends on (rate, level matching and target): scripts assemble many inputs from the same few clips."""

    def __init__(self, max_bytes: int):
        self.max_bytes = max_bytes
        self._cache: OrderedDict[tuple, np.ndarray] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    def get(self, data: bytes, what: str, settings: AssemblySettings, match_levels: bool) -> np.ndarray:
        key = (
            hashlib.sha256(data).digest(),
            settings.sample_rate,
            match_levels,
            settings.target_level_db if match_levels else None,
        )
        with self._lock:
            found = self._cache.get(key)
            if found is not None:
                self._cache.move_to_end(key)
                return found
        audio = decode_audio(data, what)
        prepared = prepare_segment(audio.samples, audio.rate, settings, match_levels)
        prepared.flags.writeable = False  # shared between calls: nobody may change it in place
        with self._lock:
            if key not in self._cache:
                self._cache[key] = prepared
                self._bytes += prepared.nbytes
                while self._bytes > self.max_bytes and len(self._cache) > 1:
                    self._bytes -= self._cache.popitem(last=False)[1].nbytes
        return prepared

    def clear(self) -> None:
        with self._lock:
            self._cache.clear()
            self._bytes = 0


_prepared_clips = _PreparedClips(WAV_BYTES_CACHE_BYTES)


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


def _segments(job: AssemblyJob, cache: SegmentCache, settings: AssemblySettings, get) -> list[np.ndarray | None]:
    """The job's pieces from `get` (float or 16-bit samples), None for a pause; refuses an input that would be
    longer than MAX_INPUT_SECONDS before anything is joined."""
    rate = settings.sample_rate
    pieces = []
    length = 0
    for role, clip in job.segments:
        piece = None if role == "pause" else get(clip, f"{job.label} {role}")
        length += int(settings.pause_s * rate) if piece is None else len(piece)
        if length / rate / job.condition.speed > MAX_INPUT_SECONDS:
            raise AudioError(
                f"{job.label}: the input would be longer than {MAX_INPUT_SECONDS / 60:g} minutes of audio; "
                "give the item a shorter spoken text"
            )
        pieces.append(piece)
    return pieces


def render(
    job: AssemblyJob, cache: SegmentCache, settings: AssemblySettings
) -> tuple[np.ndarray, list[int], np.ndarray, int]:
    """(final audio, cut points at pause centres, clean audio before noise, limited sample count)."""
    rate = settings.sample_rate
    clean, cuts = concatenate(_segments(job, cache, settings, cache.get), settings)
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


def _unperturbed(job: AssemblyJob) -> bool:
    condition = job.condition
    return condition.speed == 1.0 and condition.volume == 1.0 and condition.snr_db is None


def render_pcm16(
    job: AssemblyJob, cache: SegmentCache, settings: AssemblySettings
) -> tuple[list[np.ndarray], list[int]]:
    """An unperturbed input as the 16-bit pieces (segments and pauses) whose concatenation is exactly what
    encoding render()'s audio gives, and the cut points; nothing of the input's length is copied."""
    pause = np.zeros(int(round(settings.pause_s * settings.sample_rate)), dtype="<i2")
    pieces, cuts, position = [], [], 0
    for piece in _segments(job, cache, settings, cache.get_pcm16):
        if piece is None:
            piece = pause
            cuts.append(position + len(pause) // 2)
        pieces.append(piece)
        position += len(piece)
    return pieces, cuts


def chunk_bounds(clean: np.ndarray, rate: int, cuts: list[int], max_seconds: float, what: str) -> list[int]:
    """Chunk boundaries no further apart than `max_seconds`, at the assembly's own pauses where possible,
    else at pauses found inside a long segment; never inside a word. Raises if no pause fits."""
    return _chunk_bounds(len(clean), rate, cuts, max_seconds, what, lambda: clean)


def _chunk_bounds(
    total: int, rate: int, cuts: list[int], max_seconds: float, what: str, clean: Callable[[], np.ndarray]
) -> list[int]:
    """chunk_bounds for an input of `total` samples whose clean audio is only made (`clean()`) when a chunk
    has to be cut inside a segment."""
    limit = int(max_seconds * rate)
    inner: list[int] | None = None
    bounds, start = [0], 0
    while total - start > limit:
        window = [c for c in cuts if start < c <= start + limit]
        if not window:
            if inner is None:
                inner = _pause_centres(clean(), rate)
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


class _ChunkingFailed(Exception):
    """An input has no pause to cut a chunk at: an error of the job (re-raised as the AudioError it carries),
    not a skipped input."""

    def __init__(self, error: AudioError):
        super().__init__(str(error))
        self.error = error


@dataclass
class _Built:
    """An input built, as the buffers of its files (chunks first, the whole input last), waiting to be written and
    made durable with its group."""

    job: AssemblyJob
    outputs: list[list]  # per file, the buffers whose concatenation is its bytes
    chunks: list[tuple[float, int, float]]  # (max seconds, position, duration s) of each chunk, in file order
    duration: float
    limited: int


def build_input(job: AssemblyJob, cache: SegmentCache, settings: AssemblySettings, chunk_seconds) -> _Built:
    """Build one input and its chunks as encoded buffers (an unperturbed input's are views of its segments'
    cached 16-bit samples: nothing of the input's length is copied)."""
    rate = settings.sample_rate
    if _unperturbed(job):
        pieces, cuts = render_pcm16(job, cache, settings)
        limited = 0
        total = sum(len(piece) for piece in pieces)
        final = np.concatenate(pieces) if chunk_seconds else None

        def clean() -> np.ndarray:  # only for a chunk that must be cut inside a segment
            return concatenate(_segments(job, cache, settings, cache.get), settings)[0]
    else:
        audio, cuts, clean_audio, limited = render(job, cache, settings)
        final = pcm16(audio)
        pieces, total = [final], len(final)

        def clean() -> np.ndarray:
            return clean_audio

    outputs, chunks = [], []
    for max_seconds in chunk_seconds:
        try:
            bounds = _chunk_bounds(total, rate, cuts, max_seconds, job.label, clean)
        except AudioError as error:  # not a bad clip: the job stops with it, as it always did
            raise _ChunkingFailed(error) from None
        for position, (a, b) in enumerate(zip(bounds, bounds[1:])):
            outputs.append(encoded_parts([final[a:b]], rate, settings.audio_format))
            chunks.append((max_seconds, position, (b - a) / rate))
    outputs.append(encoded_parts(pieces, rate, settings.audio_format))
    return _Built(job, outputs, chunks, total / rate, limited)


class GroupDurability:
    """Group commit for audio files, on the job's event loop. A built input's files are written to their temp
    names (AudioStore.write_pending) as soon as it is built, on a thread of their own (with those of the inputs built
    in the same turn of the event loop: one hand-off for a chunk of clips); written inputs wait here,
    and whenever no group is being made durable, all of them become the next group, made durable at once on a
    second thread (make_durable: fsyncs in flight together, renames, one fsync per folder) — so the next inputs'
    files are written while the disk flushes this group's. The group's inputs are released together, so their
    rows reach the job's writer together and share one transaction. File creation waits on the file system's
    journal while it commits, so it is kept off the threads that build. A group waits until a few inputs are
    written, or until nothing else is being built or written."""

    def __init__(self, store, audio_format: str, min_group: int, max_bytes: int):
        self.store, self.audio_format, self.min_group, self.max_bytes = store, audio_format, min_group, max_bytes
        self.writer = ThreadPoolExecutor(1, thread_name_prefix="spokenbench-assemble-files")
        self.syncer = ThreadPoolExecutor(1, thread_name_prefix="spokenbench-assemble-sync")
        self.written: list[tuple[list[PendingFile], asyncio.Future]] = []
        self.writes: set[asyncio.Future] = set()
        self.to_write: list[tuple[list[list], asyncio.Future]] = []  # handed to the writer thread at the turn's end
        self.building = 0
        self.bytes = 0  # buffers of built inputs not written yet (memory stays bounded whatever the input count)
        self.room = asyncio.Event()
        self.syncing: asyncio.Task | None = None
        self.groups = 0

    async def admit(self) -> None:
        """Wait, before building another input, while the built ones waiting to be written hold max_bytes."""
        while self.bytes >= self.max_bytes:
            self.room.clear()
            await self.room.wait()

    async def durable(self, outputs: list[list]) -> list[str]:
        """Write and durably store the files; returns their sha256s once they are in place."""
        loop = asyncio.get_running_loop()
        size = sum(memoryview(part).nbytes for parts in outputs for part in parts)
        self.bytes += size
        write = loop.create_future()
        self.to_write.append((outputs, write))
        if len(self.to_write) == 1:
            loop.call_soon(self._hand_over_writes)
        self.writes.add(write)
        write.add_done_callback(self.writes.discard)
        del outputs  # the buffers go as soon as they are written
        try:
            pending = await asyncio.shield(write)
        except asyncio.CancelledError:  # written all the same: its temp files go once they are
            write.add_done_callback(
                lambda done: done.cancelled() or done.exception() or self.store.discard(done.result())
            )
            raise
        finally:
            self.bytes -= size
            self.room.set()
            self.poke()
        future = loop.create_future()
        self.written.append((pending, future))
        self.poke()
        return await future

    def poke(self) -> None:
        """Make the written inputs durable if no group is being made durable and they are enough, or nothing else
        is being built or written."""
        if self.syncing is None and self.written:
            if len(self.written) >= self.min_group or (self.building == 0 and not self.writes):
                self.syncing = asyncio.ensure_future(self._sync())

    def _hand_over_writes(self) -> None:
        """The outputs that arrived in this turn of the event loop (a chunk of clips comes back at once) go to the
        writer thread together: one hand-off each way instead of one per output."""
        batch, self.to_write = self.to_write, []
        done = asyncio.get_running_loop().run_in_executor(self.writer, self._write_each, [out for out, _ in batch])
        done.add_done_callback(lambda finished: _settle_writes([write for _, write in batch], finished))

    def _write_each(self, batch: list[list[list]]) -> list[list[PendingFile] | BaseException]:
        """Each output's files written, or the error that stopped them (that output's alone)."""
        results: list[list[PendingFile] | BaseException] = []
        for outputs in batch:
            try:
                results.append(self._write(outputs))
            except BaseException as error:  # noqa: BLE001 - handed to its own output's caller
                results.append(error)
        return results

    def _write(self, outputs: list[list]) -> list[PendingFile]:
        pending: list[PendingFile] = []
        try:
            for parts in outputs:
                pending.append(self.store.write_pending(parts, self.audio_format))
        except BaseException:
            self.store.discard(pending)
            raise
        return pending

    async def _sync(self) -> None:
        group, self.written = self.written, []
        files = [file for pending, _ in group for file in pending]
        try:
            await asyncio.get_running_loop().run_in_executor(self.syncer, self.store.make_durable, files)
        except BaseException as error:  # noqa: BLE001 - handed to every input of the group
            for _, future in group:
                if not future.done():
                    future.set_exception(error)
        else:
            self.groups += 1
            for pending, future in group:
                if not future.done():
                    future.set_result([file.sha256 for file in pending])
        finally:
            self.syncing = None
        self.poke()

    async def close(self) -> None:
        """Wait for the writes and the group being made durable (its files end up whole and in place, or not at
        all); the temp files of inputs written but not made durable are removed."""
        await asyncio.gather(*self.writes, return_exceptions=True)
        while self.syncing is not None:
            with contextlib.suppress(BaseException):
                await asyncio.shield(self.syncing)
        for pending, future in self.written:
            self.store.discard(pending)
            future.cancel()
        self.written = []
        self.writer.shutdown(wait=True)
        self.syncer.shutdown(wait=True)


def _settle_writes(writes: list[asyncio.Future], finished: asyncio.Future) -> None:
    for index, write in enumerate(writes):
        if write.done():
            continue
        if finished.cancelled():
            write.cancel()
        elif finished.exception() is not None:
            write.set_exception(finished.exception())
        elif isinstance(finished.result()[index], BaseException):
            write.set_exception(finished.result()[index])
        else:
            write.set_result(finished.result()[index])


def run_assembly(
    project: Project,
    plan: AssemblyPlan,
    chunk_seconds: list[float] = (),
    settings: AssemblySettings = AssemblySettings(),
    progress: Progress | None = None,
    cache_bytes: int = SEGMENT_CACHE_BYTES,
) -> AssemblyReport:
    """Build the plan's inputs as a tracked job on the shared loop: RENDER_THREADS build inputs; their files are
    written and made durable in groups (GroupDurability), and only then are their rows handed to the job's
    writer (one transaction per group), so a row never refers to a file that could be lost, and a rating saved
    meanwhile never waits behind assembly."""
    cache = SegmentCache(project, settings, cache_bytes)
    report = AssemblyReport()
    chunk_seconds = list(chunk_seconds)

    async def run_all(job_progress: Progress) -> None:
        builders = ThreadPoolExecutor(RENDER_THREADS, thread_name_prefix="spokenbench-assemble")
        groups = GroupDurability(project.audio, settings.audio_format, max(1, INPUTS_IN_FLIGHT // 4), BYTES_IN_FLIGHT)

        async def assemble(job: AssemblyJob) -> Write | None:
            await groups.admit()
            groups.building += 1
            try:
                built = await asyncio.get_running_loop().run_in_executor(
                    builders, build_input, job, cache, settings, chunk_seconds
                )
            except AudioError as error:  # a missing or damaged clip: this input waits, the others go on
                report.skipped.append(f"{job.label}: {error}")
                return None
            except _ChunkingFailed as failed:
                raise failed.error from None
            finally:
                groups.building -= 1
                groups.poke()
            outputs, duration, limited = built.outputs, built.duration, built.limited
            chunks = built.chunks
            del built  # the buffers go as soon as they are written, not when the rows are committed
            stored = groups.durable(outputs)
            del outputs
            shas = await stored
            report.assembled += 1
            report.limited_inputs += int(limited > 0)
            report.seconds_of_audio += duration
            chunks = [(m, position, sha, d) for (m, position, d), sha in zip(chunks, shas)]
            return lambda conn: _store(conn, job, shas[-1], duration, limited, chunks, settings)

        loop = JobLoop(
            project.db_path,
            job_progress,
            concurrency=INPUTS_IN_FLIGHT,
            describe=lambda job: job.label,
            claims=UnitClaims("assemble", key=_claim_key, already_done=_already_assembled),
        )
        try:
            await loop.run(plan.jobs, assemble)
        finally:
            builders.shutdown(wait=True, cancel_futures=True)
            await groups.close()

    if plan.jobs:
        label = f"assemble {len(plan.jobs)} inputs"
        with tracked_job(project.path, "assemble", label, progress, total=len(plan.jobs)) as job_progress:
            asyncio.run(run_all(job_progress))
    return report


def _claim_key(job: AssemblyJob) -> str:
    return f"{job.item_id}|{job.recipe_sha256}|{job.condition_key}"


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
        job.condition_key,
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
