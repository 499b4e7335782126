"""The Results page's panel view: one metric panel (core/results/model.py `Panel`) drawn with matplotlib on a Qt
canvas. The figure is built and rasterized (Agg) on a drawing thread of the view, never the UI thread, which
only paints the finished image (`BackgroundCanvas`); hover and click hit-test the artists once they are drawn.
Hovering a point shows its value and 95% interval; clicking one
emits `point_clicked(point)` with the response rows behind it. From the keyboard, Tab reaches the figure, the arrow
keys go from point to point (shown, and said by a screen reader) and Enter does what a click does (`PointKeys`).
A "Published (paper)" toggle draws the papers' own numbers on the same layout below the user's, each labelled
"published — <paper>, Table N", while the user's are labelled "yours" or "yours (simulated)". The figure exports as
PNG, SVG or PDF and any table as CSV or LaTeX (core/metrics/table_formats.py)."""

from __future__ import annotations

import functools
import itertools
import logging
import math
import textwrap
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import matplotlib
import numpy as np
import pandas as pd
import shiboken6
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.backends.backend_qtagg import FigureCanvasQTAgg
from matplotlib.figure import Figure
from PySide6.QtCore import QEvent, QObject, QPoint, QSize, Qt, QTimer, Signal
from PySide6.QtGui import QColor, QCursor, QImage, QPainter, QPen
from PySide6.QtWidgets import (
    QAbstractItemView,
    QBoxLayout,
    QCheckBox,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QSplitter,
    QTableWidget,
    QTableWidgetItem,
    QToolTip,
    QVBoxLayout,
    QWidget,
)

from spokenbench.core.foundation.native_memory import return_freed_memory
from spokenbench.core.metrics.figures import FACTOR_MARKERS, figure_style
from spokenbench.core.metrics.table_formats import format_cell, to_latex
from spokenbench.core.results.model import Panel, Point, Published
from spokenbench.widgets.elided import ElidedComboBox
from spokenbench.widgets.flow_layout import FlowLayout
from spokenbench.widgets.screen_reader import spoken
from spokenbench.widgets.text_size import text_scale
from spokenbench.widgets.tones import set_toned_sheet, tone

log = logging.getLogger("spokenbench.widgets.metric_panels")
FIGURE_FORMATS = ("png", "svg", "pdf")
TABLE_FORMATS = ("csv", "tex")
MAX_TABLE_ROWS_SHOWN = 1000  # the rest is in the exports
TABLE_CELLS_PER_STEP = 240  # cells filled per pass of the event loop (about 10 ms)
PUBLISHED_COLOR = "#7f7f7f"
# the panels' text a little smaller than the report's figures: a panel shares the screen with its table
PANEL_STYLE = {
    "axes.titlesize": 9,
    "axes.labelsize": 8,
    "xtick.labelsize": 8,
    "ytick.labelsize": 8,
    "legend.fontsize": 7,
    "legend.title_fontsize": 7,
}
HEADING_CHARACTERS = 40  # the least a line of a figure's heading beside its buttons, in average characters
CANVAS_HEIGHT = {1: 260, 2: 470}  # the canvas's least height for one row of subplots (yours) and two (published)
TICK_CHARS = 22  # longer tick labels (model names) are shortened in the middle; tooltips and legends say them whole
BASE_DPI = 100  # the canvas's dpi at a device pixel ratio of 1 and the normal text size (times both: `render`)
MARK_RADIUS = 8  # pixels: the ring around the point the keys are on
TEXT_SCALE_STEP = 0.8  # a figure that does not fit at the app's text size is tried this much smaller, down to 1
LEAST_FIGURE_SCALE = 0.8  # and at last this much smaller than the normal size (`_scales_to_try`)
CHAR_PX = 5.6  # about how wide one character of an 8-point tick label (or a legend's 7-point one) is, at BASE_DPI


def series_colors(names: list[str]) -> dict[str, tuple]:
    """A colour per name by its place in `names` (PanelSet.color_order: the order of the models' first runs, so
    a model keeps its colour when runs are added). tab20's darker half first — the same ten colours as tab10 —
    then its lighter half: an eleventh model does not recolour the first ten."""
    import matplotlib

    cmap = matplotlib.colormaps["tab20"]
    steps = [*range(0, cmap.N, 2), *range(1, cmap.N, 2)]
    return {name: cmap(steps[i % cmap.N]) for i, name in enumerate(names)}


def yours_label(series: list[str], simulated: dict[str, bool]) -> str:
    """How the user's numbers are labelled: simulated runs are said to be simulated wherever they appear."""
    flags = [bool(simulated.get(s)) for s in series]
    if flags and all(flags):
        return "yours (simulated)"
    if any(flags):
        return "yours (simulated runs marked 'simulated' in the legend)"
    return "yours"


# --------------------------------------------------------------------------------------------------
# Drawing (pure matplotlib; returns what each artist stands for, for hover and click)


class Hits:
    """Artists and the points they draw: a bar or marker → one point; a scatter collection → a point per offset.
    Once the figure is drawn, `placed` finds where each point is, for the keys that go from point to point."""

    def __init__(self) -> None:
        self.targets: list[tuple[object, list[Point]]] = []
        self.in_order: list[tuple[Point, float, float]] = []  # (point, x, y): the figure's fractions, y downwards
        self.build: object = None  # the build that drew them: the figure built again by it is the same drawing

    def add(self, artist, points: list[Point]) -> None:
        self.targets.append((artist, points))

    def placed(self, figure: Figure) -> list[tuple[Point, float, float]]:
        """Where each point was drawn, in reading order: the user's numbers before the published ones, subplot by
        subplot as drawn, left to right in each; a point with no place (a NaN value, a masked marker) is left
        out. Worked out on the drawing thread right after the drawing (the artists' places are known only then,
        and the UI thread never touches the figure); `in_order` takes it with the image (`BackgroundCanvas`)."""
        width, height = figure.bbox.width, figure.bbox.height
        placed = []
        for artist, points in self.targets:
            if len(points) == 1 and not hasattr(artist, "get_offsets"):  # a bar: the end its value is at
                if not math.isfinite(points[0].value):  # drawn as no bar at all
                    continue
                extent = artist.get_window_extent()
                centres = [((extent.x0 + extent.x1) / 2, extent.y0 if points[0].value < 0 else extent.y1)]
            else:  # markers: one offset per point
                offsets = np.ma.filled(np.ma.asarray(artist.get_offsets(), dtype=float), np.nan)
                centres = artist.get_offset_transform().transform(offsets)
            for point, (x, y) in zip(points, centres):
                if math.isfinite(x) and math.isfinite(y):
                    placed.append((point, float(x) / width, 1.0 - float(y) / height))
        facets = _ordered(point.facet for point, _x, _y in placed)
        placed.sort(key=lambda entry: (entry[0].source.startswith("published"), facets.index(entry[0].facet), entry[1]))
        return placed

    def find(self, event) -> Point | None:
        for artist, points in reversed(self.targets):
            if getattr(artist, "axes", None) is not event.inaxes:
                continue
            inside, info = artist.contains(event)
            if not inside:
                continue
            index = info.get("ind", [0]) if isinstance(info, dict) else [0]
            index = list(index) if len(index) else [0]
            return points[int(index[0])] if int(index[0]) < len(points) else points[0]
        return None


def draw_panel(
    figure: Figure,
    panel: Panel,
    series: list[str],
    simulated: dict[str, bool],
    show_published: bool,
    color_order: list[str] | None = None,
) -> Hits:
    """Draw `panel` into `figure` (cleared first): the user's numbers on top; with `show_published`, the
    papers' tables on the same layout below, the two rows of the same height. The figure's title is short
    (what and whose); where the layout comes from is said above the canvas. Legends sit outside the axes.
    Returns the hit targets. Colours follow `color_order` (default: `series`), legends `series`."""
    figure.clear()
    hits = Hits()
    colors = series_colors([*(color_order or []), *(s for s in series if s not in (color_order or []))])
    with figure_style(), matplotlib.rc_context(PANEL_STYLE):
        if show_published and panel.published:
            empty = bool(panel.empty or not panel.points)  # then the user's row is one line of text
            top, bottom = figure.subfigures(2, 1, height_ratios=[1, 3] if empty else [1, 1])
        else:
            top, bottom = figure, None
        title = f"{panel.title} — {yours_label(series, simulated)}"
        top.suptitle(_wrap(title, _width_px(figure) / 7), fontsize=10)
        if panel.empty or not panel.points:
            ax = top.add_subplot()
            ax.set_axis_off()
            ax.text(0.5, 0.5, panel.empty or "Nothing to draw.", ha="center", va="center", wrap=True, fontsize=9)
        elif panel.kind == "box":
            _draw_box(top, panel, colors, simulated, hits)
        elif panel.kind == "scatter":
            _draw_scatter(top, panel, colors, simulated, hits)
        elif panel.kind == "ranks":
            _draw_ranks(top, panel, colors, simulated, hits)
        else:
            _draw_bars(top, panel.facets, panel.points, panel.ylabels, colors, simulated, hits)
        if bottom is not None:
            levels = {f: _ordered(p.x for p in panel.points if p.facet == f) for f in panel.facets}
            _draw_published(bottom, panel.published, hits, panel.facets, levels)
    return hits


def panel_rows(panel: Panel | None, show_published: bool) -> int:
    """Rows of subplots the panel draws: the user's, and the published ones below when shown."""
    return 2 if panel is not None and show_published and panel.published else 1


def _width_px(container) -> float:
    """The container's width in pixels at BASE_DPI, the unit every text-size estimate here is in: on a scaled
    screen (150 %) the canvas draws at BASE_DPI × the device pixel ratio, its text as many pixels wider."""
    width = float(container.bbox.width)
    return width * BASE_DPI / container.get_figure(root=True).dpi if width else 900.0


def _wrap(text: str, chars: float) -> str:
    return textwrap.fill(str(text), max(int(chars), 12), break_long_words=False, break_on_hyphens=False)


def _legend_below(container, handles, labels, title: str | None = None) -> None:
    """A legend under the subplots, outside them, in as many columns as fit the width."""
    if not handles:
        return
    longest = max(len(str(label)) for label in labels)
    column_px = longest * CHAR_PX + 40
    ncols = max(1, min(len(labels), int(_width_px(container) * 0.95 // column_px)))
    ncols = math.ceil(len(labels) / math.ceil(len(labels) / ncols))  # balanced rows
    container.legend(handles, labels, loc="outside lower center", ncols=ncols, title=title, frameon=False)


def short_labels(labels: list[str], limit: int = TICK_CHARS) -> list[str]:
    """Tick labels that fit: a prefix up to a colon ("simulated:", "openai:") dropped unless it tells two apart,
    long ones shortened in the middle (the ends tell models apart: "…-7B", "(run 2)"); whole labels where shortening would make
    two alike."""
    labels = [str(label) for label in labels]
    bare = [label.split(":", 1)[1] or label if ":" in label else label for label in labels]
    if len(set(bare)) < len(set(labels)):  # "provider:" told two apart: kept
        bare = labels
    shortened = []
    for text in bare:
        if len(text) > limit:
            head = (limit - 1) // 2
            text = text[:head].rstrip() + "…" + text[-(limit - 1 - head) :].lstrip()
        shortened.append(text)
    return shortened if len(set(shortened)) == len(set(labels)) else labels


def _set_xticks(ax, labels: list[str], share: float) -> None:
    """Ticks at 0..n-1 labelled with `labels` (shortened when long), slanted 35° when they would not fit
    side by side in the axes' share of the figure's width."""
    shown = short_labels(labels)
    room = _width_px(ax.get_figure()) * share
    crowded = sum(len(t) + 2 for t in shown) * CHAR_PX > room * 0.8
    ax.set_xticks(range(len(shown)), shown)
    if crowded:
        ax.tick_params(axis="x", labelrotation=35)
        for label in ax.get_xticklabels():
            label.set_horizontalalignment("right")
            label.set_rotation_mode("anchor")


def _legend_name(name: str, simulated: dict[str, bool]) -> str:
    return f"{name} (simulated)" if simulated.get(name) else name


def _ordered(values) -> list:
    return list(dict.fromkeys(values))


def _errors(points: list[Point]) -> np.ndarray | None:
    if not any(p.has_interval for p in points):
        return None
    lower = [max(p.value - p.low, 0.0) if p.has_interval else 0.0 for p in points]
    upper = [max(p.high - p.value, 0.0) if p.has_interval else 0.0 for p in points]
    return np.nan_to_num(np.array([lower, upper]), posinf=0.0)


def _draw_bars(
    container,
    facets,
    points,
    ylabels,
    colors,
    simulated,
    hits: Hits,
    titles=None,
    hatch: str | None = None,
    levels: dict | None = None,
) -> None:
    facets = [f for f in facets if any(p.facet == f for p in points)] or _ordered(p.facet for p in points)
    wanted = levels or {}
    levels = {}
    for facet in facets:
        xs = _ordered(p.x for p in points if p.facet == facet)
        first = [x for x in wanted.get(facet, []) if x in xs]
        levels[facet] = first + [x for x in xs if x not in first]
    # each subplot as wide as its groups of bars, a group of many bars wider than a lone bar
    ratios = []
    for facet in facets:
        per_group = len({(p.series, p.x) for p in points if p.facet == facet}) / max(len(levels[facet]), 1)
        ratios.append(max(len(levels[facet]) * math.sqrt(max(per_group, 1.0)), 1.5))
    axes = container.subplots(1, len(facets), squeeze=False, gridspec_kw={"width_ratios": ratios})[0]
    legend_series: dict[str, object] = {}
    others = [s for s in _ordered(p.series for p in points) if s not in colors]  # subsets, permutations …
    colors = {**colors, **dict(zip(others, _secondary_palette(len(others))))}
    for ax, facet, ratio in zip(axes, facets, ratios):
        mine = [p for p in points if p.facet == facet]
        xs = levels[facet]
        names = _ordered(p.series for p in mine)
        width = 0.8 / max(len(names), 1)
        for s, name in enumerate(names):
            chosen = [p for p in mine if p.series == name]
            positions = [xs.index(p.x) - 0.4 + width * (s + 0.5) for p in chosen]
            values = [0.0 if math.isnan(p.value) or math.isinf(p.value) else p.value for p in chosen]
            color = colors.get(name, PUBLISHED_COLOR)
            bars = ax.bar(
                positions,
                values,
                width,
                yerr=_errors(chosen),
                capsize=2,
                color=color,
                error_kw={"elinewidth": 0.8},
                label=_legend_name(name, simulated),
                hatch=hatch,
            )
            for patch, point in zip(bars.patches, chosen):
                hits.add(patch, [point])
            legend_series.setdefault(name, bars)
        share = 0.85 * ratio / sum(ratios)
        _set_xticks(ax, [str(x) for x in xs], share)
        ax.set_title(_wrap((titles or {}).get(facet, facet), _width_px(container) * share / 7.5))
        ax.set_ylabel(_wrap(ylabels.get(facet, ""), 24))
        ax.axhline(0, color="black", linewidth=0.6)
    handles = list(legend_series.values())
    labels = [_legend_name(n, simulated) for n in legend_series]
    _legend_below(container, handles, labels)


def _draw_box(container, panel: Panel, colors, simulated, hits: Hits) -> None:
    ax = container.add_subplot()
    per_question = [p for p in panel.points if p.facet != "summary"]
    summary = [p for p in panel.points if p.facet == "summary"]
    names = _ordered(p.series for p in per_question)
    data = [[p.value for p in per_question if p.series == n] for n in names]
    ax.boxplot(data, positions=range(len(names)), widths=0.5, showfliers=False)
    rng = np.random.default_rng(0)
    for i, name in enumerate(names):
        mine = [p for p in per_question if p.series == name]
        jitter = rng.uniform(-0.18, 0.18, len(mine))
        dots = ax.scatter(i + jitter, [p.value for p in mine], s=9, alpha=0.55, color=colors.get(name))
        hits.add(dots, mine)
        for stat, marker, shift in (("mean", "^", 0.32), ("median", "s", 0.42)):
            chosen = [p for p in summary if p.series == name and p.x == stat]
            if not chosen:
                continue
            point = chosen[0]
            ax.errorbar(
                [i + shift], [point.value], yerr=_errors([point]), fmt="none", ecolor="black", elinewidth=0.8, capsize=2
            )
            marks = ax.scatter([i + shift], [point.value], marker=marker, color="white", edgecolor="black", zorder=3)
            hits.add(marks, [point])
    _set_xticks(ax, names, 0.85)  # "(simulated)" is in the figure's title; the whole names in the tooltips
    ax.set_ylabel("question entropy\n$H_q$ (0–1)")
    ax.set_ylim(-0.03, 1.03)
    ax.set_title("one dot per question; box = IQR; △ mean, □ median with 95% CI")


def _draw_scatter(container, panel: Panel, colors, simulated, hits: Hits) -> None:
    ax = container.add_subplot()
    factors = _ordered(p.x for p in panel.points)
    names = _ordered(p.series for p in panel.points)
    for point in panel.points:
        xerr = None
        if not (math.isnan(point.xlow) or math.isnan(point.xhigh)):
            xerr = [[max(point.xvalue - point.xlow, 0.0)], [max(point.xhigh - point.xvalue, 0.0)]]
        ax.errorbar(
            [point.xvalue],
            [point.value],
            xerr=xerr,
            yerr=_errors([point]),
            fmt="none",
            ecolor=colors.get(point.series),
            elinewidth=0.7,
            capsize=2,
        )
        marks = ax.scatter(
            [point.xvalue],
            [point.value],
            marker=FACTOR_MARKERS[factors.index(point.x) % len(FACTOR_MARKERS)],
            color=colors.get(point.series),
            s=40,
            zorder=3,
        )
        hits.add(marks, [point])
    ax.axhline(0, color="grey", linewidth=0.8)
    ax.set_xlabel("APES (lower = more robust)")
    ax.set_ylabel("Fleiss' κ\n(higher = more consistent)")
    factor_handles = [
        ax.scatter([], [], marker=FACTOR_MARKERS[i % len(FACTOR_MARKERS)], color="black") for i in range(len(factors))
    ]
    model_handles = [ax.scatter([], [], marker="s", color=colors.get(n)) for n in names]
    container.legend(factor_handles, factors, title="factor", loc="outside right upper", frameon=False)
    _legend_below(container, model_handles, [_legend_name(n, simulated) for n in names])


def _draw_ranks(container, panel: Panel, colors, simulated, hits: Hits) -> None:
    ax = container.add_subplot()
    settings = _ordered(p.x for p in panel.points)
    names = _ordered(p.series for p in panel.points)
    for name in names:
        mine = sorted((p for p in panel.points if p.series == name), key=lambda p: settings.index(p.x))
        xs = [settings.index(p.x) for p in mine]
        ax.errorbar(
            xs,
            [p.value for p in mine],
            yerr=_errors(mine),
            color=colors.get(name),
            marker="o",
            capsize=2,
            elinewidth=0.7,
            label=_legend_name(name, simulated),
        )
        marks = ax.scatter(xs, [p.value for p in mine], color=colors.get(name), s=30, zorder=3)
        hits.add(marks, mine)
    _set_xticks(ax, [s.replace("_", " ") for s in settings], 0.85)
    ax.set_yticks(range(1, len(names) + 1))
    ax.set_ylim(len(names) + 0.5, 0.5)
    ax.set_ylabel("rank by accuracy\n(1 = best; bars: 95% CI)")
    handles, labels = ax.get_legend_handles_labels()
    _legend_below(container, handles, labels)


def _draw_published(
    container, published: list[Published], hits: Hits, order: list[str] = (), levels: dict | None = None
) -> None:
    """The papers' numbers: facets in the order of the user's, and a facet's levels too where they are named
    alike (accents), so the two rows read across."""
    points = [p for table in published for p in table.points]
    tables = ", ".join(dict.fromkeys(t.table for t in published))
    title = _wrap(f"published — {published[0].paper}, {tables}", _width_px(container) / 7)
    container.suptitle(title, fontsize=10, color="#444444")
    if not points:
        ax = container.add_subplot()
        ax.set_axis_off()
        ax.text(0.5, 0.5, "The papers print no numbers for this panel.", ha="center", va="center")
        return
    facets = _ordered(p.facet for p in points)
    facets.sort(key=lambda f: order.index(f) if f in order else len(order))
    titles = {}
    for table in published:
        for p in table.points:
            titles.setdefault(p.facet, f"{p.facet} ({table.table})")
    names = _ordered(p.series for p in points)
    colors = dict(zip(names, _secondary_palette(len(names))))
    _draw_bars(container, facets, points, {}, colors, {}, hits, titles, hatch="//", levels=levels)


def _secondary_palette(n: int):
    """Muted colours (published numbers, subsets): told apart from the user's models at a glance."""
    import matplotlib

    cmap = matplotlib.colormaps["Set2" if n <= 8 else "tab20b"]
    return [cmap(i % cmap.N) for i in range(n)]


# --------------------------------------------------------------------------------------------------
# Exporting


def save_figure(figure: Figure, path: str | Path) -> Path:
    """PNG, SVG or PDF by the file's extension (no timestamps in the files)."""
    path = Path(path)
    fmt = path.suffix.lstrip(".").lower()
    if fmt not in FIGURE_FORMATS:
        raise ValueError(f"figures export as {', '.join(FIGURE_FORMATS)}, not {fmt!r}")
    metadata = {"png": {"Software": None}, "svg": {"Date": None}, "pdf": {"CreationDate": None}}[fmt]
    with figure_style():
        figure.savefig(path, format=fmt, metadata=metadata)
    return path


def save_table(frame: pd.DataFrame, path: str | Path, caption: str = "", label: str = "") -> Path:
    """CSV (full precision) or LaTeX (rounded, with a caption) by the file's extension."""
    path = Path(path)
    fmt = path.suffix.lstrip(".").lower()
    if fmt == "csv":
        frame.to_csv(path, index=False, lineterminator="\n", float_format="%.10g")
    elif fmt == "tex":
        path.write_text(to_latex(frame, caption, label), encoding="utf-8")
    else:
        raise ValueError(f"tables export as csv or tex, not {fmt!r}")
    return path


# --------------------------------------------------------------------------------------------------
# Drawing off the UI thread


class _Rendered(QObject):
    """Carries a finished image from the drawing thread to the UI thread (a queued signal)."""

    done = Signal(int, object, object, object, float)  # generation, QImage, the build's return, places, text scale


def _log_failed_drawing(future: Future) -> None:
    """A drawing that failed leaves the previous image; the error is logged (and raised by `finish`)."""
    if not future.cancelled() and future.exception() is not None:
        log.error("drawing a figure failed", exc_info=future.exception())


def _scales_to_try(scale: float) -> list[float]:
    """The app's text scale, then smaller ones down to the normal size: a figure whose text at 200 % would not fit
    its canvas (the accuracy panel's fourth facet ran off the right edge on a 1400×900 screen) is drawn with text
    as large as fits instead. Then LEAST_FIGURE_SCALE: at the normal size, beside the guided tour on a laptop (a
    canvas about 530 pixels wide), the accuracy panel's fourth facet was cut off at the right edge."""
    scales = [scale]
    while scales[-1] > 1.0:
        smaller = scales[-1] * TEXT_SCALE_STEP
        scales.append(smaller if smaller >= 1.1 else 1.0)  # not 1.024: a build as slow for nothing to see
    return [*scales, LEAST_FIGURE_SCALE] if scales[-1] > LEAST_FIGURE_SCALE else scales


def _drawn_whole(figure: Figure) -> bool:
    """Whether every artist of the drawn figure lies within it (a pixel and a half of slack)."""
    tight = figure.get_tightbbox(figure.canvas.get_renderer())  # in inches, as bbox_inches
    box, slack = figure.bbox_inches, 1.5 / figure.dpi
    return (
        tight.x0 >= box.x0 - slack
        and tight.y0 >= box.y0 - slack
        and tight.x1 <= box.x1 + slack
        and tight.y1 <= box.y1 + slack
    )


class BackgroundCanvas(FigureCanvasQTAgg):
    """A matplotlib canvas whose figure is built and rasterized on a drawing thread of its own: building a
    panel's artists and its constrained layout took 0.4-0.5 s, which kept the window from reacting. The UI
    thread only paints the last finished image; while a drawing is under way it leaves the figure alone (mouse
    events are ignored, a resize is drawn next). `render(build)` queues `build(figure)` and a rasterization;
    the newest request wins. `finish()` waits for the drawing under way (exports, tests, screenshots)."""

    def __init__(self, figure: Figure, on_rendered: Callable[[object], None]):
        super().__init__(figure)
        self._on_rendered = on_rendered
        self._image: QImage | None = None
        self._generation = 0
        self._future: Future | None = None
        self._next_build: Callable[[Figure], object] | None = None  # taken by the next drawing that starts
        self._pending_result: tuple[int, QImage, object, list | None, float] | None = None  # drawn, not shown yet
        self._built: object = None  # what the last build returned (a redrawing at a new size keeps it)
        self._build: Callable[[Figure], object] | None = None  # the last build, for a drawing at a smaller text
        self._built_scale = 1.0  # the text scale `_built` was built for
        self._fitted: tuple[float, float, float, float] | None = None  # the last drawing made smaller (`render`)
        self._size_hint = QSize(*self.get_width_height())  # read once, before any drawing thread scales the figure
        self.drawn_scale = 1.0  # the text scale the image shown was drawn at (`_scales_to_try`)
        self._lock = threading.Lock()
        self.mark: tuple[float, float, str] | None = None  # (x, y, line): the point the keys are on (`PointKeys`)
        self._carrier = _Rendered()
        self._carrier.done.connect(self._rendered)
        drawer = self._drawer = ThreadPoolExecutor(1, thread_name_prefix="spokenbench-figure")
        self.destroyed.connect(lambda *_: drawer.shutdown(wait=False, cancel_futures=True))
        self.render()

    @property
    def busy(self) -> bool:
        return self._future is not None and not self._future.done()

    def render(self, build: Callable[[Figure], object] | None = None) -> None:
        """Queue `build(figure)` (None: the artists as they are, at the widget's size now) and a rasterization."""
        if not hasattr(self, "_drawer"):  # matplotlib's own set-up resizes the widget before ours is done
            return
        with self._lock:
            if build is not None:
                self._next_build = build  # a build not started yet is replaced, never lost to a later resize
        self._generation += 1
        generation = self._generation
        ratio = self.device_pixel_ratio
        width, height = self.width() * ratio, self.height() * ratio
        # the figure's text, lines and marks grow with the app's text (View → Larger text) as with the screen's
        # scale: in as many device pixels, its points drawn at more dots per inch (`_scales_to_try`)
        scale = text_scale()

        def work() -> None:
            try:
                draw()
            except RuntimeError:
                if shiboken6.isValid(self) and shiboken6.isValid(self._carrier):
                    raise
                # the view was closed while this drawing ran: there is nothing to show it in

        def draw() -> None:
            if generation != self._generation:  # a newer request is queued behind this one
                return
            with self._lock:
                queued, self._next_build = self._next_build, None
            if queued is not None:
                self._build = queued  # kept: a drawing at a smaller text size builds the figure again
            scales, fitted = _scales_to_try(scale), self._fitted
            near = fitted is not None and width < fitted[1] / TEXT_SCALE_STEP and height < fitted[2] / TEXT_SCALE_STEP
            if queued is None and near and fitted[0] == scale:
                # the next larger text needs a step's more room than the canvas the tries last ran for: start from
                # the scale that fitted there (each step of a drag narrowing the window made up to four builds)
                scales = [tried for tried in scales if tried <= fitted[3]]
            for attempt, tried in enumerate(scales):
                if attempt and generation != self._generation:  # a newer request (a resize) draws instead
                    return
                if self.figure.dpi != BASE_DPI * ratio * tried:
                    self.figure.set_dpi(BASE_DPI * ratio * tried)  # no figure manager: only the drawing's scale
                if width > 1 and height > 1:
                    self.figure.set_size_inches(width / self.figure.dpi, height / self.figure.dpi, forward=False)
                if self._build is not None and (queued is not None or tried != self._built_scale):
                    # built again for this scale: its wraps, legend columns and slanted ticks are judged at it
                    self._built, self._built_scale = None, None  # a build that raises is built again next time
                    self._built, self._built_scale = self._build(self.figure), tried  # only this thread touches it
                    if isinstance(self._built, Hits):
                        self._built.build = self._build
                FigureCanvasAgg.draw(self)
                if tried <= LEAST_FIGURE_SCALE or self._build is None or _drawn_whole(self.figure):
                    break
            if scales[0] == scale:  # the tries ran from the scale asked: (asked, width, height, the scale that fitted)
                self._fitted = (scale, width, height, tried) if tried < scale else None
            built = self._built
            placed = None
            if isinstance(built, Hits):
                try:
                    placed = built.placed(self.figure)
                except Exception:  # noqa: BLE001 - the figure is still shown; only its keys go without places
                    log.exception("cannot place the figure's points")
            buffer = self.buffer_rgba()
            # copied once, straight from the renderer's buffer (a bytes() copy first made the peak one image larger)
            image = QImage(buffer, buffer.shape[1], buffer.shape[0], QImage.Format.Format_RGBA8888).copy()
            image.setDevicePixelRatio(ratio)
            return_freed_memory()  # the drawing's transient buffers, here on its thread (issue 28: peak memory)
            with self._lock:
                self._pending_result = (generation, image, built, placed, tried)
            self._carrier.done.emit(generation, image, built, placed, tried)

        self._future = self._drawer.submit(work)
        self._future.add_done_callback(_log_failed_drawing)

    def sizeHint(self) -> QSize:
        """The figure's size as made: matplotlib's reads the figure, which the drawing thread scales meanwhile."""
        hint = getattr(self, "_size_hint", None)  # matplotlib's own set-up asks before ours is done
        return QSize(hint) if hint is not None else super().sizeHint()

    def finish(self) -> None:
        """Wait for the drawing under way and show it at once (an export, a test or a screenshot needs it)."""
        while self._future is not None and not self._future.done():
            self._future.result()
        with self._lock:
            pending = self._pending_result
        if pending is not None:
            self._rendered(*pending)

    def _rendered(self, generation: int, image: QImage, built: object, placed: list | None, scale: float) -> None:
        with self._lock:
            if self._pending_result is None or self._pending_result[0] != generation:
                return  # shown already (`finish`), or a newer drawing finished since
            self._pending_result = None
        self._image, self.drawn_scale = image, scale
        if isinstance(built, Hits) and placed is not None:
            built.in_order = placed  # with the image they are the places in (a resize's drawing moves them)
        self._on_rendered(built)
        self.update()

    # Qt's side: paint the finished image; leave the figure alone while it is being drawn

    def paintEvent(self, event) -> None:
        if self._image is None:
            return
        painter = QPainter(self)
        try:
            painter.eraseRect(event.rect())
            painter.drawImage(0, 0, self._image)
            if self.hasFocus():
                self._paint_keys(painter)
        finally:
            painter.end()

    def _paint_keys(self, painter: QPainter) -> None:
        """With the keys: a frame inside the canvas's edge (the focus ring outside it was hidden by the panel's
        edges but for its bottom line), and the point they are on ringed, its line in a box beside it (a
        tooltip would go at the key's release)."""
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        painter.setPen(QPen(QColor(tone("focus")), 2))
        painter.drawRect(self.rect().adjusted(1, 1, -1, -1))
        if self.mark is None:
            return
        x, y, line = self.mark
        drawn = self._image.deviceIndependentSize()  # the image shown, which a resize redraws a moment later
        centre = QPoint(round(x * drawn.width()), round(y * drawn.height()))
        painter.drawEllipse(centre, MARK_RADIUS, MARK_RADIUS)
        metrics = painter.fontMetrics()
        text = metrics.boundingRect(self.rect(), Qt.TextFlag.TextExpandTabs, line).adjusted(-4, -3, 4, 3)
        text.moveTopLeft(centre + QPoint(MARK_RADIUS + 4, MARK_RADIUS + 4))
        if text.right() > self.width() - 2:  # on the other side of the point, inside the canvas
            text.moveRight(centre.x() - MARK_RADIUS - 4)
        if text.bottom() > self.height() - 2:
            text.moveBottom(centre.y() - MARK_RADIUS - 4)
        text.moveTopLeft(QPoint(max(text.left(), 2), max(text.top(), 2)))
        palette = self.palette()
        painter.fillRect(text, palette.toolTipBase())
        painter.drawRect(text)
        painter.setPen(palette.toolTipText().color())
        painter.drawText(text.adjusted(4, 3, -4, -3), Qt.AlignmentFlag.AlignLeft, line)

    def focusInEvent(self, event) -> None:
        super().focusInEvent(event)
        self.update()  # the frame and the point shown

    def focusOutEvent(self, event) -> None:
        super().focusOutEvent(event)
        self.update()

    def draw_idle(self) -> None:
        self.render()

    def draw(self) -> None:
        """A synchronous drawing (matplotlib's own calls, tests): after the one under way."""
        self.finish()
        FigureCanvasAgg.draw(self)

    def resizeEvent(self, event) -> None:
        QWidget.resizeEvent(self, event)
        self.render()  # the figure's new size is set on the drawing thread

    def mouseMoveEvent(self, event) -> None:
        if not self.busy:
            super().mouseMoveEvent(event)

    def mousePressEvent(self, event) -> None:
        if not self.busy:
            super().mousePressEvent(event)

    def mouseReleaseEvent(self, event) -> None:
        if not self.busy:
            super().mouseReleaseEvent(event)

    def mouseDoubleClickEvent(self, event) -> None:
        if not self.busy:
            super().mouseDoubleClickEvent(event)

    def wheelEvent(self, event) -> None:
        if not self.busy:
            super().wheelEvent(event)

    def keyPressEvent(self, event) -> None:
        QWidget.keyPressEvent(self, event)  # no key is matplotlib's here (`PointKeys` takes the arrows and Enter)

    def keyReleaseEvent(self, event) -> None:
        QWidget.keyReleaseEvent(self, event)

    def enterEvent(self, event) -> None:
        if not self.busy:
            super().enterEvent(event)

    def leaveEvent(self, event) -> None:
        if not self.busy:
            super().leaveEvent(event)


class PointKeys(QObject):
    """The figure from the keyboard. Tab reaches it; → and ↓ go to the next point, ← and ↑ to the one before,
    Home and End to the first and the last; Enter or Space does what a click does (the point's questions and
    answers below: `point_entered`). The point is ringed, its line in a box beside it (`BackgroundCanvas.mark`),
    and that line is the canvas's accessible name, which a screen reader says as it changes (as in
    widgets/screen_reader.py).
    Before, a point's interval and the questions and answers behind it were the mouse's alone."""

    STEPS = {Qt.Key.Key_Right: 1, Qt.Key.Key_Down: 1, Qt.Key.Key_Left: -1, Qt.Key.Key_Up: -1}
    ENDS = {Qt.Key.Key_Home: 0, Qt.Key.Key_End: -1}
    CHOOSE = (Qt.Key.Key_Return, Qt.Key.Key_Enter, Qt.Key.Key_Space)

    def __init__(self, canvas: BackgroundCanvas, view: MetricPanelView):
        super().__init__(canvas)
        self.canvas, self.view = canvas, view
        self.point: Point | None = None  # the one the keys are on, in the drawing `drawing`
        self.drawing: Hits | None = None
        canvas.setFocusPolicy(Qt.FocusPolicy.TabFocus)  # a click on a point leaves the keys where they were
        canvas.installEventFilter(self)

    def eventFilter(self, watched, event) -> bool:
        kind = event.type()
        if kind == QEvent.Type.FocusIn:  # named before Qt tells a screen reader of the focus
            self.canvas.setAccessibleName(self.figure_line())
        elif kind == QEvent.Type.KeyPress and not event.modifiers() & ~Qt.KeyboardModifier.KeypadModifier:
            return self.key(event.key())
        return False

    def figure_line(self) -> str:
        placed = self.view.hits.in_order
        if not placed or self.view.panel is None:
            return spoken("Figure", "Nothing drawn yet")
        keys = "Arrow keys go from one to the next; Enter lists its questions and answers"
        return spoken(f"Figure: {self.view.panel.title}, {len(placed)} points", keys)

    def at(self) -> int | None:
        """Where the point the keys are on is in the drawing shown (None: on none, or the drawing changed)."""
        hits, drawing = self.view.hits, self.drawing
        if drawing is None or (hits is not drawing and (hits.build is None or hits.build is not drawing.build)):
            return None  # another drawing; the same built again (a resize, a smaller text) keeps its points
        return next((index for index, (point, _x, _y) in enumerate(hits.in_order) if point is self.point), None)

    def key(self, key: int) -> bool:
        """Whether `key` was one of these keys (then it goes no further)."""
        placed, at = self.view.hits.in_order, self.at()
        if key in self.CHOOSE:
            if at is None:
                self.canvas.setAccessibleName(spoken("No point chosen", "Arrow keys go to one"))
            elif len(self.point.rows):
                self.view.point_entered.emit(self.point)
            elif self.point.source.startswith("published"):  # the papers' responses are not in the project
                self.canvas.setAccessibleName(spoken("A published number: no responses of yours behind it"))
            else:
                self.canvas.setAccessibleName(spoken("No responses behind this point"))
            return True
        if key not in self.STEPS and key not in self.ENDS:
            return False
        if not placed:
            self.canvas.setAccessibleName(self.figure_line())
            return True
        if key in self.ENDS:
            index = self.ENDS[key] % len(placed)
        elif at is None:
            index = 0 if self.STEPS[key] > 0 else len(placed) - 1
        else:
            index = min(max(at + self.STEPS[key], 0), len(placed) - 1)
        self.point, self.drawing = placed[index][0], self.view.hits
        self.drawn()
        line = self.point.tooltip()
        self.canvas.setAccessibleName(spoken(f"Point {index + 1} of {len(placed)}", *line.splitlines()))
        return True

    def drawn(self) -> None:
        """Ring the point the keys are on where the drawing shown has it (a redrawing at a new size moves it);
        none once the drawing is another (the panel, its runs or the published row changed)."""
        index = self.at()
        if index is None:
            if self.point is not None and self.canvas.hasFocus():  # said again: the point went with its drawing
                self.canvas.setAccessibleName(self.figure_line())
            self.point, self.drawing, self.canvas.mark = None, None, None
        else:
            self.drawing = self.view.hits
            _point, x, y = self.view.hits.in_order[index]
            self.canvas.mark = (x, y, self.point.tooltip())
        self.canvas.update()


# --------------------------------------------------------------------------------------------------
# The view


class MetricPanelView(QWidget):
    """One panel: its figure (hover for the interval, click for the rows), the published toggle, a table
    picker (the user's tables and the published ones) and export buttons."""

    point_clicked = Signal(object)  # Point (the user's, with rows)
    point_entered = Signal(object)  # the same, chosen with the keys (Enter): its responses take them (`PointKeys`)
    export_requested = Signal(str, str)  # "figure" or "table", format
    drawn = Signal()  # a figure finished drawing and is shown

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.panel: Panel | None = None
        self.view_key: str | None = None  # the view shown of a panel that has views (None: its first)
        self.series: list[str] = []
        self.color_order: list[str] = []
        self.simulated: dict[str, bool] = {}
        self.hits = Hits()
        self.last_tooltip = ""
        self.published_on: dict[str, bool] = {}  # panel key → the published numbers shown
        self.drawn_at_scale = text_scale()  # the text size the figure was last built for
        self.title = QLabel()
        self.title.setWordWrap(True)
        self.title.setTextFormat(Qt.TextFormat.RichText)
        self.description = QLabel()  # what the panel shows, as a hint under its title
        self.description.setWordWrap(True)
        self.description.setTextFormat(Qt.TextFormat.RichText)
        set_toned_sheet(self.description, "color: $muted")
        self.published_toggle = QCheckBox("Published (paper)")
        self.published_toggle.setToolTip("Show the papers' own numbers (resources/published/) below yours")
        self.published_toggle.toggled.connect(self._published_toggled)
        self.figure = Figure(figsize=(9, 4.2), layout="constrained")
        self.canvas = BackgroundCanvas(self.figure, self._figure_drawn)
        self.canvas.setMinimumHeight(CANVAS_HEIGHT[1])  # more with the published row (`redraw`)
        self.canvas.mpl_connect("motion_notify_event", self._hover)
        self.canvas.mpl_connect("button_press_event", self._click)
        self.point_keys = PointKeys(self.canvas, self)
        self.table_picker = ElidedComboBox()
        self.table_picker.currentIndexChanged.connect(self._show_table)
        self.table_source = QLabel()
        self.table_source.setWordWrap(True)
        self.table = QTableWidget()
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setAlternatingRowColors(True)
        self.table.verticalHeader().setVisible(False)
        self.table.setTabKeyNavigation(False)  # arrows move in a data grid; Tab leaves it (42 rows × 8: 336 Tabs)
        self.table.horizontalHeader().setResizeContentsPrecision(40)  # fit columns to the first rows only
        self.export_buttons: dict[tuple[str, str], QPushButton] = {}

        self.top = top = QBoxLayout(QBoxLayout.Direction.LeftToRight)  # the buttons go under the heading when
        heading = QVBoxLayout()  # beside it the heading would have too few words a line (`_place_buttons`)
        heading.setSpacing(0)
        heading.addWidget(self.title)
        heading.addWidget(self.description)
        top.addLayout(heading, 1)
        self.figure_buttons = FlowLayout()  # wrapped where even a line of their own is too narrow (the tour open)
        self.figure_buttons.addWidget(self.published_toggle)
        for fmt in FIGURE_FORMATS:
            self._export_button(
                self.figure_buttons, "figure", fmt, f"{fmt.upper()}…", f"Export the figure as {fmt.upper()}"
            )
        top.addLayout(self.figure_buttons)
        table_bar = QHBoxLayout()
        table_label = QLabel("Table:")
        table_label.setBuddy(self.table_picker)  # a screen reader says "Table:" with the picker, as in a form
        table_bar.addWidget(table_label)
        table_bar.addWidget(self.table_picker, 1)
        for fmt, text in (("csv", "CSV…"), ("tex", "LaTeX…")):
            self._export_button(table_bar, "table", fmt, text, f"Export the table shown as {text[:-1]}")
        lower = QWidget()
        lower_layout = QVBoxLayout(lower)
        lower_layout.setContentsMargins(0, 0, 0, 0)
        lower_layout.addLayout(table_bar)
        lower_layout.addWidget(self.table_source)
        lower_layout.addWidget(self.table, 1)
        splitter = QSplitter(Qt.Orientation.Vertical)
        splitter.addWidget(self.canvas)
        splitter.addWidget(lower)
        splitter.setChildrenCollapsible(False)
        splitter.setStretchFactor(0, 3)
        splitter.setStretchFactor(1, 1)
        splitter.setSizes([420, 180])
        self.splitter = splitter
        self._sizes_before: list[int] | None = None
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(top)
        layout.addWidget(splitter, 1)
        # (name, source label, the frame or a function giving it, caption): a panel's Δ tables may still be
        # computed in the background when the panel is shown, and are computed on first display otherwise
        self._tables: list[tuple[str, str, object, str]] = []
        self._table_rows = None  # the rows of the table shown still to be filled in (`_fill_table_step`)
        self._table_row = 0
        self.set_panel(None)

    def minimumSizeHint(self) -> QSize:
        """At least as high as the heading row is at this width, with the figure and its table at their least: the
        heading wraps (its minimum is one line), and with the responses open below, a window 794 pixels high
        left the view less than that; its splitter then drew the figure over the table picker and its buttons,
        which Tab still reached. Now the page scrolls instead (it sits in a scroll area)."""
        hint = super().minimumSizeHint()
        layout, heading = self.layout(), self.layout().itemAt(0)
        if heading.hasHeightForWidth():
            top = heading.minimumHeightForWidth(self.width())
        else:
            top = heading.minimumSize().height()
        needed = top + max(layout.spacing(), 0) + self.splitter.minimumSizeHint().height()
        return QSize(hint.width(), max(hint.height(), needed))

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        if event.size().width() != event.oldSize().width():
            self._place_buttons()
            self.updateGeometry()  # the heading wraps anew: the least height changed

    def changeEvent(self, event) -> None:
        super().changeEvent(event)
        if event.type() == QEvent.Type.FontChange:  # larger text: wider buttons, fewer words a line
            self._place_buttons()
            if self.isVisible() and self.drawn_at_scale != text_scale():  # its text as large (`render`)
                self.redraw()  # hidden, it is drawn when shown: a drawing thread's GIL made each Ctrl+= on the
                # Rating page 300 ms slower (tests/benchmarks/bench_text_size.py)

    def showEvent(self, event) -> None:
        super().showEvent(event)
        if self.drawn_at_scale != text_scale():  # the text size changed while another page was shown
            self.redraw()

    def _place_buttons(self) -> None:
        """The figure's buttons beside its heading while the heading keeps HEADING_CHARACTERS a line, else under
        it: with larger text beside them it had 190 pixels, two or three words a line, and pushed the figure down."""
        room = self.width() - self.figure_buttons.sizeHint().width() - self.top.spacing()
        beside = room >= self.fontMetrics().averageCharWidth() * HEADING_CHARACTERS
        direction = QBoxLayout.Direction.LeftToRight if beside else QBoxLayout.Direction.TopToBottom
        if self.top.direction() != direction:
            self.top.setDirection(direction)

    def _export_button(self, layout, what: str, fmt: str, text: str, tip: str) -> None:
        button = QPushButton(text)
        button.setToolTip(tip)
        button.clicked.connect(lambda: self.export_requested.emit(what, fmt))
        layout.addWidget(button)
        self.export_buttons[(what, fmt)] = button

    # -- content ------------------------------------------------------------------------------------

    def set_panel(self, panel: Panel | None, series: list[str] | None = None, simulated=None, color_order=None) -> None:
        self.panel = panel
        self.series = list(series or [])
        self.color_order = list(color_order or [])
        self.simulated = dict(simulated or {})
        for button in self.export_buttons.values():
            button.setEnabled(panel is not None)
        self.published_toggle.setEnabled(panel is not None and bool(panel.published))
        if panel is None:
            self.title.setText("No panel")
            self.description.clear()
            self.hits = Hits()
            self.point_keys.drawn()
            self.canvas.render(lambda figure: figure.clear() or Hits())
            self._set_tables([])
            return
        mine = yours_label(self.series, self.simulated)
        self.title.setText(f"<b>{panel.title}</b> — laid out like {panel.mirrors} · numbers: <b>{mine}</b>")
        self.description.setText(
            f"<small>{panel.description} Hover a point for its 95% interval; click it for its questions and "
            "answers (or Tab to the figure: arrow keys, Enter).</small>"
        )
        tables = [
            (name, mine, functools.partial(panel.tables.__getitem__, name), f"{panel.title}: {name} ({mine})")
            for name in panel.tables
        ]
        for published in panel.published:
            caption = f"{published.label}: {published.caption}"
            tables.append((published.file, published.label, published.frame, caption))
        self._set_tables(tables)
        shown = self.published_on.get(panel.key, False) and bool(panel.published)  # each panel keeps its toggle
        self.published_toggle.blockSignals(True)
        self.published_toggle.setChecked(shown)
        self.published_toggle.blockSignals(False)
        if shown:
            self.table_picker.setCurrentIndex(len(panel.tables))
        self.redraw()

    def redraw(self) -> None:
        if self.panel is None:
            return
        shown = self.published_toggle.isChecked()
        self.drawn_at_scale = text_scale()
        panel = self.panel.in_view(self.view_key)  # a panel with views (the gender probes' settings) shows one
        self._fit_canvas(panel_rows(panel, shown))
        self.hits = Hits()  # nothing to hit until the new figure is drawn
        self.point_keys.drawn()  # nor a point the keys are on
        series, simulated, color_order = list(self.series), dict(self.simulated), list(self.color_order)
        self.canvas.render(lambda figure: draw_panel(figure, panel, series, simulated, shown, color_order))

    def _figure_drawn(self, hits) -> None:
        if isinstance(hits, Hits):
            self.hits = hits
            self.point_keys.drawn()
        self.drawn.emit()

    def finish_drawing(self) -> None:
        """Wait for the figure being drawn off the UI thread and fill the table (tests, screenshots need both)."""
        self.canvas.finish()
        self.finish_table()

    def set_view_key(self, key: str | None) -> None:
        """Show one of the panel's views (the gender probes' answer setting the detail below has picked)."""
        if key == self.view_key:
            return
        self.view_key = key
        if self.panel is not None and self.panel.views:
            self.redraw()

    def _fit_canvas(self, rows: int) -> None:
        """The canvas high enough for its rows of subplots at the text size, the height taken from the table below."""
        wanted = round(CANVAS_HEIGHT[rows] * text_scale())
        self.canvas.setMinimumHeight(wanted)
        sizes = self.splitter.sizes()
        if not sum(sizes):
            return
        if sizes[0] < wanted:
            self._sizes_before = self._sizes_before or sizes  # given back when the published row goes
            self.splitter.setSizes([wanted, max(sum(sizes) - wanted, 0)])
        elif rows == 1 and self._sizes_before:
            self.splitter.setSizes(self._sizes_before)
            self._sizes_before = None

    def _published_toggled(self, checked: bool) -> None:
        if self.panel is not None:
            self.published_on[self.panel.key] = checked
        self.redraw()
        if checked and self.panel is not None and self.panel.published:
            first_published = len(self.panel.tables)
            if first_published < self.table_picker.count():
                self.table_picker.setCurrentIndex(first_published)
        elif self.table_picker.count():
            self.table_picker.setCurrentIndex(0)

    def _set_tables(self, tables) -> None:
        self._tables = tables
        self.table_picker.blockSignals(True)
        self.table_picker.clear()
        for name, source, _frame, _caption in tables:
            self.table_picker.addItem(f"{source} · {name}")
        self.table_picker.blockSignals(False)
        self._show_table(0 if tables else -1)

    def current_table(self) -> tuple[str, str, pd.DataFrame, str] | None:
        index = self.table_picker.currentIndex()
        return self._resolved(index)

    def _resolved(self, index: int) -> tuple[str, str, pd.DataFrame, str] | None:
        if not 0 <= index < len(self._tables):
            return None
        name, source, frame, caption = self._tables[index]
        return name, source, frame() if callable(frame) else frame, caption

    def _show_table(self, index: int) -> None:
        chosen = self._resolved(index)
        self._table_rows = None  # a table still being filled is left
        self.table.clear()
        if chosen is None:
            self.table.setRowCount(0)
            self.table.setColumnCount(0)
            self.table_source.setText("")
            self.table.setAccessibleName("")
            return
        name, source, frame, caption = chosen
        shown = frame.head(MAX_TABLE_ROWS_SHOWN)
        more = (
            f" (first {MAX_TABLE_ROWS_SHOWN:,} of {len(frame):,} rows; exports hold all)"
            if len(frame) > len(shown)
            else ""
        )
        described = caption.removeprefix(f"{source}: ")  # a published table's caption starts with its source
        self.table_source.setText(f"<b>{source}</b> — {described}{more}")
        self.table.setAccessibleName(f"{source} — {described}")  # said as Tab reaches the table
        self.table.setColumnCount(len(shown.columns))
        self.table.setRowCount(len(shown))
        self.table.setHorizontalHeaderLabels([str(c) for c in shown.columns])
        self._table_rows = shown.itertuples(index=False)
        self._table_row = 0
        self._fill_table_step(first=True)

    def _fill_table_step(self, first: bool = False) -> None:
        """Fill the table TABLE_CELLS_PER_STEP cells at a time, one step per pass of the event loop: a few hundred
        rows in one go kept the window from reacting for 50-100 ms after each recomputation."""
        rows = self._table_rows
        if rows is None:
            return
        per_step = max(1, TABLE_CELLS_PER_STEP // max(1, self.table.columnCount()))
        self.table.setUpdatesEnabled(False)
        for row in itertools.islice(rows, per_step):
            for c, value in enumerate(row):
                item = QTableWidgetItem(format_cell(value))
                if isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool):
                    item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
                self.table.setItem(self._table_row, c, item)
            self._table_row += 1
        if first:
            self.table.resizeColumnsToContents()  # to the first rows (the header's resize precision)
        self.table.setUpdatesEnabled(True)
        if self._table_row >= self.table.rowCount():
            self._table_rows = None
        else:
            QTimer.singleShot(0, self.table, lambda fill=rows: self._table_rows is fill and self._fill_table_step())

    def finish_table(self) -> None:
        """Fill the rest of the table at once (a test or an export reads it whole)."""
        while self._table_rows is not None:
            self._fill_table_step()

    # -- hover and click -----------------------------------------------------------------------------

    def point_at(self, event) -> Point | None:
        if event.inaxes is None:
            return None
        return self.hits.find(event)

    def _hover(self, event) -> None:
        point = self.point_at(event)
        if point is None:
            if self.last_tooltip:
                QToolTip.hideText()
                self.last_tooltip = ""
            return
        self.last_tooltip = point.tooltip()
        QToolTip.showText(QCursor.pos(), self.last_tooltip, self.canvas)

    def _click(self, event) -> None:
        point = self.point_at(event)
        if point is not None and len(point.rows):
            self.point_clicked.emit(point)

    # -- exporting -----------------------------------------------------------------------------------

    def default_name(self, what: str) -> str:
        if self.panel is None:
            return "panel"
        if what == "figure":
            return f"{self.panel.key}{'_with_published' if self.published_toggle.isChecked() else ''}"
        chosen = self.current_table()
        name = chosen[0] if chosen else self.panel.key
        return Path(name).stem if name.endswith(".csv") else f"{self.panel.key}_{name}"

    def save_figure(self, path: str | Path) -> Path:
        self.finish_drawing()  # the drawing thread is done with the figure before it is saved here
        return save_figure(self.figure, path)

    def table_to_save(self) -> tuple[pd.DataFrame, str, str] | None:
        """(frame, caption, label) of the table shown, for an export off the UI thread."""
        chosen = self.current_table()
        if chosen is None:
            return None
        name, _source, frame, caption = chosen
        return frame.copy(), caption, f"tab:{Path(name).stem}"
