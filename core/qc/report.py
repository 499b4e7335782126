"""The whole quality-control picture of a project in one report: rewriting (Table 9), ASR screening (Table 2),
rating queues and rating results (Table 3, per WER interval, agreement, disagreements) — and the CSV files in
the exact layouts of the published tables."""

from __future__ import annotations

from pathlib import Path

from spokenbench.core.asr.backends import screening_requirements
from spokenbench.core.asr.screening import TABLE2_COLUMNS, ensure_screening, stored_screening_settings, stored_table2
from spokenbench.core.asr.store import transcript_count, transcript_counts_by_asr, transcript_failure_count
from spokenbench.core.asr.transcribe import transcript_failures
from spokenbench.core.foundation.safe_files import check_output_folder
from spokenbench.core.foundation.tables import write_table
from spokenbench.core.qc.queues import list_queues
from spokenbench.core.qc.ratings import TABLE3_BY_BIN_COLUMNS, TABLE3_COLUMNS, rating_results
from spokenbench.core.qc.reliability import Thresholds, annotator_reliability
from spokenbench.core.rewriting.llm import manual_items
from spokenbench.core.rewriting.report import TABLE9_COLUMNS, rewrite_qc
from spokenbench.core.store import Project

ANNOTATOR_COLUMNS = (
    "annotator", "ratings", "controls_rated", "control_accuracy", "control_ci", "agreement_with_majority",
    "shared_clips", "median_seconds", "flagged", "reasons",
)  # fmt: skip
REPORT_FILES = {
    "table02_wer_intervals.csv": ("screening", "table2", TABLE2_COLUMNS),
    "table03_human_ratings.csv": ("ratings", "table3", TABLE3_COLUMNS),
    "table03_human_ratings_by_wer_interval.csv": ("ratings", "table3_by_wer_interval", TABLE3_BY_BIN_COLUMNS),
    "table09_rewrite_qc.csv": ("rewriting", "table9", TABLE9_COLUMNS),
}


def screening_section(project: Project) -> dict:
    conn = project.conn
    transcripts = transcript_count(conn)
    asr = transcript_counts_by_asr(conn)
    failures = transcript_failure_count(conn)
    if transcripts == 0:
        return {
            "screened": 0,
            "transcripts_by_asr": [],
            "asr_failures": failures,
            "table2": [],
            "needs": screening_requirements(),
        }
    screened = ensure_screening(project)
    settings = stored_screening_settings(conn)
    section = {
        "screened": screened,
        "transcripts_by_asr": asr,
        "asr_failures": failures,
        "settings": settings.as_dict() if settings else None,
        "table2": stored_table2(conn),
    }
    if screened == 0:
        section["needs"] = (
            f"no clip has transcripts from {settings.min_asr if settings else 2} ASR systems yet; "
            "transcribe with a second system or lower --min-asr"
        )
    if failures:
        section["failures"] = transcript_failures(conn, 20)
    return section


def qc_report(
    project: Project, queue: str | None = None, thresholds: Thresholds | None = None, exclude_flagged: bool = False
) -> dict:
    """The whole report. `annotators` is each annotator's reliability (core/qc/reliability.py); with
    `exclude_flagged`, Table 3 and agreement are recomputed without the flagged annotators, and `ratings.exclusion`
    says who was left out, how many ratings that dropped, and Table 3 as it was with everyone."""
    rewriting = rewrite_qc(project.conn)
    rewriting["manual_items"] = manual_items(project.conn)
    reliability = annotator_reliability(project.conn, queue, thresholds)
    ratings = rating_results(project.conn, queue) | {"queue": queue}
    if exclude_flagged:
        flagged = tuple(a["annotator"] for a in reliability["annotators"] if a["flagged"])
        everyone = ratings
        ratings = rating_results(project.conn, queue, flagged) | {"queue": queue}
        ratings["exclusion"] = {
            "excluded_annotators": list(flagged),
            "ratings_dropped": everyone["ratings"] - ratings["ratings"],
            "clips_dropped": everyone["rated_clips"] - ratings["rated_clips"],
            "table3_with_all_annotators": everyone["table3"],
        }
    return {
        "rewriting": rewriting,
        "screening": screening_section(project),
        "queues": list_queues(project.conn),
        "ratings": ratings,
        "annotators": reliability["annotators"],
        "reliability": {k: v for k, v in reliability.items() if k != "annotators"},
    }


def write_report_tables(report: dict, out_dir: str | Path) -> list[Path]:
    """The paper's tables as CSV files in their published layouts (a table with no rows is written with its
    header only)."""
    out_dir = Path(out_dir)
    check_output_folder(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)  # the report's own folder (an output file's folder is not made)
    written = []
    for name, (section, key, columns) in REPORT_FILES.items():
        path = out_dir / name
        write_table(report[section][key], path, columns)
        written.append(path)
    disagreements = report["ratings"]["disagreements"]
    path = out_dir / "rating_disagreements.csv"
    write_table(
        disagreements,
        path,
        ["clip_id", "item", "language", "accent", "voice", "part", "wer_interval", "ratings", "notes"],
    )
    written.append(path)
    path = out_dir / "annotators.csv"
    write_table(
        [
            {column: a[column] for column in ANNOTATOR_COLUMNS}
            | {"control_ci": "" if a["control_ci"] is None else f"{a['control_ci'][0]}–{a['control_ci'][1]}",
               "reasons": "; ".join(a["reasons"])}
            for a in report.get("annotators", [])
        ],
        path,
        list(ANNOTATOR_COLUMNS),
    )  # fmt: skip
    written.append(path)
    return written
