"""Right-to-left text in the app's tables. A label or text box lays out each paragraph in the direction of its
first strong character (Qt's default), but an item view lays every cell out in the view's direction: an Arabic or
Hebrew question in the Items table read left to right, its final '؟' or '?' at the wrong end, '(H2O)' and
numbers moved to the wrong side, and an elided cell cut at its beginning. `follow_text_direction` gives a view
the delegate that lays each cell out as a paragraph is (Unicode's rule P2-P3), right-aligned when right-to-left,
as spreadsheets do."""

from __future__ import annotations

import functools
import unicodedata

from PySide6.QtCore import QModelIndex, QPersistentModelIndex, Qt
from PySide6.QtWidgets import QAbstractItemView, QStyledItemDelegate, QStyleOptionViewItem

RIGHT_TO_LEFT_CLASSES = frozenset({"R", "AL"})  # Hebrew, Arabic, Syriac, Thaana, N'Ko … letters
FIRST_STRONG_ISOLATE, POP_DIRECTIONAL_ISOLATE = "\u2068", "\u2069"


@functools.lru_cache(maxsize=4096)  # a table repaints its visible cells often; their texts repeat
def is_right_to_left(text: str) -> bool:
    """Whether a paragraph of `text` is right-to-left: its first strong character (a letter; digits and
    punctuation are skipped) is Hebrew, Arabic or another right-to-left script's."""
    for character in text:
        direction = unicodedata.bidirectional(character)
        if direction == "L":
            return False
        if direction in RIGHT_TO_LEFT_CLASSES:
            return True
    return False


def has_right_to_left(text: str) -> bool:
    """Whether any letter of `text` is of a right-to-left script."""
    return any(unicodedata.bidirectional(character) in RIGHT_TO_LEFT_CLASSES for character in text)


@functools.lru_cache(maxsize=4096)
def isolated(text: str) -> str:
    """`text` laid out in its own direction inside a line that is not (after 'whisper: ' or 'A. '): wrapped in
    Unicode's first-strong isolate when it holds right-to-left letters, so an Arabic transcript keeps its '؟' and
    '(H2O)' where Arabic puts them instead of taking the line's left-to-right order. Other text is left as is (the
    marks are invisible, but would be copied with a selection)."""
    if has_right_to_left(text):
        return f"{FIRST_STRONG_ISOLATE}{text}{POP_DIRECTIONAL_ISOLATE}"
    return text


def isolated_option(option: str) -> str:
    """An option as items are listed, 'A. text', with its text `isolated`."""
    label, separator, text = option.partition(". ")
    return f"{label}{separator}{isolated(text)}" if separator else isolated(option)


class TextDirectionDelegate(QStyledItemDelegate):
    """Each cell laid out in its own text's direction (see the module's docstring)."""

    def initStyleOption(self, option: QStyleOptionViewItem, index: QModelIndex | QPersistentModelIndex) -> None:
        super().initStyleOption(option, index)
        if option.text and is_right_to_left(option.text):
            option.direction = Qt.LayoutDirection.RightToLeft


def follow_text_direction(view: QAbstractItemView) -> None:
    """Give `view` the delegate that lays each cell out in its text's direction."""
    view.setItemDelegate(TextDirectionDelegate(view))
