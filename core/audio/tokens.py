"""Instruction tokens: the spoken labels "question" and "A".."D" that frame each segment (BiasInEar Appendix
C.2). They are synthesized once per language, accent and voice and reused across all items. The paper spoke
them in English for every language; `native` uses the item language's own word for "question"."""

from __future__ import annotations

from spokenbench.core.domain.items import LETTERS

QUESTION_WORD = {"en": "Question", "zh": "问题", "ko": "질문"}
TOKEN_LANGUAGES = ("english", "native")


def token_part(label: str) -> str:
    """Clip part name of a token: 'token:question', 'token:A'."""
    return f"token:{label}"


def token_texts(language: str, option_count: int = 4, token_language: str = "english") -> dict[str, str]:
    """label -> text to speak, for 'question' and the option letters."""
    word_language = "en" if token_language == "english" else language.split("-")[0]
    texts = {"question": QUESTION_WORD.get(word_language, QUESTION_WORD["en"])}
    texts.update({letter: letter for letter in LETTERS[:option_count]})
    return texts


def has_question_word(language: str) -> bool:
    """Whether the native word for "question" is known in `language` (else native tokens cannot be spoken)."""
    return language.split("-")[0] in QUESTION_WORD


def token_voice_source(language: str, accent: str | None, token_language: str = "english") -> tuple[str, str | None]:
    """(language, accent) the tokens are spoken in: English tokens keep an English item's accent and are
    American for other languages, as in the paper; native tokens follow the item."""
    if token_language == "native" or language == "en":
        return language, accent
    return "en", "american"
