"""The QC dashboard on the demo project: Table 9 from the demo's flagged rewrites, empty states that say what
is missing, refresh when ratings or transcripts arrive from another connection, agreement and disagreements,
click-through to a clip, CSV and LaTeX export."""

import csv
from types import SimpleNamespace

import pytest
from demo_copies import linked_copy
from PySide6.QtCore import Qt
from support import strip_simulated_qc

from spokenbench.app.qc_dashboard import NO_RATINGS, QcDashboardPage
from spokenbench.core.asr.backends import screening_requirements
from spokenbench.core.asr.screening import TABLE2_COLUMNS
from spokenbench.core.metrics.table_formats import format_cell
from spokenbench.core.qc.queues import queue_clips, rate_clip
from spokenbench.core.qc.ratings import TABLE3_BY_BIN_COLUMNS, TABLE3_COLUMNS, rating_results
from spokenbench.core.rewriting.report import TABLE9_COLUMNS
from spokenbench.core.store import opened


@pytest.fixture
def demo_copy(demo_copy):
    """The demo without its simulated transcripts, screening and ratings (its queue sampled by language): these
    tests show such a project and add their own."""
    strip_simulated_qc(demo_copy)
    return demo_copy


@pytest.fixture
def page(qtbot, demo_copy, open_session):
    page = QcDashboardPage(SimpleNamespace())
    qtbot.addWidget(page)
    page.resize(1100, 700)
    page.show()
    page.set_session(open_session(demo_copy))
    qtbot.waitUntil(lambda: page.data is not None, timeout=15_000)  # the first read imports pandas: slow when busy
    return page


@pytest.fixture
def qc_page(qtbot, built_demo, tmp_path, open_session):
    """The dashboard on the demo as built: simulated transcripts, its screening, and two annotators' ratings."""
    project = linked_copy(built_demo, tmp_path / "demo-with-qc")
    page = QcDashboardPage(SimpleNamespace())
    qtbot.addWidget(page)
    page.resize(1100, 700)
    page.show()
    page.set_session(open_session(project))
    qtbot.waitUntil(lambda: page.data is not None, timeout=15_000)
    page.project = project
    return page


def shown_rows(view):
    """The table's cells as drawn."""
    table = view.table
    return [[table.item(r, c).text() for c in range(table.columnCount())] for r in range(table.rowCount())]


def section(page, key):
    return page.view.sections[key]


def rate_demo_clips(path, verdicts_by_annotator):
    """Ratings written by another connection (as a second app or a merged pack would): the page must notice."""
    with opened(path) as project:
        clips = [clip.clip_id for clip in queue_clips(project.conn, "demo-qc")]
        for annotator, verdicts in verdicts_by_annotator.items():
            for clip_id, verdict in zip(clips, verdicts):
                rate_clip(project, clip_id, annotator, verdict, queue="demo-qc")
    return clips


@pytest.mark.slow
def test_the_demo_shows_table9_and_says_what_screening_and_ratings_need(page):
    table9 = section(page, "table09_rewrite_qc")
    assert table9.table_data.rows and table9.table.rowCount() == len(table9.table_data.rows)
    assert {row["qc_stage"] for row in table9.table_data.rows} == {"flagged", "verified_error"}
    assert not table9.empty_label.isVisibleTo(page)

    table2 = section(page, "table02_wer_intervals")
    assert table2.table_data.rows == []
    assert screening_requirements() in table2.empty_label.text()
    assert table2.empty_label.isVisibleTo(page) and not table2.table.isVisibleTo(page)
    assert not table2.export_buttons["csv"].isEnabled()
    for key in ("table03_human_ratings", "annotator_agreement", "rating_disagreements"):
        assert section(page, key).empty_label.text() == NO_RATINGS
    assert "no transcripts" in page.view.summary.text()


@pytest.mark.slow
def test_ratings_from_elsewhere_fill_table3_agreement_and_disagreements(page, qtbot, demo_copy):
    clips = rate_demo_clips(
        demo_copy,
        {"alice": ["correct", "correct", "acceptable", "incorrect"], "bob": ["correct", "incorrect", "acceptable"]},
    )
    qtbot.waitUntil(lambda: bool(section(page, "rating_disagreements").table_data.rows), timeout=5_000)
    disagreements = section(page, "rating_disagreements").table_data.rows
    assert [row["clip_id"] for row in disagreements] == [clips[1]]
    assert disagreements[0]["ratings"] == "alice: correct, bob: incorrect"
    agreement = section(page, "annotator_agreement").table_data.rows
    cohen = [row for row in agreement if row["measure"] == "Cohen's κ"]
    assert [(row["scope"], row["shared_clips"]) for row in cohen] == [("alice – bob", 3)]
    assert cohen[0]["raw_agreement"] == pytest.approx(2 / 3, abs=1e-3)
    fleiss = [row for row in agreement if row["measure"] == "Fleiss' κ"]
    assert fleiss[0]["scope"] == "all languages" and fleiss[0]["shared_clips"] == 3
    assert len(fleiss) > 1 and sum(row["shared_clips"] for row in fleiss[1:]) == 3  # per language, none left empty
    table3 = section(page, "table03_human_ratings").table_data.rows
    assert sum(row["n_clips"] for row in table3) == 4  # four clips rated, each counted once
    assert "7 on 4 clips by 2 annotator(s)" in page.view.summary.text()


@pytest.mark.slow
def test_double_clicking_a_disagreement_requests_its_clip(page, qtbot, demo_copy):
    clips = rate_demo_clips(demo_copy, {"alice": ["correct", "correct"], "bob": ["incorrect", "correct"]})
    view = section(page, "rating_disagreements")
    qtbot.waitUntil(lambda: view.table.rowCount() == 1, timeout=5_000)
    page.view.tabs.setCurrentWidget(view)
    qtbot.waitUntil(lambda: view.table.isVisible() and view.table.viewport().width() > 200, timeout=2_000)
    rect = view.table.visualItemRect(view.table.item(0, 2))
    with qtbot.waitSignal(page.clip_requested, timeout=2_000) as requested:
        qtbot.mouseClick(view.table.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())
        qtbot.mouseDClick(view.table.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())
    assert requested.args == [clips[0]]


@pytest.mark.slow
def test_transcripts_from_two_systems_fill_table2(page, qtbot, demo_copy, tmp_path, cli):
    with opened(demo_copy) as project:
        clips = queue_clips(project.conn, "demo-qc")[:6]
    for asr in ("asr-a", "asr-b"):
        path = tmp_path / f"{asr}.csv"
        with path.open("w", newline="", encoding="utf-8") as handle:
            writer = csv.writer(handle)
            writer.writerow(["clip_id", "text"])
            writer.writerows([(clip.clip_id, clip.text) for clip in clips])
        assert cli("import-transcripts", demo_copy, path, "--asr", asr).code == 0
    table2 = section(page, "table02_wer_intervals")
    qtbot.waitUntil(lambda: bool(table2.table_data.rows), timeout=5_000)
    assert sum(row["n_samples"] for row in table2.table_data.rows) == 6
    assert table2.table.isVisibleTo(page) and not table2.empty_label.isVisibleTo(page)


@pytest.mark.slow
def test_each_table_exports_as_csv_and_latex(page, qtbot, tmp_path):
    table9 = section(page, "table09_rewrite_qc").table_data
    with qtbot.waitSignal(page.exported, timeout=5_000):
        page.export_table("table09_rewrite_qc", "csv", tmp_path / "t9.csv")
    with (tmp_path / "t9.csv").open(encoding="utf-8") as handle:
        rows = list(csv.reader(handle))
    assert rows[0] == TABLE9_COLUMNS and len(rows) == len(table9.rows) + 1
    with qtbot.waitSignal(page.exported, timeout=5_000):
        page.export_table("table09_rewrite_qc", "tex", tmp_path / "t9.tex")
    latex = (tmp_path / "t9.tex").read_text(encoding="utf-8")
    assert "\\begin{tabular}" in latex and "qc\\_stage" in latex and "\\label{tab:table09_rewrite_qc}" in latex
    assert latex.count("\\\\") == len(table9.rows) + 1  # header and one line per row


@pytest.mark.slow
def test_closing_the_project_clears_the_page(page):
    page.set_session(None)
    assert page.view.summary.text() == "No project open"
    assert page.refresh() is None


@pytest.mark.slow
def test_the_demo_shows_fleiss_kappa_overall_and_per_language_with_their_shared_clips(qc_page):
    with opened(qc_page.project) as project:
        agreement = rating_results(project.conn)["agreement"]
    assert agreement["fleiss_kappa"] is not None and agreement["clips_rated_by_several"] > 0
    view = section(qc_page, "annotator_agreement")
    columns = view.table_data.columns
    fleiss = [row for row in shown_rows(view) if row[columns.index("measure")] == "Fleiss' κ"]
    overall, *per_language = fleiss
    assert overall[columns.index("scope")] == "all languages"
    assert overall[columns.index("kappa")] == format_cell(agreement["fleiss_kappa"], 3)
    assert overall[columns.index("shared_clips")] == str(agreement["clips_rated_by_several"])
    assert {row[columns.index("scope")]: row[columns.index("kappa")] for row in per_language} == {
        language: format_cell(kappa, 3) for language, kappa in agreement["fleiss_kappa_by_language"].items()
    }
    shared = [int(row[columns.index("shared_clips")]) for row in per_language]
    assert all(shared) and sum(shared) == agreement["clips_rated_by_several"]


@pytest.mark.slow
@pytest.mark.parametrize(
    ("key", "columns"),
    [
        ("table02_wer_intervals", TABLE2_COLUMNS),
        ("table03_human_ratings", TABLE3_COLUMNS),
        ("table03_human_ratings_by_wer_interval", TABLE3_BY_BIN_COLUMNS),
    ],
)
def test_tables_2_and_3_export_as_csv_and_latex(qc_page, qtbot, tmp_path, key, columns):
    table = section(qc_page, key).table_data
    assert table.rows and section(qc_page, key).export_buttons["csv"].isEnabled()
    with qtbot.waitSignal(qc_page.exported, timeout=5_000):
        qc_page.export_table(key, "csv", tmp_path / f"{key}.csv")
    with (tmp_path / f"{key}.csv").open(encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    assert list(rows[0]) == list(columns) and len(rows) == len(table.rows)
    for written, shown in zip(rows, table.rows):
        for column in ("language", "n_samples", "n_clips", "rating", "wer_interval"):
            if column in columns:
                assert written[column] == str(shown[column])
    with qtbot.waitSignal(qc_page.exported, timeout=5_000):
        qc_page.export_table(key, "tex", tmp_path / f"{key}.tex")
    latex = (tmp_path / f"{key}.tex").read_text(encoding="utf-8")
    assert "\\begin{tabular}" in latex and f"\\label{{tab:{key}}}" in latex
    assert latex.count("\\\\") == len(table.rows) + 1  # header and one line per row


@pytest.mark.slow
def test_the_paper_layout_box_shows_table2_as_the_paper_prints_it(qc_page, qtbot):
    from spokenbench.core.asr.screening import HALLUCINATION_LABEL

    table2 = section(qc_page, "table02_wer_intervals")
    default_rows = table2.table_data.rows
    box = qc_page.view.paper_layout
    box.setFocus()
    qtbot.keyClick(box, Qt.Key.Key_Space)  # the box from the keyboard; Alt+P is its mnemonic
    qtbot.waitUntil(lambda: qc_page.table2_layout == "paper" and qc_page.data is not None, timeout=5_000)
    qtbot.waitUntil(lambda: {r["wer_interval_order"] for r in table2.table_data.rows} == {1, 2, 3, 4}, timeout=15_000)
    paper_rows = table2.table_data.rows
    assert HALLUCINATION_LABEL not in {row["wer_interval"] for row in paper_rows}
    for language in {row["language"] for row in paper_rows}:  # every clip still counted, in one of the four
        assert sum(r["n_samples"] for r in paper_rows if r["language"] == language) == sum(
            r["n_samples"] for r in default_rows if r["language"] == language
        )
    qtbot.keyClick(box, Qt.Key.Key_Space)
    qtbot.waitUntil(lambda: qc_page.table2_layout == "default", timeout=5_000)


@pytest.fixture
def controls_page(qtbot, built_demo, tmp_path, open_session):
    """The dashboard on the demo with issue 24's demo check rated: a queue with 10 hidden controls, a careless
    and an attentive annotator."""
    from support import rate_control_demo

    project = linked_copy(built_demo, tmp_path / "demo-with-controls")
    rate_control_demo(project, tmp_path)
    page = QcDashboardPage(SimpleNamespace())
    qtbot.addWidget(page)
    page.resize(1400, 800)
    page.show()
    page.set_session(open_session(project))
    qtbot.waitUntil(lambda: page.data is not None, timeout=15_000)
    page.project = project
    return page


@pytest.mark.slow
def test_the_annotators_table_says_whom_to_talk_to_and_why_and_table3_can_leave_them_out(controls_page, qtbot):
    view = section(controls_page, "annotators")
    columns = view.table_data.columns
    rows = {row[0]: row for row in shown_rows(view)}
    careless, attentive = rows["careless"], rows["attentive"]
    assert careless[columns.index("flagged")] == "FLAGGED" and attentive[columns.index("flagged")] == ""
    assert careless[columns.index("reasons")].startswith("control accuracy 50% (5 of 10) is below 80%")
    assert (
        careless[columns.index("control_ci")] == "0.24–0.76" and attentive[columns.index("control_ci")] == "0.72–1.00"
    )
    assert careless[columns.index("median_seconds")] == "1.000"
    blocks = [row for row in shown_rows(section(controls_page, "annotator_blocks")) if row[0] == "careless"]
    assert [row[1] for row in blocks] == ["1–20", "21–40", "41–57"]
    assert "see Annotators" in controls_page.view.summary.text()
    table3_before = section(controls_page, "table03_human_ratings").table_data.rows
    box = controls_page.view.exclude_flagged
    with qtbot.waitSignal(controls_page.view.exclude_flagged_toggled):
        qtbot.mouseClick(box, Qt.MouseButton.LeftButton, pos=box.rect().center())
    qtbot.waitUntil(lambda: "without flagged annotators" in controls_page.view.summary.text(), timeout=15_000)
    assert "careless" in controls_page.view.summary.text() and "ratings dropped" in controls_page.view.summary.text()
    assert "without the flagged annotators" in section(controls_page, "table03_human_ratings").caption.text()
    with opened(controls_page.project) as project:
        from spokenbench.core.qc.reliability import annotator_reliability

        flagged = tuple(a["annotator"] for a in annotator_reliability(project.conn)["annotators"] if a["flagged"])
        assert (
            section(controls_page, "table03_human_ratings").table_data.rows
            == rating_results(project.conn, exclude_annotators=flagged)["table3"]
        )
    assert len(table3_before) == len(section(controls_page, "table03_human_ratings").table_data.rows)


@pytest.mark.slow
def test_the_coordinator_sets_the_flagging_bars_on_the_page(controls_page, qtbot):
    box = controls_page.view.accuracy_bar
    box.setFocus()
    box.selectAll()
    qtbot.keyClicks(box, "0.4")
    qtbot.keyClick(box, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: controls_page.thresholds.min_control_accuracy == 0.4, timeout=5_000)
    qtbot.waitUntil(
        lambda: (
            "careless" in {row[0] for row in shown_rows(section(controls_page, "annotators"))}
            and {row[0]: row[1] for row in shown_rows(section(controls_page, "annotators"))}["careless"] == ""
        ),
        timeout=15_000,
    )  # 50 % on controls is above a 40 % bar: no longer flagged
    assert "40% control accuracy" in section(controls_page, "annotators").caption.text()
