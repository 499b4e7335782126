"""Issue 28 item 6: the app's process stays small because the heavy numerical libraries stay in job processes.
The main window and its tour load no pandas, pyarrow or scipy; the Results page, its panels and its gender-probe
detail (computed in job processes) load no scipy or statsmodels. Checked in a fresh interpreter: this test
process has long imported all of them."""

import json
import os
import subprocess
import sys
import textwrap

import pytest

HEAVY_FOR_THE_WINDOW = ("pandas", "pyarrow", "scipy", "statsmodels")
HEAVY_FOR_THE_RESULTS = ("scipy", "statsmodels")  # pandas still comes with the Results page's tables

WINDOW_SCRIPT = """
import json, sys
from PySide6.QtCore import QSettings
from PySide6.QtWidgets import QApplication
app = QApplication([])
from spokenbench.app.main_window import PAGES, MainWindow
window = MainWindow(audio_message="no audio in tests", settings=QSettings(sys.argv[1], QSettings.Format.IniFormat))
window.show()
for key, _name in PAGES:
    if key != "results":
        window.show_page(key)
        app.processEvents()
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
results = window.page_widgets["results"]
wait(lambda: results.panels is not None, "the Results panels")
results.show_panel("gender_probe")
wait(lambda: results.gender_panel.view is not None, "the gender-probe detail")
assert not results.gender_panel.view.empty, results.gender_panel.view.empty
loaded = sorted({name.split(".")[0] for name in sys.modules})
window.shutdown()
print(json.dumps(loaded))
"""


def loaded_modules(script: str, *args: str) -> set[str]:
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen")
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script), *args], env=env, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return set(json.loads(done.stdout.strip().splitlines()[-1]))


def test_the_main_window_and_its_tour_load_no_pandas_pyarrow_or_scipy(tmp_path):
    loaded = loaded_modules(WINDOW_SCRIPT, str(tmp_path / "settings.ini"))
    assert "PySide6" in loaded and "spokenbench" in loaded  # the probe saw the app
    assert sorted(loaded & set(HEAVY_FOR_THE_WINDOW)) == []


@pytest.mark.slow
def test_the_results_page_and_gender_detail_compute_without_scipy_in_the_app(read_only_demo, tmp_path):
    loaded = loaded_modules(RESULTS_SCRIPT, str(tmp_path / "settings.ini"), str(read_only_demo))
    assert "matplotlib" in loaded  # the panels were drawn here
    assert sorted(loaded & set(HEAVY_FOR_THE_RESULTS)) == []
