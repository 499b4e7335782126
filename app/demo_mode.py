"""`spokenbench-studio --demo`: the demo project kept in the user's data folder, built the first time and reused
after, then opened.

The demo lives in `<data folder>/demo-project`: the data folder is `SPOKENBENCH_DATA_DIR` when set, else the
platform's (`QStandardPaths.GenericDataLocation`/SpokenBench/SpokenBench Studio: ~/.local/share/… on Linux,
%LOCALAPPDATA%\\… on Windows, ~/Library/Application Support/… on macOS). A marker file written last into a
finished build, `.spokenbench-demo.json`, records what built it: the app's version, the schema's version and
digest, and a fingerprint of the demo's builders and data. A folder without the marker, or with a marker from another
version, is rebuilt — in a sibling folder swapped in only once complete, so the demo is never half-built or
half-used. Building runs in a job process (core/jobs/host.py) waited for by a `BackgroundOp`, its progress in the
jobs panel: the build is seconds of Python that, on a thread of the app, kept the UI from reacting."""

from __future__ import annotations

import contextlib
import hashlib
import importlib.resources
import importlib.util
import json
import os
import shutil
import time
from pathlib import Path

from spokenbench.core import __version__
from spokenbench.core.foundation.progress import Progress, no_progress
from spokenbench.core.jobs.host import run_task_in_job_process, task_call

DATA_DIR_ENV = "SPOKENBENCH_DATA_DIR"
DEMO_FOLDER = "demo-project"
MARKER = ".spokenbench-demo.json"
# Raise when what the app expects of its demo changes in a way the fingerprint below cannot see.
DEMO_LAYOUT = 1
# the modules that decide what the demo holds: a change in any of them makes an older demo out of date
DEMO_BUILDERS = (
    "spokenbench.core.demo.project",
    "spokenbench.core.evaluation.demo",
    "spokenbench.core.evaluation.simulated",
    "spokenbench.core.qc.demo",
)


def data_dir() -> Path:
    """The app's data folder (created on demand): SPOKENBENCH_DATA_DIR, else the platform's."""
    override = os.environ.get(DATA_DIR_ENV)
    if override:
        return Path(override).expanduser()
    from PySide6.QtCore import QStandardPaths

    base = QStandardPaths.writableLocation(QStandardPaths.StandardLocation.GenericDataLocation)
    return Path(base or Path.home() / ".local" / "share") / "SpokenBench" / "SpokenBench Studio"


def demo_folder(base: Path | None = None) -> Path:
    return (base if base is not None else data_dir()) / DEMO_FOLDER


def _module_bytes(name: str) -> bytes:
    """A builder module's source (or compiled) bytes; its name where the file cannot be read (a frozen app)."""
    with contextlib.suppress(Exception):
        spec = importlib.util.find_spec(name)
        if spec is not None and spec.origin and os.path.isfile(spec.origin):
            return Path(spec.origin).read_bytes()
    return name.encode()


def demo_fingerprint() -> dict:
    """What a demo built now would be built by: compared with a built demo's marker."""
    from spokenbench.core.store.migrations import CURRENT_SCHEMA_DIGEST, SCHEMA_VERSION

    digest = hashlib.sha256()
    for name in DEMO_BUILDERS:
        digest.update(name.encode() + b"\0" + _module_bytes(name) + b"\0")
    demo_data = importlib.resources.files("spokenbench.resources") / "demo"
    for entry in sorted(demo_data.iterdir(), key=lambda e: e.name):
        if entry.is_file():
            digest.update(entry.name.encode() + b"\0" + entry.read_bytes() + b"\0")
    return {
        "layout": DEMO_LAYOUT,
        "app_version": __version__,
        "schema_version": SCHEMA_VERSION,
        "schema_digest": CURRENT_SCHEMA_DIGEST,  # a build whose migrations differed made a schema refused at opening
        "fingerprint": digest.hexdigest(),
    }


def read_marker(folder: Path) -> dict | None:
    try:
        return json.loads((folder / MARKER).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def write_marker(folder: Path, fingerprint: dict | None = None) -> Path:
    """Mark a finished demo as built by this version (written to a temp file and renamed: never half a marker)."""
    data = dict(fingerprint or demo_fingerprint(), built=time.strftime("%Y-%m-%dT%H:%M:%S%z"))
    path = folder / MARKER
    temp = folder / f"{MARKER}.tmp"
    temp.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    os.replace(temp, path)
    return path


def demo_is_current(folder: Path, fingerprint: dict | None = None) -> bool:
    """True when `folder` holds a finished demo built by this version."""
    marker = read_marker(folder)
    if marker is None or not (folder / "project.sqlite").is_file():
        return False
    wanted = fingerprint or demo_fingerprint()
    return all(marker.get(key) == value for key, value in wanted.items())


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError):
        return True
    return True


def _remove_leftovers(base: Path) -> None:
    """Sibling folders an interrupted build or swap of this app left behind (their process is gone)."""
    # ours (.demo-project.new-PID, .demo-project.old-PID) and build_demo's staging inside a new one
    for entry in [*base.glob(f".{DEMO_FOLDER}.*-*"), *base.glob(f"..{DEMO_FOLDER}.*-*")]:
        pid = entry.name.rsplit("-", 1)[-1]
        if pid.isdigit() and int(pid) != os.getpid() and not _pid_alive(int(pid)):
            shutil.rmtree(entry, ignore_errors=True)


def ensure_demo(base: Path | None = None, progress: Progress | None = None, build=None) -> Path:
    """The demo folder, built (or rebuilt, when an older version built it) if needed; off the UI thread.
    `build(path, progress)` defaults to core.demo.project.build_demo (tests give a quicker one)."""
    progress = progress or no_progress()
    base = base if base is not None else data_dir()
    target = demo_folder(base)
    fingerprint = demo_fingerprint()
    if demo_is_current(target, fingerprint):
        progress.report(1, 1, f"reusing the demo in {target}")
        return target
    if build is None:
        from spokenbench.core.demo.project import build_demo as build
    base.mkdir(parents=True, exist_ok=True)
    _remove_leftovers(base)
    fresh = base / f".{DEMO_FOLDER}.new-{os.getpid()}"
    old = base / f".{DEMO_FOLDER}.old-{os.getpid()}"
    shutil.rmtree(fresh, ignore_errors=True)
    shutil.rmtree(old, ignore_errors=True)
    progress.report(
        0, None, f"building the demo in {target}" + (" (replacing an older one)" if target.exists() else "")
    )
    try:
        build(fresh, progress)
        write_marker(fresh, fingerprint)
        if target.exists():
            os.replace(target, old)  # an older or unfinished demo: out of the way first, removed after
        os.replace(fresh, target)
    finally:
        shutil.rmtree(fresh, ignore_errors=True)
    shutil.rmtree(old, ignore_errors=True)
    return target


def open_demo(window, base: Path | None = None, build=None, shown=None):
    """Build or reuse the demo in a BackgroundOp (its progress in the jobs panel), then open it in `window`, and call
    `shown()` once it is shown. Returns the operation; its success value is the window's view of the project."""
    from spokenbench.app.main_window import load_project_view

    base = base if base is not None else data_dir()
    building = not demo_is_current(demo_folder(base))

    def work(progress: Progress):
        if building and build is None:  # seconds of synthesis and assembly in Python: in a job process
            folder = run_task_in_job_process(task_call(ensure_demo, base), progress, "Building the demo project")
        else:
            folder = ensure_demo(base, progress, build)
        return folder, load_project_view(folder, progress)

    opening = window.run_open(work, "Opening the demo project", shown)
    return window.show_jobs_until_built(opening) if building else opening  # a build takes a minute
