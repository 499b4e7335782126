"""The import contracts of `.importlinter` (issue 27): the project keeps them, and each one fails on the
violation it exists for — checked by running `lint-imports` with the real configuration over a small stand-in
tree of the same package names (spokenbench.core/app/widgets), so a contract that checks nothing cannot pass."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CONFIG = REPO / ".importlinter"
# lint-imports run by this interpreter, so it resolves the packages of this checkout (a console script of another
# environment would analyse another copy).
LINT_IMPORTS = "import sys; from importlinter.cli import lint_imports_command; sys.exit(lint_imports_command())"
CORE_PACKAGES = (
    *("cli", "demo", "results", "qc", "metrics", "importers", "evaluation", "asr", "recording", "rewriting", "audio"),
    *("jobs", "store", "domain", "foundation"),
)  # every package the layers contract names, top to bottom
CORE_MODULES = ()


def lint_imports(cwd: Path, python_path: Path | None = None) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    if python_path is not None:
        env["PYTHONPATH"] = str(python_path)  # found before the editable install's own finder
    return subprocess.run(
        [sys.executable, "-c", LINT_IMPORTS, "--config", str(CONFIG), "--no-cache"],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def stand_in_tree(root: Path, modules: dict[str, str]) -> Path:
    """spokenbench/{core,app,widgets} with every package and module the layers name, empty unless given."""
    files = {
        "spokenbench/app/__init__.py": "",
        "spokenbench/widgets/__init__.py": "",
        "spokenbench/core/__init__.py": "",
    }
    files |= {f"spokenbench/core/{name}/__init__.py": "" for name in CORE_PACKAGES}
    files |= {f"spokenbench/core/{name}.py": "" for name in CORE_MODULES}
    files |= modules
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


# In the default run although it takes ~0.7 s (a fresh interpreter building the whole import graph): the contracts
# are checked wherever tests run, not only in CI.
def test_the_project_keeps_every_import_contract():
    result = lint_imports(REPO)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout and "BROKEN" not in result.stdout


@pytest.mark.slow  # a fresh interpreter running lint-imports: ~0.5 s each
def test_a_clean_stand_in_tree_keeps_the_contracts(tmp_path):
    tree = stand_in_tree(
        tmp_path / "src",
        {
            "spokenbench/app/window.py": "import PySide6\nfrom spokenbench.widgets import panel\n",
            "spokenbench/widgets/panel.py": "from spokenbench.core.qc import queues\n",
            "spokenbench/core/qc/queues.py": "from spokenbench.core.asr import scoring\nfrom spokenbench.core import x\n",
            "spokenbench/core/asr/scoring.py": "from spokenbench.core.audio import io\n",
            "spokenbench/core/audio/io.py": "from spokenbench.core.store import db\n",
            "spokenbench/core/store/db.py": "",
            "spokenbench/core/x.py": "",
        },
    )
    result = lint_imports(tmp_path, tree)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "4 kept, 0 broken" in result.stdout


@pytest.mark.parametrize(
    ("modules", "broken"),
    [
        (  # core imports upward, into the app
            {"spokenbench/core/qc/view.py": "from spokenbench.app import window\n", "spokenbench/app/window.py": ""},
            "The app uses widgets and core",
        ),
        (  # widgets import the app that hosts them
            {"spokenbench/widgets/panel.py": "import spokenbench.app.window\n", "spokenbench/app/window.py": ""},
            "The app uses widgets and core",
        ),
        ({"spokenbench/core/audio/player.py": "from PySide6 import QtCore\n"}, "core never imports Qt"),
        (  # a lower capability imports a higher one (the asr -> qc of issue 27)
            {
                "spokenbench/core/asr/screening.py": "from spokenbench.core.qc import layout\n",
                "spokenbench/core/qc/layout.py": "",
            },
            "core's packages in layers",
        ),
        (  # two siblings of the same layer are independent
            {
                "spokenbench/core/rewriting/report.py": "from spokenbench.core.asr import store\n",
                "spokenbench/core/asr/store.py": "",
            },
            "core's packages in layers",
        ),
        (  # the store imports the job machinery that uses it
            {"spokenbench/core/store/database.py": "from spokenbench.core import jobs\n"},
            "core's packages in layers",
        ),
        (  # the foundation everything uses imports the store above it
            {"spokenbench/core/foundation/tables.py": "from spokenbench.core.store import database\n"},
            "core's packages in layers",
        ),
        (  # the Results page's data imports the demo that composes it
            {"spokenbench/core/results/model.py": "from spokenbench.core.demo import tour\n"},
            "core's packages in layers",
        ),
        (  # a cycle through modules no layer names (three core root modules)
            {
                "spokenbench/core/a.py": "from spokenbench.core import b\n",
                "spokenbench/core/b.py": "from spokenbench.core import c\n",
                "spokenbench/core/c.py": "from spokenbench.core import a\n",
            },
            "No import cycle between core's packages",
        ),
    ],
    ids=[
        "core-imports-app",
        "widgets-import-app",
        "core-imports-qt",
        "asr-imports-qc",
        "siblings",
        "store-imports-jobs",
        "foundation-imports-store",
        "results-import-demo",
        "cycle-a-b-c",
    ],
)
@pytest.mark.slow
def test_each_contract_fails_on_its_violation(tmp_path, modules, broken):
    result = lint_imports(tmp_path, stand_in_tree(tmp_path / "src", modules))
    assert result.returncode == 1, result.stdout + result.stderr
    assert "1 broken" in result.stdout
    broken_section = result.stdout.split("Broken contracts", 1)[1]
    assert broken in broken_section
