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


def imported_modules() -> set[str]:
    """Every module named by an import statement in the installed code (core, app, widgets) and the frozen entry,
    lazy ones included: a regular-expression scan, cheap enough for the default run."""
    pattern = re.compile(r"^\s*(?:from\s+([\w.]+)\s+import|import\s+([\w.]+))", re.MULTILINE)
    files = [REPO / "packaging" / "spokenbench_studio_entry.py"]
    files += [path for top in ("core", "app", "widgets") for path in (REPO / top).rglob("*.py")]
    return {a or b for path in files for a, b in pattern.findall(path.read_text(encoding="utf-8"))}


def test_statsmodels_is_a_test_dependency_the_code_never_imports():
    assert "statsmodels" not in declared_dependencies()
    pyproject = (REPO / "pyproject.toml").read_text(encoding="utf-8")
    assert '"statsmodels>=' in pyproject.split("test = [", 1)[1].split("\n", 1)[0]
    assert not {m for m in imported_modules() if m.split(".")[0] in ("statsmodels", "patsy", "formulaic")}


def spec_excludes() -> list[str]:
    tree = ast.parse((REPO / "packaging" / "spokenbench-studio.spec").read_text(encoding="utf-8"))
    [node] = [n for n in ast.walk(tree) if isinstance(n, ast.Assign) and ast.unparse(n.targets[0]) == "excludes"]
    return ast.literal_eval(node.value)


def test_the_build_leaves_out_no_runtime_dependency_and_nothing_the_code_imports():
    """The spec's excludes and the code stay consistent: a runtime dependency is never left out whole, and no
    excluded module is one the code imports (lazy imports of the optional extras excepted, which say when
    missing). The packaged test (tests/packaging) checks the same by running the build."""
    excludes, runtime = spec_excludes(), declared_dependencies()
    extras_imports = {"torch", "chatterbox", "faster_whisper", "kokoro_onnx", "tokenizers", "safetensors"}
    runtime_imports = {
        module
        for module, distributions in importlib.metadata.packages_distributions().items()
        if {re.sub(r"[-_.]+", "-", d).lower() for d in distributions} & runtime
    }
    assert {"numpy", "scipy", "pyarrow", "PySide6"} <= runtime_imports
    assert not set(excludes) & runtime_imports, "a runtime dependency is excluded whole"
    imported = {m for m in imported_modules() if m.split(".")[0] not in extras_imports}
    clashes = {e for e in excludes for m in imported if m == e or m.startswith(e + ".")}
    assert not clashes, f"the spec excludes modules the code imports: {sorted(clashes)}"
    assert extras_imports <= set(excludes)
