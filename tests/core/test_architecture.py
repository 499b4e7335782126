"""The design card's rules that a reviewer would otherwise have to remember."""

import ast
import re
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_core_never_imports_qt_at_runtime():
    """Import every core module in a fresh interpreter: no Qt module may be loaded. The source's own imports are
    the `.importlinter` contracts' (tests/core/test_import_contracts.py); this catches what they cannot name, such
    as a library loading matplotlib's Qt backend."""
    script = textwrap.dedent(
        """
        import importlib, pkgutil, sys
        import spokenbench.core as core
        for module in pkgutil.walk_packages(core.__path__, "spokenbench.core."):
            importlib.import_module(module.name)
        loaded = sorted(m for m in sys.modules if m.split(".")[0] in ("PySide6", "shiboken6")
                        or m.startswith(("spokenbench.app", "spokenbench.widgets")))
        print(",".join(loaded))
        """
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == ""


@pytest.mark.slow
def test_wheel_installs_only_namespaced_packages(tmp_path):
    """`pip install .` must put spokenbench/core, spokenbench/app, … in site-packages, never a bare core/."""
    pytest.importorskip("setuptools")
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(tmp_path),
            str(REPO),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    [wheel] = tmp_path.glob("*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    top_level = {name.split("/")[0] for name in names}
    assert top_level == {"spokenbench", next(t for t in top_level if t.endswith(".dist-info"))}
    for package in ("core", "app", "widgets", "resources"):
        assert f"spokenbench/{package}/__init__.py" in names
    assert "spokenbench/resources/demo/demo_mcq.jsonl" in names
    entry_points = zipfile.ZipFile(wheel).read(next(n for n in names if n.endswith("entry_points.txt"))).decode()
    assert "spokenbench = spokenbench.core.cli.main:main" in entry_points
    assert "spokenbench-studio = spokenbench.app.main:main" in entry_points


def test_cli_and_core_run_without_portaudio(tmp_path):
    """Where libportaudio2 is missing, importing sounddevice raises OSError; the tool must still work and say why."""
    fake = tmp_path / "fake_modules"
    fake.mkdir()
    (fake / "sounddevice.py").write_text("raise OSError('PortAudio library not found')\n")
    script = textwrap.dedent(
        """
        import sys
        sys.path.insert(0, sys.argv[1])
        from spokenbench.core.audio.support import sounddevice_support
        from spokenbench.core.cli.main import main
        support = sounddevice_support()
        assert not support.available and "libportaudio2" in support.message, support
        sys.exit(main(["init", sys.argv[2]]))
        """
    )
    result = subprocess.run(
        [sys.executable, "-c", script, str(fake), str(tmp_path / "p")], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr


# --------------------------------------------------------------------------------------------------
# Import and SQL contracts, checked on the source (AST), so a violation is named by file and line.

PACKAGE = "spokenbench"
# receivers whose `execute` is no cursor's: matplotlib's LayoutEngine.execute (core/metrics/figures.py)
NOT_SQL_RECEIVERS = frozenset({"layout_engine"})
SQL_METHODS = frozenset({"execute", "executemany", "executescript", "read_sql", "read_sql_query", "read_sql_table"})
# A string that starts like a statement: checked case-sensitively, so prose ("Select the answer") never matches.
SQL_STATEMENT = re.compile(
    r"\s*(SELECT\s+\S|INSERT\s+(OR\s+[A-Z]+\s+)?INTO\s|UPDATE\s+\w+\s+SET\s|DELETE\s+FROM\s"
    r"|CREATE\s+(TEMP\s+|TEMPORARY\s+)?(TABLE|VIEW|TRIGGER|(UNIQUE\s+)?INDEX)\s|WITH\s+\w+\s+AS\s*\()"
)


def _python_files(root: Path, top: str) -> list[Path]:
    return sorted((root / top).rglob("*.py")) if (root / top).is_dir() else []


def _relative(root: Path, path: Path) -> str:
    return path.relative_to(root).as_posix()


def _package_of(root: Path, path: Path) -> str:
    """The installed package a repository file belongs to: core/qc/queues.py → spokenbench.core.qc."""
    return ".".join((PACKAGE, *path.relative_to(root).parent.parts))


def _imports(root: Path, path: Path):
    """(line, absolute module, imported name or None) for every import in a file, relative imports resolved."""
    package = _package_of(root, path)
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name, None
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            for alias in node.names:
                yield node.lineno, module, alias.name


def _is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _within(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


def cli_non_public_imports(root: Path) -> list[str]:
    """The CLI is a client of core's public functions: no database module, no sqlite3, no private names (dunders
    such as __version__ are public)."""
    forbidden = ("sqlite3", f"{PACKAGE}.core.store.database")
    offenders = []
    for path in _python_files(root, "core/cli"):
        where = _relative(root, path)
        bound_by_import = set()
        for line, module, name in _imports(root, path):
            targets = [module] + ([f"{module}.{name}"] if name else [])
            if any(_within(t, f) for t in targets for f in forbidden):
                offenders.append(f"{where}:{line}: imports {targets[-1]}")
            if any(_is_private(part) for part in module.split(".")) or (name and _is_private(name)):
                offenders.append(f"{where}:{line}: imports private {targets[-1]}")
            bound_by_import.add(name or module.split(".")[0])
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Attribute)
                and _is_private(node.attr)
                and isinstance(node.value, ast.Name)
                and node.value.id in bound_by_import
            ):
                offenders.append(f"{where}:{node.lineno}: uses private {node.value.id}.{node.attr}")
    return offenders


def _may_hold_sql(relative: str) -> bool:
    if relative.startswith("core/cli/") or not relative.startswith("core/"):
        return False  # the CLI, app/ and widgets/ never run SQL themselves
    return relative.startswith("core/store/") or relative.endswith("/store.py")


def _literal_text(node: ast.AST) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):  # an f-string: its placeholders count as words
        return "".join(v.value if isinstance(v, ast.Constant) else "{}" for v in node.values)
    return None


def sql_outside_store_modules(root: Path) -> list[str]:
    """SQL (a cursor call, or a statement written as a string) anywhere but core/store/ and capabilities' store.py."""
    offenders = set()
    for top in ("core", "app", "widgets"):
        for path in _python_files(root, top):
            where = _relative(root, path)
            if _may_hold_sql(where):
                continue
            tree = ast.parse(path.read_text(encoding="utf-8"))
            fstring_parts = {
                id(part) for node in ast.walk(tree) if isinstance(node, ast.JoinedStr) for part in node.values
            }
            for node in ast.walk(tree):
                if id(node) in fstring_parts:
                    continue  # judged as part of the whole f-string
                if (
                    isinstance(node, ast.Call)
                    and isinstance(node.func, ast.Attribute)
                    and node.func.attr in SQL_METHODS
                    and not (isinstance(node.func.value, ast.Name) and node.func.value.id in NOT_SQL_RECEIVERS)
                ):
                    offenders.add((where, node.lineno, f".{node.func.attr}(…)"))
                text = _literal_text(node)
                if text is not None and SQL_STATEMENT.match(text):
                    offenders.add((where, node.lineno, f"SQL text {text.strip()[:40]!r}"))
    return [f"{where}:{line}: {what}" for where, line, what in sorted(offenders)]


@pytest.mark.slow
def test_cli_uses_only_public_core_functions():
    assert cli_non_public_imports(REPO) == []


@pytest.mark.slow
def test_sql_lives_only_in_store_modules():
    assert sql_outside_store_modules(REPO) == []


def test_the_contract_checks_catch_violations(tmp_path):
    """The scans above must fail on a real violation, not pass because they look at nothing."""
    files = {
        "core/qc/logic.py": 'def f(conn):\n    return conn.execute("SELECT 1")\n',
        "core/qc/query.py": 'QUERY = (\n    "SELECT id "\n    "FROM items"\n)\n',
        "core/qc/fstring.py": 'def q(table):\n    return f"DELETE FROM {table} WHERE id = ?"\n',
        "core/qc/prose.py": 'HINT = "Select the answer; delete from the list what does not apply"\n',
        "core/qc/store.py": 'def f(conn):\n    return conn.execute("SELECT 1").fetchone()\n',
        "core/store/things.py": 'def f(conn):\n    conn.executemany("INSERT INTO t VALUES (?)", [])\n',
        "core/cli/store.py": 'def f(conn):\n    conn.execute("SELECT 1")\n',
        "core/cli/commands.py": (
            "import sqlite3\n"
            "from spokenbench.core import __version__\n"
            "from spokenbench.core.store import database\n"
            "from ..qc.queues import _queue_id\n"
            "from spokenbench.core.qc import queues\n"
            "queues._queue_id(None, 'x')\n"
        ),
        "app/window.py": "def f(cursor):\n    cursor.executemany('UPDATE t SET a = 1', [])\n",
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text, encoding="utf-8")

    assert sql_outside_store_modules(tmp_path) == [
        "app/window.py:2: .executemany(…)",
        "app/window.py:2: SQL text 'UPDATE t SET a = 1'",
        "core/cli/store.py:2: .execute(…)",
        "core/cli/store.py:2: SQL text 'SELECT 1'",
        "core/qc/fstring.py:2: SQL text 'DELETE FROM {} WHERE id = ?'",
        "core/qc/logic.py:2: .execute(…)",
        "core/qc/logic.py:2: SQL text 'SELECT 1'",
        "core/qc/query.py:2: SQL text 'SELECT id FROM items'",
    ]
    assert cli_non_public_imports(tmp_path) == [
        "core/cli/commands.py:1: imports sqlite3",
        "core/cli/commands.py:3: imports spokenbench.core.store.database",
        "core/cli/commands.py:4: imports private spokenbench.core.qc.queues._queue_id",
        "core/cli/commands.py:6: uses private queues._queue_id",
    ]
