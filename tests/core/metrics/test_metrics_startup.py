"""`spokenbench metrics FILE` is timed as a whole process against the reference package's script
(tests/benchmarks/bench_metrics.py part 4), so what it imports matters: no pandas (its import costs more than
the whole computation on 100,000 rows: the CSV is read by pyarrow into text columns and the engine works on
numpy arrays), no pyarrow.compute, no scipy.stats (Kendall's τ-b is computed in core/metrics/agreement.py), and no
scipy at all unless accuracies tie across models (Kendall's normal tail; McNemar's exact tail is counted in
integers; scipy.special alone costs ~150 ms to import), no
job machinery (core.jobs.registry, core.jobs.remote: asyncio, ssl; also not for
`spokenbench info`, issue 13: ≤ 0.5 s). A change that brings one back shows here, not only as a slower
benchmark."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from spokenbench.core.metrics.synthetic import biasinear_like

PROBE = """
import io, contextlib, json, sys
from spokenbench.core.cli.main import main
with contextlib.redirect_stdout(io.StringIO()):
    code = main(sys.argv[1:])
heavy = ["scipy.stats", "spokenbench.core.jobs.registry", "spokenbench.core.jobs.remote", "asyncio", "matplotlib", "pandas",
         "pyarrow.compute"]
print(json.dumps({"code": code, "imported": [m for m in heavy if m in sys.modules]}))
"""


@pytest.mark.slow
def test_metrics_command_imports_no_pandas_no_scipy_stats_and_no_job_machinery(tmp_path):
    path = tmp_path / "responses.csv"
    biasinear_like(n_questions=12, n_models=3, seed=1).to_csv(path, index=False)
    command = [sys.executable, "-c", PROBE, "metrics", str(path), "--bootstrap", "0", "--json"]
    done = subprocess.run(command, capture_output=True, text=True, check=True, timeout=300)
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result == {"code": 0, "imported": []}, done.stderr


@pytest.mark.slow
def test_metrics_command_imports_no_scipy_when_no_accuracies_tie(tmp_path):
    path = tmp_path / "responses.csv"
    biasinear_like(n_questions=60, n_models=6, seed=0).to_csv(path, index=False)  # no two models tie
    probe = PROBE.replace('heavy = ["scipy.stats"', 'heavy = ["scipy"')
    command = [sys.executable, "-c", probe, "metrics", str(path), "--bootstrap", "0", "--json"]
    done = subprocess.run(command, capture_output=True, text=True, check=True, timeout=300)
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result == {"code": 0, "imported": []}, done.stderr


@pytest.mark.slow
def test_info_command_imports_no_job_machinery(tmp_path):
    project = tmp_path / "project"
    init = [sys.executable, "-c", PROBE, "init", str(project)]
    subprocess.run(init, capture_output=True, text=True, check=True, timeout=300)
    done = subprocess.run(
        [sys.executable, "-c", PROBE, "info", str(project)], capture_output=True, text=True, check=True, timeout=300
    )
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result == {"code": 0, "imported": []}, done.stderr
