"""Error rates of transcripts against the text a clip was synthesized from, computed by jiwer on the
language-normalized texts, and the BiasInEar WER intervals. Rates are kept as (errors, reference units) so a
corpus rate is total edits over total units, and bins are decided in exact integer arithmetic."""

from __future__ import annotations

from dataclasses import dataclass

import jiwer

from spokenbench.core.asr.normalize import (
    BOTH_METRIC_LANGUAGES,
    NormalizedText,
    base_language,
    normalize,
    primary_metric,
)

METRICS = ("wer", "cer")
# The BiasInEar intervals (Section 2.2, Table 2): 0, (0, 0.2], (0.2, 0.6], > 0.6.
WER_BINS = ("0", "(0, 0.2]", "(0.2, 0.6]", ">0.6")
NONZERO_BINS = (1, 2, 3)
# The texts reach jiwer already normalized (single spaces, nothing to strip), so only its tokenizers are needed;
# its default clean-up steps cost more than the alignment itself.
_WORDS = jiwer.ReduceToListOfListOfWords()
_CHARACTERS = jiwer.ReduceToListOfListOfChars()


@dataclass(frozen=True)
class ErrorCount:
    errors: int  # substitutions + deletions + insertions
    units: int  # words (WER) or characters (CER) in the reference

    @property
    def rate(self) -> float:
        return self.errors / self.units if self.units else float("inf")


def wer_bin(errors: int, units: int) -> int:
    """0 for a perfect transcript, 1 for (0, 0.2], 2 for (0.2, 0.6], 3 above 0.6."""
    if errors == 0:
        return 0
    if 5 * errors <= units:
        return 1
    if 5 * errors <= 3 * units:
        return 2
    return 3


def bin_label(index: int | None) -> str:
    return "unscreened" if index is None else WER_BINS[index]


def count_errors(reference: NormalizedText, hypothesis: NormalizedText, metric: str) -> ErrorCount:
    """Edit operations between two normalized texts, counted by jiwer (words for WER, characters for CER)."""
    if metric == "wer":
        if not reference.words:
            return ErrorCount(len(hypothesis.words), 0)
        if not hypothesis.words:
            return ErrorCount(len(reference.words), len(reference.words))
        out = jiwer.process_words(" ".join(reference.words), " ".join(hypothesis.words), _WORDS, _WORDS)
    elif metric == "cer":
        if not reference.characters:
            return ErrorCount(len(hypothesis.characters), 0)
        if not hypothesis.characters:
            return ErrorCount(len(reference.characters), len(reference.characters))
        out = jiwer.process_characters(reference.characters, hypothesis.characters, _CHARACTERS, _CHARACTERS)
    else:
        raise ValueError(f"unknown metric {metric!r}; use one of {METRICS}")
    return ErrorCount(out.substitutions + out.deletions + out.insertions, out.hits + out.substitutions + out.deletions)


def error_rate(reference: str, hypothesis: str, language: str, metric: str | None = None) -> float:
    """One pair, for people and tests: the language's normalization, then WER or CER."""
    metric = metric or primary_metric(language)
    return count_errors(normalize(reference, language), normalize(hypothesis, language), metric).rate


@dataclass(frozen=True)
class ClipScore:
    """A clip's screening result: the best (lowest) error over its transcripts."""

    metric: str
    errors: int
    units: int
    best_asr: str
    asr_count: int
    cer: float | None = None  # for languages that report both (Korean): CER of the same best transcript
    per_asr: tuple[tuple[str, float], ...] = ()

    @property
    def rate(self) -> float:
        return self.errors / self.units if self.units else float("inf")

    @property
    def bin(self) -> int:
        return wer_bin(self.errors, self.units)


class Scorer:
    """Scores many (clip text, transcript) pairs, normalizing each distinct text once and counting each distinct
    normalized pair once: the same sentence is synthesized in many voices and often transcribed identically."""

    def __init__(self, metric_overrides: dict[str, str] | None = None):
        self.metric_overrides = {base_language(k): v for k, v in (metric_overrides or {}).items()}
        for language, metric in self.metric_overrides.items():
            if metric not in METRICS:
                raise ValueError(f"metric for {language} must be one of {METRICS}, not {metric!r}")
        self._normalized: dict[tuple[str, str], NormalizedText] = {}
        self._counts: dict[tuple[str, NormalizedText, NormalizedText], ErrorCount] = {}

    def metric_for(self, language: str) -> str:
        code = base_language(language)
        return self.metric_overrides.get(code) or primary_metric(code)

    def normalized(self, text: str, language: str) -> NormalizedText:
        key = (language, text)
        found = self._normalized.get(key)
        if found is None:
            found = self._normalized[key] = normalize(text, language)
        return found

    def count(self, reference: NormalizedText, hypothesis: NormalizedText, metric: str) -> ErrorCount:
        key = (metric, reference, hypothesis)
        found = self._counts.get(key)
        if found is None:
            found = self._counts[key] = count_errors(reference, hypothesis, metric)
        return found

    def score_clip(self, language: str, reference: str, transcripts: list[tuple[str, str]]) -> ClipScore | None:
        """The minimum error over `transcripts` [(asr name, text)], or None when the reference normalizes to
        nothing (a clip of pure punctuation cannot be screened)."""
        metric = self.metric_for(language)
        ref = self.normalized(reference, language)
        if not (ref.words if metric == "wer" else ref.characters):
            return None
        scored = []
        for asr, text in transcripts:
            hyp = self.normalized(text, language)
            scored.append((self.count(ref, hyp, metric), asr, hyp))
        best, best_asr, _ = min(scored, key=lambda entry: (entry[0].errors, entry[1]))
        cer = None
        if base_language(language) in BOTH_METRIC_LANGUAGES and ref.characters:
            cer = min(self.count(ref, hyp, "cer").rate for _, _, hyp in scored)  # the minimum again, by characters
        return ClipScore(
            metric,
            best.errors,
            best.units,
            best_asr,
            len(scored),
            cer,
            tuple((asr, count.rate) for count, asr, _ in scored),
        )
