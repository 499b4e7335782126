"""A status bar's own line (the project's summary, the pack's state) that stays hidden under a passing message.

QStatusBar hides its normal widgets while a message shows, but lays them out again when the font changes (View →
Larger text) and its layout shows each widget it had hidden: the summary was drawn over 'Text size 150 %'."""

from __future__ import annotations

from PySide6.QtWidgets import QLabel, QStatusBar

from spokenbench.widgets.jobs_panel import ElidedLabel


class HiddenUnderMessage:
    """Mixed into a QWidget put in a QStatusBar with addWidget: not shown while the bar shows a message (the bar
    shows it again when the message goes)."""

    def setVisible(self, visible: bool) -> None:
        bar = self.parentWidget()
        if visible and isinstance(bar, QStatusBar) and bar.currentMessage():
            return
        super().setVisible(visible)


class StatusSummary(HiddenUnderMessage, ElidedLabel):
    """The window's summary line: elided, never widening the window."""


class StatusLabel(HiddenUnderMessage, QLabel):
    """A plain line of the status bar."""
