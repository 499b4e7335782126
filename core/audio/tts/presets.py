"""TTS presets (models, prices, limits) and prompt templates, read from resources/tts/ so a retired model or
a better wording is a data change. A project may override a template (stored in its project_meta)."""

from __future__ import annotations

import functools
import importlib.resources
import json

from spokenbench.core.domain.conditions import DEFAULT_ACCENT
from spokenbench.core.foundation.errors import SpokenBenchError

LANGUAGE_NAMES = {"en": "English", "zh": "Mandarin Chinese", "ko": "Korean"}
ACCENT_NAMES = {
    "american": "General American",
    "british": "British Received Pronunciation",
    "indian": "Indian English",
    "beijing": "Beijing Mandarin",
    "northeastern": "Northeastern (Dongbei) Mandarin",
    "seoul": "Seoul standard Korean",
    "jeolla": "Jeolla dialect Korean",
    DEFAULT_ACCENT: "standard",  # a language beyond the studies, in its one accent
}
# BCP-47 codes for the speech config's language field, by (language, accent).
LANGUAGE_CODES = {
    ("en", "american"): "en-US",
    ("en", "british"): "en-GB",
    ("en", "indian"): "en-IN",
    ("zh", "beijing"): "cmn-CN",
    ("zh", "northeastern"): "cmn-CN",
    ("ko", "seoul"): "ko-KR",
    ("ko", "jeolla"): "ko-KR",
}


def _resource(name: str) -> str:
    return (importlib.resources.files("spokenbench.resources") / "tts" / name).read_text(encoding="utf-8")


@functools.cache
def tts_presets() -> dict:
    return json.loads(_resource("presets.json"))


@functools.cache
def tts_languages() -> dict:
    """resources/tts/languages.json: the languages beyond en, zh and ko each API backend speaks, and their names."""
    return json.loads(_resource("languages.json"))


def language_name(language: str) -> str:
    """The English name a prompt says ('Arabic' for ar, 'Brazilian Portuguese' for pt-br); the code if unknown."""
    names = tts_languages()["names"]
    return LANGUAGE_NAMES.get(language) or names.get(language) or names.get(language.split("-")[0], language)


def default_accent_languages(provider: str) -> dict[str, str | None]:
    """The languages `provider` speaks in DEFAULT_ACCENT (beyond the studies'), each with the language code its
    request sends (None: the language is only named in the prompt)."""
    listed = tts_languages()[provider]
    codes = listed if isinstance(listed, dict) else dict.fromkeys(listed)
    studied = {language for language, _ in LANGUAGE_CODES}
    return {language: code for language, code in codes.items() if language not in studied}


def default_template(name: str) -> str:
    return _resource(name)


def model_settings(provider: str, model: str | None) -> tuple[str, dict]:
    presets = tts_presets()[provider]
    model = model or presets["default_model"]
    return model, presets["models"].get(model, {})


TEMPLATE_FIELDS = ("text", "language_name", "accent_name")


def check_template_fields(template: str) -> None:
    """A template (possibly from a colleague's project) may name only the three fields, plainly: no attribute or
    index access (`{text.__class__}`), conversion or format spec (`{text:>999999999}` would take a gigabyte)."""
    import string

    try:
        fields = [(name, spec, conversion) for _, name, spec, conversion in string.Formatter().parse(template)]
    except ValueError as error:
        raise SpokenBenchError(f"the TTS prompt template is invalid ({error})") from None
    for name, spec, conversion in fields:
        if name is not None and (name not in TEMPLATE_FIELDS or spec or conversion):
            shown = "{" + name + (f"!{conversion}" if conversion else "") + (f":{spec}" if spec else "") + "}"
            raise SpokenBenchError(
                f"the TTS prompt template is invalid ({shown[:80]}); it may use {{text}}, {{language_name}} and "
                "{accent_name}, plainly"
            )


def render_template(template: str, text: str, language: str, accent: str | None) -> str:
    check_template_fields(template)
    try:
        return template.format(
            text=text,
            language_name=language_name(language),
            accent_name=ACCENT_NAMES.get(accent or "", accent or "standard"),
        )
    except (KeyError, IndexError, ValueError) as error:
        raise SpokenBenchError(
            f"the TTS prompt template is invalid ({error}); it may use {{text}}, {{language_name}} and {{accent_name}}"
        ) from None
