"""The bias metrics engine: every number of the three papers (BiasInEar, Hearing the Order, acoustic gender
differentiation) from a table of model answers, plus bootstrap intervals and significance tests.

    frame = load_responses("responses.csv")          # or a project folder (hook, see loading.py)
    analysis = analyze_mcq(frame, ["language", "accent", "gender", "order"], n_resamples=1000)
    analysis.to_json()                                # the `metrics --json` layout
    from spokenbench.core.metrics.report import write_report   # tables and figures (imports matplotlib)

Definitions and every choice the papers leave open: docs/metrics.md."""

from spokenbench.core.metrics.analysis import (
    McqAnalysis,
    analyze_gender_probe,
    analyze_mcq,
    detect_kind,
    gender_probe_json,
    mcq_json,
)
from spokenbench.core.metrics.loading import (
    load_project_responses,
    load_responses,
    read_responses_columns,
    read_responses_file,
)

__all__ = [
    "McqAnalysis",
    "analyze_gender_probe",
    "analyze_mcq",
    "detect_kind",
    "gender_probe_json",
    "load_project_responses",
    "load_responses",
    "mcq_json",
    "read_responses_columns",
    "read_responses_file",
]
