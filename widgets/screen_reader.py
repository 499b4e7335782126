"""What a screen reader (Orca on Linux, NVDA on Windows) says in the views that keep the keyboard while work
goes on: the rating session and the rewrite review. Their keys act without moving the focus, so the screen reader
has nothing to read unless told; the focused view's accessible name is set once per action, and a name change on
the focused widget is read out at once, cutting off the line before it (Orca 43 and NVDA read it; Orca 43 has no
support for Qt's newer announcement events)."""

from __future__ import annotations

SENTENCE_ENDS = ".!?…。？！"  # a part of a spoken line that ends in one of these gets no full stop added


def spoken(*parts: str) -> str:
    """Parts of a line as sentences: ('Correct saved', 'Clip 2 of 47') → 'Correct saved. Clip 2 of 47.'"""
    sentences = [" ".join(part.split()) for part in parts if part and part.strip()]  # a banner's line breaks too
    return " ".join(part if part[-1] in SENTENCE_ENDS else f"{part}." for part in sentences)


class SpokenFocus:
    """Mixed into a focusable QWidget: `speak` says what an action did and, when asked, `context_line` (where
    the view is: the clip, the part under review). The widget's description is read when it takes the focus."""

    context_line = ""
    _said_context: str | None = None  # the context line the accessible name says, None when it says none

    def speak(self, said: str = "", with_context: bool = False) -> None:
        self._said_context = self.context_line if with_context or not said else None
        self.setAccessibleName(spoken(said, self._said_context or ""))

    def focusInEvent(self, event) -> None:
        """Coming to the view (a page opened, a dialog closed), a screen reader says where it is, not the last
        action's few words or a part since left: the name is set here, before Qt tells the screen reader of the
        focus. A line said while the focus was away (a note's outcome, as its dialog closes) is kept."""
        if self._said_context != self.context_line:
            self.speak()
        super().focusInEvent(event)

    def focusOutEvent(self, event) -> None:
        """Leaving the view, the line said last is done with: coming back says where the view is."""
        self._said_context = None
        super().focusOutEvent(event)
