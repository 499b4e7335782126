"""Whether this machine has a font for each language's script. Qt falls back across the installed fonts, but with
none for Korean or Chinese it draws every character as a box: an annotator could not read the text to check the
clip against. The app says so, naming the languages and how to get a font, instead of showing boxes silently."""

from __future__ import annotations

from collections.abc import Iterable

from PySide6.QtGui import QFontDatabase

_SYSTEM = QFontDatabase.WritingSystem
# ISO 639-1 codes (Global-MMLU's languages among them) → the script Qt must find a font for; Latin-script
# languages are left out: every desktop has a Latin font
WRITING_SYSTEMS = {
    "ar": _SYSTEM.Arabic, "fa": _SYSTEM.Arabic, "ur": _SYSTEM.Arabic, "ps": _SYSTEM.Arabic,
    "he": _SYSTEM.Hebrew, "yi": _SYSTEM.Hebrew,
    "ru": _SYSTEM.Cyrillic, "uk": _SYSTEM.Cyrillic, "bg": _SYSTEM.Cyrillic, "sr": _SYSTEM.Cyrillic,
    "ky": _SYSTEM.Cyrillic, "kk": _SYSTEM.Cyrillic, "mk": _SYSTEM.Cyrillic, "be": _SYSTEM.Cyrillic,
    "el": _SYSTEM.Greek, "hy": _SYSTEM.Armenian, "ka": _SYSTEM.Georgian,
    "hi": _SYSTEM.Devanagari, "mr": _SYSTEM.Devanagari, "ne": _SYSTEM.Devanagari,
    "bn": _SYSTEM.Bengali, "pa": _SYSTEM.Gurmukhi, "gu": _SYSTEM.Gujarati, "or": _SYSTEM.Oriya,
    "ta": _SYSTEM.Tamil, "te": _SYSTEM.Telugu, "kn": _SYSTEM.Kannada, "ml": _SYSTEM.Malayalam,
    "si": _SYSTEM.Sinhala, "th": _SYSTEM.Thai, "lo": _SYSTEM.Lao, "my": _SYSTEM.Myanmar, "km": _SYSTEM.Khmer,
    "zh": _SYSTEM.SimplifiedChinese, "ja": _SYSTEM.Japanese, "ko": _SYSTEM.Korean,
}  # fmt: skip
CJK = {"zh", "ja", "ko"}


def languages_without_font(languages: Iterable[str]) -> list[str]:
    """The languages (as given: 'ko', 'zh-TW') whose script no installed font covers, sorted."""
    missing = set()
    for language in languages:
        system = WRITING_SYSTEMS.get(_base(language))
        if system is not None and not QFontDatabase.families(system):
            missing.add(language)
    return sorted(missing)


def missing_font_advice(missing: list[str]) -> str:
    """What to tell the user: which languages show as boxes, and the fonts that fix it."""
    base = {_base(language) for language in missing}
    packages = (["fonts-noto-cjk"] if base & CJK else []) + (["fonts-noto-core"] if base - CJK else [])
    return (
        f"No font on this machine shows {', '.join(missing)} text: it appears as boxes, so it cannot be read or "
        f"checked against the audio. Install one (Debian/Ubuntu: apt-get install {' '.join(packages)}; Windows and "
        "macOS include them) and restart the app."
    )


def _base(language: str) -> str:
    """'zh-TW', 'zh_TW' and 'ZH' are Chinese: the ISO 639-1 code of a language tag."""
    return str(language).split("-")[0].split("_")[0].lower()
