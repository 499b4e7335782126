"""The guard in app/qt_refcounts.py: PySide6 6.12.0 on CPython 3.11 drops a reference to None on every call of a
method that returns nothing, so a long session's labels and tables would abort the interpreter ("Fatal Python
error: none_dealloc") once None's count ran out — after ~16,000 calls in a bare script. With the app's package
imported, 60,000 such calls end normally."""

import subprocess
import sys
import textwrap

CALLS = textwrap.dedent(
    """
    import sys
    {import_app}
    from PySide6.QtWidgets import QApplication, QLabel, QTableWidget, QTableWidgetItem
    app = QApplication([])
    label, table = QLabel(), QTableWidget(1, 1)
    for n in range(30_000):
        label.setText(str(n))
        table.setItem(0, 0, QTableWidgetItem(str(n)))
    print("done", sys.getrefcount(None) > 1_000)
    """
)


def test_sixty_thousand_calls_that_return_nothing_end_normally_once_the_app_package_is_imported():
    script = CALLS.format(import_app="import spokenbench.app")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, env=_offscreen())
    assert done.returncode == 0, done.stderr[-500:]
    assert done.stdout.split() == ["done", "True"]


def _offscreen() -> dict[str, str]:
    import os

    return {**os.environ, "QT_QPA_PLATFORM": "offscreen"}
