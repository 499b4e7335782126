"""The Results page: the metric panels of issue 11 (items 4 and 5) for the runs picked, with the papers'
published numbers one toggle away.

The panels are computed in a job process (core/results/snapshot.py `compute_results`: the metrics engine, 95%
intervals, the rows behind every point, every table, the published layer, returned as plain data) and drawn off
the UI thread (widgets/metric_panels.py). The page recomputes when the `responses`, `runs` or `items` tables
change — an evaluation writing answers here or in another process — a little after the last change, and the
newest computation supersedes an older one still running; recent results are kept by those tables' change
counters and the runs picked (`ResultsCache`), so coming back to a selection that did not change computes
nothing. While a computation runs, the previous figures stay, marked as from before the change, and the page
keeps answering keys. Clicking a point lists its questions
and the model's answers in the detail pane (read in a QueryOp), with the audio file the model heard and a Play
button. Runs in mode 'simulated' are labelled "simulated" in the run picker, the panels, the tables and the
exports. The gender-probe panel has a detail below its figure (widgets/gender_panel.py, computed by
core/results/gender_views.py in a job process like the panels): J, Δ with significance marks, ν and κ per category and setting, the male- vs
female-voice answers per question sorted by disagreement, and a listening view of one probe's male, female and
neutralized question clips."""

from __future__ import annotations

import time
from pathlib import Path

import pandas as pd
from PySide6.QtCore import QEvent, Qt, QTimer, Signal
from PySide6.QtGui import QTextDocumentFragment
from PySide6.QtWidgets import (
    QAbstractItemView,
    QFileDialog,
    QFrame,
    QHBoxLayout,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QPushButton,
    QScrollArea,
    QSplitter,
    QStyle,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from spokenbench.app.operations import BackgroundOp, ProjectSession, QueryOp
from spokenbench.core.evaluation.batches import JOB_KIND_COLLECT
from spokenbench.core.evaluation.runner import JOB_KIND as EVALUATE_KIND
from spokenbench.core.jobs.host import run_task_in_job_process, task_call
from spokenbench.core.results.details import point_details
from spokenbench.core.results.gender_views import compute_gender_view, question_versions
from spokenbench.core.results.model import PanelSet, Point, panel_heading
from spokenbench.core.results.names import PANEL_ORDER
from spokenbench.core.results.snapshot import (
    ResultsCache,
    ResultsRequest,
    ResultsSnapshot,
    compute_results,
    open_read_only,
    results_versions,
)
from spokenbench.widgets.bidi import follow_text_direction
from spokenbench.widgets.gender_panel import GenderPanel
from spokenbench.widgets.metric_panels import MetricPanelView, save_table
from spokenbench.widgets.screen_reader import no_tab_stop
from spokenbench.widgets.tables import DraggedWidths

RESULTS_TABLES = frozenset({"responses", "runs", "items"})
REFRESH_DELAY_MS = 400  # gather a burst of changes into one recomputation
RUNS_CHANGED_DELAY_MS = 50  # a run started, ended or was resumed: show it at once
STREAMING_INTERVAL_MS = 1000  # while answers stream in, recompute at most this often
# jobs that store answers or items: while one runs, the panels wait for it to end (recomputing them every second is
# seconds of pandas in a job process each time, competing with the job for the machine)
ANSWERING_KINDS = frozenset({EVALUATE_KIND, "import-results", JOB_KIND_COLLECT, "import"})
DETAIL_LIMIT = 500
LISTS_WIDTH = 250  # the runs' and panels' lists at least (`_fit_lists`)
LISTS_SHARE = 0.35  # and at most this share of the page, however large the text
DETAIL_COLUMNS = (
    ("question_id", "question"),
    ("series", "model"),
    ("language", "language"),
    ("accent", "accent"),
    ("gender", "gender"),
    ("order", "order"),
    ("question_text", "question text"),
    ("options", "options"),
    ("answer", "gold"),
    ("option_order", "presented order"),
    ("prediction", "answered (presented letter)"),
    ("mapped_option", "answered (original option)"),
    ("correct", "correct"),
    ("raw_text", "raw answer"),
    ("audio_kind", "audio"),
)
LONG_DETAIL = {"question text", "options", "raw answer"}  # their titles: at most LONG_DETAIL_PX wide, whole on hover
LONG_DETAIL_PX = 320


class ResultsPage(QWidget):
    panels_ready = Signal(object)  # PanelSet, after it is shown
    details_ready = Signal(object)  # DataFrame of the clicked point's responses
    exported = Signal(str)  # the path of a file just written
    gender_ready = Signal(object)  # GenderView, after the gender-probe detail shows it
    versions_ready = Signal(object)  # QuestionVersions, after the listening view shows them

    def __init__(self, window=None):
        super().__init__()
        self.window = window
        self.session: ProjectSession | None = None
        self.panels: PanelSet | None = None
        self.runs: list[dict] = []
        self.selected_runs: set[int] | None = None  # None: every run (new runs join in)
        self.details: pd.DataFrame | None = None
        self.clicked: Point | None = None
        self.details_take_keys = False  # the point was chosen with the keys (`PointKeys`)
        self.cache = ResultsCache()  # recent results by the change counters they were read at and the runs picked
        self.computations = 0  # job processes started (a cached result starts none): for tests and the benchmark
        self.stale_reason = "the latest change"  # what the figures shown are from before, while new ones compute
        self._last_refresh = 0.0
        self._gender_stale = True  # the gender-probe detail is computed when shown, after each recomputation

        self.summary = QLabel("No project open")
        self.summary.setWordWrap(True)
        self.run_list = QListWidget()
        self.run_list.setTextElideMode(Qt.TextElideMode.ElideMiddle)  # the whole line in the tooltip
        self.run_list.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.run_list.setWordWrap(True)
        self.run_list.itemChanged.connect(self._run_checked)
        all_runs = QPushButton("All runs")
        all_runs.clicked.connect(self.select_all_runs)
        self.run_list.setAccessibleName("Runs")  # the bold heading above is a label of its own
        self.panel_list = QListWidget()
        self.panel_list.setAccessibleName("Panels")
        for key in PANEL_ORDER:  # named before the first computation ends (the ids are no words for a user)
            title, tooltip = panel_heading(key)
            item = QListWidgetItem(title)
            item.setToolTip(tooltip)
            item.setData(Qt.ItemDataRole.UserRole, key)
            self.panel_list.addItem(item)
        self.panel_list.currentRowChanged.connect(self._panel_chosen)

        left = QWidget()
        left_layout = QVBoxLayout(left)
        left_layout.setContentsMargins(0, 0, 0, 0)
        left_layout.addWidget(QLabel("<b>Runs</b>"))
        left_layout.addWidget(self.run_list, 2)
        left_layout.addWidget(all_runs)
        left_layout.addWidget(QLabel("<b>Panels</b>"))
        left_layout.addWidget(self.panel_list, 3)

        self.view = MetricPanelView()
        self.view.point_clicked.connect(self.show_point)
        self.view.point_entered.connect(lambda point: self.show_point(point, take_keys=True))
        self.view.export_requested.connect(self.choose_export_file)
        self.gender_panel = GenderPanel()
        self.gender_panel.question_chosen.connect(self.load_versions)
        self.gender_panel.play_requested.connect(self.play_path)
        # the figure shows the answer setting the detail has picked (all four side by side do not fit one axis)
        self.gender_panel.setting_picker.currentIndexChanged.connect(
            lambda _index: self.view.set_view_key(self.gender_panel.setting)
        )
        self.gender_panel.hide()

        self.detail_title = QLabel("Click a point to list its questions and answers.")
        self.detail_title.setWordWrap(True)
        self.detail = QTableWidget()
        self.detail.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.detail.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.detail.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.detail.setWordWrap(False)
        self.detail.setTabKeyNavigation(False)  # arrows move between its cells; Tab leaves for Play
        follow_text_direction(self.detail)  # an Arabic or Hebrew question or answer right-to-left
        self.detail_widths = DraggedWidths(self.detail, "results-detail", self._fit_detail)  # a person's widths stay
        self.detail.itemSelectionChanged.connect(self._detail_selected)
        self.detail.activated.connect(lambda _index: self.play_selected())  # Enter, as a double-click
        self.play_button = QPushButton("▶ Play")
        self.play_button.setToolTip("Play the audio this response's model heard (double-click a row, or Enter)")
        self.play_button.setEnabled(False)
        self.play_button.clicked.connect(self.play_selected)
        self.audio_note = QLabel()
        self.audio_note.setWordWrap(True)
        detail = QWidget()
        detail_layout = QVBoxLayout(detail)
        detail_layout.setContentsMargins(0, 0, 0, 0)
        detail_layout.addWidget(self.detail_title)
        detail_layout.addWidget(self.detail, 1)
        self.play_bar = QWidget()
        play_bar = QHBoxLayout(self.play_bar)
        play_bar.setContentsMargins(0, 0, 0, 0)
        play_bar.addWidget(self.play_button)
        play_bar.addWidget(self.audio_note, 1)
        detail_layout.addWidget(self.play_bar)

        # the panel (figure and table) gets the height; the detail pane is one line until a point is clicked
        self.splitter = right = QSplitter(Qt.Orientation.Vertical)
        # the gender-probe panel's detail sits below its figure, in the panel's part of the page
        self.upper = QSplitter(Qt.Orientation.Vertical)
        self.upper.addWidget(self.view)
        self.upper.addWidget(self.gender_panel)
        self.upper.setChildrenCollapsible(False)
        right.addWidget(self.upper)
        right.addWidget(detail)
        right.setChildrenCollapsible(False)
        right.setStretchFactor(0, 1)
        right.setStretchFactor(1, 0)
        right.setSizes([900, 30])
        self._open_details(False)
        # the figures, the gender detail and the published layer scroll on a laptop's screen; the lists stay put
        self.panel_scroll = panel_scroll = QScrollArea()
        panel_scroll.setWidgetResizable(True)
        panel_scroll.setFrameShape(QFrame.Shape.NoFrame)
        panel_scroll.setWidget(right)
        no_tab_stop(panel_scroll)
        self.body = body = QSplitter(Qt.Orientation.Horizontal)
        body.addWidget(left)
        body.addWidget(panel_scroll)
        body.setStretchFactor(1, 1)
        body.setSizes([LISTS_WIDTH, 900])
        self.lists_width_by_hand = False  # the person dragged the splitter: their width is kept (`_fit_lists`)
        body.splitterMoved.connect(lambda *_: setattr(self, "lists_width_by_hand", True))
        body.installEventFilter(self)
        self._fit_lists_soon = QTimer(self, singleShot=True, interval=0)
        self._fit_lists_soon.timeout.connect(self._fit_lists)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(6, 6, 6, 6)
        # a row of constant height, empty unless a job is storing answers: showing or hiding a row would resize
        # the figure below it, and redrawing the figure kept the window from reacting for 0.3 s
        self.answering_note = QLabel("")
        self.refresh_now = QPushButton("Refresh now")
        self.refresh_now.setToolTip("Recompute the panels with the answers stored so far (the window may pause)")
        self.refresh_now.clicked.connect(self.refresh)
        keep_size = self.refresh_now.sizePolicy()
        keep_size.setRetainSizeWhenHidden(True)
        self.refresh_now.setSizePolicy(keep_size)
        self.refresh_now.hide()
        answering = QHBoxLayout()
        answering.setContentsMargins(0, 0, 0, 0)
        answering.addWidget(self.answering_note, 1)
        answering.addWidget(self.refresh_now)
        layout.addWidget(self.summary)
        layout.addLayout(answering)
        layout.addWidget(body, 1)

        self._refresh_timer = QTimer(self, singleShot=True, interval=REFRESH_DELAY_MS)
        self._refresh_timer.timeout.connect(self.refresh)
        self._changed_while_hidden = False
        self.waiting_for_job = False  # changes seen while a job stores answers: recomputed once it ends
        self.panel_list.setCurrentRow(0)

    def _fit_lists(self) -> None:
        """The runs' and panels' lists wide enough for the panels' names at the text size now (at most
        LISTS_SHARE of the page; LISTS_WIDTH at least): at 200 % they kept their 250 pixels and read 'Accuracy by
        leve', 'Permutation voti'. A width the person dragged the splitter to is kept."""
        total = sum(self.body.sizes())
        if self.lists_width_by_hand or total <= 0:
            return
        names = self.panel_list.fontMetrics()
        widest = max(
            names.horizontalAdvance(self.panel_list.item(row).text()) for row in range(self.panel_list.count())
        )
        bar = self.panel_list.style().pixelMetric(QStyle.PixelMetric.PM_ScrollBarExtent)
        wanted = widest + bar + 2 * self.panel_list.frameWidth() + 4 * names.averageCharWidth()  # the item's margins
        width = min(max(wanted, LISTS_WIDTH), int(total * LISTS_SHARE))
        if width != self.body.sizes()[0]:
            self.body.setSizes([width, total - width])

    def eventFilter(self, watched, event) -> bool:
        if watched is self.body and event.type() == QEvent.Type.Resize:  # once the splitter shared its new width
            self._fit_lists_soon.start()
        return super().eventFilter(watched, event)

    def changeEvent(self, event) -> None:
        super().changeEvent(event)
        if event.type() == QEvent.Type.FontChange:  # larger text (View → Larger text): wider names
            self._fit_lists()

    def showEvent(self, event) -> None:
        super().showEvent(event)
        if self._changed_while_hidden and self.session is not None:
            self._changed_while_hidden = False
            self._schedule_refresh(RUNS_CHANGED_DELAY_MS)

    # -- session ------------------------------------------------------------------------------------

    def set_session(self, session: ProjectSession | None) -> None:
        if self.session is not None:
            try:
                self.session.changes.changed.disconnect(self._project_changed)
                self.session.jobs_listed.disconnect(self._jobs_listed)
            except (RuntimeError, TypeError):  # the window may already have deleted the old session
                pass
        self.session = session
        self.panels, self.runs, self.selected_runs = None, [], None
        self.cache = ResultsCache()
        self._refresh_timer.stop()
        self._changed_while_hidden = False
        self._show_waiting_for_job(False)
        self._clear_details()
        self._fill_runs([])
        self.view.set_panel(None)
        self._gender_stale = True
        self.gender_panel.set_view(None)
        self.gender_panel.set_versions(None)
        if session is None:
            self.summary.setText("No project open")
            return
        session.changes.changed.connect(self._project_changed)
        session.jobs_listed.connect(self._jobs_listed)
        self.refresh()

    def _project_changed(self, tables: set[str]) -> None:
        if not tables & RESULTS_TABLES:
            return
        self.stale_reason = (
            "a run started, ended or changed"
            if "runs" in tables
            else "the latest changes to items"
            if "items" in tables
            else "the latest answers"
        )
        if not self.isVisible():  # a recomputation starts a job process: once shown, not before
            self._changed_while_hidden = True
            return
        # soon after a run starts or ends; a little later while answers stream in; never more often than
        # STREAMING_INTERVAL_MS from the start of the previous computation
        wanted = RUNS_CHANGED_DELAY_MS if tables & {"runs", "items"} else REFRESH_DELAY_MS
        since = (time.monotonic() - self._last_refresh) * 1000
        self._schedule_refresh(int(max(wanted, STREAMING_INTERVAL_MS - since)))

    def _schedule_refresh(self, delay: int) -> None:
        if self._answering():
            self._show_waiting_for_job(True)  # recomputed once the job ends (`_jobs_listed`), or on Refresh now
            return
        if not self._refresh_timer.isActive() or self._refresh_timer.remainingTime() > delay:
            self._refresh_timer.start(delay)

    def _answering(self) -> bool:
        """A job of this project is storing answers: one of this window's (from the moment it starts, before its
        job process has recorded it) or any process's."""
        if self.session is None:
            return False
        if any(getattr(op, "kind", None) in ANSWERING_KINDS and op.is_running for op in self.session.runner.running):
            return True
        return any(job.is_live and job.kind in ANSWERING_KINDS for job in self.session.jobs)

    def _jobs_listed(self, jobs) -> None:
        if self.waiting_for_job and not self._answering():
            ended = [job for job in jobs if job.kind in ANSWERING_KINDS and not job.is_live]
            self.stale_reason = f"'{ended[0].label}' finished" if ended else "the job finished"
            self._show_waiting_for_job(False)
            self._schedule_refresh(RUNS_CHANGED_DELAY_MS)

    def _show_waiting_for_job(self, waiting: bool) -> None:
        self.waiting_for_job = waiting
        self.answering_note.setText(
            "A job is storing answers or items: these panels are from before it and update when it ends."
            if waiting
            else ""
        )
        self.refresh_now.setVisible(waiting)

    def refresh(self) -> BackgroundOp | None:
        """Recompute every panel for the runs picked, in a job process (a result kept for the same change
        counters and runs is shown without one); the figures shown stay, marked stale, until it ends."""
        if self.session is None:
            return None
        self._last_refresh = time.monotonic()
        self._show_waiting_for_job(False)
        request = ResultsRequest(None if self.selected_runs is None else tuple(sorted(self.selected_runs)))
        path, cache = self.session.path, self.cache
        self._show_stale(True)

        def compute(progress) -> ResultsSnapshot:
            project = open_read_only(path)
            try:
                versions = results_versions(project.conn)
            finally:
                project.close()
            known = cache.get(versions, request)
            if known is not None:
                return known
            self.computations += 1
            label = "Computing the result panels"
            snapshot = run_task_in_job_process(task_call(compute_results, str(path), request), progress, label)
            cache.put(snapshot)
            return snapshot

        return (
            BackgroundOp(
                self.session.runner,
                compute,
                label="Computing the result panels",
                parent=self,
                supersede="results-panels",
            )
            .success(self._show)
            .failure(self._computing_failed, dialog=True)
            .run()
        )

    def _show_stale(self, computing: bool) -> None:
        """While new figures compute, the ones shown say what they are from before (none shown: the summary says
        they are being computed)."""
        if not computing:
            self.answering_note.setText("")
        elif self.panels is None:
            self.summary.setText("Computing the panels…")
        else:
            self.answering_note.setText(f"<i>Updating… the figures below are from before {self.stale_reason}.</i>")

    def _computing_failed(self, _error) -> None:
        self._show_stale(False)
        self.summary.setText("Computing the panels failed." + (" The figures below are older." if self.panels else ""))

    def _show(self, snapshot: ResultsSnapshot) -> None:
        runs, panels = snapshot.runs, snapshot.panels
        self._show_stale(False)
        self.runs = runs
        self.panels = panels
        self._fill_runs(runs)
        n_mcq, n_probe = len(panels.responses), len(panels.probe_responses)
        simulated = [s for s in panels.series if panels.simulated.get(s)]
        note = f" · simulated runs: {', '.join(simulated)} (numbers labelled 'yours (simulated)')" if simulated else ""
        self.summary.setText(
            f"{len(panels.series)} model(s) from {len(panels.runs)} run(s): {n_mcq:,} multiple-choice and "
            f"{n_probe:,} gender-probe responses · 95% intervals from {panels.n_resamples} question-level "
            f"bootstrap resamples unless a tooltip says otherwise · computed in {panels.timings['total']:.2f} s" + note
        )
        self._update_panel_names()
        self._gender_stale = True
        self._panel_chosen(self.panel_list.currentRow())
        self.panels_ready.emit(panels)

    # -- runs and panels ----------------------------------------------------------------------------

    def _fill_runs(self, runs: list[dict]) -> None:
        self.run_list.blockSignals(True)
        self.run_list.clear()
        for run in runs:
            mode = "SIMULATED" if run.get("simulated") else run.get("mode", "")
            text = f"#{run['id']} {run['model']} · {mode} · {run.get('responses', 0):,} responses · {run.get('status')}"
            item = QListWidgetItem(text.replace(" · ", "\n", 1))  # the model on a line of its own
            item.setData(Qt.ItemDataRole.UserRole, run["id"])
            item.setToolTip("\n".join(t for t in (text, run.get("name", "")) if t))
            item.setFlags(item.flags() | Qt.ItemFlag.ItemIsUserCheckable)
            chosen = self.selected_runs is None or run["id"] in self.selected_runs
            item.setCheckState(Qt.CheckState.Checked if chosen else Qt.CheckState.Unchecked)
            self.run_list.addItem(item)
        self.run_list.blockSignals(False)

    def _run_checked(self, _item) -> None:
        checked = set()
        for row in range(self.run_list.count()):
            item = self.run_list.item(row)
            if item.checkState() == Qt.CheckState.Checked:
                checked.add(item.data(Qt.ItemDataRole.UserRole))
        every = {run["id"] for run in self.runs}
        self.selected_runs = None if checked == every else checked
        self._refresh_timer.start()

    def select_runs(self, run_ids) -> BackgroundOp | None:
        """Show the panels of these runs only (None: every run)."""
        self.selected_runs = None if run_ids is None else set(run_ids)
        self._fill_runs(self.runs)
        return self.refresh()

    def select_all_runs(self) -> None:
        self.select_runs(None)

    def _update_panel_names(self) -> None:
        if self.panels is None:
            return
        for row, key in enumerate(PANEL_ORDER):
            panel = self.panels.panels[key]
            item = self.panel_list.item(row)
            item.setText(panel.title + ("  (empty)" if panel.empty else ""))
            item.setToolTip(f"{panel.mirrors}\n{panel.description}")
            item.setData(Qt.ItemDataRole.UserRole, key)

    def _panel_chosen(self, row: int) -> None:
        if self.panels is None or not 0 <= row < len(PANEL_ORDER):
            self.view.set_panel(None)
            self._show_gender_detail(False)
            return
        self.view.set_panel(
            self.panels.panels[PANEL_ORDER[row]], self.panels.series, self.panels.simulated, self.panels.color_order
        )
        self._show_gender_detail(PANEL_ORDER[row] == "gender_probe")

    def show_panel(self, key: str) -> None:
        self.panel_list.setCurrentRow(PANEL_ORDER.index(key))

    # -- the gender-probe detail --------------------------------------------------------------------

    def _show_gender_detail(self, shown: bool) -> None:
        """Below the gender-probe panel's figure: its detail (per category, per question, listening), computed
        the first time it is shown after each recomputation of the panels."""
        was_shown = not self.gender_panel.isHidden()
        self.gender_panel.setVisible(shown)
        total = sum(self.upper.sizes())
        if shown and not was_shown and total:
            self.upper.setSizes([total * 9 // 20, total - total * 9 // 20])
        if shown and self._gender_stale:
            self.refresh_gender()

    def refresh_gender(self) -> BackgroundOp | None:
        """Compute the gender-probe detail of the runs picked in a job process, as the panels are (the statistics
        behind it stay out of the app's process)."""
        if self.session is None:
            return None
        self._gender_stale = False
        wanted = None if self.selected_runs is None else sorted(self.selected_runs)
        resamples = self.panels.n_resamples if self.panels is not None else 1000
        call = task_call(compute_gender_view, str(self.session.path), wanted, resamples)
        label = "Computing the gender-probe detail"
        return (
            BackgroundOp(
                self.session.runner,
                lambda progress: run_task_in_job_process(call, progress, label),
                label=label,
                parent=self,
                supersede="results-gender",
            )
            .success(self._show_gender)
            .run()
        )

    def _show_gender(self, view) -> None:
        self.gender_panel.set_view(view)
        self.view.set_view_key(self.gender_panel.setting)
        self.gender_ready.emit(view)

    def load_versions(self, item_id: int) -> QueryOp | None:
        """Read one probe's male, female and neutralized question clips for the listening view."""
        if self.session is None:
            return None
        return (
            QueryOp(
                self.session,
                lambda project, progress: question_versions(project, item_id),
                label="Reading a question's voices",
                parent=self,
                supersede="results-versions",
            )
            .success(self._show_versions)
            .run()
        )

    def _show_versions(self, versions) -> None:
        self.gender_panel.set_versions(versions)
        self.versions_ready.emit(versions)

    def play_path(self, path: str) -> str | None:
        """Play a file through the window's player (the listening view's ▶ Play)."""
        play = getattr(self.window, "play_file", None)
        if play is None:
            self.gender_panel.listen_note.setText(f"No player in this window; the file is {path}")
            return None
        message = play(Path(path))
        if message:
            self.gender_panel.listen_note.setText(message)
        return message

    # -- a clicked point ----------------------------------------------------------------------------

    def show_point(self, point: Point, take_keys: bool = False) -> QueryOp | None:
        """List the questions and answers behind `point` (read on the pool: question texts and audio paths);
        `take_keys`: it was chosen with the keys, and its responses take them once listed."""
        if self.session is None or self.panels is None:
            return None
        panels = self.panels
        probe = self.view.panel is not None and self.view.panel.key == "gender_probe"
        self.clicked = point
        self.details_take_keys = take_keys
        self._detail_titled(f"Reading the {point.n} {point.unit} behind {point.series} · {point.x}…")
        return (
            QueryOp(
                self.session,
                lambda project, progress: point_details(project, panels, point, probe, DETAIL_LIMIT),
                label="Reading a point's questions",
                parent=self,
                supersede="results-details",
            )
            .success(lambda rows: self._show_details(point, rows))
            .run()
        )

    def _detail_titled(self, title: str) -> None:
        """The title above the responses, which a screen reader says as the table's name."""
        self.detail_title.setText(title)
        self.detail.setAccessibleName(QTextDocumentFragment.fromHtml(title).toPlainText())

    def _fit_detail(self) -> None:
        """Each column as wide as its text, a long text at most LONG_DETAIL_PX, and a column a person dragged as
        they left it (`DraggedWidths`: kept from one point's responses to the next, and the next start)."""
        with self.detail_widths.by_code():
            self.detail.resizeColumnsToContents()
            for column, title in self.detail_widths.titles().items():
                if title in LONG_DETAIL:
                    self.detail.setColumnWidth(column, min(self.detail.columnWidth(column), LONG_DETAIL_PX))
        self.detail_widths.apply()

    def _show_details(self, point: Point, rows: pd.DataFrame) -> None:
        rows = rows.copy()
        if "question_id" in rows.columns:  # a question's answers together (a pair's two orders side by side)
            rows = rows.sort_values("question_id", kind="stable")
        rows["series"] = rows["model"] if "model" in rows.columns else ""
        if {"mapped_option", "answer"} <= set(rows.columns):
            rows["correct"] = (rows["mapped_option"].astype(str) == rows["answer"].astype(str)).map(
                {True: "yes", False: "no"}
            )
        self.details = rows.reset_index(drop=True)
        shown_from = f"{len(rows)} of {len(point.rows)}" if len(point.rows) > len(rows) else f"{len(rows)}"
        self._detail_titled(
            f"<b>{point.series}</b> · {point.facet} · {point.x}: {shown_from} responses to "
            f"{len(point.questions)} question(s) — <b>{point.source}</b>"
        )
        columns = [(key, title) for key, title in DETAIL_COLUMNS if key in rows.columns]
        self.detail.clear()
        self.detail.setColumnCount(len(columns))
        self.detail.setRowCount(len(rows))
        self.detail.setHorizontalHeaderLabels([title for _key, title in columns])
        for r, record in enumerate(self.details.to_dict("records")):
            for c, (key, _title) in enumerate(columns):
                value = record.get(key)
                text = "" if value is None or (isinstance(value, float) and pd.isna(value)) else str(value)
                item = QTableWidgetItem(text[:300])
                if key in ("question_text", "raw_text", "options"):
                    item.setToolTip(text)
                self.detail.setItem(r, c, item)
        self._fit_detail()
        self.play_button.setEnabled(False)
        self.audio_note.setText("Select a row to play the audio its model heard.")
        self._open_details(True)
        if len(rows):
            self.detail.selectRow(0)
        if self.details_take_keys and self.view.canvas.hasFocus():  # not if the user has gone elsewhere since
            self.detail.setFocus(Qt.FocusReason.OtherFocusReason)
            self.panel_scroll.ensureWidgetVisible(self.detail)  # a short window scrolls to them, as Tab would
        self.details_ready.emit(self.details)

    def _clear_details(self) -> None:
        self.details, self.clicked = None, None
        self.detail.clear()
        self.detail.setRowCount(0)
        self.detail.setColumnCount(0)
        self._detail_titled("Click a point to list its questions and answers.")
        self.play_button.setEnabled(False)
        self.audio_note.setText("")
        self._open_details(False)

    def _open_details(self, shown: bool) -> None:
        """The detail pane: its table and ▶ Play shown (a third of the height, or what the user gave it) once a
        point is clicked; only its one line before."""
        was_shown = not self.detail.isHidden()
        self.detail.setVisible(shown)
        self.play_bar.setVisible(shown)
        sizes = self.splitter.sizes()
        total = sum(sizes)
        if not total:
            return
        if shown and not was_shown:
            pane = max(sizes[1], total // 3)
            self.splitter.setSizes([total - pane, pane])
        elif not shown:
            pane = self.detail_title.sizeHint().height() + 4
            self.splitter.setSizes([total - pane, pane])

    def selected_audio(self) -> tuple[str, str] | None:
        if self.details is None:
            return None
        rows = self.detail.selectionModel().selectedRows() if self.detail.selectionModel() else []
        if not rows:
            return None
        record = self.details.iloc[rows[0].row()]
        return str(record.get("audio_path") or ""), str(record.get("audio_kind") or "")

    def _detail_selected(self) -> None:
        chosen = self.selected_audio()
        if chosen is None:
            self.play_button.setEnabled(False)
            return
        path, kind = chosen
        simulated = self.clicked is not None and "simulated" in self.clicked.source
        if not path:
            self.play_button.setEnabled(False)
            self.audio_note.setText("No audio stored for this response's item and condition.")
            return
        self.play_button.setEnabled(True)
        note = f"{kind}: {Path(path).name}"
        if simulated:
            note += " — a simulated run heard no audio; this is the project's clip for the same condition"
        self.audio_note.setText(note)

    def play_selected(self) -> str | None:
        chosen = self.selected_audio()
        if not chosen or not chosen[0]:
            return None
        play = getattr(self.window, "play_file", None)
        if play is None:
            self.audio_note.setText(f"No player in this window; the file is {chosen[0]}")
            return None
        message = play(Path(chosen[0]))
        if message:
            self.audio_note.setText(message)
        return message

    # -- exporting ----------------------------------------------------------------------------------

    def choose_export_file(self, what: str, fmt: str) -> None:
        names = {"png": "PNG images (*.png)", "svg": "SVG images (*.svg)", "pdf": "PDF files (*.pdf)"}
        names.update({"csv": "CSV files (*.csv)", "tex": "LaTeX files (*.tex)"})
        start_dir = self.session.path.parent if self.session else Path.home()
        start = str(start_dir / f"{self.view.default_name(what)}.{fmt}")
        path, _ = QFileDialog.getSaveFileName(self, f"Export the {what}", start, names[fmt])
        if path:
            if what == "figure":
                self.export_figure(Path(path))
            else:
                self.export_table(Path(path))

    def export_figure(self, path: Path) -> Path:
        """The figure as drawn (PNG, SVG or PDF by the extension), written on the UI thread: the figure
        belongs to it, and saving takes a fraction of a second."""
        written = self.view.save_figure(path)
        self.exported.emit(str(written))
        return written

    def export_table(self, path: Path) -> BackgroundOp | None:
        """The table shown (CSV or LaTeX by the extension), written off the UI thread."""
        chosen = self.view.table_to_save()
        if chosen is None or self.session is None:
            return None
        frame, caption, label = chosen
        return (
            BackgroundOp(
                self.session.runner,
                lambda progress: save_table(frame, path, caption, label),
                label=f"Exporting {path.name}",
                parent=self,
            )
            .success(lambda written: self.exported.emit(str(written)))
            .run()
        )
