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

import functools
import json
import math
import threading
import time
import warnings
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd

from spokenbench.core.foundation.progress import Progress, no_progress
from spokenbench.core.metrics import mcq
from spokenbench.core.metrics.analysis import mcq_interval_columns
from spokenbench.core.metrics.bootstrap import (
    CHUNK,
    CONFIDENCE,
    DEFAULT_SEED,
    ColumnBuilder,
    question_weights,
)
from spokenbench.core.metrics.encoding import representative_row
from spokenbench.core.metrics.responses import McqResponses, prepare_mcq
from spokenbench.core.metrics.selection_bias import (
    ckld_from_counts,
    ckld_interval,
    compute_selection_bias,
    rsd_from_counts,
    setting_votes,
)
from spokenbench.core.published import published_table

DEFAULT_RESAMPLES = 1000
MAX_KEPT_WEIGHTS = 4_000_000  # resamples × questions kept between refreshes (32 MB); beyond, drawn in chunks
MAX_DENSE_SUMS = 20_000_000  # questions × models × columns laid out densely for the bootstrap (160 MB)
Z95 = 1.959963984540054
# Factor columns the panels use, in this order, when the table has two or more levels of them
PANEL_FACTORS = ("language", "accent", "gender", "order", "speed", "volume", "snr_db", "voice_source", "spoken_labels")
BOOTSTRAP = "question-level percentile bootstrap"
PAPERS = {
    "biasinear": "BiasInEar",
    "hearing_the_order": "Hearing the Order",
    "gender_differentiation": "Acoustic-based Gender Differentiation",  # PAPER_TITLES' short form
}
PAPER_TITLES = {
    "biasinear": "Bias in the Ear of the Listener (BiasInEar)",
    "hearing_the_order": "Hearing the Order: Investigating Selection Bias in Large Audio-Language Models",
    "gender_differentiation": "Acoustic-based Gender Differentiation in Speech-aware Language Models",
}
# Hearing the Order's Table 3 covers four datasets; the figures draw the spoken one (the table beside has all)
DRAWN_DATASET = "SPEECH-MMAU"
PANEL_ORDER = (
    "accuracy_by_level",
    "entropy_distribution",
    "kappa_vs_apes",
    "entropy_cs_ca",
    "gold_position",
    "permutation_voting",
    "ranking_changes",
    "mcnemar",
    "gender_probe",
)


# --------------------------------------------------------------------------------------------------
# What a panel is made of


@dataclass
class Point:
    """One drawn number: `facet` is the subplot, `x` the category on its axis, `series` the model (or
    subset, permutation …) it belongs to. `value` is in display units (accuracy in %, Δ in points)."""

    facet: str
    x: str
    series: str
    value: float
    low: float = math.nan
    high: float = math.nan
    n: int = 0  # responses (or questions, see `unit`) behind it
    unit: str = "responses"
    rows: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))  # into PanelSet.responses
    questions_source: tuple[str, ...] | Callable[[], tuple[str, ...]] = ()  # see `questions`
    interval: str = BOOTSTRAP
    source: str = "yours"  # "yours", "yours (simulated)" or "published — <paper>, Table N"
    note: str = ""  # a test or count that goes with the number (McNemar's p, Kendall's τ)
    xvalue: float | None = None  # a second coordinate (κ vs APES: APES)
    xlow: float = math.nan
    xhigh: float = math.nan

    @property
    def questions(self) -> tuple[str, ...]:
        """The ids of the questions behind the point, in id order (worked out on first use)."""
        if callable(self.questions_source):
            self.questions_source = self.questions_source()
        return self.questions_source

    @property
    def has_interval(self) -> bool:
        return not (math.isnan(self.low) or math.isnan(self.high))

    def tooltip(self) -> str:
        lines = [f"{self.series} · {self.facet} · {self.x}", f"{_fmt(self.value)}"]
        if self.has_interval:
            lines[-1] += f"   95% CI [{_fmt(self.low)}, {_fmt(self.high)}]"
        else:
            lines[-1] += "   (no interval)"
        if self.xvalue is not None:
            lines.append(f"x = {_fmt(self.xvalue)}   95% CI [{_fmt(self.xlow)}, {_fmt(self.xhigh)}]")
        if self.interval and self.has_interval:
            lines.append(f"interval: {self.interval}")
        if self.n:
            lines.append(f"{self.n} {self.unit}" + (f", {len(self.questions)} questions" if self.questions else ""))
        if self.note:
            lines.append(self.note)
        lines.append(self.source)
        return "\n".join(lines)


@dataclass
class Published:
    """One published table beside a panel: the printed file, and its numbers laid out as points."""

    study: str
    table: str  # "Table 19"
    file: str
    caption: str
    frame: pd.DataFrame
    points: list[Point]
    note: str = ""

    @property
    def paper(self) -> str:
        return PAPERS[self.study]

    @property
    def label(self) -> str:
        return f"published — {self.paper}, {self.table}"


class LazyTables(dict):
    """A panel's tables by name. A value may be given as a function, computed on first access and kept (the Δ
    tables in the paper's layout: the figures do not need them, so `compute_panels` returns without them and
    `PanelSet.complete_tables` fills them in afterwards, off the UI thread)."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._lock = threading.Lock()

    def __getitem__(self, name: str) -> pd.DataFrame:
        value = super().__getitem__(name)
        if callable(value):
            with self._lock:
                value = super().__getitem__(name)
                if callable(value):
                    value = value()
                    super().__setitem__(name, value)
        return value

    def get(self, name, default=None):
        return self[name] if name in self else default

    def values(self):
        return [self[name] for name in self]

    def items(self):
        return [(name, self[name]) for name in self]

    def pending(self) -> list[str]:
        return [name for name in self if callable(dict.__getitem__(self, name))]


@dataclass
class Panel:
    key: str
    title: str
    mirrors: str  # the paper figure or table it is laid out like
    description: str
    kind: str  # "bars", "box", "scatter" or "ranks"
    facets: list[str]
    ylabels: dict[str, str]
    points: list[Point] = field(default_factory=list)
    tables: LazyTables = field(default_factory=LazyTables)
    published: list[Published] = field(default_factory=list)
    empty: str | None = None
    seconds: float = 0.0
    # The parts a panel shows one at a time (the gender probes' answer settings: key -> the first line of their
    # points' x labels): all of them side by side would be too many groups for one axis.
    views: dict[str, str] = field(default_factory=dict)
    # a view's own y labels where its facets measure something else (the free form: J_s, Δ_s, s)
    view_ylabels: dict[str, dict[str, str]] = field(default_factory=dict)

    def facet_points(self, facet: str) -> list[Point]:
        return [p for p in self.points if p.facet == facet]

    def in_view(self, view: str | None) -> Panel:
        """The panel with only the points of `view` (the first view when None or unknown), their x labels
        without the view's line, and the view named in the title; a panel without views as it is."""
        if not self.views:
            return self
        key = view if view in self.views else next(iter(self.views))
        prefix = self.views[key]
        points = [replace(p, x=p.x.split("\n", 1)[1]) for p in self.points if p.x.startswith(prefix + "\n")]
        ylabels = {**self.ylabels, **self.view_ylabels.get(key, {})}
        return replace(self, points=points, title=f"{self.title} · {prefix}", ylabels=ylabels)


@dataclass
class PanelSet:
    panels: dict[str, Panel]
    series: list[str]  # the models (one per selected run) in drawing order
    simulated: dict[str, bool]
    responses: pd.DataFrame  # one row per response the mcq panels used (row positions = Point.rows)
    probe_responses: pd.DataFrame  # the same for gender probes
    timings: dict[str, float]
    n_resamples: int
    runs: list[dict] = field(default_factory=list)

    @property
    def any_simulated(self) -> bool:
        return any(self.simulated.values())

    def source_of(self, series: str) -> str:
        return "yours (simulated)" if self.simulated.get(series) else "yours"

    def complete_tables(self) -> PanelSet:
        """Compute every table left for later (the Δ tables in the paper's layout)."""
        for panel in self.panels.values():
            for name in panel.tables.pending():
                panel.tables[name]
        return self

    def item_ids(self, point: Point, probe: bool = False) -> list[int]:
        """The project's item ids behind a point (one per question and language), for a project's panels."""
        frame = self.responses_behind(point, probe)
        if "item_id" not in frame.columns:
            return []
        return sorted({int(i) for i in frame["item_id"].dropna()})

    def responses_behind(self, point: Point, probe: bool = False) -> pd.DataFrame:
        frame = self.probe_responses if probe else self.responses
        return frame.iloc[point.rows]


# --------------------------------------------------------------------------------------------------
# Entry points


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
    result.timings = {"reading the project": loaded, **result.timings}
    return result


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


@dataclass
class ProbeSource:
    """What a project knows about its gender-probe answers beyond the engine's columns (project_panels): each
    run's model and answer setting, the voices that are gender-neutralized, the declared backbone pairs, and each
    answer's parse detail and reply (the neutral option, free form). With it the gender-probe panel groups answers
    as the report and the detail view do (core/gender_views.py): by model and answer setting, not by run."""

    models: dict[int, str]  # run id -> model
    settings: dict[int, str]  # run id -> answer setting (core.importers.exports.run_answer_settings)
    neutralized_voices: set[str]
    backbones: dict[str, str]  # the declared pairs (core.metrics.gender_backbones)
    simulated: dict[str, bool]  # model -> simulated
    details: Callable[[list], pd.DataFrame]  # response ids -> response_id, parse_detail, raw_text
    # item_id and the option texts (option_a, option_b, …) of the gender probes: the free form's Δ_s rule needs them
    option_texts: Callable[[], pd.DataFrame] = lambda: pd.DataFrame(columns=["item_id"])


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
    from spokenbench.core.evaluation.real_demo import REAL_LABEL  # the demo's real model: its label, not its model

    def model(run: dict) -> str:
        return REAL_LABEL if run.get("name") == REAL_LABEL else run["model"]

    models = pd.Series([model(r) for r in runs]).value_counts()
    return {r["id"]: model(r) if models[model(r)] == 1 else f"{model(r)} (run {r['id']})" for r in runs}


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
    )


# --------------------------------------------------------------------------------------------------
# Shared preparation


@dataclass
class _Context:
    data: McqResponses
    metrics: mcq.McqMetrics
    selection: object
    summary: pd.DataFrame
    intervals: list[dict]
    n_resamples: int
    seed: int
    simulated: dict[str, bool]
    infinite_shares: dict[str, np.ndarray] = field(default_factory=dict)  # CKLD name -> per model (`ckld_interval`)
    # factors some rows leave empty (a text run has no accent or voice gender): (codes, levels), the empty rows
    # coded len(levels); only "Accuracy by level" shows them, over the rows that have them (_partial_factors)
    partial_factors: dict[str, tuple[np.ndarray, list[str]]] = field(default_factory=dict)

    def source(self, model: str) -> str:
        return "yours (simulated)" if self.simulated.get(model) else "yours"

    def ci(self, model_index: int, key: str) -> tuple[float, float]:
        if not self.intervals:
            return (math.nan, math.nan)
        return self.intervals[model_index].get(key, (math.nan, math.nan))

    def infinite_share(self, model_index: int, key: str) -> float:
        """The share of resamples where CKLD `key` was infinite (0 when none was)."""
        shares = self.infinite_shares.get(key)
        return 0.0 if shares is None else float(shares[model_index])

    def interval_text(self, model_index: int, key: str) -> str:
        """How a point's interval was made; for a CKLD that some resamples make infinite, says how many."""
        share = self.infinite_share(model_index, key)
        if not share > 0:
            return BOOTSTRAP
        return (
            f"{BOOTSTRAP} over the {100 * (1 - share):.3g}% of resamples where CKLD is finite; infinite in "
            f"{100 * share:.3g}% (a position chosen but never gold in them: Eq. 1 has no finite value)"
        )

    @functools.cached_property
    def question_names(self) -> np.ndarray:
        return np.asarray(self.data.questions, dtype=object)

    def questions(self, rows: np.ndarray) -> Callable[[], tuple[str, ...]]:
        """The question ids of some rows, in id order, when first asked for (a bincount, not a sort)."""
        codes, names = self.data.question, self.question_names

        def work() -> tuple[str, ...]:
            if len(rows) == 0:
                return ()
            return tuple(names[np.flatnonzero(np.bincount(codes[rows], minlength=len(names)))])

        return work

    @functools.cached_property
    def units(self) -> np.ndarray:
        """The engine's vote units (model, question and every factor the presentation does not fix)."""
        return self.selection.presentation.units

    @functools.cached_property
    def votes(self) -> dict[str, dict[str, np.ndarray]]:
        return _vote_group_counts(self.data, self.selection)

    @functools.cached_property
    def weight_matrix(self) -> np.ndarray | None:
        """The resamples' question weights (resamples × questions), drawn in the same chunks and order as the
        engine's `bootstrap_intervals`, so a statistic's interval here equals the engine's for the same seed.
        None when that matrix would be large (many questions): `weight_chunks` then draws them chunk by chunk."""
        if self.n_resamples * len(self.data.questions) > MAX_KEPT_WEIGHTS:
            return None
        return resample_weights(len(self.data.questions), self.n_resamples, self.seed)

    def weight_chunks(self):
        """The same weights as `weight_matrix`, in one piece when it is kept, else in the engine's chunks."""
        if self.weight_matrix is not None:
            yield self.weight_matrix
            return
        rng = np.random.default_rng(self.seed)
        done = 0
        while done < self.n_resamples:
            size = min(CHUNK, self.n_resamples - done)
            yield question_weights(len(self.data.questions), size, rng)
            done += size

    def bootstrap(self, columns: ColumnBuilder, finalize) -> list[dict]:
        """Percentile intervals per model, like core.metrics.bootstrap.bootstrap_intervals, but for all models and
        resamples in one matrix product: the per-group sums are laid out densely as (question, model, column)."""
        data = self.data
        n_models = len(data.models)
        if not self.n_resamples:
            return [{} for _ in range(n_models)]
        matrix = np.nan_to_num(np.asarray(columns.matrix(), dtype=float))
        width = matrix.shape[1]
        n_questions = len(data.questions)
        dense_fits = n_questions * n_models * width <= MAX_DENSE_SUMS
        if dense_fits:  # every model side by side: one product per chunk of resamples
            dense = np.zeros((n_questions, n_models, width))
            dense[data.group_question, data.group_model] = matrix
            flat = dense.reshape(n_questions, n_models * width)
        else:  # many questions: model by model, over that model's groups only (as the engine does)
            members = split_rows(data.group_model, n_models)
        parts: dict[str, list[np.ndarray]] = {}
        for weights in self.weight_chunks():
            if dense_fits:
                sums = weights @ flat
            else:
                sums = np.stack([weights[:, data.group_question[g]] @ matrix[g] for g in members], axis=1)
            sums = sums.reshape(len(weights) * n_models, width)
            with np.errstate(invalid="ignore", divide="ignore"):
                for name, values in finalize(sums).items():
                    parts.setdefault(name, []).append(np.asarray(values, dtype=float).reshape(len(weights), n_models))
        draws = {name: np.concatenate(chunks) for name, chunks in parts.items()}
        tail = 100 * (1 - CONFIDENCE) / 2
        bounds: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        for name in [n for n, values in draws.items() if n.rsplit(".", 1)[-1] == "ckld" and np.isinf(values).any()]:
            low, high, self.infinite_shares[name] = ckld_interval(draws.pop(name), CONFIDENCE)
            bounds[name] = (low, high)
        complete = [name for name, values in draws.items() if not np.isnan(values).any()]
        if complete:  # the common case: one percentile call for every statistic defined in every resample
            with warnings.catch_warnings(), np.errstate(invalid="ignore"):
                warnings.simplefilter("ignore", RuntimeWarning)  # inf − inf between infinite draws
                low, high = np.percentile(np.stack([draws[n] for n in complete]), [tail, 100 - tail], axis=1)
            bounds.update({name: (low[i], high[i]) for i, name in enumerate(complete)})
        for name in draws.keys() - set(complete):  # undefined in some resamples: left out, as the engine does
            with warnings.catch_warnings(), np.errstate(invalid="ignore"):
                warnings.simplefilter("ignore", RuntimeWarning)  # a model whose statistic is never defined
                bounds[name] = tuple(np.nanpercentile(draws[name], [tail, 100 - tail], axis=0))
        intervals: list[dict] = [{} for _ in range(n_models)]
        for name, (low, high) in bounds.items():
            for m in range(n_models):
                intervals[m][name] = (float(low[m]), float(high[m]))
        return intervals


@functools.lru_cache(maxsize=4)
def resample_weights(n_questions: int, n_resamples: int, seed: int) -> np.ndarray:
    """Kept between refreshes (read-only): the same table size and seed always draw the same weights."""
    rng = np.random.default_rng(seed)
    chunks, done = [], 0
    while done < n_resamples:
        size = min(CHUNK, n_resamples - done)
        chunks.append(question_weights(n_questions, size, rng))
        done += size
    weights = np.vstack(chunks) if chunks else np.zeros((0, n_questions))
    weights.setflags(write=False)
    return weights


def _engine_intervals(ctx: _Context) -> list[dict]:
    """The engine's headline intervals (core.metrics.analysis.mcq_intervals: accuracy, mean entropy, APES and
    κ per factor, RSD, CKLD) from the same columns and the same resamples, through the joint bootstrap."""
    columns, finalize = mcq_interval_columns(ctx.metrics, ctx.selection)
    return ctx.bootstrap(columns, finalize)


def _probe_mask(frame: pd.DataFrame) -> np.ndarray:
    if "category" not in frame.columns:
        return np.zeros(len(frame), dtype=bool)
    category = frame["category"]
    return (category.notna() & (category.astype(str).str.strip() != "")).to_numpy()


ENGINE_COLUMNS = ("question_id", "model", "answer", "prediction", "option_order", "cultural_label", "subject")


def _engine_columns(frame: pd.DataFrame) -> list[str]:
    return [c for c in ENGINE_COLUMNS if c in frame.columns] + [c for c in PANEL_FACTORS if c in frame.columns]


def _engine_frame(frame: pd.DataFrame, clean: bool = False) -> pd.DataFrame:
    """The engine's input: every cell as stripped text, missing as "" (what core.foundation.tables.as_clean_strings
    gives), computed on each column's distinct values and kept as plain object arrays (no Arrow strings)."""
    keep = _engine_columns(frame)
    if clean:  # already text: no conversion (pandas keeps the columns' string arrays as they are)
        return frame[keep]
    return pd.DataFrame({c: _clean_column(frame[c]) for c in keep}, index=pd.RangeIndex(len(frame)))


def _clean_column(column: pd.Series) -> np.ndarray:
    codes, uniques = pd.factorize(column, use_na_sentinel=True)
    cleaned = [_cell_text(u) for u in uniques] + [""]
    return np.asarray(cleaned, dtype=object)[codes]


def _cell_text(value) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value).strip()


def _partial_factors(frame: pd.DataFrame, chosen: list[str]) -> dict[str, tuple[np.ndarray, list[str]]]:
    """The panel factors left out of the engine because some rows are empty there, yet with two or more levels
    in the rows that have them: a text-only run beside audio runs has no accent or voice gender, and that must
    not hide those factors for the audio runs. Each as (codes, levels), an empty cell coded len(levels)."""
    partial = {}
    for f in PANEL_FACTORS:
        if f in chosen or f not in frame.columns:
            continue
        codes, uniques = pd.factorize(frame[f].to_numpy(dtype=object), sort=True)
        levels = [str(u) for u in uniques if u != ""]
        if len(levels) < 2 or len(levels) == len(uniques):
            continue  # one level only, or no empty cell (then the engine would have taken it)
        empty = list(uniques).index("")
        codes = np.where(codes == empty, len(levels), codes - (codes > empty)).astype(np.int64)
        partial[f] = (codes, levels)
    return partial


def _levels(frame: pd.DataFrame, column: str) -> int:
    if column not in frame.columns or (frame[column] == "").any():
        return 0
    return frame[column].nunique()


def split_rows(key: np.ndarray, n_keys: int) -> list[np.ndarray]:
    """Row indices per key 0..n_keys-1 (one stable sort, no per-key scans)."""
    order = np.argsort(key, kind="stable")
    counts = np.bincount(key, minlength=n_keys)
    return np.split(order, np.cumsum(counts)[:-1])


def _counts(group: np.ndarray, code: np.ndarray, n_groups: int, width: int, weights=None) -> np.ndarray:
    flat = np.bincount(group * width + code, weights=weights, minlength=n_groups * width)
    return flat.reshape(n_groups, width).astype(float)


def wilson(successes: np.ndarray, n: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Wilson score interval of a proportion (95%); NaN where n = 0."""
    successes = np.asarray(successes, dtype=float)
    n = np.asarray(n, dtype=float)
    with np.errstate(invalid="ignore", divide="ignore"):
        p = successes / n
        z2 = Z95**2
        centre = (p + z2 / (2 * n)) / (1 + z2 / n)
        half = Z95 * np.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / (1 + z2 / n)
    return np.where(n > 0, centre - half, np.nan), np.where(n > 0, centre + half, np.nan)


def _empty_panel(key: str) -> Panel:
    title, mirrors, description, kind, facets = PANEL_INFO[key]
    return Panel(
        key,
        title,
        mirrors,
        description,
        kind,
        list(facets),
        {},
        empty="No multiple-choice responses in the selected runs: run an evaluation (or `spokenbench demo DIR`).",
    )


def panel_heading(key: str) -> tuple[str, str]:
    """A panel's title and what it mirrors with its description (a tooltip), known before any number is."""
    title, mirrors, description, _kind, _facets = PANEL_INFO[key]
    return title, f"{mirrors}\n{description}"


def _new_panel(key: str, facets: list[str], ylabels: dict[str, str]) -> Panel:
    title, mirrors, description, kind, _ = PANEL_INFO[key]
    return Panel(key, title, mirrors, description, kind, facets, ylabels)


PANEL_INFO = {
    "accuracy_by_level": (
        "Accuracy by level",
        "BiasInEar Tables 6, 18-20 (and 11-17)",
        "Accuracy (%) of each model at every level of every factor (language, accent, gender, option order, …); "
        "the Δ tables lay each factor's levels side by side across the other factors, as the paper's tables do.",
        "bars",
        (),
    ),
    "entropy_distribution": (
        "Question entropy",
        "BiasInEar Fig. 2",
        "Distribution of the per-question answer entropy H_q across all configurations (0 = the same answer "
        "every time, 1 = uniform over the options): one dot per question, box = IQR, with the mean and median.",
        "box",
        ("question entropy",),
    ),
    "kappa_vs_apes": (
        "κ vs APES",
        "BiasInEar Figs. 4-5",
        "Mean Fleiss' κ (agreement of the modal answers across a factor's levels) against mean APES (average "
        "pairwise entropy shift across levels) per model and factor. Upper left = robust.",
        "scatter",
        ("κ vs APES",),
    ),
    "entropy_cs_ca": (
        "CS vs CA",
        "BiasInEar Fig. 3 / Table 5",
        "Mean entropy of culturally sensitive (CS) and culturally agnostic (CA) questions: the question entropy "
        "('all') and each factor's level entropy; Δ = CS − CA.",
        "bars",
        (),
    ),
    "gold_position": (
        "Gold position",
        "Hearing the Order Fig. 1 and Table 3 (Original)",
        "Accuracy change (percentage points) when the gold answer sits at each presented position, against the "
        "original order, and the selection-bias measures RSD and CKLD.",
        "bars",
        ("Δ accuracy vs original", "RSD", "CKLD"),
    ),
    "permutation_voting": (
        "Permutation voting",
        "Hearing the Order Table 3",
        "Accuracy, RSD and CKLD in the original order and after majority voting over the cyclic and the full "
        "set of option orders each question was shown in. Ties in a vote: a t-way tie counts 1/t for each tied "
        "option (fractional credit, the default tie rule; `spokenbench metrics --vote-ties` offers the others).",
        "bars",
        ("accuracy", "RSD", "CKLD"),
    ),
    "ranking_changes": (
        "Ranking changes",
        "Hearing the Order Fig. 3",
        "Each model's rank by accuracy (1 = best) in each setting: original order, gold answer at each "
        "position, and after voting; Kendall's τ-b of each setting against the original.",
        "ranks",
        ("rank",),
    ),
    "mcnemar": (
        "Original vs reversed",
        "BiasInEar Tables 6, 11-17 (Δ original − reversed)",
        "Paired correctness of the same question and configuration in the original and exactly reversed option "
        "order: accuracy of each, the difference on the pairs, and the exact McNemar test.",
        "bars",
        ("accuracy on pairs", "Δ original − reversed"),
    ),
    "gender_probe": (
        "Gender probes",
        f"{PAPERS['gender_differentiation']} Table 1",
        "Response overlap J between male- and female-voice answers, gender preference Δ (> 0: male-oriented), "
        "neutral response rate ν and backbone influence κ, per model and question category.",
        "bars",
        ("J", "Δ", "ν", "κ"),
    ),
}


# --------------------------------------------------------------------------------------------------
# The panels


def _accuracy_by_level(ctx: _Context) -> Panel:
    data = ctx.data
    # every factor as (codes, levels, width): a partial factor's empty rows fall in an extra, unshown code
    coded = {f: (data.factor_codes[f], data.factor_levels[f], len(data.factor_levels[f])) for f in data.factors}
    coded.update({f: (codes, levels, len(levels) + 1) for f, (codes, levels) in ctx.partial_factors.items()})
    factors = list(data.factors)
    if ctx.partial_factors:  # the automatic factors (all of PANEL_FACTORS) with the partial ones in their place
        factors = sorted(coded, key=PANEL_FACTORS.index)
    panel = _new_panel("accuracy_by_level", factors, {f: "accuracy (%)" for f in factors})
    if not factors:
        panel.empty = "The responses have no factor with two or more levels (language, accent, gender, order …)."
        return panel
    n_groups = data.n_groups
    columns = ColumnBuilder()
    for f, (codes, _levels, width) in coded.items():
        columns.add(f"n[{f}]", _counts(data.group, codes, n_groups, width))
        columns.add(f"c[{f}]", _counts(data.group, codes, n_groups, width, data.correct))

    def finalize(sums):
        out = {}
        for f, (_codes, levels, _width) in coded.items():
            acc = 100 * columns.get(sums, f"c[{f}]") / columns.get(sums, f"n[{f}]")
            acc = acc.reshape(len(sums), -1)
            for i, level in enumerate(levels):
                out[f"{f}={level}"] = acc[:, i]
            if len(levels) == 2:
                out[f"delta[{f}]"] = acc[:, 0] - acc[:, 1]
        return out

    intervals = ctx.bootstrap(columns, finalize)
    rows_table = []
    for f in factors:
        codes, levels, width = coded[f]
        key = data.model * width + codes
        parts = split_rows(key, len(data.models) * width)
        for m, model in enumerate(data.models):
            for i, level in enumerate(levels):
                rows = parts[m * width + i]
                if len(rows) == 0:
                    continue  # e.g. a text run at the levels of an audio-only factor: no bar
                value = 100 * data.correct[rows].mean()
                low, high = intervals[m].get(f"{f}={level}", (math.nan, math.nan))
                panel.points.append(
                    Point(
                        f,
                        level,
                        model,
                        value,
                        low,
                        high,
                        len(rows),
                        rows=rows,
                        questions_source=ctx.questions(rows),
                        source=ctx.source(model),
                    )
                )
                rows_table.append(
                    {
                        "model": model,
                        "source": ctx.source(model),
                        "factor": f,
                        "level": level,
                        "n": len(rows),
                        "accuracy_pct": value,
                        "ci_low": low,
                        "ci_high": high,
                    }
                )
    panel.tables["accuracy_by_level"] = functools.partial(pd.DataFrame, rows_table)  # built when first needed
    delta_rows = []
    for f in factors:
        if len(coded[f][1]) != 2:
            continue
        a, b = coded[f][1]
        for m, model in enumerate(data.models):
            values = [p.value for p in panel.points if p.facet == f and p.series == model]
            if len(values) != 2:
                continue
            low, high = intervals[m].get(f"delta[{f}]", (math.nan, math.nan))
            delta_rows.append(
                {
                    "model": model,
                    "source": ctx.source(model),
                    "factor": f,
                    "delta": f"{a} − {b}",
                    "delta_pct": values[0] - values[1],
                    "ci_low": low,
                    "ci_high": high,
                }
            )
    panel.tables["delta_by_factor"] = functools.partial(pd.DataFrame, delta_rows)
    for f in data.factors:  # computed when first needed (PanelSet.complete_tables, or on access)
        panel.tables[f"delta_table_{f}"] = functools.partial(_cross_table_with_intervals, data, f, ctx)
    return panel


def _cross_table_with_intervals(data: McqResponses, factor: str, ctx: _Context) -> pd.DataFrame:
    """The paper's Δ-table layout (mcq.accuracy_cross_table) with a Wilson interval per cell and a normal
    interval for the Δ of two independent proportions (analytic: the cells are too many to bootstrap)."""
    table = mcq.accuracy_cross_table(data, factor)
    correct = np.round(table["accuracy_pct"].to_numpy() / 100 * table["n"].to_numpy())
    low, high = wilson(correct, table["n"].to_numpy())
    table.insert(table.columns.get_loc("accuracy_pct") + 1, "ci_low", 100 * low)
    table.insert(table.columns.get_loc("ci_low") + 1, "ci_high", 100 * high)
    delta = [c for c in table.columns if c.startswith("delta_")]
    if delta:
        row_factors = [c for c in table.columns if c not in (factor, "n", "accuracy_pct", "ci_low", "ci_high", *delta)]
        p = table["accuracy_pct"] / 100
        var = p * (1 - p) / table["n"]
        pair_var = var.groupby([table[c] for c in row_factors], sort=False).transform("sum")
        half = 100 * Z95 * np.sqrt(pair_var)
        table[f"{delta[0]}_ci_low"] = table[delta[0]] - half
        table[f"{delta[0]}_ci_high"] = table[delta[0]] + half
    table.insert(1, "source", table["model"].map(ctx.source))
    return table


def _entropy_distribution(ctx: _Context) -> Panel:
    data, metrics = ctx.data, ctx.metrics
    panel = _new_panel("entropy_distribution", ["question entropy"], {"question entropy": "question entropy H_q"})
    groups = split_rows(data.group, data.n_groups)
    questions = np.asarray(data.questions, dtype=object)
    for g in range(data.n_groups):
        value = metrics.entropy[g]
        if math.isnan(value):
            continue
        model = data.models[data.group_model[g]]
        rows = groups[g]
        panel.points.append(
            Point(
                "question entropy",
                "question",
                model,
                float(value),
                n=len(rows),
                rows=rows,
                questions_source=(questions[data.group_question[g]],),
                interval="",
                source=ctx.source(model),
            )
        )
    summary_rows = []
    model_rows = split_rows(data.model, len(data.models))
    for m, model in enumerate(data.models):
        values = metrics.entropy[(data.group_model == m) & ~np.isnan(metrics.entropy)]
        mean_ci = ctx.ci(m, "entropy_mean")
        median, median_ci = _median_with_interval(values)
        q1, q3 = np.quantile(values, [0.25, 0.75]) if len(values) else (math.nan, math.nan)
        for stat, value, (low, high), how in (
            ("mean", float(values.mean()) if len(values) else math.nan, mean_ci, BOOTSTRAP),
            ("median", median, median_ci, "distribution-free order-statistic interval (binomial)"),
        ):
            panel.points.append(
                Point(
                    "summary",
                    stat,
                    model,
                    value,
                    low,
                    high,
                    len(values),
                    unit="questions",
                    rows=model_rows[m],
                    questions_source=ctx.questions(model_rows[m]),
                    interval=how,
                    source=ctx.source(model),
                )
            )
        summary_rows.append(
            {
                "model": model,
                "source": ctx.source(model),
                "n_questions": len(values),
                "entropy_mean": float(values.mean()) if len(values) else math.nan,
                "mean_ci_low": mean_ci[0],
                "mean_ci_high": mean_ci[1],
                "entropy_median": median,
                "median_ci_low": median_ci[0],
                "median_ci_high": median_ci[1],
                "entropy_q1": q1,
                "entropy_q3": q3,
            }
        )
    panel.tables["entropy_summary"] = functools.partial(pd.DataFrame, summary_rows)
    panel.tables["entropy_per_question"] = lambda: mcq.per_question_table(metrics)[
        ["model", "question_id", "n", "accuracy", "entropy"]
    ]
    return panel


def _median_with_interval(values: np.ndarray) -> tuple[float, tuple[float, float]]:
    """The median and its 95% distribution-free interval: order statistics j, k around n/2 (normal
    approximation to the binomial), as in Conover's Practical Nonparametric Statistics."""
    n = len(values)
    if n == 0:
        return math.nan, (math.nan, math.nan)
    ordered = np.sort(values)
    half = Z95 * math.sqrt(n) / 2
    j = max(int(math.floor(n / 2 - half)), 0)
    k = min(int(math.ceil(n / 2 + half)), n - 1)
    return float(np.median(values)), (float(ordered[j]), float(ordered[k]))


def _kappa_vs_apes(ctx: _Context) -> Panel:
    data, summary = ctx.data, ctx.summary
    panel = _new_panel("kappa_vs_apes", ["κ vs APES"], {"κ vs APES": "Fleiss' κ"})
    if not data.factors:
        panel.empty = "The responses have no factor with two or more levels, so there is no κ or APES."
        return panel
    model_rows = split_rows(data.model, len(data.models))
    rows_table = []
    for m, model in enumerate(data.models):
        for f in data.factors:
            apes, kappa = summary[f"apes[{f}]"].iloc[m], summary[f"kappa[{f}]"].iloc[m]
            a_ci, k_ci = ctx.ci(m, f"apes[{f}]"), ctx.ci(m, f"fleiss_kappa[{f}]")
            defined = int(summary[f"kappa_defined[{f}]"].iloc[m])
            if not (math.isnan(apes) or math.isnan(kappa)):
                panel.points.append(
                    Point(
                        "κ vs APES",
                        f,
                        model,
                        float(kappa),
                        k_ci[0],
                        k_ci[1],
                        defined,
                        unit="questions with κ defined",
                        rows=model_rows[m],
                        questions_source=ctx.questions(model_rows[m]),
                        source=ctx.source(model),
                        xvalue=float(apes),
                        xlow=a_ci[0],
                        xhigh=a_ci[1],
                    )
                )
            rows_table.append(
                {
                    "model": model,
                    "source": ctx.source(model),
                    "factor": f,
                    "apes": apes,
                    "apes_ci_low": a_ci[0],
                    "apes_ci_high": a_ci[1],
                    "fleiss_kappa": kappa,
                    "kappa_ci_low": k_ci[0],
                    "kappa_ci_high": k_ci[1],
                    "kappa_questions_defined": defined,
                    "level_entropy": summary[f"level_entropy[{f}]"].iloc[m],
                }
            )
    panel.tables["kappa_apes"] = functools.partial(pd.DataFrame, rows_table)
    return panel


def _entropy_cs_ca(ctx: _Context) -> Panel:
    data, metrics = ctx.data, ctx.metrics
    variables = ["all"] + list(data.factors)
    panel = _new_panel("entropy_cs_ca", variables, {v: "mean entropy" for v in variables})
    label = data.group_cultural_label
    if not ((label == 1).any() and (label == 0).any()):
        panel.empty = "No cultural_label with both CS and CA questions among the selected responses."
        return panel
    series = [("all", metrics.entropy)] + [(f, r.level_entropy) for f, r in metrics.factors.items()]
    columns = ColumnBuilder()
    for name, values in series:
        columns.add_mean(f"cs[{name}]", np.where(label == 1, values, np.nan))
        columns.add_mean(f"ca[{name}]", np.where(label == 0, values, np.nan))

    def finalize(sums):
        out = {}
        for name, _ in series:
            cs, ca = columns.mean(sums, f"cs[{name}]"), columns.mean(sums, f"ca[{name}]")
            out[f"cs[{name}]"], out[f"ca[{name}]"], out[f"delta[{name}]"] = cs, ca, cs - ca
        return out

    intervals = ctx.bootstrap(columns, finalize)
    subset_rows = split_rows(data.model * 2 + np.maximum(data.cultural_label, 0), 2 * len(data.models))
    for i in range(len(subset_rows)):  # unlabelled questions belong to neither subset
        subset_rows[i] = subset_rows[i][data.cultural_label[subset_rows[i]] == i % 2]
    table = mcq.entropy_cs_ca(metrics)
    ci_low, ci_high, d_low, d_high = [], [], [], []
    for row in table.itertuples(index=False):
        m = data.models.index(row.model)
        key = f"{row.question_subset}[{row.variable}]"
        ci_low.append(intervals[m].get(key, (math.nan, math.nan))[0])
        ci_high.append(intervals[m].get(key, (math.nan, math.nan))[1])
        d = intervals[m].get(f"delta[{row.variable}]", (math.nan, math.nan))
        d_low.append(d[0])
        d_high.append(d[1])
        subset_code = 1 if row.question_subset == "cs" else 0
        rows = subset_rows[m * 2 + subset_code]
        panel.points.append(
            Point(
                row.variable,
                row.model,
                row.question_subset.upper(),
                float(row.mean_entropy),
                ci_low[-1],
                ci_high[-1],
                int(row.n_questions),
                unit="questions",
                rows=rows,
                questions_source=ctx.questions(rows),
                source=ctx.source(row.model),
            )
        )
    table = table.assign(ci_low=ci_low, ci_high=ci_high, delta_ci_low=d_low, delta_ci_high=d_high)
    table.insert(1, "source", table["model"].map(ctx.source))
    panel.tables["entropy_cs_ca"] = table
    return panel


def _gold_position(ctx: _Context) -> Panel:
    data, selection = ctx.data, ctx.selection
    facets = ["Δ accuracy vs original", "RSD", "CKLD"]
    panel = _new_panel(
        "gold_position",
        facets,
        {facets[0]: "Δ accuracy (percentage points)", "RSD": "RSD (lower = less biased)", "CKLD": "CKLD"},
    )
    k = data.max_options
    n_groups = data.n_groups
    comparison = selection.presentation.gold_setting  # the rows of the gold-at-p settings (engine's rule)
    identity = selection.presentation.original
    if not identity.any():
        panel.empty = "No responses in the original option order to compare against."
        return panel
    columns = ColumnBuilder()
    columns.add("pos_n", _counts(data.group[comparison], data.gold_position[comparison], n_groups, k))
    both = comparison & data.correct
    columns.add("pos_c", _counts(data.group[both], data.gold_position[both], n_groups, k))
    columns.add("orig_n", np.bincount(data.group[identity], minlength=n_groups))
    columns.add("orig_c", np.bincount(data.group[identity & data.correct], minlength=n_groups))

    def finalize(sums):
        pos = columns.get(sums, "pos_c").reshape(len(sums), k) / columns.get(sums, "pos_n").reshape(len(sums), k)
        orig = columns.get(sums, "orig_c") / columns.get(sums, "orig_n")
        delta = 100 * (pos - orig[:, None])
        return {f"delta[{i}]": delta[:, i] for i in range(k)}

    intervals = ctx.bootstrap(columns, finalize)
    per_model = selection.per_model
    key = data.model * k + data.gold_position
    parts = split_rows(key, len(data.models) * k)
    model_rows = split_rows(data.model, len(data.models))
    rows_table = []
    for m, model in enumerate(data.models):
        row = per_model.iloc[m]
        for i, letter in enumerate(selection.positions):
            value = 100 * row[f"delta_accuracy_gold_{letter}"]
            rows = parts[m * k + i]
            rows = rows[comparison[rows] | identity[rows]]
            low, high = intervals[m].get(f"delta[{i}]", (math.nan, math.nan))
            if not math.isnan(value):
                panel.points.append(
                    Point(
                        facets[0],
                        letter,
                        model,
                        value,
                        low,
                        high,
                        len(rows),
                        rows=rows,
                        questions_source=ctx.questions(rows),
                        source=ctx.source(model),
                    )
                )
            rows_table.append(
                {
                    "model": model,
                    "source": ctx.source(model),
                    "gold_position": letter,
                    "accuracy_pct": 100 * row[f"accuracy_gold_{letter}"],
                    "delta_accuracy_pp": value,
                    "delta_ci_low": low,
                    "delta_ci_high": high,
                    "predicted_share": row[f"predicted_share_{letter}"],
                    "gold_share": row[f"gold_share_{letter}"],
                }
            )
        for metric, name in (("rsd", "RSD"), ("ckld", "CKLD")):
            low, high = ctx.ci(m, metric)
            panel.points.append(
                Point(
                    name,
                    model,
                    model,
                    float(row[metric]),
                    low,
                    high,
                    len(model_rows[m]),
                    rows=model_rows[m],
                    questions_source=ctx.questions(model_rows[m]),
                    interval=ctx.interval_text(m, metric),
                    source=ctx.source(model),
                )
            )
    panel.tables["gold_position"] = functools.partial(pd.DataFrame, rows_table)

    def rsd_ckld() -> pd.DataFrame:
        bias = per_model[["model", "rsd", "ckld"]].copy()
        bias.insert(1, "source", bias["model"].map(ctx.source))
        for m_key in ("rsd", "ckld"):
            at = bias.columns.get_loc(m_key) + 1
            bias.insert(at, f"{m_key}_ci_low", [ctx.ci(m, m_key)[0] for m in range(len(data.models))])
            bias.insert(at + 1, f"{m_key}_ci_high", [ctx.ci(m, m_key)[1] for m in range(len(data.models))])
        bias["ckld_infinite_resamples"] = [ctx.infinite_share(m, "ckld") for m in range(len(data.models))]
        return bias

    panel.tables["rsd_ckld"] = rsd_ckld
    return panel


def _vote_group_counts(data: McqResponses, selection) -> dict[str, dict[str, np.ndarray]]:
    """Per (model, question) group and setting: gold, vote-weighted correct and voted counts per position —
    the same votes as the engine's `_voting` (the same tie rule: the default, fractional), kept per group for
    the bootstrap."""
    k = data.max_options
    n_groups = data.n_groups
    shown_rows = selection.presentation
    units = shown_rows.units
    n_units = int(units.max()) + 1
    unit_row = representative_row(units, n_units)
    unit_group, unit_gold = data.group[unit_row], data.answer[unit_row]
    out = {}
    rows = shown_rows.original
    out["original"] = {
        "gold": _counts(data.group[rows], data.gold_position[rows], n_groups, k),
        "correct": _counts(data.group[rows & data.correct], data.gold_position[rows & data.correct], n_groups, k),
        "voted": _counts(data.group[rows & data.valid], data.prediction[rows & data.valid], n_groups, k),
    }
    for name in ("cyclic", "full"):
        votes = setting_votes(data, shown_rows, name, selection.vote_ties, selection.tie_seed)
        shown = votes.shown
        g, gold, share = unit_group[shown], unit_gold[shown], votes.shares[shown]
        right = share[np.arange(len(gold)), gold]
        out[name] = {
            "gold": _counts(g, gold, n_groups, k),
            "correct": _counts(g, gold, n_groups, k, right),
            "voted": np.stack([np.bincount(g, weights=share[:, i], minlength=n_groups) for i in range(k)], axis=1),
        }
    return out


def _permutation_voting(ctx: _Context) -> Panel:
    data, selection = ctx.data, ctx.selection
    facets = ["accuracy", "RSD", "CKLD"]
    panel = _new_panel("permutation_voting", facets, {"accuracy": "accuracy (%)", "RSD": "RSD", "CKLD": "CKLD"})
    k = data.max_options
    counts = ctx.votes
    columns = ColumnBuilder()
    for setting, parts in counts.items():
        for name, values in parts.items():
            columns.add(f"{setting}.{name}", values)

    def finalize(sums):
        out = {}
        r = len(sums)
        for setting in counts:
            gold = columns.get(sums, f"{setting}.gold").reshape(r, k)
            correct = columns.get(sums, f"{setting}.correct").reshape(r, k)
            voted = columns.get(sums, f"{setting}.voted").reshape(r, k)
            out[f"{setting}.accuracy"] = 100 * correct.sum(axis=1) / gold.sum(axis=1)
            out[f"{setting}.rsd"] = rsd_from_counts(correct, gold)
            out[f"{setting}.ckld"] = ckld_from_counts(voted, gold)
        return out

    intervals = ctx.bootstrap(columns, finalize)
    voting = selection.voting.copy()
    voting["accuracy_pct"] = 100 * voting["accuracy"]
    model_rows = split_rows(data.model, len(data.models))
    rows_by_setting = {
        "original": selection.presentation.original,
        "cyclic": selection.presentation.cyclic,
        "full": np.ones(data.n_rows, dtype=bool),
    }
    extra = {f"{c}_ci_{s}": [] for c in ("accuracy", "rsd", "ckld") for s in ("low", "high")}
    extra["ckld_infinite_resamples"] = []  # the share of resamples where CKLD was infinite (`ckld_interval`)
    for row in voting.itertuples(index=False):
        m = data.models.index(row.model)
        rows = model_rows[m][rows_by_setting[row.permutation][model_rows[m]]]
        for metric, facet, value in (
            ("accuracy", "accuracy", row.accuracy_pct),
            ("rsd", "RSD", row.rsd),
            ("ckld", "CKLD", row.ckld),
        ):
            key = f"{row.permutation}.{metric}"
            low, high = intervals[m].get(key, (math.nan, math.nan))
            extra[f"{metric}_ci_low"].append(low)
            extra[f"{metric}_ci_high"].append(high)
            if metric == "ckld":
                extra["ckld_infinite_resamples"].append(ctx.infinite_share(m, key))
            if not math.isnan(value):
                panel.points.append(
                    Point(
                        facet,
                        row.model,
                        row.permutation,
                        float(value),
                        low,
                        high,
                        len(rows),
                        rows=rows,
                        questions_source=ctx.questions(rows),
                        interval=ctx.interval_text(m, key),
                        source=ctx.source(row.model),
                    )
                )

    def voting_table() -> pd.DataFrame:
        table = voting.drop(columns=["accuracy"]).assign(**extra)
        table.insert(1, "source", table["model"].map(ctx.source))
        return table

    panel.tables["permutation_voting"] = voting_table
    return panel


def _ranking_changes(ctx: _Context) -> Panel:
    """Ranks per setting with intervals from one joint question-level bootstrap of all models (a rank depends
    on every model's accuracy in the same resample), and Kendall's τ-b against the original from the same
    resamples."""
    data, selection = ctx.data, ctx.selection
    panel = _new_panel("ranking_changes", ["rank"], {"rank": "rank by accuracy (1 = best)"})
    ranking = selection.ranking
    settings = list(dict.fromkeys(ranking["setting"]))
    n_models, n_q = len(data.models), len(data.questions)
    if n_models < 2:
        panel.empty = "Rankings need two or more models (select more runs)."
        return panel
    comparison = selection.presentation.gold_setting
    num = np.zeros((n_q, n_models, len(settings)))
    den = np.zeros_like(num)
    gq, gm = data.group_question, data.group_model

    def add(s, n_per_group, c_per_group):  # one group per (question, model): plain assignment
        den[gq, gm, s] = n_per_group
        num[gq, gm, s] = c_per_group

    n_groups = data.n_groups
    votes = ctx.votes
    for s, name in enumerate(settings):
        if name == "original":
            rows = selection.presentation.original
        elif name.startswith("gold_at_"):
            i = selection.positions.index(name.removeprefix("gold_at_"))
            rows = comparison & (data.gold_position == i)
        else:
            v = votes[name.removesuffix("_vote")]
            add(s, v["gold"].sum(axis=1), v["correct"].sum(axis=1))
            continue
        add(
            s,
            np.bincount(data.group[rows], minlength=n_groups),
            np.bincount(data.group[rows & data.correct], minlength=n_groups),
        )
    point = ranking.pivot(index="model", columns="setting", values="rank").reindex(index=data.models, columns=settings)
    low = np.full((n_models, len(settings)), np.nan)
    high = np.full_like(low, np.nan)
    tau_ci = {}
    if ctx.n_resamples:
        chunks = []
        for weights in ctx.weight_chunks():  # the same resamples as every other interval
            with np.errstate(invalid="ignore", divide="ignore"):
                chunks.append((weights @ num.reshape(n_q, -1)) / (weights @ den.reshape(n_q, -1)))
        acc = np.concatenate(chunks)
        acc = acc.reshape(ctx.n_resamples, n_models, len(settings))
        ranks = _min_ranks_descending(acc)
        tail = 100 * (1 - CONFIDENCE) / 2
        with np.errstate(invalid="ignore"):
            low = np.nanpercentile(ranks, tail, axis=0, method="nearest")  # ranks are whole numbers
            high = np.nanpercentile(ranks, 100 - tail, axis=0, method="nearest")
        for s, name in enumerate(settings):
            if name == "original":
                continue
            taus = _kendall_tau_b(acc[:, :, 0], acc[:, :, s])
            taus = taus[~np.isnan(taus)]
            tau_ci[name] = tuple(np.percentile(taus, [tail, 100 - tail])) if len(taus) else (math.nan, math.nan)
    tau_notes = {}
    for row in selection.kendall_tau.itertuples(index=False):
        low_tau, high_tau = tau_ci.get(row.setting, (math.nan, math.nan))
        tau_notes[row.setting] = (
            f"Kendall's τ-b of this setting's accuracies vs the original: {_fmt(row.kendall_tau)} "
            f"(95% CI [{_fmt(low_tau)}, {_fmt(high_tau)}], p = {_fmt(row.p_value)})"
        )
    model_rows = split_rows(data.model, len(data.models))
    for m, model in enumerate(data.models):
        for s, name in enumerate(settings):
            value = point.iloc[m, s]
            if math.isnan(value):
                continue
            panel.points.append(
                Point(
                    "rank",
                    name,
                    model,
                    float(value),
                    float(low[m, s]),
                    float(high[m, s]),
                    len(model_rows[m]),
                    rows=model_rows[m],
                    questions_source=ctx.questions(model_rows[m]),
                    interval=BOOTSTRAP + " (joint over models, ranks per resample)",
                    note=tau_notes.get(name, ""),
                    source=ctx.source(model),
                )
            )

    def ranking_table() -> pd.DataFrame:
        table = ranking.copy()
        table["accuracy_pct"] = 100 * table["accuracy"]
        table = table.drop(columns=["accuracy"])
        index = {(m, s): (i, j) for i, m in enumerate(data.models) for j, s in enumerate(settings)}
        table["rank_ci_low"] = [low[index[(r.model, r.setting)]] for r in table.itertuples()]
        table["rank_ci_high"] = [high[index[(r.model, r.setting)]] for r in table.itertuples()]
        table.insert(1, "source", table["model"].map(ctx.source))
        return table

    def tau_table() -> pd.DataFrame:
        tau = selection.kendall_tau.copy()
        tau["tau_ci_low"] = [tau_ci.get(s, (math.nan, math.nan))[0] for s in tau["setting"]]
        tau["tau_ci_high"] = [tau_ci.get(s, (math.nan, math.nan))[1] for s in tau["setting"]]
        return tau

    panel.tables["ranking"] = ranking_table
    panel.tables["kendall_tau"] = tau_table
    return panel


def _min_ranks_descending(acc: np.ndarray) -> np.ndarray:
    """Rank along axis 1 (models), 1 = highest, ties share the best rank, NaN stays NaN (pandas' 'min')."""
    greater = (acc[:, None, :, :] > acc[:, :, None, :]).sum(axis=2)  # how many models beat each one
    return np.where(np.isnan(acc), np.nan, greater + 1.0)


def _kendall_tau_b(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Kendall's τ-b between the columns of x and y for each row (resample), over models defined in both."""
    ok = ~np.isnan(x) & ~np.isnan(y)
    dx = np.sign(x[:, :, None] - x[:, None, :])
    dy = np.sign(y[:, :, None] - y[:, None, :])
    pair = ok[:, :, None] & ok[:, None, :]
    upper = np.triu(np.ones(dx.shape[1:], dtype=bool), 1)
    pair &= upper
    dx, dy = np.where(pair, dx, 0), np.where(pair, dy, 0)
    concord = (dx * dy).sum(axis=(1, 2))
    denom = np.sqrt((dx != 0).sum(axis=(1, 2)) * (dy != 0).sum(axis=(1, 2)))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(denom > 0, concord / denom, np.nan)


def _mcnemar(ctx: _Context) -> Panel:
    data, selection = ctx.data, ctx.selection
    facets = ["accuracy on pairs", "Δ original − reversed"]
    panel = _new_panel("mcnemar", facets, {facets[0]: "accuracy (%)", facets[1]: "Δ accuracy (percentage points)"})
    shown = selection.presentation
    if not (shown.original.any() and shown.reversed.any()):
        panel.empty = "McNemar needs the same questions in the original and the exactly reversed option order."
        return panel
    units = ctx.units
    frames = []
    for flag, name in ((shown.original, "original"), (shown.reversed, "reversed")):
        rows = np.flatnonzero(flag)
        frame = pd.DataFrame({"unit": units[rows], f"row_{name}": rows})
        frame["repeat"] = frame.groupby("unit").cumcount()
        frames.append(frame)
    pairs = frames[0].merge(frames[1], on=["unit", "repeat"], how="inner")
    orig_rows = pairs["row_original"].to_numpy(dtype=np.int64)
    rev_rows = pairs["row_reversed"].to_numpy(dtype=np.int64)
    model = data.model[orig_rows]
    orig, rev = data.correct[orig_rows], data.correct[rev_rows]
    table = selection.mcnemar.copy()
    p_values = table["p_value"].to_numpy(dtype=float)
    acc_o, acc_r, delta, d_low, d_high, o_ci, r_ci = [], [], [], [], [], [], []
    for m, name in enumerate(data.models):
        mine = model == m
        n = int(mine.sum())
        b = int((orig & ~rev & mine).sum())
        c = int((~orig & rev & mine).sum())
        pair_rows = np.concatenate([orig_rows[mine], rev_rows[mine]])
        discordant = np.concatenate([orig_rows[mine & (orig != rev)], rev_rows[mine & (orig != rev)]])
        if n == 0:
            for target in (acc_o, acc_r, delta, d_low, d_high):
                target.append(math.nan)
            o_ci.append((math.nan, math.nan))
            r_ci.append((math.nan, math.nan))
            continue
        po, pr = orig[mine].mean(), rev[mine].mean()
        d = (b - c) / n
        se = math.sqrt(max(b + c - (b - c) ** 2 / n, 0.0)) / n
        lo_o, hi_o = wilson(np.array([orig[mine].sum()]), np.array([n]))
        lo_r, hi_r = wilson(np.array([rev[mine].sum()]), np.array([n]))
        acc_o.append(100 * po)
        acc_r.append(100 * pr)
        delta.append(100 * d)
        d_low.append(100 * (d - Z95 * se))
        d_high.append(100 * (d + Z95 * se))
        o_ci.append((100 * lo_o[0], 100 * hi_o[0]))
        r_ci.append((100 * lo_r[0], 100 * hi_r[0]))
        for setting, value, (low, high) in (("original", acc_o[-1], o_ci[-1]), ("reversed", acc_r[-1], r_ci[-1])):
            panel.points.append(
                Point(
                    facets[0],
                    name,
                    setting,
                    value,
                    low,
                    high,
                    n,
                    unit="pairs",
                    rows=pair_rows,
                    questions_source=ctx.questions(pair_rows),
                    interval="Wilson score interval",
                    source=ctx.source(name),
                )
            )
        panel.points.append(
            Point(
                facets[1],
                name,
                "original − reversed",
                delta[-1],
                d_low[-1],
                d_high[-1],
                b + c,
                unit="discordant pairs (both answers listed)",
                rows=discordant,
                questions_source=ctx.questions(discordant),
                interval="paired (McNemar) normal interval for the difference of proportions",
                source=ctx.source(name),
                note=f"exact McNemar p = {p_values[m]:.3g}: {b} pairs right only in the original order, {c} only "
                "reversed",
            )
        )

    def mcnemar_table() -> pd.DataFrame:
        return _mcnemar_table(table, ctx, acc_o, o_ci, acc_r, r_ci, delta, d_low, d_high)

    panel.tables["mcnemar"] = mcnemar_table
    return panel


def _mcnemar_table(table, ctx, acc_o, o_ci, acc_r, r_ci, delta, d_low, d_high) -> pd.DataFrame:
    table = table.assign(
        accuracy_original_pct=acc_o,
        original_ci_low=[c[0] for c in o_ci],
        original_ci_high=[c[1] for c in o_ci],
        accuracy_reversed_pct=acc_r,
        reversed_ci_low=[c[0] for c in r_ci],
        reversed_ci_high=[c[1] for c in r_ci],
        delta_orig_minus_rev_pp=delta,
        delta_ci_low=d_low,
        delta_ci_high=d_high,
    )
    table.insert(1, "source", table["model"].map(ctx.source))
    return table


# the x-axis groups of the gender-probe panel: answer setting over category, short enough for a tick label
PROBE_SETTING_LABELS = {
    "binary_option": "binary",
    "neutral_option": "neutral option",
    "free_form": "free form",
    "neutralized_voice": "neutralized",
}
PROBE_CATEGORY_LABELS = {"independent": "indep.", "stereotypical": "stereo.", "dependent": "dep."}
FREE_FORM_YLABELS = {
    "J": "response similarity J_s",
    "Δ": "gender preference Δ_s",
    "κ": "backbone similarity s",
}
FREE_FORM_NOTES = {
    "J": "J_s: mean cosine similarity of male- and female-voice answers (all-MiniLM-L6-v2)",
    "Δ": "Δ_s: Δ over the answers classified into an option",
    "κ": "s: mean cosine similarity to the backbone's answers",
}


def probe_group(setting: str, category: str) -> str:
    """The gender-probe panel's x label of one answer setting and category: 'binary\nstereo.'."""
    return f"{PROBE_SETTING_LABELS.get(setting, setting)}\n{PROBE_CATEGORY_LABELS.get(category, category)}"


def probe_study_frame(
    frame: pd.DataFrame, backbones: dict[str, str] | None, source: ProbeSource | None
) -> tuple[pd.DataFrame, dict[str, str]]:
    """The gender-probe rows as the gender study reads them (core/metrics/gender_study.py), in the same order:
    each row's model (the run's model for a project, not its run label), its answer setting, a model's text runs
    named '<model> (text)', and the backbone pairs (a project's declared ones; a table's given ones, else its only
    text model as every voiced model's backbone)."""
    from spokenbench.core.metrics.gender_study import with_settings, with_text_model_names

    frame = frame.reset_index(drop=True).copy()
    if source is not None:
        from spokenbench.core.importers.exports import with_neutral_option, with_neutralized_setting

        frame["model"] = frame["run_id"].map(lambda r: source.models.get(int(r), "")).astype(object)
        if "response_id" in frame.columns:
            details = source.details(list(frame["response_id"]))
            frame = frame.drop(columns=[c for c in ("parse_detail", "raw_text") if c in frame.columns])
            frame = frame.merge(details, on="response_id", how="left", sort=False)
        frame["run_id"] = frame["run_id"].astype(int)
        if "item_id" in frame.columns and not any(len(c) == 8 and c.startswith("option_") for c in frame.columns):
            texts = source.option_texts()
            frame = frame.merge(texts, on="item_id", how="left", sort=False) if len(texts.columns) > 1 else frame
        frame = with_neutral_option(frame, source.settings)
        frame = with_neutralized_setting(frame, source.neutralized_voices)
        pairs = dict(source.backbones)
    else:
        frame["model"] = frame["model"].astype(str)
        pairs = dict(backbones or {})
    frame, pairs = with_text_model_names(frame, pairs)
    if source is None and backbones is None:
        pairs = _only_text_backbone(frame)
    return with_settings(frame).reset_index(drop=True), pairs


def _gender_probe(
    frame: pd.DataFrame, simulated, n_resamples, seed, backbones, source: ProbeSource | None = None
) -> tuple[Panel, pd.DataFrame]:
    """The panel, and the probe rows its points index (the gender study's rows: model and setting columns)."""
    facets = ["J", "Δ", "ν", "κ"]
    panel = _new_panel(
        "gender_probe",
        facets,
        {"J": "response overlap J", "Δ": "gender preference Δ", "ν": "neutral response rate ν", "κ": "backbone κ"},
    )
    needed = ("question_id", "model", "category", "voice_gender", "prediction", "option_orientation")
    if frame.empty or any(c not in frame.columns for c in needed):
        panel.empty = (
            "No gender-probe responses in the selected runs. Evaluate the project's gender probes (the demo holds "
            "simulated gender-study runs: select them in the run picker)."
        )
        return panel, frame
    from spokenbench.core.metrics.gender_study import SETTING_NAMES, analyze_gender_study

    study_frame, pairs = probe_study_frame(frame, backbones, source)
    study = analyze_gender_study(
        study_frame,
        pairs,
        source="the selected runs",
        n_resamples=n_resamples,
        seed=seed,
        require_backbones=False,
    )
    flags = source.simulated if source is not None else simulated
    panel.views = {setting: PROBE_SETTING_LABELS.get(setting, setting) for setting in study.settings}
    panel.view_ylabels = {"free_form": FREE_FORM_YLABELS}

    def is_simulated(model: str) -> bool:
        from spokenbench.core.metrics.gender_study import TEXT_SUFFIX

        base = model[: -len(TEXT_SUFFIX)] if model.endswith(TEXT_SUFFIX) else model
        return bool(flags.get(model) or flags.get(base))

    names = {str(m) for m in study.table["model"]}
    for model in names:
        simulated.setdefault(model, is_simulated(model))
    origin = {m: "yours (simulated)" if simulated.get(m) else "yours" for m in names}
    key = pd.Series(list(zip(study_frame["setting"], study_frame["model"].astype(str), study_frame["category"])))
    codes, keys = pd.factorize(key)
    parts = dict(zip(keys, split_rows(codes, len(keys)))) if len(keys) else {}
    questions = study_frame["question_id"].astype(str).to_numpy(dtype=object)
    order = {s: i for i, s in enumerate(study.settings)}
    table = study.table.assign(_order=study.table["setting"].map(order))
    table = table.sort_values(["_order", "category", "model"], key=_category_order, kind="stable")
    metrics = (("J", "J"), ("Δ", "delta"), ("ν", "neutral_rate"), ("κ", "kappa"))
    # the free form's own measures in the same places: J_s (answer similarity across voices) where J is, Δ_s where
    # Δ is, s (similarity to the backbone's answers) where κ is; its view names them (FREE_FORM_YLABELS)
    free_metrics = (("J", "J_s"), ("Δ", "delta_s"), ("ν", "neutral_rate"), ("κ", "s"))
    for row in table.to_dict("records"):
        free = row["setting"] == "free_form"
        rows = parts.get((row["setting"], row["model"], row["category"]), np.zeros(0, dtype=np.int64))
        setting_name = SETTING_NAMES.get(row["setting"], row["setting"])
        for facet, column in free_metrics if free else metrics:
            value = row.get(column)
            if value is None or (isinstance(value, float) and math.isnan(value)):
                continue
            note = f"setting: {setting_name}"
            if free and facet in FREE_FORM_NOTES:
                note += f"; {FREE_FORM_NOTES[facet]}"
            if facet == "κ" and row.get("backbone"):
                note += f"; against the backbone {row['backbone']}"
            if facet == "Δ" and np.isfinite(row.get("p_value", np.nan)):
                note += f"; t-test p = {row['p_value']:.3g}"
            panel.points.append(
                Point(
                    facet,
                    probe_group(row["setting"], row["category"]),
                    row["model"],
                    float(value),
                    float(row.get(f"{column}_ci_low", math.nan)),
                    float(row.get(f"{column}_ci_high", math.nan)),
                    len(rows),
                    rows=rows,
                    questions_source=tuple(sorted(set(questions[rows]))),
                    source=origin[row["model"]],
                    note=note,
                )
            )
    out = study.table.copy()
    out.insert(2, "source", out["model"].map(origin))
    panel.tables["gender_probe"] = out
    panel.tables["gender_probe_per_question"] = study.per_question
    if not (study.table["kappa"].notna()).any():
        panel.description += (
            " κ needs a text backbone run of the same probes, paired with the speech model (`spokenbench backbone "
            "DIR --pair SPEECH=TEXT`)."
        )
    if study.notes:
        panel.description += " " + " ".join(f"Note: {n}." for n in study.notes)
    return panel, study_frame


def _category_order(column: pd.Series) -> pd.Series:
    if column.name != "category":
        return column
    known = list(PROBE_CATEGORY_LABELS)
    return column.map(lambda c: known.index(c) if c in known else len(known))


def _only_text_backbone(frame: pd.DataFrame) -> dict[str, str]:
    """When exactly one model of a table answered the probes as text (no voice), it is every voiced model's
    backbone for κ; otherwise no pairing is guessed."""
    voice = frame["voice_gender"].astype(object).where(frame["voice_gender"].notna(), "").astype(str).str.strip()
    models = frame["model"].astype(str)
    voiced = set(models[voice != ""])
    text = sorted(set(models) - voiced)
    if len(text) != 1:
        return {}
    return {m: text[0] for m in sorted(voiced)}


# --------------------------------------------------------------------------------------------------
# The published layer (resources/published/, see its README)


@functools.lru_cache(maxsize=64)
def read_published(study: str, name: str) -> pd.DataFrame:
    """A published CSV as printed (every cell a string), cached: the files never change at run time."""
    return pd.read_csv(published_table(study, name), dtype=str, keep_default_na=False)


def _num(value) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan


def _published_points(
    frame: pd.DataFrame, facet, x: str, series: str, value: str, label: str, low: str | None = None, high=None
) -> list[Point]:
    points = []
    for row in frame.to_dict("records"):
        points.append(
            Point(
                facet(row) if callable(facet) else facet,
                str(row[x]),
                str(row[series]),
                _num(row[value]),
                _num(row[low]) if low else math.nan,
                _num(row[high]) if high else math.nan,
                interval="95% bootstrap CI as printed" if low else "",
                source=label,
            )
        )
    return points


def _make_published(study: str, table: str, file: str, caption: str, note: str, build) -> Published:
    frame = read_published(study, file)
    published = Published(study, table, file, caption, frame, [], note)
    published.points = build(frame, published.label)
    return published


def _mean_of_cells(frame: pd.DataFrame, by: list[str], value: str = "accuracy_pct") -> pd.DataFrame:
    numbers = frame.assign(**{value: pd.to_numeric(frame[value], errors="coerce")})
    return numbers.groupby(by, sort=False)[value].mean().reset_index()


def _published_accuracy() -> list[Published]:
    out = []
    specs = [
        ("order", "Tables 6, 11-17", "tables11_17_accuracy_order_by_model.csv", "option_order"),
        ("gender", "Table 18", "table18_accuracy_gender.csv", "gender"),
        ("accent", "Table 19", "table19_accuracy_accent.csv", "accent"),
        ("language", "Table 20", "table20_accuracy_language.csv", "language"),
    ]
    for facet, table, file, column in specs:

        def build(frame, label, facet=facet, column=column):
            means = _mean_of_cells(frame, ["model", column])
            return _published_points(means, facet, column, "model", "accuracy_pct", label)

        who = "every model" if facet == "order" else "Gemini 2.5 Flash"
        out.append(
            _make_published(
                "biasinear",
                table,
                file,
                f"Accuracy (%) by {facet} ({who})",
                "Bars: the mean of the printed cells at each level (the tables print one cell per language × accent "
                "× gender × order); the table beside is as printed.",
                build,
            )
        )
    return out


def _published_entropy_distribution() -> list[Published]:
    return [
        _make_published(
            "biasinear",
            "Table 22",
            "table22_entropy_order_variants.csv",
            "Mean question entropy under four option-order variants",
            "Fig. 2's distributions are not tabulated in the paper; Table 22 prints the mean entropy per model.",
            lambda frame, label: _published_points(
                frame, "mean entropy", "model", "option_order_variant", "mean_entropy", label
            ),
        )
    ]


def _published_kappa_apes() -> list[Published]:
    return [
        _make_published(
            "biasinear",
            "Table 21",
            "table21_apes_orig_vs_rev.csv",
            "APES of language, accent and gender under original vs reversed option order",
            "The paper plots κ against APES (Figs. 4-5) but prints no κ table; Table 21 prints APES.",
            lambda frame, label: _published_points(
                frame, lambda row: f"APES · {row['variable']}", "model", "option_order", "apes", label
            ),
        )
    ]


def _published_cs_ca() -> list[Published]:
    return [
        _make_published(
            "biasinear",
            "Table 5",
            "table05_entropy_cs_ca.csv",
            "Mean entropy of CS vs CA questions per perturbed variable",
            "Variable option_order is this project's 'order' factor.",
            lambda frame, label: _published_points(
                frame,
                lambda row: "order" if row["variable"] == "option_order" else row["variable"],
                "model",
                "question_subset",
                "mean_entropy",
                label,
            ),
        )
    ]


def _table3(metrics: tuple[str, ...], permutations: tuple[str, ...], facet_names: dict[str, str]):
    def build(frame, label):
        chosen = frame["metric"].isin(metrics) & frame["permutation"].isin(permutations)
        rows = frame[chosen & (frame["dataset"] == DRAWN_DATASET)]
        return _published_points(
            rows, lambda row: f"{facet_names[row['metric']]} · {row['dataset']}", "model", "permutation", "value", label
        )

    return build


def _published_gold_position() -> list[Published]:
    return [
        _make_published(
            "hearing_the_order",
            "Table 3",
            "table03_permutation_results.csv",
            "RSD and CKLD in the original order, per dataset",
            "Fig. 1's Δ accuracy by gold position is plotted, not tabulated; Table 3's Original rows print RSD and "
            f"CKLD (drawn: {DRAWN_DATASET}; the table has all four datasets).",
            _table3(("rsd", "ckld"), ("original",), {"rsd": "RSD", "ckld": "CKLD"}),
        ),
        _make_published(
            "hearing_the_order",
            "Table 1",
            "table01_answer_position_counts.csv",
            "Samples per gold-answer position",
            "",
            lambda frame, label: _published_points(
                frame, "gold share (%)", "answer_position", "dataset", "pct_of_dataset", label
            ),
        ),
    ]


def _published_voting() -> list[Published]:
    return [
        _make_published(
            "hearing_the_order",
            "Table 3",
            "table03_permutation_results.csv",
            "Accuracy, RSD and CKLD before (Original) and after voting (Cyclic, Full)",
            f"Drawn: {DRAWN_DATASET}; the table has all four datasets.",
            _table3(
                ("accuracy_pct", "rsd", "ckld"),
                ("original", "cyclic", "full"),
                {"accuracy_pct": "accuracy (%)", "rsd": "RSD", "ckld": "CKLD"},
            ),
        )
    ]


def _published_ranking() -> list[Published]:
    def build(frame, label):
        rows = frame[(frame["metric"] == "accuracy_pct") & (frame["dataset"] == DRAWN_DATASET)].copy()
        rows["accuracy"] = pd.to_numeric(rows["value"], errors="coerce")
        rows["rank"] = rows.groupby(["dataset", "permutation"])["accuracy"].rank(ascending=False, method="min")
        return _published_points(rows, lambda row: f"rank · {row['dataset']}", "permutation", "model", "rank", label)

    return [
        _make_published(
            "hearing_the_order",
            "Table 3",
            "table03_permutation_results.csv",
            "Accuracy per permutation strategy (ranks computed here from the printed accuracies)",
            "Fig. 3's ranks are plotted, not tabulated: the ranks drawn are computed from Table 3's printed "
            f"accuracy on {DRAWN_DATASET}.",
            build,
        )
    ]


def _published_mcnemar() -> list[Published]:
    def build(frame, label):
        means = _mean_of_cells(frame, ["model", "option_order"])
        points = _published_points(means, "accuracy on pairs", "model", "option_order", "accuracy_pct", label)
        deltas = frame.drop_duplicates(["model", "language", "accent", "gender"])
        deltas = _mean_of_cells(deltas, ["model"], "delta_orig_minus_rev_pct").assign(series="original − reversed")
        return points + _published_points(
            deltas, "Δ original − reversed", "model", "series", "delta_orig_minus_rev_pct", label
        )

    return [
        _make_published(
            "biasinear",
            "Tables 6, 11-17",
            "tables11_17_accuracy_order_by_model.csv",
            "Accuracy by option order per model and its printed Δ (original − reversed)",
            "Bars: means of the printed cells and Δs; the paper reports no McNemar test.",
            build,
        )
    ]


GENDER_METRICS = {
    "response_overlap_j": "J",
    "gender_preference_delta": "Δ",
    "neutral_response_rate_nu": "ν",
    "backbone_influence_kappa": "κ",
}


def _published_gender() -> list[Published]:
    def build(frame, label):
        rows = frame[frame["metric"].isin(GENDER_METRICS)]
        points = _published_points(rows, lambda row: GENDER_METRICS[row["metric"]], "category", "model", "value", label)
        cis = read_published("gender_differentiation", "table08_overlap_ci_sec3_baseline.csv")
        bounds = {
            (r["model"], r["category"]): (_num(r["ci95_lower"]), _num(r["ci95_upper"])) for _, r in cis.iterrows()
        }
        for point in points:
            if point.facet == "J" and (point.series, point.x) in bounds:
                point.low, point.high = bounds[(point.series, point.x)]
                point.interval = "95% bootstrap CI as printed (Table 8)"
        return points

    return [
        _make_published(
            "gender_differentiation",
            "Table 1",
            "table01_speechlm_baseline.csv",
            "J, Δ, κ and ν of the LLaMA-Omni SpeechLMs (baseline, binary options); J intervals from Table 8",
            "Stars in the `significance` column: * p < 0.05, ** p < 0.01, *** p < 0.001.",
            build,
        )
    ]


@functools.cache
def _published_cached(key: str) -> tuple[Published, ...]:
    return tuple(PUBLISHED[key]())


def published_for(key: str) -> list[Published]:
    """The published tables beside panel `key` (read once per process; the files never change)."""
    return list(_published_cached(key))


PUBLISHED = {
    "accuracy_by_level": _published_accuracy,
    "entropy_distribution": _published_entropy_distribution,
    "kappa_vs_apes": _published_kappa_apes,
    "entropy_cs_ca": _published_cs_ca,
    "gold_position": _published_gold_position,
    "permutation_voting": _published_voting,
    "ranking_changes": _published_ranking,
    "mcnemar": _published_mcnemar,
    "gender_probe": _published_gender,
}


# --------------------------------------------------------------------------------------------------
# What a clicked point's responses were: questions, answers, and the audio the model heard


def point_details(project, panels: PanelSet, point: Point, probe: bool = False, limit: int = 500) -> pd.DataFrame:
    """The responses behind a point (at most `limit`), with each question's text and options, the model's raw
    answer, and the audio file it heard: the assembled input of that item and condition when one is stored,
    else the item's question clip in the same voice (`audio_kind` says which), else none."""
    from spokenbench.core.evaluation.store import assembled_audio, assembled_input_rows, clip_audio, question_clips
    from spokenbench.core.metrics.store import item_texts, response_texts
    from spokenbench.core.store.project import audio_store_of

    rows = panels.responses_behind(point, probe).head(limit).copy()
    if rows.empty or "item_id" not in rows.columns:
        return rows.assign(question_text="", options="", raw_text="", audio_path="", audio_kind="")
    conn = project.conn
    item_ids = sorted({int(i) for i in rows["item_id"].dropna()})
    texts = item_texts(conn, item_ids)
    rows["question_text"] = [texts.get(int(i), ("", ""))[0] for i in rows["item_id"]]
    rows["options"] = [texts.get(int(i), ("", ""))[1] for i in rows["item_id"]]
    if "response_id" in rows.columns:
        answers = response_texts(conn, [int(i) for i in rows["response_id"]])
        for position, column in enumerate(("raw_text", "parse_detail", "error", "transcript")):
            rows[column] = [answers.get(int(i), (None,) * 4)[position] for i in rows["response_id"]]

    audio = audio_store_of(conn)
    wanted = set(item_ids)
    inputs: dict[int, list[tuple[int, dict]]] = {}
    for row in assembled_input_rows(conn):
        if row["item_id"] in wanted:
            inputs.setdefault(row["item_id"], []).append((row["id"], json.loads(row["condition_key"])))
    files = assembled_audio(conn, [i for entries in inputs.values() for i, _ in entries])
    clips_by_item = {item_id: question_clips(conn, item_id) for item_id in item_ids if item_id not in inputs}
    clip_files = clip_audio(conn, [c["id"] for clips in clips_by_item.values() for c in clips])
    paths, kinds = [], []
    for record in rows.to_dict("records"):
        item_id = int(record["item_id"])
        path, kind = "", ""
        for input_id, factors in inputs.get(item_id, []):
            if all(str(record.get(k, v)) == str(v) for k, v in factors.items()) and input_id in files:
                sha, fmt, _ = files[input_id]
                path, kind = str(audio.path_for(sha, fmt)), "assembled input"
                break
        if not path:
            path, kind = _matching_clip(record, clips_by_item.get(item_id, []), clip_files, audio)
        paths.append(path)
        kinds.append(kind)
    rows["audio_path"] = paths
    rows["audio_kind"] = kinds
    return rows


def _matching_clip(record: dict, clips, clip_files, audio) -> tuple[str, str]:
    """The item's question clip closest to the response's condition: the same voice, else the same accent and
    voice gender, else the same accent."""
    gender = record.get("voice_gender") or record.get("gender")
    tiers = (
        ("question clip, same voice", lambda c: record.get("voice") and c["voice"] == record.get("voice")),
        (
            "question clip, same accent and voice gender",
            lambda c: c["accent"] == record.get("accent") and gender and c["speaker_gender"] == gender,
        ),
        ("question clip, same accent", lambda c: c["accent"] == record.get("accent")),
    )
    for kind, matches in tiers:
        for clip in clips:
            found = clip_files.get(clip["id"])
            if found and found[0] and matches(clip):
                return str(audio.path_for(found[0], found[1])), kind
    return "", ""


def _fmt(value) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "—"
    if isinstance(value, float) and math.isinf(value):
        return "∞"
    magnitude = abs(value)
    if magnitude >= 100:
        return f"{value:.1f}"
    if magnitude >= 10:
        return f"{value:.2f}"
    return f"{value:.3f}"
