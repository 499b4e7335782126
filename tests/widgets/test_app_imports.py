"""Issue 28 item 6: the app's process stays small because the heavy numerical libraries stay in job processes.
The main window and its tour load no pandas, pyarrow or scipy; the Results page, its panels and its gender-probe
detail (computed in job processes) load no scipy or statsmodels; and PySide6's import hook keeps no module's
source in memory. Checked in a fresh interpreter: this test process has long imported all of them."""

import json
import os
import subprocess
import sys
import textwrap

import pytest

HEAVY_FOR_THE_WINDOW = ("pandas", "pyarrow", "scipy", "statsmodels", "matplotlib")
HEAVY_FOR_THE_RESULTS = ("scipy", "statsmodels")  # pandas still comes with the Results page's tables

WINDOW_SCRIPT = """
import json, sys, time
from PySide6.QtCore import QSettings
from PySide6.QtWidgets import QApplication
app = QApplication([])
from spokenbench.app.main_window import OPTIONAL_PAGES, PAGES, PREFETCH_PAGES_MS, PlaceholderPage, MainWindow
from spokenbench.app.page_modules import imported
window = MainWindow(audio_message="no audio in tests", settings=QSettings(sys.argv[1], QSettings.Format.IniFormat))
window.show()
for key, _name in PAGES:
    if key != "results":
        window.show_page(key)
        app.processEvents()
# the pages shown are built once their modules are in (imported on a thread), and the prefetch has run (it does
# not take the Results page's module: issue 28 keeps pandas out of the app until that page is asked for)
started = time.monotonic()
prefetched_by = PREFETCH_PAGES_MS / 1000 + 2
while any(window.page_opening(key) for key, _name in PAGES) or time.monotonic() - started < prefetched_by:
    assert time.monotonic() - started < 60, "the pages did not open in 60 s"
    app.processEvents()
    time.sleep(0.01)
built = [key for key in OPTIONAL_PAGES if not isinstance(window.page_widgets[key], PlaceholderPage)]
assert built == ["rating", "qc", "speakers", "evaluate"], built
assert not imported(OPTIONAL_PAGES["results"][0])
assert window.tour is not None
loaded = sorted({name.split(".")[0] for name in sys.modules})
window.shutdown()
print(json.dumps(loaded))
"""

RESULTS_SCRIPT = """
import json, sys, time
from pathlib import Path
from PySide6.QtCore import QSettings
from PySide6.QtWidgets import QApplication
app = QApplication([])
from spokenbench.app.main_window import MainWindow
window = MainWindow(audio_message="no audio in tests", settings=QSettings(sys.argv[1], QSettings.Format.IniFormat))
window.resize(1300, 820)
window.show()
opening = window.open_project(Path(sys.argv[2]))

def wait(condition, what):
    limit = time.monotonic() + 240
    while not condition():
        if time.monotonic() > limit:
            raise SystemExit(f"timed out waiting for {what}")
        app.processEvents()
        time.sleep(0.01)

wait(lambda: opening.status not in ("new", "running"), "the project to open")
window.show_page("results")
wait(lambda: not window.page_opening("results"), "the Results page's module")  # imported on a thread
results = window.page_widgets["results"]
wait(lambda: results.panels is not None, "the Results panels")
results.show_panel("gender_probe")
wait(lambda: results.gender_panel.view is not None, "the gender-probe detail")
assert not results.gender_panel.view.empty, results.gender_panel.view.empty
loaded = sorted({name.split(".")[0] for name in sys.modules})
window.shutdown()
print(json.dumps(loaded))
"""


SOURCES_SCRIPT = """
import json, linecache, sys
import PySide6.QtWidgets
from spokenbench.app.main import keep_module_sources_out_of_memory
feature = sys.modules["shibokensupport.feature"]
shibokens_own = feature._mod_uses_pyside
keep_module_sources_out_of_memory()
import spokenbench.widgets.tables, spokenbench.core.results.names, spokenbench.core.foundation.errors
cached = sorted(linecache.cache)
names = ["spokenbench.widgets.tables", "spokenbench.core.results.names", "spokenbench.core.foundation.errors", "math",
         "PySide6.QtWidgets", "json"]
answers = {name: [shibokens_own(sys.modules[name]), feature._mod_uses_pyside(sys.modules[name])] for name in names}
print(json.dumps({"cached": cached, "answers": answers}))
"""


def run_fresh(script: str, *args: str):
    """`script` in a fresh interpreter, offscreen: the JSON its last line prints."""
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen")
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script), *args], env=env, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def loaded_modules(script: str, *args: str) -> set[str]:
    return set(run_fresh(script, *args))


def test_pyside_asks_each_import_the_same_question_without_keeping_its_source():
    """shiboken reads every imported module's source to see whether it uses PySide6 (~50 MiB kept in linecache
    for the app): the replacement gives the same answers and keeps no line."""
    result = run_fresh(SOURCES_SCRIPT)
    assert result["cached"] == []
    answers = result["answers"]
    assert answers["spokenbench.widgets.tables"] == [True, True]  # imports PySide6
    assert answers["spokenbench.core.results.names"] == [False, False]
    assert all(shibokens == ours for shibokens, ours in answers.values()), answers


def test_the_main_window_and_its_tour_load_no_pandas_pyarrow_or_scipy(tmp_path):
    """Nor matplotlib: also once the window has prefetched its small pages' modules (app/page_modules.py)."""
    loaded = loaded_modules(WINDOW_SCRIPT, str(tmp_path / "settings.ini"))
    assert "PySide6" in loaded and "spokenbench" in loaded  # the probe saw the app
    assert sorted(loaded & set(HEAVY_FOR_THE_WINDOW)) == []


@pytest.mark.slow
def test_the_results_page_and_gender_detail_compute_without_scipy_in_the_app(read_only_demo, tmp_path):
    loaded = loaded_modules(RESULTS_SCRIPT, str(tmp_path / "settings.ini"), str(read_only_demo))
    assert "matplotlib" in loaded  # the panels were drawn here
    assert sorted(loaded & set(HEAVY_FOR_THE_RESULTS)) == []


@pytest.mark.slow
def test_the_smokes_peak_is_its_own_not_the_size_of_the_process_that_started_it():
    """getrusage's ru_maxrss survives exec on Linux: a smoke started by a large process (a test run) reported that
    process's size. The peak printed is the smoke process's own."""
    if not sys.platform.startswith("linux"):
        pytest.skip("VmHWM is Linux's")
    ballast = b"x" * (400 * 2**20)  # this process: 400 MiB more, touched
    script = (
        "import json, resource\nfrom spokenbench.app.smoke import peak_memory_mib\n"
        "print(json.dumps([peak_memory_mib(), resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024]))"
    )
    own, inherited = run_fresh(script)
    del ballast
    assert inherited > 400  # what the old reading said
    assert own < 200
