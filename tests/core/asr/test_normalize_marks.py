"""Screening in scripts with combining marks (normalizer version 2): the vowel signs and viramas of Devanagari,
Bengali, Tamil or Thai stay in their words — before, every word was split at them, as Whisper's
BasicTextNormalizer does (Manohar et al., EMNLP 2024) — and Arabic and Hebrew optional vowel marks, the tatweel
and other scripts' digits are folded, so a vowelled reference and a plain transcript of the same words agree."""

import jiwer
import pytest

from spokenbench.core.asr.normalize import normalize


@pytest.mark.parametrize(
    "text, language, words",
    [
        ("प्राचीन संस्कृतियों और जनजातियों", "hi", ("प्राचीन", "संस्कृतियों", "और", "जनजातियों")),
        ("আমি বাংলায় কথা বলি।", "bn", ("আমি", "বাংলায়", "কথা", "বলি")),
        ("தமிழ் மொழி", "ta", ("தமிழ்", "மொழி")),
        ("ما هي عاصمة فرنسا؟", "ar", ("ما", "هي", "عاصمة", "فرنسا")),
    ],
)
def test_a_word_with_vowel_signs_stays_one_word(text, language, words):
    assert normalize(text, language).words == words  # before: 'प', 'र', 'च', 'न' …


@pytest.mark.parametrize(
    "vowelled, plain, language",
    [
        ("مَا هِيَ عَاصِمَةُ فَرَنْسَا؟", "ما هي عاصمة فرنسا", "ar"),
        ("مـرحـبـا بكم", "مرحبا بكم", "ar"),  # tatweel
        ("שָׁלוֹם עוֹלָם", "שלום עולם", "he"),
        ("كم ١٢ × ١٢", "كم 12 × 12", "ar"),  # Arabic-Indic digits
        ("پایتخت ۱۳۹۹", "پایتخت 1399", "fa"),  # Persian digits
        ("कक्षा १२", "कक्षा 12", "hi"),  # Devanagari digits
        ("هٰذَا", "هذا", "ar"),  # the superscript alef
        ("١٢٫٥ و ١٬٠٠٠", "12.5 و 1,000", "ar"),  # Arabic's decimal and thousands separators
        ("İstanbul", "Istanbul", "en"),  # İ's lower case is i and a combining dot: the dot dropped
        ("İstanbul", "istanbul", "tr"),
        ("İstanbul", "Istanbul", "ko"),
    ],
)
def test_optional_marks_and_other_scripts_digits_make_no_difference(vowelled, plain, language):
    assert normalize(vowelled, language) == normalize(plain, language)


def test_a_hindi_transcript_with_one_wrong_word_has_one_word_error():
    reference = normalize("प्राचीन संस्कृतियों और जनजातियों", "hi").words
    transcript = normalize("प्राचीन संस्कृति और जनजातियों", "hi").words
    # before: 1 of 13 fragments, 0.08
    assert jiwer.wer(" ".join(reference), " ".join(transcript)) == pytest.approx(1 / 4)


def test_a_mark_without_a_letter_is_a_symbol():
    """NFKC makes a spacing acute (´) a space and a combining acute: that mark stands alone and is dropped."""
    assert normalize("it´s fine", "fr").words == ("it", "s", "fine")


def test_thai_is_scored_on_characters_with_its_vowel_marks():
    normalized = normalize("สวัสดีครับ", "th")
    assert normalized.characters == "สวัสดีครับ" and len(normalized.words) == 10  # before: the three marks gone
