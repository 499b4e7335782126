"""Voice-gender validation (the gender paper's Section 2.2, Appendix B.2, Tables 6-7): does each clip sound like
the gender its voice is meant to present, and does a neutralized clip sound like neither?

The built-in check needs nothing beyond numpy: the clip's median F0 over its voiced frames (core/audio/pitch.py)
placed in one of three bands — male below 145 Hz, female above 175 Hz, gender-ambiguous in between. The bands are
this project's heuristic (adult speaking F0 is typically about 85-155 Hz for men and 165-255 Hz for women; the
overlap is where a voice's pitch alone does not tell), not the paper's method. A plain clip is expected in its
voice's band, a neutralized clip in the ambiguous one; every clip elsewhere is listed.

The paper validated with two classifiers fine-tuned for gender recognition, a wav2vec 2.0 model and an
ECAPA-TDNN one. They are not shipped; where a user has them, a small module wraps each behind
`GenderClassifier` (a `name` and `predict(samples, rate) -> 'male' | 'female'`) and is named on the command line
as `--classifier package.module:factory` (docs/voices.md shows wrappers for both). Every classifier, the pitch
bands included, is reported in the layout of the paper's Table 6 (plain voices) and Table 7 (neutralized voices,
by the gender of the voice they were made from): ground truth, total samples, accuracy."""

from __future__ import annotations

import importlib
import statistics
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

import numpy as np

from spokenbench.core.audio.io import AudioError, decode_audio
from spokenbench.core.audio.pitch import median_f0
from spokenbench.core.audio.store import clips_for_gender_check
from spokenbench.core.foundation.errors import SpokenBenchError
from spokenbench.core.foundation.progress import Progress, no_progress
from spokenbench.core.store import Project

MALE_MAX_HZ = 145.0
FEMALE_MIN_HZ = 175.0
AMBIGUOUS = "ambiguous"
UNKNOWN = "unknown"  # too little voiced speech to measure
PITCH_CLASSIFIER = "pitch (median F0)"


def gender_of_f0(f0: float | None) -> str:
    """'male', 'female' or 'ambiguous' by the project's F0 bands; 'unknown' without an estimate."""
    if f0 is None:
        return UNKNOWN
    if f0 < MALE_MAX_HZ:
        return "male"
    if f0 > FEMALE_MIN_HZ:
        return "female"
    return AMBIGUOUS


@runtime_checkable
class GenderClassifier(Protocol):
    """A voice-gender classifier the user provides (wav2vec 2.0, ECAPA-TDNN, …)."""

    name: str

    def predict(self, samples: np.ndarray, rate: int) -> str:
        """'male' or 'female' for mono float32 samples (any other answer counts as neither)."""
        ...


def load_classifier(spec: str) -> GenderClassifier:
    """`package.module:name`, where name is a classifier object or a callable returning one (called without
    arguments). Import errors and objects without `name` / `predict` are refused with the reason."""
    module_name, _, attribute = spec.partition(":")
    if not module_name or not attribute:
        raise SpokenBenchError(f"--classifier {spec!r}: write it as package.module:factory")
    try:
        module = importlib.import_module(module_name)
    except ImportError as error:
        raise SpokenBenchError(f"--classifier {spec!r}: cannot import {module_name} ({error})") from None
    target = getattr(module, attribute, None)
    if target is None:
        raise SpokenBenchError(f"--classifier {spec!r}: {module_name} has no {attribute}")
    if isinstance(target, type) or (callable(target) and not isinstance(target, GenderClassifier)):
        try:
            classifier = target()
        except Exception as error:  # the user's code: any failure is reported as theirs
            raise SpokenBenchError(f"--classifier {spec!r}: creating the classifier failed ({error})") from None
    else:
        classifier = target
    if not isinstance(classifier, GenderClassifier):
        raise SpokenBenchError(
            f"--classifier {spec!r}: {attribute} is not a gender classifier (it needs a `name` and "
            "`predict(samples, rate)` returning 'male' or 'female')"
        )
    return classifier


@dataclass
class ClipGender:
    clip_id: int
    item: str | None  # the item's source id (None for an instruction token)
    part: str
    language: str
    accent: str | None
    backend: str
    voice: str
    intended: str | None  # the clip's speaker_gender: the voice's gender, or the one it was neutralized from
    neutralization: str | None
    f0: float | None = None
    predictions: dict[str, str] = field(default_factory=dict)  # classifier name -> label
    error: str | None = None  # the audio could not be read

    @property
    def expected(self) -> str | None:
        """What the pitch bands should find: the voice's gender, or 'ambiguous' for a neutralized clip."""
        return AMBIGUOUS if self.neutralization else self.intended

    @property
    def pitch_label(self) -> str:
        return self.predictions.get(PITCH_CLASSIFIER, UNKNOWN)

    @property
    def disagrees(self) -> bool:
        return self.error is not None or self.pitch_label != self.expected

    def as_dict(self) -> dict:
        return {
            "clip_id": self.clip_id,
            "item": self.item,
            "part": self.part,
            "language": self.language,
            "accent": self.accent,
            "backend": self.backend,
            "voice": self.voice,
            "intended_gender": self.intended,
            "neutralization": self.neutralization,
            "expected": self.expected,
            "median_f0_hz": None if self.f0 is None else round(self.f0, 1),
            "predictions": self.predictions,
            "error": self.error,
        }


@dataclass
class VoiceValidation:
    clips: list[ClipGender]
    classifiers: list[str]

    @property
    def disagreements(self) -> list[ClipGender]:
        return [clip for clip in self.clips if clip.disagrees]

    def accuracy_table(self, neutralized: bool) -> list[dict]:
        """The paper's Table 6 (plain voices) or Table 7 (neutralized voices): per classifier and ground truth
        (the intended gender; for a neutralized clip, the gender of the voice it was made from), the number of
        clips and the share the classifier put in that gender. Low accuracy is the aim in Table 7."""
        rows = []
        chosen = [c for c in self.clips if bool(c.neutralization) == neutralized and c.error is None]
        for classifier in self.classifiers:
            for truth in ("female", "male"):
                group = [c for c in chosen if c.intended == truth and classifier in c.predictions]
                hits = sum(1 for c in group if c.predictions[classifier] == truth)
                rows.append(
                    {
                        "ground_truth": f"{classifier}: {truth.capitalize()}",
                        "total_samples": len(group),
                        "accuracy_pct": round(100 * hits / len(group), 2) if group else None,
                    }
                )
        return rows

    def voice_summary(self) -> list[dict]:
        """Per voice: its gender, neutralization, clips, and the spread of the clips' median F0."""
        by_voice: dict[tuple, list[ClipGender]] = {}
        for clip in self.clips:
            by_voice.setdefault((clip.backend, clip.voice, clip.intended, clip.neutralization), []).append(clip)
        rows = []
        for (backend, voice, gender, neutralization), clips in sorted(by_voice.items(), key=str):
            f0s = [c.f0 for c in clips if c.f0 is not None]
            rows.append(
                {
                    "backend": backend,
                    "voice": voice,
                    "gender": gender,
                    "neutralization": neutralization or "",
                    "expected": clips[0].expected,
                    "clips": len(clips),
                    "f0_median_hz": round(statistics.median(f0s), 1) if f0s else None,
                    "f0_min_hz": round(min(f0s), 1) if f0s else None,
                    "f0_max_hz": round(max(f0s), 1) if f0s else None,
                    "disagreeing": sum(1 for c in clips if c.disagrees),
                }
            )
        return rows

    def as_dict(self) -> dict:
        return {
            "bands_hz": {"male_below": MALE_MAX_HZ, "female_above": FEMALE_MIN_HZ},
            "classifiers": self.classifiers,
            "clips": len(self.clips),
            "voices": self.voice_summary(),
            "table_6": self.accuracy_table(neutralized=False),
            "table_7": self.accuracy_table(neutralized=True),
            "disagreements": [clip.as_dict() for clip in self.disagreements],
        }


def check_samples(samples: np.ndarray, rate: int, classifiers: Iterable[GenderClassifier] = ()) -> dict[str, str]:
    """Every classifier's label for one signal, the pitch bands first (as 'pitch (median F0)')."""
    predictions = {PITCH_CLASSIFIER: gender_of_f0(median_f0(samples, rate))}
    for classifier in classifiers:
        predictions[classifier.name] = str(classifier.predict(samples, rate)).strip().lower()
    return predictions


def validate_voices(
    project: Project,
    classifiers: Iterable[GenderClassifier] = (),
    all_clips: bool = False,
    progress: Progress | None = None,
) -> VoiceValidation:
    """Check every gender-probe clip (every clip with `all_clips`) with the pitch bands and the classifiers."""
    progress = progress or no_progress()
    classifiers = list(classifiers)
    names = [PITCH_CLASSIFIER, *(c.name for c in classifiers)]
    if len(set(names)) != len(names):
        raise SpokenBenchError(f"two classifiers share a name: {', '.join(names)}")
    rows = clips_for_gender_check(project.conn, all_clips)
    checked = []
    for index, row in enumerate(rows):
        clip = ClipGender(
            clip_id=row["id"],
            item=row["source_id"],
            part=row["part"],
            language=row["language"],
            accent=row["accent"],
            backend=row["backend"],
            voice=row["voice"],
            intended=row["speaker_gender"],
            neutralization=row["neutralization"],
        )
        try:
            data = project.audio.read_bytes(row["sha256"], row["audio_format"])
            audio = decode_audio(data, f"clip {row['id']}")
        except (OSError, AudioError) as error:
            clip.error = str(error)
        else:
            clip.f0 = median_f0(audio.samples, audio.rate)
            clip.predictions[PITCH_CLASSIFIER] = gender_of_f0(clip.f0)
            for classifier in classifiers:
                try:
                    label = classifier.predict(audio.samples, audio.rate)
                except Exception as error:  # the user's model: name it and the clip rather than crash
                    raise SpokenBenchError(
                        f"classifier {classifier.name} failed on clip {clip.clip_id}: {error}"
                    ) from None
                clip.predictions[classifier.name] = str(label).strip().lower()
        checked.append(clip)
        progress.report(index + 1, len(rows), "checking voice gender")
    return VoiceValidation(checked, names)
