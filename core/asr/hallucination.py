"""Likely ASR hallucinations: transcripts that say what the ASR model invented, not what the clip says.

Whisper-family models fill short or quiet clips with phrases learnt from subtitled video ("Thank you for watching.",
"See you next time.", "字幕由Amara.org社区提供", "시청해 주셔서 감사합니다"). On a one-word option clip such a
transcript has an error rate far above 0.6, yet it says nothing about the synthesized speech. Screening sets such
transcripts aside (core/asr/screening.py) and reports the clips none of whose transcripts is usable in a bucket of
their own, beside the WER intervals, so they are neither counted as TTS errors nor passed: they wait for a listen.

A transcript that differs from the reference is a likely hallucination when any of these holds:

- **stock phrase**: its normalized text contains one of the phrases below that the reference does not contain;
- **far longer**: it has at least LENGTH_RATIO times the reference's units and LENGTH_EXTRA_WORDS more words (WER
  languages) or LENGTH_EXTRA_CHARACTERS more characters (CER languages) — on a one-word clip, four words or more;
- **no speech**: the model's own no-speech probability (Whisper's, stored with local transcripts) is at least
  NO_SPEECH_THRESHOLD, Whisper's own threshold for "this window holds no speech".

A transcript equal to the reference after normalization is never flagged.
"""

from __future__ import annotations

from dataclasses import dataclass

from spokenbench.core.asr.normalize import NormalizedText, base_language, normalize

LENGTH_RATIO = 3
LENGTH_EXTRA_WORDS = 3
LENGTH_EXTRA_CHARACTERS = 6
NO_SPEECH_THRESHOLD = 0.6

# Phrases Whisper-family models are known to produce on silence, noise or very short speech (the outros and
# subtitle credits of their training video), per language, as written; they are normalized like transcripts.
STOCK_PHRASES = {
    "en": (
        "thank you",
        "thank you very much",
        "thank you for watching",
        "thanks for watching",
        "thank you so much for watching",
        "thank you very much for watching",
        "see you next time",
        "see you next week",
        "see you again",
        "see you in the next video",
        "see you in the next one",
        "i'll see you next time",
        "i'll see you in the next video",
        "please subscribe",
        "subscribe to my channel",
        "don't forget to like and subscribe",
        "like and subscribe",
        "thanks for listening",
        "thank you for listening",
        "subtitles by the amara.org community",
        "transcription by castingwords",
    ),
    "zh": (
        "请不吝点赞 订阅 转发 打赏支持明镜与点点栏目",
        "字幕由amara.org社区提供",
        "小编字幕由amara.org社区提供",
        "谢谢观看",
        "感谢观看",
        "谢谢大家观看",
        "请订阅我的频道",
        "欢迎订阅",
        "中文字幕志愿者",
    ),
    "ko": (
        "시청해주셔서 감사합니다",
        "시청해 주셔서 감사합니다",
        "구독과 좋아요 부탁드립니다",
        "구독과 좋아요",
        "다음 영상에서 만나요",
        "한국어 자막",
    ),
}


@dataclass(frozen=True)
class Hallucination:
    reason: str  # "stock phrase", "far longer than the reference", "no speech"
    detail: str  # which phrase, how long, what probability

    def as_text(self) -> str:
        return f"{self.reason} ({self.detail})"


_PHRASES: dict[str, tuple[tuple[NormalizedText, ...], frozenset[str]]] = {}


def _phrases(language: str) -> tuple[tuple[NormalizedText, ...], frozenset[str]]:
    """The language's stock phrases normalized, and their first units (a transcript without any has none)."""
    code = base_language(language)
    found = _PHRASES.get(code)
    if found is None:
        phrases = tuple(normalize(p, code) for p in STOCK_PHRASES.get(code, ()))
        starts = frozenset(p.words[0] for p in phrases if p.words) | frozenset(
            p.characters[0] for p in phrases if p.characters
        )
        found = _PHRASES[code] = (phrases, starts)
    return found


def _contains(haystack: NormalizedText, needle: NormalizedText, by_characters: bool) -> bool:
    if by_characters:
        return bool(needle.characters) and needle.characters in haystack.characters
    n, words = len(needle.words), haystack.words
    return n > 0 and any(words[i : i + n] == needle.words for i in range(len(words) - n + 1))


def detect_hallucination(
    reference: NormalizedText,
    transcript: NormalizedText,
    language: str,
    no_speech_prob: float | None = None,
    metric: str = "wer",
) -> Hallucination | None:
    """Why `transcript` (normalized) is likely a hallucination rather than a hearing of `reference`, or None."""
    by_characters = metric == "cer"
    ref = reference.characters if by_characters else reference.words
    hyp = transcript.characters if by_characters else transcript.words
    if ref == hyp or not hyp:
        return None  # a perfect transcript is a hearing; an empty one is a deletion, counted as such
    phrases, starts = _phrases(language)
    if not starts.isdisjoint(transcript.characters if by_characters else transcript.words):
        for phrase in phrases:
            if _contains(transcript, phrase, by_characters) and not _contains(reference, phrase, by_characters):
                return Hallucination("stock phrase", phrase.characters if by_characters else " ".join(phrase.words))
    extra = LENGTH_EXTRA_CHARACTERS if by_characters else LENGTH_EXTRA_WORDS
    if ref and len(hyp) >= LENGTH_RATIO * len(ref) and len(hyp) - len(ref) >= extra:
        unit = "characters" if by_characters else "words"
        return Hallucination("far longer than the reference", f"{len(hyp)} {unit} for {len(ref)}")
    if no_speech_prob is not None and no_speech_prob >= NO_SPEECH_THRESHOLD:
        return Hallucination("no speech", f"no-speech probability {no_speech_prob:.2f}")
    return None


def is_likely_hallucination(
    reference: str, transcript: str, language: str, no_speech_prob: float | None = None, metric: str | None = None
) -> Hallucination | None:
    """One pair of raw texts, for people and tests: normalized for `language`, then detect_hallucination."""
    from spokenbench.core.asr.normalize import primary_metric

    return detect_hallucination(
        normalize(reference, language),
        normalize(transcript, language),
        language,
        no_speech_prob,
        metric or primary_metric(language),
    )
