"""The declared dependencies cover what the code loads, and no more Qt than that: the app and widgets import
only Qt modules of `pyside6-essentials` (no WebEngine, Pdf or add-on module, so the lighter install holds), and
a module core imports at run time is a runtime dependency, not a test one."""

import ast
import importlib.metadata
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def declared_dependencies() -> set[str]:
    text = (REPO / "pyproject.toml").read_text(encoding="utf-8")
    block = text.split("dependencies = [", 1)[1].split("]", 1)[0]
    return {re.split(r"[<>=;\[ ]", line.strip().strip('",'))[0].lower() for line in block.splitlines() if '"' in line}


def test_qt_comes_from_the_essentials_wheel_only():
    dependencies = declared_dependencies()
    assert (
        "pyside6-essentials" in dependencies and "pyside6" not in dependencies and "pyside6-addons" not in dependencies
    )


@pytest.mark.slow
def test_the_app_loads_only_essentials_qt_modules():
    essentials = {
        Path(str(file)).name.split(".")[0]
        for file in importlib.metadata.files("PySide6_Essentials") or []
        if str(file).startswith("PySide6/Qt") and str(file).endswith(".so")
    }
    code = (
        "import importlib, pkgutil, sys\n"
        "import spokenbench.app as app, spokenbench.widgets as widgets\n"
        "for package in (app, widgets):\n"
        "    for module in pkgutil.walk_packages(package.__path__, package.__name__ + '.'):\n"
        "        importlib.import_module(module.name)\n"
        "print(' '.join(sorted(m.split('.')[1] for m in sys.modules if m.startswith('PySide6.Qt'))))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    loaded = set(done.stdout.split())
    assert {"QtCore", "QtGui", "QtWidgets"} <= loaded
    assert loaded <= essentials, f"Qt modules outside pyside6-essentials: {sorted(loaded - essentials)}"


@pytest.mark.slow
def test_statsmodels_is_a_runtime_dependency_while_core_imports_it():
    imports_statsmodels = any(
        isinstance(node, ast.ImportFrom | ast.Import)
        and any((getattr(node, "module", None) or alias.name).startswith("statsmodels") for alias in node.names)
        for path in (REPO / "core").rglob("*.py")
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
    )
    assert not imports_statsmodels or "statsmodels" in declared_dependencies()
