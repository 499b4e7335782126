"""Running an evaluation: prepare, then run.

- `prepare_evaluation(project, settings)` (preparation.py) checks, plans and costs a run without creating a
  run row, sending a request or reading a credential;
- `run_evaluation(project, prepared, progress)` reads the credentials, creates (or resumes) the run row and
  runs it as a job every process can see (`core.jobs.tracked_job`, claim `run:<id>`): its progress and
  heartbeat are in the `jobs` table, a cancel requested from the app or `spokenbench jobs --cancel` stops it
  at its next safe point, and a second process cannot work on the same run at the same time;
- `evaluate(project, settings, progress)` does both;
- `list_runs(conn)` lists runs as a person should see them (a killed run shows as 'interrupted').
The session itself (cache, budget, requests on the shared job loop) is in session.py; the SQL in store.py."""

from __future__ import annotations

import asyncio
import sqlite3
import time
from dataclasses import dataclass

from spokenbench.core.errors import Cancelled
from spokenbench.core.evaluation import store
from spokenbench.core.evaluation.adapters import credential_for
from spokenbench.core.evaluation.budget import BUDGET_STOP
from spokenbench.core.evaluation.preparation import EvaluationPreparation, RunSettings, prepare_evaluation, run_claim
from spokenbench.core.evaluation.session import Credentials, EvaluationSession
from spokenbench.core.jobs import list_jobs, tracked_job
from spokenbench.core.progress import Progress, no_progress
from spokenbench.core.remote import RemoteAuthError
from spokenbench.core.store import Project

__all__ = ["RunSettings", "RunSummary", "evaluate", "list_runs", "prepare_evaluation", "run_evaluation"]

JOB_KIND = "evaluate"


@dataclass
class RunSummary:
    run_id: int
    status: str
    stop_reason: str | None
    model: str
    mode: str
    total: int
    answered: int  # stored without error, including earlier sessions of a resumed run
    errors: int
    fresh_requests: int  # sent to the model in this session
    cache_hits: int
    retries: int
    cost_usd: float  # whole run
    elapsed_s: float
    parse_counts: dict[str, int]
    plan: dict

    @property
    def requests_per_s(self) -> float:
        return self.fresh_requests / self.elapsed_s if self.elapsed_s > 0 else 0.0

    def as_dict(self) -> dict:
        data = dict(self.__dict__)
        data["requests_per_s"] = round(self.requests_per_s, 2)
        data["cost_usd"] = round(self.cost_usd, 6)
        data["elapsed_s"] = round(self.elapsed_s, 3)
        return data


def read_credentials(prepared: EvaluationPreparation) -> Credentials:
    """The keys the run needs, read once; a missing one stops here, before anything is written or sent."""
    if prepared.simulated:
        return Credentials(None)
    asr = credential_for(prepared.asr_preset) if prepared.asr_preset is not None else None
    return Credentials(credential_for(prepared.preset), asr)


def run_evaluation(project: Project, prepared: EvaluationPreparation, progress: Progress | None = None) -> RunSummary:
    """Run (or resume) a prepared evaluation. Raises Cancelled after a cancel, RemoteAuthError after a rejected
    key, JobClaimed when another live job works on the same run; every stored answer stays and the run stays
    resumable. A budget stop returns normally with status 'cancelled' and stop reason 'budget'."""
    progress = progress or no_progress()
    credentials = read_credentials(prepared)
    settings = prepared.settings
    total = len(prepared.jobs)
    run_id = prepared.resume_run_id
    if run_id is None:
        with project.transaction() as conn:
            run_id = store.create_run(
                conn,
                settings.name or f"{prepared.model_name} {settings.mode} {settings.prompt}",
                prepared.model_name,
                prepared.preset.provider,
                prepared.run_mode,
                settings.prompt,
                prepared.prompt_text,
                prepared.identity,
                total,
                settings.budget_usd,
            )
    label = f"{prepared.model_name} {settings.mode} {settings.prompt} (run {run_id})"
    with tracked_job(project.path, JOB_KIND, label, progress, claim=run_claim(run_id), total=total) as job:
        if prepared.resume_run_id is not None:  # only once this job holds the run
            with project.transaction() as conn:
                store.mark_run(conn, run_id, "running", None, total, settings.budget_usd)
        session = EvaluationSession(
            project,
            prepared,
            run_id,
            store.done_keys(project.conn, run_id),
            store.run_cost(project.conn, run_id),
            job,
            credentials,
        )
        started = time.monotonic()
        try:
            result = asyncio.run(session.run())
        except RemoteAuthError:
            _mark(project, run_id, "failed", "auth")
            raise
        except Cancelled:
            _mark(project, run_id, "cancelled", "cancelled")
            raise
        except KeyboardInterrupt:
            _mark(project, run_id, "cancelled", "interrupted")
            raise
        except BaseException:
            _mark(project, run_id, "failed", "error")
            raise
        stop = result.stop_reason
        status = "cancelled" if stop == BUDGET_STOP else "finished"
        _mark(project, run_id, status, stop)
        if stop == BUDGET_STOP:
            job.set_outcome("cancelled", "budget: stopped before exceeding it; resume with a larger --budget")
    return RunSummary(
        run_id=run_id,
        status=status,
        stop_reason=stop,
        model=prepared.model_name,
        mode=prepared.run_mode,
        total=total,
        answered=session.answered,
        errors=session.errors,
        fresh_requests=session.fresh,
        cache_hits=session.hits,
        retries=session.retries,
        cost_usd=store.run_cost(project.conn, run_id),
        elapsed_s=time.monotonic() - started,
        parse_counts=session.parse_counts,
        plan=prepared.conditions,
    )


def _mark(project: Project, run_id: int, status: str, stop_reason: str | None) -> None:
    with project.transaction() as conn:
        store.mark_run(conn, run_id, status, stop_reason)


def evaluate(project: Project, settings: RunSettings, progress: Progress | None = None) -> RunSummary:
    """Prepare and run in one call (see run_evaluation for what it raises)."""
    return run_evaluation(project, prepare_evaluation(project, settings), progress)


def list_runs(conn: sqlite3.Connection) -> list[dict]:
    """Every run with its counts (store.run_summaries). A run recorded as 'running' that no live job holds
    stopped without saying so (killed, machine off): it is shown as 'interrupted', and `--resume` continues
    it. `recorded_status` keeps what the runs table says."""
    held = {job.claim for job in list_jobs(conn, include_finished=False) if job.claim}
    runs = store.run_summaries(conn)
    for run in runs:
        run["recorded_status"] = run["status"]
        if run["status"] == "running" and run_claim(run["id"]) not in held:
            run["status"] = "interrupted"
    return runs
