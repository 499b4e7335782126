"""The guided tour's side panel (a thin view of core/demo/tour.py): a step's title and text, where its numbers come from
(simulated or published, said plainly), and Back / Next / Skip. Keys: Alt+N or → next (Done on the last step),
Alt+B or ← back, Alt+S or Esc skip (the arrows when the panel has the focus; Esc anywhere no widget takes it). It only asks; app/tour.py opens each step's page and
panel and points at it with `Highlight`."""

from __future__ import annotations

import html

from PySide6.QtCore import QEvent, QObject, QPoint, QRect, Qt, Signal
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QPushButton, QTextBrowser, QVBoxLayout, QWidget

from spokenbench.core.demo.tour import TourStep
from spokenbench.widgets.tones import set_toned_sheet

SIMULATED_STYLE = "background:#fdebd0; color:#7e4a05; border-radius:3px; padding:1px 5px; font-weight:bold"
PUBLISHED_STYLE = "background:#e5e8e8; color:#2c3e50; border-radius:3px; padding:1px 5px; font-weight:bold"
HIGHLIGHT_COLOR = "#e67e22"
HIGHLIGHT_WIDTH = 3  # pixels, drawn just outside the framed widget


def _paragraphs(text: str) -> str:
    return "".join(f"<p>{html.escape(part.strip())}</p>" for part in text.split("\n\n") if part.strip())


def _note(note: str, prefix: str) -> str:
    """A source note without its leading 'Simulated:' / 'Published:' (the tag beside it says so)."""
    return note[len(prefix) :].lstrip() if note.startswith(prefix) else note


def step_html(step: TourStep) -> str:
    """A step as the panel shows it: title, text, and where its numbers come from."""
    parts = [f"<h3 style='margin-top:2px'>{html.escape(step.title)}</h3>", _paragraphs(step.text)]
    parts.append("<p style='margin-top:10px'><b>Where the numbers come from</b></p>")
    if step.simulated_note:
        parts.append(
            f"<p><span style='{SIMULATED_STYLE}'>&nbsp;SIMULATED&nbsp;</span> "
            f"{html.escape(_note(step.simulated_note, 'Simulated:'))}</p>"
        )
    if step.published_note:
        shown = "" if step.published else " Tick 'Published (paper)' above a figure to see them."
        parts.append(
            f"<p><span style='{PUBLISHED_STYLE}'>&nbsp;PUBLISHED&nbsp;</span> "
            f"{html.escape(_note(step.published_note, 'Published:'))}{html.escape(shown)}</p>"
        )
    if step.real_note:
        parts.append(f"<p><b>&nbsp;REAL&nbsp;</b> {html.escape(_note(step.real_note, 'Real:'))}</p>")
    return "".join(parts)


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
        set_toned_sheet(self.counter, "color: $muted")
        # the step as one rich-text document: wraps to any width and scrolls when the dock is short
        self.browser = QTextBrowser()
        self.browser.setObjectName("tourText")
        self.browser.setOpenLinks(False)
        self.browser.setFrameShape(QFrame.Shape.NoFrame)
        self.browser.setFocusPolicy(Qt.FocusPolicy.NoFocus)  # the keys stay with the panel
        self.browser.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.browser.document().setDocumentMargin(2)
        self.browser.setStyleSheet("QTextBrowser#tourText { background: transparent; }")
        self.note = QLabel()  # e.g. no project open: nothing to point at
        self.note.setWordWrap(True)
        set_toned_sheet(self.note, "color: $warning")
        self.note.hide()
        self.demo_button = QPushButton("Open the demo project")
        self.demo_button.setToolTip("Build (the first time) or reuse the demo in your data folder and open it")
        self.demo_button.clicked.connect(self.demo_requested)
        self.demo_button.hide()
        body = QVBoxLayout()
        body.setContentsMargins(10, 6, 10, 0)
        body.addWidget(self.counter)
        body.addWidget(self.browser, 1)
        body.addWidget(self.note)
        body.addWidget(self.demo_button, 0, Qt.AlignmentFlag.AlignLeft)

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
        layout.addLayout(body, 1)
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
        self.browser.setHtml(step_html(step))
        self.back_button.setEnabled(index > 0)
        self.next_button.setText("Do&ne" if self.last else "&Next ▶")  # Alt+N goes on, to the end
        self.next_button.setToolTip(
            "End the tour (Alt+N, or → in this panel)" if self.last else "The next step (Alt+N, or → in this panel)"
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
    """An orange frame drawn around a widget (the panel a step talks about), following its size and place;
    clicks pass through it. It sits on the widget's window (a child of a splitter would become a pane), just
    outside the widget, so it never covers the first letters of the text it frames."""

    def __init__(self) -> None:
        super().__init__()
        self.setObjectName("tourHighlight")
        self.setAttribute(Qt.WidgetAttribute.WA_TransparentForMouseEvents)
        self.setStyleSheet(
            f"#tourHighlight {{ border: {HIGHLIGHT_WIDTH}px solid {HIGHLIGHT_COLOR}; border-radius: 4px; }}"
        )
        self.target: QWidget | None = None
        self._watched: list[QWidget] = []  # the target and its parents, followed
        self._filter = _FollowTarget(self)

    def point_at(self, target: QWidget | None) -> None:
        for watched in self._watched:
            try:
                watched.removeEventFilter(self._filter)
            except RuntimeError:  # deleted (a page replaced)
                pass
        self._watched = []
        self.target = target
        if target is None:
            self.hide()
            self.setParent(None)
            return
        self.setParent(target.window())
        # the target and its parents: a parent that moves (a scroll area scrolled) moves the target with it
        widget = target
        while widget is not None and not widget.isWindow():
            widget.installEventFilter(self._filter)
            self._watched.append(widget)
            widget = widget.parentWidget()
        target.destroyed.connect(lambda _=None, gone=target: self._forget(gone))
        self.follow()

    def _forget(self, gone: QWidget) -> None:
        """The target was deleted (its page replaced): no frame around nothing."""
        if self.target is gone:
            self.target = None
            self.hide()

    def follow(self) -> None:
        """Match the target's place and size, and hide and show with it (the frame is not the target's child:
        the target's Hide and Show events, which Qt also sends when a page above it is switched, say when)."""
        if self.target is not None:
            self.setGeometry(self.frame_geometry(self.target))
            self.setVisible(self.target.isVisibleTo(self.target.window()))
            self.raise_()

    @staticmethod
    def frame_geometry(target: QWidget) -> QRect:
        """Where the frame goes in the window's coordinates: around the target's visible part (a scroll area
        shows part of a tall panel: the frame never runs over the status bar), just outside it."""
        window = target.window()
        if window is target:
            return target.rect()
        shown = target.rect()
        parent = target.parentWidget()
        while parent is not None:  # cut by every parent's bounds, in the target's coordinates
            shown = shown.intersected(QRect(-target.mapTo(parent, QPoint(0, 0)), parent.size()))
            if parent.isWindow():
                break
            parent = parent.parentWidget()
        if shown.isEmpty():
            shown = target.rect()
        margin = HIGHLIGHT_WIDTH
        corner = target.mapTo(window, shown.topLeft())
        return QRect(corner, shown.size()).adjusted(-margin, -margin, margin, margin)


FOLLOWED_EVENTS = (QEvent.Type.Resize, QEvent.Type.Move, QEvent.Type.Show, QEvent.Type.Hide, QEvent.Type.ChildAdded)


class _FollowTarget(QObject):
    def __init__(self, highlight: Highlight):
        super().__init__(highlight)
        self.highlight = highlight

    def eventFilter(self, watched, event) -> bool:
        if event.type() in FOLLOWED_EVENTS:
            self.highlight.follow()
        return False
