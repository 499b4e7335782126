"""Simulated runs for the demo project: three listeners with different bias profiles, offline, in seconds."""

from __future__ import annotations

from spokenbench.core.evaluation.plans import PlanOptions
from spokenbench.core.evaluation.preparation import RunSettings
from spokenbench.core.evaluation.runner import RunSummary, evaluate
from spokenbench.core.evaluation.simulated import DEMO_PROFILES
from spokenbench.core.foundation.progress import Progress, no_progress
from spokenbench.core.store import Project


def add_simulated_demo_runs(project: Project, progress: Progress | None = None) -> list[RunSummary]:
    """One simulated audio-mode run per demo listener: every multiple-choice item under the BiasInEar-like grid (accents of
    its language × both voice genders × original and reversed order). Needs no audio and no network."""
    progress = progress or no_progress()
    summaries = []
    for done, profile in enumerate(DEMO_PROFILES):
        progress.check_cancelled()
        progress.report(done, len(DEMO_PROFILES), f"simulated listener {profile}")
        settings = RunSettings(
            model=f"simulated:{profile}",
            mode="audio",
            prompt="standard",
            plan=PlanOptions(orders=("original", "reversed"), kind="mcq", seed=0),
            name=f"demo: simulated listener '{profile}'",
        )
        summaries.append(evaluate(project, settings, progress.sub_task()))
    progress.report(len(DEMO_PROFILES), len(DEMO_PROFILES), "simulated runs ready")
    return summaries
