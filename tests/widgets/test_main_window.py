import os
import subprocess
import sys

import pytest
from PySide6.QtCore import QSettings
from PySide6.QtWidgets import QMessageBox
from support import gmmlu_rows, write_csv

from spokenbench.app.input_methods import choose_input_method
from spokenbench.app.main_window import MainWindow
from spokenbench.core.importers import import_files
from spokenbench.core.jobs import registry as jobs


@pytest.fixture
def settings(tmp_path):
    """Settings in a private file: tests never touch the user's own."""
    return QSettings(str(tmp_path / "settings.ini"), QSettings.Format.IniFormat)


@pytest.fixture
def window(qtbot, settings):
    w = MainWindow(
        audio_message="No audio output device: clips cannot be played here.",
        recording_message="Install PortAudio (Debian/Ubuntu: apt-get install libportaudio2)",
        poll_interval_s=0.2,
        settings=settings,
    )
    qtbot.addWidget(w)
    w.show()
    yield w
    w.shutdown()


@pytest.mark.slow
def test_starts_on_the_welcome_page_with_audio_state_explained(window):
    assert window.pages.currentWidget() is window.welcome
    assert window.audio_label.text() == "Audio: off"
    assert "libportaudio2" in window.audio_label.toolTip()
    assert "No audio output device" in window.audio_label.toolTip()


@pytest.mark.slow
@pytest.mark.parametrize(
    ("playback", "recording", "shown"),
    [
        (None, None, "Audio: ready"),
        (None, "no PortAudio", "Audio: playback only"),
        ("no output device", None, "Audio: recording only"),
        ("no output device", "no PortAudio", "Audio: off"),
    ],
)
def test_the_audio_status_says_what_works(playback, recording, shown):
    from spokenbench.app.audio import audio_status

    text, tooltip = audio_status(playback, recording)
    assert text == shown
    for problem in (playback, recording):
        assert problem is None or problem in tooltip


@pytest.mark.slow
def test_playback_needs_an_output_device(monkeypatch, qapp):
    from spokenbench.app import audio
    from spokenbench.core.audio import playback

    monkeypatch.setattr(playback, "output_devices", lambda: [])
    assert audio.playback_problem() == audio.NO_AUDIO_BANNER


@pytest.mark.slow
def test_opening_a_project_lists_its_items_off_the_ui_thread(window, qtbot, built_demo):
    operation = window.open_project(built_demo)
    # `finished` is emitted on the UI thread after the callbacks, so waiting for it cannot miss it
    with qtbot.waitSignal(operation.finished, timeout=10_000):
        pass
    assert operation.status == "succeeded"
    assert window.items_panel.model.rowCount() == 84
    assert window.pages.currentWidget() is window.workspace and window.current_page_key() == "items"
    assert "84 items" in window.summary_label.text() and "1172 clips" in window.summary_label.text()
    assert window.windowTitle().endswith("demo-project")
    panel = window.items_panel
    panel.language_box.setCurrentText("ko")
    assert panel.model.rowCount() == 24 and panel.count_label.text() == "24 of 84 items"
    panel.language_box.setCurrentText(panel.ALL_LANGUAGES)
    panel.search.setText("chromosomes")
    assert panel.model.rowCount() == 1


@pytest.mark.slow
def test_a_folder_that_is_not_a_project_shows_a_dialog(window, qtbot, tmp_path, dialogs):
    shown = dialogs
    operation = window.open_project(tmp_path)
    with qtbot.waitSignal(operation.finished, timeout=10_000):
        pass
    assert operation.status == "failed"
    [dialog] = shown
    assert dialog.icon == QMessageBox.Icon.Warning
    assert dialog.title == "Cannot open project" and "project.sqlite is missing" in dialog.text
    assert window.pages.currentWidget() is window.welcome
    assert window.summary_label.text() == "No project open"


@pytest.mark.slow
def test_opening_another_project_drops_the_first_ones_result(window, qtbot, built_demo, tmp_path, dialogs):
    """The newer open supersedes the older: only the newer one's outcome reaches the window."""
    shown = dialogs
    first = window.open_project(built_demo)
    second = window.open_project(tmp_path)  # not a project
    with qtbot.waitSignals([first.finished, second.finished], timeout=10_000):
        pass
    assert first.abandoned == "superseded" and first.result is None
    assert window.session is None and window.pages.currentWidget() is window.welcome
    assert [d.title for d in shown] == ["Cannot open project"]


@pytest.mark.slow
def test_items_imported_by_another_process_appear_without_reopening(window, qtbot, project, tmp_path):
    with qtbot.waitSignal(window.open_project(project.path).finished, timeout=10_000):
        pass
    assert window.items_panel.model.total_count() == 0
    table = write_csv(tmp_path / "ko.csv", gmmlu_rows(7))
    command = [sys.executable, "-m", "spokenbench.core.cli.main", "import", str(project.path), str(table)]
    subprocess.run([*command, "--format", "gmmlu-lite"], check=True, capture_output=True)
    qtbot.waitUntil(lambda: window.items_panel.model.total_count() == 7, timeout=2_500)
    assert "7 items (ko 7)" in window.summary_label.text()


@pytest.mark.slow
def test_a_refresh_keeps_the_users_filter_and_selection(window, qtbot, project, tmp_path):
    table = write_csv(tmp_path / "ko.csv", gmmlu_rows(5))
    import_files(project, [table], "gmmlu-lite")
    with qtbot.waitSignal(window.open_project(project.path).finished, timeout=10_000):
        pass
    panel = window.items_panel
    panel.language_box.setCurrentText("ko")
    assert panel.select_item(3) and panel.selected_item_id() == 3
    operation = window.import_items([write_csv(tmp_path / "zh.csv", gmmlu_rows(4))], "gmmlu-lite")
    with qtbot.waitSignal(operation.finished, timeout=10_000):
        pass
    qtbot.waitUntil(lambda: panel.model.total_count() == 9, timeout=3_000)
    assert panel.language_box.currentText() == "ko" and panel.model.rowCount() == 5
    assert panel.selected_item_id() == 3


@pytest.mark.slow
def test_importing_from_the_window_runs_as_a_job_process_and_refreshes_the_items(window, qtbot, project, tmp_path):
    with qtbot.waitSignal(window.open_project(project.path).finished, timeout=10_000):
        pass
    table = write_csv(tmp_path / "en.csv", gmmlu_rows(1_500))
    operation = window.import_items([table], "gmmlu-lite")
    with qtbot.waitSignal(operation.finished, timeout=20_000):
        pass
    assert operation.status == "succeeded" and operation.result[0].imported == 1_500
    assert jobs.get_job(project.conn, operation.job_id).pid != os.getpid()  # in a job process, off the UI's GIL
    qtbot.waitUntil(lambda: window.items_panel.model.total_count() == 1_500, timeout=3_000)
    assert window.jobs_dock.isVisible()


@pytest.mark.slow
def test_importing_a_file_again_from_the_window_adds_its_new_rows_and_skips_the_rest(window, qtbot, project, tmp_path):
    """The app offers no --skip-existing: importing a file a second time, with rows added, was refused ("use
    --skip-existing"). Now the items already there with the same content are skipped and the new ones added."""
    with qtbot.waitSignal(window.open_project(project.path).finished, timeout=10_000):
        pass
    rows = gmmlu_rows(6)
    operation = window.import_items([write_csv(tmp_path / "en.csv", rows[:4])], "gmmlu-lite")
    with qtbot.waitSignal(operation.finished, timeout=20_000):
        pass
    operation = window.import_items([write_csv(tmp_path / "en.csv", rows)], "gmmlu-lite")
    with qtbot.waitSignal(operation.finished, timeout=20_000):
        pass
    assert operation.status == "succeeded", operation.status
    assert (operation.result[0].imported, operation.result[0].skipped) == (2, 4)
    assert window.statusBar().currentMessage() == "Imported 2 items from en.csv; 4 already in the project, skipped"
    qtbot.waitUntil(lambda: window.items_panel.model.total_count() == 6, timeout=3_000)


@pytest.mark.slow
def test_missing_audio_libraries_are_explained_not_fatal(monkeypatch):
    """Without libportaudio2 sounddevice cannot load (playback and recording both need it): the app starts with
    audio off and says once what to install."""
    from spokenbench.app import main as app_main
    from spokenbench.app.audio import NO_AUDIO_BANNER
    from spokenbench.core.audio import support as audio_support

    monkeypatch.setattr(
        audio_support,
        "sounddevice_support",
        lambda: audio_support.AudioSupport(False, "Install PortAudio (Debian/Ubuntu: apt-get install libportaudio2)"),
    )
    message = app_main.audio_problem()
    assert message.count("apt-get install libportaudio2") == 1 and NO_AUDIO_BANNER in message


def test_the_status_bar_names_an_input_method_qt_cannot_reach(window):
    plugins = frozenset({"ibus", "compose", "qtvirtualkeyboard"})  # PySide6's
    window.show_input_method(choose_input_method({"QT_IM_MODULE": "kime"}, plugins, platform="linux"))
    assert window.input_method_label.isVisible() and window.input_method_label.text() == "No input method: kime"
    assert "cannot be typed" in window.input_method_label.toolTip()
    window.show_input_method(choose_input_method({"QT_IM_MODULE": "fcitx"}, plugins, platform="linux"))
    assert not window.input_method_label.isVisible()
