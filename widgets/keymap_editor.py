"""The rating key map as an editable table: one row per action, its keys as text ("Space, R"). The table only
edits; `validate_keymap` in core decides what is allowed (a key bound twice, a rating without a key)."""

from __future__ import annotations

from collections.abc import Mapping

from PySide6.QtWidgets import QAbstractItemView, QHeaderView, QTableWidget, QTableWidgetItem

from spokenbench.core.qc.rating_session import DEFAULT_KEYMAP
from spokenbench.widgets.rating_view import ACTION_LABELS

KEY_SEPARATOR = ", "


def editable_keys(keys: tuple[str, ...] | list[str]) -> str:
    """Keys as the table edits them (the rating screen shows them joined by ' / ')."""
    return KEY_SEPARATOR.join(keys)


def parse_keys(text: str) -> list[str]:
    """'Space, R' → ['Space', 'R']; a lone ',' is the comma key."""
    if text.strip() == ",":
        return [","]
    return [part.strip() for part in text.split(",") if part.strip()]


class KeymapEditor(QTableWidget):
    def __init__(self, parent=None):
        super().__init__(len(DEFAULT_KEYMAP), 3, parent)
        self.setHorizontalHeaderLabels(["Action", "Keys", "Default"])
        self.verticalHeader().hide()
        self.setEditTriggers(
            QAbstractItemView.EditTrigger.DoubleClicked
            | QAbstractItemView.EditTrigger.EditKeyPressed
            | QAbstractItemView.EditTrigger.AnyKeyPressed
        )
        self.actions = list(DEFAULT_KEYMAP)
        for row, action in enumerate(self.actions):
            label = QTableWidgetItem(ACTION_LABELS.get(action, action))
            label.setToolTip(action)
            default = QTableWidgetItem(editable_keys(DEFAULT_KEYMAP[action]))
            for item in (label, default):
                item.setFlags(item.flags() & ~item.flags().ItemIsEditable)
            self.setItem(row, 0, label)
            self.setItem(row, 2, default)
            self.setItem(row, 1, QTableWidgetItem(editable_keys(DEFAULT_KEYMAP[action])))
        header = self.horizontalHeader()
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(1, QHeaderView.ResizeMode.Stretch)
        header.setSectionResizeMode(2, QHeaderView.ResizeMode.ResizeToContents)
        self.setToolTip("Double-click the keys of an action to change them; separate several keys with commas.")

    def set_keymap(self, keymap: Mapping[str, tuple[str, ...]]) -> None:
        for row, action in enumerate(self.actions):
            self.item(row, 1).setText(editable_keys(keymap.get(action, ())))

    def set_keys(self, action: str, text: str) -> None:
        self.item(self.actions.index(action), 1).setText(text)

    def restore_defaults(self) -> None:
        self.set_keymap(DEFAULT_KEYMAP)

    def keymap(self) -> dict[str, list[str]]:
        """What the table says now: action → keys, as typed (core validates)."""
        return {action: parse_keys(self.item(row, 1).text()) for row, action in enumerate(self.actions)}
