"""Settings → Rating keys: the annotator's key map is edited as a table, validated before the dialog closes,
stored per annotator in the project, and takes effect in an open rating session at once."""

import pytest
from PySide6.QtCore import QSettings, Qt

from spokenbench.app.main_window import MainWindow
from spokenbench.app.settings_dialog import ANNOTATOR_KEY
from spokenbench.core.qc.rating_session import DEFAULT_KEYMAP, keymap_for
from spokenbench.core.store import opened


@pytest.fixture
def window(qtbot, tmp_path, demo_copy):
    settings = QSettings(str(tmp_path / "settings.ini"), QSettings.Format.IniFormat)
    settings.setValue(ANNOTATOR_KEY, "ana")
    w = MainWindow(audio_message="Audio is off in tests", poll_interval_s=0.1, settings=settings)
    qtbot.addWidget(w)
    w.show()
    with qtbot.waitSignal(w.open_project(demo_copy).finished, timeout=10_000):
        pass
    yield w
    w.shutdown()


def stored_keymap(path, annotator):
    with opened(path) as project:
        return keymap_for(project.conn, annotator)


def open_settings(window, qtbot):
    dialog = window.open_settings()
    qtbot.waitUntil(lambda: dialog.keymap_loaded, timeout=5_000)
    return dialog


@pytest.mark.slow
def test_remapped_keys_are_stored_for_this_annotator_and_used_by_the_open_session(window, qtbot, demo_copy):
    window.show_page("rating")
    page = window.page_widgets["rating"]
    page.open_queue("demo-qc")
    qtbot.waitUntil(lambda: page.rating is not None and page.idle, timeout=10_000)

    dialog = open_settings(window, qtbot)
    dialog.keymap_editor.set_keys("rate_correct", "J, 1")
    dialog.keymap_editor.set_keys("rate_incorrect", "L")
    with qtbot.waitSignal(dialog.keymap_saved, timeout=5_000):
        dialog.accept()
    assert stored_keymap(demo_copy, "ana")["rate_correct"] == ("J", "1")
    assert stored_keymap(demo_copy, "bob") == DEFAULT_KEYMAP  # per annotator
    assert "J / 1" in page.view.buttons["rate_correct"].text()

    first = page.rating.current.clip_id
    qtbot.keyClick(page.view, Qt.Key.Key_L)
    qtbot.waitUntil(lambda: page.idle and page.rating.current.clip_id != first, timeout=5_000)
    with opened(demo_copy) as project:
        rows = project.conn.execute("SELECT clip_id, rating FROM ratings WHERE annotator = 'ana'").fetchall()
    assert [tuple(r) for r in rows] == [(first, "incorrect")]

    again = open_settings(window, qtbot)  # reopened: the stored map is shown
    assert again.keymap_editor.keymap()["rate_correct"] == ["J", "1"]
    again.reject()


@pytest.mark.slow
def test_a_key_bound_twice_keeps_the_dialog_open_and_saves_nothing(window, qtbot, demo_copy):
    dialog = open_settings(window, qtbot)
    dialog.keymap_editor.set_keys("rate_correct", "2")  # 2 already rates Acceptable
    dialog.accept()
    assert dialog.isVisible()
    assert "bound twice" in dialog.keymap_error.text()
    dialog.keymap_editor.set_keys("rate_incorrect", "")
    dialog.keymap_editor.set_keys("rate_correct", "1")
    dialog.accept()
    assert dialog.isVisible()
    assert dialog.keymap_error.text() == "'rate_incorrect' needs a key"
    dialog.reject()
    assert stored_keymap(demo_copy, "ana") == DEFAULT_KEYMAP


@pytest.mark.slow
def test_the_spectrogram_key_is_listed_reserved_and_remappable(window, qtbot, demo_copy):
    dialog = open_settings(window, qtbot)
    editor = dialog.keymap_editor
    row = editor.actions.index("toggle_spectrogram")
    assert editor.item(row, 0).text() == "Spectrogram" and editor.item(row, 2).text() == "S"
    assert editor.keymap()["toggle_spectrogram"] == ["S"]
    editor.set_keys("note", "S")  # S already switches to the spectrogram
    dialog.accept()
    assert dialog.isVisible() and "key 'S' is bound twice" in dialog.keymap_error.text()
    editor.set_keys("toggle_spectrogram", "G")
    with qtbot.waitSignal(dialog.keymap_saved, timeout=5_000):
        dialog.accept()
    stored = stored_keymap(demo_copy, "ana")
    assert stored["note"] == ("S",) and stored["toggle_spectrogram"] == ("G",)


def test_settings_opened_again_and_again_keeps_one_dialog(window, qtbot):
    """Each Ctrl+, made a Settings dialog that stayed, with its window, for the app's life."""
    from spokenbench.app.settings_dialog import SettingsDialog

    for _ in range(5):
        dialog = open_settings(window, qtbot)
        dialog.reject()
        qtbot.wait(1)
    qtbot.waitUntil(lambda: len(window.findChildren(SettingsDialog)) == 1)


def message_boxes(widget) -> list[tuple[str, str]]:
    from PySide6.QtWidgets import QMessageBox

    return [(box.windowTitle(), box.text()) for box in widget.findChildren(QMessageBox)]


def test_rating_keys_saved_after_settings_was_opened_again_reach_the_session(window, qtbot, monkeypatch):
    """OK with new keys while the writer is busy, then Ctrl+, again at once: the first dialog, replaced, was
    deleted before its save delivered the keys ("Signal source has been deleted" in an Unexpected error box,
    and the session kept the old keys). It now goes once its save has delivered them."""
    import time

    import spokenbench.app.settings_dialog as settings_module

    real_save = settings_module.save_keymap
    monkeypatch.setattr(settings_module, "save_keymap", lambda *args: (time.sleep(1.0), real_save(*args))[1])
    window.show_page("rating")
    page = window.page_widgets["rating"]
    page.open_queue("demo-qc")
    qtbot.waitUntil(lambda: page.rating is not None and page.idle, timeout=10_000)
    dialog = open_settings(window, qtbot)
    dialog.keymap_editor.set_keys("rate_incorrect", "L")
    dialog.accept()
    window.open_settings()
    qtbot.waitUntil(lambda: list(page.view.keymap.get("rate_incorrect", ())) == ["L"], timeout=10_000)
    assert message_boxes(window) == []


def test_a_key_test_ending_after_settings_was_opened_again_is_no_error(window, qtbot, monkeypatch):
    import time

    import spokenbench.app.settings_dialog as settings_module

    monkeypatch.setattr(settings_module, "test_key", lambda *args, **kwargs: (time.sleep(1.0), "ok")[1])
    dialog = open_settings(window, qtbot)
    dialog.test_key("openai")
    dialog.reject()
    window.open_settings()
    qtbot.wait(1600)  # an exception in its callback on the deleted dialog would fail the test (pytest-qt)
    assert message_boxes(window) == []
