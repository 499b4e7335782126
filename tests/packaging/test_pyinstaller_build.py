"""The packaged desktop app (issue 15 item 5): packaging/spokenbench-studio.spec builds a one-folder app that
opens the demo and renders every screen (`--demo --smoke`) offscreen, with the espeak-ng data and the demo's
data inside, and runs the app's job processes (`--job-host`). Slow (a build takes minutes): run it with

    pip install -e ".[packaging]"
    QT_QPA_PLATFORM=offscreen python -m pytest -m slow tests/packaging/test_pyinstaller_build.py

It is skipped, with the reason, when PyInstaller is not installed."""

import json
import os
import pickle
import subprocess
import sys
from pathlib import Path

import pytest
from support import gmmlu_rows, write_csv, write_parquet

from spokenbench.core.importers import import_files
from spokenbench.core.jobs import host as job_host
from spokenbench.core.jobs.host import job_call

ROOT = Path(__file__).resolve().parents[2]
SPEC = ROOT / "packaging" / "spokenbench-studio.spec"


@pytest.mark.slow
def test_pyinstaller_build_runs_the_demo_smoke_check(tmp_path):
    pytest.importorskip("PyInstaller", reason='PyInstaller is not installed (pip install -e ".[packaging]")')
    dist, work = tmp_path / "dist", tmp_path / "work"
    build = subprocess.run(
        [sys.executable, "-m", "PyInstaller", "--noconfirm", "--distpath", dist, "--workpath", work, SPEC],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    assert build.returncode == 0, build.stderr[-4000:]
    app_dir = dist / "spokenbench-studio"
    executable = app_dir / ("spokenbench-studio.exe" if os.name == "nt" else "spokenbench-studio")
    assert executable.is_file()
    internal = app_dir / "_internal"
    assert (internal / "espeakng_loader" / "espeak-ng-data" / "phontab").is_file()  # espeak-ng's data
    assert (internal / "spokenbench" / "resources" / "demo" / "demo_mcq.jsonl").is_file()  # the demo's data
    assert (internal / "spokenbench-studio.desktop").is_file()

    data_dir = tmp_path / "data"
    data_dir.mkdir()
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "SPOKENBENCH_DATA_DIR": str(data_dir)}
    smoke = subprocess.run(
        [executable, "--demo", "--smoke"], env=env, capture_output=True, text=True, timeout=900, cwd=tmp_path
    )
    assert smoke.returncode == 0, (smoke.stdout[-2000:], smoke.stderr[-4000:])
    assert (data_dir / "demo-project").is_dir()  # built by the packaged app, offline, with espeak-ng

    # The app's job processes: the bundle is its own job host (`--job-host`); an import into the demo project.
    table = write_csv(tmp_path / "en.csv", gmmlu_rows(20))
    request = job_host.encode_request(
        data_dir / "demo-project", job_call(import_files, [table], "gmmlu-lite"), kind="import", label="en", claim=None
    )
    host = subprocess.Popen(
        [executable, "--job-host"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, cwd=tmp_path
    )
    host.stdin.write(request)
    host.stdin.flush()  # and kept open: its end would ask the job to cancel
    frames = [pickle.load(host.stdout)]
    while frames[-1][0] in ("job", "progress"):
        frames.append(pickle.load(host.stdout))
    host.stdin.close()
    assert host.wait(60) == 0
    assert frames[0][0] == "job" and frames[-1][0] == "ok", frames[-1]
    assert frames[-1][1][0].imported == 20

    # What the spec leaves out or strips is not needed by the headless paths either: a Parquet import (pyarrow
    # without ORC, Substrait and encryption; stripped Arrow libraries) and the QC report (scipy, numpy's OpenBLAS).
    parquet = write_parquet(tmp_path / "fr.parquet", gmmlu_rows(5))
    command = [executable, "--cli", "import", data_dir / "demo-project", parquet, "--format", "gmmlu-lite"]
    imported = subprocess.run(command + ["--language", "fr", "--json"], **_cli_options(env, tmp_path))
    assert imported.returncode == 0, imported.stderr[-2000:]
    assert json.loads(imported.stdout)[0]["imported"] == 5
    report = subprocess.run([executable, "--cli", "qc-report", data_dir / "demo-project", "--json"],
                            **_cli_options(env, tmp_path))  # fmt: skip
    assert report.returncode == 0, report.stderr[-2000:]
    assert json.loads(report.stdout)["reliability"]["pairs"][0]["cohen_kappa"] is not None


def _cli_options(env: dict, cwd: Path) -> dict:
    return {"env": env, "cwd": cwd, "capture_output": True, "text": True, "timeout": 300}
