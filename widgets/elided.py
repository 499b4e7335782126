"""Text cut to the room it has with an ellipsis, never mid-letter, and shown whole on demand."""

from __future__ import annotations

from PySide6.QtCore import QEvent, QSize, Qt
from PySide6.QtGui import QPalette
from PySide6.QtWidgets import QComboBox, QStyle, QStyleOptionComboBox, QStylePainter, QToolTip

LEAST_CHARACTERS = 8  # an elided box's least width is at most this many average characters (and its arrow)


class ElidedComboBox(QComboBox):
    """A combo box whose chosen text, where wider than the box, ends in '…' with the whole text in its tooltip
    (before the box's own tooltip, if it has one). Qt cut it mid-letter: *Simulated listener: steady
    (simulated, offl* on Evaluate at 1280×720; a sound device's or a model's long name likewise. QComboBox's own
    paint, with the label's text elided to the edit field.

    Its least width is at most LEAST_CHARACTERS wide, whatever its items (its size hint still asks for them
    whole): Qt's is its longest item's when the box was filled before it was first shown and next to nothing when
    filled after, so Evaluate's form needed 357 pixels for *none (only the orders above)* and scrolled sideways
    beside the guided tour on a laptop."""

    elided = False  # whether the text shown is cut: the tooltip then shows all of it

    def minimumSizeHint(self) -> QSize:  # noqa: N802 - Qt's name
        hint = super().minimumSizeHint()
        option = QStyleOptionComboBox()
        self.initStyleOption(option)
        text = QSize(LEAST_CHARACTERS * self.fontMetrics().averageCharWidth(), self.fontMetrics().height())
        least = self.style().sizeFromContents(QStyle.ContentsType.CT_ComboBox, option, text, self)
        return QSize(min(hint.width(), least.width()), hint.height())

    def paintEvent(self, event) -> None:  # noqa: N802 - Qt's name
        if self.isEditable() or self.currentIndex() < 0:  # a line edit draws the text; a placeholder is Qt's own
            self.elided = False
            super().paintEvent(event)
            return
        painter = QStylePainter(self)
        painter.setPen(self.palette().color(QPalette.ColorRole.Text))
        option = QStyleOptionComboBox()
        self.initStyleOption(option)
        painter.drawComplexControl(QStyle.ComplexControl.CC_ComboBox, option)
        field = self.style().subControlRect(
            QStyle.ComplexControl.CC_ComboBox, option, QStyle.SubControl.SC_ComboBoxEditField, self
        )
        room = field.width() - 2 - (0 if option.currentIcon.isNull() else option.iconSize.width() + 4)
        whole = option.currentText
        option.currentText = self.fontMetrics().elidedText(whole, Qt.TextElideMode.ElideRight, max(room, 0))
        self.elided = option.currentText != whole
        painter.drawControl(QStyle.ControlElement.CE_ComboBoxLabel, option)

    def event(self, event) -> bool:
        """The tooltip: the whole text where it is cut, before the box's own tooltip if it has one."""
        if event.type() == QEvent.Type.ToolTip and self.elided:
            QToolTip.showText(event.globalPos(), "\n".join(filter(None, (self.currentText(), self.toolTip()))), self)
            return True
        return super().event(event)
