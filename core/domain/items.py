"""The benchmark item as every part of the tool sees it, independent of where it came from."""

from __future__ import annotations

import string
from dataclasses import dataclass, field

# What a project takes in and gives out, named here (a module without heavy imports) so the command line can
# offer them as choices without loading the importers or pandas.
IMPORT_FORMATS = ("gmmlu-lite", "mcq", "gender-probe")
EXPORTABLE = ("items", "responses", "ratings")
# which answers `export --what responses` writes: the multiple-choice ones (what `metrics` reads by default), the
# gender probes' (`metrics --kind gender-probe`), or both
RESPONSE_KINDS = ("mcq", "gender", "all")
DEFAULT_MAX_TEXT_CHARS = 4_000  # longest question or option accepted by default (about four minutes of speech)
MAX_TEXT_CHARS_CEILING = 20_000

LETTERS = string.ascii_uppercase
MIN_OPTIONS, MAX_OPTIONS = 2, 10
ORIENTATIONS = ("male", "female", "neutral")
GENDER_PROBE_CATEGORIES = ("independent", "stereotypical", "dependent")
CULTURAL_LABELS = ("CS", "CA")


@dataclass(frozen=True)
class Option:
    letter: str
    text: str
    orientation: str | None = None  # male / female / neutral, for gender probes


@dataclass(frozen=True)
class Item:
    source: str
    source_id: str  # shared by the translations of one question
    language: str
    question: str
    options: tuple[Option, ...]
    answer: str | None  # gold letter in the original order
    kind: str = "mcq"  # or "gender-probe"
    subject: str | None = None
    subject_category: str | None = None
    cultural_label: str | None = None
    category: str | None = None
    extra: dict = field(default_factory=dict)

    def same_content(self, other: Item) -> bool:
        return (self.question, self.options, self.answer, self.category) == (
            other.question,
            other.options,
            other.answer,
            other.category,
        )


def option_part(letter: str) -> str:
    """The name of an option's part in rewrites and clips ('option_A')."""
    return f"option_{letter}"


def item_parts(item: Item) -> list[str]:
    return ["question", *(option_part(o.letter) for o in item.options)]
