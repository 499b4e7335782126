"""The app opening a shared project another program changed (the trust model in docs/reliability.md): a trigger
it added, or a value SpokenBench cannot read, is a dialog naming it; no project is opened and nothing written
(tests/core/test_foreign_schema.py and test_stored_values.py have the cases). Text that is not UTF-8 met later is
a warning that says so, not "a bug"."""

import sqlite3

from bad_input_support import files_digest
from PySide6.QtWidgets import QMessageBox

from spokenbench.app.main_window import MainWindow
from spokenbench.app.operations import show_error


def test_a_project_with_a_trigger_of_another_program_is_a_dialog_and_is_not_opened(qtbot, project, dialogs):
    conn = sqlite3.connect(project.path / "project.sqlite", isolation_level=None)
    conn.execute("CREATE TRIGGER zz AFTER INSERT ON ratings BEGIN UPDATE ratings SET rating = 'incorrect'; END")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    project.close()
    before = files_digest(project.path)
    window = MainWindow(poll_interval_s=0.2)
    qtbot.addWidget(window)
    window.show()
    try:
        with qtbot.waitSignal(window.open_project(project.path).finished, timeout=10_000):
            pass
        assert len(dialogs) == 1, dialogs
        assert "trigger 'zz' on 'ratings' that SpokenBench does not create" in dialogs[0].text
        assert "Traceback" not in dialogs[0].text + dialogs[0].details
        assert window.session is None
    finally:
        window.shutdown()
    assert files_digest(project.path) == before


def test_a_project_with_a_value_another_program_wrote_is_a_dialog_naming_its_row(qtbot, demo_copy, dialogs):
    conn = sqlite3.connect(demo_copy / "project.sqlite", isolation_level=None)
    row = conn.execute("SELECT min(id) FROM runs").fetchone()[0]
    conn.execute("UPDATE runs SET name = ? WHERE id = ?", (b"\xff\x00", row))
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    before = files_digest(demo_copy)
    window = MainWindow(poll_interval_s=0.2)
    qtbot.addWidget(window)
    window.show()
    try:
        with qtbot.waitSignal(window.open_project(demo_copy).finished, timeout=20_000):
            pass
        assert len(dialogs) == 1, dialogs
        assert f"table runs, row {row}, column name: a blob where SpokenBench stores text" in dialogs[0].text
        assert window.session is None
    finally:
        window.shutdown()
    assert files_digest(demo_copy) == before


def test_text_that_is_not_utf8_met_later_is_a_warning_not_a_bug(qtbot, dialogs):
    error = sqlite3.OperationalError("Could not decode to UTF-8 column 'question' with text 'a\ufffdb'")
    show_error(None, error, "Items")
    assert dialogs[0].icon == QMessageBox.Icon.Warning
    assert "text that is not UTF-8" in dialogs[0].text and "bug" not in dialogs[0].text


def test_a_job_row_whose_times_are_not_times_is_listed_as_long_ago_without_an_error():
    """Any process writes job rows (a colleague's script too): a finished or interrupted job whose stamps are not
    times reads as long ago, as the core's registry reads it; it made the jobs panel's refresh raise."""
    import time

    from spokenbench.app.jobs import jobs_to_show
    from spokenbench.core.foundation.processes import THIS_HOST as HOST
    from spokenbench.core.jobs.registry import JobInfo

    def job(id, status, stamp):
        return JobInfo(
            id=id, kind="evaluate", label=f"Run {id}", claim=f"run:{id}", project="p", pid=999_999, host=HOST,
            argv=None, cwd=None, started_at=stamp, heartbeat_at=stamp, finished_at=stamp, done=0, total=1,
            message=None, status=status, stop_reason=None, cancel_requested=False, heartbeat_age_s=0.0,
        )  # fmt: skip

    fresh = time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime())
    jobs = [job(1, "finished", "x\u202ey"), job(2, "interrupted", "0"), job(3, "finished", fresh)]
    assert [shown.id for shown in jobs_to_show(jobs, set(), time.time())] == [3]
