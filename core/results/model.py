"""What a Results panel is made of (plain data the page draws): points with their intervals and rows,
published tables, panels and the set of them; the panels' names and what each mirrors."""

from __future__ import annotations

import math
import threading
from collections.abc import Callable
from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd

from spokenbench.core.results.names import PAPERS

DEFAULT_RESAMPLES = 1000
MAX_KEPT_WEIGHTS = 4_000_000  # resamples × questions kept between refreshes (32 MB); beyond, drawn in chunks
MAX_DENSE_SUMS = 20_000_000  # questions × models × columns laid out densely for the bootstrap (160 MB)
Z95 = 1.959963984540054
# Factor columns the panels use, in this order, when the table has two or more levels of them
PANEL_FACTORS = ("language", "accent", "gender", "order", "speed", "volume", "snr_db", "voice_source", "spoken_labels")
BOOTSTRAP = "question-level percentile bootstrap"
# Hearing the Order's Table 3 covers four datasets; the figures draw the spoken one (the table beside has all)
DRAWN_DATASET = "SPEECH-MMAU"


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

    def __getstate__(self) -> dict:
        """Pickled with its questions worked out: a closure over the engine's arrays cannot cross to another
        process (the Results page's panels come back from a job process)."""
        self.questions  # noqa: B018 - resolves `questions_source`
        return self.__dict__

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

    def __reduce__(self):
        """Pickled as plain tables, every pending one computed first (no lock, no closure crosses processes)."""
        return (LazyTables, (dict(self.items()),))


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

    def __getstate__(self) -> dict:
        """Pickled without the published layer, which never changes at run time: the receiving process takes
        it from its own cache (`published_for`), so a job process's answer carries only the user's numbers."""
        state = dict(self.__dict__)
        state["published"] = bool(self.published)
        return state

    def __setstate__(self, state: dict) -> None:
        from spokenbench.core.results.published_overlay import published_for  # it builds on this module

        had_published = state.pop("published")
        self.__dict__.update(state, published=published_for(state["key"]) if had_published else [])

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
    # the colours' order: a project's models in the order of their first run (a model added later takes the next
    # colour, the others keep theirs); a table's: `series`
    color_order: list[str] = field(default_factory=list)

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


@dataclass
class ProbeSource:
    """What a project knows about its gender-probe answers beyond the engine's columns (project_panels): each
    run's model and answer setting, the voices that are gender-neutralized, the declared backbone pairs, and each
    answer's parse detail and reply (the neutral option, free form). With it the gender-probe panel groups answers
    as the report and the detail view do (core/results/gender_views.py): by model and answer setting, not by run."""

    models: dict[int, str]  # run id -> model
    settings: dict[int, str]  # run id -> answer setting (core.importers.exports.run_answer_settings)
    neutralized_voices: set[str]
    backbones: dict[str, str]  # the declared pairs (core.metrics.gender_backbones)
    simulated: dict[str, bool]  # model -> simulated
    details: Callable[[list], pd.DataFrame]  # response ids -> response_id, parse_detail, raw_text
    # item_id and the option texts (option_a, option_b, …) of the gender probes: the free form's Δ_s rule needs them
    option_texts: Callable[[], pd.DataFrame] = lambda: pd.DataFrame(columns=["item_id"])
