"""The first Studio window: open a project (or build the demo), browse its items, and follow every job —
this window's and other processes' — in the jobs panel. All disk work runs through `operations`; the items
view refreshes itself when items, rewrites, clips or runs change, whoever changed them."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import (
    QDockWidget,
    QFileDialog,
    QHBoxLayout,
    QInputDialog,
    QLabel,
    QMainWindow,
    QPushButton,
    QStackedWidget,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from spokenbench.app.jobs import JobsController
from spokenbench.app.operations import BackgroundOp, JobOp, Operation, OperationRunner, ProjectSession, QueryOp
from spokenbench.core.demo import build_demo
from spokenbench.core.importers import FORMATS as IMPORT_FORMATS
from spokenbench.core.importers import ImportOptions, import_files
from spokenbench.core.progress import Progress
from spokenbench.core.store import Project, opened
from spokenbench.core.store.summary import item_rows, project_summary
from spokenbench.widgets.items_table import ItemsPanel
from spokenbench.widgets.jobs_panel import JobsPanel

ProjectView = tuple[dict, list[tuple]]
ITEM_VIEW_TABLES = frozenset({"items", "rewrites", "clips", "runs"})  # what the items view and summary show
ITEM_ROW_TABLES = frozenset({"items"})  # the rows themselves; the rest only move the summary's counts


def read_project_view(project: Project) -> ProjectView:
    return project_summary(project.conn), item_rows(project.conn)


def read_summary(project: Project) -> dict:
    return project_summary(project.conn)


def load_project_view(path: Path, progress: Progress) -> ProjectView:
    """Open (and migrate, if needed) the project, then read what the window shows. Runs off the UI thread."""
    progress.report(0, None, f"opening {path}")
    with opened(path) as project:
        return read_project_view(project)


def build_demo_and_load(path: Path, progress: Progress) -> ProjectView:
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
    def __init__(self, audio_message: str | None = None, poll_interval_s: float | None = None):
        super().__init__()
        self.project_path: Path | None = None
        self._summary_text = "No project open"
        self.session: ProjectSession | None = None
        self.runner = OperationRunner(self)
        self.runner.error_parent = self
        self._poll_interval_s = poll_interval_s
        self.setWindowTitle("SpokenBench Studio")
        self.resize(1100, 700)

        self.items_panel = ItemsPanel()
        self.pages = QStackedWidget()
        self.welcome = WelcomePage(self)
        self.pages.addWidget(self.welcome)
        self.pages.addWidget(self.items_panel)
        self.setCentralWidget(self.pages)

        self.jobs_panel = JobsPanel()
        self.jobs_dock = QDockWidget("Jobs", self)
        self.jobs_dock.setObjectName("jobsDock")
        self.jobs_dock.setWidget(self.jobs_panel)
        self.jobs_dock.setAllowedAreas(Qt.DockWidgetArea.BottomDockWidgetArea | Qt.DockWidgetArea.RightDockWidgetArea)
        self.addDockWidget(Qt.DockWidgetArea.BottomDockWidgetArea, self.jobs_dock)
        self.resizeDocks([self.jobs_dock], [190], Qt.Orientation.Vertical)
        self.jobs_dock.hide()
        self.jobs = JobsController(self.runner, self.jobs_panel, self)

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
        self.import_action = QAction("&Import Items…", self)
        self.import_action.setShortcut(QKeySequence("Ctrl+I"))
        self.import_action.setEnabled(False)
        self.import_action.triggered.connect(self.choose_import_files)
        file_menu.insertAction(file_menu.actions()[2], self.import_action)
        view_menu = self.menuBar().addMenu("&View")
        jobs_action = self.jobs_dock.toggleViewAction()
        jobs_action.setShortcut(QKeySequence("Ctrl+J"))
        view_menu.addAction(jobs_action)

        self.summary_label = QLabel("No project open")
        self.jobs_button = QToolButton()
        self.jobs_button.setAutoRaise(True)
        self.jobs_button.setDefaultAction(jobs_action)
        self.jobs_button.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextOnly)
        self.jobs.live_count_changed.connect(self._show_job_count)
        self._show_job_count(0)
        self.audio_label = QLabel("Audio: off" if audio_message else "Audio: ready")
        self.audio_label.setToolTip(audio_message or "Audio playback and recording are available.")
        self.statusBar().addWidget(self.summary_label, 1)
        self.statusBar().addPermanentWidget(self.jobs_button)
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
            self.build_demo(Path(folder))

    def choose_import_files(self) -> None:
        if self.session is None:
            return
        files, _ = QFileDialog.getOpenFileNames(
            self, "Import items", "", "Tables (*.csv *.tsv *.jsonl *.parquet);;All files (*)"
        )
        if not files:
            return
        format_name, chosen = QInputDialog.getItem(
            self, "Import items", "Format of the files:", list(IMPORT_FORMATS), 0, False
        )
        if chosen:
            self.import_items([Path(f) for f in files], format_name)

    def import_items(self, files: list[Path], format_name: str, options: ImportOptions | None = None) -> Operation:
        """Import on a job thread; the items view refreshes itself once the items are in."""
        names = ", ".join(f.name for f in files)
        self.jobs_dock.show()
        return JobOp(
            self.session,
            lambda project, progress: import_files(project, files, format_name, options, progress=progress),
            kind="import",
            changes={"items"},
            label=f"Importing {names}",
            parent=self,
            error_title="Cannot import",
        ).run()

    def open_project(self, path: Path) -> Operation:
        path = Path(path)
        return self._open(path, lambda progress: load_project_view(path, progress), f"Opening {path.name}")

    def build_demo(self, path: Path) -> Operation:
        path = Path(path)
        self.jobs_dock.show()
        return self._open(path, lambda progress: build_demo_and_load(path, progress), "Building the demo project")

    def refresh_view(self, rows: bool = True) -> Operation | None:
        """Re-read the summary of the open project and, unless rows=False, its items. A newer refresh supersedes
        an older one (a refresh of the summary alone never supersedes one that also reads the rows)."""
        if self.session is None:
            return None
        if rows:
            read, show, key = read_project_view, self._show_view, "project-view"
        else:
            read, show, key = read_summary, self._show_summary, "project-summary"
        return (
            QueryOp(
                self.session,
                lambda project, progress: read(project),
                label="Refreshing items" if rows else "Refreshing the summary",
                parent=self,
                supersede=key,
            )
            .success(show)
            .run()
        )

    # --- opening -------------------------------------------------------------------------------------------
    def _open(self, path: Path, fn, label: str) -> Operation:
        self.summary_label.setText(f"{label}…")
        return (
            BackgroundOp(self.runner, fn, label=label, parent=self, supersede="open", error_title="Cannot open project")
            .success(lambda view: self._opened(path, view))
            .failure(self._open_failed, dialog=True)
            .run()
        )

    def _opened(self, path: Path, view: ProjectView) -> None:
        self.close_project()
        self.project_path = path
        self.session = ProjectSession(path, self.runner, **self._session_options())
        self.session.changes.changed.connect(self._project_changed)
        self.jobs.set_session(self.session)
        self.import_action.setEnabled(True)
        self.setWindowTitle(f"SpokenBench Studio — {path.name}")
        self.pages.setCurrentWidget(self.items_panel)
        self._show_view(view)

    def _session_options(self) -> dict:
        return {} if self._poll_interval_s is None else {"poll_interval_s": self._poll_interval_s}

    def _open_failed(self, error: BaseException) -> None:
        self.summary_label.setText(self._summary_text)

    def _project_changed(self, tables: set[str]) -> None:
        if tables & ITEM_VIEW_TABLES:
            self.refresh_view(rows=bool(tables & ITEM_ROW_TABLES))

    def _show_view(self, view: ProjectView) -> None:
        summary, rows = view
        self.items_panel.set_rows(rows)
        self._show_summary(summary)

    def _show_summary(self, summary: dict) -> None:
        items = summary["items"]
        languages = ", ".join(f"{k} {v}" for k, v in items["by_language"].items()) or "no items yet"
        self._summary_text = (
            f"{self.project_path}  ·  {items['total']} items ({languages})  ·  {summary['rewrites']['total']} "
            f"rewrites  ·  {summary['clips']['total']} clips  ·  {summary['runs']} runs"
        )
        self.summary_label.setText(self._summary_text)

    def _show_job_count(self, live: int) -> None:
        self.jobs_button.defaultAction().setText(f"Jobs · {live} running" if live else "Jobs")

    # --- closing -------------------------------------------------------------------------------------------
    def close_project(self) -> None:
        if self.session is not None:
            self.jobs.set_session(None)
            self.import_action.setEnabled(False)
            self.session.close()
            self.session.deleteLater()
            self.session = None

    def shutdown(self) -> None:
        """Stop every operation and thread this window started (writes already queued are finished)."""
        self.close_project()
        self.runner.shutdown(timeout_s=5.0)

    def closeEvent(self, event) -> None:
        self.shutdown()
        super().closeEvent(event)
