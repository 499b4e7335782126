"""Extracting the chosen option from a model's raw answer — precision first: when a reply does not name one
answer clearly the parse is `ambiguous` or `failed`, never a guess, and a refusal stays a refusal.

The reply is cleaned first: NFKC (full-width Ｃ, （Ｃ）, ：, ［［Ｃ］］ read as ASCII), zero-width characters
dropped, a `<think>…</think>` block dropped, `<answer>X</answer>` and LaTeX `\\boxed{X}` read as `[[X]]`,
`\\text{}`/`\\mathrm{}` unwrapped, `\\textbf{X}` read as `**X**`, `$`, `\\(`, `\\[` removed; markdown
emphasis, backticks, heading and quote markers are removed for the statement rules.

An *answer statement* names a letter: after a cue (`Answer: C`, `answer: d`, `The correct answer is (C)`,
`Correct option: C`, `I'd go with option C`, `it's C`, 答案是C / 正确答案：B / 答：C / 选C / 应该是C,
정답은 C / 답: C, 答えはA / 正解はC), before one (`C is correct`, `C is the answer`, C是正确的, C가 정답, C번,
C입니다, Cが正解, Cです, Cを選), at the end of a sentence after `so` / `therefore` / `I think` / `probably` /
`actually` (`…, so C.`), as the second letter of a contrast (`not A but C`, 不是A而是C, A가 아니라 C, AではなくC),
in `[[C]]` or `\\boxed{C}`, or as the reply's leading letter (`C`, `(c)`, `Option C`, `C\n\nBecause …`,
`C. Because …`, `C) …`, `C, Berlin`) unless several lines start like options (an echoed option list).
Other languages (answer_words.py: Global-MMLU's 42): `Respuesta: B`, `Die richtige Antwort ist D`, `La bonne réponse
est la C`, `الإجابة: ج`, `La opción B es la correcta`; option letters of other scripts (ج, Б, Γ, ב, ग, ሐ) read as A–E
when they stand alone, a lone Cyrillic В ambiguous (B by shape, C by the alphabet). A JSON field (`{"answer": "D"}`)
is a final answer; a sentence-final letter right after a correction word (`… B. Wait, no, C.`) is a statement.
Not a statement: a lower-case `a`/`i` or an `A`/`I` read as a word (`answer: a dog`, `Answer: I think`),
a letter asked about (`Is it A?`), a cue after `whether`/`if`, a conditional (`if …, the answer would be A`).
A letter listed with others (`A, B or C`, `AとBです`) names all of them. A letter negated at or after its
statement (`The answer is A. No, not A, it's C`) is withdrawn. Rules, first that finds anything decides:

1. statements with a final cue (`Final answer`, 最终答案, 최종 답, 最終的な答え): one letter, or ambiguous;
2. the last line of a multi-line reply that holds a statement or is a lone letter (lines after it add
   nothing; chain-of-thought endings such as simple-evals' `Answer: $LETTER`): it decides, unless an earlier
   answer line (a short statement line or a lone letter) names another letter with no correction (`wait`,
   `actually`, `initially`, `let me reconsider`…) in between — then ambiguous;
3. all statements (a leading letter alone also meets any other bold letter): one letter, or ambiguous;
4. letters offered as alternatives (`B or D`, `A/C`): ambiguous;
5. emphasised letters (`**C**`, `(C)`, `【C】`) — in a reply over 200 characters only in its last 60;
6. an option's text instead of a letter: exact or near-exact (case, punctuation, articles, one typo in
   5–8 letters or two in longer texts, never a different number), a unique leading part (`Golgi`), the one
   option whose text a short reply contains (`The instrument is a trumpet`, not after `not`, 不是, or before
   아니/ではない), or the one option whose own words it contains (`happy` of 'The speaker is happy' vs
   '… sad'); a short option (`No`, `12`) counts only as the reply's first word (`No, he didn't`, not
   `No idea`); several options: ambiguous;
7. a refusal or a neutral answer ("Cannot be determined", 无法确定, 알 수 없습니다, 判断できません).

Everywhere: several different letters make the answer ambiguous; a letter followed by another option's text
(`C. Paris`, `C Paris`, or `Answer: B` over a line that is option A's text) is ambiguous; a negated letter
(`not A`, `A is wrong`, 不是A, A는 틀렸, Aは間違い) is never a leading or emphasised answer, and withdraws a
statement before it; ambiguity in rules 4–6, or an option text only found inside a longer reply, next to a
refusal phrase is a refusal ("I can't hear it, so I can't tell if it's Paris"). A letter beyond the options
is a failure, the neutral option's letter or text a neutral answer. Letters are presented letters;
`map_to_original` turns one into the original option through the stored permutation."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import NamedTuple

from spokenbench.core.domain.items import LETTERS
from spokenbench.core.evaluation.answer_patterns import (
    _ABBREVIATION_OR_APOSTROPHE,
    _ALTERNATIVE,
    _ARTICLES,
    _BOLD,
    _BRACKETED,
    _BRACKETED_LETTER,
    _CLAUSE_BREAK,
    _CLAUSE_END,
    _CONCLUSION,
    _CONDITION_AFTER,
    _CONDITIONAL,
    _CONNECTIVES,
    _CONTRAST,
    _CORRECTION,
    _CORRECTION_HINTS,
    _CUE,
    _CUE_GUARD,
    _DISCUSSED,
    _DISCUSSED_SUBJECT,
    _EMPHASIS,
    _ENUMERATED,
    _FINAL_CUE,
    _GLUE_AFTER_LETTER,
    _HEDGED,
    _INSTRUCTED,
    _LEADING,
    _LETTER,
    _LETTER_AFTER_CORRECTION,
    _LETTER_AND_TEXT,
    _LETTER_LIST,
    _LISTED_BEFORE,
    _LISTED_OPTION,
    _LOWER_LATIN,
    _NEGATED,
    _NEGATED_AFTER,
    _NEGATION_HINTS,
    _NEGATION_WORD,
    _NEUTRAL_PHRASES,
    _NONBLANK_LINE,
    _NUMBER,
    _PARENTHESIS,
    _PARENTHESISED,
    _POSTFIX,
    _QUESTION_AFTER,
    _QUOTES,
    _REFUSAL_PHRASES,
    _SENTENCE_BREAK,
    _SENTENCE_END,
    _SPACE_AND_WORD,
    _SPACES,
    _STOPWORDS,
    _UP_TO_ANSWER_CUE,
    _WHOLE,
    _WORD,
    _WORD_AFTER,
    _WORLD_CUE,
    _WORLD_FINAL,
    _WORLD_HINTS,
    _WORLD_NEGATED,
    _WORLD_NEGATION_HINTS,
    _WORLD_POSTFIX,
    _WOULD,
)
from spokenbench.core.evaluation.reply_cleaning import (
    _clean,
    _native_readings,
    _plain,
    normalize,
)

PARSE_STATUSES = ("ok", "failed", "ambiguous", "refusal")
# Raised whenever a change makes some reply parse differently; `spokenbench reparse` reports it, and
# tests/core/evaluation/parsing_golden.jsonl pins this version's outputs. 2: answer words of Global-MMLU's
# languages, native option letters, JSON replies, one-line corrections, options discussed before the answer.
# 3: "I think it's B" in French, German, Spanish, Portuguese and Italian (no pinned reply changed).
# 4: circled option numbers, "정답은 ②입니다" (no pinned reply changed).
PARSER_VERSION = 4


@dataclass(frozen=True)
class ParsedAnswer:
    letter: str | None  # presented letter; None unless status is 'ok'
    status: str  # one of PARSE_STATUSES
    detail: str | None = None  # 'neutral', 'refusal', 'option text', 'several letters: A, C', ...


class _Hit(NamedTuple):  # a tuple: made for every candidate letter of every reply
    letter: str
    start: int  # where the letter is
    end: int
    final: bool = False  # after a final cue ("Final answer")
    alternatives: tuple[str, ...] = ()  # "Answer: A or C"


class _OptionKeys:
    """Each option's text as a `_key` (options with no words left out), worked out when a rule first compares
    texts: most replies name a letter, and then only a text right after it is compared."""

    __slots__ = ("_choices", "_keys")

    def __init__(self, choices: dict[str, str]):
        self._choices, self._keys = choices, None

    def __call__(self) -> dict[str, str]:
        if self._keys is None:
            self._keys = {letter: key for letter, option in self._choices.items() if (key := _key(option))}
        return self._keys


def parse_answer(
    raw: str | None,
    letters: str = "ABCD",
    option_texts: dict[str, str] | None = None,
    neutral_letter: str | None = None,
    neutral_text: str | None = None,
) -> ParsedAnswer:
    """Parse one raw answer. `letters` are the presented letters of the real options; `option_texts` maps
    each presented letter to the option text the model saw or heard (for echoed answers and for checking a
    letter against the text after it)."""
    if raw is None or not raw.strip():
        return ParsedAnswer(None, "failed", "empty reply")
    instructed = _INSTRUCTED.fullmatch(raw.strip())
    if instructed:  # the reply the prompts ask for ("Answer: [[C]]"), or a bare letter: what the rules would find
        return _verdict(instructed.group(1) or instructed.group(2), letters, neutral_letter)
    readings = _native_readings(_clean(raw))
    parsed = [_parse_text(text, letters, option_texts, neutral_letter, neutral_text) for text in readings]
    if any(other != parsed[0] for other in parsed[1:]):  # Cyrillic В: B by its shape, C by the alphabet
        return ParsedAnswer(None, "ambiguous", "Cyrillic В reads as B (Latin shape) or C (third letter)")
    return parsed[0]


def _parse_text(
    text: str,
    letters: str,
    option_texts: dict[str, str] | None,
    neutral_letter: str | None,
    neutral_text: str | None,
) -> ParsedAnswer:
    """parse_answer's rules on a cleaned reply with its option letters in Latin script."""
    plain = _plain(text)
    if not plain.strip():
        return ParsedAnswer(None, "failed", "empty reply")
    choices = dict(option_texts or {})
    if neutral_letter and neutral_text:
        choices[neutral_letter] = neutral_text
    keys = _OptionKeys(choices)
    negated = _negations(plain)
    hits = _withdraw(_statements(plain), negated)
    leading = _leading(plain, negated, keys)  # "C", "Option C", "C. Because …": also an answer, for disagreements
    if leading and hits and _discussed(plain, negated):
        leading = None  # "Option A (Sydney) is … Option B … Therefore, the answer is B": A was discussed
    if leading and not hits:  # a leading letter alone meets any other bold letter: "**C** … wait … **D**"
        bold = [m.group(1) for m in _BOLD.finditer(text) if m.group(1) not in negated]
        leading += [_Hit(letter, m, m) for m, letter in enumerate(bold, start=len(plain))]
    hits = _merge(hits + (leading or []))
    for rule in (_final_cues, _last_line, _all_statements):
        outcome = rule(plain, hits)
        if outcome is not None:
            return _decide(outcome, plain, letters, neutral_letter, keys)
    refused = _refusal(plain)
    hedged = [letter for m in _HEDGED.finditer(plain) for letter in m.groups() if letter in letters]
    if len(set(hedged)) > 1:
        return refused or ParsedAnswer(None, "ambiguous", "several letters: " + ", ".join(dict.fromkeys(hedged)))
    # a long reasoning mentions "(A)" in passing: there only an emphasised letter at its very end counts
    scope = text if len(plain) <= 200 else text.rstrip()[-60:]
    emphasised = [
        _Hit(letter, m.start(), m.end())
        for m in _EMPHASIS.finditer(scope)
        for letter in [next(g for g in m.groups() if g)]
        if letter not in negated
    ]
    if emphasised:
        parsed = _decide(emphasised, None, letters, neutral_letter, keys)
        return refused if refused and parsed.status == "ambiguous" else parsed
    echoed, inside = _echoed_option(plain, keys(), neutral_letter)
    if echoed is not None:  # "I can't hear it, so I can't tell if it's Paris": the refusal stands
        return refused if refused and (echoed.status == "ambiguous" or inside) else echoed
    if refused:
        return refused
    if negated:
        return ParsedAnswer(None, "failed", "only negated letters: " + ", ".join(sorted(negated)))
    return ParsedAnswer(None, "failed", "no answer found")


def map_to_original(letter: str | None, option_order: str) -> str | None:
    """The original option behind presented `letter` ('B' under 'DCBA' → 'C')."""
    if letter is None:
        return None
    index = LETTERS.index(letter)
    return option_order[index] if index < len(option_order) else None


# --------------------------------------------------------------------------------------------------
# answer statements


def _letter_reads_as_letter(text: str, start: int, letter: str) -> bool:
    """False when the letter at `start` is a word: 'a dog', 'I think', 'e.g.', "I'm"."""
    after = text[start + 1 : start + 40]
    before = text[start - 1] if start > 0 else ""
    if before in "([【「" and after[:1] in (")", "]", "】", "」"):
        return True
    if _ABBREVIATION_OR_APOSTROPHE.match(after):
        return False
    word = _WORD_AFTER.match(after)
    if letter == "I" or letter in "ai":
        if letter == "I" and word:
            return False
        if letter in "ai":
            return not _SPACE_AND_WORD.match(after)
    if letter == "A" and word:
        return word.group(1) in _CONNECTIVES
    return True


def _statements(plain: str) -> list[_Hit]:
    hits: list[_Hit] = []
    for cue in _CUE.finditer(plain):
        letter = _LETTER.match(plain, cue.end())
        if not letter or not _letter_reads_as_letter(plain, letter.start(), letter.group(1)):
            continue
        if _CUE_GUARD.search(plain[max(0, cue.start() - 30) : cue.start()]):
            continue  # "whether the answer is A"
        if _WOULD.search(cue.group(0)) and _conditional(plain, cue.start(), letter.end()):
            continue  # "if the speaker meant France, the answer would be A"
        alternatives = []
        position = letter.end()
        while alternative := _ALTERNATIVE.match(plain, position):  # "Answer: A or C", "A, B or C"
            alternatives.append(next(g for g in alternative.groups() if g))
            position = alternative.end()
        final = bool(_FINAL_CUE.search(cue.group(0)))
        hits.append(_Hit(letter.group(1).upper(), letter.start(), letter.end(), final, tuple(alternatives)))
    lowered = plain.lower()
    if any(hint in lowered for hint in _WORLD_HINTS):
        for cue in _WORLD_CUE.finditer(plain):
            letter = _LETTER.match(plain, cue.end())
            if not letter or not _letter_reads_as_letter(plain, letter.start(), letter.group(1)):
                continue
            alternatives = []
            position = letter.end()
            while alternative := _ALTERNATIVE.match(plain, position):
                alternatives.append(next(g for g in alternative.groups() if g))
                position = alternative.end()
            final = bool(_WORLD_FINAL.search(cue.group(0)))
            hits.append(_Hit(letter.group(1).upper(), letter.start(), letter.end(), final, tuple(alternatives)))
        for postfix in _WORLD_POSTFIX.finditer(plain):
            hits.append(_Hit(postfix.group(1), postfix.start(1), postfix.end(1)))
    for postfix in _POSTFIX.finditer(plain):
        if plain[postfix.end(1) : postfix.end(1) + 1] in ("'", "’"):
            continue
        hits.append(_Hit(postfix.group(1), postfix.start(1), postfix.end(1)))
    for conclusion in _CONCLUSION.finditer(plain):  # "…, so C."
        if _letter_reads_as_letter(plain, conclusion.start(1), conclusion.group(1)):
            hits.append(_Hit(conclusion.group(1).upper(), conclusion.start(1), conclusion.end(1)))
    corrections = _CORRECTION.finditer(plain) if any(h in lowered for h in _CORRECTION_HINTS) else ()
    for correction in corrections:  # "… B. Wait, no, C.", "Attendez, non, c'est C."
        after = _LETTER_AFTER_CORRECTION.match(plain, correction.end())
        if after and _letter_reads_as_letter(plain, after.start(1), after.group(1)):
            hits.append(_Hit(after.group(1), after.start(1), after.end(1)))
    for contrast in _CONTRAST.finditer(plain):
        letter = _LETTER.match(plain, contrast.end())
        if letter and _letter_reads_as_letter(plain, letter.start(), letter.group(1)):
            hits.append(_Hit(letter.group(1).upper(), letter.start(), letter.end()))
    for bracket in _BRACKETED.finditer(plain):
        content = bracket.group(1).strip(" *_")
        match = _BRACKETED_LETTER.match(content)
        if match:
            start = bracket.start(1) + bracket.group(1).index(match.group(1))
            hits.append(_Hit(match.group(1).upper(), start, start + 1))
    return _merge(_listed(plain, hit) for hit in hits if not _QUESTION_AFTER.match(plain, hit.end))


def _conditional(plain: str, start: int, end: int) -> bool:
    """Whether the sentence around a statement is a condition ('if …, the answer would be A', '… A if …')."""
    before = _SENTENCE_END.split(plain[:start])[-1]
    after = _SENTENCE_END.split(plain[end:], maxsplit=1)[0]
    return bool(_CONDITIONAL.search(before) or _CONDITION_AFTER.match(after))


def _listed(plain: str, hit: _Hit) -> _Hit:
    """A letter listed after another ('A or B is correct', 'AとBです') names both."""
    before = _LISTED_BEFORE.search(plain[max(0, hit.start - 20) : hit.start])
    if not before or before.group(1) in hit.alternatives:
        return hit
    return _Hit(hit.letter, hit.start, hit.end, hit.final, (*hit.alternatives, before.group(1)))


def _merge(hits) -> list[_Hit]:
    unique = {(hit.letter, hit.start): hit for hit in sorted(hits, key=lambda h: (not h.final, -len(h.alternatives)))}
    return sorted(unique.values(), key=lambda h: h.start)


def _negations(plain: str) -> dict[str, list[int]]:
    lowered = plain.lower()
    if plain.isascii():  # then only the English and a few Latin-script forms can match, each with one of these
        if not any(word in lowered for word in _NEGATION_HINTS + _WORLD_NEGATION_HINTS):
            return {}
    negated: dict[str, list[int]] = {}
    for match in _NEGATED.finditer(plain):
        index = next(i for i, g in enumerate(match.groups(), start=1) if g)
        negated.setdefault(match.group(index), []).append(match.start(index))
    if not plain.isascii() or any(hint in lowered for hint in _WORLD_NEGATION_HINTS):
        for match in _WORLD_NEGATED.finditer(plain):
            negated.setdefault(match.group(1), []).append(match.start(1))
    return negated


def _withdraw(hits: list[_Hit], negated: dict[str, list[int]]) -> list[_Hit]:
    """A statement whose letter is negated at or after it ('The answer is A. No, not A') no longer counts."""
    return [hit for hit in hits if not any(position >= hit.start for position in negated.get(hit.letter, ()))]


def _final_cues(plain: str, hits: list[_Hit]) -> list[_Hit] | None:
    final = [hit for hit in hits if hit.final]
    return final or None


def _last_line(plain: str, hits: list[_Hit]) -> list[_Hit] | ParsedAnswer | None:
    if "\n" not in plain:
        return None  # one line: rule 3 reads it
    lines = [m.span() for m in _NONBLANK_LINE.finditer(plain)]
    last: list[_Hit] = []
    index = len(lines) - 1
    while index > 0 and not last:  # the last line that answers; lines after it ("Hope this helps!") add nothing
        start, end = lines[index]
        last = [hit for hit in hits if start <= hit.start < end]
        whole = None if last else _WHOLE.match(plain[start:end].strip())
        if whole:
            last = [_Hit(whole.group(1).upper(), start, end)]
        index -= 0 if last else 1
    if not last or len({hit.letter for hit in last}) != 1:
        return None  # rule 3 reads the whole reply
    letter = last[0].letter
    earlier_lines = lines[:index]
    conflicts = [
        line_start
        for line_start, line_end in earlier_lines
        if any(other != letter for other in _answer_line(plain, line_start, line_end, hits))
    ]
    if conflicts and not _CORRECTION.search(plain, conflicts[-1], last[0].start):
        earlier = {
            other
            for s, e in earlier_lines
            if s in conflicts
            for other in _answer_line(plain, s, e, hits)
            if other != letter
        }
        return ParsedAnswer(None, "ambiguous", "several answers: " + ", ".join(sorted(earlier | {letter})))
    return last


def _answer_line(plain: str, start: int, end: int, hits: list[_Hit]) -> set[str]:
    """The letters an earlier line gives as an answer: a short line with a statement, or a lone letter."""
    line = plain[start:end].strip()
    whole = _WHOLE.match(line)
    if whole:
        return {whole.group(1).upper()}
    if len(line) > 80:
        return set()
    return {hit.letter for hit in hits if start <= hit.start < end}


def _all_statements(plain: str, hits: list[_Hit]) -> list[_Hit] | None:
    """Every statement; when they disagree, those after the last correction ('… A. Wait, no … so the answer
    is B.') if those name one letter and came after a statement of another."""
    if len({letter for hit in hits for letter in (hit.letter, *hit.alternatives)}) > 1:
        corrections = [m.end() for m in _CORRECTION.finditer(plain, 0, hits[-1].start)]
        if corrections:
            after = [hit for hit in hits if hit.start >= corrections[-1]]
            named = {letter for hit in after for letter in (hit.letter, *hit.alternatives)}
            if len(named) == 1 and len(after) < len(hits):
                return after
    return hits or None


def _discussed(plain: str, negated: dict[str, list[int]]) -> bool:
    """Whether the reply goes through the options ('Option A (Sydney) is …', 'Option B …'): then a leading
    'Option A' is the first option discussed, not an answer."""
    named = {letter for letter in _DISCUSSED.findall(plain)}
    if len(named) > 1:
        return True
    return bool(_DISCUSSED_SUBJECT.match(plain.lstrip()))


# --------------------------------------------------------------------------------------------------
# weaker forms


def _leading(plain: str, negated: dict[str, list[int]], option_keys: _OptionKeys) -> list[_Hit] | None:
    stripped = plain.strip()
    listed = _LETTER_LIST.match(stripped)
    if listed:  # "A or B", "A/C": nothing but letters
        return [_Hit(letter, 0, 0) for letter in listed.groups()]
    squeezed = _SPACES.sub(" ", _QUOTES.sub("", stripped)).strip().rstrip("。.!！ ")
    whole = _WHOLE.match(squeezed)
    if whole:
        return None if whole.group(1).upper() in negated else [_Hit(whole.group(1).upper(), 0, 0)]
    first = stripped.splitlines()[0].strip()
    offset = plain.index(first)
    whole = _WHOLE.match(first)
    if whole:
        letter, end = whole.group(1).upper(), offset + len(first)
    else:
        match = _LEADING.match(first)
        own = None if match else _LETTER_AND_TEXT.match(first)  # "C Berlin": the letter and its own option text
        keys = option_keys() if own else {}
        if match:
            group = next(i for i in (1, 2, 3) if match.group(i))
            letter, end = match.group(group).upper(), offset + match.end(group)
        elif own and _key(own.group(2)) in keys.values():
            named = [other for other, option in keys.items() if option == _key(own.group(2))]
            if own.group(1) not in named:  # "C Paris" with Paris under A
                return [_Hit(own.group(1), offset, offset + 1), _Hit(named[0], offset + 2, offset + 2)]
            letter, end = own.group(1), offset + 1
        else:
            return None
    if len(set(_ENUMERATED.findall(plain)) | set(_PARENTHESISED.findall(plain))) > 1:
        return None  # the options listed back: "A. Paris\nB. London", "(A) Paris (B) London"
    if letter in negated:
        return None
    return [_Hit(letter, offset, end)]


def _decide(
    found: list[_Hit] | ParsedAnswer,
    plain: str | None,
    letters: str,
    neutral_letter: str | None,
    keys: _OptionKeys,
) -> ParsedAnswer:
    if isinstance(found, ParsedAnswer):
        return found
    named = [hit.letter for hit in found] + [letter for hit in found for letter in hit.alternatives]
    distinct = list(dict.fromkeys(named))
    if len(distinct) > 1:
        return ParsedAnswer(None, "ambiguous", f"several letters: {', '.join(distinct)}")
    letter = distinct[0]
    if plain is not None:
        for hit in found:
            other = _text_after(plain, hit, keys)
            if other:
                return ParsedAnswer(None, "ambiguous", f"letter {letter} but the text of option {other}")
    return _verdict(letter, letters, neutral_letter)


def _verdict(letter: str, letters: str, neutral_letter: str | None) -> ParsedAnswer:
    """The one letter a reply names: an answer, the neutral option, or a letter beyond the options."""
    if neutral_letter and letter == neutral_letter:
        return ParsedAnswer(None, "refusal", "neutral")
    if letter not in letters:
        return ParsedAnswer(None, "failed", f"letter {letter} is not an option")
    return ParsedAnswer(letter, "ok")


def _text_after(plain: str, hit: _Hit, option_keys: _OptionKeys) -> str | None:
    """Another option's letter when the text right after the letter is exactly that option's text ('C. Paris')."""
    if not hit.end:
        return None
    line, _, after = plain[hit.end :].partition("\n")
    rest = _GLUE_AFTER_LETTER.sub("", line)
    next_line = next((other for other in after.split("\n") if other.strip()), "")
    if _LISTED_OPTION.match(next_line):
        next_line = ""  # "A: Paris" lists an option, it does not gloss the answer
    candidates = {rest, _CLAUSE_END.split(rest, maxsplit=1)[0], next_line}
    inner = _PARENTHESIS.match(rest)
    if inner:
        candidates.add(inner.group(1))
    for candidate in candidates:
        key = _key(candidate)
        if not key:
            continue
        keys = option_keys()
        if key == keys.get(hit.letter):
            continue
        for letter, option in keys.items():
            if letter != hit.letter and option == key:
                return letter
    return None


# --------------------------------------------------------------------------------------------------
# option texts


def _words(text: str) -> list[str]:
    return [w for w in _WORD.findall(normalize(text).casefold()) if w not in _ARTICLES]


@functools.lru_cache(maxsize=4096)
def _key(text: str) -> str:
    """Casefolded words without articles, joined by one space: 'The Eiffel Tower.' → 'eiffel tower'."""
    return " ".join(_words(text))


def _has_cjk(text: str) -> bool:
    """Whether the text has a character past U+2E7F (CJK scripts and beyond)."""
    return bool(text) and max(text) > "\u2e7f"


def _distance(a: str, b: str, limit: int) -> int:
    """Edit distance (adjacent transpositions count one), or limit + 1 once it exceeds `limit`."""
    if abs(len(a) - len(b)) > limit:
        return limit + 1
    previous2, previous = None, list(range(len(b) + 1))
    for i, ca in enumerate(a, start=1):
        current = [i] + [0] * len(b)
        for j, cb in enumerate(b, start=1):
            current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ca != cb))
            if previous2 is not None and i > 1 and j > 1 and ca == b[j - 2] and a[i - 2] == cb:
                current[j] = min(current[j], previous2[j - 2] + 1)
        if min(current) > limit:
            return limit + 1
        previous2, previous = previous, current
    return previous[-1]


def _near(candidate: str, option: str) -> int | None:
    """Typo distance when `candidate` may be `option` misspelt: same digits, long enough words."""
    if _NUMBER.findall(candidate) != _NUMBER.findall(option) or len(option) < 5:
        return None
    if not _LOWER_LATIN.search(option) or _has_cjk(option):
        return None  # no typo tolerance for CJK scripts
    limit = 1 if len(option) <= 8 else 2
    distance = _distance(candidate, option, limit)
    return distance if distance <= limit else None


def _echoed_option(plain: str, keys: dict[str, str], neutral_letter: str | None) -> tuple[ParsedAnswer | None, bool]:
    """The parse from an option's text, and whether it was only found inside a longer reply."""
    if not keys:
        return None, False
    bracketed = [m.group(1) for m in _BRACKETED.finditer(plain)]
    candidates = [bracketed[-1]] if bracketed else []
    after_cue = _UP_TO_ANSWER_CUE.sub("", plain.strip())
    candidates += [after_cue, plain.strip()]
    for candidate in dict.fromkeys(c for c in candidates if c and c.strip()):
        found = _match_options(candidate, keys)
        if found is not None:
            letter, status = found
            if status == "ambiguous":
                return ParsedAnswer(None, "ambiguous", "several option texts: " + letter), True
            if neutral_letter and letter == neutral_letter:
                return ParsedAnswer(None, "refusal", "neutral"), False
            return ParsedAnswer(letter, "ok", "option text"), status == "inside"
    return None, False


def _match_options(candidate: str, keys: dict[str, str]) -> tuple[str, str] | None:
    key = _key(candidate.strip().strip("\"'“”‘’「」『』"))
    if not key:
        return None
    exact = [letter for letter, option in keys.items() if option == key]
    if len(exact) == 1:
        return exact[0], "ok"
    squashed = key.replace(" ", "")
    exact = [letter for letter, option in keys.items() if option.replace(" ", "") == squashed]
    if len(exact) == 1:
        return exact[0], "ok"
    near = {letter: _near(key, option) for letter, option in keys.items()}
    near = {letter: d for letter, d in near.items() if d is not None}
    if len(near) == 1:
        letter = next(iter(near))
        margin = near[letter] + 1
        rivals = [o for other, o in keys.items() if other != letter and _distance(key, o, margin) <= margin]
        if not rivals:
            return letter, "ok"
    prefix = [letter for letter, option in keys.items() if len(key) >= 4 and (option + " ").startswith(key + " ")]
    if len(prefix) == 1 and len(key.split()) <= 3:
        return prefix[0], "ok"
    if len(candidate) > 150 or len(_SENTENCE_BREAK.findall(candidate.strip())) > 2:
        return None  # a longer text naming one option in passing has not answered with it
    contained = [
        letter
        for letter, option in keys.items()
        if (_starts_with(candidate, option) if _short(option) else _occurs_unnegated(candidate, option))
    ]
    # "the sun" inside "the sun's corona": keep only options not contained in another matched option
    contained = [a for a in contained if not any(a != b and keys[a] in keys[b] for b in contained)]
    if len(contained) == 1:
        return contained[0], "inside"
    if len(contained) > 1:
        return ", ".join(sorted(contained)), "ambiguous"
    own = _own_words(keys)
    named = [
        letter for letter, words in own.items() if words and all(_names(candidate, w, keys[letter]) for w in words)
    ]
    if len(named) == 1:
        letter = named[0]
        if any(_occurs_unnegated(candidate, w) for other, words in own.items() if other != letter for w in words):
            return ", ".join(sorted(own)), "ambiguous"  # another option's own word is named too
        return letter, "inside"
    if len(named) > 1:
        return ", ".join(sorted(named)), "ambiguous"
    return None


def _own_words(keys: dict[str, str]) -> dict[str, list[str]]:
    """Each option's content words that no other option has: 'happy' in 'The speaker is happy' (vs '… sad'),
    'airport' in 'at the airport'. Not for CJK scripts (no word boundaries)."""
    if len(keys) < 2 or any(_has_cjk(option) for option in keys.values()):
        return {}
    words = {letter: [w for w in option.split() if w not in _STOPWORDS] for letter, option in keys.items()}
    return {
        letter: [w for w in mine if not any(w in theirs for other, theirs in words.items() if other != letter)]
        for letter, mine in words.items()
    }


def _names(candidate: str, word: str, option: str) -> bool:
    """An option's own word in the reply; a short option ('No') only as the reply's first word ('No idea' is not)."""
    return _starts_with(candidate, word) if _short(option) else _occurs_unnegated(candidate, word)


def _short(option: str) -> bool:
    return len(option) <= 3 and not _has_cjk(option)


def _starts_with(candidate: str, option: str) -> bool:
    """A short option ('No', '12') only as the reply's first word before a pause: 'No, he didn't.', not 'No idea'."""
    text = normalize(candidate).casefold()
    if option not in text:  # (saves compiling the pattern)
        return False
    return bool(re.match(r"\W*" + re.escape(option) + r"\s*(?:$|[,\.!;:])", text))


def _occurs_unnegated(candidate: str, option: str) -> bool:
    """Whether the option's words occur in the candidate (whole words; characters for CJK), not after a negation
    in the same clause ('not Paris', '不是北京')."""
    text = normalize(candidate).casefold()
    cjk = _has_cjk(option)
    if cjk:
        if len(option.replace(" ", "")) < 2:
            return False
        if not all(ch in text for ch in option.replace(" ", "")):  # (saves compiling the pattern)
            return False
        pattern = r"\s*".join(re.escape(ch) for ch in option.replace(" ", ""))
    else:
        words = option.split()
        if not all(word in text for word in words):  # (saves compiling the pattern)
            return False
        pattern = r"\b" + r"\W+(?:(?:the|a|an)\W+)?".join(re.escape(w) for w in words) + r"\b"
    for match in re.finditer(pattern, text):
        clause = _CLAUSE_BREAK.split(text[: match.start()])[-1]
        if _NEGATION_WORD.search(clause[-20:]) or _NEGATED_AFTER.match(text, match.end()):
            continue
        return True
    return False


def _refusal(plain: str) -> ParsedAnswer | None:
    lowered = plain.casefold().replace("’", "'")
    if any(phrase in lowered for phrase in _NEUTRAL_PHRASES):
        return ParsedAnswer(None, "refusal", "neutral")
    if any(phrase in lowered for phrase in _REFUSAL_PHRASES):
        return ParsedAnswer(None, "refusal", "refusal")
    return None
