"""The QC dashboard page: the paper's Table 2 (WER intervals per language), Table 3 (ratings per language and per
WER interval) and Table 9 (rewrite QC), annotator agreement (Fleiss' and Cohen's κ) and the clips annotators
disagree on — all from core's report functions, read on the pool (QueryOp) and re-read when ratings,
transcripts, screening, rewrites or reviews change (here or in another process). Each table exports as CSV
(the published layout) and LaTeX, written off the UI thread. Activating a disagreement emits
`clip_requested(clip_id)`: the window opens the Items page on the clip's item, the clip shown (and played where
audio works) on its Clips tab.

The read never writes: where transcripts changed since screening was stored, Table 2 is computed in memory
(`spokenbench screen` or `sample` store it)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QFileDialog, QVBoxLayout, QWidget

from spokenbench.app.operations import BackgroundOp, ProjectSession, QueryOp
from spokenbench.core.asr.backends import screening_requirements
from spokenbench.core.asr.screening import (
    TABLE2_COLUMNS,
    ScreeningSettings,
    compute_screening,
    screening_is_current,
    stored_screening_settings,
    stored_table2,
)
from spokenbench.core.asr.store import transcript_count
from spokenbench.core.qc.ratings import TABLE3_BY_BIN_COLUMNS, TABLE3_COLUMNS, rating_results
from spokenbench.core.qc.reliability import Thresholds, annotator_reliability
from spokenbench.core.rewriting.report import TABLE9_COLUMNS, rewrite_qc
from spokenbench.core.store import Project
from spokenbench.widgets.qc_tables import QcTable, QcTablesView

DASHBOARD_TABLES = frozenset(
    {"ratings", "transcripts", "clip_screening", "rewrites", "rewrite_reviews", "control_clips"}
)
NO_RATINGS = (
    "No ratings yet. Rate a queue on the Rating page, or merge an annotator's pack with `spokenbench unpack DIR PACK`."
)
AGREEMENT_COLUMNS = ["measure", "scope", "shared_clips", "kappa", "raw_agreement"]
ANNOTATOR_COLUMNS = [  # whom to talk to and why first; the counts behind the figures after
    "annotator", "flagged", "control_accuracy", "control_ci", "agreement", "median_seconds", "reasons",
    "ratings", "controls_rated", "shared_clips",
]  # fmt: skip
BLOCK_COLUMNS = ["annotator", "positions", "ratings", "controls_rated", "control_accuracy", "median_seconds"]
DISAGREEMENT_COLUMNS = ["clip_id", "item", "language", "accent", "voice", "part", "wer_interval", "ratings", "notes"]


@dataclass(frozen=True)
class DashboardData:
    summary: str
    tables: list[QcTable]


# --------------------------------------------------------------------------------------------------
# Reading (on the pool; Qt-free)


def read_dashboard(
    project: Project,
    table2_layout: str = "default",
    exclude_flagged: bool = False,
    thresholds: Thresholds | None = None,
) -> DashboardData:
    """Everything the dashboard shows, from one read connection; `table2_layout` one of TABLE2_LAYOUTS;
    annotators flagged by `thresholds` (the coordinator's bars); with `exclude_flagged`, Table 3, agreement and
    disagreements without them."""
    conn = project.conn
    rewriting = rewrite_qc(conn)
    table2, screening_empty, screening_note = _screening(conn, table2_layout)
    reliability = annotator_reliability(conn, thresholds=thresholds)
    to_talk_to = tuple(a["annotator"] for a in reliability["annotators"] if a["flagged"])
    everyone = rating_results(conn)
    ratings = rating_results(conn, exclude_annotators=to_talk_to) if exclude_flagged else everyone
    no_ratings = NO_RATINGS if ratings["ratings"] == 0 else None
    checked = sum(language["parts_checked"] for language in rewriting["by_language"].values())
    flagged = sum(language["flagged"] for language in rewriting["by_language"].values())
    waiting = sum(language["awaiting_review"] for language in rewriting["by_language"].values())
    summary = (
        f"Rewrites: {checked} parts checked, {flagged} flagged, {waiting} awaiting review  ·  "
        f"Screening: {screening_note}  ·  Ratings: "
        + (
            f"{ratings['ratings']} on {ratings['rated_clips']} clips by {len(ratings['annotators'])} annotator(s)"
            if ratings["ratings"]
            else "none yet"
        )
    )
    if exclude_flagged:
        dropped = everyone["ratings"] - ratings["ratings"]
        summary += (
            f"  ·  Table 3 without flagged annotators ({', '.join(to_talk_to)}): {dropped} ratings dropped"
            if to_talk_to
            else "  ·  No annotator is flagged: nothing excluded"
        )
    elif to_talk_to:
        summary += f"  ·  {len(to_talk_to)} annotator(s) flagged: see Annotators"
    tables = [
        QcTable(
            "table02_wer_intervals",
            "Table 2 · WER intervals",
            "Clips per WER interval and language: the lower error rate of two ASR systems against the text the "
            "clip was made from (CER for Chinese).",
            TABLE2_COLUMNS,
            table2,
            screening_empty,
        ),
        QcTable(
            "table03_human_ratings",
            "Table 3 · Ratings",
            "Human ratings per language; a clip rated by several annotators counts once, under its consensus "
            "(majority, ties to the more severe rating). Control clips never count"
            + (" — without the flagged annotators." if exclude_flagged else "."),
            TABLE3_COLUMNS,
            ratings["table3"],
            no_ratings,
        ),
        QcTable(
            "table03_human_ratings_by_wer_interval",
            "Table 3 · by WER interval",
            "Human ratings per WER interval (as sampled into the queue) and language.",
            TABLE3_BY_BIN_COLUMNS,
            ratings["table3_by_wer_interval"],
            no_ratings,
        ),
        QcTable(
            "table09_rewrite_qc",
            "Table 9 · Rewrite QC",
            "Rewritten parts flagged by the diff check and the flagged parts a reviewer confirmed as errors (edited "
            "or rejected), as a share of each language's checked parts.",
            TABLE9_COLUMNS,
            rewriting["table9"],
            None
            if rewriting["table9"]
            else "No rewrites have been diff-checked yet: run `spokenbench rewrite DIR`, then `spokenbench flag DIR`.",
        ),
        _annotators_table(reliability),
        _blocks_table(reliability),
        _agreement_table(ratings, no_ratings),
        QcTable(
            "rating_disagreements",
            "Disagreements",
            "Clips whose annotators gave different ratings (each annotator's newest rating). Double-click a row, "
            "or select it and press Enter, to open the clip.",
            DISAGREEMENT_COLUMNS,
            [_disagreement_row(row) for row in ratings["disagreements"]],
            no_ratings
            or (
                "No disagreements: every clip rated by several annotators got the same rating."
                if ratings["agreement"]["clips_rated_by_several"]
                else "No clip has been rated by two annotators yet, so there is nothing to disagree on."
            ),
            clip_column="clip_id",
        ),
    ]
    return DashboardData(summary, tables)


def _screening(conn, layout: str = "default") -> tuple[list[dict], str | None, str]:
    """(Table 2 rows, why it is empty, a short note for the summary)."""
    transcripts = transcript_count(conn)
    if transcripts == 0:
        return [], "No transcripts yet, so no clip is screened.\n\n" + screening_requirements(), "no transcripts"
    settings = stored_screening_settings(conn) or ScreeningSettings()
    if screening_is_current(conn, settings):
        rows = stored_table2(conn, layout)
        note = f"{sum(row['n_samples'] for row in rows)} clips screened"
    else:
        result = compute_screening(conn, settings)
        rows = result.table2(layout)
        note = f"{result.screened} clips screened (not stored yet: `spokenbench screen DIR` stores it)"
    if not rows:
        return (
            [],
            (
                f"{transcripts} transcripts, but no clip has transcripts from {settings.min_asr} ASR systems yet: "
                "transcribe with a second system, or screen with a lower --min-asr."
            ),
            "none screened",
        )
    return rows, None, note


def _agreement_table(ratings: dict, no_ratings: str | None) -> QcTable:
    agreement = ratings["agreement"]
    rows = []
    if agreement["clips_rated_by_several"]:
        rows.append(
            {
                "measure": "Fleiss' κ",
                "scope": "all languages",
                "shared_clips": agreement["clips_rated_by_several"],
                "kappa": agreement["fleiss_kappa"],
                "raw_agreement": None,
            }
        )
        for language, kappa in agreement["fleiss_kappa_by_language"].items():
            rows.append(
                {
                    "measure": "Fleiss' κ",
                    "scope": language,
                    "shared_clips": agreement["clips_rated_by_several_by_language"].get(language),
                    "kappa": kappa,
                    "raw_agreement": None,
                }
            )
        for pair in agreement["pairs"]:
            rows.append(
                {
                    "measure": "Cohen's κ",
                    "scope": " – ".join(pair["annotators"]),
                    "shared_clips": pair["shared_clips"],
                    "kappa": pair["cohen_kappa"],
                    "raw_agreement": pair["raw_agreement"],
                }
            )
    empty = no_ratings or (
        f"Agreement needs clips rated by two or more annotators; none yet ({len(agreement['annotators'])} "
        "annotator(s) so far)."
    )
    return QcTable(
        "annotator_agreement",
        "Agreement",
        "Fleiss' κ over every clip rated by two or more annotators (overall and per language) and Cohen's κ with "
        "raw agreement for each pair of annotators on the clips both rated.",
        AGREEMENT_COLUMNS,
        rows,
        None if rows else empty,
    )


def _annotators_table(reliability: dict) -> QcTable:
    """Which annotator to talk to and why: control accuracy (Wilson 95 % interval), agreement, time, flags."""
    rows = []
    for a in reliability["annotators"]:
        ci = a["control_ci"]
        rows.append(
            a
            | {
                "control_ci": None if ci is None else f"{ci[0]:.2f}–{ci[1]:.2f}",
                "flagged": "FLAGGED" if a["flagged"] else "",
                "agreement": a["agreement_with_majority"],
                "reasons": "; ".join(a["reasons"] + a["notes"]),
            }
        )
    t = reliability["thresholds"]
    return QcTable(
        "annotators",
        "Annotators",
        f"Each annotator's accuracy on hidden control clips (95 % Wilson interval), agreement with the majority of "
        f"the other annotators on shared clips, and median seconds per clip. Flagged below "
        f"{t['min_control_accuracy']:.0%} control accuracy (after {t['min_controls']} controls) or "
        f"{t['min_agreement']:.0%} agreement (after {t['min_shared']} shared clips): the bars above (the same as "
        "`spokenbench qc-report --min-control-accuracy / --min-agreement`).",
        ANNOTATOR_COLUMNS,
        rows,
        None if rows else NO_RATINGS,
    )


def _blocks_table(reliability: dict) -> QcTable:
    rows = [{"annotator": a["annotator"]} | block for a in reliability["annotators"] for block in a["blocks"]]
    return QcTable(
        "annotator_blocks",
        "Fatigue",
        "Control accuracy and median seconds per clip for each block of 20 positions of an annotator's session, in "
        "the order rated: accuracy falling or time shrinking late in a session is fatigue or drift.",
        BLOCK_COLUMNS,
        rows,
        None if rows else NO_RATINGS,
    )


def _disagreement_row(row: dict) -> dict:
    shown = dict(row)
    shown["ratings"] = ", ".join(f"{who}: {rating}" for who, rating in row["ratings"].items())
    shown["notes"] = " | ".join(f"{who}: {note}" for who, note in row["notes"].items())
    return shown


# --------------------------------------------------------------------------------------------------
# Exporting (off the UI thread)


def write_qc_table(table: QcTable, path: str | Path, fmt: str) -> Path:
    """Write a table as CSV (its published layout, full precision) or LaTeX (rounded, with a caption)."""
    path = Path(path)
    if fmt == "csv":
        from spokenbench.core.foundation.tables import write_table

        write_table(table.rows, path, table.columns)
    elif fmt == "tex":
        import pandas as pd

        from spokenbench.core.metrics.table_formats import to_latex

        frame = pd.DataFrame(table.rows, columns=table.columns)
        path.write_text(to_latex(frame, table.tab, f"tab:{table.key}"), encoding="utf-8")
    else:
        raise ValueError(f"unknown export format {fmt!r}")
    return path


# --------------------------------------------------------------------------------------------------
# The page


class QcDashboardPage(QWidget):
    clip_requested = Signal(int)  # a disagreement row was activated: show this clip
    exported = Signal(str)  # the path of a table just written

    def __init__(self, window):
        super().__init__()
        self.window = window
        self.session: ProjectSession | None = None
        self.data: DashboardData | None = None
        self.exclude_flagged = False
        self.thresholds = Thresholds()
        self.view = QcTablesView()
        self.view.exclude_flagged_toggled.connect(self.set_exclude_flagged)
        self.view.thresholds_changed.connect(self.set_thresholds)
        self.view.clip_requested.connect(self.clip_requested)
        self.view.export_requested.connect(self.choose_export_file)
        self.view.refresh_requested.connect(self.refresh)
        self.view.paper_layout_toggled.connect(self._set_paper_layout)
        self.table2_layout = "default"  # one of TABLE2_LAYOUTS; the Paper layout box switches it
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.view)

    def set_session(self, session: ProjectSession | None) -> None:
        if self.session is not None:
            self.session.changes.changed.disconnect(self._project_changed)
        self.session = session
        self.data = None
        if session is None:
            self.view.set_summary("No project open")
            self.view.set_tables([])
            return
        session.changes.changed.connect(self._project_changed)
        self.refresh()

    def _set_paper_layout(self, paper: bool) -> None:
        self.table2_layout = "paper" if paper else "default"
        self.refresh()

    def _project_changed(self, tables: set[str]) -> None:
        if tables & DASHBOARD_TABLES:
            self.refresh()

    def refresh(self) -> QueryOp | None:
        if self.session is None:
            return None
        self.view.set_loading(True)
        layout, exclude, bars = self.table2_layout, self.exclude_flagged, self.thresholds
        return (
            QueryOp(
                self.session,
                lambda project, progress: read_dashboard(project, layout, exclude, bars),
                label="Reading the QC tables",
                parent=self,
                supersede="qc-dashboard",
            )
            .success(self._show)
            .failure(lambda _error: self.view.set_loading(False), dialog=True)
            .run()
        )

    def set_exclude_flagged(self, exclude: bool) -> None:
        """Table 3 with or without the flagged annotators (the toggle above the tables)."""
        self.exclude_flagged = exclude
        self.refresh()

    def set_thresholds(self, min_control_accuracy: float, min_agreement: float) -> None:
        """The coordinator's bars for flagging (the spin boxes above the tables)."""
        self.thresholds = Thresholds(min_control_accuracy=min_control_accuracy, min_agreement=min_agreement)
        self.refresh()

    def _show(self, data: DashboardData) -> None:
        self.data = data
        self.view.set_loading(False)
        self.view.set_summary(data.summary)
        self.view.set_tables(data.tables)

    def choose_export_file(self, key: str, fmt: str) -> None:
        table = self.view.table(key)
        if table is None:
            return
        suffix = {"csv": "CSV files (*.csv)", "tex": "LaTeX files (*.tex)"}[fmt]
        start = str((self.session.path.parent if self.session else Path.home()) / f"{key}.{fmt}")
        path, _ = QFileDialog.getSaveFileName(self, f"Export {table.tab}", start, suffix)
        if path:
            self.export_table(key, fmt, Path(path))

    def export_table(self, key: str, fmt: str, path: Path) -> BackgroundOp | None:
        """Write the table as shown now to `path`, off the UI thread; `exported` fires when it is on disk."""
        table = self.view.table(key)
        if table is None or self.session is None:
            return None
        return (
            BackgroundOp(
                self.session.runner,
                lambda progress: write_qc_table(table, path, fmt),
                label=f"Exporting {table.tab}",
                parent=self,
            )
            .success(lambda written: self.exported.emit(str(written)))
            .run()
        )
