"""Issue 27's shape of the tree: core's root holds only its entry points, and no module is too long to read.
(Layers and cycles are import-linter's contracts: `.importlinter`, run by `lint-imports` in CI.)"""

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CORE = REPO / "core"
MAX_ROOT_FILES = 8
MAX_MODULE_LINES = 1000


def test_core_root_holds_only_entry_points():
    root_modules = sorted(path.name for path in CORE.glob("*.py"))
    assert len(root_modules) <= MAX_ROOT_FILES, root_modules
    assert "__init__.py" in root_modules


def test_every_core_package_says_what_it_is_for():
    packages = [path for path in CORE.iterdir() if path.is_dir() and any(path.glob("*.py"))]
    undocumented = [
        p.name for p in packages if not (p / "__init__.py").read_text(encoding="utf-8").lstrip().startswith('"""')
    ]
    assert not undocumented


def test_no_core_module_is_over_a_thousand_lines():
    too_long = {
        str(path.relative_to(REPO)): lines
        for path in CORE.rglob("*.py")
        if (lines := len(path.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES
    }
    assert not too_long
