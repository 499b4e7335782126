"""The Evaluate page's view: the launch form (model, mode, prompt, condition grid, budget), the prepared plan,
the queue and the run list with the selected run's live progress. A plain view: it shows what it is given and
emits what the user asked for; app/evaluate_page.py decides what happens."""

from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtCore import QEvent, Qt, QTimer, Signal
from PySide6.QtGui import QStandardItem, QStandardItemModel
from PySide6.QtWidgets import (
    QButtonGroup,
    QFileDialog,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QListWidget,
    QPlainTextEdit,
    QProgressBar,
    QPushButton,
    QRadioButton,
    QScrollArea,
    QSpinBox,
    QSplitter,
    QStyle,
    QStyledItemDelegate,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from spokenbench.core.evaluation.launcher import (
    CUSTOM,
    CUSTOM_PROVIDERS,
    LaunchForm,
    ModelChoice,
    PromptChoice,
)
from spokenbench.core.evaluation.plans import PERMUTATION_STRATEGIES
from spokenbench.widgets.elided import ElidedComboBox
from spokenbench.widgets.jobs_panel import STOP_NOW_TOOLTIP, StopButtonKeys
from spokenbench.widgets.screen_reader import no_tab_stop, read_by_line
from spokenbench.widgets.tables import row_table
from spokenbench.widgets.text_size import text_scale
from spokenbench.widgets.tones import set_toned_sheet

GRID_FIELDS = (  # (LaunchForm field, label, the factor whose levels the placeholder lists)
    ("languages", "Languages", "language"),
    ("accents", "Accents", "accent"),
    ("voices", "Voices", "voice"),
    ("genders", "Speaker genders", "gender"),
    ("orders", "Option orders", "order"),
    ("speeds", "Speeds", "speed"),
    ("volumes", "Volumes", "volume"),
    ("snr", "Noise (SNR dB)", "snr_db"),
)
RUN_WAYS = (  # (way, label): how the prepared run is sent
    ("online", "Online"),
    ("batch", "Batch (half price, results within 24 h)"),
    ("file", "Export batch file"),
)
RUN_WAY_TIPS = {
    "online": "Send the requests now and watch the answers arrive (full price).",
    "batch": "Submit the run as provider batch jobs at half the online price; the jobs panel collects the answers "
    "when the provider has finished them (usually within hours, at most 24 h).",
    "file": "Write the requests as an OpenAI batch-format file for vLLM's run_batch on your own GPUs; import its "
    "output afterwards with Import results…",
}
RUN_COLUMNS = ("Run", "Model", "Mode", "Prompt", "Status", "Progress", "Errors", "Spent")
SHARED_RUN_COLUMNS = ("Model", "Mode", "Prompt", "Progress")  # share the width the short columns leave
MODEL_SHARE = 0.45  # of that width, the model's name gets at least this much (it is what tells runs apart)
RUN_CELL_CHARACTERS = 10  # beside the form, a shared column shows at least this much of its text (`_place_halves`)
STACKED_FORM_LINES = 14  # the form's least height, in lines, with the runs below it (else the splitter squeezes it)
STACKED_RUN_ROWS = 6  # the runs table's least height, in rows, below the form
# where a narrow column keeps what tells its runs apart: a mode's start ('audio+text-…'), a prompt's end
# ('…paper-neutral' against '…paper-open'), a progress's count ('4/6 · e…'; errors and spend have their columns);
# the middle ('ge…al', '4/…01') told the Xvfb walk nothing
RUN_COLUMN_ELISION = {
    "Mode": Qt.TextElideMode.ElideRight,
    "Prompt": Qt.TextElideMode.ElideLeft,
    "Progress": Qt.TextElideMode.ElideRight,
}


class _Elided(QStyledItemDelegate):
    """A column elided its own way (a view has one elide mode for all its columns)."""

    def __init__(self, elide: Qt.TextElideMode, parent=None):
        super().__init__(parent)
        self.elide = elide

    def initStyleOption(self, option, index) -> None:
        super().initStyleOption(option, index)
        option.textElideMode = self.elide


@dataclass(frozen=True)
class RunLine:
    """One run as the list shows it (the page merges the runs table, the jobs table and its own operations)."""

    run_id: int
    title: str
    model: str
    mode: str  # a simulated run's: the mode it simulates (its model and spent cells say simulated)
    prompt: str
    status: str
    done: int
    total: int
    progress: str  # '12/48 · 35.2/s · ETA 0:01 · errors: … · spent $…'
    errors: str
    spent: str
    live: bool
    cancellable: bool
    resumable: bool
    simulated: bool
    stoppable_now: bool = False  # cancelled, waiting for answers to requests already sent: Stop Now abandons them


class LauncherView(QWidget):
    prepareRequested = Signal()
    startRequested = Signal()
    testConnectionRequested = Signal()
    formEdited = Signal()
    cancelRequested = Signal(int)  # run id
    stopNowRequested = Signal(int)  # run id: a cancelled run that waits for answers already sent abandons them
    resumeRequested = Signal(int)
    runOpened = Signal(int)  # run id: Enter or a double-click on a run, to see its results
    removeQueuedRequested = Signal(int)  # queue position
    runWayChanged = Signal(str)
    importResultsRequested = Signal()
    selectionChanged = Signal()

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.lines: list[RunLine] = []

        # -- model ---------------------------------------------------------------------------------
        self.model_box = ElidedComboBox()
        self.model_model = QStandardItemModel(self.model_box)
        self.model_box.setModel(self.model_model)
        self.model_note = QLabel()
        self.model_note.setWordWrap(True)
        # a group's title never wraps and sets the form's least width: short titles, what else they say in a note
        self.custom_group = QGroupBox("Custom endpoint")
        self.custom_provider = ElidedComboBox()
        for provider in CUSTOM_PROVIDERS:
            self.custom_provider.addItem(provider, provider)
        self.custom_url = QLineEdit()
        self.custom_url.setPlaceholderText("http://127.0.0.1:8000/v1")
        self.custom_model = QLineEdit()
        self.custom_model.setPlaceholderText("the model name the server serves")
        self.custom_key = QLineEdit(CUSTOM_PROVIDERS["vllm"])
        self.custom_key.setToolTip("Environment variable holding the server's key; empty for a server without one.")
        self.test_button = QPushButton("Test connection")
        self.test_result = QLabel()  # a row of its own, wrapped: a server's answer can be long
        self.test_result.setWordWrap(True)
        self.test_result.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.test_result.installEventFilter(self)  # its height follows its width (`_fit_test_result`)
        custom_form = QFormLayout(self.custom_group)
        custom_form.setRowWrapPolicy(QFormLayout.RowWrapPolicy.WrapLongRows)
        custom_form.addRow("Provider:", self.custom_provider)
        custom_form.addRow("Base URL:", self.custom_url)
        custom_form.addRow("Model name:", self.custom_model)
        custom_form.addRow("Key variable (optional):", self.custom_key)
        test_row = QHBoxLayout()
        test_row.addWidget(self.test_button)
        test_row.addStretch(1)
        custom_form.addRow(test_row)
        custom_form.addRow(self.test_result)

        # -- mode, prompt --------------------------------------------------------------------------
        self.mode_box = ElidedComboBox()
        self.prompt_box = ElidedComboBox()
        self.prompt_note = QLabel()
        self.prompt_note.setWordWrap(True)

        # -- condition grid ------------------------------------------------------------------------
        self.grid_edits: dict[str, QLineEdit] = {}
        grid_group = QGroupBox("Conditions")
        grid_form = QFormLayout(grid_group)
        grid_note = QLabel("A field left empty: everything the project has.")
        grid_note.setWordWrap(True)
        grid_form.addRow(grid_note)
        for field_name, label, _factor in GRID_FIELDS:
            edit = QLineEdit()
            self.grid_edits[field_name] = edit
            grid_form.addRow(f"{label}:", edit)
        self.permutations_box = ElidedComboBox()
        self.permutations_box.addItem("none (only the orders above)", "")
        for strategy in PERMUTATION_STRATEGIES:
            self.permutations_box.addItem(strategy, strategy)
        grid_form.addRow("Permutations:", self.permutations_box)
        self.identifiers_box = ElidedComboBox()
        for value, label in (("yes", "lettered options"), ("no", "options without letters"), ("both", "both")):
            self.identifiers_box.addItem(label, value)
        grid_form.addRow("Identifiers:", self.identifiers_box)
        self.limit_edit = QLineEdit()
        self.limit_edit.setPlaceholderText("all items")
        grid_form.addRow("First N items:", self.limit_edit)
        self.seed_edit = QLineEdit("0")
        grid_form.addRow("Seed:", self.seed_edit)

        # -- budget and the rest -------------------------------------------------------------------
        self.budget_edit = QLineEdit()
        self.budget_edit.setPlaceholderText("USD; empty: no budget")
        self.concurrency_box = QSpinBox()
        self.concurrency_box.setRange(1, 256)
        self.concurrency_box.setValue(8)
        self.name_edit = QLineEdit()
        self.name_edit.setPlaceholderText("optional")

        form_widget = QWidget()
        form = QFormLayout(form_widget)
        form.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)
        form.addRow("Model:", self.model_box)
        form.addRow("", self.model_note)
        form.addRow(self.custom_group)
        form.addRow("Mode:", self.mode_box)
        form.addRow("Prompt:", self.prompt_box)
        form.addRow("", self.prompt_note)
        form.addRow(grid_group)
        form.addRow("Budget:", self.budget_edit)
        form.addRow("Concurrency:", self.concurrency_box)
        form.addRow("Run name:", self.name_edit)
        self.form_scroll = scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setWidget(form_widget)
        no_tab_stop(scroll)  # Ctrl+6 gives the keys to Model, the form's first control

        self.prepare_button = QPushButton("Prepare")
        self.prepare_button.setToolTip("Plan and cost the run without sending anything")
        self.start_button = QPushButton("Start")
        self.start_button.setEnabled(False)
        self.start_button.setToolTip("Prepare first: the plan is shown before anything starts")
        buttons = QHBoxLayout()
        buttons.addWidget(self.prepare_button)
        buttons.addWidget(self.start_button)

        # -- how to run: online, provider batch, batch file --------------------------------------------
        self.way_group = QGroupBox("How to run")
        self.way_buttons: dict[str, QRadioButton] = {}
        self._ways = QButtonGroup(self)
        way_layout = QVBoxLayout(self.way_group)
        way_layout.setSpacing(2)
        for way, label in RUN_WAYS:
            button = QRadioButton(label)
            button.setToolTip(RUN_WAY_TIPS[way])
            self.way_buttons[way] = button
            self._ways.addButton(button)
            way_layout.addWidget(button)
        self.way_buttons["online"].setChecked(True)
        self.way_note = QLabel()
        self.way_note.setWordWrap(True)
        self.way_note.setObjectName("wayNote")
        set_toned_sheet(self.way_note, "QLabel#wayNote { color: $muted; }")
        way_layout.addWidget(self.way_note)
        self.plan_text = QPlainTextEdit()
        read_by_line(self.plan_text)  # ↑/↓ read the plan's lines (requests, cost, warnings) to a screen reader
        self.plan_text.setAccessibleName("Plan")  # what a screen reader says before the text (or its placeholder)
        self.plan_text.setPlaceholderText("Prepare shows the plan here: requests, cached, estimated cost, warnings.")
        self.plan_text.setMinimumHeight(80)
        left = QWidget()
        left_layout = QVBoxLayout(left)
        left_layout.setContentsMargins(0, 0, 0, 0)
        left_layout.addWidget(scroll, 3)  # the form gets the room; the plan is a few lines
        left_layout.addWidget(self.way_group)
        left_layout.addLayout(buttons)
        left_layout.addWidget(self.plan_text, 1)

        # -- queue ---------------------------------------------------------------------------------
        self.queue_list = QListWidget()
        self.remove_queued_button = QPushButton("Remove from queue")
        self.queue_status = QLabel("Nothing queued.")
        queue_group = QGroupBox("Queue (runs start one after another)")
        queue_layout = QVBoxLayout(queue_group)
        queue_layout.addWidget(self.queue_list)
        queue_bar = QHBoxLayout()
        queue_bar.addWidget(self.queue_status, 1)
        queue_bar.addWidget(self.remove_queued_button)
        queue_layout.addLayout(queue_bar)

        # -- runs ----------------------------------------------------------------------------------
        self.runs_table = row_table(RUN_COLUMNS)
        header = self.runs_table.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        for column in SHARED_RUN_COLUMNS:  # sized by `_fit_columns`, elided beyond (whole in the tooltip)
            header.setSectionResizeMode(RUN_COLUMNS.index(column), QHeaderView.ResizeMode.Interactive)
        self.runs_table.viewport().installEventFilter(self)  # refitted when the table's width changes
        header.setStretchLastSection(False)  # so progress, errors and spend are always in view
        self.runs_table.setWordWrap(False)  # one line a run; elided text is whole in the tooltip
        self.runs_table.setTextElideMode(Qt.TextElideMode.ElideMiddle)  # 'openai:gpt-…-mini': both ends tell
        for column, elide in RUN_COLUMN_ELISION.items():
            self.runs_table.setItemDelegateForColumn(RUN_COLUMNS.index(column), _Elided(elide, self.runs_table))
        self.progress_bar = QProgressBar()
        self.progress_label = QLabel("Select a run to see its progress.")
        self.progress_label.setWordWrap(True)
        self.cancel_button = QPushButton("Cancel")
        self.cancel_keys = StopButtonKeys(self.cancel_button, self.runs_table)  # the run the button acts on
        self.resume_button = QPushButton("Resume")
        self.cancel_button.setEnabled(False)
        self.resume_button.setEnabled(False)
        runs_group = QGroupBox("Runs, from every window and the command line")  # a title never wraps: kept short
        runs_layout = QVBoxLayout(runs_group)
        runs_layout.addWidget(self.runs_table, 1)
        runs_layout.addWidget(self.progress_bar)
        runs_layout.addWidget(self.progress_label)
        self.import_button = QPushButton("Import results…")
        self.import_button.setToolTip(
            "Import the output of vLLM's run_batch (or any OpenAI batch output) for a batch file this project wrote"
        )
        run_buttons = QHBoxLayout()
        run_buttons.addWidget(self.import_button)
        run_buttons.addStretch(1)
        run_buttons.addWidget(self.cancel_button)
        run_buttons.addWidget(self.resume_button)
        runs_layout.addLayout(run_buttons)
        right = QWidget()
        self.right_layout = right_layout = QVBoxLayout(right)
        right_layout.addWidget(queue_group, 1)
        right_layout.addWidget(runs_group, 3)
        self.runs_group, self.queue_group = runs_group, queue_group

        self.splitter = splitter = QSplitter(Qt.Orientation.Horizontal)  # or one above the other: `_place_halves`
        splitter.addWidget(left)
        splitter.addWidget(right)
        splitter.setStretchFactor(0, 4)  # the form nearly half the width: its fields and notes need it
        splitter.setStretchFactor(1, 5)
        self.split_dragged = False  # a person dragged the handle: the halves keep their widths (`_split_by_need`)
        splitter.splitterMoved.connect(self._split_moved)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(splitter)
        for half in (left, right):  # laid out anew (a text that wraps changed): held as high again
            half.installEventFilter(self)

        # -- wiring --------------------------------------------------------------------------------
        self.prepare_button.clicked.connect(self.prepareRequested)
        self.start_button.clicked.connect(self.startRequested)
        self.test_button.clicked.connect(self.testConnectionRequested)
        self.remove_queued_button.clicked.connect(self._remove_queued)
        self.import_button.clicked.connect(self.importResultsRequested)
        self._ways.buttonToggled.connect(self._way_toggled)
        self.cancel_button.clicked.connect(self._cancel_clicked)
        self.resume_button.clicked.connect(lambda: self._run_action(self.resumeRequested))
        self.runs_table.itemSelectionChanged.connect(self._selection_changed)
        self.runs_table.activated.connect(lambda _index: self._run_action(self.runOpened))  # Enter, double-click
        self.model_box.currentIndexChanged.connect(self._model_changed)
        self.prompt_box.currentIndexChanged.connect(self._prompt_changed)
        self.custom_provider.currentIndexChanged.connect(self._provider_changed)
        for edit in (self.custom_url, self.custom_model, self.custom_key):  # a result about another server: gone
            edit.textChanged.connect(self._forget_test_result)
        self.custom_provider.currentIndexChanged.connect(self._forget_test_result)
        for edit in (
            *self.grid_edits.values(),
            self.custom_url,
            self.custom_model,
            self.custom_key,
            self.limit_edit,
            self.seed_edit,
            self.budget_edit,
            self.name_edit,
        ):
            edit.textEdited.connect(self.formEdited)
        for box in (self.model_box, self.mode_box, self.prompt_box, self.permutations_box, self.identifiers_box):
            box.currentIndexChanged.connect(self.formEdited)
        self.custom_provider.currentIndexChanged.connect(self.formEdited)
        self.concurrency_box.valueChanged.connect(self.formEdited)
        self._model_changed()

    # -- filling the form ----------------------------------------------------------------------------

    def set_models(self, choices: list[ModelChoice]) -> None:
        """Presets past their retirement date are listed disabled, with the date."""
        self.model_box.blockSignals(True)
        self.model_model.clear()
        for choice in choices:
            item = QStandardItem(choice.label)
            item.setData(choice.spec, Qt.ItemDataRole.UserRole)
            item.setToolTip(choice.tooltip)
            if not choice.available:
                item.setEnabled(False)
                item.setToolTip(
                    f"Retired on {choice.retired}" + (f"; use {choice.successor}" if choice.successor else "")
                )
            self.model_model.appendRow(item)
        custom = QStandardItem("Custom OpenAI-compatible endpoint (vLLM, …)")
        custom.setData(CUSTOM, Qt.ItemDataRole.UserRole)
        self.model_model.appendRow(custom)
        self.model_box.setCurrentIndex(0)
        self.model_box.blockSignals(False)
        self._model_changed()

    def set_modes(self, modes: list[tuple[str, str]]) -> None:
        self.mode_box.clear()
        for mode, label in modes:
            self.mode_box.addItem(label, mode)

    def set_prompts(self, prompts: list[PromptChoice]) -> None:
        self.prompt_box.clear()
        for prompt in prompts:
            self.prompt_box.addItem(prompt.label, prompt.name)
            self.prompt_box.setItemData(self.prompt_box.count() - 1, prompt.description, Qt.ItemDataRole.ToolTipRole)
        self._prompt_changed()

    def set_levels(self, levels: dict[str, list[str]]) -> None:
        """Show, in each empty field, the levels the project has."""
        for field_name, _label, factor in GRID_FIELDS:
            values = levels.get(factor)
            if factor == "order":  # orders may also be explicit permutations (DCBA) or come from a strategy
                text = "as assembled: " + ", ".join(values) if values else "original"
                text += " (or names such as reversed, permutations such as DCBA)"
            else:
                text = "all: " + ", ".join(values) if values else "all"
            self.grid_edits[field_name].setPlaceholderText(text)

    def model_index(self, spec: str) -> int:
        return self.model_box.findData(spec, Qt.ItemDataRole.UserRole)

    def model_item(self, spec: str) -> QStandardItem | None:
        index = self.model_index(spec)
        return self.model_model.item(index) if index >= 0 else None

    def select_model(self, spec: str) -> None:
        self.model_box.setCurrentIndex(self.model_index(spec))

    def form(self) -> LaunchForm:
        return LaunchForm(
            model=self.model_box.currentData(Qt.ItemDataRole.UserRole) or "",
            mode=self.mode_box.currentData() or "audio",
            prompt=self.prompt_box.currentData() or "standard",
            custom_provider=self.custom_provider.currentData() or "vllm",
            custom_base_url=self.custom_url.text(),
            custom_model=self.custom_model.text(),
            custom_key_variable=self.custom_key.text(),
            **{name: edit.text() for name, edit in self.grid_edits.items()},
            permutations=self.permutations_box.currentData() or "",
            identifiers=self.identifiers_box.currentData() or "yes",
            limit=self.limit_edit.text(),
            seed=self.seed_edit.text(),
            budget=self.budget_edit.text(),
            concurrency=self.concurrency_box.value(),
            name=self.name_edit.text(),
        )

    def _model_changed(self, *args) -> None:
        spec = self.model_box.currentData(Qt.ItemDataRole.UserRole)
        self.custom_group.setVisible(spec == CUSTOM)
        index = self.model_box.currentIndex()
        item = self.model_model.item(index) if index >= 0 else None
        simulated = bool(spec) and str(spec).startswith("simulated:")
        note = "Simulated: answers offline, free; the run is labelled simulated." if simulated else ""
        if item is not None and not simulated and spec != CUSTOM:
            note = item.toolTip()
        self.model_note.setText(note)

    def _prompt_changed(self, *args) -> None:
        self.prompt_note.setText(self.prompt_box.currentData(Qt.ItemDataRole.ToolTipRole) or "")

    def _provider_changed(self, *args) -> None:
        self.custom_key.setText(CUSTOM_PROVIDERS.get(self.custom_provider.currentData(), ""))

    # -- how to run ----------------------------------------------------------------------------------

    def run_way(self) -> str:
        return next((way for way, button in self.way_buttons.items() if button.isChecked()), "online")

    def set_run_way(self, way: str) -> None:
        self.way_buttons[way].setChecked(True)

    def set_run_ways(self, reasons: dict[str, str | None]) -> None:
        """Enable each way of running, or disable it with the reason (shown under the choices and as tooltip);
        a checked way that becomes unavailable falls back to Online."""
        unavailable: dict[str, list[str]] = {}  # reason → the ways it disables (one note for the same reason)
        for way, label in RUN_WAYS:
            button = self.way_buttons[way]
            reason = reasons.get(way)
            button.setEnabled(reason is None)
            button.setToolTip(RUN_WAY_TIPS[way] if reason is None else f"Not for this model: {reason}.")
            if reason is not None:
                unavailable.setdefault(reason, []).append(label.split(" (")[0])
        if not self.way_buttons[self.run_way()].isEnabled():
            self.way_buttons["online"].setChecked(True)
        notes = [f"{' and '.join(labels)}: not available — {reason}." for reason, labels in unavailable.items()]
        self.way_note.setText("\n".join(notes))
        self.way_note.setVisible(bool(notes))

    def _way_toggled(self, button, checked: bool) -> None:
        if checked:
            self.runWayChanged.emit(self.run_way())

    def ask_batch_file_path(self, suggested: str) -> str | None:
        """Where to write the batch file (a save dialog); None when the user cancels."""
        path, _ = QFileDialog.getSaveFileName(
            self, "Export batch file", suggested, "Batch request files (*.jsonl);;All files (*)"
        )
        return path or None

    def ask_results_path(self) -> str | None:
        """Which run_batch output file to import; None when the user cancels."""
        path, _ = QFileDialog.getOpenFileName(
            self, "Import batch results", "", "Batch output files (*.jsonl);;All files (*)"
        )
        return path or None

    # -- plan, test, queue ---------------------------------------------------------------------------

    def set_plan(self, text: str, ready: bool) -> None:
        self.plan_text.setPlainText(text)
        self.start_button.setEnabled(ready)

    def set_start_label(self, text: str) -> None:
        self.start_button.setText(text)

    def set_test_result(self, text: str, busy: bool = False) -> None:
        self.test_result.setText(text)
        self.test_button.setEnabled(not busy)
        self._fit_test_result()

    def _fit_test_result(self) -> None:
        """Room for every wrapped line of the answer: the form in its scroll area does not ask a wrapped label
        for its height at the width it has, so the label says it itself."""
        label = self.test_result
        label.setMinimumHeight(label.heightForWidth(max(label.width(), 200)) if label.text() else 0)

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        self._fit_test_result()
        if event.size().width() != event.oldSize().width():
            self._place_halves(measure=True)

    def changeEvent(self, event) -> None:
        super().changeEvent(event)
        if event.type() == QEvent.Type.FontChange:  # larger text: each half needs more of the width
            self._place_halves(measure=True)

    def halves_needed(self) -> tuple[int, int]:
        """The widths of the two halves side by side: the form at its least (its fields squeezed, never scrolled
        sideways) and the runs table with every heading whole and RUN_CELL_CHARACTERS of each long cell."""
        scroll = self.form_scroll
        bar = self.style().pixelMetric(QStyle.PixelMetric.PM_ScrollBarExtent)
        form = scroll.widget().minimumSizeHint().width() + bar + 2 * scroll.frameWidth()
        table, header = self.runs_table, self.runs_table.horizontalHeader()
        least_cell = RUN_CELL_CHARACTERS * self.fontMetrics().averageCharWidth()
        columns = 0
        for column, name in enumerate(RUN_COLUMNS):
            if table.isColumnHidden(column):
                continue
            cell = table.sizeHintForColumn(column)
            columns += max(
                header.sectionSizeHint(column), min(cell, least_cell) if name in SHARED_RUN_COLUMNS else cell
            )
        margins = self.right_layout.contentsMargins()
        group = self.runs_group.contentsMargins()
        inner = self.runs_group.layout().contentsMargins()
        runs = columns + bar + 2 * table.frameWidth() + group.left() + group.right() + inner.left() + inner.right()
        titles = max(self.runs_group.minimumSizeHint().width(), self.queue_group.minimumSizeHint().width())
        right = max(runs, titles) + margins.left() + margins.right()
        return form, right

    def _place_halves(self, measure: bool = False) -> None:
        """The form beside the runs while both fit, else, with the text made larger (View → Larger text), above
        them, the page scrolling down instead of both scrolling sideways: at 150 % on a laptop the form was cut at
        its right edge and the runs' headings and cells read 'romp', 'ogre', 'si…ed'. At the normal size they stay
        side by side, squeezed where they must be (the tour open on a laptop): one above the other would not fit
        down either, and there nothing scrolls (tests/widgets/test_laptop_fit.py)."""
        needed = self.halves_needed() if measure or text_scale() > 1.0 else None
        beside = text_scale() <= 1.0 or self.width() >= sum(needed) + self.splitter.handleWidth()
        orientation = Qt.Orientation.Horizontal if beside else Qt.Orientation.Vertical
        lines, rows = self.fontMetrics().lineSpacing(), self.runs_table.verticalHeader().defaultSectionSize()
        self.form_scroll.setMinimumHeight(0 if beside else STACKED_FORM_LINES * lines)
        self.runs_table.setMinimumHeight(
            0 if beside else STACKED_RUN_ROWS * rows + self.runs_table.horizontalHeader().height()
        )
        if self.splitter.orientation() != orientation:
            self.splitter.setOrientation(orientation)
            self.splitter.setChildrenCollapsible(beside)  # one above the other, neither dragged shut
            self.split_dragged = False  # a width dragged before is not the one for this side by side
            if not beside and 0 in self.splitter.sizes():  # one was dragged shut side by side: open again
                self.splitter.setSizes([1, 1])
            if beside:  # split by need once the splitter has shared its width across
                QTimer.singleShot(0, self, lambda: self._place_halves(measure=True))
        elif beside and needed is not None and not self.split_dragged:
            self._split_by_need(needed)
        self._hold_heights()

    def _split_moved(self, *_args) -> None:
        if self.splitter.orientation() == Qt.Orientation.Horizontal:  # a height dragged stacked is not a width
            self.split_dragged = True

    def _split_by_need(self, needed: tuple[int, int]) -> None:
        """Side by side, a half short of the width it needs takes it from the other half's width beyond that
        one's need: beside the guided tour on a laptop the splitter's stretch gave the form 321 pixels (it needs
        248) and the runs 379, and the runs table scrolled sideways."""
        form, runs = self.splitter.sizes()
        room = form + runs
        if runs < needed[1] and form > needed[0]:
            form -= min(needed[1] - runs, form - needed[0])
        elif form < needed[0] and runs > needed[1]:
            form += min(needed[0] - form, runs - needed[1])
        else:
            return
        self.splitter.setSizes([form, room - form])

    def _hold_heights(self) -> None:
        """One above the other, each half at least as high as its text that wraps (How to run's note, the run's
        progress) needs at the width it has: a splitter does not ask, and the form was drawn 15 pixels into How to
        run. Again once a half is laid out anew (its LayoutRequest: a text changed, a note shown), when Qt's cached
        heights are the new ones (`eventFilter`)."""
        stacked = self.splitter.orientation() == Qt.Orientation.Vertical
        for half in (self.splitter.widget(0), self.splitter.widget(1)):
            least = half.layout().minimumHeightForWidth(self.width()) if stacked else 0  # -1: nothing wraps
            half.setMinimumHeight(max(least, 0))

    def _forget_test_result(self, *_args) -> None:
        self.test_result.clear()
        self._fit_test_result()

    def set_queue(self, entries: list[str], status: str) -> None:
        self.queue_list.clear()
        self.queue_list.addItems(entries)
        self.queue_status.setText(status)
        self.remove_queued_button.setEnabled(bool(entries))

    def _remove_queued(self) -> None:
        row = self.queue_list.currentRow()
        if row >= 0:
            self.removeQueuedRequested.emit(row)

    # -- runs ----------------------------------------------------------------------------------------

    def set_runs(self, lines: list[RunLine]) -> None:
        selected = self.selected_run_id()
        self.lines = lines
        table = self.runs_table
        rows_before = table.rowCount()
        table.blockSignals(True)
        table.setRowCount(len(lines))
        for row, line in enumerate(lines):
            values = (
                str(line.run_id),
                line.model,
                line.mode,
                line.prompt,
                line.status,
                line.progress,
                line.errors,
                line.spent,
            )
            for column, value in enumerate(values):
                item = table.item(row, column)
                if item is None:
                    item = QTableWidgetItem()
                    table.setItem(row, column, item)
                item.setText(value)
                item.setData(Qt.ItemDataRole.UserRole, line.run_id)
                whole = f"{value} (simulated)" if line.simulated and RUN_COLUMNS[column] == "Mode" else value
                item.setToolTip(f"{line.title}\n{RUN_COLUMNS[column]}: {whole}" if column else line.title)
        # no run failed: the empty Errors column leaves its width to the model, mode and prompt
        table.setColumnHidden(RUN_COLUMNS.index("Errors"), not any(line.errors for line in lines))
        if selected is not None:
            for row, line in enumerate(lines):
                if line.run_id == selected:
                    table.selectRow(row)
        table.blockSignals(False)
        self._fit_columns()
        self._place_halves(measure=len(lines) != rows_before)  # a run more or fewer: the runs' need measured again
        self._show_selected()

    def _fit_columns(self) -> None:
        """Share the width the short columns leave: the model's name at least MODEL_SHARE of it (or all it
        needs), Mode, Prompt and Progress the rest in proportion to their texts, Model anything left over, each
        at least its heading ('Progre' was cut); what does not fit is elided, whole in the tooltip."""
        table = self.runs_table
        index = {name: RUN_COLUMNS.index(name) for name in SHARED_RUN_COLUMNS}
        fixed = sum(table.columnWidth(i) for i, name in enumerate(RUN_COLUMNS) if name not in index)
        free = max(table.viewport().width() - fixed, 0)
        header = table.horizontalHeader()
        wanted = {name: max(header.sectionSizeHint(i), table.sizeHintForColumn(i)) + 8 for name, i in index.items()}
        rest = free - min(wanted["Model"], int(free * MODEL_SHARE))
        others = sorted((name for name in SHARED_RUN_COLUMNS if name != "Model"), key=wanted.get)
        widths = {}
        for left, name in enumerate(others):  # the narrowest first: each takes its text or an even share
            widths[name] = max(min(wanted[name], rest // (len(others) - left)), header.sectionSizeHint(index[name]))
            rest -= widths[name]
        widths["Model"] = max(free - sum(widths.values()), header.sectionSizeHint(index["Model"]))
        for name, width in widths.items():
            table.setColumnWidth(index[name], width)

    def eventFilter(self, watched, event) -> bool:
        if event.type() == QEvent.Type.LayoutRequest and watched in (self.splitter.widget(0), self.splitter.widget(1)):
            if self.splitter.orientation() == Qt.Orientation.Vertical:
                self._hold_heights()
        if event.type() == QEvent.Type.Resize:
            if watched is self.runs_table.viewport():
                self._fit_columns()
            elif watched is self.test_result:
                self._fit_test_result()
        return super().eventFilter(watched, event)

    def line(self, run_id: int) -> RunLine | None:
        return next((line for line in self.lines if line.run_id == run_id), None)

    def selected_run_id(self) -> int | None:
        rows = self.runs_table.selectionModel().selectedRows() if self.runs_table.selectionModel() else []
        if not rows:
            return None
        item = self.runs_table.item(rows[0].row(), 0)
        return None if item is None else item.data(Qt.ItemDataRole.UserRole)

    def select_run(self, run_id: int) -> None:
        for row, line in enumerate(self.lines):
            if line.run_id == run_id:
                self.runs_table.selectRow(row)
                return

    def _selection_changed(self) -> None:
        self._show_selected()
        self.selectionChanged.emit()

    def _show_selected(self) -> None:
        run_id = self.selected_run_id()
        line = self.line(run_id) if run_id is not None else None
        if line is None:
            self.progress_bar.setRange(0, 1)
            self.progress_bar.setValue(0)
            self.progress_bar.setTextVisible(False)  # no run: no "0%"
            self.progress_label.setText("Select a run to see its progress.")
            self._show_cancel(None)
            self.resume_button.setEnabled(False)
            return
        self.progress_bar.setRange(0, max(line.total, 1))
        self.progress_bar.setValue(min(line.done, max(line.total, 1)))
        self.progress_bar.setTextVisible(True)
        self.progress_label.setText(f"{line.title} — {line.status}: {line.progress}")
        self._show_cancel(line)
        self.resume_button.setEnabled(line.resumable)

    def _show_cancel(self, line: RunLine | None) -> None:
        """Cancel, or Stop Now for a cancelled run that waits for the answers to requests already sent."""
        stop_now = line is not None and line.stoppable_now
        enabled = line is not None and (line.cancellable or stop_now)
        self.cancel_keys.before(enabled, line.run_id if line is not None else None)
        self.cancel_button.setText("Stop Now" if stop_now else "Cancel")
        self.cancel_button.setToolTip(
            STOP_NOW_TOOLTIP
            if stop_now
            else "Stop the run at its next safe point; answers to requests already sent are waited for and kept."
        )
        self.cancel_button.setEnabled(enabled)
        self.cancel_keys.after(stop_now)

    def _cancel_clicked(self) -> None:
        line = self.line(self.selected_run_id()) if self.selected_run_id() is not None else None
        self._run_action(self.stopNowRequested if line is not None and line.stoppable_now else self.cancelRequested)

    def _run_action(self, signal) -> None:
        run_id = self.selected_run_id()
        if run_id is not None:
            signal.emit(run_id)
