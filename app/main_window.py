"""The Studio window: open a project (or build the demo), move between its pages from the left sidebar — Items,
Rewrites, Rating, QC, Speakers, Evaluate, Results, each with a count badge — and follow every job in the jobs
panel. All disk work runs through `operations`; pages and badges refresh when the tables they show change,
whoever changed them. The Rating, QC, Speakers, Evaluate and Results pages live in their own modules, imported on
a thread (app/page_modules.py: the small ones soon after the window is shown, the Results page's when it is asked
for) and built when first shown: a page asked for before its module is in says it is opening, one that cannot be
imported says why; the rest of the window works."""

from __future__ import annotations

import getpass
import html
import importlib
import logging
import threading
import time
from collections.abc import Callable
from pathlib import Path

import shiboken6
from PySide6.QtCore import QEvent, QPoint, QRect, QSettings, QSignalBlocker, QSize, Qt, QTimer
from PySide6.QtGui import QAction, QGuiApplication, QKeySequence
from PySide6.QtWidgets import (
    QAbstractButton,
    QApplication,
    QDockWidget,
    QFileDialog,
    QFrame,
    QHBoxLayout,
    QInputDialog,
    QLabel,
    QMainWindow,
    QMessageBox,
    QPushButton,
    QScrollArea,
    QStackedWidget,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from spokenbench.app.app_settings import AppSettings
from spokenbench.app.audio import (
    NO_DEVICE_FLASH,
    NOT_ANSWERING,
    NOT_ANSWERING_WORDS,
    audio_status,
    chosen_output,
    not_answering_line,
    shared_player,
    silence,
)
from spokenbench.app.input_methods import InputMethodSetup
from spokenbench.app.jobs import JobsController
from spokenbench.app.keyboard import install as install_keyboard_aids
from spokenbench.app.keys_back import KeysBack
from spokenbench.app.operations import (
    BackgroundOp,
    JobOp,
    Operation,
    OperationRunner,
    ProjectSession,
    QueryOp,
    explained_error,
    replace_dialog,
    show_error,
)
from spokenbench.app.pack_mode import (
    PACK_COPY_FOLDER_KEY,
    OpenedPack,
    PackController,
    PackCopyDialog,
    PackQuitDialog,
    is_pack,
    pack_copy_folder,
    prepare_pack,
)
from spokenbench.app.page_modules import PageModules
from spokenbench.app.page_modules import imported as page_module_imported
from spokenbench.app.rewrite_page import RewritePage, review_queue
from spokenbench.app.settings_dialog import (
    RECENT_KEY,
    WINDOW_GEOMETRY_KEY,
    WINDOW_MAXIMIZED_KEY,
    WINDOW_PAGE_KEY,
    SettingsDialog,
    annotator_name,
    app_settings,
)
from spokenbench.app.text_size import TEXT_SIZE_KEY, TEXT_SIZES, apply_text_size, step, stored_text_size, text_size_keys
from spokenbench.core.audio.playback import STALL_S, PlaybackState
from spokenbench.core.demo.project import build_demo
from spokenbench.core.evaluation.launcher import run_rows
from spokenbench.core.foundation.errors import SpokenBenchError
from spokenbench.core.foundation.progress import Progress
from spokenbench.core.importers import FORMATS as IMPORT_FORMATS
from spokenbench.core.importers import ImportOptions, import_files
from spokenbench.core.jobs.host import job_call, run_task_in_job_process, task_call
from spokenbench.core.jobs.registry import list_jobs
from spokenbench.core.qc.pack_folders import PackCopy, PackFolderNotWritable, copy_pack_to, pack_folder
from spokenbench.core.qc.queues import list_queues
from spokenbench.core.store import Project, opened
from spokenbench.core.store.changes import table_versions
from spokenbench.core.store.stored_values import stored_value_problems, stored_values_error
from spokenbench.core.store.summary import (
    ROLLBACK_JOURNAL_NOTE,
    clip_item_id,
    item_browser_rows,
    item_detail,
    project_summary,
)
from spokenbench.widgets import tables as table_widgets
from spokenbench.widgets.fonts import languages_without_font, missing_font_advice
from spokenbench.widgets.items_table import ItemsPanel
from spokenbench.widgets.jobs_panel import JobsPanel
from spokenbench.widgets.keys import install_page_keys_by_place, place_key_name, shown_as_is
from spokenbench.widgets.screen import ScreenWatch, first_window_geometry, keep_frame_on_screen, opens_maximized
from spokenbench.widgets.screen_reader import (
    SpokenFocus,
    alt_shortcut_acted,
    install_alt_left_to_the_shortcut,
    install_current_row_said,
    install_empty_field_said,
    no_tab_stop,
)
from spokenbench.widgets.sidebar import Sidebar
from spokenbench.widgets.status_line import StatusLabel, StatusSummary
from spokenbench.widgets.tables import ColumnMemory
from spokenbench.widgets.tones import retone, set_toned_sheet
from spokenbench.widgets.wheel_guard import install_wheel_guard
from spokenbench.widgets.writes_wait_dialog import QUITTING, WritesWaitDialog

log = logging.getLogger("spokenbench.app.main_window")
ProjectView = tuple[dict, list[tuple]]
PAGES = (
    ("items", "Items"),
    ("rewrites", "Rewrites"),
    ("rating", "Rating"),
    ("qc", "QC"),
    ("speakers", "Speakers"),
    ("evaluate", "Evaluate"),
    ("results", "Results"),
)
# pages other engineers build, imported when first shown: key -> (module, class, what it is)
OPTIONAL_PAGES = {
    "rating": ("spokenbench.app.rating_page", "RatingPage", "the rating screen"),
    "qc": ("spokenbench.app.qc_dashboard", "QcDashboardPage", "the QC dashboard"),
    "speakers": ("spokenbench.app.speakers_page", "SpeakersPage", "the Speakers page"),
    "evaluate": ("spokenbench.app.evaluate_page", "EvaluatePage", "the evaluation launcher"),
    "results": ("spokenbench.app.results_page", "ResultsPage", "the Results page"),
}
# each sidebar badge and the tables its count is read from: it is read again only when one of their change
# counters moved (core/store/changes.py), so a run's cost updates re-read the run badges, not the review queue
BADGE_SOURCES = {
    "items": frozenset({"items"}),
    "rewrites": frozenset({"items", "rewrites", "rewrite_reviews", "rewrite_outcomes"}),
    "rating": frozenset({"ratings", "rating_queues", "rating_queue_clips"}),
    "speakers": frozenset({"speakers"}),
    "evaluate": frozenset({"runs", "jobs"}),
    "results": frozenset({"runs"}),
}
BADGE_TABLES = frozenset().union(*BADGE_SOURCES.values()) - {"jobs"}  # a job's heartbeat is no reason to count
DETAIL_TABLES = frozenset({"rewrites", "clips", "transcripts", "clip_screening", "ratings", "responses"})
RECENT_LIMIT = 8
NOT_NORMAL_STATES = Qt.WindowState.WindowMaximized | Qt.WindowState.WindowFullScreen | Qt.WindowState.WindowMinimized
MAXIMIZED_STATES = Qt.WindowState.WindowMaximized | Qt.WindowState.WindowFullScreen
STATE_CHANGE_S = 0.5  # a window manager's new geometry arrives this soon before its new state
QUIT_DIALOG_DELAY_MS = 400  # a quit's save into a pack (or its last writes) that takes longer says so, in a dialog
WRITES_POLL_MS = 50  # how often a quit or an opening waiting for the user's last writes looks whether they are in
TOLD_TO_END_WRITES_S = 10.0  # told to end (a logout), nobody to ask: writes still waiting then are given up
QUIT_WITHOUT_WRITES_S = 0.5  # the writer's close after "Quit without saving": the window goes at once
PREFETCH_PAGES_MS = 1500  # after the window is first shown, these pages' modules are imported on a thread: not the
# Results page's (matplotlib, pandas, pyarrow: 131 MB more in the app's process, kept out until it is asked for)
PREFETCHED_PAGES = ("rating", "qc", "speakers", "evaluate")
FIRST_WINDOW_LEAST = QSize(1200, 760)  # the first window's least size, where the screen has room
PLAY_POLL_MS, PLAY_POLLS_MAX = 100, 50  # a followed play is waited for at most 5 s to start, then to its end
SOUND_CHECK_POLL_MS = 250  # how often a start's sound check that has not answered is looked at
ITEM_VIEW_TABLES = frozenset({"items", "rewrites", "clips", "runs"})  # what the items view and summary show
ITEM_ROW_TABLES = frozenset(
    {"items", "rewrites"}
)  # rows carry each item's rewrite status  # the rows themselves; the rest only move the summary's counts


def read_project_view(project: Project) -> ProjectView:
    return project_summary(project.conn), item_browser_rows(project.conn)


def read_badges(project: Project, annotator: str) -> dict[str, str]:
    """The sidebar's counts: items, parts waiting for review, clips left for this annotator in the rating
    queues, speakers, evaluation runs going on or to resume, and runs (every one read)."""
    return BadgeCounts().read(project, annotator)


class BadgeCounts:
    """The badges last read, each with the change counters of its tables (BADGE_SOURCES) at that reading: a
    reading re-reads only the badges whose tables changed since (or, for the rating queues, whose annotator
    did). One per open project; safe to share between the read pool's threads."""

    def __init__(self) -> None:
        self._known: dict[str, tuple[tuple, str | None]] = {}
        self._lock = threading.Lock()
        self.reads: dict[str, int] = dict.fromkeys(BADGE_SOURCES, 0)  # per badge, for tests

    def read(self, project: Project, annotator: str) -> dict[str, str | None]:
        versions = table_versions(project.conn)  # before the counts: a change while reading shows next time
        summary: list[dict] = []  # read once, for the badges that need it

        def project_counts() -> dict:
            if not summary:
                summary.append(project_summary(project.conn))
            return summary[0]

        readers = {
            "items": lambda: f"{project_counts()['items']['total']}",
            "rewrites": lambda: (
                f"{sum(entry.status in ('flagged', 'manual') for entry in review_queue(project))} to review"
            ),
            "rating": lambda: (
                f"{sum(q['clips'] - q['rated_by'].get(annotator, 0) for q in list_queues(project.conn))} left"
            ),
            "speakers": lambda: f"{project_counts()['speakers']}",
            "evaluate": lambda: evaluate_badge(project),
            "results": lambda: f"{project_counts()['runs']} runs",
        }
        badges = {}
        for badge, tables in BADGE_SOURCES.items():
            key = (tuple(versions.get(table) for table in sorted(tables)), annotator if badge == "rating" else None)
            if badge == "evaluate":
                # a run's process can die without a write (its run then waits to be resumed): no counter shows
                # that, so the claims live jobs hold are part of the key — read from the unfinished jobs only
                key += (live_claims(project),)
            with self._lock:
                known = self._known.get(badge)
            if known is None or known[0] != key:
                known = (key, readers[badge]())
                with self._lock:
                    self._known[badge] = known
                    self.reads[badge] += 1
            badges[badge] = known[1]
        return badges


def live_claims(project: Project) -> frozenset[str]:
    """The claims held by live jobs (a run's claim while its process runs): a killed run's process drops out."""
    return frozenset(job.claim for job in list_jobs(project.conn, include_finished=False) if job.claim)


def evaluate_badge(project: Project) -> str | None:
    """'1 running', '2 to resume' (interrupted, cancelled, failed or missing answers, as the Evaluate page's
    runs table says), both, or None when no run needs attention."""
    runs = run_rows(project.conn)
    running = sum(run.status == "running" for run in runs)
    to_resume = sum(run.resumable for run in runs)
    parts = [f"{running} running"] if running else []
    parts += [f"{to_resume} to resume"] if to_resume else []
    return ", ".join(parts) or None


def read_summary(project: Project) -> dict:
    return project_summary(project.conn)


def load_project_view(path: Path, progress: Progress) -> ProjectView:
    """Open (and migrate, if needed) the project, then read what the window shows. Runs off the UI thread."""
    progress.report(0, None, f"opening {path}")
    with opened(path) as project:
        progress.report(0, None, f"checking the stored values of {path.name}")
        problems = stored_value_problems(project.conn, limit=10)  # a session's rows must all be readable
        if problems:
            raise stored_values_error(project.db_path, problems)
        return read_project_view(project)


def build_demo_and_load(path: Path, progress: Progress, real: bool = False) -> ProjectView:
    """On a worker thread: the build itself in a job process (seconds of synthesis and assembly in Python that
    would keep the UI from reacting), then the project's view read here. `real`: with the real model's run (its
    missing extras are the job's error, shown as a dialog naming the install commands)."""
    run_task_in_job_process(task_call(build_demo, path, real=real), progress, "Building the demo project")
    return load_project_view(path, progress)


class CurrentPageStack(QStackedWidget):
    """The pages, one shown: its size hints are the shown page's, not the largest page's, so a page visited once
    (Speakers, Results) never keeps the window wide after the user leaves it."""

    def __init__(self):
        super().__init__()
        self.currentChanged.connect(lambda _index: self.updateGeometry())

    def sizeHint(self) -> QSize:
        page = self.currentWidget()
        return page.sizeHint() if page is not None else super().sizeHint()

    def minimumSizeHint(self) -> QSize:
        page = self.currentWidget()
        return page.minimumSizeHint() if page is not None else super().minimumSizeHint()

    def heightForWidth(self, width: int) -> int:
        """The shown page's (QStackedLayout's takes every page's, so a tall page kept the others scrolling)."""
        page = self.currentWidget()
        if page is None:
            return super().heightForWidth(width)
        if not page.hasHeightForWidth():
            return page.minimumSizeHint().height()
        return max(page.heightForWidth(width), page.minimumSizeHint().height())


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
            "Open a project folder, build the offline demo project (no network or API key needed), or open an "
            "annotation pack (.sbpack) to rate its clips."
        )
        text.setWordWrap(True)
        self.note = QLabel()  # e.g. why the last project was not reopened
        self.note.setWordWrap(True)
        self.note.setObjectName("welcomeNote")
        self.note.hide()
        open_button = QPushButton("Open project…")
        open_button.clicked.connect(window.choose_project)
        demo_button = QPushButton("Build demo project…")
        demo_button.clicked.connect(window.choose_demo_folder)
        pack_button = QPushButton("Open annotation pack…")
        pack_button.setToolTip("Rate a queue someone sent you as a .sbpack file, offline")
        pack_button.clicked.connect(window.choose_pack)
        buttons = QHBoxLayout()
        buttons.addWidget(open_button)
        buttons.addWidget(demo_button)
        buttons.addWidget(pack_button)
        buttons.addStretch(1)
        card_layout = QVBoxLayout(card)
        card_layout.addWidget(title)
        card_layout.addWidget(text)
        card_layout.addWidget(self.note)
        card_layout.addLayout(buttons)
        row = QHBoxLayout()
        row.addStretch(1)
        row.addWidget(card)
        row.addStretch(1)
        layout = QVBoxLayout(self)
        layout.addStretch(1)
        layout.addLayout(row)
        layout.addStretch(2)


class PlaceholderPage(QWidget):
    """An honest empty page: what will be here, or why a page could not be loaded. No controls that do nothing."""

    def __init__(self, title: str, text: str):
        super().__init__()
        self.message = QLabel(f"<h2>{title}</h2><p>{text}</p>")
        self.message.setWordWrap(True)
        self.message.setFixedWidth(560)
        row = QHBoxLayout()
        row.addStretch(1)
        row.addWidget(self.message)
        row.addStretch(1)
        layout = QVBoxLayout(self)
        layout.addStretch(1)
        layout.addLayout(row)
        layout.addStretch(2)

    def set_session(self, session) -> None:
        pass


class MainWindow(QMainWindow):
    def __init__(
        self,
        audio_message: str | None = None,
        recording_message: str | None = None,
        poll_interval_s: float | None = None,
        settings: QSettings | None = None,
    ):
        super().__init__()
        self.project_path: Path | None = None
        self._summary_text = "No project open"
        self.session: ProjectSession | None = None
        self.badge_counts = BadgeCounts()
        # read once, written by a thread of its own: the UI thread never waits for the settings file
        self.settings = AppSettings.on(settings if settings is not None else app_settings())
        table_widgets.column_memory = ColumnMemory(self.settings)  # the column widths a person dragged, next time too
        self.runner = OperationRunner(self)
        self.runner.error_parent = self
        install_wheel_guard()  # a wheel over an unfocused combo or spin box scrolls the page, never changes it
        install_empty_field_said()  # a screen reader says an empty text field Tab reaches (widgets/screen_reader.py)
        install_alt_left_to_the_shortcut()  # under a screen reader, Alt+letter leaves the menu bar alone
        install_current_row_said()  # a screen reader says a list's or table's row as the keys reach it
        install_page_keys_by_place()  # Ctrl and AZERTY's key labelled 6 (it types -) is Ctrl+6, not Ctrl+-
        self._poll_interval_s = poll_interval_s
        self.setWindowTitle("SpokenBench Studio")
        install_keyboard_aids(QApplication.instance())  # the focus ring, Enter on buttons (app/keyboard.py)
        self.setGeometry(first_window_geometry(self, FIRST_WINDOW_LEAST))  # restore_window_state: the remembered one
        self._frame_kept_on_screen = False  # the first show fits the window manager's frame in (showEvent)
        self.screen_watch = ScreenWatch(self, fitted=self._remember_fitted_geometry)  # a monitor unplugged
        self.settings_dialog: SettingsDialog | None = None  # the last, deleted before the next (replace_dialog)
        self.pack_quit_dialog: PackQuitDialog | None = None
        self.pack_copy_dialog: PackCopyDialog | None = None
        self.quit_question: QMessageBox | None = None  # the last 'Quit with ratings not in the pack?'
        self._quit_waits_for_pack = False  # a quit waits for the last save into the pack
        self._quit_without_pack = False  # the annotator chose to quit without it
        self.take_question: QMessageBox | None = None  # the last 'A take is being recorded' asked before closing
        self._after_take = None  # (then, doing): what waits for the Speakers page's take (a quit, an opening)
        self._waiting_for_take = False  # take_settled is connected
        self._told_to_end = False  # a SIGTERM or SIGINT: nothing is asked
        self.writes_dialog: WritesWaitDialog | None = None
        self._writes_wait = None  # (then, doing): a quit or an opening waiting for the user's last writes
        self._writes_given_up: str | None = None  # the quit or opening the annotator chose to go on with without them
        self._writes_waited_since = 0.0  # monotonic: when the wait began (a quit's: or it was told to end)
        self._writes_waited_for: list[Operation] = []  # the writes it has waited for: one that fails stops it
        self._writes_poll = QTimer(self)
        self._writes_poll.setInterval(WRITES_POLL_MS)
        self._writes_poll.timeout.connect(self._poll_writes)
        self.keys_back = KeysBack(self)  # after a dialog closes, without a window manager too
        self._pack_quit_timer = QTimer(self)  # shows PackQuitDialog when the quit's save takes longer
        self._pack_quit_timer.setSingleShot(True)
        self._pack_quit_timer.timeout.connect(self._show_pack_quit_progress)
        self._normal_geometries: list[tuple[float, QRect]] = []  # (when, geometry): _remember_normal_geometry

        self.items_panel = ItemsPanel()
        self.items_panel.item_selected.connect(self.load_item_detail)
        self.rewrite_page = RewritePage(self)
        self.sidebar = Sidebar(list(PAGES))
        self.page_stack = CurrentPageStack()
        self.page_widgets: dict[str, QWidget] = {"items": self.items_panel, "rewrites": self.rewrite_page}
        for key, name in PAGES:
            if key in OPTIONAL_PAGES:
                self.page_widgets[key] = PlaceholderPage(name, "Loading…")  # replaced when first shown
            self.page_stack.addWidget(self.page_widgets[key])
        self.page_modules = PageModules(self.runner, self)  # their modules, imported off the UI thread
        self.page_modules.loaded.connect(self._page_module_loaded)
        self._pages_opening: dict[str, list] = {}  # key -> what waits for its page (when_page), until it is built
        self._focus_when_open: set[str] = set()  # pages opening that take the keys when built, if still shown
        self.sidebar.page_selected.connect(self.show_page)
        self.sidebar.page_entered.connect(lambda _key: self.focus_page())
        self.workspace = QWidget()
        workspace_layout = QHBoxLayout(self.workspace)
        workspace_layout.setContentsMargins(0, 0, 0, 0)
        workspace_layout.setSpacing(0)
        workspace_layout.addWidget(self.sidebar)
        self.page_scroll = QScrollArea()  # a page taller or wider than a laptop's window scrolls, never grows it
        self.page_scroll.setWidgetResizable(True)
        self.page_scroll.setFrameShape(QFrame.Shape.NoFrame)
        self.page_scroll.setWidget(self.page_stack)
        no_tab_stop(self.page_scroll)
        workspace_layout.addWidget(self.page_scroll, 1)

        self.pages = QStackedWidget()
        self.welcome = WelcomePage(self)
        self.pages.addWidget(self.welcome)
        self.pages.addWidget(self.workspace)
        self.setCentralWidget(self.pages)

        self.jobs_panel = JobsPanel()
        self.jobs_dock = QDockWidget("Jobs", self)
        self.jobs_dock.setObjectName("jobsDock")
        self.jobs_dock.setWidget(self.jobs_panel)
        self.jobs_dock.setAllowedAreas(Qt.DockWidgetArea.BottomDockWidgetArea | Qt.DockWidgetArea.RightDockWidgetArea)
        self.addDockWidget(Qt.DockWidgetArea.BottomDockWidgetArea, self.jobs_dock)
        self.resizeDocks([self.jobs_dock], [180], Qt.Orientation.Vertical)
        self.jobs_dock.hide()
        self.jobs = JobsController(self.runner, self.jobs_panel, self)
        self.jobs_panel.runOpened.connect(self.show_run_progress)
        self.packs = PackController(self.runner, self)

        file_menu = self.menuBar().addMenu("&File")
        open_action = QAction("&Open Project…", self)
        open_action.setShortcut(QKeySequence.StandardKey.Open)
        open_action.triggered.connect(self.choose_project)
        file_menu.addAction(open_action)
        pack_action = QAction("Open Annotation &Pack…", self)
        pack_action.setShortcut(QKeySequence("Ctrl+Shift+O"))
        pack_action.triggered.connect(self.choose_pack)
        file_menu.addAction(pack_action)
        self.save_pack_action = QAction("&Save Ratings into Pack", self)
        self.save_pack_action.setShortcut(QKeySequence.StandardKey.Save)
        self.save_pack_action.setEnabled(False)
        self.save_pack_action.triggered.connect(lambda: self.packs.save(asked=True))
        file_menu.addAction(self.save_pack_action)
        self.recent_menu = file_menu.addMenu("Open &Recent")
        self.recent_menu.aboutToShow.connect(self._fill_recent_menu)
        self._fill_recent_menu()
        demo_action = QAction("Build &Demo Project…", self)
        demo_action.triggered.connect(self.choose_demo_folder)
        file_menu.addAction(demo_action)
        real_demo_action = QAction("Build Demo with a &Real Model…", self)
        real_demo_action.setToolTip(
            "The demo plus SmolLM2-135M answering its English questions through local Whisper, offline "
            "(the local-llm and local-asr extras); takes several minutes"
        )
        real_demo_action.triggered.connect(lambda: self.choose_demo_folder(real=True))
        file_menu.addAction(real_demo_action)
        open_demo_action = QAction("Open the Demo Project (with the &Guided Tour)", self)
        open_demo_action.setToolTip("The demo kept in your data folder: built the first time, reused after")
        open_demo_action.triggered.connect(lambda: self.open_demo(tour=True))
        file_menu.addAction(open_demo_action)
        self.import_action = QAction("&Import Items…", self)
        self.import_action.setShortcut(QKeySequence("Ctrl+I"))
        self.import_action.setEnabled(False)
        self.import_action.triggered.connect(self.choose_import_files)
        file_menu.addAction(self.import_action)
        file_menu.addSeparator()
        settings_action = QAction("&Settings…", self)
        settings_action.setShortcut(QKeySequence("Ctrl+,"))
        settings_action.triggered.connect(self.open_settings)
        file_menu.addAction(settings_action)
        quit_action = QAction("&Quit", self)
        quit_action.setShortcut(QKeySequence.StandardKey.Quit)
        quit_action.triggered.connect(self.close)
        file_menu.addAction(quit_action)
        view_menu = self.menuBar().addMenu("&View")
        for number, (key, name) in enumerate(PAGES, start=1):
            action = QAction(name, self)
            action.setShortcut(QKeySequence(f"Ctrl+{number}"))
            action.triggered.connect(lambda _=False, k=key: self.go_to_page(k))
            view_menu.addAction(action)
        view_menu.addSeparator()
        jobs_action = self.jobs_dock.toggleViewAction()
        jobs_action.setShortcut(QKeySequence("Ctrl+J"))
        jobs_action.setToolTip("Show or hide the jobs panel (Ctrl+J; Esc in it closes it)")
        jobs_action.triggered.connect(self._jobs_toggled)  # the user's toggle, not a build showing its progress
        view_menu.addAction(jobs_action)
        view_menu.addSeparator()
        self.text_size = stored_text_size(self.settings.value(TEXT_SIZE_KEY, 100))
        larger = QAction("&Larger text", self)
        larger.setShortcuts(text_size_keys("Ctrl+=", QKeySequence.StandardKey.ZoomIn))  # Ctrl+= without Shift too
        larger.triggered.connect(lambda: self.set_text_size(step(self.text_size, 1)))
        smaller = QAction("&Smaller text", self)
        smaller.setShortcuts(text_size_keys("Ctrl+-", QKeySequence.StandardKey.ZoomOut))
        smaller.triggered.connect(lambda: self.set_text_size(step(self.text_size, -1)))
        normal = QAction("&Normal text size", self)
        normal.setShortcut(QKeySequence("Ctrl+0"))
        normal.triggered.connect(lambda: self.set_text_size(100))
        for action in (larger, smaller, normal):
            view_menu.addAction(action)

        self.summary_label = StatusSummary("No project open")  # a long path never widens the window
        self.jobs_button = QToolButton()
        self.jobs_button.setAutoRaise(True)
        self.jobs_button.setDefaultAction(jobs_action)
        self.jobs_button.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextOnly)
        self.jobs.live_count_changed.connect(self._show_job_count)
        self._show_job_count(0)
        status, tooltip = audio_status(audio_message, recording_message)
        self.audio_label = QLabel(status)
        self.audio_label.setToolTip(tooltip)
        self.font_label = QLabel()  # languages of the project that no installed font can show
        set_toned_sheet(self.font_label, "color: $error")
        self.font_label.hide()
        self.input_method_label = QLabel()  # the desktop's input method, when this Qt cannot reach it
        set_toned_sheet(self.input_method_label, "color: $warning")
        self.input_method_label.hide()
        self.journal_label = QLabel("Rollback journal")  # the project's file system cannot share WAL's index
        self.journal_label.setToolTip(f"{ROLLBACK_JOURNAL_NOTE[0].upper()}{ROLLBACK_JOURNAL_NOTE[1:]}.")
        set_toned_sheet(self.journal_label, "color: $warning")
        self.journal_label.hide()
        self.pack_label = StatusLabel()
        self.pack_label.setObjectName("packStatus")
        self.pack_label.hide()
        self.packs.status_changed.connect(self._show_pack_status)
        self.statusBar().addWidget(self.summary_label, 1)
        self.statusBar().addWidget(self.pack_label)
        self.statusBar().messageChanged.connect(self._status_message_changed)
        self.statusBar().addPermanentWidget(self.journal_label)
        self.statusBar().addPermanentWidget(self.font_label)
        self.statusBar().addPermanentWidget(self.input_method_label)
        self.statusBar().addPermanentWidget(self.jobs_button)
        self.statusBar().addPermanentWidget(self.audio_label)
        self.audio_message = audio_message  # why clips cannot be played here (None: they can)
        self.recording_message = recording_message  # why speakers cannot be recorded here (None: they can)
        self._followed_play, self._followed_what, self._play_polls = 0, "", 0  # a Play button's request, until it ends
        self._followed_unanswered = False  # that play was said not taken up by the player
        self.playback_failure: str | None = None  # the last play's failure of the sound output, until one plays
        self._play_watch = QTimer(self, interval=PLAY_POLL_MS, timeout=self._check_followed_play)
        self.sidebar.select("items")
        from spokenbench.app.tour import install_tour

        self.tour = install_tour(self)  # the guided tour's dock and Help → Guided Tour (app/tour.py)
        if self.text_size != 100:  # once every dock is made: a dock made after takes the desktop's font for docks
            apply_text_size(self.text_size)

    # --- pages ---------------------------------------------------------------------------------------------
    def show_page(self, key: str, focus: bool = True) -> None:
        """Show the page `key` and, with `focus`, give it the keyboard (a rating session's keys work at once after
        Ctrl+6, Ctrl+3); not while the user walks the sidebar with the arrow keys, nor for the tour. A page whose
        module is not imported yet shows "Opening …" until it is (app/page_modules.py)."""
        if key in OPTIONAL_PAGES and isinstance(self.page_widgets[key], PlaceholderPage):
            self._open_optional_page(key, focus and not self.sidebar.moving_by_key)
        self.page_stack.setCurrentWidget(self.page_widgets[key])
        if self.sidebar.current_key() != key:
            with QSignalBlocker(self.sidebar):  # no second show_page from the sidebar's own signal
                self.sidebar.select(key)
        if focus and not self.sidebar.moving_by_key:
            self.focus_page()

    def go_to_page(self, key: str) -> None:
        """Ctrl+1…7: the page `key`; pressed on the page shown, its keys go where the page wants them (Ctrl+5 on
        the Speakers page: back to the recorder from its buttons; before, nothing happened)."""
        if self.current_page_key() == key:
            self.focus_page()
        else:
            self.sidebar.select(key)

    def focus_page(self) -> None:
        """The keyboard to the shown page: its own choice (`take_focus`), else the widget that had it when the user
        left, else its first widget that takes Tab."""
        page = self.page_stack.currentWidget()
        key = self.current_page_key()
        if key in self._pages_opening:  # Enter on its sidebar entry: the page takes the keys once it is built
            self._focus_when_open.add(key)
            return
        if hasattr(page, "take_focus"):
            page.take_focus()
            return
        last = page.focusWidget()
        if last is not None and last.isVisible() and last.isEnabled():
            last.setFocus(Qt.FocusReason.OtherFocusReason)
            return
        widget = page.nextInFocusChain()
        while widget is not page and widget is not None:
            if page.isAncestorOf(widget) and widget.focusPolicy() & Qt.FocusPolicy.TabFocus and widget.isVisible():
                if widget.isEnabled():
                    widget.setFocus(Qt.FocusReason.OtherFocusReason)
                    return
            widget = widget.nextInFocusChain()

    def current_page_key(self) -> str | None:
        return self.sidebar.current_key()

    def page_opening(self, key: str) -> bool:
        """Whether the page `key` waits for its module (shown as "Opening …")."""
        return key in self._pages_opening

    def when_page(self, key: str, then: Callable[[QWidget], None]) -> None:
        """`then(page)` with the page `key` once it is built: at once when it is, else when its module is in."""
        if key in self._pages_opening:
            self._pages_opening[key].append(then)
        else:
            then(self.page_widgets[key])

    def _open_optional_page(self, key: str, focus: bool) -> None:
        """Build an optional page now if its module is in, else say it is opening and import the module first;
        with `focus`, the page takes the keys when it is built, if it is still the one shown."""
        module_name, _class_name, what = OPTIONAL_PAGES[key]
        if page_module_imported(module_name) and key not in self._pages_opening:  # else `loaded` is on its way
            self._load_optional_page(key)
            return
        if focus:
            self._focus_when_open.add(key)
        else:
            self._focus_when_open.discard(key)
        if key not in self._pages_opening:
            self._pages_opening[key] = []
            self.page_widgets[key].message.setText(f"<h2>{dict(PAGES)[key]}</h2><p>Opening {what}…</p>")
        self.page_modules.load(module_name)

    def _page_module_loaded(self, module_name: str, error: BaseException | None) -> None:
        """A module is in (or failed): build the pages that wait for it. The one still shown is shown built, and
        takes the keys if it was shown to have them."""
        for key in [key for key in self._pages_opening if OPTIONAL_PAGES[key][0] == module_name]:
            waiting = self._pages_opening.pop(key)  # first: whatever happens below, the page is not left opening
            focus = key in self._focus_when_open
            self._focus_when_open.discard(key)
            shown = self.page_stack.currentWidget() is self.page_widgets[key]
            self._load_optional_page(key, error)
            if shown and focus and not self.sidebar.moving_by_key:
                self.focus_page()
            for then in waiting:
                then(self.page_widgets[key])

    def _prefetch_pages(self) -> None:
        if self.runner.closed:  # the window was closed before its timer fired
            return
        self.page_modules.prefetch([OPTIONAL_PAGES[key][0] for key in PREFETCHED_PAGES])

    def _load_optional_page(self, key: str, import_error: BaseException | None = None) -> None:
        """Build a page another module provides (imported by now); a page that cannot be imported or built
        becomes a placeholder saying why, so the window never depends on it."""
        module_name, class_name, what = OPTIONAL_PAGES[key]
        old = self.page_widgets[key]
        try:
            if isinstance(import_error, Exception):
                raise import_error
            if import_error is not None:  # SystemExit or the like, raised by the module's body on the thread
                raise RuntimeError(f"its module raised {import_error!r}")
            page = getattr(importlib.import_module(module_name), class_name)(self)
            page.set_session(self.session)
        except Exception as error:  # missing module, import error, a bug in its constructor
            log.warning("cannot load %s: %s", what, error)
            page = PlaceholderPage(
                dict(PAGES)[key], f"{what.capitalize()} could not be loaded ({type(error).__name__}: {error})."
            )
            page.failed = True
        if getattr(old, "failed", False) and getattr(page, "failed", False):
            old.message.setText(page.message.text())  # why, again (its "Opening …" said it was tried again)
            page.deleteLater()
            return
        if hasattr(page, "clip_requested"):  # e.g. the QC dashboard's disagreements: show that clip
            page.clip_requested.connect(self.show_clip)
        if hasattr(getattr(page, "view", None), "runOpened"):  # the Evaluate page's runs: Enter shows the results
            page.view.runOpened.connect(self.show_run_results)
        index = self.page_stack.indexOf(old)
        self.page_stack.insertWidget(index, page)
        if self.page_stack.currentWidget() is old:  # else removing it would show the next page for a moment
            self.page_stack.setCurrentWidget(page)
        self.page_stack.removeWidget(old)
        old.deleteLater()
        self.page_widgets[key] = page

    def annotator_name(self) -> str:
        """The name set in Settings ('' when none): reviews refuse to save without one."""
        return annotator_name(self.settings)

    @property
    def annotator(self) -> str:
        """Who rates: the pack's annotator when a pack is open, else the name set in Settings, else the login
        name (what the Rating page reads)."""
        if self.packs.pack is not None:
            return self.packs.pack.annotator
        return self.annotator_name() or getpass.getuser()

    def refresh_badges(self) -> Operation | None:
        if self.session is None:
            for key, _ in PAGES:
                self.sidebar.set_badge(key, None)
            return None
        annotator, badges = self.annotator, self.badge_counts
        return (
            QueryOp(
                self.session,
                lambda project, progress: badges.read(project, annotator),
                label="Counting",
                parent=self,
                supersede="badges",
            )
            .success(self._show_badges)
            .run()
        )

    def _show_badges(self, badges: dict[str, str]) -> None:
        for key, _ in PAGES:
            self.sidebar.set_badge(key, badges.get(key))

    def open_settings(self) -> SettingsDialog:
        replace_dialog(self.settings_dialog)
        dialog = SettingsDialog(self.settings, self.runner, self, session=self.session, annotator=self.annotator)
        self.settings_dialog = dialog
        dialog.accepted.connect(self.refresh_badges)
        rating_page = self.page_widgets["rating"]
        if hasattr(rating_page, "use_keymap"):
            dialog.keymap_saved.connect(rating_page.use_keymap)
        dialog.setModal(True)
        dialog.show()
        return dialog

    # --- the item detail and playback ----------------------------------------------------------------------
    def load_item_detail(self, item_id: int, focus_clip: int | None = None) -> Operation | None:
        if self.session is None:
            return None
        audio_root = self.session.path / "audio"

        def show(detail: dict) -> None:
            self.items_panel.show_detail(item_id, detail, self._play_function(), audio_root)
            if focus_clip is not None and self.items_panel.selected_item_id() == item_id:
                self.items_panel.detail.focus_clip(focus_clip)

        return (
            QueryOp(
                self.session,
                lambda project, progress: item_detail(project.conn, item_id),
                label=f"Loading item {item_id}",
                parent=self,
                supersede="item-detail",
            )
            .success(show)
            .run()
        )

    def show_clip(self, clip_id: int) -> Operation | None:
        """Click-through to one clip: the Items page with the clip's item selected, the clip shown and played."""
        if self.session is None:
            return None

        def reveal(item_id: int | None) -> None:
            if item_id is None or not self.items_panel.reveal_item(item_id):
                self.statusBar().showMessage(f"Clip {clip_id} is no longer in the project.", 5000)
                return
            self.show_page("items")
            self.load_item_detail(item_id, focus_clip=clip_id)  # supersedes the load the selection started

        return (
            QueryOp(
                self.session,
                lambda project, progress: clip_item_id(project.conn, clip_id),
                label=f"Finding clip {clip_id}",
                parent=self,
                supersede="show-clip",
            )
            .success(reveal)
            .run()
        )

    def show_run_results(self, run_id: int) -> None:
        """A run opened from the Evaluate page: the Results page with that run's panels alone ('All runs' brings
        the others back)."""
        self.show_page("results")
        session = self.session

        def select(results: QWidget) -> None:
            if hasattr(results, "select_runs") and self.session is session:  # run ids are the project's own
                results.select_runs({run_id})

        self.when_page("results", select)

    def show_run_progress(self, run_id: int) -> None:
        """A run opened from the jobs panel: the Evaluate page with that run selected (its progress below)."""
        self.show_page("evaluate")

        session = self.session

        def select(page: QWidget) -> None:
            view = getattr(page, "view", None)
            if hasattr(view, "select_run") and self.session is session:  # run ids are the project's own
                view.select_run(run_id)

        self.when_page("evaluate", select)

    def _play_function(self):
        return None if self.audio_message else self.play_file

    def play_file(self, path: Path, what: str | None = None) -> str | None:
        """Hand the file to the shared player (it reads and plays it on its own thread); a message when it cannot.
        `what` names it in messages ("clip 12"; the file's name when not given)."""
        if self.audio_message:
            return NO_DEVICE_FLASH
        what = what or path.name
        self.follow_play(shared_player().play(path, what, chosen_output(self)), what)
        return None

    def follow_play(self, request: int, what: str = "") -> None:
        """Say in the status bar how the shared player's `request` went (pages without a line of their own for
        it: the Play buttons, the Speakers page's takes); `what` it plays, for the Items detail's line."""
        self._followed_play, self._followed_what, self._play_polls = request, what, 0
        self._followed_unanswered = False
        self._play_watch.start()

    def _check_followed_play(self) -> None:
        """The outcome of the followed play, polled (the playback thread never calls into Qt): a failure is said
        in the status bar. A play the player has not taken up for 5 s (a sound server that does not answer) is
        said not playing, and still followed: it plays, and the line clears, once the server answers."""
        state = shared_player().state
        self._play_polls += 1
        if state.request < self._followed_play and self._play_polls < PLAY_POLLS_MAX:
            return  # not started yet
        unanswered = shared_player().unanswered_s()
        if state.request < self._followed_play and unanswered > 0 or state.playing and unanswered > STALL_S:
            if not self._followed_unanswered:  # said once
                self._followed_unanswered = True
                self._say_not_answering(not_answering_line(self._followed_what))
            return
        if state.request != self._followed_play:
            self._play_watch.stop()  # replaced by another play
            return
        if state.playing:  # followed to its end: the output can still go away mid-clip
            if self._followed_unanswered:  # it plays after all: the server answered
                self._followed_unanswered = False
                self.items_panel.detail.play_waiting(self._followed_what, False)
            self.note_playback(state)
            return
        self._play_watch.stop()  # ended, played through (a short clip may end between two polls) or failed
        if state.error:  # one line: PortAudio's words are in the audio label's tooltip
            self.statusBar().showMessage(state.short_error, 15_000)
        self.items_panel.detail.play_ended(self._followed_what, state.short_error)
        self.note_playback(state)

    def _say_not_answering(self, line: str) -> None:
        """A play the sound server holds: the status bar, the Items detail's line and the audio label say so."""
        self.statusBar().showMessage(line, 15_000)
        self.items_panel.detail.play_waiting(self._followed_what, True)
        self.note_playback(PlaybackState(error=line, output_failed=True))

    def note_playback(self, state) -> None:
        """The status bar's audio label follows the last play: "playback failed" while the sound output fails
        (its tooltip says why), back to what it said at start once a clip plays again."""
        if state.error and state.output_failed:
            self.playback_failure = state.error
        elif state.playing or not state.error:
            self.playback_failure = None
        self.show_audio_status()

    def follow_sound_check(self, check) -> None:
        """The start's sound check has not answered (app/audio.py SoundCheck): say "checking", then, past
        STALL_S, that the sound output does not answer; take its answer whenever it comes."""
        self._sound_check = check
        self.audio_label.setText("Audio: checking…")
        self.audio_label.setToolTip("Asking the sound server for the audio devices.")
        self._sound_check_watch = QTimer(self, interval=SOUND_CHECK_POLL_MS, timeout=self._check_sound_check)
        self._sound_check_watch.start()

    def _check_sound_check(self) -> None:
        check = self._sound_check
        if check.answered:
            self._sound_check_watch.stop()
            self.audio_message, self.recording_message = check.playback, check.recording
            set_toned_sheet(self.audio_label, "")
            self.show_audio_status()
            answer = self.audio_label.toolTip().replace("\n", " ")
            self.statusBar().showMessage(f"The sound server answered. {answer}", 10_000)
        elif check.waited_s() > STALL_S and self.audio_label.text() != "Audio: not answering":
            self.audio_label.setText("Audio: not answering")
            self.audio_label.setToolTip(NOT_ANSWERING)
            set_toned_sheet(self.audio_label, "color: $warning")

    def show_audio_status(self) -> None:
        """The audio label from what is known: the start's checks, a newer device scan, the last play."""
        check = getattr(self, "_sound_check", None)
        if check is not None and not check.answered:
            return  # "checking" or "not answering" until it answers (_check_sound_check)
        if self.playback_failure and NOT_ANSWERING_WORDS in self.playback_failure:
            text, tooltip = "Audio: not answering", f"{self.playback_failure}\nThe clip plays once the server answers."
        elif self.playback_failure:
            text, tooltip = "Audio: playback failed", f"{self.playback_failure}\nThe next play tries the output again."
        else:
            text, tooltip = audio_status(self.audio_message, self.recording_message)
        if self.audio_label.text() != text or self.audio_label.toolTip() != tooltip:  # polled: change only news
            self.audio_label.setText(text)
            self.audio_label.setToolTip(tooltip)

    # --- the window between sessions: geometry, page, last project -----------------------------------------
    def save_window_state(self) -> None:
        """Remember the window's normal geometry, whether it was maximized and the page shown (the settings)."""
        normal = self.geometry()
        if self.windowState() & MAXIMIZED_STATES:  # maximized or full screen: the geometry it returns to
            normal = self._normal_geometries[-1][1] if self._normal_geometries else self.normalGeometry()
        self.settings.setValue(WINDOW_GEOMETRY_KEY, [normal.x(), normal.y(), normal.width(), normal.height()])
        self.settings.setValue(WINDOW_MAXIMIZED_KEY, self.isMaximized())
        page = self.current_page_key()
        if self.session is not None and page is not None:
            self.settings.setValue(WINDOW_PAGE_KEY, page)

    def restore_window_state(self) -> None:
        """The remembered geometry, clamped to the screen it falls on (a laptop after a large monitor: never
        larger than the screen, never off it). When none was remembered (or it is not four numbers): maximized on
        a screen too small for the first window's least size with a frame (`opens_maximized`), else as made."""
        stored = self.settings.value(WINDOW_GEOMETRY_KEY)
        try:
            x, y, width, height = (int(value) for value in stored)
        except (TypeError, ValueError):
            if opens_maximized(self, FIRST_WINDOW_LEAST):
                self.setWindowState(self.windowState() | Qt.WindowState.WindowMaximized)
            return
        screen = QGuiApplication.screenAt(QPoint(x + width // 2, y + height // 2)) or QGuiApplication.primaryScreen()
        if screen is None:
            return
        available = screen.availableGeometry()
        width = max(min(width, available.width()), 200)
        height = max(min(height, available.height()), 200)
        x = max(min(x, available.right() + 1 - width), available.left())
        y = max(min(y, available.bottom() + 1 - height), available.top())
        self.setGeometry(QRect(x, y, width, height))
        if str(self.settings.value(WINDOW_MAXIMIZED_KEY, "false")).lower() == "true":
            self.setWindowState(self.windowState() | Qt.WindowState.WindowMaximized)

    def reopen_last_project(self) -> Operation | None:
        """`spokenbench-studio` without a project: the project (or pack) used last, on the page shown last. A
        folder removed or moved since leaves the launcher with a note saying so."""
        recent = self.recent_projects()
        if not recent:
            return None
        last = Path(recent[0])
        if not last.exists():
            self.welcome.note.setText(
                f"The last project, <b>{html.escape(str(last))}</b>, is no longer there (moved or removed): "
                "open another, or find it under File → Open Recent once it is back."
            )
            self.welcome.note.show()
            return None
        page = str(self.settings.value(WINDOW_PAGE_KEY, "") or "")
        operation = self.open_project(last)
        if page in dict(PAGES) and not is_pack(last):  # a pack opens on its Rating page
            operation.success(lambda _opened: self.show_page(page) if self.session is not None else None)
        return operation

    # --- recent projects -----------------------------------------------------------------------------------
    def recent_projects(self) -> list[str]:
        value = self.settings.value(RECENT_KEY, [])
        if isinstance(value, str):
            value = [value]
        return [str(v) for v in value or []]

    def _remember_recent(self, path: Path) -> None:
        entries = [str(path), *(p for p in self.recent_projects() if p != str(path))][:RECENT_LIMIT]
        self.settings.setValue(RECENT_KEY, entries)

    def _fill_recent_menu(self) -> None:
        self.recent_menu.clear()
        recent = self.recent_projects()
        for entry in recent:
            action = self.recent_menu.addAction(shown_as_is(entry))
            action.triggered.connect(lambda _=False, p=entry: self.open_project(Path(p)))
        if not recent:
            self.recent_menu.addAction("No recent projects").setEnabled(False)
        else:
            self.recent_menu.addSeparator()
            self.recent_menu.addAction("Clear list", lambda: self.settings.setValue(RECENT_KEY, []))

    # --- actions -------------------------------------------------------------------------------------------
    def starting_folder(self) -> str:
        """Where a file dialog opens: the folder of the project or pack used last, where it still is (a pack
        from the same sender lands beside the last one), else the home folder — never the folder the app
        happened to be started from."""
        for recent in self.recent_projects():
            folder = Path(recent).parent
            if folder.is_dir():
                return str(folder)
        return str(Path.home())

    def choose_project(self) -> None:
        folder = QFileDialog.getExistingDirectory(self, "Open SpokenBench project", self.starting_folder())
        if folder:
            self.open_project(Path(folder))

    def choose_pack(self) -> None:
        path, _ = QFileDialog.getOpenFileName(
            self, "Open annotation pack", self.starting_folder(), "Annotation packs (*.sbpack);;All files (*)"
        )
        if path:
            self.open_pack_file(Path(path))

    def choose_demo_folder(self, real: bool = False) -> None:
        suggested = str(Path(self.starting_folder()) / "demo-project")
        folder, _ = QFileDialog.getSaveFileName(self, "New folder for the demo project", suggested)
        if folder:
            self.build_demo(Path(folder), real=real)

    def choose_import_files(self) -> None:
        if self.session is None:
            return
        files, _ = QFileDialog.getOpenFileNames(
            self, "Import items", self.starting_folder(), "Tables (*.csv *.tsv *.jsonl *.parquet);;All files (*)"
        )
        if not files:
            return
        format_name, chosen = QInputDialog.getItem(
            self, "Import items", "Format of the files:", list(IMPORT_FORMATS), 0, False
        )
        if chosen:
            self.import_items([Path(f) for f in files], format_name)

    def import_items(self, files: list[Path], format_name: str, options: ImportOptions | None = None) -> Operation:
        """Import in a job process; the items view refreshes itself once the items are in. Items already in the
        project with the same content are skipped (`import --skip-existing`): importing a file again after adding
        rows to it just adds them, where it was refused with advice for a command-line option the app lacks."""
        names = ", ".join(f.name for f in files)
        self.jobs_dock.show()

        def imported(results) -> None:
            added, skipped = sum(r.imported for r in results), sum(r.skipped for r in results)
            already = f"; {skipped:,} already in the project, skipped" if skipped else ""
            plural = "s" if added != 1 else ""
            self.statusBar().showMessage(f"Imported {added:,} item{plural} from {names}{already}", 15_000)

        return (
            JobOp(
                self.session,
                job_call(import_files, files, format_name, options, skip_existing=True),
                kind="import",
                changes={"items"},
                label=f"Importing {names}",
                parent=self,
                error_title="Cannot import",
            )
            .success(imported)
            .run()
        )

    def open_project(self, path: Path) -> Operation:
        path = Path(path)
        if is_pack(path):
            return self.open_pack_file(path)
        return self._open(path, lambda progress: load_project_view(path, progress), f"Opening {path.name}")

    def build_demo(self, path: Path, real: bool = False) -> Operation:
        path = Path(path)
        what = "Building the demo project" + (" with a real model" if real else "")
        return self.show_jobs_until_built(
            self._open(path, lambda progress: build_demo_and_load(path, progress, real), what)
        )

    def show_jobs_until_built(self, operation: Operation) -> Operation:
        """The jobs panel shows a build's progress, and goes again once the build succeeded unless it was open
        before: left open, it kept a third of every page at a laptop's 720 pixels. A failed build leaves it open."""
        if self.jobs_dock.isHidden():
            self.jobs_dock.show()
            operation.success(lambda _view: self.jobs_dock.hide())
        return operation

    def open_demo(self, tour: bool = False, data_dir: Path | None = None) -> Operation:
        """The demo in the user's data folder (app/demo_mode.py): built the first time (or when an older version
        built it) on a worker thread, reused after, then opened; with `tour`, the guided tour opens on it unless
        the user skipped or finished it before."""
        from spokenbench.app.demo_mode import open_demo

        return open_demo(self, data_dir, shown=self.tour.start_if_new if tour else None)

    def run_open(self, fn, label: str, shown=None) -> Operation:
        """Open a project whose folder the work itself finds: `fn(progress) -> (path, view)`, off the UI thread;
        `shown()` once it is the project shown (not if the opening is dropped: before, the demo's tour started over
        the project still open while the opening waited for its ratings)."""
        self.summary_label.setText(f"{label}…")

        def show(path: Path, view: ProjectView) -> None:
            self._opened(path, view)
            if shown is not None:
                shown()

        return (
            BackgroundOp(self.runner, fn, label=label, parent=self, supersede="open", error_title="Cannot open project")
            .success(lambda opened: self._open_after_take(opened[0], lambda: show(*opened)))
            .failure(self._open_failed, dialog=True)
            .run()
        )

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

    def open_pack_file(self, path: Path) -> Operation:
        """Open an annotation pack to rate it here (see `pack_mode`): its folder opens like a project, the
        Rating page shows its queue, and ratings are written back into the pack file."""
        path = Path(path)

        def load(progress: Progress) -> tuple[OpenedPack, ProjectView]:
            pack = prepare_pack(path, progress)
            return pack, load_project_view(pack.folder, progress)

        self.summary_label.setText(f"Opening pack {path.name}…")
        return (
            BackgroundOp(
                self.runner,
                load,
                label=f"Opening pack {path.name}",
                parent=self,
                supersede="open",
                error_title="Cannot open the annotation pack",
            )
            .success(lambda opened: self._open_after_take(path, lambda: self._pack_opened(*opened)))
            .failure(self._pack_open_failed)
            .run()
        )

    def _pack_open_failed(self, error: BaseException) -> None:
        self._open_failed(error)
        if isinstance(error, PackFolderNotWritable):
            self.offer_pack_copy(error.pack_path, error.reason)
        else:
            show_error(self, error, "Cannot open the annotation pack")

    def offer_pack_copy(self, path: Path, reason: str) -> PackCopyDialog:
        """A pack where it cannot be rated (read-only): offer to copy it to the annotator's folder and rate that."""
        folder = pack_copy_folder(self.settings)
        box = PackCopyDialog(path, reason, folder, self)
        box.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        box.finished.connect(lambda _result: self._pack_copy_answered(path, folder, box.answer()))
        replace_dialog(self.pack_copy_dialog)
        self.pack_copy_dialog = box
        box.open()
        return box

    def _pack_copy_answered(self, path: Path, folder: Path, answer: str) -> None:
        self.pack_copy_dialog = None
        if answer == PackCopyDialog.CHOOSE:
            chosen = QFileDialog.getExistingDirectory(self, f"Copy {path.name} into", str(folder))
            if not chosen:
                return
            folder = Path(chosen)
            self.settings.setValue(PACK_COPY_FOLDER_KEY, str(folder))
        elif answer != PackCopyDialog.COPY:
            return
        self.copy_pack_and_open(path, folder)

    def copy_pack_and_open(self, path: Path, folder: Path) -> Operation:
        """Copy the pack into `folder` off the UI thread (its bytes in the jobs panel; an earlier copy there is
        reused), then open the copy."""
        self.summary_label.setText(f"Copying {path.name} to {folder}…")
        return self.show_jobs_until_built(
            BackgroundOp(
                self.runner,
                lambda progress: copy_pack_to(path, folder, progress),
                label=f"Copying {path.name} to {folder}",
                parent=self,
                supersede="open",
                error_title="Cannot copy the annotation pack",
            )
            .success(self._pack_copied)
            .failure(self._open_failed, dialog=True)
            .run()
        )

    def _pack_copied(self, copy: PackCopy) -> None:
        if copy.earlier:
            line = f"Opening the copy made before, {copy.path}, with its ratings: send that file back when done."
        else:
            line = f"Copied the pack to {copy.path}: rate it here and send that file back when done."
        self.statusBar().showMessage(line, 30_000)
        self.open_pack_file(copy.path)

    def _pack_opened(self, pack: OpenedPack, view: ProjectView) -> None:
        self._opened(pack.folder, view, remember=pack.path)
        taken = pack.taken_in
        if taken.added or taken.updated:
            brought = [
                f"{n} {what}{'' if n == 1 else 's'}"
                for n, what in ((taken.added, "rating"), (taken.updated, "undo or note"))
                if n
            ]
            self.statusBar().showMessage(
                f"{pack.path.name} brought {' and '.join(brought)} made on another machine: they are in, and the "
                "file keeps them.",
                30_000,
            )
        self.packs.opened(pack)
        self.save_pack_action.setEnabled(True)
        self.setWindowTitle(f"SpokenBench Studio — pack {pack.path.name} (rating as {pack.annotator})")
        self.refresh_badges()  # counted for the pack's annotator
        self.show_page("rating")

        def rate(page: QWidget) -> None:
            if hasattr(page, "open_queue") and self.packs.pack is pack:  # not a pack opened after, or closed
                page.open_queue(pack.queue)

        self.when_page("rating", rate)

    def _status_message_changed(self, message: str) -> None:
        """A passing message hides the status bar's own widgets until it goes; the pack's line, shown or hidden
        meanwhile (each rating tells it), comes back with them. Before, it was drawn over the message."""
        if not message:
            self.pack_label.setVisible(bool(self.pack_label.text()))

    def _show_pack_status(self, text: str, warns: bool) -> None:
        self.pack_label.setText(text)
        self.pack_label.setVisible(bool(text) and not self.statusBar().currentMessage())  # else once it is gone
        self.pack_label.setToolTip(self.packs.explain())
        if warns != self.pack_label.property("warns"):  # every rating tells the status: restyle only on a change
            self.pack_label.setProperty("warns", warns)
            set_toned_sheet(self.pack_label, "color: $warning" if warns else "")

    # --- opening -------------------------------------------------------------------------------------------
    def _open(self, path: Path, fn, label: str) -> Operation:
        self.summary_label.setText(f"{label}…")
        return (
            BackgroundOp(self.runner, fn, label=label, parent=self, supersede="open", error_title="Cannot open project")
            .success(lambda view: self._open_after_take(path, lambda: self._opened(path, view)))
            .failure(self._open_failed, dialog=True)
            .run()
        )

    def _opened(self, path: Path, view: ProjectView, remember: Path | None = None) -> None:
        self.close_project()
        self.project_path = path
        self.session = ProjectSession(path, self.runner, **self._session_options())
        self.badge_counts = BadgeCounts()  # this project's badges, re-read as their tables change
        self.session.changes.changed.connect(self._project_changed)
        self.jobs.set_session(self.session)
        self.import_action.setEnabled(True)
        self.setWindowTitle(f"SpokenBench Studio — {path.name}")
        self._remember_recent(remember or path)
        self.pages.setCurrentWidget(self.workspace)
        for page in self.page_widgets.values():
            if hasattr(page, "set_session") and page is not self.items_panel:
                page.set_session(self.session)
        self._show_view(view)
        self.refresh_badges()
        self.focus_page()  # the keys on the page shown (the item table), not left on the welcome page's buttons

    def _session_options(self) -> dict:
        return {} if self._poll_interval_s is None else {"poll_interval_s": self._poll_interval_s}

    def _open_failed(self, error: BaseException) -> None:
        self.summary_label.setText(self._summary_text)

    def _project_changed(self, tables: set[str]) -> None:
        if "ratings" in tables:
            self.packs.ratings_changed()
        if tables & ITEM_VIEW_TABLES:
            self.refresh_view(rows=bool(tables & ITEM_ROW_TABLES))
        if tables & BADGE_TABLES:
            self.refresh_badges()
        selected = self.items_panel.selected_item_id()
        if selected is not None and tables & DETAIL_TABLES:
            self.load_item_detail(selected)

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
        self.journal_label.setVisible(summary.get("journal") == "rollback")
        self.show_missing_fonts(items["by_language"])

    def show_missing_fonts(self, languages) -> None:
        """'No font: ko, zh' in the status bar (how to get one in its tooltip) while the project has text in a
        script no installed font covers; nothing otherwise."""
        missing = languages_without_font(languages)
        self.font_label.setText(f"No font: {', '.join(missing)}" if missing else "")
        self.font_label.setToolTip(missing_font_advice(missing) if missing else "")
        self.font_label.setVisible(bool(missing))

    def show_input_method(self, setup: InputMethodSetup) -> None:
        """'No input method: kime' in the status bar (why, and what to do, in its tooltip) when the desktop's
        input method cannot type into this app's text fields (app/input_methods.py); nothing otherwise."""
        self.input_method_label.setText(f"No input method: {setup.unsupported}" if setup.unsupported else "")
        self.input_method_label.setToolTip(setup.advice or "")
        self.input_method_label.setVisible(bool(setup.unsupported))

    def _show_job_count(self, live: int) -> None:
        self.jobs_button.defaultAction().setText(f"Jobs · {live} running" if live else "Jobs")

    # --- closing -------------------------------------------------------------------------------------------
    def close_project(self) -> None:
        self.packs.close()
        self.save_pack_action.setEnabled(False)
        if self.session is not None:
            self.jobs.set_session(None)
            for page in self.page_widgets.values():
                if hasattr(page, "set_session") and page is not self.items_panel:
                    page.set_session(None)
            self.import_action.setEnabled(False)
            given_up, self._writes_given_up = self._writes_given_up, None
            if given_up is None:
                self.session.close()  # nothing left to write (`writes_in_before`): at once
            else:  # quitting: a last moment for them; opening another project: none, the writer goes on meanwhile
                self.session.close(writer_wait_s=QUIT_WITHOUT_WRITES_S if given_up == QUITTING else 0.0)
            self.session.deleteLater()
            self.session = None
        self.show_missing_fonts([])
        self.journal_label.hide()

    def shutdown(self) -> None:
        """Stop every operation and thread this window started (writes already queued are finished)."""
        self._stop_waiting_for_writes()
        self.close_project()
        silence()  # posted: the player's thread ends at exit (core/audio/playback.py)
        self.runner.shutdown(timeout_s=5.0)
        self.settings.close(timeout_s=5.0)

    def keyPressEvent(self, event) -> None:
        """Esc that no widget took (a list, a form, a page) closes the guided tour when it is open; else, from the
        jobs panel or its status-bar button, it closes the panel and gives the keyboard back to the page."""
        if event.key() == Qt.Key.Key_Escape and self.tour.is_open():
            self.tour.skip()
            event.accept()
            return
        if event.key() == Qt.Key.Key_Escape and self._keyboard_in_jobs():
            self.jobs_dock.hide()
            self.focus_page()
            event.accept()
            return
        if self._press_at_place(event):
            event.accept()
            return
        super().keyPressEvent(event)

    def _press_at_place(self, event) -> bool:
        """A key no shortcut or widget took, found by its place on a US keyboard (`widgets/keys.py`): a menu
        action's shortcut (Ctrl+1 pressed on AZERTY as Ctrl+&, Ctrl+O on a Russian layout), a button's Alt
        mnemonic (the tour's Alt+N) or a menu's (Alt+F), which Qt matches by the typed letter only."""
        place = place_key_name(event)
        if place is None:
            return False
        sequence = QKeySequence(place)
        menus = [action for action in self.menuBar().actions() if action.menu() is not None]
        for action in [*self.actions(), *(action for menu in menus for action in menu.menu().actions())]:
            if action.isEnabled() and sequence in action.shortcuts():
                action.trigger()
                return True
        buttons = [
            button
            for button in self.findChildren(QAbstractButton)
            if button.window() is self and button.isVisible() and button.isEnabled()
            if QKeySequence.mnemonic(button.text()) == sequence
        ]
        if len(buttons) == 1:  # two buttons with one mnemonic: Qt's own rule, neither is pressed
            buttons[0].click()
            alt_shortcut_acted()  # the Alt a screen reader delivers again must not arm the menu bar
            return True
        for menu in menus:
            if menu.isEnabled() and QKeySequence.mnemonic(menu.text()) == sequence:
                self.menuBar().setActiveAction(menu)
                alt_shortcut_acted()
                return True
        return False

    def _jobs_toggled(self, shown: bool) -> None:
        """Ctrl+J (or the Jobs button) opens the panel with the keyboard in it, so Esc closes it again; closed,
        the page has the keys back (where the user left them, if they were on the page all along)."""
        if shown:
            self.jobs_panel.take_focus()
        else:
            focused = QApplication.focusWidget()
            if focused is None or not self.page_stack.currentWidget().isAncestorOf(focused):
                self.focus_page()

    def _keyboard_in_jobs(self) -> bool:
        focused = QApplication.focusWidget()
        if focused is None or not self.jobs_dock.isVisible():
            return False
        return focused is self.jobs_button or self.jobs_dock.isAncestorOf(focused)

    def set_text_size(self, percent: int) -> None:
        """View → Larger text, Smaller text, Normal text size: the text at `percent` of the desktop's font at once,
        kept for the next start, and said (a screen reader's user hears the size reached, or that it is the last)."""
        if percent == self.text_size:  # Ctrl+= at the largest, Ctrl+- or Ctrl+0 at the smallest (normal)
            line = f"Text size {percent} %, the {'largest' if percent == TEXT_SIZES[-1] else 'smallest'}"
        else:
            self.text_size = percent
            apply_text_size(percent)
            self.settings.setValue(TEXT_SIZE_KEY, percent)
            line = f"Text size {percent} % (Ctrl+= larger, Ctrl+- smaller, Ctrl+0 normal)"
        self.statusBar().showMessage(line, 5000)
        focused = QApplication.focusWidget()
        if isinstance(focused, SpokenFocus):  # the rating view, the review, the recorder: their line is said
            focused.speak(line.split(" (")[0].replace("%", "percent"))

    def changeEvent(self, event) -> None:
        """The desktop switched between light and dark while the app ran (Qt hands the app the new palette):
        hints, warnings and errors take the new palette's tones. Maximized or full screen: the geometry it
        returns to is the one before, and back from it the frame is fitted into the screen."""
        super().changeEvent(event)
        if event.type() == QEvent.Type.PaletteChange:  # the application palette, propagated to each widget
            retone(self)
        elif event.type() == QEvent.Type.WindowStateChange and self.windowState() & NOT_NORMAL_STATES:
            # the geometries of the last moments were the window manager's, sent before the state: not normal ones
            settled = time.monotonic() - STATE_CHANGE_S
            self._normal_geometries = [(when, shape) for when, shape in self._normal_geometries if when <= settled]
        elif event.type() == QEvent.Type.WindowStateChange and event.oldState() & MAXIMIZED_STATES:
            self._remember_normal_geometry(settled=True)  # the window manager sent the size before the state
            keep_frame_on_screen(self, fitted=self._remember_fitted_geometry)  # a size from before a frame

    def _remember_fitted_geometry(self, _geometry: QRect) -> None:
        self._remember_normal_geometry(settled=True)

    def _remember_normal_geometry(self, settled: bool = False) -> None:
        """Keep the window's recent geometries while it is neither maximized nor full screen: what it returns to.
        Qt's own normalGeometry is the maximized one when a window manager on X11 maximized it (the title bar's
        button, a double click): the new size arrives before the new state, so Qt takes it for the normal one."""
        if self.isVisible() and not self.windowState() & NOT_NORMAL_STATES:
            geometry = self.geometry()
            when = time.monotonic() - (STATE_CHANGE_S if settled else 0.0)  # settled: never taken for the WM's
            if self._normal_geometries and self._normal_geometries[-1][1] == geometry:
                when = min(when, self._normal_geometries.pop()[0])
            self._normal_geometries = [*self._normal_geometries[-7:], (when, geometry)]

    def moveEvent(self, event) -> None:
        super().moveEvent(event)
        self._remember_normal_geometry()

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        self._remember_normal_geometry()

    def showEvent(self, event) -> None:
        super().showEvent(event)
        if not self._frame_kept_on_screen:
            self._frame_kept_on_screen = True
            QTimer.singleShot(PREFETCH_PAGES_MS, self, self._prefetch_pages)
            self._remember_normal_geometry(settled=True)  # restored or made: where it returns to from maximized
            keep_frame_on_screen(self, fitted=self._remember_fitted_geometry)

    def closeEvent(self, event) -> None:
        if not self.take_settled_before(self.close, "quit"):
            event.ignore()
            return
        if not self.writes_in_before_quitting():  # first: the pack's save takes the ratings once they are in
            event.ignore()
            return
        if not self.pack_saved_before_quitting():
            event.ignore()
            return
        self.save_window_state()
        self.shutdown()
        super().closeEvent(event)

    def close_when_told(self) -> None:
        """Told to end (SIGTERM, SIGINT: app/main.py): closed as Ctrl+Q closes it, with nobody there to answer —
        a take being recorded is kept (stopped, checked and saved first; thrown away only where it cannot be
        stopped as R does), and a failed last save into the pack quits anyway (the folder keeps every rating; the
        next opening saves them into the pack)."""
        if not self._told_to_end:  # its dialog has nobody to answer: the close below waits again, asking nothing
            if self._writes_wait is not None and self._writes_wait[1] != QUITTING:
                self._called_off(self._writes_wait[1])  # the opening is dropped
            self._stop_waiting_for_writes()
        self._told_to_end = True
        page = self.page_widgets.get("speakers")
        if getattr(page, "take_in_hand", None) == "recording" and not page.keep_take():
            page.discard_take()
        if self.take_question is not None and self.take_question.isVisible():
            self.take_question.done(QMessageBox.StandardButton.Cancel)  # no button's answer: the quit below
        question = self.quit_question
        if question is not None and shiboken6.isValid(question) and question.isVisible():
            question.done(QMessageBox.StandardButton.Yes)  # Quit anyway
            return
        self.close()

    def take_settled_before(self, then, doing: str) -> bool:
        """Whether closing the project now (quitting, opening another) loses no take on the Speakers page. A take
        being recorded: asked first — keep it (stopped, checked and saved, as R does), discard it, or go on
        recording (Esc, the default); one already stopped: its save is waited for. `then` runs once the take is
        saved; not when it could not be (its dialog says why, and trying again asks nothing). A quit wins over an
        opening that comes meanwhile, which is dropped. Before, Ctrl+Q in a take threw it away without a word."""
        page = self.page_widgets.get("speakers")
        held = getattr(page, "take_in_hand", None)
        if held is None:
            return True
        quitting = self._after_take is not None and self._after_take[1] == "quit"
        if doing != "quit" and (quitting or self._quit_waits_for_pack or self._quit_waits_for_writes()):
            self.summary_label.setText(self._summary_text)  # the opening is dropped: the window is closing
            return False
        asked = self._after_take is not None and self._after_take[1] == doing
        self._after_take = (then, doing)  # Ctrl+Q again while it waits: still one closing
        if held == "finishing":
            self._wait_for_take(page)
        elif not (asked and self.take_question is not None and self.take_question.isVisible()):
            self._ask_about_take(page, doing)  # a quit replaces an opening's question
        return False

    def _ask_about_take(self, page, doing: str) -> QMessageBox:
        replace_dialog(self.take_question)
        box = QMessageBox(
            QMessageBox.Icon.Question,
            "Keep the take being recorded?",
            f"A take is being recorded: {page.take_described}.\n\nKeep it (it is stopped, checked and saved, as R "
            f"does) before you {doing}, or discard it?",
            QMessageBox.StandardButton.NoButton,
            self,
        )
        box.setTextFormat(Qt.TextFormat.PlainText)
        keep = box.addButton(f"&Keep the take and {shown_as_is(doing)}", QMessageBox.ButtonRole.AcceptRole)
        discard = box.addButton(f"&Discard it and {shown_as_is(doing)}", QMessageBox.ButtonRole.DestructiveRole)
        back = box.addButton("&Go on recording", QMessageBox.ButtonRole.RejectRole)
        box.setDefaultButton(back)
        box.setEscapeButton(back)
        box.buttonClicked.connect(lambda button: self._take_answered(page, button, keep, discard))
        self.take_question = box
        box.open()
        return box

    def _take_answered(self, page, button, keep, discard) -> None:
        if self._after_take is None:
            return
        then = self._after_take[0]
        if button is keep and page.keep_take():
            self._wait_for_take(page)
            return
        self._after_take = None
        if button is discard:
            page.discard_take()
            then()
        elif button is keep and page.take_in_hand is None:
            then()  # the take ended meanwhile (saved, or nothing to keep)
        else:  # Go on recording: the quit or the opening is dropped
            self.summary_label.setText(self._summary_text)
            self.quit_called_off()

    def _wait_for_take(self, page) -> None:
        if not self._waiting_for_take:
            self._waiting_for_take = True
            page.take_settled.connect(self._take_settled)
        self.statusBar().showMessage(f"Saving the take before you {self._after_take[1]}…")

    def _take_settled(self, saved: bool) -> None:
        page = self.page_widgets.get("speakers")
        self._waiting_for_take = False
        page.take_settled.disconnect(self._take_settled)
        self.statusBar().clearMessage()
        after, self._after_take = self._after_take, None
        if after is not None and (saved or self._told_to_end):
            after[0]()
        else:  # the take could not be saved: the quit or the opening is dropped
            self.summary_label.setText(self._summary_text)
            self.quit_called_off()

    def _open_after_take(self, path: Path, then) -> None:
        """A project opened in the background is shown once the Speakers page's take is settled (asked first
        while one is being recorded), then once the user's own writes to the project open now are in
        (`writes_in_before`)."""
        doing = f"open {Path(path).name}"

        def after_take() -> None:
            if self.writes_in_before(lambda: self._open_after_take(path, then), doing):  # a take begun meanwhile
                then()  # is asked about then

        if self.take_settled_before(after_take, doing):
            after_take()

    def pack_saved_before_quitting(self) -> bool:
        """Whether the window may close as far as the open pack goes: its file holds every rating, or the
        annotator chose to quit without. Otherwise the close waits (False) while the last save runs, and the
        window closes by itself once it is done: silently when it takes a moment, with `PackQuitDialog` saying
        how far it is when it takes longer (a pack of real audio on a stick), asked first when it fails."""
        if self._quit_without_pack:
            return True
        if self._quit_waits_for_pack:
            return False  # Ctrl+Q again while it waits
        if not self.packs.flush():
            return True
        self._quit_waits_for_pack = True
        self.packs.settled.connect(self._pack_settled_for_quit)
        self._pack_quit_timer.start(QUIT_DIALOG_DELAY_MS)
        return False

    def _show_pack_quit_progress(self) -> None:
        if not self._quit_waits_for_pack or not self.packs.flushing:
            return
        replace_dialog(self.pack_quit_dialog)
        self.pack_quit_dialog = PackQuitDialog(self.packs, self)
        self.pack_quit_dialog.finished.connect(self._pack_quit_answered)
        self.pack_quit_dialog.open()

    def _pack_quit_answered(self, result: int) -> None:
        if result == PackQuitDialog.QUIT_UNSAVED:
            self._stop_waiting_for_pack()
            self.packs.stop_flushing(cancel=True)
            self._quit_without_pack = True
            self.close()
        elif result == PackQuitDialog.BACK:  # automatic saves go on
            self._stop_waiting_for_pack()
            self.packs.stop_flushing(cancel=False)
            self.quit_called_off()
            self.focus_page()

    def _pack_settled_for_quit(self, ok: bool) -> None:
        self._stop_waiting_for_pack()
        if self.pack_quit_dialog is not None and self.pack_quit_dialog.isVisible():
            self.pack_quit_dialog.finished.disconnect(self._pack_quit_answered)
            self.pack_quit_dialog.accept()
        if ok:
            self.close()
        elif self._told_to_end:  # nobody to ask: the folder keeps every rating
            self._quit_without_pack = True
            self.close()
        else:
            self.ask_quitting_with_a_stale_pack()

    def writes_in_before_quitting(self) -> bool:
        """Whether the window may close as far as the user's own writes go (`writes_in_before`), or the annotator
        chose to quit without them. Before, with no pack open, the pack's wait stood in: its dialog spoke of a pack
        and called the ratings kept, and quitting without them froze the window for the writer's 10 s."""
        if self._quit_waits_for_pack:  # Ctrl+Q again while the pack is saved: that wait closes, then asks this
            return False
        return self.writes_in_before(self.close, QUITTING)

    def writes_in_before(self, then, doing: str) -> bool:
        """Whether the project may be closed now — `doing` "quit", or "open NAME" for another project — as far as
        the user's own writes go (ratings saved ahead, a note, an undo): all committed. Otherwise it waits (False)
        and `then` runs once they are in: at once when it takes a moment (a busy disk's flush), with
        `WritesWaitDialog` when it takes longer (another program holding the project's write lock); a write that
        fails meanwhile stops it, saying why. A quit wins over an opening that comes meanwhile, which is dropped.
        Before, an opening closed the project's writer on the UI thread: the window froze for up to 10 s, and a
        rating that failed after it was not told."""
        waiting = self._writes_wait
        if doing != QUITTING and (self._quit_waits_for_pack or self._quit_waits_for_writes()):
            self._called_off(doing)  # the opening is dropped: the window is closing
            return False
        waited_for: list[Operation] = []
        if waiting is not None and (waiting[1] != doing or not self._unfinished_writes()):
            waited_for = self._writes_waited_for  # one that failed since the last poll stops this too
            self._stop_waiting_for_writes()  # a quit or another project instead of this opening, or its writes in
            if doing == QUITTING and waiting[1] != QUITTING:
                self._called_off(waiting[1])
            waiting = None
        if self._writes_given_up == doing:
            return True
        unfinished = self._unfinished_writes()
        failed = any(op.status == "failed" for op in waited_for)
        if not unfinished and not failed:
            return True
        self._writes_wait = (then, doing)  # Ctrl+Q again while it waits: still one wait
        if waiting is None:
            self._writes_waited_since = time.monotonic()
            self._writes_waited_for = waited_for + [op for op in unfinished if op not in waited_for]
            self._writes_poll.start()  # its first poll says why, if one failed
        return False

    def _quit_waits_for_writes(self) -> bool:
        return self._writes_wait is not None and self._writes_wait[1] == QUITTING

    def _unfinished_writes(self) -> list[Operation]:
        return self.session.unfinished_writes() if self.session is not None else []

    def _poll_writes(self) -> None:
        then, doing = self._writes_wait
        quitting = doing == QUITTING
        unfinished = self._unfinished_writes()
        self._writes_waited_for += [op for op in unfinished if op not in self._writes_waited_for]
        failed = [op for op in self._writes_waited_for if op.status == "failed"]
        if failed and not (quitting and self._told_to_end):  # not stored: the project stays, and says why
            self._stop_waiting_for_writes()
            self._called_off(doing)
            path = self.session.path if self.session is not None else None
            what = "\n".join(f"{op.label}: {explained_error(op.error, path) or op.error}" for op in failed)
            action = "quitting" if quitting else f"opening {doing.removeprefix('open ')}"
            show_error(
                self,
                SpokenBenchError(
                    f"Not {action}: {what}\n\nNothing of it is stored; do it again, or {doing} again to leave "
                    "without it."
                ),
                "Not saved",
            )
            return
        left = len(unfinished)
        waited = time.monotonic() - self._writes_waited_since
        dialog = self.writes_dialog
        shown = dialog is not None and shiboken6.isValid(dialog) and dialog.isVisible()
        if left and not (quitting and self._told_to_end and waited >= TOLD_TO_END_WRITES_S):
            if shown:
                dialog.show_left(left)
            elif waited * 1000 >= QUIT_DIALOG_DELAY_MS and not (quitting and self._told_to_end):
                replace_dialog(dialog)
                self.writes_dialog = WritesWaitDialog(left, self, doing)
                self.writes_dialog.finished.connect(self._writes_dialog_answered)
                self.writes_dialog.open()
            return
        self._stop_waiting_for_writes()
        if left:  # told to end and still waiting: nobody to ask
            self._writes_given_up = QUITTING
        then()

    def _writes_dialog_answered(self, result: int) -> None:
        then, doing = self._writes_wait
        self._stop_waiting_for_writes()
        if result == WritesWaitDialog.WITHOUT:
            self._writes_given_up = doing
            then()
        else:  # back to the project, the writes going on
            self._called_off(doing)
            self.focus_page()

    def _called_off(self, doing: str) -> None:
        if doing == QUITTING:
            self.quit_called_off()
        else:  # the opening is dropped, and an answer to go on without the writes given to any opening
            self.summary_label.setText(self._summary_text)
            if self._writes_given_up != QUITTING:
                self._writes_given_up = None

    def quit_called_off(self) -> None:
        """The annotator went back from a quit (a dialog's Back, Stay, Go on recording, a write that failed): an
        earlier "quit without …" answer of it is forgotten, so the next Ctrl+Q asks again and the pack is saved."""
        self._quit_without_pack, self._writes_given_up = False, None
        self.packs.resume_saves()

    def _stop_waiting_for_writes(self) -> None:
        self._writes_poll.stop()
        self._writes_wait = None
        dialog = self.writes_dialog
        if dialog is not None and shiboken6.isValid(dialog) and dialog.isVisible():
            dialog.finished.disconnect(self._writes_dialog_answered)
            dialog.accept()

    def _stop_waiting_for_pack(self) -> None:
        self._pack_quit_timer.stop()
        if self._quit_waits_for_pack:
            self._quit_waits_for_pack = False
            self.packs.settled.disconnect(self._pack_settled_for_quit)

    def ask_quitting_with_a_stale_pack(self) -> QMessageBox | None:
        """The quit's save into the pack failed: the file to send back lacks ratings, so ask (Stay by default).
        Nothing is lost either way: the folder keeps them, and the next opening saves them."""
        if self.packs.flush_failure is None:
            return None
        path, reason = self.packs.flush_failure
        box = QMessageBox(
            QMessageBox.Icon.Warning,
            "Quit with ratings not in the pack?",
            f"The last save into {path.name} failed: {reason.removeprefix(f'{path}: ')}.\n\nThe pack file lacks "
            f"ratings made since; do not send it back yet. Every rating is kept in {pack_folder(path).name} and "
            "goes into the pack when it is opened again where it can be written.",
            QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.No,
            self,
        )
        box.setTextFormat(Qt.TextFormat.PlainText)
        box.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        box.button(QMessageBox.StandardButton.Yes).setText("Quit anyway")
        box.button(QMessageBox.StandardButton.No).setText("Stay")
        box.setDefaultButton(QMessageBox.StandardButton.No)
        box.finished.connect(self._stale_pack_answered)
        self.quit_question = box
        box.open()
        return box

    def _stale_pack_answered(self, result: int) -> None:
        if result == QMessageBox.StandardButton.Yes:
            self.packs.stop_flushing(cancel=True)  # and closing the pack saves nothing more
            self._quit_without_pack = True
            self.close()
        else:
            self.quit_called_off()
