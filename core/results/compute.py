"""The Results page's metric panels, computed in one call off the UI thread (Qt-free; the app draws them).

    panels = compute_panels(frame)                      # a responses table (the engine's columns)
    panels = project_panels(project, run_ids=[1, 2])    # the selected runs of a project
    panels.panels["accuracy_by_level"].points           # every number, with its 95% interval and rows

Each panel mirrors a figure or table of one of the three papers (docs/results.md): accuracy by level with Δ
tables, the question-entropy distribution, Fleiss' κ against APES per factor, CS vs CA entropy, accuracy change
by gold position with RSD and CKLD, permutation voting, ranking changes, McNemar original vs reversed, and the
gender-probe J / Δ / ν / κ. The numbers come from the metrics engine (core/metrics); every point carries a 95%
interval — a question-level percentile bootstrap (core/metrics/bootstrap.py) where the number is a function of
per-question sums, an analytic interval where stated (`Point.interval`) — and the response rows behind it, so a
click can list its questions and answers. Beside each panel, `Panel.published` holds the papers' own numbers
from resources/published/ with the paper and table they come from."""

from __future__ import annotations

import json
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pandas as pd

from spokenbench.core.foundation.progress import Progress, no_progress
from spokenbench.core.metrics import mcq
from spokenbench.core.metrics.bootstrap import (
    DEFAULT_SEED,
)
from spokenbench.core.metrics.responses import prepare_mcq
from spokenbench.core.metrics.selection_bias import (
    compute_selection_bias,
)
from spokenbench.core.results.biasinear_panels import (
    _accuracy_by_level,
    _entropy_cs_ca,
    _entropy_distribution,
    _kappa_vs_apes,
)
from spokenbench.core.results.engine import (
    _clean_column,
    _Context,
    _engine_columns,
    _engine_frame,
    _engine_intervals,
    _levels,
    _partial_factors,
    _probe_mask,
)
from spokenbench.core.results.gender_probe_panel import _gender_probe
from spokenbench.core.results.model import DEFAULT_RESAMPLES, PANEL_FACTORS, Panel, PanelSet, ProbeSource, _empty_panel
from spokenbench.core.results.order_panels import _gold_position, _mcnemar, _permutation_voting, _ranking_changes
from spokenbench.core.results.published_overlay import published_for


def project_panels(
    project,
    run_ids: list[int] | None = None,
    *,
    runs: list[dict] | None = None,
    cache: ResponseCache | None = None,
    n_resamples: int = DEFAULT_RESAMPLES,
    progress: Progress | None = None,
) -> PanelSet:
    """Panels for the selected runs (all when None) of an open project. `runs` is `core.metrics.store.run_list`'s
    answer when the caller has it; `cache` keeps the responses of runs that did not change since the last call
    (the Results page keeps one per open project), so a run that ends costs reading its own responses only."""
    from spokenbench.core.metrics.store import run_list

    progress = progress or no_progress()
    start = time.perf_counter()
    runs = run_list(project.conn) if runs is None else runs
    if run_ids is not None:
        wanted = set(run_ids)
        runs = [r for r in runs if r["id"] in wanted]
    frame = (cache or ResponseCache()).frame(project.conn, runs)
    loaded = time.perf_counter() - start
    labels = run_labels(runs)
    simulated = {labels[r["id"]]: bool(r["simulated"]) for r in runs}
    if not frame.empty:  # categorical: no per-row strings for 100,000 rows
        order = [r["id"] for r in runs]
        names = list(dict.fromkeys(labels[i] for i in order))
        codes = pd.Index(order).get_indexer(frame["run_id"].to_numpy())
        label_code = np.array([names.index(labels[i]) for i in order])
        frame["model"] = pd.Categorical.from_codes(label_code[codes], categories=names)
    probes = _probe_source(project.conn, runs) if not frame.empty and _probe_mask(frame).any() else None
    result = compute_panels(
        frame, simulated=simulated, n_resamples=n_resamples, progress=progress, clean=True, probe_source=probes
    )
    result.runs = runs
    result.color_order = _by_first_run(result)
    result.timings = {"reading the project": loaded, **result.timings}
    return result


def _by_first_run(panels: PanelSet) -> list[str]:
    """The series in the order of their first run (the colours' order): as the panels name them — a run's label
    in the multiple-choice panels; in the gender probes' its model, a text run's as '<model> (text)'."""
    first: dict[str, int] = {}
    for frame in (panels.responses, panels.probe_responses):
        if len(frame) and {"run_id", "model"} <= set(frame.columns):
            for name, run_id in frame.groupby(frame["model"].astype(str))["run_id"].min().items():
                first[name] = min(int(run_id), first.get(name, int(run_id)))
    return sorted((name for name in first if name in panels.series), key=lambda name: (first[name], name))


# What tells that a run's stored responses may have changed (core/metrics/store.py `run_list`)
RUN_SIGNATURE = ("responses", "errors", "parsed_ok", "last_answer", "answers_sum", "status", "finished_at")


class ResponseCache:
    """The responses of each run as last read, kept while the run's summary (RUN_SIGNATURE) is unchanged.
    Safe to share between threads (a superseded computation may still be reading)."""

    def __init__(self) -> None:
        self._runs: dict[int, tuple[tuple, pd.DataFrame]] = {}
        self._lock = threading.Lock()
        self.reads = 0  # runs read from the database (for tests and the benchmark)

    def copy_without(self, run_ids=()) -> ResponseCache:
        """A copy that has forgotten some runs (as if they changed since): for the benchmark and tests."""
        other = ResponseCache()
        with self._lock:
            other._runs = {k: v for k, v in self._runs.items() if k not in set(run_ids)}
        return other

    def frame(self, conn, runs: list[dict]) -> pd.DataFrame:
        """The selected runs' responses, one row each, in the engine's columns: condition factors as columns,
        and for gender probes voice_gender and option_orientation."""
        from spokenbench.core.metrics.store import RUN_RESPONSE_COLUMNS, run_response_rows

        parts = []
        for run in runs:
            signature = tuple(run.get(k) for k in RUN_SIGNATURE)
            with self._lock:
                known = self._runs.get(run["id"])
            if known is not None and known[0] == signature:
                parts.append(known[1])
                continue
            rows = _cleaned(_with_conditions(conn, run_response_rows(conn, run["id"])))
            with self._lock:
                self._runs[run["id"]] = (signature, rows)
                self.reads += 1
            parts.append(rows)
        if not parts:
            return pd.DataFrame({c: np.array([], dtype=object) for c in RUN_RESPONSE_COLUMNS})
        frame = pd.concat(parts, ignore_index=True) if len(parts) > 1 else parts[0].copy()
        for column in _engine_columns(frame):  # a factor some runs lack (another condition grid)
            if frame[column].isna().any():
                frame[column] = frame[column].fillna("").to_numpy(dtype=object)
        return frame


def _cleaned(frame: pd.DataFrame) -> pd.DataFrame:
    """The engine's columns as stripped text with "" for missing, once per run read (`compute_panels(clean=True)`)."""
    for column in _engine_columns(frame):
        frame[column] = _clean_column(frame[column])
    return frame


def _with_conditions(conn, frame: pd.DataFrame) -> pd.DataFrame:
    """Each condition factor as a column (the JSON keys parsed once per distinct condition, not per row), as
    the store's export (core/importers/exports.py `responses_frame`) gives them."""
    if frame.empty:
        return frame
    codes, keys = pd.factorize(frame["condition_key"])
    conditions = pd.DataFrame([json.loads(key) for key in keys])
    conditions = conditions.drop(columns=[c for c in conditions.columns if c in frame.columns], errors="ignore")
    for column in conditions.columns:
        values = conditions[column].to_numpy(dtype=object)
        frame[column] = values[codes]
    frame = frame.drop(columns=["condition_key"])
    probes = _probe_mask(frame)
    if probes.any():
        from spokenbench.core.importers.exports import ORIENTATION_CODES
        from spokenbench.core.store.export_queries import gender_probe_orientations

        if "gender" in frame.columns:
            frame["voice_gender"] = frame["gender"]
        letters: dict[int, dict[str, str]] = {}
        for item_id, letter, orientation in gender_probe_orientations(conn):
            letters.setdefault(item_id, {})[letter] = ORIENTATION_CODES.get(orientation, "X")
        pair_codes, pairs = pd.factorize(pd.Series(list(zip(frame["item_id"], frame["option_order"]))))
        oriented = [
            "".join(letters[item].get(letter, "X") for letter in order) if item in letters else None
            for item, order in pairs
        ]
        frame["option_orientation"] = np.asarray(oriented, dtype=object)[pair_codes]
    return frame


def _probe_source(conn, runs: list[dict]) -> ProbeSource:
    from spokenbench.core.audio.store import neutralized_voices
    from spokenbench.core.importers.exports import run_answer_settings
    from spokenbench.core.metrics.gender_backbones import read_backbone_pairs
    from spokenbench.core.store.export_queries import response_details

    simulated: dict[str, bool] = {}
    for run in runs:
        simulated[run["model"]] = simulated.get(run["model"], False) or bool(run["simulated"])

    return ProbeSource(
        models={r["id"]: r["model"] for r in runs},
        settings=run_answer_settings(conn),
        neutralized_voices=neutralized_voices(conn),
        backbones=read_backbone_pairs(conn),
        simulated=simulated,
        details=lambda response_ids: response_details(conn, response_ids),
        option_texts=lambda: _probe_option_texts(conn),
    )


def _probe_option_texts(conn) -> pd.DataFrame:
    from spokenbench.core.importers.exports import items_frame

    items = items_frame(conn)
    if items.empty:
        return pd.DataFrame(columns=["item_id"])
    columns = [c for c in items.columns if c.startswith("option_") and c != "option_order"]
    return items.loc[items["kind"] == "gender-probe", ["item_id", *columns]]


def run_labels(runs: list[dict]) -> dict[int, str]:
    """run id → the name its numbers carry: the model, with the run id when two selected runs share a model."""
    models = pd.Series([run_model(r) for r in runs]).value_counts()
    return {r["id"]: run_model(r) if models[run_model(r)] == 1 else f"{run_model(r)} (run {r['id']})" for r in runs}


def run_model(run: dict) -> str:
    """The model a run's numbers are drawn for (the demo's real model: its label, not its model)."""
    from spokenbench.core.evaluation.real_demo import REAL_LABEL

    return REAL_LABEL if run.get("name") == REAL_LABEL else run["model"]


def compute_panels(
    frame: pd.DataFrame,
    *,
    simulated: dict[str, bool] | None = None,
    factors: list[str] | None = None,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    backbones: dict[str, str] | None = None,
    progress: Progress | None = None,
    clean: bool = False,
    probe_source: ProbeSource | None = None,
) -> PanelSet:
    """Every panel for a responses table (the engine's columns; a project's export or a synthetic table).
    Multiple-choice rows and gender probes (a non-empty `category`) are told apart as the loader does.
    `clean` says the engine's columns already hold stripped text with "" for missing (`ResponseCache` frames).
    Gender probes are grouped by model and answer setting (the table's `setting` or `prompt` column, else binary
    options; `probe_source` for a project), with κ against `backbones` (for a table without them: its only text
    model, when it has exactly one) or the project's declared pairs. The series (and so the colours) are the
    multiple-choice models first, then the models that answered probes only."""
    progress = progress or no_progress()
    simulated = dict(simulated or {})
    timings: dict[str, float] = {}
    panels: dict[str, Panel] = {}
    tick = time.perf_counter()
    if frame is None or frame.empty:
        frame = pd.DataFrame(columns=["question_id", "model", "answer", "prediction"])
    probes_mask = _probe_mask(frame)
    if probes_mask.any():
        mcq_frame = frame[~probes_mask].reset_index(drop=True)
        probe_frame = frame[probes_mask].reset_index(drop=True)
    else:  # no copy of a large table
        mcq_frame, probe_frame = frame.reset_index(drop=True), frame.iloc[:0]
    series = sorted({str(m) for m in pd.unique(mcq_frame["model"])}) if len(mcq_frame) else []
    for name in series:
        simulated.setdefault(name, False)

    context = None
    if len(mcq_frame):
        engine_frame = _engine_frame(mcq_frame, clean)
        chosen = factors if factors is not None else [f for f in PANEL_FACTORS if _levels(engine_frame, f) >= 2]
        data = prepare_mcq(engine_frame, chosen, "<responses>")
        with ThreadPoolExecutor(1, thread_name_prefix="spokenbench-panels") as helper:
            # two independent reads of the same arrays; numpy releases the GIL for most of the work
            selection_done = helper.submit(compute_selection_bias, data)
            metrics = mcq.compute_mcq_metrics(data)
            selection = selection_done.result()
        summary = mcq.model_summary(metrics).merge(selection.per_model, on="model", how="left")
        context = _Context(data, metrics, selection, summary, [], n_resamples, seed, simulated)
        if factors is None:
            context.partial_factors = _partial_factors(engine_frame, chosen)
        context.intervals = _engine_intervals(context)
        timings["engine (shared: encoding, metrics, selection bias, bootstrap)"] = time.perf_counter() - tick

    builders = {
        "accuracy_by_level": _accuracy_by_level,
        "entropy_distribution": _entropy_distribution,
        "kappa_vs_apes": _kappa_vs_apes,
        "entropy_cs_ca": _entropy_cs_ca,
        "gold_position": _gold_position,
        "permutation_voting": _permutation_voting,
        "ranking_changes": _ranking_changes,
        "mcnemar": _mcnemar,
    }

    def build_panels(keys: list[str]) -> dict[str, Panel]:
        built = {}
        for key in keys:
            progress.check_cancelled()
            start = time.perf_counter()
            panel = builders[key](context) if context is not None else _empty_panel(key)
            panel.published = published_for(key)
            panel.seconds = time.perf_counter() - start
            built[key] = panel
        return built

    # the panels in two halves, one on a helper thread (the voting-based ones share their vote counts)
    helper_keys = ["permutation_voting", "ranking_changes", "mcnemar"]
    with ThreadPoolExecutor(1, thread_name_prefix="spokenbench-panels") as helper:
        other_half = helper.submit(build_panels, helper_keys)
        built = build_panels([k for k in builders if k not in helper_keys])
        built.update(other_half.result())
    for key in builders:
        panels[key] = built[key]
        timings[key] = built[key].seconds
    start = time.perf_counter()
    panel, probe_frame = _gender_probe(probe_frame, simulated, n_resamples, seed, backbones, probe_source)
    panel.published = published_for("gender_probe")
    panel.seconds = time.perf_counter() - start
    panels["gender_probe"] = panel
    timings["gender_probe"] = panel.seconds
    probe_only = sorted({p.series for p in panel.points} - set(series))
    series += probe_only  # after the multiple-choice models: their colours stay what they are without probes
    for name in probe_only:
        simulated.setdefault(name, False)
    timings["total"] = time.perf_counter() - tick
    return PanelSet(
        panels=panels,
        series=series,
        simulated=simulated,
        responses=mcq_frame,
        probe_responses=probe_frame,
        timings=timings,
        n_resamples=n_resamples,
        color_order=list(series),
    )
