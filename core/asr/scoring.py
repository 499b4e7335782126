"""Error rates of transcripts against the text a clip was synthesized from, counted on the language-normalized
texts, and the BiasInEar WER intervals. Rates are kept as (errors, reference units) so a
corpus rate is total edits over total units, and bins are decided in exact integer arithmetic."""

from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple

from rapidfuzz.distance import Levenshtein

from spokenbench.core.asr.hallucination import Hallucination, detect_hallucination
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
# Screening needs edit counts only, not jiwer's alignment: substitutions + deletions + insertions of an optimal
# alignment is the Levenshtein distance (unit costs), and jiwer's hits + substitutions + deletions is the length of
# the reference. rapidfuzz computes that distance on token lists directly (jiwer itself calls it underneath, then
# builds the alignment); tests/core/qc/test_screening_counts.py checks the counts equal jiwer's.


_new_tuple = tuple.__new__  # NamedTupleClass(*fields) as _new_tuple(NamedTupleClass, fields): half the time


class ErrorCount(NamedTuple):
    """A named tuple: screening builds one per distinct pair, and a frozen dataclass takes five times as long."""

    errors: int  # substitutions + deletions + insertions
    units: int  # words (WER) or characters (CER) in the reference

    @property
    def rate(self) -> float:
        return self.errors / self.units if self.units else float("inf")


def reports_both(language: str) -> bool:
    """Whether a clip of `language` also reports the CER of its best transcript (Korean: WER on spaces and CER)."""
    return base_language(language) in BOTH_METRIC_LANGUAGES


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
    """Edit operations between two normalized texts — the Levenshtein distance over words (WER) or characters
    (CER), the same count as jiwer's substitutions + deletions + insertions — and the reference's length."""
    if metric == "wer":
        ref, hyp = reference.words, hypothesis.words
    elif metric == "cer":
        ref, hyp = reference.characters, hypothesis.characters
    else:
        raise ValueError(f"unknown metric {metric!r}; use one of {METRICS}")
    if not ref:
        return ErrorCount(len(hyp), 0)
    if not hyp:
        return ErrorCount(len(ref), len(ref))
    # ErrorCount(...) without its Python-level __new__: screening counts one per distinct pair
    if ref == hyp:
        return _new_tuple(ErrorCount, (0, len(ref)))
    return _new_tuple(ErrorCount, (Levenshtein.distance(ref, hyp), len(ref)))


def error_rate(reference: str, hypothesis: str, language: str, metric: str | None = None) -> float:
    """One pair, for people and tests: the language's normalization, then WER or CER."""
    metric = metric or primary_metric(language)
    return count_errors(normalize(reference, language), normalize(hypothesis, language), metric).rate


class ClipScore(NamedTuple):
    """A clip's screening result: the best (lowest) error over its transcripts. A named tuple, immutable as the
    clips that share it need, and built five times faster than a frozen dataclass."""

    metric: str
    errors: int
    units: int
    best_asr: str
    asr_count: int
    cer: float | None = None  # for languages that report both (Korean): CER of the same best transcript
    per_asr: tuple[tuple[str, float], ...] = ()  # by score_clip; empty when screened from stored counts
    # transcripts set aside as likely hallucinations (asr, why); the minimum is over the others
    hallucinations: tuple[tuple[str, str], ...] = ()

    @property
    def likely_hallucination(self) -> bool:
        """Every transcript of the clip is a likely hallucination: the score (then over all of them) says nothing
        about the speech, so Table 2 reports the clip apart."""
        return bool(self.hallucinations) and len(self.hallucinations) == self.asr_count

    @property
    def rate(self) -> float:
        return self.errors / self.units if self.units else float("inf")

    @property
    def bin(self) -> int:
        return wer_bin(self.errors, self.units)


class Scorer:
    """Scores many (clip text, transcript) pairs, normalizing each distinct text once and counting each distinct
    pair once: the same sentence is synthesized in many voices and often transcribed identically. Lookups are
    keyed by the texts as stored (their hashes are cached by Python), so a repeated pair costs two dict lookups."""

    def __init__(self, metric_overrides: dict[str, str] | None = None):
        self.metric_overrides = {base_language(k): v for k, v in (metric_overrides or {}).items()}
        for language, metric in self.metric_overrides.items():
            if metric not in METRICS:
                raise ValueError(f"metric for {language} must be one of {METRICS}, not {metric!r}")
        self._normalized: dict[str, dict[str, NormalizedText]] = {}  # language → text → normalized
        self._counts: dict[tuple[str, NormalizedText, NormalizedText], ErrorCount] = {}
        # (metric, language) → (reference, transcript) texts → count: short keys, hashed from the texts' cached hashes
        self._pair_counts: dict[tuple[str, str], dict[tuple[str, str], ErrorCount]] = {}
        self._languages: dict[str, tuple[str, bool]] = {}  # language → (metric, also CER)
        self._per_language: dict[str, tuple[str, bool, dict, dict]] = {}  # see _language_state
        self._hallucinations: dict[tuple, Hallucination | None] = {}

    def metric_for(self, language: str) -> str:
        code = base_language(language)
        return self.metric_overrides.get(code) or primary_metric(code)

    def _language(self, language: str) -> tuple[str, bool]:
        found = self._languages.get(language)
        if found is None:
            found = self._languages[language] = (
                self.metric_for(language),
                reports_both(language),
            )
        return found

    def normalized(self, text: str, language: str) -> NormalizedText:
        texts = self._normalized_in(language)
        found = texts.get(text)
        if found is None:
            found = texts[text] = normalize(text, language)
        return found

    def _normalized_in(self, language: str) -> dict[str, NormalizedText]:
        found = self._normalized.get(language)
        if found is None:
            found = self._normalized[language] = {}
        return found

    def count(self, reference: NormalizedText, hypothesis: NormalizedText, metric: str) -> ErrorCount:
        key = (metric, reference, hypothesis)
        found = self._counts.get(key)
        if found is None:
            found = self._counts[key] = count_errors(reference, hypothesis, metric)
        return found

    def _language_state(self, language: str) -> tuple[str, bool, dict, dict]:
        """(metric, also CER, normalized texts, counts by pair) of a language: score_clip's one lookup."""
        metric, both = self._language(language)
        found = self._per_language[language] = (
            metric,
            both,
            self._normalized_in(language),
            self._counts_for(metric, language),
        )
        return found

    def _counts_for(self, metric: str, language: str) -> dict[tuple[str, str], ErrorCount]:
        found = self._pair_counts.get((metric, language))
        if found is None:
            found = self._pair_counts[(metric, language)] = {}
        return found

    def _count_texts(self, metric: str, language: str, reference: str, ref: NormalizedText, text: str) -> ErrorCount:
        counts = self._counts_for(metric, language)
        found = counts.get((reference, text))
        if found is None:
            found = counts[(reference, text)] = count_errors(ref, self.normalized(text, language), metric)
        return found

    def transcript_counts(self, transcripts: Iterable[tuple]) -> list[tuple]:
        """Each (…, language, reference, text) with (word errors, reference words, character errors, reference
        characters) appended: what is stored with a transcript (core/asr/store.py), both metrics since which one
        bins a language is a screening option. Counts already made while scoring are reused."""
        found = []
        state: dict[str, tuple[dict, dict, dict]] = {}
        for entry in transcripts:
            language, reference, text = entry[-3:]
            known = state.get(language)
            if known is None:
                known = state[language] = (
                    self._normalized_in(language),
                    self._counts_for("wer", language),
                    self._counts_for("cer", language),
                )
            normalized, word_counts, character_counts = known
            key = (reference, text)
            words = word_counts.get(key)
            characters = character_counts.get(key)
            if words is None or characters is None:
                ref = normalized.get(reference) or self.normalized(reference, language)
                heard = normalized.get(text) or self.normalized(text, language)
                if words is None:
                    words = word_counts[key] = count_errors(ref, heard, "wer")
                if characters is None:
                    characters = character_counts[key] = count_errors(ref, heard, "cer")
            found.append((*entry, *words, *characters))
        return found

    def hallucination(
        self, language: str, reference: str, ref: NormalizedText, text: str, no_speech: float | None, metric: str
    ) -> Hallucination | None:
        key = (language, reference, text, no_speech)
        if key not in self._hallucinations:
            self._hallucinations[key] = detect_hallucination(
                ref, self.normalized(text, language), language, no_speech, metric
            )
        return self._hallucinations[key]

    def score_clip(
        self,
        language: str,
        reference: str,
        transcripts: list[tuple[str, str]],
        check_hallucinations: bool = False,
        no_speech: dict[str, float] | None = None,
    ) -> ClipScore | None:
        """The minimum error over `transcripts` [(asr name, text)], or None when the reference normalizes to
        nothing (a clip of pure punctuation cannot be screened). With `check_hallucinations`, see
        `set_aside_hallucinations`."""
        metric, both, normalized, counts = self._per_language.get(language) or self._language_state(language)
        ref = normalized.get(reference) or self.normalized(reference, language)
        if not (ref.words if metric == "wer" else ref.characters):
            return None
        if not transcripts:
            raise ValueError("a clip needs at least one transcript to be scored")
        best_errors = best_asr = None
        per_asr = []
        for asr, text in transcripts:
            count = counts.get((reference, text))
            if count is None:
                heard = normalized.get(text) or self.normalized(text, language)
                count = counts[(reference, text)] = count_errors(ref, heard, metric)
            errors, units = count  # units: the reference's length, the same for every transcript
            per_asr.append((asr, errors / units))  # units > 0: the reference is not empty
            if best_errors is None or errors < best_errors or (errors == best_errors and asr < best_asr):
                best_errors, best_asr = errors, asr  # the lowest, the first ASR system by name among equals
        cer = None
        if both and ref.characters:  # the minimum again, by characters
            character_counts = self._counts_for("cer", language)
            for _, text in transcripts:
                character_errors, characters = character_counts.get((reference, text)) or self._count_texts(
                    "cer", language, reference, ref, text
                )
                if cer is None or character_errors / characters < cer:
                    cer = character_errors / characters
        # ClipScore(...) without its Python-level __new__: one per distinct clip
        score = _new_tuple(ClipScore, (metric, best_errors, units, best_asr, len(per_asr), cer, tuple(per_asr), ()))
        if check_hallucinations:
            return self.set_aside_hallucinations(score, language, reference, transcripts, no_speech)
        return score

    def set_aside_hallucinations(
        self,
        score: ClipScore,
        language: str,
        reference: str,
        transcripts: list[tuple[str, str]],
        no_speech: dict[str, float] | None = None,
    ) -> ClipScore:
        """`score` (from score_clip) with the transcripts that are likely hallucinations (core/asr/hallucination.py;
        `no_speech` gives an ASR system's no-speech probability) set aside: the minimum over the others, or over
        all of them when none is left, the clip then being a `likely_hallucination`. Only a clip whose best
        transcript is above 0.6 is checked — only there can a hallucination put a clip among the TTS errors, and
        it keeps screening cheap; a clip with no flagged transcript keeps its score exactly."""
        if score.bin < len(WER_BINS) - 1:
            return score
        metric, both = self._language(language)
        ref = self.normalized(reference, language)
        flagged, usable = [], []
        for asr, text in transcripts:
            count = self._count_texts(metric, language, reference, ref, text)
            found = (
                self.hallucination(language, reference, ref, text, (no_speech or {}).get(asr), metric)
                if count.errors
                else None
            )
            if found is None:
                usable.append((asr, text, count))
            else:
                flagged.append((asr, found.as_text()))
        if not flagged:
            return score
        if not usable:
            return score._replace(hallucinations=tuple(flagged))
        best_asr, _text, best = min(usable, key=lambda entry: (entry[2].errors, entry[0]))
        cer = score.cer
        if both and ref.characters:
            cer = min(self._count_texts("cer", language, reference, ref, text).rate for _, text, _ in usable)
        return score._replace(errors=best.errors, best_asr=best_asr, cer=cer, hallucinations=tuple(flagged))
