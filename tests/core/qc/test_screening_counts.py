"""Screening counts edits with rapidfuzz's Levenshtein distance instead of jiwer's full alignment (issue 13,
item 7): the counts, and so every WER, CER and interval, must equal jiwer's — on random token lists, on
character-level CJK text and on texts through each language's normalization."""

import random

import jiwer
import pytest

from spokenbench.core.asr.normalize import NormalizedText, normalize
from spokenbench.core.asr.scoring import ErrorCount, Scorer, count_errors, error_rate

_WORDS = jiwer.ReduceToListOfListOfWords()
_CHARACTERS = jiwer.ReduceToListOfListOfChars()

VOCABULARY = "the a of which gas plants take in oxygen carbon light water heat acid mass".split()
HAN = "的一是在不了有和人这中大为上个国我以要他时来用们生到作地于出就分对成会可主发年动同工也能下过子说产种面"
HANGUL = [chr(c) for c in range(0xAC00, 0xAC00 + 400, 7)]


def jiwer_count(reference: NormalizedText, hypothesis: NormalizedText, metric: str) -> ErrorCount:
    """The implementation screening used before: jiwer's alignment, its operations counted."""
    if metric == "wer":
        if not reference.words:
            return ErrorCount(len(hypothesis.words), 0)
        if not hypothesis.words:
            return ErrorCount(len(reference.words), len(reference.words))
        out = jiwer.process_words(" ".join(reference.words), " ".join(hypothesis.words), _WORDS, _WORDS)
    else:
        if not reference.characters:
            return ErrorCount(len(hypothesis.characters), 0)
        if not hypothesis.characters:
            return ErrorCount(len(reference.characters), len(reference.characters))
        out = jiwer.process_characters(reference.characters, hypothesis.characters, _CHARACTERS, _CHARACTERS)
    return ErrorCount(out.substitutions + out.deletions + out.insertions, out.hits + out.substitutions + out.deletions)


def text(words) -> NormalizedText:
    words = tuple(words)
    return NormalizedText(words, "".join(words))


def edited(tokens: list[str], alphabet, rng: random.Random) -> list[str]:
    """A copy with a few random substitutions, deletions and insertions (sometimes none, sometimes many)."""
    out = list(tokens)
    for _ in range(rng.choice([0, 0, 1, 2, 3, rng.randint(4, 12)])):
        operation = rng.random()
        if operation < 0.4 and out:
            out[rng.randrange(len(out))] = rng.choice(alphabet)
        elif operation < 0.7 and out:
            del out[rng.randrange(len(out))]
        else:
            out.insert(rng.randint(0, len(out)), rng.choice(alphabet))
    return out


@pytest.mark.parametrize("seed", range(4))
def test_word_counts_equal_jiwers_on_random_token_lists(seed):
    rng = random.Random(seed)
    for _ in range(1500):
        reference = [rng.choice(VOCABULARY) for _ in range(rng.choice([0, 1, 2, rng.randint(3, 40)]))]
        hypothesis = (
            edited(reference, VOCABULARY, rng)
            if rng.random() < 0.8
            else [rng.choice(VOCABULARY) for _ in range(rng.randint(0, 30))]
        )
        ref, hyp = text(reference), text(hypothesis)
        assert count_errors(ref, hyp, "wer") == jiwer_count(ref, hyp, "wer"), (reference, hypothesis)


@pytest.mark.parametrize("alphabet", [HAN, HANGUL, "abcdefgh"], ids=["han", "hangul", "latin"])
def test_character_counts_equal_jiwers_on_random_text(alphabet):
    rng = random.Random(7)
    alphabet = list(alphabet)
    for _ in range(3000):
        reference = [rng.choice(alphabet) for _ in range(rng.choice([0, 1, 2, rng.randint(3, 60)]))]
        hypothesis = (
            edited(reference, alphabet, rng)
            if rng.random() < 0.8
            else [rng.choice(alphabet) for _ in range(rng.randint(0, 9))]
        )
        # one "word" per character run, as normalization would leave Chinese; CER ignores the word split
        ref, hyp = text(["".join(reference)] if reference else []), text(["".join(hypothesis)] if hypothesis else [])
        assert count_errors(ref, hyp, "cer") == jiwer_count(ref, hyp, "cer"), (reference, hypothesis)


@pytest.mark.slow
def test_normalized_sentences_score_as_with_jiwer_in_every_language():
    """Real-style sentences through the language's normalization; WER for English and Korean, CER for Chinese
    and Korean, and the rates error_rate reports (the public one-pair function) match jiwer's counts."""
    rng = random.Random(11)
    cases = {
        "en": ("Which gas do plants take in during photosynthesis, 2 or 3 of them?", VOCABULARY),
        "zh": ("植物在光合作用中吸收哪种气体？大约25%的人这样认为。", list(HAN)),
        "ko": ("식물은 광합성 동안 어떤 기체를 흡수합니까? 약 3.5 퍼센트", HANGUL),
    }
    for language, (sentence, alphabet) in cases.items():
        reference = normalize(sentence, language)
        for _ in range(400):
            tokens = list(reference.words) if language != "zh" else list(reference.characters)
            changed = edited(tokens, alphabet, rng)
            hypothesis = normalize((" " if language != "zh" else "").join(changed), language)
            for metric in ("wer", "cer"):
                expected = jiwer_count(reference, hypothesis, metric)
                assert count_errors(reference, hypothesis, metric) == expected
                assert error_rate(sentence, " ".join(changed), language, metric) == pytest.approx(
                    jiwer_count(reference, normalize(" ".join(changed), language), metric).rate, abs=0
                )


def test_edge_cases_and_clip_scores():
    empty, one = text([]), text(["a"])
    for metric in ("wer", "cer"):
        for ref, hyp in [(empty, empty), (empty, one), (one, empty), (one, one), (text("ab"), text("ba"))]:
            assert count_errors(ref, hyp, metric) == jiwer_count(ref, hyp, metric)
    with pytest.raises(ValueError, match="unknown metric"):
        count_errors(one, one, "bleu")
    score = Scorer().score_clip(
        "ko", "식물은 어떤 기체를 흡수합니까", [("a", "식물은 어떤 기체 흡수합니까"), ("b", "식물")]
    )
    reference = normalize("식물은 어떤 기체를 흡수합니까", "ko")
    best = jiwer_count(reference, normalize("식물은 어떤 기체 흡수합니까", "ko"), "wer")
    assert (score.errors, score.units, score.best_asr) == (best.errors, best.units, "a")
    assert score.cer == min(
        jiwer_count(reference, normalize(t, "ko"), "cer").rate for t in ("식물은 어떤 기체 흡수합니까", "식물")
    )
