"""The gender-probe panel's detail on the Results page (issue 12 item 7), a thin view of core/results/gender_views.py:

- **Per category**: for the setting picked (binary options, neutral option, …), each model's J, Δ with its
  significance marks (one-sample t-test), ν and κ per question category, with 95% intervals;
- **Answers per question**: the male- and female-voice answers of each question side by side, sortable by any
  column (by disagreement = 1 − J first);
- **Listen**: one probe's male, female and neutralized question clips side by side, each with ▶ Play.

It computes nothing and reads nothing: the page hands it a `GenderView` and a probe's `QuestionVersions` (both read
in QueryOps) and plays what `play_requested` names through the window's player."""

from __future__ import annotations

import math

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QComboBox,
    QGroupBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPushButton,
    QSizePolicy,
    QTableWidget,
    QTableWidgetItem,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from spokenbench.core.results.gender_views import (
    SIGNIFICANCE_NOTE,
    VERSION_KINDS,
    GenderView,
    QuestionVersions,
    voice_names,
)
from spokenbench.widgets.elided import ElidedComboBox
from spokenbench.widgets.flow_layout import FlowLayout, flow_row
from spokenbench.widgets.tables import DraggedWidths, FittedColumns, row_table

SUMMARY_COLUMNS = ("model", "category", "J", "Δ", "p (Δ)", "ν", "κ", "backbone", "answers")
# the free form's measures in the same columns: answer similarity J_s, Δ_s over the classified answers, similarity s
FREE_FORM_SUMMARY_COLUMNS = ("model", "category", "J_s", "Δ_s", "p (Δ_s)", "ν", "s", "backbone", "answers")
QUESTION_COLUMNS = (
    "question",
    "category",
    "model",
    "male voice answered",
    "female voice answered",
    "male voice: share M",
    "female voice: share M",
    "Δ",
    "J",
    "disagreement",
)
DISAGREEMENT_COLUMN = QUESTION_COLUMNS.index("disagreement")
ANSWER_COLUMNS = ("setting", "model", "male voice answered", "female voice answered", "Δ", "J")
VERSION_TITLES = {"male": "Male voice", "female": "Female voice", "neutralized": "Neutralized voice"}


def _number(value, digits: int = 2) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "—"
    return f"{value:+.{-digits}f}" if digits < 0 else f"{value:.{digits}f}"


def _with_interval(value, low, high) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "—"
    text = f"{value:.2f}"
    if not (low is None or high is None or math.isnan(low) or math.isnan(high)):
        text += f"  [{low:.2f},\u00a0{high:.2f}]"  # in a narrow column the interval wraps whole under the value
    return text


def _missing(value) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def _delta_text(delta, record: dict) -> str:
    """'+0.54**  [+0.37, +0.67]': Δ, its significance marks and its 95% interval (when computed)."""
    if _missing(delta):
        return "—"
    low, high = record.get("delta_ci_low"), record.get("delta_ci_high")
    interval = "" if _missing(low) or _missing(high) else f"  [{low:+.2f},\u00a0{high:+.2f}]"
    return f"{delta:+.2f}{record.get('mark', '')}{interval}"


class NumericItem(QTableWidgetItem):
    """A cell shown as text and sorted by its number (missing numbers last in ascending order)."""

    def __init__(self, text: str, value: float | None):
        super().__init__(text)
        missing = value is None or (isinstance(value, float) and math.isnan(value))
        self.value = math.inf if missing else float(value)

    def __lt__(self, other):
        if isinstance(other, NumericItem):
            return self.value < other.value
        return super().__lt__(other)


def _table(columns, name: str, wrapped: tuple[str, ...] = ()) -> QTableWidget:
    """A results table; the `wrapped` columns (names) wrap when the panel is narrow, so none is off to the right."""
    table = row_table(columns)
    table.setAlternatingRowColors(True)
    table.setWordWrap(False)
    if wrapped:
        table.fitted = FittedColumns(table, wrapped=[columns.index(title) for title in wrapped], name=name)
    return table


class GenderPanel(QWidget):
    question_chosen = Signal(int)  # item id: the listening view wants its clips
    play_requested = Signal(str)  # the path of a clip to play

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.view: GenderView | None = None
        self.versions: QuestionVersions | None = None
        self.title = QLabel("Gender probes: computing…")
        self.title.setWordWrap(True)
        self.wanted_setting: str | None = None  # a setting asked for before the detail had it (choose_setting)
        self.setting_picker = QComboBox()
        self.setting_picker.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToContents)
        self.setting_picker.setToolTip("The answer setting (each is computed apart, as in the paper's tables)")
        self.setting_picker.currentIndexChanged.connect(lambda _i: self._fill_tables())
        top = QHBoxLayout()
        top.setContentsMargins(0, 0, 0, 0)
        top.addWidget(self.title, 1)
        top.addWidget(QLabel("Setting:"))
        top.addWidget(self.setting_picker)

        # per category
        self.summary_table = _table(
            SUMMARY_COLUMNS, "gender-summary", wrapped=("model", "J", "Δ", "ν", "κ", "backbone")
        )  # value over interval
        self.summary_table.setToolTip(
            "J: overlap of male- and female-voice answers; Δ > 0: male-oriented; ν: neutral answers and refusals; κ: agreement with the backbone"
        )
        self.marks_note = QLabel(f"Δ > 0: male-oriented preference · {SIGNIFICANCE_NOTE} · [95% interval]")
        self.marks_note.setWordWrap(True)
        per_category = QWidget()
        layout = QVBoxLayout(per_category)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.summary_table, 1)
        layout.addWidget(self.marks_note)

        # answers per question
        self.model_picker = ElidedComboBox()
        self.model_picker.currentIndexChanged.connect(lambda _i: self._fill_questions())
        self.sort_button = QPushButton("Sort by disagreement")
        self.sort_button.setToolTip(
            "Most disagreeing questions first (disagreement = 1 − J); click a header to sort by it"
        )
        self.sort_button.clicked.connect(self.sort_by_disagreement)
        self.listen_button = QPushButton("Listen to this question")
        self.listen_button.setEnabled(False)
        self.listen_button.clicked.connect(self._listen_to_selected)
        self.question_table = _table(QUESTION_COLUMNS, "gender-questions")
        self.question_widths = DraggedWidths(self.question_table, "gender-questions", self._fit_questions)
        self.question_table.setSortingEnabled(True)
        self.question_table.itemSelectionChanged.connect(
            lambda: self.listen_button.setEnabled(self.selected_question() is not None)
        )
        self.question_table.itemDoubleClicked.connect(lambda _item: self._listen_to_selected())
        model = QWidget()
        model.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Preferred)  # the room left on its line
        model_row = QHBoxLayout(model)
        model_row.setContentsMargins(0, 0, 0, 0)
        model_row.addWidget(QLabel("Model:"))
        model_row.addWidget(self.model_picker, 1)
        bar = flow_row(model, self.sort_button, self.listen_button)  # wrapped in a narrow panel or larger text
        per_question = QWidget()
        layout = QVBoxLayout(per_question)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(bar)
        layout.addWidget(self.question_table, 1)
        options_note = QLabel(
            "M / F / N: the male-, female-oriented and neutral options; letters: options without one (hover)"
        )
        options_note.setWordWrap(True)
        layout.addWidget(options_note)

        # listen
        self.question_picker = QComboBox()
        self.question_picker.currentIndexChanged.connect(self._question_picked)
        self.question_text = QLabel()
        self.question_text.setWordWrap(True)
        self.version_pickers: dict[str, QComboBox] = {}
        self.play_buttons: dict[str, QPushButton] = {}
        versions_row = FlowLayout()  # side by side, or wrapped where the panel is narrow (the tour open, larger text)
        for kind in VERSION_KINDS:
            box = QGroupBox(VERSION_TITLES[kind])
            box.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Preferred)  # a line's width shared
            picker = QComboBox()
            picker.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
            picker.setMinimumContentsLength(18)
            button = QPushButton("▶ Play")
            button.setEnabled(False)
            button.clicked.connect(lambda _checked=False, k=kind: self.play(k))
            inner = QVBoxLayout(box)
            inner.addWidget(picker)
            inner.addWidget(button)
            self.version_pickers[kind] = picker
            self.play_buttons[kind] = button
            versions_row.addWidget(box)
        self.listen_note = QLabel("Pick a question to hear its versions.")
        self.listen_note.setWordWrap(True)
        self.answers_table = _table(
            ANSWER_COLUMNS, "gender-answers", wrapped=ANSWER_COLUMNS[:4]
        )  # how each model answered the question heard
        listen = QWidget()
        layout = QVBoxLayout(listen)
        layout.setContentsMargins(0, 0, 0, 0)
        picker_row = QHBoxLayout()
        picker_row.addWidget(QLabel("Question:"))
        picker_row.addWidget(self.question_picker, 1)
        layout.addLayout(picker_row)
        layout.addWidget(self.question_text)
        layout.addLayout(versions_row)
        layout.addWidget(self.listen_note)
        layout.addWidget(self.answers_table, 1)

        self.tabs = QTabWidget()  # its tabs are added as the panel is first shown (`show_tab`)
        main = QVBoxLayout(self)
        main.setContentsMargins(0, 0, 0, 0)
        main.addLayout(top)
        main.addWidget(self.tabs, 1)
        self.tab_pages = ((per_category, "Per category"), (per_question, "Answers per question"), (listen, "Listen"))
        for page, _title in self.tab_pages:  # after the tabs: Tab goes from the tab bar into its page, as before
            page.setParent(self)
            page.hide()

    # -- content ------------------------------------------------------------------------------------

    def set_view(self, view: GenderView | None) -> None:
        self.view = view
        chosen = self.wanted_setting or self.setting
        self.setting_picker.blockSignals(True)
        self.setting_picker.clear()
        for setting in view.settings if view else []:
            self.setting_picker.addItem(view.setting_names.get(setting, setting), setting)
        index = self.setting_picker.findData(chosen)
        self.setting_picker.setCurrentIndex(max(index, 0))
        self.setting_picker.blockSignals(False)
        if index >= 0 and chosen == self.wanted_setting:
            self.wanted_setting = None  # shown: later refreshes keep whatever the user picks
        self._fill_questions_picker()
        if view is None:
            self.title.setText("Gender probes: computing…")
        elif view.empty:
            self.title.setText(view.empty)
        else:
            simulated = any(view.simulated.values())
            pairs = ", ".join(f"{s} → {t}" for s, t in sorted(view.backbones.items())) or "none declared"
            self.title.setText(
                f"<b>Gender probes</b> — {'yours (simulated)' if simulated else 'yours'} · "
                f"{view.n_resamples} bootstrap resamples · backbones: {pairs}"
            )
        self._fill_tables()

    @property
    def setting(self) -> str | None:
        return self.setting_picker.currentData()

    def choose_setting(self, setting: str | None) -> None:
        """Show this answer setting, now or when the detail is next filled (the tour picks one before the data
        arrives); None leaves the choice as it is."""
        index = -1 if setting is None else self.setting_picker.findData(setting)
        self.wanted_setting = setting if index < 0 else None
        if index >= 0:
            self.setting_picker.setCurrentIndex(index)

    def _fill_tables(self) -> None:
        self._fill_summary()
        models = []
        if self.view is not None and self.setting:
            models = sorted(set(self.view.distributions_for(self.setting)["model"]))
        current = self.model_picker.currentData()
        self.model_picker.blockSignals(True)
        self.model_picker.clear()
        self.model_picker.addItem("every voiced model", None)
        for model in models:
            self.model_picker.addItem(model, model)
        self.model_picker.setCurrentIndex(max(self.model_picker.findData(current), 0))
        self.model_picker.blockSignals(False)
        self._fill_questions()

    def _fill_summary(self) -> None:
        table = self.summary_table
        rows = self.view.summary_for(self.setting) if self.view is not None and self.setting else None
        free = self.setting == "free_form"
        table.setHorizontalHeaderLabels(FREE_FORM_SUMMARY_COLUMNS if free else SUMMARY_COLUMNS)
        table.setRowCount(0 if rows is None else len(rows))
        for r, record in enumerate([] if rows is None else rows.to_dict("records")):
            delta = record.get("delta")
            cells = [
                QTableWidgetItem(str(record["model"])),
                QTableWidgetItem(str(record["category"])),
                NumericItem(_number(record.get("J_s"), 3), record.get("J_s"))
                if free
                else NumericItem(
                    _with_interval(record.get("J"), record.get("J_ci_low"), record.get("J_ci_high")), record.get("J")
                ),
                NumericItem(_delta_text(delta, record), delta),
                NumericItem(_number(record.get("p_value"), 3), record.get("p_value")),
                NumericItem(
                    _with_interval(
                        record.get("neutral_rate"),
                        record.get("neutral_rate_ci_low"),
                        record.get("neutral_rate_ci_high"),
                    ),
                    record.get("neutral_rate"),
                ),
                NumericItem(_number(record.get("s"), 3), record.get("s"))
                if free
                else NumericItem(
                    _with_interval(record.get("kappa"), record.get("kappa_ci_low"), record.get("kappa_ci_high")),
                    record.get("kappa"),
                ),
                QTableWidgetItem(str(record.get("backbone") or "")),
                NumericItem(str(int(record.get("n") or 0)), record.get("n")),
            ]
            cells[3].setToolTip(
                f"Δ = {_number(delta, 3)}, t = {_number(record.get('t_stat'), 2)}, p = {_number(record.get('p_value'), 4)} "
                f"over {record.get('delta_questions', 0)} question(s)\n{SIGNIFICANCE_NOTE}"
            )
            for c, cell in enumerate(cells):
                table.setItem(r, c, cell)
        table.fitted.fit()

    def _fill_questions(self) -> None:
        table = self.question_table
        table.setSortingEnabled(False)
        male_name, female_name = voice_names(self.setting or "")
        table.setHorizontalHeaderLabels(
            [
                *QUESTION_COLUMNS[:3],
                f"{male_name} answered",
                f"{female_name} answered",
                f"{male_name}: share M",
                f"{female_name}: share M",
                *QUESTION_COLUMNS[7:],
            ]
        )
        rows = None
        if self.view is not None and self.setting:
            rows = self.view.distributions_for(self.setting, self.model_picker.currentData())
        table.setRowCount(0 if rows is None else len(rows))
        for r, record in enumerate([] if rows is None else rows.to_dict("records")):
            question = QTableWidgetItem(str(record["question_id"]))
            question.setToolTip(str(record.get("question", "")))
            question.setData(Qt.ItemDataRole.UserRole, str(record["question_id"]))
            male = QTableWidgetItem(str(record["male_voice"]))
            female = QTableWidgetItem(str(record["female_voice"]))
            for item in (male, female):
                item.setToolTip(str(record.get("legend", "")))
            cells = [
                question,
                QTableWidgetItem(str(record["category"])),
                QTableWidgetItem(str(record["model"])),
                male,
                female,
                NumericItem(_number(record.get("male_voice_M")), record.get("male_voice_M")),
                NumericItem(_number(record.get("female_voice_M")), record.get("female_voice_M")),
                NumericItem(_number(record.get("delta"), -2), record.get("delta")),
                NumericItem(_number(record.get("J")), record.get("J")),
                NumericItem(_number(record.get("disagreement")), record.get("disagreement")),
            ]
            for c, cell in enumerate(cells):
                table.setItem(r, c, cell)
        table.setSortingEnabled(True)
        self.sort_by_disagreement()
        self._fit_questions()
        table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Interactive)

    def _fit_questions(self) -> None:
        """Each column as wide as its text, but a column a person dragged (`DraggedWidths`)."""
        with self.question_widths.by_code():
            self.question_table.resizeColumnsToContents()
        self.question_widths.apply()

    def sort_by_disagreement(self) -> None:
        self.question_table.sortItems(DISAGREEMENT_COLUMN, Qt.SortOrder.DescendingOrder)

    def question_rows(self) -> list[dict]:
        """The answers-per-question table as shown (in its current order), for tests and copying."""
        table = self.question_table
        return [
            {QUESTION_COLUMNS[c]: table.item(r, c).text() for c in range(table.columnCount())}
            for r in range(table.rowCount())
        ]

    def summary_rows(self) -> list[dict]:
        table = self.summary_table
        names = [table.horizontalHeaderItem(c).text() for c in range(table.columnCount())]  # J_s … in the free form
        return [
            {names[c]: table.item(r, c).text() for c in range(table.columnCount())} for r in range(table.rowCount())
        ]

    def selected_question(self) -> str | None:
        rows = self.question_table.selectionModel().selectedRows()
        if not rows:
            return None
        return self.question_table.item(rows[0].row(), 0).data(Qt.ItemDataRole.UserRole)

    def _listen_to_selected(self) -> None:
        question = self.selected_question()
        if question is not None and self.view is not None:
            item_id = self.view.item_id_of(question)
            if item_id is not None:
                self.show_question(item_id)

    # -- listening ----------------------------------------------------------------------------------

    def _fill_questions_picker(self) -> None:
        current = self.question_picker.currentData()
        self.question_picker.blockSignals(True)
        self.question_picker.clear()
        for q in self.view.questions if self.view else []:
            self.question_picker.addItem(f"{q['question_id']} · {q['category']} · {q['question']}", q["item_id"])
        self.question_picker.setCurrentIndex(-1)
        self.question_picker.blockSignals(False)
        if current is not None and self.question_picker.findData(current) >= 0:
            self.question_picker.setCurrentIndex(self.question_picker.findData(current))

    def showEvent(self, event) -> None:
        self.show_tab()
        super().showEvent(event)

    def show_tab(self, index: int | None = None) -> None:
        """Show the tab at `index` (None: the one shown). The tabs are added the first time, as the panel is
        shown: a tab bar reports its first tab selected as it is added, and Orca 43 goes to whatever tab such a
        report names, shown or not, so the hidden panel's *Per category page tab* was said over the Results
        page's first Ctrl+7."""
        if not self.tabs.count():
            for page, title in self.tab_pages:
                self.tabs.addTab(page, title)
        if index is not None:
            self.tabs.setCurrentIndex(index)

    def show_question(self, item_id: int) -> None:
        """Open the listening tab on this probe (its clips are asked for through `question_chosen`)."""
        self.show_tab(2)
        index = self.question_picker.findData(item_id)
        if index == self.question_picker.currentIndex() and index >= 0:
            self.question_chosen.emit(item_id)
        else:
            self.question_picker.setCurrentIndex(index)

    def _question_picked(self, index: int) -> None:
        item_id = self.question_picker.itemData(index) if index >= 0 else None
        self.set_versions(None)
        if item_id is not None:
            self.listen_note.setText("Reading the question's clips…")
            self.question_chosen.emit(int(item_id))

    def set_versions(self, versions: QuestionVersions | None) -> None:
        self.versions = versions
        self.question_text.setText(
            "" if versions is None else f"<b>{versions.question_id}</b> ({versions.category}): {versions.question}"
        )
        for kind in VERSION_KINDS:
            picker = self.version_pickers[kind]
            picker.clear()
            clips = [] if versions is None else versions.versions.get(kind, [])
            for version in clips:
                picker.addItem(version.label, version.path)
                picker.setItemData(picker.count() - 1, version.path, Qt.ItemDataRole.ToolTipRole)
            if not clips:
                picker.addItem("no clip stored" if versions is not None else "", None)
            self.play_buttons[kind].setEnabled(bool(clips))
        if versions is not None:
            missing = [VERSION_TITLES[k].lower() for k in VERSION_KINDS if not versions.versions.get(k)]
            methods = sorted({v.neutralization for v in versions.versions.get("neutralized", [])})
            self.listen_note.setText(
                "The question is heard; the options are read as text. "
                + (f"Neutralized by {', '.join(methods)} (docs/voices.md). " if methods else "")
                + (f"No {', '.join(missing)} clip stored for this question." if missing else "")
            )
        self._fill_answers()

    def _fill_answers(self) -> None:
        """How each voiced model answered the question heard, in every setting."""
        rows = []
        if self.versions is not None and self.view is not None and not self.view.distributions.empty:
            frame = self.view.distributions
            rows = frame[frame["question_id"] == self.versions.question_id].to_dict("records")
        table = self.answers_table
        table.setRowCount(len(rows))
        for r, record in enumerate(rows):
            cells = [
                self.view.setting_names.get(record["setting"], record["setting"]),
                record["model"],
                record["male_voice"],
                record["female_voice"],
                _number(record.get("delta"), -2),
                _number(record.get("J")),
            ]
            for c, text in enumerate(cells):
                item = QTableWidgetItem(str(text))
                if c in (2, 3):
                    item.setToolTip(str(record.get("legend", "")))
                table.setItem(r, c, item)
        table.fitted.fit()

    def version_labels(self) -> dict[str, list[str]]:
        return {
            kind: [self.version_pickers[kind].itemText(i) for i in range(self.version_pickers[kind].count())]
            for kind in VERSION_KINDS
        }

    def play(self, kind: str) -> str | None:
        """Ask for the chosen clip of this kind to be played; returns its path."""
        path = self.version_pickers[kind].currentData()
        if not path:
            return None
        self.play_requested.emit(str(path))
        return str(path)
