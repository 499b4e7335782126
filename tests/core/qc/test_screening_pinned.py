"""Screening's results on a fixed corpus are pinned: the digests below were computed with the code before issue 28
(normalizing every text through `normalize`, scoring clip by clip), so the faster normalizers and the batched
scoring must give the same normalized texts, the same counts, bins, best ASR systems and stored rows."""

import hashlib
import json
import random

import pytest

from spokenbench.core.asr.normalize import normalize
from spokenbench.core.asr.screening import screen_project, stored_table2
from spokenbench.core.store.database import utc_now

EN_WORDS = (
    "the which of is what a an acid mass molar Louis Henry Elizabeth holiday november gas plants take in cell "
    "energy light chemical process called water heated degrees celsius and rise speed ball dropped rest seconds"
).split()
EN_NUMBERS = [
    "98",
    "9.8",
    "4th",
    "21st",
    "25%",
    "$80",
    "-5",
    "1,200",
    "XIV",
    "II",
    "the 14th",
    "the Eighth",
    "C",
    "I",
    "one hundred and five",
    "3.14159",
    "2000",
    "−7",
    "well-known",
    "it's",
    "1682",
    "V",
    "MD",
    "12.5%",
    "£3",
]
HAN = "的一是在不了有和人这中大为上个国我以要他时来用们生到作地于出就分对成会可两路易年米点"
ZH_EXTRAS = ["1682年", "25%", "9.8", "XIV", "V", "X射线", "-3", "两个", "10005", "，", "。", "2,000"]
HANGUL = [chr(c) for c in range(0xAC00, 0xAC00 + 600, 7)]
KO_EXTRAS = ["3.5", "25%", "-4", "1,000", "II세", "V세", "엘리자베스", "XIV", "!", "?"]
OTHER = {"fr": "le la de et un une est à 12 élève Été 3,5 L'eau".split(), "ja": list("日本語のテキスト12。、")}


def sentence(language: str, rng: random.Random) -> str:
    if language == "en":
        words = [rng.choice(EN_WORDS) for _ in range(rng.randint(3, 12))]
        for _ in range(rng.randint(0, 3)):
            words.insert(rng.randrange(len(words) + 1), rng.choice(EN_NUMBERS))
        text = " ".join(words)
        return text[:1].upper() + text[1:] + rng.choice("?.!")
    if language == "zh":
        text = "".join(rng.choice(HAN) for _ in range(rng.randint(4, 20)))
        for _ in range(rng.randint(0, 2)):
            at = rng.randrange(len(text) + 1)
            text = text[:at] + rng.choice(ZH_EXTRAS) + text[at:]
        return text + "？"
    if language == "ko":
        words = ["".join(rng.choice(HANGUL) for _ in range(rng.randint(1, 4))) for _ in range(rng.randint(2, 8))]
        for _ in range(rng.randint(0, 2)):
            words.insert(rng.randrange(len(words) + 1), rng.choice(KO_EXTRAS))
        return " ".join(words) + "?"
    return " ".join(rng.choice(OTHER[language]) for _ in range(rng.randint(2, 8)))


def heard(text: str, language: str, rng: random.Random) -> str:
    """A transcript: exact, case or punctuation changed, a few tokens replaced, repeated (a hallucination), empty."""
    roll = rng.random()
    if roll < 0.4:
        return text
    if roll < 0.6:
        return text.lower().rstrip("?？.!")
    if roll < 0.65:
        return ""
    if roll < 0.7:
        return " ".join([text.split()[0] if text.split() else text] * 12)
    tokens = text.split() if language not in ("zh", "ja") else list(text)
    for _ in range(rng.randint(1, 6)):
        if tokens:
            source = {"en": EN_WORDS + EN_NUMBERS, "zh": list(HAN) + ZH_EXTRAS, "ko": HANGUL + KO_EXTRAS}
            tokens[rng.randrange(len(tokens))] = rng.choice(source.get(language, OTHER.get(language, ["x"])))
    return ("" if language in ("zh", "ja") else " ").join(tokens)


LANGUAGES = ("en", "zh-CN", "ko", "fr", "ja", "en-GB")


def corpus(seed: int = 28):
    rng = random.Random(seed)
    texts = {(language, n): sentence(language.split("-")[0], rng) for language in LANGUAGES for n in range(60)}
    clips = []
    for clip_id in range(1, 1501):
        language = LANGUAGES[clip_id % len(LANGUAGES)]
        reference = texts[(language, rng.randrange(60))]
        if clip_id % 97 == 0:
            reference = "?!"  # normalizes to nothing: unscorable
        asr_count = rng.choice((1, 2, 2, 3))
        base = language.split("-")[0]
        clips.append((clip_id, language, reference, [heard(reference, base, rng) for _ in range(asr_count)]))
    return clips


def digest(value) -> str:
    return hashlib.sha256(json.dumps(value, ensure_ascii=False, sort_keys=True).encode()).hexdigest()


@pytest.mark.slow
def test_normalized_texts_are_unchanged():
    normalized = [
        [language, text, list(n.words), n.characters]
        for _, language, reference, transcripts in corpus()
        for text in (reference, *transcripts)
        for n in [normalize(text, language)]
    ]
    assert digest(normalized) == PINNED_NORMALIZED


def insert_clip(conn, clip_id: int, language: str, reference: str, now: str) -> None:
    """A corpus clip (and its item) as synthesis leaves it."""
    item = conn.execute(
        "INSERT INTO items(source, source_id, language, subject, question, answer, created_at) "
        "VALUES ('pin', ?, ?, 's', 'q', 'A', ?)",
        (f"p{clip_id}", language, now),
    ).lastrowid
    key = hashlib.sha256(str(clip_id).encode()).hexdigest()
    conn.execute(
        "INSERT INTO clips(id, item_id, part, text, language, accent, voice, backend, cache_key, sha256, "
        "audio_format, status, created_at) VALUES (?, ?, 'question', ?, ?, 'a', 'v', 'pin', ?, ?, 'flac', 'ok', ?)",
        (clip_id, item, reference, language, key, key, now),
    )


@pytest.mark.slow
def test_stored_screening_is_unchanged(project):
    now = utc_now()
    with project.transaction() as conn:
        for clip_id, language, reference, transcripts in corpus():
            insert_clip(conn, clip_id, language, reference, now)
            conn.executemany(
                "INSERT INTO transcripts(clip_id, asr, text, created_at) VALUES (?, ?, ?, ?)",
                [(clip_id, f"asr-{'abc'[i]}", text, now) for i, text in enumerate(transcripts)],
            )
    result = screen_project(project)
    rows = project.conn.execute(
        "SELECT clip_id, metric, errors, reference_units, error_rate, wer_bin, best_asr, asr_count, cer "
        "FROM clip_screening ORDER BY clip_id"
    ).fetchall()
    assert len(rows) > 1000
    assert digest([list(row) for row in rows]) == PINNED_ROWS
    pinned = [result.summary(), result.table2(), stored_table2(project.conn), result.hallucinated, result.unscorable]
    assert digest(json.loads(json.dumps(pinned))) == PINNED_RESULT


PINNED_NORMALIZED = "920d1bc20f8cf63b6fb47c990278dc02117dc1962ab621f6353278aa344fce1c"
PINNED_ROWS = "1f7ebe1a445b38e180426061a362f88968f353bae19d506200c8db6a962775b7"
PINNED_RESULT = "caf5b312f9b44c94be1103b7c035b78998142ab4d8279e12c3faf215e4ae0a21"
