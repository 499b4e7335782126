"""What a quit, or the opening of another project, says while the user's last writes (ratings saved ahead, a note,
an undo) wait for the project's write lock: another program holds it (a script or a job stopped mid-write, a share
that stalls). The window closes, or the other project opens, by itself once they are in; Esc or Enter goes back
(they go on), and only the explicit button goes on without them: a write that cannot be stored usually fails within
the lock's wait (15 s) and says so, but one on a share that hangs never answers."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QDialog, QDialogButtonBox, QLabel, QProgressBar, QVBoxLayout, QWidget

from spokenbench.widgets.keys import shown_as_is

QUITTING = "quit"


def writes_left_text(count: int, doing: str = QUITTING) -> str:
    """`doing`: "quit", or "open NAME" for the opening of project NAME."""
    if count == 1:
        what, it, was, one = "1 change you made (a rating, a note, an undo) is", "it is", "it: it was", "it"
    else:
        what, it, was, one = (
            f"{count} changes you made (ratings, notes, undos) are",
            "they are",
            "them: they were",
            "one",
        )
    waiting = (
        f"{what} still being saved. Another program may hold the project's write lock (a script or a job stopped in "
        "the middle of a write), or the disk or network share is slow; "
    )
    if doing == QUITTING:
        return (
            f"{waiting}the window closes as soon as {it} in.\n\nQuitting without saving loses {was} not reported saved."
        )
    name = doing.removeprefix("open ")
    return (
        f"{waiting}{name} opens as soon as {it} in. If {one} cannot be saved, you are told why, and {name} is not "
        f"opened.\n\nBack stays in this project. Opening {name} without saving may lose {was} not reported saved."
    )


class WritesWaitDialog(QDialog):
    BACK, WITHOUT = 0, 2  # its results (0: rejected)

    def __init__(self, count: int, parent: QWidget, doing: str = QUITTING):
        super().__init__(parent)
        self.doing = doing
        quitting = doing == QUITTING
        name = doing.removeprefix("open ")
        self.setWindowTitle("Saving before quitting" if quitting else f"Saving before opening {name}")
        self.setModal(True)
        self.message = QLabel(writes_left_text(count, doing))
        self.message.setTextFormat(Qt.TextFormat.PlainText)
        self.message.setWordWrap(True)
        self.bar = QProgressBar()
        self.bar.setRange(0, 0)  # waiting: nothing to count but what is left
        self.bar.setTextVisible(False)
        buttons = QDialogButtonBox()
        self.back_button = buttons.addButton("&Back to the project", QDialogButtonBox.ButtonRole.RejectRole)
        without = "&Quit without saving" if quitting else f"&Open {shown_as_is(name)} without saving"
        self.without_button = buttons.addButton(without, QDialogButtonBox.ButtonRole.ActionRole)
        self.back_button.setDefault(True)
        self.back_button.clicked.connect(self.reject)
        self.without_button.clicked.connect(lambda: self.done(self.WITHOUT))
        layout = QVBoxLayout(self)
        layout.addWidget(self.message)
        layout.addWidget(self.bar)
        layout.addWidget(buttons)
        self.setMinimumWidth(480)

    def show_left(self, count: int) -> None:
        self.message.setText(writes_left_text(count, self.doing))
