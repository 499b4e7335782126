"""Running an evaluation: prepare, then run.

- `prepare_evaluation(project, settings)` (preparation.py) checks, plans and costs a run without creating a
  run row, sending a request or reading a credential;
- `run_evaluation(project, prepared, progress)` reads the credentials, creates (or resumes) the run row and
  runs it as a job every process can see (`core.jobs.registry.tracked_job`, claim `run:<id>`): its progress and
  heartbeat are in the `jobs` table, a cancel requested from the app or `spokenbench jobs --cancel` stops it
  at its next safe point, and a second process cannot work on the same run at the same time (it is refused,
  or with `wait=True` waits until the holder ends, then continues with what is still missing); each request is
  claimed too (request_claims.py), so a request another process is sending — an identical fresh run started
  at the same time — is waited for and its answer reused, never sent twice; a request pending in a provider
  batch (of any run) is not sent at all: the run stays 'created' ('batch pending') and is resumed once that
  batch is collected, from the response cache at no cost (`batches --collect` fills it; a run the session held
  while that batch was collected is filled by a second session once the first lets the run go);
- `evaluate(project, settings, progress)` does both;
- `list_runs(conn)` lists runs as a person should see them (a killed run shows as 'interrupted').
The session itself (cache, budget, requests on the shared job loop) is in session.py; the SQL in store.py."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from spokenbench.core.evaluation import store
from spokenbench.core.evaluation.adapters import credential_for
from spokenbench.core.evaluation.budget import BUDGET_STOP
from spokenbench.core.evaluation.preparation import EvaluationPreparation, RunSettings, prepare_evaluation, run_claim
from spokenbench.core.evaluation.request_claims import Waits
from spokenbench.core.evaluation.session import Credentials, EvaluationSession
from spokenbench.core.foundation.errors import Cancelled
from spokenbench.core.foundation.progress import Progress, no_progress
from spokenbench.core.jobs.registry import JobClaimed, JobProgress, list_jobs, paused_for_room, tracked_job
from spokenbench.core.jobs.remote import RemoteAuthError
from spokenbench.core.store import Project
from spokenbench.core.store import batches as batch_store

__all__ = ["RunSettings", "RunSummary", "evaluate", "list_runs", "prepare_evaluation", "run_evaluation"]

JOB_KIND = "evaluate"
ALL_FAILED = "all requests failed"  # the stop reason of a session in which no request got an answer
BATCH_PENDING = "batch pending"  # the stop reason of a run with requests left to a provider batch (as a batch run's)
WAIT_POLL_S = 0.5  # how often a waiting process asks whether the run's holder has ended
WAIT_NOTE_S = 60.0  # how often it says it is still waiting

log = logging.getLogger("spokenbench.evaluation")


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
    succeeded: int = 0  # answered in this session (from the model or the cache)
    error_kinds: dict[str, int] = field(default_factory=dict)  # this session's failed requests by kind
    error_examples: dict[str, str] = field(default_factory=dict)  # one message per kind
    waited_s: float = 0.0  # waiting for another job that held the run (wait=True)
    reused_from_other_jobs: int = 0  # answers another live job was sending at the same time: waited for, not sent
    reused_from_jobs: list[int] = field(default_factory=list)  # the ids of those jobs
    waiting_elsewhere: int = 0  # not sent: pending in a provider batch that may still answer them (resume later)
    waiting_on: list[dict] = field(default_factory=list)  # where they wait (batches.Waits.entries)

    @property
    def requests_per_s(self) -> float:
        return self.fresh_requests / self.elapsed_s if self.elapsed_s > 0 else 0.0

    @property
    def all_failed(self) -> bool:
        """Requests failed and none was answered: the run is marked failed (the CLI exits 4)."""
        return self.stop_reason == ALL_FAILED

    def failure_summary(self) -> str | None:
        """'432 request(s) failed: 432 connection failed' — None when nothing failed."""
        if not self.errors:
            return None
        kinds = ", ".join(f"{count} {kind}" for kind, count in sorted(self.error_kinds.items(), key=lambda e: -e[1]))
        return f"{self.errors} request(s) failed: {kinds}"

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


def create_prepared_run(conn, prepared: EvaluationPreparation) -> int:
    """The runs row of a prepared evaluation (online or batch), named after its model, mode and prompt unless
    the settings name it."""
    settings = prepared.settings
    return store.create_run(
        conn,
        settings.name or f"{prepared.model_name} {settings.mode} {settings.prompt}",
        prepared.model_name,
        prepared.preset.provider,
        prepared.run_mode,
        settings.prompt,
        prepared.prompt_text,
        prepared.identity,
        prepared.request_count,  # not len(prepared.jobs): a batch file's planning makes no Job per request
        settings.budget_usd,
    )


def run_evaluation(
    project: Project,
    prepared: EvaluationPreparation,
    progress: Progress | None = None,
    *,
    wait: bool = False,
    on_wait: Callable[[str], None] | None = None,
) -> RunSummary:
    """Run (or resume) a prepared evaluation. Raises Cancelled after a cancel, RemoteAuthError after a rejected
    key, JobClaimed when another live job works on the same run (unless `wait`: then it waits, telling
    `on_wait`, until that job ends or dies, and continues with whatever is still missing). `on_wait` also
    hears when requests are waited for because another job is sending them; every stored answer
    stays and the run stays resumable. A budget stop returns normally with status 'cancelled' and stop reason
    'budget'; a session in which every request failed returns with status 'failed' and stop reason
    ALL_FAILED."""
    progress = progress or no_progress()
    credentials = read_credentials(prepared)
    run_id = prepared.resume_run_id
    if run_id is None:
        with project.transaction() as conn:
            run_id = create_prepared_run(conn, prepared)
    settings = prepared.settings
    label = f"{prepared.model_name} {settings.mode} {settings.prompt} (run {run_id})"
    resuming = prepared.resume_run_id is not None
    summary = _session(project, prepared, run_id, label, progress, credentials, resuming, wait, on_wait)
    while summary.stop_reason == BATCH_PENDING and _collected_since(project, summary.waiting_on):
        # A batch this session waited on was collected while it held the run, and a collect leaves a held run
        # to its holder. Asked only once the run is let go (the collect stores the batch before it asks for
        # the run), so one of the two always fills it. A job holding it now (that collect) fills it itself.
        try:
            later = _session(project, prepared, run_id, label, progress, credentials, True, wait, on_wait)
        except JobClaimed:
            break
        summary = _combined(summary, later)
    return summary


def _session(
    project: Project,
    prepared: EvaluationPreparation,
    run_id: int,
    label: str,
    progress: Progress,
    credentials: Credentials,
    resuming: bool,
    wait: bool,
    on_wait: Callable[[str], None] | None,
) -> RunSummary:
    """One session of run `run_id`, holding the run from start to end (see run_evaluation)."""
    settings = prepared.settings
    total = len(prepared.jobs)
    with contextlib.ExitStack() as holding:
        job, waited = _hold_run(holding, project, label, progress, run_id, total, wait, on_wait)
        if resuming:  # only once this job holds the run
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
            on_note=on_wait,
        )
        started = time.monotonic()
        try:
            result = asyncio.run(session.run())
        except RemoteAuthError:
            _mark_as_it_stops(project, run_id, "failed", "auth")
            raise
        except Cancelled:
            if not job.taken_over:  # taken over by a resume of this run: the run is that job's to mark now
                _mark_as_it_stops(project, run_id, "cancelled", "cancelled")
            raise
        except KeyboardInterrupt:
            _mark_as_it_stops(project, run_id, "cancelled", "interrupted")
            raise
        except BaseException:
            _mark_as_it_stops(project, run_id, "failed", "error")
            raise
        stop = result.stop_reason
        status = "cancelled" if stop == BUDGET_STOP else "finished"
        waits = Waits()
        for (batch_id, batch_run), count in session.waiting_in_batches.items():
            waits.add(("batch", batch_id, batch_run), count)
        if stop is None and waits.count:
            status, stop = "created", BATCH_PENDING
        if stop is None and session.errors and not session.succeeded:
            status, stop = "failed", ALL_FAILED
        _mark(project, run_id, status, stop)
        summary = RunSummary(
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
            succeeded=session.succeeded,
            error_kinds=dict(session.error_kinds),
            error_examples=dict(session.error_examples),
            waited_s=waited,
            reused_from_other_jobs=session.reused_from_other_jobs,
            reused_from_jobs=session.reused_from_jobs,
            waiting_elsewhere=waits.count,
            waiting_on=waits.entries(),
        )
        if stop == BUDGET_STOP:
            job.set_outcome("cancelled", "budget: stopped before exceeding it; resume with a larger --budget")
        elif summary.all_failed:
            job.set_outcome("failed", summary.failure_summary())
        elif stop == BATCH_PENDING:
            job.set_outcome("finished", f"{waits.count} request(s) wait in provider batches: resume once collected")
    return summary


def _collected_since(project: Project, waiting_on: list[dict]) -> bool:
    """Whether a provider batch in `waiting_on` (RunSummary.waiting_on) has been collected since."""
    return bool(batch_store.collected_among(project.conn, (entry["batch_id"] for entry in waiting_on)))


def _combined(first: RunSummary, later: RunSummary) -> RunSummary:
    """The summary of two sessions of one run: the later one's state, both sessions' work."""
    return replace(
        later,
        fresh_requests=first.fresh_requests + later.fresh_requests,
        cache_hits=first.cache_hits + later.cache_hits,
        retries=first.retries + later.retries,
        elapsed_s=first.elapsed_s + later.elapsed_s,
        succeeded=first.succeeded + later.succeeded,
        errors=first.errors + later.errors,
        parse_counts=_added(first.parse_counts, later.parse_counts),
        error_kinds=_added(first.error_kinds, later.error_kinds),
        error_examples={**later.error_examples, **first.error_examples},
        waited_s=first.waited_s + later.waited_s,
        reused_from_other_jobs=first.reused_from_other_jobs + later.reused_from_other_jobs,
        reused_from_jobs=sorted(set(first.reused_from_jobs) | set(later.reused_from_jobs)),
    )


def _added(first: dict[str, int], later: dict[str, int]) -> dict[str, int]:
    return {key: first.get(key, 0) + later.get(key, 0) for key in first.keys() | later.keys()}


def _hold_run(
    stack: contextlib.ExitStack,
    project: Project,
    label: str,
    progress: Progress,
    run_id: int,
    total: int,
    wait: bool,
    on_wait: Callable[[str], None] | None,
) -> tuple[JobProgress, float]:
    """The tracked job holding run `run_id` (entered on `stack`), and the seconds spent waiting for it. A live
    holder refuses it (JobClaimed), or with `wait` is waited for — polling, so a holder that finishes,
    fails, is cancelled or dies (its claim is then taken over) lets this one go on."""
    started = time.monotonic()
    noted = None
    while True:
        try:
            job = stack.enter_context(
                tracked_job(project.path, JOB_KIND, label, progress, claim=run_claim(run_id), total=total)
            )
            return job, time.monotonic() - started
        except JobClaimed as claimed:
            if not wait:
                raise
            now = time.monotonic()
            if on_wait is not None and noted is None:
                on_wait(f"{str(claimed).split('; wait for it')[0]}; waiting until it ends (--wait) …")
                noted = now
            elif on_wait is not None and now - noted >= WAIT_NOTE_S:
                on_wait(f"still waiting for run {run_id} ({now - started:.0f} s) …")
                noted = now
        if progress.cancelled:
            raise Cancelled()
        time.sleep(WAIT_POLL_S)


def _mark_as_it_stops(project: Project, run_id: int, status: str, stop_reason: str | None) -> None:
    """`_mark` while a stop or a failure propagates: on a full disk the mark cannot be stored, and what stopped
    the run (the command's message) must not be replaced by that; the run keeps its last status until a resume."""
    try:
        _mark(project, run_id, status, stop_reason)
    except sqlite3.Error as error:
        log.warning("run %d: not marked %s (%s)", run_id, status, error)


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
    held = {job.claim for job in list_jobs(conn) if job.claim and (job.is_live or paused_for_room(job))}
    runs = store.run_summaries(conn)
    for run in runs:
        run["recorded_status"] = run["status"]
        if run["status"] == "running" and run_claim(run["id"]) not in held:
            run["status"] = "interrupted"
    return runs
