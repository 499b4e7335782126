"""Takes: a recording of one prompt by one speaker. Every take is checked (core.recording.quality), trimmed of its
leading and trailing silence, stored lossless (16-bit FLAC) in the project's content-addressed audio folder and
recorded with its checks under the speaker's consent in force. A retake records the same prompt again (take 2,
3, …); the newest take of a prompt is the one that counts for progress, and a discarded take is deleted with its
file when nothing else refers to it.

`prepare_take` is pure computation (checks, trimming, encoding: run it off the UI thread); `save_take` stores the
file and then the row in one short transaction, refusing when the consent is gone."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from spokenbench.core.audio.io import encode_audio
from spokenbench.core.foundation.errors import SpokenBenchError
from spokenbench.core.recording import store
from spokenbench.core.recording.prompts import Prompt
from spokenbench.core.recording.quality import InputBreak, QualitySettings, TakeAnalysis, analyse_take
from spokenbench.core.recording.speakers import ConsentRequired, require_consent
from spokenbench.core.store import Project

STORED_FORMAT = "flac"  # lossless, about half the size of WAV


@dataclass(frozen=True)
class PreparedTake:
    prompt: Prompt
    analysis: TakeAnalysis
    audio: bytes  # FLAC of the trimmed take
    audio_format: str
    device: str | None

    @property
    def passed(self) -> bool:
        return self.analysis.passed


@dataclass(frozen=True)
class Take:
    id: int
    speaker_id: int
    prompt_key: str | None
    text: str | None
    take: int
    passed: bool
    snr_db: float | None
    checks: list[dict]
    sha256: str
    audio_format: str
    duration_s: float
    sample_rate: int
    created_at: str

    @classmethod
    def from_row(cls, row: store.TakeRow) -> Take:
        return cls(
            row.id,
            row.speaker_id,
            row.prompt_key,
            row.text,
            row.take,
            row.passed,
            row.snr_db,
            row.checks,
            row.sha256,
            row.audio_format,
            row.duration_s,
            row.sample_rate,
            row.created_at,
        )


def prepare_take(
    samples: np.ndarray,
    rate: int,
    prompt: Prompt,
    device: str | None = None,
    settings: QualitySettings = QualitySettings(),
    input_break: InputBreak | None = None,
) -> PreparedTake:
    """Check and trim a take and encode it for storage. Pure: nothing is stored. `input_break`: when the input
    sent nothing for a while during the take (a failed check)."""
    if rate <= 0:
        raise SpokenBenchError(f"a take needs a positive sample rate, not {rate}")
    samples = np.asarray(samples, dtype=np.float32).reshape(-1)
    if len(samples) == 0:
        raise SpokenBenchError("the take is empty: nothing was recorded")
    analysis = analyse_take(samples, rate, settings, input_break)
    audio = encode_audio(analysis.trimmed if len(analysis.trimmed) else samples, rate, STORED_FORMAT)
    return PreparedTake(prompt, analysis, audio, STORED_FORMAT, device)


def save_recorded_take(
    project: Project, speaker_id: int, prepared: PreparedTake, release_spool: Callable[[bool], None]
) -> Take:
    """`save_take` for a take just recorded, then its spool (core/recording/spool.py) let go: removed once the take
    is saved, or when the consent is gone (nothing of the voice stays); kept when the save failed otherwise (a
    full disk), so the take is offered back at the next opening."""
    try:
        take = save_take(project, speaker_id, prepared)
    except ConsentRequired:
        release_spool(True)
        raise
    except BaseException:
        release_spool(False)
        raise
    release_spool(True)
    return take


def save_take(project: Project, speaker_id: int, prepared: PreparedTake) -> Take:
    """Store the take's audio, then its row (numbered after the prompt's earlier takes) under the consent in force.
    Refused with ConsentRequired when the speaker has no consent in force."""
    require_consent(project.conn, speaker_id)  # fail before writing a file
    sha256 = project.audio.put_bytes(prepared.audio, prepared.audio_format)
    analysis = prepared.analysis
    prompt = prepared.prompt
    with project.transaction() as conn:
        consent = require_consent(conn, speaker_id)  # again inside the transaction: it may have been withdrawn
        take = store.next_take_number(conn, speaker_id, prompt.key)
        recording_id = store.insert_take(
            conn,
            speaker_id,
            consent.id,
            prompt.item_id,
            prompt.part,
            prompt.key,
            prompt.text,
            take,
            analysis.passed,
            analysis.snr_db,
            [check.as_dict() for check in analysis.checks],
            sha256,
            prepared.audio_format,
            analysis.trimmed_duration_s,
            analysis.rate,
            prepared.device,
        )
    return Take.from_row(store.take_by_id(project.conn, recording_id))


def discard_take(project: Project, recording_id: int) -> bool:
    """Delete a take (and any voice cloned from it); its file too when no other row refers to it. False when the
    take was already gone."""
    with project.transaction() as conn:
        row = store.take_by_id(conn, recording_id)
        if row is None:
            return False
        store.delete_take(conn, recording_id)
    if not store.audio_referenced(project.conn, row.sha256):
        with contextlib.suppress(FileNotFoundError):
            project.audio.path_for(row.sha256, row.audio_format).unlink()
    return True


def speaker_takes(conn, speaker_id: int) -> list[Take]:
    return [Take.from_row(row) for row in store.takes_of(conn, speaker_id)]


def latest_takes(takes: list[Take]) -> dict[str, Take]:
    """prompt key → its newest take."""
    latest: dict[str, Take] = {}
    for take in takes:
        if take.prompt_key is not None:
            latest[take.prompt_key] = take  # takes come oldest first
    return latest


@dataclass(frozen=True)
class ScriptProgress:
    total: int
    recorded: int  # prompts with a take
    passed: int  # prompts whose newest take passed every check

    @property
    def text(self) -> str:
        if not self.total:
            return "no prompts"
        return f"{self.passed} / {self.total} prompts done ({100 * self.passed / self.total:.0f} %), {self.recorded} recorded"


def script_progress(prompts: list[Prompt], takes: list[Take]) -> ScriptProgress:
    latest = latest_takes(takes)
    keys = [p.key for p in prompts]
    return ScriptProgress(
        len(keys), sum(k in latest for k in keys), sum(k in latest and latest[k].passed for k in keys)
    )


def best_take(takes: list[Take]) -> Take | None:
    """The best passing take to clone a voice from: the highest estimated SNR, longer takes first among equals
    (within 1 dB) — voice cloning works best from a few clean seconds."""
    passing = [t for t in takes if t.passed]
    if not passing:
        return None
    return max(passing, key=lambda t: (round((t.snr_db or 0) / 1.0), min(t.duration_s, 15.0), t.id))


def read_take_audio(project: Project, take: Take) -> bytes:
    return project.audio.read_bytes(take.sha256, take.audio_format)
