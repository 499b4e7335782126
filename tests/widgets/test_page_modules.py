"""An optional page asked for before its module is in (app/page_modules.py): the window keeps answering while
the module is imported on a thread, says the page is opening, and builds it when the module is in.

Each test puts a page of its own, in a module that takes `IMPORT_S` to import (pure Python work holding the GIL,
as matplotlib's and pandas' imports do), in place of the Results page. Before, `show_page` imported it on the UI
thread: the window was frozen for the whole import."""

import gc
import sys
import textwrap
import time
import uuid

import pytest
import shiboken6
from PySide6.QtCore import QSettings, Qt, QTimer
from PySide6.QtWidgets import QApplication

from spokenbench.app import main_window as main_window_module
from spokenbench.app.main_window import MainWindow, PlaceholderPage
from spokenbench.app.page_modules import imported

pytestmark = pytest.mark.slow  # each test waits out a 1.5 s import

IMPORT_S = 1.5
# the event loop's longest wait while the module imports: half the import, where the key's press waited for all of
# it before; a fifth was too tight on a loaded CI machine (0.49 s once, the import thread holding the GIL)
LONGEST_GAP_S = 0.75


def slow_module(folder, seconds: float = IMPORT_S, fails: bool = False, results_page: bool = False) -> str:
    """A page module in `folder` that takes `seconds` of Python work to import (or fails after them); its page
    `SlowPage` is a line edit, or with `results_page` the real Results page."""
    name = f"slow_page_{uuid.uuid4().hex[:8]}"
    (folder / f"{name}.py").write_text(
        textwrap.dedent(f"""
        import time
        from PySide6.QtWidgets import QLineEdit, QVBoxLayout, QWidget

        _until = time.perf_counter() + {seconds}
        while time.perf_counter() < _until:
            sum(range(1000))
        if {fails}:
            raise ValueError("this page's module is broken")

        class SlowPage(QWidget):
            made = 0  # pages built

            def __init__(self, window):
                super().__init__()
                SlowPage.made += 1
                self.field = QLineEdit()
                QVBoxLayout(self).addWidget(self.field)
                self.session = "unset"

            def set_session(self, session):
                self.session = session

            def take_focus(self):
                self.field.setFocus()

        if {results_page}:
            from spokenbench.app.results_page import ResultsPage as SlowPage
        """)
    )
    return name


@pytest.fixture
def slow_results(tmp_path, monkeypatch):
    """The Results page's slot given a module that takes IMPORT_S to import; its name."""
    monkeypatch.syspath_prepend(str(tmp_path))
    name = slow_module(tmp_path)
    monkeypatch.setitem(main_window_module.OPTIONAL_PAGES, "results", (name, "SlowPage", "the slow page"))
    return name


@pytest.fixture
def window(shown_window, tmp_path):
    return shown_window(QSettings(str(tmp_path / "settings.ini"), QSettings.Format.IniFormat))


@pytest.fixture(autouse=True)
def as_in_the_app():
    """What app/main.py `keep_the_ui_responsive` does at the app's start, undone after: the objects made so far
    kept out of later garbage collections (a test worker holds those of a thousand tests before), and a 1 ms GIL
    switch interval."""
    interval = sys.getswitchinterval()
    gc.freeze()
    sys.setswitchinterval(0.001)
    yield
    sys.setswitchinterval(interval)
    gc.unfreeze()


class GapProbe:
    """The event loop's longest wait between 10 ms timer ticks, while it runs; and the longest garbage collection
    meanwhile, to tell a collection's pause from a wait for the import thread when a test fails."""

    def __init__(self):
        self.longest = self.longest_collection = 0.0
        self._last = time.perf_counter()
        self._collecting_since = 0.0
        gc.callbacks.append(self._collection)
        self._timer = QTimer(interval=10, timeout=self._tick)
        self._timer.start()

    def _tick(self) -> None:
        now = time.perf_counter()
        self.longest = max(self.longest, now - self._last)
        self._last = now

    def _collection(self, phase: str, _info: dict) -> None:
        if phase == "start":
            self._collecting_since = time.perf_counter()
        else:
            self.longest_collection = max(self.longest_collection, time.perf_counter() - self._collecting_since)

    def stop(self) -> float:
        self._timer.stop()
        gc.callbacks.remove(self._collection)
        return self.longest

    def __str__(self) -> str:
        return (
            f"the event loop waited {self.longest:.2f} s (longest garbage collection {self.longest_collection:.2f} s)"
        )


def test_a_page_asked_for_before_its_module_is_in_opens_while_the_window_answers(window, qtbot, slow_results):
    probe = GapProbe()
    started = time.perf_counter()
    qtbot.keyClick(window, Qt.Key.Key_7, Qt.KeyboardModifier.ControlModifier)  # View → Results
    asked_s = time.perf_counter() - started
    shown = window.page_stack.currentWidget()
    assert isinstance(shown, PlaceholderPage) and "Opening the slow page…" in shown.message.text()
    assert window.sidebar.current_key() == "results" and window.page_opening("results")
    assert asked_s < LONGEST_GAP_S  # before: the key's press took the whole import (1.5 s)

    qtbot.waitUntil(lambda: not window.page_opening("results"), timeout=10_000)
    longest = probe.stop()
    page = window.page_widgets["results"]
    assert type(page).__name__ == "SlowPage" and window.page_stack.currentWidget() is page
    assert page.session is None  # told the window's session (none open) as a page built at once is
    assert longest < LONGEST_GAP_S, f"{probe} while the page's module imported"
    qtbot.waitUntil(lambda: QApplication.focusWidget() is page.field)  # the keys go to the page, as Ctrl+7 asked
    assert window.page_stack.count() == len(main_window_module.PAGES)  # the placeholder was replaced, not added to


def test_a_page_left_while_its_module_imports_is_built_but_not_shown(window, qtbot, slow_results):
    window.show_page("results")
    window.show_page("items")
    window.items_panel.table.setFocus()
    qtbot.waitUntil(lambda: not window.page_opening("results"), timeout=10_000)
    assert type(window.page_widgets["results"]).__name__ == "SlowPage"
    assert window.page_stack.currentWidget() is window.items_panel  # the user's page stays, and the keys
    assert QApplication.focusWidget() is window.items_panel.table
    window.show_page("results")  # built already: shown at once
    assert window.page_stack.currentWidget() is window.page_widgets["results"]


def test_what_waits_for_a_page_runs_once_it_is_built(window, qtbot, slow_results):
    got = []
    window.show_page("results")
    window.when_page("results", got.append)  # as a run opened from Evaluate selects it on the Results page
    assert got == []
    qtbot.waitUntil(lambda: bool(got), timeout=10_000)
    assert got == [window.page_widgets["results"]] and type(got[0]).__name__ == "SlowPage"
    window.when_page("results", got.append)  # built: at once
    assert len(got) == 2


def test_the_small_pages_modules_are_prefetched_soon_after_the_window_is_shown(qtbot, tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(tmp_path))
    slow = slow_module(tmp_path)
    monkeypatch.setitem(main_window_module.OPTIONAL_PAGES, "evaluate", (slow, "SlowPage", "the slow page"))
    monkeypatch.setattr(main_window_module, "PREFETCH_PAGES_MS", 300)
    settings = QSettings(str(tmp_path / "settings.ini"), QSettings.Format.IniFormat)
    window = MainWindow(audio_message="Audio is off in tests", poll_interval_s=0.1, settings=settings)
    qtbot.addWidget(window)
    window.show()
    qtbot.waitExposed(window)
    probe = GapProbe()  # from the first paint on: the prefetch, not the window's making, is measured
    try:
        qtbot.waitUntil(lambda: imported(slow), timeout=10_000)  # nobody asked for the page
        longest = probe.stop()
        assert isinstance(window.page_widgets["evaluate"], PlaceholderPage)  # imported, not built before it is shown
        assert longest < LONGEST_GAP_S, f"{probe} while the window prefetched"
        window.show_page("evaluate")
        assert type(window.page_widgets["evaluate"]).__name__ == "SlowPage"  # at once: its module was in
        assert window.page_stack.currentWidget() is window.page_widgets["evaluate"]
    finally:
        window.shutdown()


def test_a_page_whose_module_fails_to_import_says_why(window, qtbot, tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(tmp_path))
    name = slow_module(tmp_path, seconds=0.3, fails=True)
    monkeypatch.setitem(main_window_module.OPTIONAL_PAGES, "qc", (name, "SlowPage", "the QC dashboard"))
    window.show_page("qc")
    qtbot.waitUntil(lambda: not window.page_opening("qc"), timeout=10_000)
    page = window.page_stack.currentWidget()
    assert isinstance(page, PlaceholderPage) and page is window.page_widgets["qc"]
    assert "could not be loaded (ValueError: this page's module is broken)" in page.message.text()


def test_the_tour_frames_its_step_and_makes_room_once_the_page_is_built(window, qtbot, tmp_path, monkeypatch):
    """Every step of the tour is on the Results page, whose module is never prefetched: the tour's first opening
    meets it opening. Its step is framed, and the page's run list narrowed for the dock, once it is built."""
    from spokenbench.app.tour import RUN_LIST_WIDTH

    monkeypatch.syspath_prepend(str(tmp_path))
    name = slow_module(tmp_path, results_page=True)
    monkeypatch.setitem(main_window_module.OPTIONAL_PAGES, "results", (name, "SlowPage", "the Results page"))
    tour = window.tour
    tour.start(0)
    assert tour.steps[0].page == "results" and window.page_opening("results") and tour.target_widget() is None
    qtbot.waitUntil(lambda: not window.page_opening("results"), timeout=20_000)
    page = window.page_widgets["results"]
    assert type(page).__name__ == "ResultsPage" and window.page_stack.currentWidget() is page
    assert tour.target_widget() is not None and page.isAncestorOf(tour.target_widget())  # the step's target
    lists = page.run_list.parentWidget().parentWidget()  # the splitter of the lists and the figures
    qtbot.waitUntil(lambda: 0 < lists.sizes()[0] <= RUN_LIST_WIDTH)  # before: left at the page's own width


def test_a_second_ask_while_the_outcome_is_on_its_way_builds_the_page_once(window, qtbot, slow_results):
    """The module is in, but the import's outcome has not reached the event loop yet, when the page is asked for
    again (Ctrl+7 twice): the page is built once, by the outcome."""
    built = []
    window.show_page("results")
    deadline = time.monotonic() + 10
    while not imported(slow_results) and time.monotonic() < deadline:
        time.sleep(0.01)  # the UI thread busy (no event handled): the outcome waits in the queue
    window.show_page("results")  # before the queued outcome is delivered
    window.when_page("results", built.append)
    qtbot.waitUntil(lambda: not window.page_opening("results"), timeout=10_000)
    assert len(built) == 1 and built[0] is window.page_widgets["results"]
    assert type(built[0]).made == 1  # before: built by the second ask, then again (over it) by the outcome
    assert window.page_stack.count() == len(main_window_module.PAGES)


@pytest.mark.parametrize("closed", [True, False], ids=["closed", "deleted-unclosed"])
def test_a_window_gone_while_a_page_module_imports(qtbot, tmp_path, slow_results, closed):
    """Closed (its quit waits for the import's thread, which cannot be stopped halfway), or deleted without a
    close (as a test's window is): the import's outcome, landing after, is dropped without an error."""
    settings = QSettings(str(tmp_path / "settings.ini"), QSettings.Format.IniFormat)
    window = MainWindow(audio_message="Audio is off in tests", poll_interval_s=0.1, settings=settings)
    window.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
    window.show()
    window.show_page("results")
    assert window.page_opening("results")
    if closed:
        window.close()
    else:
        window.deleteLater()
    qtbot.waitUntil(lambda: not shiboken6.isValid(window), timeout=10_000)
    qtbot.waitUntil(lambda: imported(slow_results), timeout=10_000)
    qtbot.wait(300)  # an outcome landing on the deleted window's runner would raise here (pytest-qt fails the test)
