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
import unicodedata
from dataclasses import dataclass
from typing import NamedTuple

from spokenbench.core.domain.items import LETTERS
from spokenbench.core.evaluation.answer_words import (
    ADVERBS,
    ANSWER_WORDS,
    HOMOGLYPHS,
    NATIVE_LETTERS,
    OR_AND_WORDS,
)

PARSE_STATUSES = ("ok", "failed", "ambiguous", "refusal")
# Raised whenever a change makes some reply parse differently; `spokenbench reparse` reports it, and
# tests/core/evaluation/parsing_golden.jsonl pins this version's outputs. 2: answer words of Global-MMLU's
# languages, native option letters, JSON replies, one-line corrections, options discussed before the answer.
# 3: "I think it's B" in French, German, Spanish, Portuguese and Italian (no pinned reply changed).
PARSER_VERSION = 3

_NOT_LETTER_AFTER = r"(?![A-Za-z0-9])"
_NOT_LETTER_BEFORE = r"(?<![A-Za-z0-9])"
_DECOR = r"[\s\*_\(\[\{【「『\"'“‘<】\]]*"
_CLOSE = r"[\)\]】」』\"'”’>]"
_OPTION_WORD = r"(?:(?i:option|choice|letter)\s*|选项|選択肢\s*|보기\s*|선택지\s*)?"
# "or"/"and" between two letters in every language: (?i:or|and) and the other languages' words
_OR_AND = (
    r"(?:(?i:or|and)\b|(?i:(?<!\w)(?:"
    + "|".join(r"\s+".join(map(re.escape, w.split())) for w in sorted(OR_AND_WORDS, key=len, reverse=True))
    + r")(?!\w)))"
)

# "Answer: [[C]]", "[[C]]", "Answer: C", "C" and nothing else: parse_answer's shortcut
_INSTRUCTED = re.compile(r"(?:Answer: )?(?:\[\[([A-Z])\]\]|([A-Z]))")
_BRACKETED = re.compile(r"\[\[\s*([^\[\]\n]{1,200}?)\s*\]\]")
_FINAL_CUE = re.compile(r"(?i:final)|最终|最后|최종|最終")

# The patterns that scan a whole reply start with a lookahead for the characters any of their branches can start
# with (same case rules): it changes no match, and the other positions are passed over at once instead of trying
# every branch there.
_EN_CUES = [
    r"\b(?:(?:final|correct|best|right|my|the|most\s+likely)\s+)*answer"
    r"(?:\s+(?:is|would\s+be|should\s+be|will\s+be|must\s+be|here\s+is))?"
    r"(?:\s+(?:most\s+likely|likely|probably|clearly|definitely|therefore|thus|either))?"
    r"\s*(?:[:=\-→]|->|=>)?",
    r"\b(?:the\s+)?(?:correct|best|right|final|most\s+likely)\s+(?:option|choice|one)(?:\s+(?:is|would\s+be)\s*:?|\s*:)",
    r"\bI(?:\s+would|'d|’d|\s+will|'ll|’ll|\s+am\s+going\s+to|'m\s+going\s+to)?\s+"
    r"(?:choose|pick|select|go\s+with|opt\s+for|say)",
    r"\bI(?:\s+am|'m|’m)\s+(?:going|choosing|picking|selecting|opting)(?:\s+(?:with|for))?",
    r"\bmy\s+(?:choice|pick|selection)\s+(?:is|would\s+be)\s*:?",
    r"\b(?:it|that|this)(?:'s|’s|\s+is|\s+must\s+be|\s+should\s+be|\s+would\s+be)"
    r"(?:\s+(?:definitely|clearly|surely|certainly|probably|likely|most\s+likely))?",
    r"\b(?:selected|chosen|picked)\s+(?:option|choice|answer|letter)\s*[:=]",
]
_CJK_CUES = [
    # Chinese
    r"(?:最终|正确|最后)?的?答案(?:应该|应当|可能|就)?(?:是|为|选)?\s*[:]?",
    r"(?<![回解])答\s*:",
    r"(?:应该|应当|肯定|一定)是\s*(?:选项)?",
    r"(?:正确|最佳)的?选项(?:应该)?(?:是|为)\s*[:]?",
    r"(?:我|应该?|故|所以|因此)?选(?:择)?(?!项)\s*[:]?\s*(?:选项)?",
    # Korean
    r"(?:최종\s*)?(?:정답|답)(?:은|는|이)?\s*[:]?\s*(?:아마(?:도)?\s*)?",
    # Japanese
    r"(?:最終的な)?(?:答え|正解|解答|回答)(?:は|:)?\s*[:]?",
    r"正しいのは",
]
_CUE = re.compile(
    r"(?=\b(?i:[abcfimprst])|[的答最正应肯一我故所因选최정답解回])"
    "(?:" + "|".join([f"(?i:{cue})" for cue in _EN_CUES] + _CJK_CUES) + ")\\s*" + _OPTION_WORD + _DECOR,
)


def _words_pattern(words) -> str:
    """An alternation of words (longest first, spaces as any whitespace), each not part of a longer word."""
    ordered = sorted({unicodedata.normalize("NFKC", w).lower() for w in words}, key=len, reverse=True)
    return "(?:" + "|".join(r"\s+".join(re.escape(part) for part in w.split()) for w in ordered) + r")(?!\w)"


_WORLD = list(ANSWER_WORDS.values())
_WORLD_ANSWER = _words_pattern(w for words in _WORLD for w in words.answer)
_WORLD_QUALIFIER = _words_pattern(w for words in _WORLD for w in words.correct + words.final)
_WORLD_OPTION = _words_pattern(w for words in _WORLD for w in words.option)
_WORLD_COPULA = _words_pattern(w for words in _WORLD for w in words.copula)
_WORLD_ARTICLE = _words_pattern(w for words in _WORLD for w in words.article)
# the other languages' cues: "Respuesta: B", "Die richtige Antwort ist B", "La bonne réponse est la C",
# "A resposta é a alternativa C", "الإجابة الصحيحة هي ج", "Правильный ответ — Б", "پاسخ صحیح گزینه ج"
_WORLD_CUE = re.compile(
    r"(?i:(?<!\w)(?:"
    + rf"(?:{_WORLD_QUALIFIER}\s+){{0,2}}{_WORLD_ANSWER}(?:\s+{_WORLD_QUALIFIER}){{0,2}}"
    + rf"|(?:{_WORLD_QUALIFIER}\s+){{1,2}}{_WORLD_OPTION}(?:\s+{_WORLD_QUALIFIER}){{0,2}}"
    + rf"|{_WORLD_OPTION}(?:\s+{_WORLD_QUALIFIER}){{1,2}}"
    + r")(?:\s*[:=\-–—]\s*|\s+"
    + _WORLD_COPULA
    + rf"(?:\s+{_words_pattern(ADVERBS)})?"
    + r"\s*:?\s*|\s*)"
    + rf"(?:(?-i:{_WORLD_ARTICLE})\s+)?(?:{_WORLD_OPTION}\s*)?)"
    + _DECOR
)
# a letter before "is correct" in the other languages: "La opción B es la correcta", "B ist richtig", "B est correcte"
# (copula, article and "correct" of one language: "B is correcta" mixes two and is no statement)
_WORLD_POSTFIX = re.compile(
    rf"(?:(?i:{_WORLD_OPTION})\s+)?[\(\[]?(?<![A-Za-z0-9])([A-Z])[\)\]]?\s+(?:"
    + "|".join(
        rf"(?i:{_words_pattern(words.copula)})\s+"
        + (rf"(?:(?-i:{_words_pattern(words.article)})\s+)?" if words.article else "")
        + rf"(?i:{_words_pattern(words.correct)})"
        for words in _WORLD
        if words.copula and words.correct
    )
    + ")"
)
_WORLD_FINAL = re.compile("(?i:" + _words_pattern(w for words in _WORLD for w in words.final) + ")")
# a cheap test before the patterns above run on an ASCII reply: one of their ASCII answer or option words
# (substring tests: for a hundred literals, `in` over the lower-cased reply is many times faster than a regex)
_WORLD_HINTS = tuple(
    sorted(
        {unicodedata.normalize("NFKC", w).lower() for words in _WORLD for w in words.answer + words.option}
        | {unicodedata.normalize("NFKC", w).lower() for words in _WORLD for w in words.correct if len(w) >= 5}
    )
)
_WORLD_NEGATED = re.compile(
    r"(?i:(?<!\w)(?:no\s+es|não\s+é|nao\s+e|nicht|pas|non\s+è|niet|inte|не|nie\s+jest|není|ليست?|לא)\s+"
    + rf"(?:{_WORLD_ARTICLE}\s+)?(?:{_WORLD_OPTION}\s*)?[\(\[]?)([A-Z])(?![A-Za-z0-9])"
)
_CONCLUSION = re.compile(
    r"(?=\b(?i:[sthilmpawdcjg]))"
    r"(?i:\b(?:so|thus|therefore|hence|I\s+think|I\s+believe|I\s+guess|(?:most\s+)?likely|probably|actually|wait"
    r"|definitely|clearly|certainly"
    # "I think it's B" in the other languages the audit read (fr, de, es, pt, it): the letter ends the sentence
    r"|je\s+pense\s+que\s+c['’]est|c['’]est|ich\s+denke,?\s+es\s+ist|ich\s+glaube,?\s+es\s+ist|es\s+ist"
    r"|creo\s+que\s+es|penso\s+que\s+(?:é|e)|acho\s+que\s+(?:é|e)|penso\s+che\s+sia|credo\s+che\s+sia)"
    r"\s*[,:]?\s+"
    r"(?:it'?s\s+|option\s+|choice\s+|(?:la|a|die|l['’]option|la\s+opción|a\s+opção|l['’]opzione)\s+)?)"
    r"[\(\[]?([A-Za-z])[\)\]]?"
    r"(?=\s*[\.!。]?\s*$|\s*[\.!。]\s)",
    re.M,
)
_LETTER = re.compile(_NOT_LETTER_BEFORE + r"([A-Za-z])" + _NOT_LETTER_AFTER)
_POSTFIX = re.compile(
    r"(?=(?i:[oc])|[选보\(\[【「A-Z])"
    r"(?:(?i:option|choice)\s*|选项|보기\s*)?[\(\[【「]?"
    + _NOT_LETTER_BEFORE
    + r"([A-Z])"
    + _NOT_LETTER_AFTER
    + r"[\)\]】」]?\s*(?:"
    + r"(?i:is\s+(?:the\s+)?(?:correct|right|best|most\s+likely)(?:\s+(?:answer|option|choice|one))?\b|is\s+the\s+answer\b"
    + r"|is\s+my\s+(?:final\s+)?(?:answer|choice|pick)\b)"
    + r"|(?:项|选项)?\s*(?:是)?(?:正确|对的)(?!吗|么)"
    + r"|번?\s*(?:가|이)\s*(?:정답(?!이\s*아)|맞(?!지\s*않))|번(?!\s*(?:은|는|이|가))|\s*(?:입니다|이에요|예요)"
    + r"|\s*(?:が|は)\s*(?:正解(?!では|じゃ)|正しい)|\s*です(?!か)|\s*を選"
    + r")"
)
_CONTRAST = re.compile(
    r"(?=\b(?i:n)|[不A-Z])(?:"
    r"(?i:\bnot\s+(?:option\s+|choice\s+)?[\(\[]?[A-Z][\)\]]?\s*[,;]?\s*(?:but|rather|instead)(?:\s+rather|\s+instead)?[,:]?\s*"
    + r"(?:it'?s\s+|it\s+is\s+)?(?:option\s+|choice\s+)?)"
    + r"|不是\s*(?:选项)?[A-Z]\s*[,、]?\s*(?:而是|是)\s*(?:选项)?"
    + r"|[A-Z]\s*번?\s*(?:가|이)\s*아니(?:라|고)\s*,?\s*(?:보기\s*)?"
    + r"|[A-Z]\s*(?:では|じゃ)なく(?:て)?\s*[,、]?\s*)"
)
_ALTERNATIVE = re.compile(
    _CLOSE
    + r"*\s*(?:,?\s*(?:"
    + _OR_AND
    + r"|/|&|或者?|和|또는|または|か|と)\s*"
    + _OPTION_WORD
    + _DECOR
    + r"([A-Z])"
    + _NOT_LETTER_AFTER
    + r"|[,、]\s*"
    + _DECOR
    + r"([A-Z])"
    + _NOT_LETTER_AFTER
    + r"(?=\s*[\)\]]?\s*(?:[,、/]|(?i:or|and)\b|$|[\.\)]\s*$))"
    + r"|\s+([A-Z])(?=\s*[\.。]?\s*$))"
)
_LISTED_BEFORE = re.compile(
    r"([A-Z])[\)\]]?\s*(?:,?\s*(?:"
    + _OR_AND
    + r"|/|&|或者?|和|또는|または|か|と|や)|[,、])\s*"
    + _OPTION_WORD
    + r"[\(\[]?$"
)
_QUESTION_AFTER = re.compile(r"[\)\]】」\"'”]*\s*(?:\?|؟|吗|么|嗎|か[?\s。]|か$|입니까|인가요)")
_NEGATED = re.compile(
    r"(?=\b(?i:[nire])|(?i:[oc])|[\(\[A-Z不并排])(?:"
    + "|".join(
        [
            # not A / isn't (A) / rule out A
            r"(?i:\b(?:not|isn'?t|isn’t|never|nor)\s+(?:option\s+|choice\s+)?[\(\[]?)([A-Z])"
            + _NOT_LETTER_AFTER
            + "(?!['’])",
            r"(?i:\b(?:rule[sd]?\s+out|eliminat\w*|exclud\w*)\s+(?:option\s+)?[\(\[]?)([A-Z])" + _NOT_LETTER_AFTER,
            # A is wrong / A) is incorrect / A (angry) is not the answer / A can be ruled out
            r"(?:(?i:option|choice)\s+)?[\(\[]?" + _NOT_LETTER_BEFORE + r"([A-Z])[\)\]]?\s*(?:\([^)\n]{0,40}\)\s*)?"
            r"(?i:(?:is|are|seems|would\s+be)\s+(?:wrong|incorrect|false|not\s+(?:correct|right|the\s+(?:correct\s+)?answer)"
            r"|ruled\s+out|eliminated|unlikely|implausible)|can\s+be\s+(?:ruled\s+out|eliminated))",
            # Chinese: 不是A, 排除A, A不对, A是错的
            r"(?:不是|并非|排除|不选|不可能是)\s*(?:选项)?([A-Z])" + _NOT_LETTER_AFTER,
            _NOT_LETTER_BEFORE + r"([A-Z])\s*(?:项|选项)?\s*(?:是)?(?:不对|错误|错的|不正确|是错|不是正确)",
            # Korean: A는 틀렸다, A는 오답, A는 정답이 아닙니다, A가 아니
            _NOT_LETTER_BEFORE + r"([A-Z])\s*번?\s*(?:은|는|이|가)\s*(?:틀|오답|정답이\s*아|아니)",
            # Japanese: Aは間違い, Aではない, Aは不正解
            _NOT_LETTER_BEFORE + r"([A-Z])\s*(?:は|が)?\s*(?:間違|誤り|不正解|正しくな|ではな|じゃな)",
        ]
    )
    + ")"
)
# lower-cased words one of which every English form of _NEGATED holds: an ASCII reply without any has no negation
_NEGATION_HINTS = (
    "not", "isn", "never", "nor", "rule", "eliminat", "exclud", "wrong", "incorrect", "false", "unlikely", "implausible",
)  # fmt: skip
_WORLD_NEGATION_HINTS = ("no es", "nao e", "nicht", "pas ", "niet", "inte", "nie ")
# lower-cased parts one of which every correction holds: a reply without any has none
_CORRECTION_HINTS = (
    "wait", "actual", "second", "reflect", "correct", "reconsider", "evaluat", "mistake", "check", "initial",
    "first", "closer", "listen", "等等", "不对", "重新", "一开始", "잠깐", "다시", "처음", "いや", "待って", "訂正", "最初",
    *(w.lower() for words in ANSWER_WORDS.values() for w in words.correction),
)  # fmt: skip
_CORRECTION_WORDS = [
    "wait",
    "actually",
    "on",
    "correction",
    "reconsider",
    "re",
    "i",
    "let",
    "initially",
    "at",
    "first",
    "listen",
]
_CORRECTION_WORDS += [w for words in ANSWER_WORDS.values() for w in words.correction]
_CORRECTION = re.compile(
    # (the lookahead: the first characters any branch can start with, so other positions are passed over at once)
    "(?=["
    + re.escape("".join(sorted({c for w in _CORRECTION_WORDS for c in (w[0].lower(), w[0].upper())})))
    + "等不重一잠다처い待訂最])"
    r"(?:(?i:\b(?:wait|actually|on\s+second\s+thought|on\s+reflection|correction|reconsider\w*|re-?evaluat\w*"
    r"|i\s+made\s+a\s+mistake|let\s+me\s+re-?check|initially|at\s+first|first\s+thought|on\s+closer"
    r"|listen(?:ed|ing)?\s+again)\b)|等等|不对|重新考虑|一开始|잠깐|다시\s*생각|처음에는|いや|待って|訂正|最初は"
    r"|(?i:(?<!\w)" + "|".join(re.escape(w) for words in ANSWER_WORDS.values() for w in words.correction) + r"(?!\w)))"
)
# the letter a correction ends on: sentence-final, within a few words ("Wait, no, C.", "Espera, no, es C.")
_LETTER_AFTER_CORRECTION = re.compile(
    r"(?:[ \t,;:\.—–-]|(?i:(?<!\w)(?:no|non|nein|não|nao|nee|нет|لا|it'?s|it’s|it\s+is|c'est|c’est|es|ist|est|é|è|is"
    r"|la|el|le|die|der|I\s+think|I\s+mean|rather|sorry|perdón|pardon|entschuldigung)(?!\w)))*"
    + r"[\(\[]?([A-Z])[\)\]]?(?=\s*[\.!。]?\s*$|\s*[\.!。]\s)",
    re.M,
)
_WHOLE = re.compile(
    r"^(?:(?i:option|choice|letter|answer)(?:\s*:\s*|\s+|(?=[\(\[]))|(?:选项|選択肢|보기|선택지)\s*"
    + rf"|(?i:{_WORLD_OPTION}|{_WORLD_ANSWER})(?:\s*:\s*|\s+|(?=[\(\[])))?"
    r"[\(\[【「]?\s*([A-Za-z])\s*[\)\]】」]?\s*(?:选项|项|번)?\s*[\.\):。:]?$"
)
_LETTER_LIST = re.compile(r"^[\(\[]*([A-Z])[\)\]]*\s*(?:or|and|/|,|或者?|和|또는)\s*[\(\[]*([A-Z])[\)\]]*[\.。]?$")
_LEADING = re.compile(
    r"^(?:(?i:(?:option|choice)(?:\s+|(?=[\(\[])))[\(\[]?([A-Za-z])[\)\]]?(?:\s*[\.\):]\s*|\s+[-–—]\s*|\s+(?=\())"
    r"|\(([A-Za-z])\)\s*"
    r"|([A-Z])(?:\s*[\.\):]\s*|\s+[-–—]\s*|\s+(?=\()|,\s+(?![A-Z](?![A-Za-z]))))(?=\S)"
)
_ENUMERATED = re.compile(r"(?:^|(?<=[\.!?。]\s))\s*[\(\[]?([A-Z])(?:[\.\):]|\s+[-–—])\s", re.M)
_PARENTHESISED = re.compile(_NOT_LETTER_BEFORE + r"\(([A-Z])\)\s*[^\s\.,;:]")
_BOLD = re.compile(r"\*\*\s*\(?([A-Z])\)?\s*\*\*")
_HEDGED = re.compile(
    r"(?=[\(A-Z])"
    + _NOT_LETTER_BEFORE
    + r"\(?([A-Z])\)?\s*,?\s*(?:"
    + _OR_AND
    + r"|/|或者?|或|또는|または|か)\s*"
    + _OPTION_WORD
    + r"\(?([A-Z])\)?"
    + _NOT_LETTER_AFTER
)
_EMPHASIS = re.compile(
    r"(?=[\*_\(【「])(?:\*\*\s*\(?([A-Z])\)?\s*\*\*|__\s*([A-Z])\s*__|"
    + _NOT_LETTER_BEFORE
    + r"\(([A-Z])\)|【([A-Z])】|「([A-Z])」)"
)
# an option named in passing: "Option A (Sydney)", "option B is", "la opción C"
_DISCUSSED = re.compile(rf"(?i:\b(?:option|choice)\s+|{_WORLD_OPTION}\s+)\(?([A-Z])(?![A-Za-z0-9])")
_DISCUSSED_SUBJECT = re.compile(r"(?i:option|choice)\s+\(?[A-Z]\)?\s*\([^)\n]{1,80}\)\s*,?\s*[a-z]")
_WORD_AFTER = re.compile(r"\s+([a-z][a-z'’]*)")
_CONNECTIVES = {
    "because", "since", "as", "is", "was", "would", "should", "seems", "appears", "which", "for", "given",
    "due", "and", "or", "but", "with", "from", "based", "according", "in", "on", "here", "there", "then", "so",
}  # fmt: skip
_CUE_GUARD = re.compile(r"(?i:\b(?:whether|if)\s+(?:the\s+|my\s+|your\s+)?)$")
_CONDITIONAL = re.compile(r"(?i:\b(?:if|unless)\b(?!\s+(?:I\s+(?:had|have|must)|forced|pressed)))")
_NEGATION_WORD = re.compile(r"(?i:\b(?:not|never|no|isn'?t|isn’t|wasn'?t|neither|nor)\b)|不是|不|并非")
_NEGATED_AFTER = re.compile(
    r"\s*(?:이|가|은|는)?\s*(?:아니|아닙|틀)|\s*(?:は|が)?\s*(?:ではな|じゃな|ではありま|間違)|\s*(?:不对|错)"
)
# the smaller patterns of the rules below
_MARKDOWN_EMPHASIS = re.compile(r"\*+|__+|`+")
_MARKDOWN_LINE_MARKERS = re.compile(r"(?m)^[ \t]*(?:#{1,6}|>+)[ \t]*")
_ABBREVIATION_OR_APOSTROPHE = re.compile(r"\.[A-Za-z]|['’][A-Za-z]")
_SPACE_AND_WORD = re.compile(r"\s+\w")
_WOULD = re.compile(r"(?i:would)")
_BRACKETED_LETTER = re.compile(r"^\(?([A-Za-z])\)?(?:$|[\.\):]\s*\S|\s+[-–—])")
_SENTENCE_END = re.compile(r"[\.!?。\n]")
_CONDITION_AFTER = re.compile(r"\s*,?\s*(?i:if|unless)\b")
_NONBLANK_LINE = re.compile(r"[^\n]*\S[^\n]*")
_SPACES = re.compile(r"\s+")
_QUOTES = re.compile(r"[\"'“”‘’]+")
_LETTER_AND_TEXT = re.compile(r"([A-Z])\s+(\S.*)$")
_GLUE_AFTER_LETTER = re.compile(r"^[\s\)\]】」\.:\-–—,\"'“”]*")
_LISTED_OPTION = re.compile(r"\s*[\(\[]?[A-Za-z][\)\]\.:]")
_CLAUSE_END = re.compile(r"[\.,;!?。，；]")
_PARENTHESIS = re.compile(r"^\(([^)]*)\)")
_WORD = re.compile(r"\w+")
_NUMBER = re.compile(r"\d+")
_LOWER_LATIN = re.compile(r"[a-z]")
_SENTENCE_BREAK = re.compile(r"[\.!?。](?:\s|$)")
_UP_TO_ANSWER_CUE = re.compile(
    r"(?is)^.*\b(?:final\s+|correct\s+)?answer(?:\s+is|\s+would\s+be)?\s*[:\-]?\s*"
    r"|^.*(?:答案(?:是|为)?|정답(?:은|는)?|答え(?:は)?|正解(?:は)?)\s*:?\s*"
)
_CLAUSE_BREAK = re.compile(r"[,.;:!?。，；\n]")
_ARTICLES = {"the", "a", "an"}
_STOPWORDS = _ARTICLES | {
    "at",
    "in",
    "on",
    "of",
    "to",
    "is",
    "are",
    "was",
    "and",
    "or",
    "for",
    "with",
    "by",
    "it",
    "be",
}

_NEUTRAL_PHRASES = (
    "cannot be determined",
    "can't be determined",
    "can not be determined",
    "cannot determine",
    "can't determine",
    "unable to determine",
    "not possible to determine",
    "impossible to determine",
    "无法确定",
    "不能确定",
    "无法判断",
    "不能判断",
    "알 수 없",
    "판단할 수 없",
    "확인할 수 없",
    "判断できません",
    "特定できません",
    "判断できない",
)
_REFUSAL_PHRASES = (
    "i cannot answer",
    "i can't answer",
    "i can not answer",
    "i'm unable",
    "i am unable",
    "i cannot help",
    "i can't help",
    "i won't",
    "i will not",
    "i cannot choose",
    "i can't choose",
    "i don't know",
    "i do not know",
    "none of the options",
    "none of the above",
    "i'm sorry",
    "i am sorry",
    "as an ai",
    "i cannot hear",
    "i can't hear",
    "i cannot listen",
    "i can't listen",
    "i cannot process",
    "i can't process",
    "i cannot access",
    "i can't access",
    "i don't have access",
    "i do not have access",
    "i'm not able",
    "i am not able",
    "i can't tell",
    "i can't identify",
    "i cannot identify",
    "i can't assist",
    "i cannot assist",
    "i cannot tell",
    "i cannot provide",
    "i can't provide",
    "i don't have the ability",
    "i do not have the ability",
    "无法回答",
    "不能回答",
    "我无法",
    "我不能",
    "无法听",
    "无法处理",
    "无法访问",
    "听不到",
    "抱歉",
    "对不起",
    "답변할 수 없",
    "답할 수 없",
    "들을 수 없",
    "대답할 수 없",
    "모르겠",
    "죄송",
    "申し訳",
    "お答えできません",
    "答えられません",
    "わかりません",
    "分かりません",
    "聞くことができません",
    "聞き取れません",
)


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


def normalize(text: str) -> str:
    text = unicodedata.normalize("NFKC", text)
    return text.replace("\u200b", "").replace("\ufeff", "")


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
# cleaning


_THINK = re.compile(r"(?is)<think>.*?</think>")
_ANSWER_TAG = re.compile(r"(?is)<answer>\s*(.*?)\s*</answer>")
_LATEX = (
    (re.compile(r"\\(?:textbf|mathbf|bm|boldsymbol)\s*\{([^{}]*)\}"), r"**\1**"),
    (re.compile(r"\\(?:text|mathrm|textrm|mathit|textit|emph|operatorname|mbox)\s*\{([^{}]*)\}"), r"\1"),
    (re.compile(r"\\(?:boxed|fbox)\s*\{([^{}]*)\}"), r"[[\1]]"),
)
_MATH_DELIMITERS = re.compile(r"\\[\[\]\(\)]|\$")
# a structured reply's answer field: {"answer": "D"}, {'final_answer': '(B)'}, "answer": "C) Paris"
_JSON_ANSWER = re.compile(
    r"[\"'](?i:final[_ ]?answer|correct[_ ]?answer|answer|choice|option|selected[_ ]?option|selection|letter"
    r"|prediction|respuesta|antwort|réponse|resposta|risposta|الإجابة)[\"']\s*:\s*[\"']\s*\(?([A-Za-z])[\)\.:]?"
    r"((?:\s+[^\"'\n{}]*)?)[\"']"
)
_NATIVE_TO_LATIN = {
    native: latin for script in NATIVE_LETTERS.values() for latin, native in zip(LETTERS, script) if native != "В"
}
_NATIVE_LOWER = {native.lower(): latin for native, latin in _NATIVE_TO_LATIN.items() if native.lower() != native}
_NATIVE_LETTER = re.compile(
    "|".join(
        re.escape(letter)
        for letter in sorted([*_NATIVE_TO_LATIN, *_NATIVE_LOWER, "В", "в", *HOMOGLYPHS], key=len, reverse=True)
    )
)
# words after which a native letter followed by a word is still an option letter ("الإجابة هي ب لأن …")
_LEAD_WORDS = frozenset(
    unicodedata.normalize("NFKC", word).lower()
    for words in ANSWER_WORDS.values()
    for word in words.answer + words.copula + words.option + words.correct + words.final
)
_WORD_BEFORE = re.compile(r"(\w+)\s*$")
_CYRILLIC_ORDER = frozenset("БГД")


def _is_word_char(char: str) -> bool:
    return bool(char) and unicodedata.category(char)[0] in "LMN"


def _native_readings(text: str) -> list[str]:
    """The reply with option letters of other scripts (ج, Б, Γ, ב, ख, ሐ …) written as A–E; two readings when
    it has a lone Cyrillic В (B by shape, C by the alphabet) and no other Cyrillic letter says which."""
    if text.isascii():
        return [text]
    found: list[tuple[int, int, str]] = []
    order = False  # a lone Б, Г or Д: the reply letters by the Cyrillic alphabet, so В is C
    for match in _NATIVE_LETTER.finditer(text):
        start, end, letter = match.start(), match.end(), match.group(0)
        before, after = text[start - 1 : start], text[end : end + 1]
        if _is_word_char(before) or _is_word_char(after) or after == "\u0640":
            continue  # part of a word
        order = order or letter in _CYRILLIC_ORDER
        if letter in _NATIVE_LOWER or letter == "в":
            if after != ")":
                continue  # a lower-case letter only as a label: "в)", "(β)"
        elif re.match(r"\s+\w", text[end : end + 3]) and not _leads(text[:start]):
            continue  # "В этом случае": a word, not a letter
        found.append((start, end, letter))
    if not found:
        return [text]
    vees = [latin for latin in ("C",) if order] or (["B", "C"] if any(f[2] in "Вв" for f in found) else ["C"])
    readings = []
    for vee in vees:
        pieces, position = [], 0
        for start, end, letter in found:
            upper = letter.upper() if letter in "вВ" else letter
            latin = vee if upper == "В" else _NATIVE_TO_LATIN.get(letter) or _NATIVE_LOWER.get(letter)
            latin = latin or HOMOGLYPHS[letter]
            pieces += [text[position:start], latin]
            position = end
        readings.append("".join(pieces) + text[position:])
    return readings


def _leads(before: str) -> bool:
    """Whether the text before a letter ends in a colon, a bracket or an answer word ('هي', 'گزینه')."""
    stripped = before.rstrip()
    if stripped[-1:] in (":", "(", "-", "–", "—"):
        return True
    word = _WORD_BEFORE.search(stripped)
    return bool(word) and word.group(1).lower() in _LEAD_WORDS


def _clean(raw: str) -> str:
    text = normalize(raw)
    if '"' in text or "'" in text:
        text = _JSON_ANSWER.sub(r"\nFinal answer: \1\2\n", text)
    if "<" in text:
        text = _ANSWER_TAG.sub(r"[[\1]]", _THINK.sub("\n", text))
    if "\\" in text:
        for _ in range(3):  # nested \boxed{\text{C}}
            for pattern, replacement in _LATEX:
                text = pattern.sub(replacement, text)
    if "\\" in text or "$" in text:
        text = _MATH_DELIMITERS.sub(" ", text)
    return text.strip()


def _plain(text: str) -> str:
    """Markdown decoration removed (same line structure), for the statement rules."""
    if "*" in text or "_" in text or "`" in text:
        text = _MARKDOWN_EMPHASIS.sub("", text)
    if "#" in text or ">" in text:
        text = _MARKDOWN_LINE_MARKERS.sub("", text)
    return text


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
