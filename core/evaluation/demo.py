"""Simulated runs for the demo project: three listeners with different bias profiles, offline, in seconds."""

from __future__ import annotations

from spokenbench.core.evaluation.plans import PlanOptions
from spokenbench.core.evaluation.preparation import RunSettings
from spokenbench.core.evaluation.runner import RunSummary, evaluate
from spokenbench.core.evaluation.simulated import DEMO_PROFILES
from spokenbench.core.foundation.progress import Progress, no_progress
from spokenbench.core.store import Project


def simulated_demo_runs() -> list[RunSettings]:
    """One simulated audio-mode run per demo listener: every multiple-choice item under the BiasInEar-like grid
    (accents of its language × both voice genders × original and reversed order). Needs no audio and no network."""
    return [
        RunSettings(
            model=f"simulated:{profile}",
            mode="audio",
            prompt="standard",
            plan=PlanOptions(orders=("original", "reversed"), kind="mcq", seed=0),
            name=f"demo: simulated listener '{profile}'",
        )
        for profile in DEMO_PROFILES
    ]


def add_simulated_demo_runs(project: Project, progress: Progress | None = None) -> list[RunSummary]:
    return evaluate_runs(project, simulated_demo_runs(), progress, "simulated runs ready")


def evaluate_runs(
    project: Project, runs: list[RunSettings], progress: Progress | None = None, ready: str = "runs ready"
) -> list[RunSummary]:
    """Each run in turn (run ids follow the list), cancellable between runs; their summaries."""
    progress = progress or no_progress()
    summaries = []
    for done, settings in enumerate(runs):
        progress.check_cancelled()
        progress.report(done, len(runs), f"{settings.model} {settings.mode} {settings.prompt}")
        summaries.append(evaluate(project, settings, progress.sub_task()))
    progress.report(len(runs), len(runs), ready)
    return summaries
