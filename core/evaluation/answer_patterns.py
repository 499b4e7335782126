"""The patterns parsing.py reads replies with: answer cues before and after a letter in English, Chinese,
Korean, Japanese and every language of answer_words.py, contrasts, alternatives, negations, corrections,
emphasis, and the refusal and neutral phrases. Compiled once, at import."""

from __future__ import annotations

import re
import unicodedata

from spokenbench.core.evaluation.answer_words import (
    ADVERBS,
    ANSWER_WORDS,
    OR_AND_WORDS,
)

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
