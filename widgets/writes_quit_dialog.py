"""What a quit says while the user's last writes (ratings saved ahead, a note, an undo) wait for the project's write
lock: another program holds it (a script or a job stopped mid-write, a share that stalls). The window closes by
itself once they are in; Esc or Enter goes back (they go on), and only the explicit button quits without them."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QDialog, QDialogButtonBox, QLabel, QProgressBar, QVBoxLayout, QWidget


def writes_left_text(count: int) -> str:
    if count == 1:
        what, it, was = "1 change you made (a rating, a note, an undo) is", "it is", "it: it was"
    else:
        what, it, was = f"{count} changes you made (ratings, notes, undos) are", "they are", "them: they were"
    return (
        f"{what} still being saved. Another program may hold the project's write lock (a script or a job stopped in "
        f"the middle of a write), or the disk or network share is slow; the window closes as soon as {it} in.\n\n"
        f"Quitting without saving loses {was} not reported saved."
    )


class WritesQuitDialog(QDialog):
    BACK, QUIT_WITHOUT = 0, 2  # its results (0: rejected)

    def __init__(self, count: int, parent: QWidget):
        super().__init__(parent)
        self.setWindowTitle("Saving before quitting")
        self.setModal(True)
        self.message = QLabel(writes_left_text(count))
        self.message.setTextFormat(Qt.TextFormat.PlainText)
        self.message.setWordWrap(True)
        self.bar = QProgressBar()
        self.bar.setRange(0, 0)  # waiting: nothing to count but what is left
        self.bar.setTextVisible(False)
        buttons = QDialogButtonBox()
        self.back_button = buttons.addButton("&Back to the project", QDialogButtonBox.ButtonRole.RejectRole)
        self.quit_button = buttons.addButton("&Quit without saving", QDialogButtonBox.ButtonRole.ActionRole)
        self.back_button.setDefault(True)
        self.back_button.clicked.connect(self.reject)
        self.quit_button.clicked.connect(lambda: self.done(self.QUIT_WITHOUT))
        layout = QVBoxLayout(self)
        layout.addWidget(self.message)
        layout.addWidget(self.bar)
        layout.addWidget(buttons)
        self.setMinimumWidth(480)

    def show_left(self, count: int) -> None:
        self.message.setText(writes_left_text(count))
