"""The first Studio window: open a project (or build the demo) and browse its items. Disk work runs on
the worker pool; the UI thread only receives finished rows."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import (
    QFileDialog,
    QHBoxLayout,
    QLabel,
    QMainWindow,
    QMessageBox,
    QProgressBar,
    QPushButton,
    QStackedWidget,
    QVBoxLayout,
    QWidget,
)

from spokenbench.app.workers import Task
from spokenbench.core.demo import build_demo
from spokenbench.core.errors import SpokenBenchError
from spokenbench.core.progress import Progress
from spokenbench.core.store import opened
from spokenbench.core.store.summary import item_rows, project_summary
from spokenbench.widgets.items_table import ItemsPanel


def load_project_view(path: Path, progress: Progress) -> tuple[dict, list[tuple]]:
    """Runs on a worker thread with its own connection."""
    progress.report(0, None, f"opening {path}")
    with opened(path) as project:
        return project_summary(project.conn), item_rows(project.conn)


def build_demo_and_load(path: Path, progress: Progress) -> tuple[dict, list[tuple]]:
    build_demo(path, progress)
    return load_project_view(path, progress)


class WelcomePage(QWidget):
    """The empty state: what the app is for and the two ways to start."""

    def __init__(self, window: MainWindow):
        super().__init__()
        card = QWidget()
        card.setFixedWidth(540)
        title = QLabel("<h2>SpokenBench Studio</h2>")
        text = QLabel(
            "Build and audit spoken multiple-choice benchmarks: rewrite questions for speech, synthesize "
            "and rate audio, evaluate audio language models, and read their bias metrics.<br><br>"
            "Open a project folder, or build the offline demo project (no network or API key needed)."
        )
        text.setWordWrap(True)
        open_button = QPushButton("Open project…")
        open_button.clicked.connect(window.choose_project)
        demo_button = QPushButton("Build demo project…")
        demo_button.clicked.connect(window.choose_demo_folder)
        buttons = QHBoxLayout()
        buttons.addWidget(open_button)
        buttons.addWidget(demo_button)
        buttons.addStretch(1)
        card_layout = QVBoxLayout(card)
        card_layout.addWidget(title)
        card_layout.addWidget(text)
        card_layout.addLayout(buttons)
        row = QHBoxLayout()
        row.addStretch(1)
        row.addWidget(card)
        row.addStretch(1)
        layout = QVBoxLayout(self)
        layout.addStretch(1)
        layout.addLayout(row)
        layout.addStretch(2)


class MainWindow(QMainWindow):
    def __init__(self, audio_message: str | None = None):
        super().__init__()
        self.project_path: Path | None = None
        self._task: Task | None = None
        self.setWindowTitle("SpokenBench Studio")
        self.resize(1100, 700)

        self.items_panel = ItemsPanel()
        self.pages = QStackedWidget()
        self.welcome = WelcomePage(self)
        self.pages.addWidget(self.welcome)
        self.pages.addWidget(self.items_panel)
        self.setCentralWidget(self.pages)

        file_menu = self.menuBar().addMenu("&File")
        for text, shortcut, slot in (
            ("&Open Project…", QKeySequence.StandardKey.Open, self.choose_project),
            ("Build &Demo Project…", None, self.choose_demo_folder),
            ("&Quit", QKeySequence.StandardKey.Quit, self.close),
        ):
            action = QAction(text, self)
            if shortcut is not None:
                action.setShortcut(shortcut)
            action.triggered.connect(slot)
            file_menu.addAction(action)

        self.summary_label = QLabel("No project open")
        self.progress_bar = QProgressBar()
        self.progress_bar.setMaximumWidth(200)
        self.progress_bar.hide()
        self.audio_label = QLabel("Audio: off" if audio_message else "Audio: ready")
        self.audio_label.setToolTip(audio_message or "Audio playback and recording are available.")
        self.statusBar().addWidget(self.summary_label, 1)
        self.statusBar().addPermanentWidget(self.progress_bar)
        self.statusBar().addPermanentWidget(self.audio_label)
        self.audio_message = audio_message

    # --- actions -------------------------------------------------------------------------------------------
    def choose_project(self) -> None:
        folder = QFileDialog.getExistingDirectory(self, "Open SpokenBench project")
        if folder:
            self.open_project(Path(folder))

    def choose_demo_folder(self) -> None:
        folder, _ = QFileDialog.getSaveFileName(self, "New folder for the demo project", "demo-project")
        if folder:
            self._run(build_demo_and_load, Path(folder))

    def open_project(self, path: Path) -> Task:
        return self._run(load_project_view, Path(path))

    # --- background work -----------------------------------------------------------------------------------
    def _run(self, fn, path: Path) -> Task:
        if self._task is not None:
            self._task.cancel()
        task = Task(fn, path)
        task.signals.progress.connect(self._show_progress)
        task.signals.finished.connect(lambda result, t=task, p=path: self._loaded(t, p, result))
        task.signals.failed.connect(lambda error, t=task: self._failed(t, error))
        task.signals.cancelled.connect(lambda t=task: self._finished(t))
        self._task = task
        self.summary_label.setText(f"Opening {path}…")
        return task.start()

    def _show_progress(self, done: int, total, message: str) -> None:
        self.progress_bar.show()
        self.progress_bar.setRange(0, total or 0)
        self.progress_bar.setValue(done)
        self.progress_bar.setFormat(message)

    def _finished(self, task: Task) -> bool:
        """True when `task` is still the current one; results of superseded tasks are dropped."""
        if task is not self._task:
            return False
        self._task = None
        self.progress_bar.hide()
        return True

    def _loaded(self, task: Task, path: Path, result: tuple[dict, list[tuple]]) -> None:
        if not self._finished(task):
            return
        summary, rows = result
        self.project_path = path
        self.items_panel.set_rows(rows)
        self.pages.setCurrentWidget(self.items_panel)
        self.setWindowTitle(f"SpokenBench Studio — {path.name}")
        items = summary["items"]
        languages = ", ".join(f"{k} {v}" for k, v in items["by_language"].items()) or "no items yet"
        self.summary_label.setText(
            f"{path}  ·  {items['total']} items ({languages})  ·  {summary['rewrites']['total']} rewrites  ·  "
            f"{summary['clips']['total']} clips  ·  {summary['runs']} runs"
        )

    def _failed(self, task: Task, error: Exception) -> None:
        if not self._finished(task):
            return
        self.summary_label.setText("No project open" if self.project_path is None else str(self.project_path))
        if isinstance(error, SpokenBenchError):
            QMessageBox.warning(self, "Cannot open project", str(error))
        else:
            QMessageBox.critical(self, "Unexpected error", f"{type(error).__name__}: {error}\n\nThis is a bug.")
