"""The offline demo project: a small trilingual benchmark written for this tool, with hand-made
spoken-readable rewrites (a few flagged for review), gender probes, espeak-ng audio (two voices for every part, and
for the gender probes' questions two voices per gender plus the neutralized approximation), a
rating queue, runs of three simulated listeners with different bias profiles, and the gender study's runs (simulated
listeners with and without a male-oriented preference and a text backbone, in the binary and neutral-option settings,
and on the gender-neutralized voices) — everything the app and the metrics need, with no network."""

from __future__ import annotations

import asyncio
import contextlib
import importlib.resources
import json
import os
import shutil
import threading
from pathlib import Path
from typing import TYPE_CHECKING

from spokenbench.core.audio.clip_workers import ClipWorkers
from spokenbench.core.audio.synthesis import plan_synthesis, run_synthesis
from spokenbench.core.audio.tts import get_backend
from spokenbench.core.domain.items import option_part
from spokenbench.core.evaluation.simulated import GENDER_PROFILES, GENDER_STUDY_PROMPTS
from spokenbench.core.foundation.collection import automatic_collection_paused
from spokenbench.core.foundation.errors import ProjectError, SpokenBenchError
from spokenbench.core.foundation.progress import Progress, no_progress
from spokenbench.core.importers import ImportOptions, import_files
from spokenbench.core.store import Project
from spokenbench.core.store.items import iter_items
from spokenbench.core.store.rewrites import add_rewrite

if TYPE_CHECKING:
    from spokenbench.core.evaluation.preparation import RunSettings

DEMO_MCQ = "demo_mcq.jsonl"
DEMO_GENDER_PROBES = "demo_gender_probes.jsonl"
DEMO_SOURCE = "demo"
DEMO_GENDER_SOURCE = "demo-gender"


@contextlib.contextmanager
def demo_file(name: str):
    with importlib.resources.as_file(importlib.resources.files("spokenbench.resources") / "demo" / name) as path:
        yield path


def build_demo(
    path: str | Path, progress: Progress | None = None, real: bool = False, workers: ClipWorkers | None = None
) -> Path:
    """Build the demo in a sibling temp folder and rename it into place, so a kill never leaves half a demo.
    `real`: also the real model's run (core/evaluation/real_demo.py), checked installed before anything is built.
    `workers`: espeak-ng's speech workers when the caller started them before importing this module (the CLI does:
    they load while it imports); the build closes them. Started here otherwise."""
    progress = progress or no_progress()
    if real:
        from spokenbench.core.evaluation.real_demo import check_real_demo_ready

        check_real_demo_ready()
    target = Path(path)
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        raise ProjectError(f"{target} already exists and is not empty; choose a new folder for the demo")
    staging = target.with_name(f".{target.name}.building-{os.getpid()}")
    shutil.rmtree(staging, ignore_errors=True)
    try:
        # the build makes many short-lived acyclic objects (rows, requests, futures): collector passes over them
        # all cost ~0.08 s of CPU and free nothing reference counting would not
        with automatic_collection_paused(), Project.create(staging) as project:
            _fill(project, progress, workers or ClipWorkers(get_backend("espeak"), in_processes=True))
            if real:
                from spokenbench.core.evaluation.real_demo import REAL_LABEL, add_real_demo_run

                progress.report(6, 7, f"running {REAL_LABEL}")
                add_real_demo_run(project, progress.sub_task())
        if target.exists():
            target.rmdir()
        os.replace(staging, target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return target


def _fill(project: Project, progress: Progress, workers: ClipWorkers) -> None:
    """The speech workers were started first: they load espeak-ng while the questions are imported. Whatever needs
    no clip then goes on a thread alongside synthesis, where the parent mostly waits for its workers: the simulated
    listeners' runs that hear no audio and the demo rewrites' flagging and reviews, with the modules they and the
    build's last steps import — none of it on the way to the first clip, and little after the last. Once the clips
    are stored, that thread runs the listeners on the neutralized question clips while this one adds the rating
    queue. Runs, jobs and every other row keep the ids and contents one step after another gives
    (tests/core/test_demo_overlap.py)."""
    with workers, _RunsAlongside(project.path, progress) as alongside:
        _import_with_rewrites(project, progress)
        progress.report(3, 6, "synthesizing offline speech")
        _synthesize_offline(project, progress, workers, alongside.synthesis_started)
        alongside.synthesis_started.set()  # had it nothing to report, its job's row is there now all the same
        alongside.clips_stored.set()
        workers.close_soon()  # the processes exit while the rest is built
        progress.report(4, 6, "adding the QC state")
        alongside.wait(progress, alongside.reviews_added)  # in the order one step after another adds them
        from spokenbench.core.qc.demo import add_demo_rating_queue

        add_demo_rating_queue(project, alongside.reviews, progress.sub_task())
        progress.report(5, 6, "finishing the simulated listeners' runs")
        alongside.wait(progress)
    _declare_backbones(project, GENDER_PROFILES, DEMO_GENDER_BACKBONE)
    progress.report(6, 6, "demo ready")


def _demo_listener_runs() -> tuple[list[RunSettings], list[RunSettings]]:
    """The demo's simulated runs in the order one step after another makes them — the three multiple-choice
    listeners, then the gender study's (run_simulated_gender_study) — split into those that need no clips and, last,
    those on the neutralized question clips."""
    from spokenbench.core.evaluation.demo import simulated_demo_runs

    runs = simulated_demo_runs() + gender_study_runs(
        GENDER_PROFILES, DEMO_GENDER_BACKBONE, DEMO_GENDER_PROMPTS, neutralized_prompts=DEMO_NEUTRALIZED_PROMPTS
    )
    first_on_clips = next(i for i, run in enumerate(runs) if run.plan.voices == "neutralized")
    return runs[:first_on_clips], runs[first_on_clips:]


class _RunsAlongside:
    """The build's clip-free work in order on a thread of its own (with its own connection), once the synthesis
    job's row exists (so job ids stay in the serial order): the runs that hear no audio, the demo rewrites' reviews
    (`reviews_added`), the imports the build's last steps need; then the runs on the clips once they are stored. It
    reports nothing (two threads would garble one progress bar) but says the jobs it records; it stops at its next
    request when the build fails or is cancelled."""

    def __init__(self, project_path: Path, progress: Progress):
        self.synthesis_started = threading.Event()
        self.clips_stored = threading.Event()
        self.reviews_added = threading.Event()
        self.reviews = None  # add_demo_reviews' report
        self.progress = Progress(None, threading.Event(), progress.job_recorded)
        self.error: BaseException | None = None
        self.thread = threading.Thread(
            target=self._run, args=(project_path,), name="spokenbench-demo-listeners", daemon=True
        )

    def _run(self, project_path: Path) -> None:
        try:
            self._wait_for(self.synthesis_started)
            from spokenbench.core.evaluation.demo import evaluate_runs

            audio_free, on_clips = _demo_listener_runs()
            with Project.open(project_path) as project:
                evaluate_runs(project, audio_free, self.progress)
                from spokenbench.core.qc.demo import add_demo_reviews

                self.reviews = add_demo_reviews(project, self.progress)
                self.reviews_added.set()
                import spokenbench.core.metrics.gender_backbones  # noqa: F401 - for _declare_backbones, here in the clips' shadow

                self._wait_for(self.clips_stored)
                evaluate_runs(project, on_clips, self.progress)
        except BaseException as error:  # noqa: BLE001 - handed to the build's thread by `wait`
            self.error = error

    def _wait_for(self, event: threading.Event) -> None:
        while not event.wait(0.05):
            self.progress.check_cancelled()

    def wait(self, progress: Progress, until: threading.Event | None = None) -> None:
        """Until the thread has done its work (`until` set, or all of it); a cancel of `progress` reaches it; its
        error is raised here."""
        while self.thread.is_alive() and not (until is not None and until.is_set()):
            if progress.cancelled:
                self.progress.cancel()
            self.thread.join(0.05)
        if self.error is not None:
            raise self.error

    def __enter__(self) -> _RunsAlongside:
        self.thread.start()
        return self

    def __exit__(self, *_exc) -> None:
        self.progress.cancel()  # a no-op after `wait`; on a failure or Ctrl-C the runs stop at once
        self.thread.join()


def _import_with_rewrites(project: Project, progress: Progress) -> None:
    with demo_file(DEMO_MCQ) as mcq_path, demo_file(DEMO_GENDER_PROBES) as probes_path:
        progress.report(0, 6, "importing demo questions")
        import_files(
            project,
            [mcq_path],
            "mcq",
            ImportOptions(source=DEMO_SOURCE, ignore_columns=frozenset({"rewrite"})),
        )
        progress.report(1, 6, "importing gender probes")
        import_files(project, [probes_path], "gender-probe", ImportOptions(source=DEMO_GENDER_SOURCE))
        progress.report(2, 6, "adding spoken-readable rewrites")
        rewrites = {}
        for line in mcq_path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                row = json.loads(line)
                rewrites[(row["id"], row["language"])] = row["rewrite"]
    with project.transaction() as conn:
        for item_id, item in iter_items(conn, where="source = ?", params=(DEMO_SOURCE,)):
            rewrite = rewrites[(item.source_id, item.language)]
            add_rewrite(conn, item_id, "question", rewrite["question"], "demo", "accepted", "demo-author")
            for option, text in zip(item.options, rewrite["options"]):
                add_rewrite(conn, item_id, option_part(option.letter), text, "demo", "accepted", "demo-author")


# The gender study's demo runs (issue 12 item 8): the 12 probes heard by a male-leaning and a gender-balanced
# simulated listener and read as text by the gender-balanced one, the backbone of both (pairs declared in the
# project: a balanced backbone under a male-leaning speech model, as the paper compares SpeechLMs with their LLMs),
# under the paper's binary, neutral-option and free-form prompts (every probe has the paper's two options; the
# neutral-option prompt adds "Cannot be determined", the free-form prompt gives none and the simulated listeners
# answer with an option's words, so J_s, Δ_s and s are computed on simulated answers — J_s and s with the optional
# sentence encoder, left out with a note without it). The backbone is not one of the multiple-choice listeners, so
# their runs keep their plain names in the Results panels. The input-level experiment (the paper's
# Section 5, Table 4): both speech listeners also answer the probes' gender-neutralized question clips (the
# neutralized approximation of one male and one female voice, below) under the binary prompt, their κ against the
# backbone's binary answers. Metadata only (no audio is heard), 3 x 156 + 48 answers.
DEMO_GENDER_PROMPTS = ("gender-paper", "gender-paper-neutral", "gender-paper-open")
DEMO_NEUTRALIZED_PROMPTS = ("gender-paper",)
DEMO_GENDER_BACKBONE = "gender-balanced"


# The gender probes' questions are also spoken by a second voice per gender and by the neutralized approximation
# (core/audio/neutralize.py) of the first, in American English: the gender paper hears only the question (the
# options are read as text), and one accent keeps the demo's build time down.
DEMO_PROBE_VOICES = ("espeak-male-2", "espeak-female-2", "espeak-male-neutral-approx", "espeak-female-neutral-approx")
DEMO_PROBE_ACCENTS = ("american",)


def _synthesize_offline(project: Project, progress: Progress, workers: ClipWorkers, started: threading.Event) -> None:
    """espeak-ng audio for every item part and instruction token in the default voices (one per gender), and
    the gender probes' questions in the extra probe voices; one synthesis job for both, on every core. `started` is
    set at its first report, made once its job's row exists."""
    backend = workers.backend
    plan = plan_synthesis(project.conn, backend)
    probes = plan_synthesis(
        project.conn,
        backend,
        voices=list(DEMO_PROBE_VOICES),
        accents=list(DEMO_PROBE_ACCENTS),
        parts=("questions",),
        kinds=("gender-probe",),
    )
    plan.jobs += probes.jobs
    report = asyncio.run(run_synthesis(project, plan, progress.sub_task(lambda *_: started.set()), workers=workers))
    if report.failed:
        raise SpokenBenchError(f"the offline demo audio failed for {report.failed} clips: {report.failures[0]}")


def run_simulated_gender_study(
    project,
    speech_profiles: tuple[str, ...] = GENDER_PROFILES,
    backbone_profile: str | None = "steady",
    prompts: tuple[str, ...] = GENDER_STUDY_PROMPTS,
    seed: int = 0,
    declare_backbones: bool = True,
    progress=None,
    neutralized_prompts: tuple[str, ...] = (),
) -> list:
    """The gender study run offline with simulated listeners: every gender probe of `project`, spoken (mode
    audio+text-options: the listener's grid of accents × both voice genders) to each speech profile and read (mode
    text) by the backbone profile, under each prompt (the paper's binary, neutral-option and free-form prompts by
    default). With `declare_backbones` each speech listener is paired with the backbone in the project
    (`spokenbench backbone`), so `spokenbench report DIR --kind gender-probe` pairs them without flags. Under each of
    `neutralized_prompts` each speech profile also answers the project's gender-neutralized question clips
    (`--voice-kind neutralized`: the paper's Section 5, Table 4; the clips must exist). Returns the
    runs' summaries (core.evaluation.runner.RunSummary). Needs no audio and no network; reusable by the demo and
    the app."""
    from spokenbench.core.evaluation.demo import evaluate_runs

    runs = gender_study_runs(speech_profiles, backbone_profile, prompts, seed, neutralized_prompts)
    summaries = evaluate_runs(project, runs, progress, "gender study runs ready")
    if declare_backbones and backbone_profile:
        _declare_backbones(project, speech_profiles, backbone_profile)
    return summaries


def gender_study_runs(
    speech_profiles: tuple[str, ...],
    backbone_profile: str | None,
    prompts: tuple[str, ...],
    seed: int = 0,
    neutralized_prompts: tuple[str, ...] = (),
) -> list[RunSettings]:
    """The runs of run_simulated_gender_study, in its order: the speech listeners, the backbone, and last the runs
    on the neutralized question clips (the only ones that need clips)."""
    from spokenbench.core.evaluation.plans import PlanOptions
    from spokenbench.core.evaluation.preparation import RunSettings

    runs = [(f"simulated:{p}", "audio+text-options", prompt, "original") for prompt in prompts for p in speech_profiles]
    if backbone_profile:
        runs += [(f"simulated:{backbone_profile}", "text", prompt, "original") for prompt in prompts]
    runs += [
        (f"simulated:{p}", "audio+text-options", prompt, "neutralized")
        for prompt in neutralized_prompts
        for p in speech_profiles
    ]
    return [
        RunSettings(
            model=model,
            mode=mode,
            prompt=prompt,
            plan=PlanOptions(kind="gender-probe", seed=seed, voices=voices),
            name=f"gender study: {model} ({mode}, {prompt}{', neutralized voices' if voices == 'neutralized' else ''})",
        )
        for model, mode, prompt, voices in runs
    ]


def _declare_backbones(project, speech_profiles: tuple[str, ...], backbone_profile: str) -> None:
    from spokenbench.core.metrics.gender_backbones import declare_backbone_pairs

    declare_backbone_pairs(project.path, {f"simulated:{p}": f"simulated:{backbone_profile}" for p in speech_profiles})
