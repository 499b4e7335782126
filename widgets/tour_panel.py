"""The guided tour's side panel (a thin view of core/tour.py): a step's title and text, where its numbers come from
(simulated or published, said plainly), and Back / Next / Skip. Keys: Alt+N or → next, Alt+B or ← back, Alt+S or
Esc skip (the arrows and Esc when the panel has the focus). It only asks; app/tour.py opens each step's page and
panel and points at it with `Highlight`."""

from __future__ import annotations

import html

from PySide6.QtCore import QEvent, QObject, Qt, Signal
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QPushButton, QScrollArea, QVBoxLayout, QWidget

from spokenbench.core.tour import TourStep

SIMULATED_STYLE = "background:#fdebd0; color:#7e4a05; border-radius:3px; padding:1px 5px; font-weight:bold"
PUBLISHED_STYLE = "background:#e5e8e8; color:#2c3e50; border-radius:3px; padding:1px 5px; font-weight:bold"
HIGHLIGHT_COLOR = "#e67e22"


def _paragraphs(text: str) -> str:
    return "".join(f"<p>{html.escape(part.strip())}</p>" for part in text.split("\n\n") if part.strip())


class TourPanel(QWidget):
    next_requested = Signal()
    back_requested = Signal()
    skip_requested = Signal()
    finish_requested = Signal()
    demo_requested = Signal()  # no project open: the user asks for the demo

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("tourPanel")
        self.steps: tuple[TourStep, ...] = ()
        self.index = -1
        self.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
        self.counter = QLabel()
        self.counter.setStyleSheet("color:#666")
        self.title = QLabel()
        self.title.setWordWrap(True)
        self.title.setTextFormat(Qt.TextFormat.RichText)
        self.text = QLabel()
        self.text.setWordWrap(True)
        self.text.setTextFormat(Qt.TextFormat.RichText)
        self.text.setAlignment(Qt.AlignmentFlag.AlignTop | Qt.AlignmentFlag.AlignLeft)
        self.simulated = QLabel()
        self.simulated.setWordWrap(True)
        self.simulated.setTextFormat(Qt.TextFormat.RichText)
        self.published = QLabel()
        self.published.setWordWrap(True)
        self.published.setTextFormat(Qt.TextFormat.RichText)
        self.note = QLabel()  # e.g. no project open: the panels are empty
        self.note.setWordWrap(True)
        self.note.setStyleSheet("color:#a04000")
        self.note.hide()
        self.demo_button = QPushButton("Open the demo project")
        self.demo_button.setToolTip("Build (the first time) or reuse the demo in your data folder and open it")
        self.demo_button.clicked.connect(self.demo_requested)
        self.demo_button.hide()

        body = QWidget()
        body_layout = QVBoxLayout(body)
        body_layout.setContentsMargins(10, 6, 10, 6)
        body_layout.addWidget(self.counter)
        body_layout.addWidget(self.title)
        body_layout.addWidget(self.text)
        sources = QFrame()
        sources.setFrameShape(QFrame.Shape.StyledPanel)
        sources_layout = QVBoxLayout(sources)
        sources_layout.setContentsMargins(8, 6, 8, 6)
        sources_layout.addWidget(QLabel("<b>Where the numbers come from</b>"))
        sources_layout.addWidget(self.simulated)
        sources_layout.addWidget(self.published)
        body_layout.addWidget(sources)
        body_layout.addWidget(self.note)
        body_layout.addWidget(self.demo_button, 0, Qt.AlignmentFlag.AlignLeft)
        body_layout.addStretch(1)
        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QFrame.Shape.NoFrame)
        scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        scroll.setWidget(body)

        self.back_button = QPushButton("◀ &Back")
        self.back_button.setToolTip("The previous step (Alt+B, or ← in this panel)")
        self.back_button.clicked.connect(self.back_requested)
        self.next_button = QPushButton("&Next ▶")
        self.next_button.setDefault(True)
        self.next_button.clicked.connect(self._next_clicked)
        self.skip_button = QPushButton("&Skip tour")
        self.skip_button.setToolTip("Close the tour; Help → Guided tour opens it again (Alt+S, or Esc in this panel)")
        self.skip_button.clicked.connect(self.skip_requested)
        buttons = QHBoxLayout()
        buttons.setContentsMargins(10, 4, 10, 8)
        buttons.addWidget(self.skip_button)
        buttons.addStretch(1)
        buttons.addWidget(self.back_button)
        buttons.addWidget(self.next_button)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(scroll, 1)
        layout.addLayout(buttons)

    def set_steps(self, steps: tuple[TourStep, ...]) -> None:
        self.steps = tuple(steps)
        self.index = -1

    @property
    def last(self) -> bool:
        return self.index == len(self.steps) - 1

    def show_step(self, index: int) -> None:
        self.index = index
        step = self.steps[index]
        self.counter.setText(f"Guided tour · step {index + 1} of {len(self.steps)}")
        self.title.setText(f"<h3 style='margin:2px 0'>{html.escape(step.title)}</h3>")
        self.text.setText(_paragraphs(step.text))
        self.simulated.setVisible(bool(step.simulated_note))
        self.simulated.setText(f"<span style='{SIMULATED_STYLE}'>SIMULATED</span> {html.escape(step.simulated_note)}")
        self.published.setVisible(bool(step.published_note))
        shown = "" if step.published else " (tick 'Published (paper)' above a figure to see them)"
        self.published.setText(
            f"<span style='{PUBLISHED_STYLE}'>PUBLISHED</span> {html.escape(step.published_note)}{html.escape(shown)}"
        )
        self.back_button.setEnabled(index > 0)
        self.next_button.setText("&Done" if self.last else "&Next ▶")
        self.next_button.setToolTip(
            "End the tour (Alt+D)" if self.last else "The next step (Alt+N, or → in this panel)"
        )

    def set_note(self, text: str | None, offer_demo: bool = False) -> None:
        self.note.setText(text or "")
        self.note.setVisible(bool(text))
        self.demo_button.setVisible(offer_demo)

    def _next_clicked(self) -> None:
        if self.last:
            self.finish_requested.emit()
        else:
            self.next_requested.emit()

    def keyPressEvent(self, event) -> None:
        key = event.key()
        if key in (Qt.Key.Key_Right, Qt.Key.Key_PageDown):
            self._next_clicked()
        elif key in (Qt.Key.Key_Left, Qt.Key.Key_PageUp):
            if self.index > 0:
                self.back_requested.emit()
        elif key == Qt.Key.Key_Escape:
            self.skip_requested.emit()
        else:
            super().keyPressEvent(event)


class Highlight(QFrame):
    """An orange frame drawn over a widget (the panel a step talks about), following its size; clicks pass
    through it."""

    def __init__(self) -> None:
        super().__init__()
        self.setObjectName("tourHighlight")
        self.setAttribute(Qt.WidgetAttribute.WA_TransparentForMouseEvents)
        self.setStyleSheet(f"#tourHighlight {{ border: 3px solid {HIGHLIGHT_COLOR}; border-radius: 4px; }}")
        self.target: QWidget | None = None
        self._filter = _FollowTarget(self)

    def point_at(self, target: QWidget | None) -> None:
        if self.target is not None:
            try:
                self.target.removeEventFilter(self._filter)
            except RuntimeError:  # the target was deleted (a page replaced)
                pass
        self.target = target
        if target is None:
            self.hide()
            self.setParent(None)
            return
        self.setParent(target)
        target.installEventFilter(self._filter)
        self.follow()
        self.show()
        self.raise_()

    def follow(self) -> None:
        if self.target is not None:
            self.setGeometry(self.target.rect())
            self.raise_()


class _FollowTarget(QObject):
    def __init__(self, highlight: Highlight):
        super().__init__(highlight)
        self.highlight = highlight

    def eventFilter(self, watched, event) -> bool:
        if event.type() in (QEvent.Type.Resize, QEvent.Type.Show, QEvent.Type.ChildAdded):
            self.highlight.follow()
        return False
