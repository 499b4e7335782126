"""The Evaluate page: launch evaluations without a terminal. The form (core/evaluation/launcher.py turns it into
RunSettings) is prepared in a QueryOp — the plan (requests, cached, estimated cost, warnings) is shown before
Start is enabled — and each run is a tracked job (`EvaluationRunOp`) that the jobs panel and other processes
see. Runs are queued and start one after another. The run list is read from the runs and jobs tables on
`changes.changed` and on every job poll, so runs started from the command line or another window appear
too; Cancel asks the run's job to stop (`request_cancel`, as `spokenbench jobs --cancel` does) and Resume
continues the same run (its stored identity), which skips every answer already stored."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QMessageBox, QVBoxLayout, QWidget

from spokenbench.app import batch_ops
from spokenbench.app.batch_ops import BATCH, BATCH_CHANGES, FILE
from spokenbench.app.jobs import confirm_resume
from spokenbench.app.operations import (
    BackgroundOp,
    JobOp,
    Operation,
    OperationRunner,
    ProjectSession,
    QueryOp,
    WriteOp,
    show_error,
)
from spokenbench.core.cli.resume import evaluation_endpoints
from spokenbench.core.evaluation import batch_files, batch_records, batch_results, batches, launcher
from spokenbench.core.evaluation.preparation import EvaluationPreparation, RunSettings, prepare_evaluation, run_claim
from spokenbench.core.evaluation.request_claims import describe_waits
from spokenbench.core.evaluation.runner import JOB_KIND, RunSummary, evaluate
from spokenbench.core.foundation.errors import InputError, SpokenBenchError
from spokenbench.core.foundation.progress import Progress
from spokenbench.core.jobs.host import job_call
from spokenbench.core.jobs.loop import offers_stop_now
from spokenbench.core.jobs.registry import JobInfo, request_cancel
from spokenbench.core.store import Project
from spokenbench.widgets.launcher_view import LauncherView, RunLine

RUN_TABLES = frozenset({"runs", "responses", "jobs"})
RUN_CHANGES = frozenset({"runs", "responses", "response_cache", "jobs"})
ENDED = ("finished", "failed", "cancelled")


class EvaluationRunOp(JobOp):
    """A run in a job process: `runner.evaluate` prepares again there (a preparation is a snapshot) and runs it.
    Planning and answering a large run is seconds of Python, which on a thread of the app kept the UI from
    reacting for up to 1.3 s at a time. `run_evaluation` records the job itself, holding the run's claim
    (`run:<id>`) so a second window or process cannot work on the same run at once; the operation does not wrap
    it in a second tracked job (one run, one row), and takes `job_id` and `run_id` from the job it records."""

    def __init__(self, session: ProjectSession, settings: RunSettings, **kwargs):
        super().__init__(
            session, job_call(evaluate, settings), kind=JOB_KIND, changes=RUN_CHANGES, tracked=False, **kwargs
        )
        self.settings = settings
        self.run_id: int | None = settings.run_id

    def _job_recorded(self, job_id: int, claim: str | None) -> None:
        super()._job_recorded(job_id, claim)
        if self.job_id == job_id and claim and claim.startswith("run:"):
            self.run_id = int(claim.removeprefix("run:"))


ASSEMBLY_CHANGES = frozenset({"assembled_inputs", "input_chunks", "jobs"})


def prepare_checked(project: Project, settings: RunSettings) -> EvaluationPreparation | launcher.RunAssembly:
    """The plan, after checking that the perturbations and orders asked for are assembled (a message naming them
    and the assemble command, rather than an empty plan); for an audio-mode run whose inputs are not assembled
    yet, what to assemble first (Start assembles it, as `spokenbench assemble` would, then starts the run)."""
    needed = launcher.run_assembly_needed(project.conn, settings)
    if needed is not None:
        return needed
    launcher.check_selection(project.conn, settings, str(project.path))
    return prepare_evaluation(project, settings)


def assembly_plan_text(needed: launcher.RunAssembly, project_dir: str) -> str:
    """The plan shown while an audio-mode run waits for its inputs: what Start assembles first."""
    lines = [
        f"This run hears assembled audio: {needed.count:,} input(s) for its items are not assembled yet "
        f"({needed.request.describe()}).",
        "Start assembles them first, in a job of its own (progress here and in the jobs panel), then prepares "
        "the run and starts it.",
        f"(The same as `{needed.request.command(project_dir)}` for these items.)",
    ]
    if needed.already_done:
        lines.append(f"{needed.already_done:,} input(s) are assembled already.")
    if needed.missing:
        lines.append(
            f"{len(needed.missing):,} input(s) cannot be built, a clip is missing (synthesize first), e.g. "
            f"{needed.missing[0]}"
        )
    return "\n".join(lines)


@dataclass
class QueuedRun:
    settings: RunSettings
    description: str


def reuse_note(summary: RunSummary) -> str:
    """What a run that waited for another job's identical requests, or left requests to a provider batch, says
    about them (empty when none)."""
    notes = []
    if getattr(summary, "reused_from_other_jobs", 0):
        jobs = ", ".join(map(str, summary.reused_from_jobs))
        notes.append(
            f"{summary.reused_from_other_jobs:,} answer(s) were reused from job(s) {jobs}, which sent the same "
            "requests at the same time; they were not sent again."
        )
    if getattr(summary, "waiting_on", None):
        notes.append(
            f"Not sent: {describe_waits(summary.waiting_on)}. Resume this run once that batch is collected: its "
            "answers then come from the response cache at no cost."
        )
    return " ".join(notes)


class EvaluatePage(QWidget):
    def __init__(self, window=None):
        super().__init__()
        self.window = window
        self.session: ProjectSession | None = None
        self.view = LauncherView()
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.view)
        self.view.set_models(launcher.model_choices())
        self.view.set_modes(launcher.mode_choices())
        self.view.set_prompts(launcher.prompt_choices())
        self.view.set_levels({})
        self.prepared: EvaluationPreparation | None = None
        self.prepared_settings: RunSettings | None = None
        self.needs_assembly: launcher.RunAssembly | None = None  # what Start assembles before the run
        self.last_assembly: Operation | None = None
        self._queued_note = False  # the plan pane says "Queued": it follows the run until it ends
        self.queue: list[QueuedRun] = []
        self.current: EvaluationRunOp | None = None  # the run this page is running
        self.finished_ops: list[EvaluationRunOp] = []
        self.runs: list[launcher.RunRow] = []
        self.jobs: list[JobInfo] = []
        self.settings_by_run: dict[int, RunSettings] = {}  # what this page ran, for resuming
        self.last_read: Operation | None = None  # the newest run-list read, for tests
        self.last_prepare: Operation | None = None
        self.last_test: Operation | None = None
        self.confirmation: QMessageBox | None = None  # the open "Resume?" dialog (a key for a new host)
        self._own_runner: OperationRunner | None = None
        self.view.prepareRequested.connect(self.prepare)
        self.view.startRequested.connect(self.start)
        self.view.testConnectionRequested.connect(self.test_connection)
        self.view.formEdited.connect(self._form_edited)
        self.view.cancelRequested.connect(self.cancel_run)
        self.view.stopNowRequested.connect(lambda run_id: self.cancel_run(run_id, now=True))
        self.view.resumeRequested.connect(self.resume_run)
        self.view.removeQueuedRequested.connect(self.remove_queued)
        self.view.runWayChanged.connect(self._way_changed)
        self.view.importResultsRequested.connect(self.ask_import_results)
        self.last_batch: Operation | None = None  # the newest batch submit or export, for tests
        self.last_import: Operation | None = None
        self._update_ways()
        self._show_queue()

    # -- the project -------------------------------------------------------------------------------

    def set_session(self, session: ProjectSession | None) -> None:
        if self.session is not None:
            try:
                self.session.changes.changed.disconnect(self._changed)
                self.session.jobs_listed.disconnect(self._jobs_listed)
            except (RuntimeError, TypeError):  # the window already deleted it
                pass
        self.session = session
        self.queue.clear()
        self.current = None
        self.runs, self.jobs = [], []
        self._forget_plan("")
        self._show_queue()
        self._show_runs()
        if session is None:
            return
        session.changes.changed.connect(self._changed)
        session.jobs_listed.connect(self._jobs_listed)
        self.jobs = list(session.jobs)
        self.reload_runs()
        QueryOp(
            session,
            lambda project, progress: launcher.condition_levels(project.conn),
            label="Reading the project's conditions",
            parent=self,
            supersede="evaluate-levels",
        ).success(self.view.set_levels).run()

    def _runner(self) -> OperationRunner:
        if self.session is not None:
            return self.session.runner
        if self.window is not None and getattr(self.window, "runner", None) is not None:
            return self.window.runner
        if self._own_runner is None:
            self._own_runner = OperationRunner(self)
        return self._own_runner

    def _changed(self, tables: set[str]) -> None:
        if tables & RUN_TABLES:
            self.reload_runs()

    def reload_runs(self) -> Operation | None:
        if self.session is None or self.session.closed:
            return None
        self.last_read = (
            QueryOp(
                self.session,
                lambda project, progress: launcher.run_rows(project.conn),
                label="Reading the runs",
                parent=self,
                supersede="evaluate-runs",
            )
            .success(self._runs_read)
            .run()
        )
        return self.last_read

    def _runs_read(self, runs: list[launcher.RunRow]) -> None:
        self.runs = runs
        self._show_runs()

    def _jobs_listed(self, jobs: list[JobInfo]) -> None:
        self.jobs = jobs
        self._show_runs()

    # -- the form and the plan ---------------------------------------------------------------------

    def _form_edited(self) -> None:
        self._update_ways()
        if self.prepared is not None:
            self._forget_plan("The form changed: prepare again to see the plan before starting.")

    def _forget_plan(self, text: str) -> None:
        self.prepared = self.prepared_settings = self.needs_assembly = None
        self._queued_note = False
        self.view.set_plan(text, ready=False)
        self._show_start_label()

    def prepare(self) -> Operation | None:
        """Plan and cost the form's run on the read pool; Start is enabled once the plan is shown."""
        if self.session is None:
            self.view.set_plan("Open a project first.", ready=False)
            return None
        try:
            settings = launcher.settings_from_form(self.view.form())
        except SpokenBenchError as error:
            self.view.set_plan(f"Cannot prepare: {error}", ready=False)
            return None
        self.view.set_plan("Preparing…", ready=False)
        self.view.prepare_button.setEnabled(False)
        operation = QueryOp(
            self.session,
            lambda project, progress: prepare_checked(project, settings),
            label="Preparing the evaluation",
            parent=self,
            supersede="evaluate-prepare",
        )
        operation.success(lambda prepared: self._prepared(settings, prepared)).failure(self._prepare_failed)
        operation.finished.connect(lambda: self.view.prepare_button.setEnabled(True))
        self.last_prepare = operation.run()
        return self.last_prepare

    def _prepared(self, settings: RunSettings, prepared: EvaluationPreparation | launcher.RunAssembly) -> None:
        self._queued_note = False
        if isinstance(prepared, launcher.RunAssembly):
            self.prepared, self.prepared_settings, self.needs_assembly = None, settings, prepared
        else:
            self.prepared, self.prepared_settings, self.needs_assembly = prepared, settings, None
        self._show_plan()
        self._show_start_label()

    def _show_plan(self) -> None:
        if self.needs_assembly is not None:
            project_dir = str(self.session.path) if self.session is not None else "DIR"
            self.view.set_plan(assembly_plan_text(self.needs_assembly, project_dir), ready=True)
            return
        prepared = self.prepared
        if prepared is None:
            return
        lines = launcher.plan_lines(prepared)
        way = self.view.run_way()
        if way == BATCH:
            provider = batch_ops.batch_provider(prepared.model_name) or "?"
            cost = prepared.estimated_cost_usd
            at_batch = "no price known" if cost is None else f"at most ${cost * batch_records.BATCH_DISCOUNT:.4f}"
            lines.insert(
                0,
                f"Batch ({provider}): {at_batch} at the batch price (half the online price); answers within 24 h, "
                "collected in the jobs panel.",
            )
        elif way == FILE:
            lines.insert(
                0,
                "Export batch file: the requests are written for vLLM's run_batch (no answer is requested now); "
                "import its output with Import results…",
            )
        self.view.set_plan("\n".join(lines), ready=True)

    def _prepare_failed(self, error: BaseException) -> None:
        if isinstance(error, SpokenBenchError):
            self.view.set_plan(f"Cannot prepare: {error}", ready=False)
        else:
            self.view.set_plan(f"Preparing failed: {type(error).__name__}: {error}", ready=False)

    # -- the queue ---------------------------------------------------------------------------------

    def start(self) -> None:
        """Queue the prepared run (it starts at once when nothing else of this page runs), or submit it as
        provider batch jobs, or export it as a batch file, as the form's "How to run" says."""
        if self.prepared_settings is None:
            return
        if self.needs_assembly is not None:
            self.assemble_then_start(self.prepared_settings, self.needs_assembly)
            return
        way = self.view.run_way()
        if way == BATCH:
            self.submit_batch(self.prepared_settings)
            return
        if way == FILE:
            path = self.view.ask_batch_file_path(self._suggested_batch_file())
            if path:
                self.export_batch_file(self.prepared_settings, path)
            return
        self.enqueue(self.prepared_settings)
        self._forget_plan("Queued. Prepare another run to queue it after this one.")
        self._queued_note = True

    def assemble_then_start(self, settings: RunSettings, needed: launcher.RunAssembly) -> Operation | None:
        """Assemble the run's missing inputs in a job process (`launcher.assemble_for_run`, which records its own
        'assemble' job as the CLI's command does), showing its progress; then prepare again and start."""
        if self.session is None or self.session.closed:
            return None
        description = launcher.describe_settings(settings)
        operation = JobOp(
            self.session,
            job_call(launcher.assemble_for_run, settings),
            kind="assemble",
            tracked=False,  # run_assembly records its own job
            changes=ASSEMBLY_CHANGES,
            label=f"Assembling {needed.count:,} inputs for: {description}",
            parent=self,
            error_title="The inputs were not assembled",
        )
        operation.on_progress(
            lambda done, total, message: self.view.set_plan(
                f"Assembling the run's inputs: {done:,} / {total or needed.count:,}"
                + (f" · {message}" if message else "")
                + "\nThe run is prepared and started when they are assembled.",
                ready=False,
            )
        )
        operation.success(lambda result: self._assembled(settings, result))
        operation.failure(lambda error: self.view.set_plan(f"The inputs were not assembled: {error}", ready=False))
        self._forget_plan(f"Assembling {needed.count:,} inputs ({needed.request.describe()})…")
        self.view.prepare_button.setEnabled(False)
        operation.finished.connect(lambda: self.view.prepare_button.setEnabled(True))
        self.last_assembly = operation.run()
        return self.last_assembly

    def _assembled(self, settings: RunSettings, result: tuple[int, list[str]]) -> None:
        assembled, skipped = result
        said = f"Assembled {assembled:,} input(s)."
        if skipped:
            said += f" {len(skipped):,} could not be built (a clip is missing or damaged), e.g. {skipped[0]}."

        def prepared(preparation) -> None:
            if isinstance(preparation, launcher.RunAssembly):  # still missing: say so rather than loop
                self._forget_plan(f"{said}\nStill not assembled: {preparation.count:,} input(s); see the jobs panel.")
                return
            self._prepared(settings, preparation)
            online = self.view.run_way() not in (BATCH, FILE)
            self.start()  # as the run's way says: queued, submitted as batch jobs, or exported
            if online:
                self.view.set_plan(f"{said} Queued: {launcher.describe_settings(settings)}.", ready=False)
                self._queued_note = True

        if self.session is None or self.session.closed:
            return
        self.view.set_plan(f"{said} Preparing the run…", ready=False)
        self.last_prepare = (
            QueryOp(
                self.session,
                lambda project, progress: prepare_checked(project, settings),
                label="Preparing the evaluation",
                parent=self,
                supersede="evaluate-prepare",
            )
            .success(prepared)
            .failure(self._prepare_failed)
            .run()
        )

    def enqueue(self, settings: RunSettings) -> None:
        self.queue.append(QueuedRun(settings, launcher.describe_settings(settings)))
        self._start_next()
        self._show_queue()

    def remove_queued(self, position: int) -> None:
        if 0 <= position < len(self.queue):
            del self.queue[position]
            self._show_queue()

    def _start_next(self) -> None:
        if self.current is not None or not self.queue or self.session is None or self.session.closed:
            return
        entry = self.queue.pop(0)
        operation = EvaluationRunOp(
            self.session,
            entry.settings,
            label=f"Evaluating: {entry.description}",
            parent=self,
            error_title="The evaluation stopped",
        )
        operation.success(self._run_finished)
        operation.on_progress(lambda *_: self._show_runs())
        operation.finished.connect(lambda op=operation: self._run_ended(op))
        self.current = operation
        operation.run()
        self._show_queue()
        self._show_runs()

    def _run_finished(self, summary: RunSummary) -> None:
        if self.current is not None:
            self.current.run_id = summary.run_id
        if reuse_note(summary) and self.prepared is None:  # say who paid, unless a plan is shown
            self.view.set_plan(f"Run {summary.run_id}: {reuse_note(summary)}", ready=False)

    def _run_ended(self, operation: EvaluationRunOp) -> None:
        if operation.run_id is not None:
            self.settings_by_run[operation.run_id] = operation.settings
        if self.current is operation:
            self.current = None
            self.finished_ops.append(operation)
        if self._queued_note and not self.queue:  # the pane said "Queued": now say how the run ended
            summary = operation.result if operation.status == "succeeded" else None
            ended = getattr(summary, "status", None) or {"succeeded": "finished"}.get(
                operation.status, operation.status
            )
            run = f"Run {operation.run_id}" if operation.run_id is not None else "The run"
            reused = f" {reuse_note(summary)}" if summary is not None and reuse_note(summary) else ""
            self._forget_plan(f"{run} {ended}.{reused} Prepare a run to start another.")
        self.reload_runs()
        self._start_next()
        self._show_queue()

    def _show_queue(self) -> None:
        if self.current is not None:
            status = f"Running: {self.current.label.removeprefix('Evaluating: ')}."
        else:
            status = "Nothing running."
        status += f" {len(self.queue)} queued." if self.queue else ""
        self.view.set_queue([entry.description for entry in self.queue], status)
        self._show_start_label()

    def _show_start_label(self) -> None:
        way = self.view.run_way()
        if way == BATCH:
            label = "Submit batch"
        elif way == FILE:
            label = "Export…"
        else:
            label = "Add to queue" if self.current is not None else "Start"
        if self.needs_assembly is not None:
            label = f"Assemble, then {label[0].lower()}{label[1:]}"
        self.view.set_start_label(label)

    # -- large runs: provider batches, batch files (issue 14) --------------------------------------------

    def _update_ways(self) -> None:
        self.view.set_run_ways(batch_ops.run_ways(self.view.form()))
        self._show_start_label()

    def _way_changed(self, way: str) -> None:
        self._show_start_label()
        self._show_plan()

    def _suggested_batch_file(self) -> str:
        prepared = self.prepared
        name = (prepared.model_name if prepared else "requests").replace(":", "-").replace("/", "-")
        folder = self.session.path.parent if self.session is not None else os.getcwd()
        return os.path.join(str(folder), f"{name}-batch-requests.jsonl")

    def submit_batch(self, settings: RunSettings) -> Operation | None:
        """Prepare again on a worker (a preparation is a snapshot) and submit the plan as provider batch jobs."""
        if self.session is None or self.session.closed:
            return None
        provider = batch_ops.batch_provider(settings.model)
        if provider is None:
            self.view.set_plan(f"Cannot submit: {settings.model} has no batch API here.", ready=False)
            return None
        description = launcher.describe_settings(settings)

        operation = JobOp(
            self.session,
            job_call(batches.submit_batches_for_settings, settings, provider),
            kind=batches.JOB_KIND_SUBMIT,
            tracked=False,  # submit_batches records its own job
            changes=BATCH_CHANGES,
            label=f"Submitting {provider} batch jobs: {description}",
            parent=self,
            error_title="The batch was not submitted",
        )
        operation.success(self._batch_submitted)
        self._forget_plan(f"Submitting {description} as {provider} batch jobs…")
        self.last_batch = operation.run()
        return self.last_batch

    def _batch_submitted(self, summary: batches.BatchSubmission) -> None:
        jobs = len(summary.batch_ids)
        cost = "" if summary.estimated_cost_usd is None else f", at most ${summary.estimated_cost_usd:.4f}"
        text = [
            f"Submitted run {summary.run_id} to {summary.provider}: {summary.lines:,} requests in {jobs} batch "
            f"job{'s' if jobs != 1 else ''}{cost} at the batch price.",
        ]
        if summary.cached or summary.already_stored or summary.waiting_elsewhere:
            text.append(
                f"Not sent: {summary.cached:,} answered from the cache, {summary.already_stored:,} already stored, "
                f"{summary.waiting_elsewhere:,} waiting elsewhere."
            )
        if summary.waiting_on:
            text.append(
                f"{describe_waits(summary.waiting_on)}: not submitted again. Once that is collected, resume this run "
                "to fill them from the response cache at no cost."
            )
        if summary.not_sent:
            text.append(
                f"{summary.not_sent:,} request{' was' if summary.not_sent == 1 else 's were'} left to a batch that was "
                "collected meanwhile, which did not answer: resume this run to send "
                f"{'it' if summary.not_sent == 1 else 'them'}."
            )
        text.append("The jobs panel shows the jobs' state and collects their answers when the provider finishes.")
        self.view.set_plan("\n".join(text), ready=False)

    def export_batch_file(self, settings: RunSettings, path: str) -> Operation | None:
        """Write the OpenAI batch-format request file for the run on a worker, with progress and cancel."""
        if self.session is None or self.session.closed:
            return None
        description = launcher.describe_settings(settings)
        operation = JobOp(
            self.session,
            job_call(batch_files.write_batch_file_for_settings, settings, path),
            kind="batch-file",
            changes=BATCH_CHANGES,
            label=f"Exporting a batch file: {description}",
            parent=self,
            error_title="The batch file was not written",
        )
        operation.success(self._batch_file_written)
        self._forget_plan(f"Writing the batch file {path}…")
        self.last_batch = operation.run()
        return self.last_batch

    def _batch_file_written(self, result: tuple[batch_files.BatchFileSummary, str]) -> None:
        summary, model_name = result
        model = model_name.split(":", 1)[-1]
        output = os.path.join(os.path.dirname(summary.path), "results.jsonl")
        self.view.set_plan(
            f"Wrote {summary.lines:,} requests ({summary.bytes / 1e6:.1f} MB) of run {summary.run_id} to "
            f"{summary.path} in {summary.elapsed_s:.1f} s"
            + (f"; {summary.cached:,} answered from the cache were not written" if summary.cached else "")
            + ".\n\nRun it with vLLM on your GPUs:\n"
            f"  python -m vllm.entrypoints.openai.run_batch -i {summary.path} -o {output} --model {model}\n"
            "then Import results… with the output file.",
            ready=False,
        )

    def ask_import_results(self) -> Operation | None:
        if self.session is None:
            return None
        path = self.view.ask_results_path()
        return self.import_results(path) if path else None

    def import_results(self, path: str) -> Operation | None:
        """Import a run_batch output file on a worker; a refused file is a dialog naming its bad lines."""
        if self.session is None or self.session.closed:
            return None
        operation = JobOp(
            self.session,
            job_call(batch_results.import_results, path),
            kind="import-results",
            changes=BATCH_CHANGES,
            label=f"Importing batch results from {os.path.basename(path)}",
            parent=self,
            error_title="The results were not imported",
        )
        operation.success(lambda summary: self._results_imported(path, summary))
        operation.failure(lambda error: self._import_refused(path, error))
        self.last_import = operation.run()
        return self.last_import

    def _results_imported(self, path: str, summary: batch_results.ImportSummary) -> None:
        runs = ", ".join(map(str, summary.runs)) or "none"
        self.view.set_plan(
            f"Imported {os.path.basename(path)}: {summary.lines:,} lines, {summary.answered:,} answered, "
            f"{summary.failed:,} failed, {summary.skipped:,} already answered (runs {runs}).",
            ready=False,
        )
        self.reload_runs()

    def _import_refused(self, path: str, error: BaseException) -> QMessageBox:
        """A readable dialog: the file's bad lines (a validation failure), or the reason; never a traceback."""
        name = os.path.basename(path)
        if isinstance(error, InputError):
            count = len(error.problems)
            text = (
                f"{name} was not imported: {count} line{'s' if count != 1 else ''} cannot be used, and nothing was "
                "stored. Fix or remove them and import the file again."
            )
            details = str(error)
        elif isinstance(error, SpokenBenchError):
            text, details = f"{name} was not imported: {error}", ""
        else:
            text, details = f"{name} was not imported: {type(error).__name__}: {error}", ""
        box = QMessageBox(
            QMessageBox.Icon.Warning, "The results were not imported", text, QMessageBox.StandardButton.Ok, self
        )
        if details:
            box.setInformativeText("\n".join(details.splitlines()[:6]))
            box.setDetailedText(details)
        box.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        box.open()
        self.last_refusal = box
        return box

    # -- the runs ----------------------------------------------------------------------------------

    def live_job(self, run_id: int) -> JobInfo | None:
        claim = run_claim(run_id)
        return next((job for job in self.jobs if job.claim == claim and job.is_live), None)

    def _show_runs(self) -> None:
        self.view.set_runs([self._line(run) for run in self.runs])

    def _line(self, run: launcher.RunRow) -> RunLine:
        own = self.current if self.current is not None and self.current.run_id == run.run_id else None
        job = self.live_job(run.run_id)
        if job is not None and run.status in ENDED and (own is None or not own.is_running):
            job = None  # the runs table, read after the job list, already says it ended
        status = run.shown_status
        done, total, message = run.responses - run.errors, run.total, None
        if job is not None:
            status = "cancelling" if job.cancel_requested else "running"
            done, total, message = job.done, job.total or run.total, job.message
        if own is not None and own.is_running and own.total:
            done, total, message = own.done, own.total, own.message
            if own.status == "cancelling" and status == "running":
                status = "cancelling"
        spent = run.cost_usd if not run.simulated else None
        progress = launcher.progress_text(done, total, message, run.error_kinds, spent)
        errors = ", ".join(f"{count} {kind}" for kind, count in run.error_kinds.items()) if run.errors else ""
        live = job is not None or (own is not None and own.is_running)
        # The job says it waits for answers already sent, whoever cancelled it (this page, the jobs panel, a CLI)
        stopped_now = (job is not None and job.stop_now_requested) or (own is not None and own.stopping_now)
        stoppable_now = live and offers_stop_now(message) and not stopped_now
        if stoppable_now:
            status = "cancelling"
        model = run.model + (" (simulated)" if run.simulated and "simulated" not in run.model else "")
        return RunLine(
            run_id=run.run_id,
            title=f"Run {run.run_id}: {run.name or run.model}",
            model=model,
            mode=(run.simulates_mode or run.mode) if run.simulated else run.mode,  # the model cell says simulated
            prompt=run.prompt,
            status=status,
            done=done,
            total=total or 0,
            progress=progress,
            errors=errors,
            spent="simulated, $0" if run.simulated else f"${run.cost_usd:.4f}",
            live=live,
            cancellable=live and status == "running",
            stoppable_now=stoppable_now,
            resumable=not live and run.resumable and not self._queued_run(run.run_id),
            simulated=run.simulated,
        )

    def _queued_run(self, run_id: int) -> bool:
        return any(entry.settings.run_id == run_id for entry in self.queue)

    def cancel_run(self, run_id: int, now: bool = False) -> Operation | None:
        """Ask the run's job — in this window or any other process — to stop at its next safe point, waiting for
        the answers to requests already sent unless `now` (Stop Now)."""
        if self.session is None:
            return None
        job = self.live_job(run_id)
        if job is None:
            own = self.current
            if own is not None and own.run_id == run_id:
                if now:
                    own.stop_now()
                else:
                    own.cancel()
            return None
        return WriteOp(
            self.session,
            lambda project, job_id=job.id: request_cancel(project.conn, job_id, now=now),
            changes={"jobs"},
            label=f"{'Stopping' if now else 'Cancelling'} run {run_id}",
            parent=self,
            error_title="Cannot cancel the run",
        ).run()

    def resume_run(self, run_id: int) -> Operation | None:
        """Queue the same run again: its stored identity gives the settings (else what this page ran it with);
        preparing skips every answer already stored."""
        if self.session is None:
            return None
        remembered = self.settings_by_run.get(run_id)

        def settings_of(project: Project, progress: Progress) -> RunSettings:
            try:
                return launcher.settings_for_run(project.conn, run_id)
            except SpokenBenchError:
                if remembered is None:
                    raise
                return launcher.resume_settings(remembered, run_id)

        return (
            QueryOp(self.session, settings_of, label=f"Reading run {run_id}", parent=self, error_title="Cannot resume")
            .success(lambda settings: self._confirm_resume(run_id, settings))
            .run()
        )

    def _confirm_resume(self, run_id: int, settings: RunSettings) -> None:
        """The run's endpoint comes from the project folder: a key for a host this machine has not sent one to is
        sent only after a yes (core.cli.resume's rule for every resume)."""
        try:
            endpoints = evaluation_endpoints(settings)
        except SpokenBenchError as error:
            show_error(self, error, "Cannot resume")
            return
        hosts = "\n".join(f"talks to {e.host}; {'sends ' + e.key if e.key else 'sends no key'}" for e in endpoints)

        def answered(accepted: bool) -> None:
            self.confirmation = None
            if accepted:
                self.enqueue(settings)

        self.confirmation = confirm_resume(
            self, f"Resume run {run_id} ({settings.model})?", hosts, endpoints, answered, always=False
        )

    # -- a custom endpoint ---------------------------------------------------------------------------

    def test_connection(self) -> Operation | None:
        """GET BASE_URL/models with the key from the named variable, in a BackgroundOp."""
        form = self.view.form()
        base_url, model, variable = form.custom_base_url, form.custom_model.strip(), form.custom_key_variable.strip()
        self.view.set_test_result("Testing…", busy=True)
        check: Callable[[Progress], str] = lambda progress: launcher.check_connection(  # noqa: E731
            base_url, model or None, launcher.endpoint_key(variable)
        )
        tested = (form.custom_provider, base_url, model, variable)

        def answer(text: str) -> None:  # about the server tested: not shown once the form names another one
            now = self.view.form()
            current = (
                now.custom_provider,
                now.custom_base_url,
                now.custom_model.strip(),
                now.custom_key_variable.strip(),
            )
            self.view.set_test_result(text if current == tested else "")

        operation = BackgroundOp(self._runner(), check, label="Testing the endpoint", parent=self)
        operation.success(lambda text: answer(text.capitalize()))
        operation.failure(lambda error: answer(f"Failed: {error}"))
        operation.finished.connect(lambda: self.view.test_button.setEnabled(True))
        self.last_test = operation.run()
        return self.last_test
