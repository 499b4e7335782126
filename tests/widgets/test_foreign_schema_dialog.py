"""The app opening a shared project whose schema holds a trigger another program added: a dialog naming it,
no project opened, nothing written (issue 23's trust model; tests/core/test_foreign_schema.py has the cases)."""

import sqlite3

from bad_input_support import files_digest

from spokenbench.app.main_window import MainWindow


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
