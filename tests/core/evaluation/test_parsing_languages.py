"""The answer parser in Global-MMLU's languages (issue 25): the answer-word table checked in each native script,
the native option letters, and a corpus of replies in 29 languages by class, scored per language.

`parsing_languages.jsonl` holds replies (`reply`), their language and class (cue, sentence, reasoning, final,
option, json, correction, discussion, native_letter; either / two: ambiguous; negated / none: no answer) and the
expected letter or status. It was written together with the rules (not held out). The per-language table in
docs/evaluation.md is generated from it; after a parser change rewrite it with

    python tests/core/evaluation/test_parsing_languages.py
"""

from __future__ import annotations

import json
import unicodedata
from collections import Counter, defaultdict
from pathlib import Path

import pytest

from spokenbench.core.evaluation.answer_words import (
    ANSWER_WORDS,
    GLOBAL_MMLU_LANGUAGES,
    HOMOGLYPHS,
    NATIVE_LETTERS,
    OR_AND_WORDS,
)
from spokenbench.core.evaluation.parsing import parse_answer

CORPUS = Path(__file__).with_name("parsing_languages.jsonl")
DOCS = Path(__file__).parents[3] / "docs" / "evaluation.md"
TABLE_START, TABLE_END = "<!-- parsing-languages:start -->", "<!-- parsing-languages:end -->"
OPTIONS = {"A": "Paris", "B": "London", "C": "Berlin", "D": "Madrid"}
NO_LETTER = ("ambiguous", "none")
# the script every word of a language's entry is written in (Serbian in both of its scripts)
SCRIPTS = {
    "am": ("ETHIOPIC",), "ar": ("ARABIC",), "bn": ("BENGALI",), "el": ("GREEK",), "fa": ("ARABIC",),
    "he": ("HEBREW",), "hi": ("DEVANAGARI",), "ky": ("CYRILLIC",), "ne": ("DEVANAGARI",), "ru": ("CYRILLIC",),
    "si": ("SINHALA",), "sr": ("CYRILLIC", "LATIN"), "te": ("TELUGU",), "uk": ("CYRILLIC",),
}  # fmt: skip


def load_corpus() -> list[dict]:
    return [json.loads(line) for line in CORPUS.read_text(encoding="utf-8").splitlines() if line.strip()]


def _scripts(word: str) -> set[str]:
    return {unicodedata.name(ch).split()[0] for ch in word if unicodedata.category(ch)[0] == "L"}


def score_by_language(cases: list[dict]) -> dict[str, dict]:
    """Per language: replies, letter replies, letters returned, right ones, and the ids of wrong letters."""
    by_language: dict[str, dict] = defaultdict(lambda: Counter())
    wrong, misclassified = [], []
    for case in cases:
        parsed = parse_answer(case["reply"], "ABCD", case["options"])
        counts = by_language[case["lang"]]
        counts["replies"] += 1
        expected = case["expected"]
        if parsed.letter is not None:
            counts["returned"] += 1
        if expected in NO_LETTER:
            if parsed.letter is not None:
                wrong.append((case["id"], expected, parsed))
            elif expected == "ambiguous" and parsed.status != "ambiguous":
                misclassified.append((case["id"], expected, parsed))
            continue
        counts["with_letter"] += 1
        if parsed.letter == expected:
            counts["correct"] += 1
        elif parsed.letter is not None:
            wrong.append((case["id"], expected, parsed))
    return {"languages": dict(by_language), "wrong": wrong, "misclassified": misclassified}


def render_table(result: dict) -> str:
    rows = ["| language | replies | with a letter | precision | recall |", "|---|---|---|---|---|"]
    totals = Counter()
    for language, counts in sorted(result["languages"].items()):
        totals.update(counts)
        rows.append(_row(language, counts))
    rows.append(_row("**all**", totals))
    return "\n".join(rows)


def _row(name: str, counts: Counter) -> str:
    precision = counts["correct"] / counts["returned"] if counts["returned"] else 1.0
    recall = counts["correct"] / counts["with_letter"] if counts["with_letter"] else 1.0
    return (
        f"| {name} | {counts['replies']} | {counts['with_letter']} | {precision:.3f} | "
        f"{recall:.3f} ({counts['correct']}/{counts['with_letter']}) |"
    )


def test_corpus_is_large_and_covers_many_languages_and_classes():
    cases = load_corpus()
    assert len(cases) >= 300 and len({case["id"] for case in cases}) == len(cases)
    languages = Counter(case["lang"] for case in cases)
    assert len(languages) >= 12 and sum(1 for n in languages.values() if n >= 10) >= 12
    classes = Counter(case["class"] for case in cases)
    assert {"cue", "sentence", "native_letter", "json", "correction", "postfix", "either", "two", "none"} <= set(
        classes
    )
    assert all(case["expected"] in NO_LETTER or case["expected"] in "ABCD" for case in cases)


def test_no_wrong_letter_and_recall_per_language():
    result = score_by_language(load_corpus())
    assert not result["wrong"], result["wrong"]  # precision first: never a wrong letter
    assert not result["misclassified"], result["misclassified"]  # two answers without a final one: ambiguous
    for language, counts in result["languages"].items():
        assert counts["correct"] >= 0.9 * counts["with_letter"], (language, counts)


def test_docs_table_is_current():
    table = render_table(score_by_language(load_corpus()))
    text = DOCS.read_text(encoding="utf-8")
    assert TABLE_START in text, "docs/evaluation.md lacks the per-language table"
    current = text.split(TABLE_START, 1)[1].split(TABLE_END, 1)[0].strip()
    assert current == table, "docs/evaluation.md is stale: run python tests/core/evaluation/test_parsing_languages.py"


def test_every_global_mmlu_language_has_answer_words():
    assert len(GLOBAL_MMLU_LANGUAGES) == 42 == len(set(GLOBAL_MMLU_LANGUAGES))
    assert set(ANSWER_WORDS) == set(GLOBAL_MMLU_LANGUAGES) - {"en", "zh", "ja", "ko"}  # these have their own rules


@pytest.mark.parametrize("language", sorted(ANSWER_WORDS))
def test_each_languages_words_in_its_script_state_an_answer(language):
    words = ANSWER_WORDS[language]
    allowed = set(SCRIPTS.get(language, ("LATIN",)))
    for word in words.answer + words.correct + words.final + words.copula + words.option:
        assert _scripts(word) <= allowed, (language, word, _scripts(word))
    for answer in words.answer:
        for reply in (f"{answer}: C", f"{answer[:1].upper()}{answer[1:]}: C", f"{answer} : (C)"):
            assert parse_answer(reply, "ABCD", OPTIONS).letter == "C", (language, reply)
        for copula in words.copula:
            reply = f"{answer} {copula} C."
            assert parse_answer(reply, "ABCD", OPTIONS).letter == "C", (language, reply)
        for correct in words.correct:
            for reply in (f"{correct} {answer}: B", f"{answer} {correct}: B"):
                assert parse_answer(reply, "ABCD", OPTIONS).letter == "B", (language, reply)
        # two answers, none final: ambiguous, never the last or the first
        parsed = parse_answer(f"{answer}: A. {answer}: C.", "ABCD", OPTIONS)
        assert (parsed.letter, parsed.status) == (None, "ambiguous"), (language, answer)
    for option in words.option:
        for correct in words.correct:
            reply = f"{option} {correct}: D"
            assert parse_answer(reply, "ABCD", OPTIONS).letter == "D", (language, reply)
    for final in words.final:
        reply = f"{words.answer[0]}: A\n{final} {words.answer[0]}: B\n{words.answer[0]} {final}: B"
        assert parse_answer(reply, "ABCD", OPTIONS).letter == "B", (language, reply)


@pytest.mark.parametrize("script", sorted(NATIVE_LETTERS))
def test_native_option_letters_map_to_latin(script):
    for latin, native in zip("ABCDE", NATIVE_LETTERS[script]):
        if native == "В":
            continue
        for reply in (f"Answer: {native}", f"({native})", f"{native}"):
            assert parse_answer(reply, "ABCDE", {**OPTIONS, "E": "Rome"}).letter == latin, (script, reply)


def test_cyrillic_ve_is_ambiguous_alone_and_c_among_cyrillic_letters():
    assert HOMOGLYPHS["В"] == "B"
    assert parse_answer("Ответ: В", "ABCD", OPTIONS).status == "ambiguous"
    assert parse_answer("Ответ: В. Варианты А и Б неверны.", "ABCD", OPTIONS).letter == "C"
    assert parse_answer("Ответ: С", "ABCD", OPTIONS).letter == "C"  # Cyrillic Es, Latin C's look-alike


@pytest.mark.parametrize(
    "reply",
    [
        "В этом вопросе говорящий спрашивает о столице.",  # the preposition "in", not the letter В
        "La respuesta es a la izquierda.",  # Spanish "a", not option a
        "A resposta é a seguinte: não sei.",
        "La respuesta no es A.",
        "Die Antwort ist nicht B.",
        "Ce n'est pas la C.",
        "الإجابة ليست ب",
        "Ответ: А или Б",
        "Jawaban: A atau C",
        '{"answer": "Paris"}',  # a JSON answer that is no letter: the option's text is read instead
    ],
)
def test_words_that_look_like_answers_are_not_letters(reply):
    parsed = parse_answer(reply, "ABCD", OPTIONS)
    assert parsed.letter in (None, "A") if reply.startswith("{") else parsed.letter is None, parsed


def test_or_words_make_two_letters_ambiguous():
    for word in OR_AND_WORDS:
        parsed = parse_answer(f"Answer: B {word} D", "ABCD", OPTIONS)
        assert (parsed.letter, parsed.status) == (None, "ambiguous"), word


def test_issue_phrasings():
    assert parse_answer('```json\n{"answer": "D"}\n```', "ABCD", OPTIONS).letter == "D"
    assert parse_answer("I think it's A. Wait, no, so the answer is B.", "ABCD", OPTIONS).letter == "B"
    options = {"A": "Sydney", "B": "Canberra", "C": "Melbourne", "D": "Perth"}
    reply = "Option A (Sydney) is the largest city, but not the capital. Therefore, the answer is B."
    assert parse_answer(reply, "ABCD", options).letter == "B"
    assert parse_answer("Selected option: B", "ABCD", OPTIONS).letter == "B"
    assert parse_answer("It's definitely option a.", "ABCD", OPTIONS).letter == "A"
    assert parse_answer("The answer is A or B.", "ABCD", OPTIONS).status == "ambiguous"
    assert parse_answer("I think it's A. Wait, no, it's B or C.", "ABCD", OPTIONS).status == "ambiguous"
    for reply in ("I'm going with B.", "Definitely B.", "B is my final answer.", "Die Antwort ist eindeutig B."):
        assert parse_answer(reply, "ABCD", OPTIONS).letter == "B", reply


def _rewrite_docs() -> None:
    table = render_table(score_by_language(load_corpus()))
    text = DOCS.read_text(encoding="utf-8")
    head, rest = text.split(TABLE_START, 1)
    DOCS.write_text(f"{head}{TABLE_START}\n{table}\n{TABLE_END}{rest.split(TABLE_END, 1)[1]}", encoding="utf-8")
    print(table)


if __name__ == "__main__":
    _rewrite_docs()
