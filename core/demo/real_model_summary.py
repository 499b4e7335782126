"""The demo's real model's numbers (its run: core/evaluation/real_demo.py), kept apart from the simulated
listeners': its summary with bootstrap intervals (core/metrics), and that summary as short lines for the CLI, the
tour step and the report's index. Above both evaluation and metrics, as the demo is."""

from __future__ import annotations

from spokenbench.core.evaluation.real_demo import REAL_LABEL, REAL_MODEL, split_real
from spokenbench.core.foundation.errors import SpokenBenchError


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
