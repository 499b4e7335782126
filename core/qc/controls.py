"""Hidden control clips: clips whose right answer is known, mixed into a rating queue so each annotator's attention
can be measured (docs/qc.md, "Control clips").

- Known-bad controls, expected **Incorrect**, are made from the project's own clips by one documented corruption:
  `mismatch` (another item's audio, same language and voice where possible, under this clip's text),
  `truncated` (cut off mid-word), `noise` (white noise above the speech level) and `speed` (played too fast).
- Known-good controls, expected **Correct**, are copies of clips a coordinator marked gold (`spokenbench gold`) or
  that two or more annotators rated Correct with no dissent (`agreed`).

A control is an ordinary clips row (the item, part, text, voice, backend and creation time of the clip it was made
from, a recipe key of the same form, audio stored content-addressed in the clip's own format), so nothing a rater
or a pack sees tells it apart; its control status lives only in `control_clips`, which packs never export. Every
query feeding screening, sampling, evaluation, exports and Table 3 leaves controls out (NOT_A_CONTROL). Audio is
rendered once, when the queue is created.
"""

from __future__ import annotations

import hashlib
import json
import math
import random
from dataclasses import dataclass

import numpy as np

from spokenbench.core.audio import dsp
from spokenbench.core.audio.io import decode_audio, encode_audio
from spokenbench.core.foundation.errors import SpokenBenchError
from spokenbench.core.qc import store
from spokenbench.core.qc.sampling import ClipRecord, SampleResult
from spokenbench.core.store import Project
from spokenbench.core.store.database import utc_now

CORRUPTIONS = ("mismatch", "truncated", "noise", "speed")
KNOWN_GOOD = ("gold", "agreed")
EXPECTED = {kind: "incorrect" for kind in CORRUPTIONS} | {kind: "correct" for kind in KNOWN_GOOD}
MAX_CONTROLS = 1000

# The corruption parameters (why these values: docs/qc.md, "Control clips"). Each must make the clip clearly
# Incorrect by the rubric ("severe errors causing misunderstanding") to an attentive listener, yet leave speech
# audible, so a control is never recognisable as a control by being silent or empty.
NOISE_SNR_DB = -5.0  # white noise 5 dB above the active speech level: about the 50 % word-recognition point
TRUNCATE_WINDOW = (0.45, 0.65)  # the cut falls at the loudest 20 ms frame (a vowel) within this share of the clip
FADE_SECONDS = 0.005  # a 5 ms fade at the cut: a plain cut-off, not a click
SPEED_FACTOR = 2.5  # tempo ×2.5, pitch kept: beyond what the rating screen's own speed control (0.5–2×) makes
MIN_SOURCE_SECONDS = 1.0  # shorter clips (a spoken "A") are never made into controls


@dataclass(frozen=True)
class PlannedControl:
    kind: str
    source: dict  # the clips row whose text, item and voice the control carries
    audio: dict  # the clips row whose audio it plays (the source itself, except for a mismatch)
    wer_bin: int | None  # the queue row's interval and error rate: those of the sampled clip it hides beside
    error_rate: float | None
    language: str
    accent: str | None


@dataclass(frozen=True)
class ControlClip:
    clip_id: int
    kind: str
    expected: str


# --------------------------------------------------------------------------------------------------
# Corruptions (pure functions of the samples)


def truncate(samples: np.ndarray, rate: int) -> tuple[np.ndarray, dict]:
    """Cut the clip at its loudest 20 ms frame within TRUNCATE_WINDOW of its length: energy peaks are vowel
    nuclei, so the cut falls inside a word, never in a pause."""
    frame = max(1, int(rate * dsp.FRAME_SECONDS))
    start, end = (int(len(samples) * share) // frame for share in TRUNCATE_WINDOW)
    power = dsp._frame_power(samples, frame)[start : max(end, start + 1)]
    cut = (start + int(np.argmax(power))) * frame + frame // 2
    fade = min(int(rate * FADE_SECONDS), cut)
    kept = samples[:cut].copy()
    if fade:
        kept[-fade:] *= np.linspace(1.0, 0.0, fade, dtype=np.float32)
    return kept, {"cut_s": round(cut / rate, 3), "kept_share": round(cut / len(samples), 3)}


def corrupt(samples: np.ndarray, rate: int, kind: str, seed: str) -> tuple[np.ndarray, dict]:
    """The corrupted samples and the parameters used (stored with the control)."""
    if kind == "truncated":
        return truncate(samples, rate)
    if kind == "noise":
        level = dsp.speech_level_db(samples, rate)
        noisy = dsp.add_noise(samples, rate, NOISE_SNR_DB, seed)
        noisy = dsp.match_level(noisy, rate, level) if math.isfinite(level) else noisy  # as loud as the others
        return dsp.limit_peaks(noisy)[0], {"snr_db": NOISE_SNR_DB, "noise": "white gaussian", "noise_seed": seed}
    if kind == "speed":
        return dsp.time_stretch(samples, rate, SPEED_FACTOR), {"tempo": SPEED_FACTOR, "pitch_kept": True}
    if kind in ("mismatch", *KNOWN_GOOD):
        return samples, {}
    raise SpokenBenchError(f"unknown control kind '{kind}'")


# --------------------------------------------------------------------------------------------------
# Gold clips and known-good candidates


def mark_gold(project: Project, clip_ids: list[int], marked_by: str, note: str | None = None) -> int:
    """Mark clips as known-good (gold) for known-good controls; returns how many were newly marked."""
    marked_by = (marked_by or "").strip()
    if not marked_by:
        raise SpokenBenchError("marking gold needs the coordinator's name (--by)")
    with project.transaction() as conn:
        for clip_id in clip_ids:
            row = store.clip_state(conn, clip_id)
            if row is None:
                raise SpokenBenchError(f"no clip {clip_id} in this project; nothing was marked")
            if row["status"] != "ok" or row["item_id"] is None or store.is_control(conn, clip_id):
                raise SpokenBenchError(f"clip {clip_id} is not a good item clip; nothing was marked")
        return store.insert_gold(conn, [(clip_id, marked_by, note, utc_now()) for clip_id in clip_ids])


def unmark_gold(project: Project, clip_ids: list[int]) -> int:
    with project.transaction() as conn:
        return store.delete_gold(conn, clip_ids)


def gold_clips(conn) -> list[dict]:
    return store.gold_rows(conn)


def known_good_clips(conn) -> dict[int, str]:
    """clip id → 'gold' or 'agreed': coordinator-marked gold clips, and clips two or more annotators rated
    Correct (newest live rating each) with nobody rating them otherwise."""
    found = dict.fromkeys(store.gold_clip_ids(conn), "gold")
    for clip_id in store.agreed_correct_clip_ids(conn):
        found.setdefault(clip_id, "agreed")
    return found


def control_clips(conn) -> dict[int, ControlClip]:
    """Every control clip of the project: the one place that knows which clips are controls."""
    return {row[0]: ControlClip(*row) for row in store.control_rows(conn)}


# --------------------------------------------------------------------------------------------------
# Planning and making controls for a new queue


def plan_controls(conn, result: SampleResult, count: int, seed: int) -> list[PlannedControl]:
    """`count` controls for the sample `result`: up to half known-good (when there are such clips), the rest
    corruptions in turn. Each is hidden in the place of a sampled clip drawn with the seed (a template): same
    language, part kind and (where it can) accent, and in the queue it carries the template's WER interval and
    error rate, so neither its text nor its queue row stands out. No control repeats a sampled clip's or another
    control's item part."""
    if count < 0 or count > MAX_CONTROLS:
        raise SpokenBenchError(f"--controls must be between 0 and {MAX_CONTROLS}")
    if count == 0:
        return []
    if not result.selected:
        raise SpokenBenchError("the sample is empty, so there is nothing to hide controls among")
    rng = random.Random(f"{seed}:controls")
    used = {(r.item_id, r.part) for r in result.selected}
    candidates = store.control_source_rows(conn, MIN_SOURCE_SECONDS)
    audio_of = store.clip_audio_hashes(conn)
    sampled_audio = {audio_of.get(r.clip_id) for r in result.selected}
    # no control plays audio a sampled clip plays too (a pack would list one file for both)
    rows = [r for r in candidates if (r["item_id"], r["part"]) not in used and r["sha256"] not in sampled_audio]
    good = known_good_clips(conn)
    languages = {r.language for r in result.selected}
    good_rows = [r for r in rows if r["id"] in good and r["language"] in languages]
    planned: list[PlannedControl] = []
    rng.shuffle(good_rows)
    for row in good_rows:
        if len(planned) == count // 2:
            break
        if (row["item_id"], row["part"]) in used:
            continue  # another voice's reading of a text already in the queue
        template = rng.choice([r for r in result.selected if r.language == row["language"]])
        planned.append(_planned(good[row["id"]], row, row, template))
        used.add((row["item_id"], row["part"]))
    n_good = len(planned)
    kinds = list(CORRUPTIONS)
    rng.shuffle(kinds)
    for index in range(count - n_good):
        kind = kinds[index % len(kinds)]
        template = rng.choice(result.selected)
        source = _pick_source(rows, template, used, rng)
        if source is None:
            raise SpokenBenchError(
                f"only {len(planned)} of {count} controls can be made: the project has too few clips outside the "
                f"sample (good item clips of at least {MIN_SOURCE_SECONDS:g} s in the sample's languages); ask "
                "for fewer --controls"
            )
        audio = source
        if kind == "mismatch":
            audio = _pick_mismatch_audio(rows, source, rng)
            if audio is None:
                kind, audio = "noise", source  # no other item in this language to borrow audio from
        used.add((source["item_id"], source["part"]))
        planned.append(_planned(kind, source, audio, template))
    return planned


def _planned(kind: str, source: dict, audio: dict, template: ClipRecord) -> PlannedControl:
    return PlannedControl(
        kind, source, audio, template.wer_bin, template.error_rate, source["language"], source["accent"]
    )


def _pick_source(rows: list[dict], template: ClipRecord, used: set, rng: random.Random) -> dict | None:
    """A clip like the template (same language and part kind, its accent preferred) of an item part not used."""
    is_question = template.part == "question"
    fresh = [r for r in rows if (r["item_id"], r["part"]) not in used and r["language"] == template.language]
    for pool in (
        [r for r in fresh if (r["part"] == "question") == is_question and r["accent"] == template.accent],
        [r for r in fresh if (r["part"] == "question") == is_question],
        fresh,
    ):
        if pool:
            return rng.choice(pool)
    return None


def _pick_mismatch_audio(rows: list[dict], source: dict, rng: random.Random) -> dict | None:
    """Another item's clip in the source's language, the same voice and part kind preferred."""
    others = [r for r in rows if r["language"] == source["language"] and r["item_id"] != source["item_id"]]
    for pool in (
        [r for r in others if r["voice"] == source["voice"] and r["part"] == source["part"]],
        [r for r in others if r["voice"] == source["voice"]],
        others,
    ):
        if pool:
            return rng.choice(pool)
    return None


@dataclass(frozen=True)
class RenderedControl:
    planned: PlannedControl
    sha256: str
    audio_format: str
    duration_s: float
    sample_rate: int
    speech_level_db: float | None
    parameters: dict


def render_controls(project: Project, planned: list[PlannedControl], seed: int, queue: str) -> list[RenderedControl]:
    """Each control's audio, made once and stored content-addressed in the format of the clip it came from (a
    known-good control shares its clip's file). Writes only audio files; the rows follow in `insert_controls`."""
    rendered = []
    for number, plan in enumerate(planned, start=1):
        audio_row = plan.audio
        fmt = audio_row["audio_format"]
        data = project.audio.read_bytes(audio_row["sha256"], fmt)
        parameters: dict = {"queue": queue, "seed": seed, "number": number}
        if plan.kind in ("truncated", "noise", "speed"):
            decoded = decode_audio(data, f"clip {audio_row['id']}")
            samples, used = corrupt(decoded.samples, decoded.rate, plan.kind, f"{seed}:{queue}:{number}")
            data = encode_audio(samples, decoded.rate, fmt if fmt in ("wav", "flac") else "flac")
            fmt = fmt if fmt in ("wav", "flac") else "flac"
            level = dsp.speech_level_db(samples, decoded.rate)
            duration, rate = len(samples) / decoded.rate, decoded.rate
            parameters |= used
        else:
            level, duration, rate = audio_row["speech_level_db"], audio_row["duration_s"], audio_row["sample_rate"]
        sha256 = project.audio.put_bytes(data, fmt)
        rendered.append(
            RenderedControl(
                plan, sha256, fmt, duration, rate, level if level is None or math.isfinite(level) else None, parameters
            )
        )
    return rendered


def insert_controls(
    conn, rendered: list[RenderedControl]
) -> list[tuple[int, str, str | None, int | None, float | None]]:
    """Store the controls as clips rows (and their status in control_clips); returns their queue rows (clip id,
    language, accent, WER interval, error rate). The caller holds the queue's transaction."""
    queue_rows = []
    for control in rendered:
        plan, source, audio = control.planned, control.planned.source, control.planned.audio
        recipe = json.dumps([plan.kind, source["cache_key"], audio["cache_key"], control.parameters], sort_keys=True)
        cache_key = hashlib.sha256(recipe.encode()).hexdigest()
        clip = {
            "item_id": source["item_id"], "part": source["part"], "text": source["text"],
            "language": source["language"], "accent": source["accent"], "voice": audio["voice"],
            "speaker_gender": audio["speaker_gender"], "speaker_id": audio["speaker_id"], "backend": audio["backend"],
            "model": audio["model"], "prompt": source["prompt"], "cache_key": cache_key, "sha256": control.sha256,
            "audio_format": control.audio_format, "duration_s": control.duration_s,
            "sample_rate": control.sample_rate, "speech_level_db": control.speech_level_db, "status": "ok",
            "created_at": source["created_at"], "neutralization": audio["neutralization"],
        }  # fmt: skip
        clip_id = store.insert_control(
            conn,
            clip,
            plan.kind,
            EXPECTED[plan.kind],
            source["id"],
            audio["id"],
            json.dumps(control.parameters, sort_keys=True),
            utc_now(),
            copy_transcripts=plan.kind not in ("truncated", "noise", "speed"),  # the same audio: its transcripts hold
        )
        queue_rows.append((clip_id, plan.language, plan.accent, plan.wer_bin, plan.error_rate))
    return queue_rows


def mix_in(sampled: list, controls: list, seed: int) -> list:
    """The queue order: the sample's order with the controls at positions drawn with the seed."""
    total = len(sampled) + len(controls)
    positions = set(random.Random(f"{seed}:control-positions").sample(range(total), len(controls)))
    sampled_iter, controls_iter = iter(sampled), iter(controls)
    return [next(controls_iter) if index in positions else next(sampled_iter) for index in range(total)]
