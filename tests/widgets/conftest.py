"""Fixtures for the app's widget tests: captured dialogs, and a session on a private project."""

from dataclasses import dataclass

import pytest
from PySide6.QtWidgets import QMessageBox
from support import strip_simulated_qc


@pytest.fixture(autouse=True, scope="session")
def garbage_collected_at_safe_points(qapp):
    """As in the app: Python's GC runs only between Qt events, never inside a signal dispatch."""
    import gc

    from spokenbench.app.qt_refcounts import collect_garbage_at_safe_points

    timer = collect_garbage_at_safe_points(qapp)
    yield
    timer.stop()
    gc.enable()


@pytest.fixture
def shown_window(qtbot):
    """shown_window(settings, size=(1280, 720)) → the main window (audio off) shown, active and exposed at `size`
    (None: its own), shut down after the test."""
    from spokenbench.app.main_window import MainWindow

    made = []

    def make(settings, size: tuple[int, int] | None = (1280, 720)):
        window = MainWindow(audio_message="Audio is off in tests", poll_interval_s=0.1, settings=settings)
        qtbot.addWidget(window)
        made.append(window)
        if size is not None:
            window.resize(*size)
        window.show()
        window.activateWindow()
        qtbot.waitExposed(window)
        return window

    yield make
    for window in made:
        window.shutdown()


@pytest.fixture(autouse=True)
def application_font_of_this_test(qapp):
    """The desktop's font again after a test that made the text larger (View → Larger text sets the application's
    font, which every later window in the worker would have)."""
    from PySide6.QtGui import QFont

    from spokenbench.app import text_size
    from spokenbench.widgets.text_size import set_text_scale, text_scale

    font, scale = QFont(qapp.font()), text_scale()
    yield
    set_text_scale(scale)  # the figures' too
    qapp.setFont(font)  # and the class fonts a test set (the docks') go with it
    text_size._desktop_font = None  # taken again from the font restored


@pytest.fixture(autouse=True)
def column_widths_of_this_test(monkeypatch):
    """A memory of dragged column widths of the test's own: a window binds the module's to its settings, and the
    next test in the worker must not find that one's (widgets/tables.ColumnMemory)."""
    from spokenbench.widgets import tables

    monkeypatch.setattr(tables, "column_memory", tables.ColumnMemory())


@pytest.fixture(autouse=True, scope="session")
def widgets_gone_before_exit(qapp):
    """The windows and widgets the worker's tests left alive, shut down and deleted while Python is whole. Else
    PySide's exit cleanup (`destroyQCoreApplication`) deletes them in the middle of its own walk: a slot's closure
    freed there deletes the widget it held, and objects the walk has yet to visit are freed under it ("QObject:
    shared QObject was deleted directly", then "malloc(): unaligned tcache chunk detected": an abort at the
    worker's exit, seen in about 3 default runs of 8)."""
    yield
    import gc

    import shiboken6
    from PySide6.QtCore import QEvent

    from spokenbench.app.main_window import MainWindow

    for widget in qapp.topLevelWidgets():
        if isinstance(widget, MainWindow) and not widget.runner.closed:
            widget.shutdown()
    for widget in qapp.topLevelWidgets():
        if shiboken6.isValid(widget) and shiboken6.ownedByPython(widget):
            shiboken6.delete(widget)
    qapp.sendPostedEvents(None, QEvent.Type.DeferredDelete)
    gc.collect()


@pytest.fixture(autouse=True, scope="session")
def page_modules_imported():
    """The optional pages' modules in, as the app has them once each page was first opened (app/page_modules.py
    imports them on a thread: a page asked for sooner says "Opening …" until then): a test's `show_page` builds
    the page at once. tests/widgets/test_page_modules.py covers a page asked for before its module is in."""
    import importlib

    from spokenbench.app.main_window import OPTIONAL_PAGES

    for module_name, _class_name, _what in OPTIONAL_PAGES.values():
        importlib.import_module(module_name)


@pytest.fixture(autouse=True, scope="session")
def sound_checked():
    """The start's sound check (app/audio.py SoundCheck) answered, as the app's first window waits for it: the
    pages then ask for the devices at once, and a test's patched device list is what they see."""
    from spokenbench.app.audio import sound_check

    assert sound_check().wait(60), "the sound check did not answer in 60 s"


@pytest.fixture(autouse=True)
def collect_between_tests(qapp):
    """A full collection after each widget test, at a safe point (no event is being dispatched)."""
    import gc

    yield
    gc.collect()


@pytest.fixture(autouse=True, scope="session")
def private_settings(tmp_path_factory):
    """QSettings (recent projects, annotator name) go to a test folder, never the user's own."""
    from PySide6.QtCore import QSettings, QStandardPaths

    QStandardPaths.setTestModeEnabled(True)
    QSettings.setPath(
        QSettings.Format.NativeFormat, QSettings.Scope.UserScope, str(tmp_path_factory.mktemp("qsettings"))
    )
    QSettings.setPath(
        QSettings.Format.IniFormat, QSettings.Scope.UserScope, str(tmp_path_factory.mktemp("qsettings-ini"))
    )


@dataclass
class ShownDialog:
    icon: QMessageBox.Icon
    title: str
    text: str
    details: str


@pytest.fixture
def dialogs(monkeypatch):
    """Every message box the app opens, recorded instead of shown."""
    shown: list[ShownDialog] = []

    def record(box: QMessageBox) -> None:
        shown.append(ShownDialog(box.icon(), box.windowTitle(), box.text(), box.detailedText()))

    monkeypatch.setattr(QMessageBox, "open", record)
    return shown


@pytest.fixture
def runner(qapp):
    from spokenbench.app.operations import OperationRunner

    runner = OperationRunner()
    yield runner
    runner.shutdown(timeout_s=10)


@pytest.fixture
def open_session(runner, qtbot):
    """open_session(path) → a ProjectSession polling every 0.1 s; closed at the end of the test."""
    from spokenbench.app.operations import ProjectSession

    sessions = []

    def make(path):
        session = ProjectSession(path, runner, poll_interval_s=0.1)
        sessions.append(session)
        return session

    yield make
    for session in sessions:
        session.close()


@pytest.fixture(scope="module")
def read_only_demo(built_demo, tmp_path_factory):
    """The demo (built once per test session), copied once per module, for pages that only read it."""
    from demo_copies import project_copy

    return project_copy(built_demo, tmp_path_factory.mktemp("read-only-demo") / "demo-project")


@pytest.fixture
def played():
    """The files a page asked the window to play."""
    return []


@pytest.fixture
def results_page(qtbot, read_only_demo, open_session, played):
    """results_page(width, height, timeout_ms) → the Results page on the demo, its panels computed."""
    from types import SimpleNamespace

    from spokenbench.app.results_page import ResultsPage

    def make(width: int, height: int, timeout_ms: int = 60_000):
        page = ResultsPage(SimpleNamespace(play_file=lambda path: played.append(path)))
        qtbot.addWidget(page)
        page.resize(width, height)
        page.show()
        with qtbot.waitSignal(page.panels_ready, timeout=timeout_ms):
            page.set_session(open_session(read_only_demo))
        return page

    return make


@pytest.fixture
def rating_page_on_demo_queue(qtbot, demo_copy, open_session, monkeypatch):
    """rating_page_on_demo_queue(window, project=demo_copy) → the Rating page on a copy of the demo (without its
    simulated QC, no ASR ready) with its queue demo-qc open, `window` standing for the main window."""
    import spokenbench.app.rating_page as rating_page
    from spokenbench.app.rating_page import RatingPage

    monkeypatch.setattr(rating_page, "ready_asr_systems", lambda: [])

    def make(window, project=demo_copy):
        strip_simulated_qc(project)
        page = RatingPage(window)
        qtbot.addWidget(page)
        page.show()
        page.set_session(open_session(project))
        page.open_queue("demo-qc")
        qtbot.waitUntil(lambda: page.rating is not None and page.idle, timeout=5_000)
        return page

    return make
