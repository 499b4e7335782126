"""The report's figures as matplotlib `Figure` objects, built without pyplot so no GUI backend is ever
chosen: the CLI saves them with Agg (PNG) and the SVG backend, the app can put the same objects on a
canvas, and both get identical figures from the same data.

Each builder returns None when the data has nothing to draw (e.g. no CS/CA labels)."""

from __future__ import annotations

import contextlib
import io
import threading
from pathlib import Path

import matplotlib
import numpy as np
from matplotlib.figure import Figure

from spokenbench.core.metrics.matplotlib_hooks import PINNED_MATPLOTLIB

STYLE = {
    "font.family": "DejaVu Sans",  # ships with matplotlib: the same glyphs on every machine
    "font.size": 9,
    "axes.titlesize": 10,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "svg.hashsalt": "spokenbench",  # stable SVG ids, so re-running a report gives the same files
    "svg.fonttype": "path",
    "savefig.dpi": 150,
}
FACTOR_MARKERS = "osD^vP*Xh<>p"
ENTROPY_LABEL = "question entropy $H_q$ (normalized, 0–1)"


@contextlib.contextmanager
def figure_style():
    _settle_backend()
    with matplotlib.rc_context(STYLE):
        yield


def _settle_backend() -> None:
    """Some artists (boxplots) read every rcParam; reading an undecided backend makes matplotlib import
    pyplot and pick a GUI backend, possibly Qt. When nobody has chosen one yet (the CLI, tests), choose Agg;
    an app that chose its backend keeps it. Figures are drawn and saved without any backend either way."""
    if matplotlib.get_backend(auto_select=False) is None:
        matplotlib.use("agg")


def _colors(n: int):
    cmap = matplotlib.colormaps["tab10" if n <= 10 else "tab20"]
    return [cmap(i % cmap.N) for i in range(n)]


def entropy_distribution(analysis) -> Figure | None:
    """Per-model distribution of question entropy H_q (BiasInEar Fig. 2)."""
    metrics = analysis.metrics
    data = metrics.data
    series = [metrics.entropy[(data.group_model == m) & ~np.isnan(metrics.entropy)] for m in range(len(data.models))]
    if not any(len(s) for s in series):
        return None
    with figure_style():
        fig = Figure(figsize=(max(4.0, 0.8 * len(series) + 2), 3.6), layout="constrained")
        ax = fig.add_subplot()
        ax.boxplot(
            [s if len(s) else [np.nan] for s in series],
            tick_labels=data.models,
            showmeans=True,
            meanprops={"marker": "^", "markerfacecolor": "white", "markeredgecolor": "black"},
        )
        ax.set_ylabel(ENTROPY_LABEL)
        ax.set_xlabel("model")
        ax.set_ylim(-0.02, 1.02)
        ax.set_title("Answer entropy per question across configurations\n(box: IQR, line: median, △: mean)")
        ax.tick_params(axis="x", rotation=30)
    return fig


def entropy_cs_ca(analysis) -> Figure | None:
    """Question entropy of culturally sensitive vs agnostic questions per model (BiasInEar Fig. 3)."""
    metrics = analysis.metrics
    data = metrics.data
    label = data.group_cultural_label
    if not ((label == 1).any() and (label == 0).any()):
        return None
    with figure_style():
        fig = Figure(figsize=(max(4.5, 1.1 * len(data.models) + 2), 3.6), layout="constrained")
        ax = fig.add_subplot()
        colors = {"CS": "#d95f02", "CA": "#1b9e77"}
        positions, boxes = [], []
        for m in range(len(data.models)):
            for offset, (_name, code) in ((-0.2, ("CS", 1)), (0.2, ("CA", 0))):
                values = metrics.entropy[(data.group_model == m) & (label == code) & ~np.isnan(metrics.entropy)]
                boxes.append(values if len(values) else [np.nan])
                positions.append(m + offset)
        parts = ax.boxplot(boxes, positions=positions, widths=0.35, patch_artist=True, showmeans=True)
        for i, patch in enumerate(parts["boxes"]):
            patch.set_facecolor(colors["CS" if i % 2 == 0 else "CA"])
            patch.set_alpha(0.6)
        ax.set_xticks(range(len(data.models)), data.models, rotation=30)
        ax.set_ylabel(ENTROPY_LABEL)
        ax.set_xlabel("model")
        ax.set_ylim(-0.02, 1.02)
        ax.legend(
            [parts["boxes"][0], parts["boxes"][1]],
            ["culturally sensitive (CS)", "culturally agnostic (CA)"],
            loc="upper left",
            bbox_to_anchor=(1.0, 1.0),
        )
        ax.set_title("Entropy of CS vs CA questions")
    return fig


def kappa_vs_apes(analysis) -> Figure | None:
    """Mean Fleiss' κ against mean APES per model and factor (BiasInEar Figs. 4-5), with bootstrap
    intervals as error bars when computed."""
    data = analysis.data
    summary = analysis.summary_columns  # plain columns: drawing needs no pandas (issue 28)
    if not data.factors:
        return None
    colors = _colors(len(data.models))
    with figure_style():
        fig = Figure(figsize=(6.4, 4.4), layout="constrained")
        ax = fig.add_subplot()
        for fi, f in enumerate(data.factors):
            for m in range(len(data.models)):
                x, y = summary[f"apes[{f}]"][m], summary[f"kappa[{f}]"][m]
                if np.isnan(x) or np.isnan(y):
                    continue
                xerr = yerr = None
                if analysis.intervals:
                    ci = analysis.intervals[m]
                    xerr = _err(x, ci.get(f"apes[{f}]"))
                    yerr = _err(y, ci.get(f"fleiss_kappa[{f}]"))
                ax.errorbar(
                    x,
                    y,
                    xerr=xerr,
                    yerr=yerr,
                    marker=FACTOR_MARKERS[fi % len(FACTOR_MARKERS)],
                    color=colors[m],
                    markersize=7,
                    linestyle="none",
                    elinewidth=0.8,
                    capsize=2,
                )
        ax.axhline(0, color="grey", linewidth=0.8)
        ax.set_xlabel("APES (mean pairwise entropy shift across levels; lower = more robust)")
        ax.set_ylabel("Fleiss' κ (agreement across levels; higher = more consistent)")
        ax.set_title("Fleiss' κ vs APES by factor")
        factor_handles = [
            ax.plot([], [], marker=FACTOR_MARKERS[i % len(FACTOR_MARKERS)], color="black", linestyle="none")[0]
            for i in range(len(data.factors))
        ]
        model_handles = [
            ax.plot([], [], marker="s", color=colors[m], linestyle="none")[0] for m in range(len(data.models))
        ]
        first = ax.legend(factor_handles, data.factors, title="factor", loc="upper right", fontsize=8)
        ax.add_artist(first)
        ax.legend(
            model_handles,
            data.models,
            title="model",
            loc="lower left",
            fontsize=7,
            ncol=2 if len(data.models) > 5 else 1,
        )
    return fig


def _err(value: float, interval) -> np.ndarray | None:
    if not interval or any(v is None or np.isnan(v) for v in interval):
        return None
    return np.array([[max(value - interval[0], 0.0)], [max(interval[1] - value, 0.0)]])


def position_accuracy_change(analysis) -> Figure | None:
    """Accuracy change (percentage points) when the gold answer sits at each position, against the
    original order (Hearing the Order Fig. 1)."""
    selection = analysis.selection
    per_model = selection.per_model_columns
    n_models = len(per_model["model"])
    deltas = (
        np.array([[per_model[f"delta_accuracy_gold_{p}"][m] for p in selection.positions] for m in range(n_models)])
        * 100
    )
    if np.all(np.isnan(deltas)):
        return None
    colors = _colors(n_models)
    width = 0.8 / n_models
    with figure_style():
        fig = Figure(figsize=(max(5.0, 1.2 * len(selection.positions) + 2), 3.6), layout="constrained")
        ax = fig.add_subplot()
        x = np.arange(len(selection.positions))
        for m in range(n_models):
            ax.bar(
                x - 0.4 + width * (m + 0.5),
                np.nan_to_num(deltas[m]),
                width,
                color=colors[m],
                label=per_model["model"][m],
            )
        ax.axhline(0, color="black", linewidth=0.8)
        ax.set_xticks(x, selection.positions)
        ax.set_xlabel("position of the gold answer (presented letter)")
        ax.set_ylabel("Δ accuracy vs original order (percentage points)")
        ax.set_title(f"Accuracy change by gold position\n({selection.comparison_rows} vs original order)")
        ax.legend(fontsize=7, ncol=2 if n_models > 5 else 1)
    return fig


def ranking_changes(analysis) -> Figure | None:
    """Each model's rank (1 = most accurate) in each setting (Hearing the Order Fig. 3)."""
    ranking = analysis.selection.ranking_columns
    settings = list(dict.fromkeys(ranking["setting"]))
    models = list(dict.fromkeys(ranking["model"]))
    if len(models) < 2:
        return None
    rank_of = dict(zip(zip(ranking["model"], ranking["setting"]), ranking["rank"]))
    colors = _colors(len(models))
    with figure_style():
        fig = Figure(figsize=(max(5.0, 0.9 * len(settings) + 2.5), 3.8), layout="constrained")
        ax = fig.add_subplot()
        for m, model in enumerate(models):
            ranks = np.array([rank_of.get((model, setting), np.nan) for setting in settings], dtype=float)
            ax.plot(range(len(settings)), ranks, marker="o", color=colors[m], label=model)
        ax.set_xticks(range(len(settings)), [s.replace("_", " ") for s in settings], rotation=30)
        ax.set_yticks(range(1, len(models) + 1))
        ax.set_ylim(len(models) + 0.5, 0.5)
        ax.set_xlabel("setting")
        ax.set_ylabel("rank by accuracy (1 = best)")
        ax.set_title("Model ranking across settings")
        ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.0, 0.5))
    return fig


def gender_probe_panel(metrics) -> Figure | None:
    """J, Δ and ν per model and category with bootstrap intervals (the gender paper's Tables 1-4)."""
    table = metrics.table
    if table.empty:
        return None
    models = list(dict.fromkeys(table["model"]))
    categories = list(dict.fromkeys(table["category"]))
    colors = _colors(len(models))
    width = 0.8 / len(models)
    panels = [
        ("J", "response overlap J (0–1)"),
        ("delta", "gender preference Δ (>0: male-oriented)"),
        ("neutral_rate", "neutral response rate ν (0–1)"),
    ]
    with figure_style():
        fig = Figure(figsize=(11, 3.6), layout="constrained")
        axes = fig.subplots(1, 3)
        for ax, (name, label) in zip(axes, panels):
            x = np.arange(len(categories))
            for m, model in enumerate(models):
                rows = table[table["model"] == model].set_index("category").reindex(categories)
                values = rows[name].to_numpy(dtype=float)
                yerr = None
                if f"{name}_ci_low" in rows.columns:
                    lo, hi = rows[f"{name}_ci_low"].to_numpy(dtype=float), rows[f"{name}_ci_high"].to_numpy(dtype=float)
                    yerr = np.nan_to_num(np.vstack([np.maximum(values - lo, 0), np.maximum(hi - values, 0)]))
                ax.bar(
                    x - 0.4 + width * (m + 0.5),
                    np.nan_to_num(values),
                    width,
                    yerr=yerr,
                    capsize=2,
                    color=colors[m],
                    label=model,
                    error_kw={"elinewidth": 0.8},
                )
            ax.set_xticks(x, categories)
            ax.set_xlabel("question category")
            ax.set_ylabel(label)
            if name == "delta":
                ax.axhline(0, color="black", linewidth=0.8)
        axes[0].legend(fontsize=7)
        fig.suptitle("Gender probes: overlap, preference and neutral responses (error bars: 95% bootstrap CI)")
    return fig


MCQ_FIGURES = {
    "fig_entropy_distribution": entropy_distribution,
    "fig_entropy_cs_ca": entropy_cs_ca,
    "fig_kappa_vs_apes": kappa_vs_apes,
    "fig_accuracy_change_by_gold_position": position_accuracy_change,
    "fig_ranking_changes": ranking_changes,
}


def mcq_figures(analysis) -> dict[str, Figure | None]:
    return {name: build(analysis) for name, build in MCQ_FIGURES.items()}


# zlib level of the PNGs: 3 encodes as fast as 1 and ~30% faster than Pillow's default 6, the same pixels, files
# ~7% larger (issue 28, round 5: measured on the benchmark's 100,800-row figures; level 1 made them 11% larger)
PNG_COMPRESS_LEVEL = 3


def save_figure(fig: Figure, out_dir: Path, name: str, formats: tuple[str, ...] = ("png", "svg")) -> list[Path]:
    """PNG (Agg) and SVG (of `formats`), with no timestamps in the files. An SVG's constrained layout starts from
    where the PNG's left the axes, so an SVG alone is laid out after the PNG's layout and drawing into memory
    (no PNG encoded): the same SVG file either way."""
    paths = []
    with figure_style(), _text_layouts_shared():
        if "png" in formats:
            paths.append(out_dir / f"{name}.png")
            _savefig_laid_out_once(
                fig,
                paths[-1],
                format="png",
                metadata={"Software": None},
                pil_kwargs={"compress_level": PNG_COMPRESS_LEVEL},
            )
        elif "svg" in formats:
            _savefig_laid_out_once(fig, io.BytesIO(), format="rgba")  # the PNG's save short of encoding
        if "svg" in formats:
            paths.append(out_dir / f"{name}.svg")
            _savefig_laid_out_once(fig, paths[-1], format="svg", metadata={"Date": None})
    return paths


def warm_up() -> None:
    """Build matplotlib's mathtext parser (the entropy figures' axis label is mathtext) in a process that will
    draw figures, before it has any to draw: ~0.05 s of CPU, paid once per process on its first mathtext, ~25%
    of a figure (issue 28, round 7). The report's first figure process does it while it waits for the data, and
    the processes it forks then inherit the parser instead of each building its own. A cache matplotlib keeps
    for the process: the figures drawn after it are the same."""
    from matplotlib.mathtext import MathTextParser

    with figure_style():
        MathTextParser("path").parse(ENTROPY_LABEL)


def _savefig_laid_out_once(fig: Figure, path: Path | io.BytesIO, **options) -> None:
    """`fig.savefig`, the same figure, with less drawing (issue 28): with a layout engine, matplotlib first
    draws the whole figure with output switched off, only so the engine runs, with a renderer of its own, then
    draws it for real with the engine off. Here the engine is detached during the save, so there is no such
    pass, and runs at the start of the real draw with the real renderer, as `Figure.draw` would have: the text
    extents it measures are then measured once (an SVG's dry renderer was a second one, with its own cache).
    Each format keeps its own layout, solved with its own renderer, as before."""
    layout_engine = fig.get_layout_engine()
    tight = options.get("bbox_inches", matplotlib.rcParams["savefig.bbox"]) == "tight"  # needs the dry pass
    if layout_engine is None or tight:
        fig.savefig(path, **options)
        return

    def draw(renderer) -> None:
        with _ticks_kept_for_the_draw():
            if fig.axes:  # what Figure.draw does with the engine, from matplotlib 3.6 on
                fig._get_renderer = lambda: renderer  # the engine measures with the renderer that draws
                try:
                    with contextlib.suppress(ValueError):
                        layout_engine.execute(fig)
                finally:
                    del fig._get_renderer
            return Figure.draw(fig, renderer)

    fig.set_layout_engine(None)
    if fig.get_layout_engine() is not None:  # an rcParams autolayout gave it another engine: the plain way
        fig.set_layout_engine(layout_engine)
        fig.savefig(path, **options)
        return
    fig.draw = draw  # an instance attribute: savefig's draw calls it; removed again below
    try:
        fig.savefig(path, **options)
    finally:
        del fig.draw
        fig.set_layout_engine(layout_engine)


# matplotlib lays out each text (its lines' extents, rotation, alignment: Text._get_layout) again in every pass of
# the constrained layout and again in the draw, and measures extents per renderer object, new in every save: on
# the benchmark's 5 figures, 2,031 layouts of 166 different texts, ~15% of the figures' CPU (issue 28, round 6).
# While `save_figure` saves, a layout is kept by everything it reads, for the process: the same numbers, so the
# same pixels and SVG. A private hook (matplotlib_hooks): the key below was checked against Text._get_layout's
# code of PINNED_MATPLOTLIB; on another version texts are laid out as matplotlib does.
_TEXT_LAYOUT_LIMIT = 20_000  # entries kept; a few hundred per report
_LAYOUT_RC_PREFIXES = ("font.", "text.", "mathtext.")  # what a layout reads from rcParams
_KEPT_LAYOUTS: dict = {}
# per thread (another thread may draw meanwhile, under other rcParams): `layouts` (_KEPT_LAYOUTS while this thread
# saves a figure) and `style` (the rcParams it saves under, part of each key); `ticks`: see _ticks_kept_for_the_draw
_kept = threading.local()


@contextlib.contextmanager
def _text_layouts_shared():
    """Text layouts shared by the saves in this block (and kept for later ones) under the current rcParams."""
    if matplotlib.__version__ != PINNED_MATPLOTLIB:
        yield
        return
    saved = getattr(_kept, "layouts", None), getattr(_kept, "style", ())
    _kept.style = tuple(
        (key, str(value)) for key, value in matplotlib.rcParams.items() if key.startswith(_LAYOUT_RC_PREFIXES)
    )
    if len(_KEPT_LAYOUTS) > _TEXT_LAYOUT_LIMIT:
        _KEPT_LAYOUTS.clear()
    _kept.layouts = _KEPT_LAYOUTS
    try:
        yield
    finally:
        _kept.layouts, _kept.style = saved


def _shared_text_layout(original):
    """`Text._get_layout` (`original`) looked up in _KEPT_LAYOUTS while `_text_layouts_shared` is on in this
    thread."""

    def _get_layout(self, renderer):
        layouts = getattr(_kept, "layouts", None)
        if layouts is None:
            return original(self, renderer)
        key = (
            _kept.style,
            type(renderer),
            type(getattr(renderer, "_renderer", None)),  # what a MixedModeRenderer (SVG) measures with
            getattr(renderer, "dpi", None),
            self.get_figure(root=True).dpi,
            self._get_wrapped_text(),
            self._fontproperties.copy(),  # mutable: the key holds a copy
            self.get_usetex(),
            self._parse_math,
            self._linespacing,
            self._get_multialignment(),
            self.get_rotation(),
            self.get_rotation_mode(),
            self._horizontalalignment,
            self._verticalalignment,
        )
        layout = layouts.get(key)
        if layout is None:
            layout = layouts[key] = original(self, renderer)
        bbox, lines, box = layout
        return bbox.frozen(), list(lines), box  # the box a copy: callers may move it

    return _get_layout


# An axis updates its ticks (locations, labels, Tick artists) and measures its tick labels ~35 times per save: in
# both passes of the constrained layout, for each sibling axis, for the title's place, and again in the draw,
# mostly in a state seen before (350 updates in 58 states on the benchmark's 5 figures; ~0.1 s of their CPU,
# issue 28, round 6). Within one draw, both are kept by the axis's state: its view and data limits, its axes' place
# in pixels and the dpi, everything the locator, the formatter and the labels' places are computed from (no
# property changes while a figure draws). A private hook (matplotlib_hooks), checked against Axis._update_ticks
# and Axis._get_ticklabel_bboxes of PINNED_MATPLOTLIB.


@contextlib.contextmanager
def _ticks_kept_for_the_draw():
    """Ticks and tick label boxes kept (in `_kept.ticks`) while this thread draws in this block."""
    saved = getattr(_kept, "ticks", None)
    _kept.ticks = {} if matplotlib.__version__ == PINNED_MATPLOTLIB else None
    try:
        yield
    finally:
        _kept.ticks = saved


def _axis_state(axis) -> tuple:
    return (
        tuple(axis.get_view_interval()),
        tuple(axis.get_data_interval()),
        axis.axes.bbox.bounds,
        axis.get_figure(root=True).dpi,
    )


def _ticks_kept(update_ticks, ticklabel_bboxes):
    """`Axis._update_ticks` and `Axis._get_ticklabel_bboxes`, looked up in `_kept.ticks` while a draw in this
    thread keeps them."""

    def _update_ticks(self):
        kept = getattr(_kept, "ticks", None)
        if kept is None:
            return update_ticks(self)
        key = ("ticks", self, *_axis_state(self))
        if key not in kept:
            kept[key] = update_ticks(self)
        return list(kept[key])

    def _get_ticklabel_bboxes(self, ticks, renderer=None):
        kept = getattr(_kept, "ticks", None)
        if kept is None:
            return ticklabel_bboxes(self, ticks, renderer)
        key = ("boxes", self, tuple(map(id, ticks)), renderer, *_axis_state(self))  # the ticks: the axis holds them
        if key not in kept:
            kept[key] = ticklabel_bboxes(self, ticks, renderer)
        first, second = kept[key]
        return [box.frozen() for box in first], [box.frozen() for box in second]

    return _update_ticks, _get_ticklabel_bboxes


if matplotlib.__version__ == PINNED_MATPLOTLIB:
    from matplotlib.axis import Axis
    from matplotlib.text import Text

    _matplotlib_text_layout = Text._get_layout
    Text._get_layout = _shared_text_layout(_matplotlib_text_layout)
    _matplotlib_axis_methods = Axis._update_ticks, Axis._get_ticklabel_bboxes
    Axis._update_ticks, Axis._get_ticklabel_bboxes = _ticks_kept(*_matplotlib_axis_methods)
