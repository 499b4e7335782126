"""Create a rating queue: the Appendix B.4 stratified sample over the WER intervals (per-stratum N and seed), a
filtered pool (language / accent / voice / part), or "unscreened" strata (language only, WER ignored). The
strata table (pool, quotas, selected) is shown before anything is stored. The dialog only collects the choice
and draws the preview; the page that opened it reads and writes."""

from __future__ import annotations

from PySide6.QtCore import Signal
from PySide6.QtWidgets import (
    QAbstractItemView,
    QButtonGroup,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QRadioButton,
    QSpinBox,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from spokenbench.core.asr.scoring import bin_label
from spokenbench.core.qc.sampling import DEFAULT_PER_BIN, SampleResult

MODES = {
    "wer-bins": "Stratified by WER interval (Appendix B.4)",
    "filter": "A filtered pool (language / accent / voice / part), stratified the same way",
    "unscreened": "Unscreened strata (language × accent × subject; WER intervals ignored)",
}
FILTERS = ("language", "accent", "voice", "part")
ANY = "any"


class QueueDialog(QDialog):
    """Emits `preview_requested(spec)` and, once the shown preview matches the choice, `create_requested(spec)`.
    A spec is {'name', 'mode', 'per_bin', 'seed', 'filters': {field: value}, 'controls'}."""

    preview_requested = Signal(object)
    create_requested = Signal(object)

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.operations: list = []  # the app's work whose callbacks reach this dialog
        self.setWindowTitle("Create rating queue")
        self.resize(720, 560)
        self.name_edit = QLineEdit()
        self.name_edit.setPlaceholderText("e.g. qc-round-1")
        self.mode_buttons = QButtonGroup(self)
        modes = QVBoxLayout()
        for index, (mode, text) in enumerate(MODES.items()):
            button = QRadioButton(text)
            button.setProperty("mode", mode)
            self.mode_buttons.addButton(button, index)
            modes.addWidget(button)
        self.mode_buttons.button(0).setChecked(True)
        self.per_bin = QSpinBox(minimum=1, maximum=100_000, value=DEFAULT_PER_BIN)
        self.seed = QSpinBox(minimum=0, maximum=2_147_483_647, value=0)
        self.controls = QSpinBox(minimum=0, maximum=1000, value=0)
        self.controls.setToolTip(
            "Hidden control clips mixed in at seeded positions: known-good copies (expected Correct) and "
            "corrupted copies of project clips (expected Incorrect). Raters cannot tell them apart; the QC "
            "report measures each annotator's accuracy on them (docs/qc.md)."
        )
        self.filter_boxes: dict[str, QComboBox] = {}
        filters = QHBoxLayout()
        for name in FILTERS:
            box = QComboBox()
            box.addItem(ANY)
            self.filter_boxes[name] = box
            filters.addWidget(QLabel(f"{name}:"))
            filters.addWidget(box, 1)
        form = QFormLayout()
        form.addRow("Name:", self.name_edit)
        form.addRow("Sample:", modes)
        form.addRow("Clips per stratum (N):", self.per_bin)
        form.addRow("Seed:", self.seed)
        form.addRow("Hidden control clips:", self.controls)
        form.addRow("Filter:", filters)
        self.preview_button = QPushButton("Preview strata")
        self.preview_button.clicked.connect(self.request_preview)
        self.strata = QTableWidget(0, 5)
        self.strata.setHorizontalHeaderLabels(["Language", "WER interval", "Pool", "Quotas (accent: N)", "Selected"])
        self.strata.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.strata.verticalHeader().hide()
        self.strata.horizontalHeader().setStretchLastSection(True)
        self.strata.resizeColumnsToContents()  # the headers whole before any preview ("Quotas (accent: N)" was cut)
        self.summary = QLabel("Preview the strata to see what the queue will hold.")
        self.summary.setWordWrap(True)
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Cancel)
        self.create_button = self.buttons.addButton("Create queue", QDialogButtonBox.ButtonRole.AcceptRole)
        self.create_button.setEnabled(False)
        self.buttons.accepted.connect(self._confirm)
        self.buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addLayout(form)
        layout.addWidget(self.preview_button)
        layout.addWidget(self.strata, 1)
        layout.addWidget(self.summary)
        layout.addWidget(self.buttons)
        self.previewed: dict | None = None
        for signal in (
            self.name_edit.textChanged,
            self.mode_buttons.idClicked,
            self.per_bin.valueChanged,
            self.seed.valueChanged,
            self.controls.valueChanged,
            *(box.currentTextChanged for box in self.filter_boxes.values()),
        ):
            signal.connect(self._choice_changed)
        self._choice_changed()

    def set_options(self, options: dict[str, list[str]], screened: bool) -> None:
        """The values each filter offers; without screening, the WER-interval sample is the unscreened one."""
        for name, box in self.filter_boxes.items():
            box.blockSignals(True)
            box.clear()
            box.addItems([ANY, *options.get(name, [])])
            box.blockSignals(False)
        if not screened:
            self.mode_buttons.button(0).setText(MODES["wer-bins"] + " — no screening yet: sampled unscreened")
        self._choice_changed()

    def spec(self) -> dict:
        mode = self.mode_buttons.checkedButton().property("mode")
        filters = {}
        if mode == "filter":
            filters = {n: b.currentText() for n, b in self.filter_boxes.items() if b.currentText() not in ("", ANY)}
        return {
            "name": self.name_edit.text().strip(),
            "mode": mode,
            "per_bin": self.per_bin.value(),
            "seed": self.seed.value(),
            "filters": filters,
            "controls": self.controls.value(),
        }

    def request_preview(self) -> None:
        self.summary.setText("Computing the sample…")
        self.preview_requested.emit(self.spec())

    def set_preview(self, spec: dict, result: SampleResult) -> None:
        """Draw the strata of `result`, the sample `spec` asked for; creating is allowed while it is current."""
        self.strata.setRowCount(len(result.strata))
        for row, stratum in enumerate(result.strata):
            quotas = ", ".join(f"{accent or '—'}: {n}" for accent, n in stratum.quotas.items())
            cells = [stratum.language, bin_label(stratum.wer_bin), stratum.pool, quotas, stratum.selected]
            for column, value in enumerate(cells):
                self.strata.setItem(row, column, QTableWidgetItem(str(value)))
        self.strata.resizeColumnsToContents()
        text = f"{len(result.selected)} clips in {len(result.strata)} strata ({result.strategy})."
        if spec.get("controls"):
            text += f" Plus {spec['controls']} hidden control clips, made when the queue is created."
        if result.note:  # a note reads as a clause on the command line ("note: …"), as a sentence here
            text += f" {result.note[:1].upper()}{result.note[1:]}."
        self.summary.setText(text)
        self.previewed = spec
        self._choice_changed()

    def show_message(self, message: str) -> None:
        self.summary.setText(message)

    def _choice_changed(self, *_args) -> None:
        spec = self.spec()
        for box in self.filter_boxes.values():
            box.setEnabled(spec["mode"] == "filter")
        current = self.previewed is not None and {**self.previewed, "name": spec["name"]} == spec
        self.create_button.setEnabled(bool(current and spec["name"]))
        if self.previewed is not None and not current:
            self.summary.setText("The choice changed: preview again before creating.")

    def _confirm(self) -> None:
        if self.create_button.isEnabled():
            self.create_requested.emit(self.spec())
