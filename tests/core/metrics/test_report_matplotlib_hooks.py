"""What `figures` keeps instead of asking matplotlib again (issue 28, round 6; core/metrics/matplotlib_hooks.py):
each text's layout for the process (`_text_layouts_shared`), and within one draw each axis's ticks and tick
label boxes by the axis's state (`_ticks_kept_for_the_draw`). Whatever is found again must be what matplotlib
would have computed: figures that differ only in what a layout or a tick depends on are the figures of plain
`savefig`, whatever was saved before them."""

from __future__ import annotations

import matplotlib
import pytest
from figure_content import report_figure_differences
from matplotlib.figure import Figure
from matplotlib.text import Text

from spokenbench.core.metrics import figures

pytestmark = pytest.mark.skipif(
    matplotlib.__version__ != figures.PINNED_MATPLOTLIB, reason="the hook is installed on its version only"
)

VARIANTS = [
    {},
    {"fontsize": 14},
    {"fontweight": "bold"},
    {"rotation": 30},
    {"rotation": 30, "rotation_mode": "anchor"},
    {"ha": "right", "va": "top"},
    {"linespacing": 2.5},
    {"family": "DejaVu Serif"},
]


def _figure(variant: dict, dpi: float = 100) -> Figure:
    """The same texts in every variant: a title, tick labels and a two-line annotation, some in mathtext."""
    with figures.figure_style():
        fig = Figure(figsize=(3, 2), dpi=dpi, layout="constrained")
        ax = fig.add_subplot()
        ax.plot([0, 1, 2], [2, 0, 1])
        ax.set_xticks([0, 1, 2], ["model a", "model b", "$H_q$"], **variant)
        ax.set_title("Entropy\nper model", **variant)
        ax.text(0.5, 1.0, "κ vs APES", **variant)
    return fig


def _saved_plain(fig: Figure, folder, stem: str) -> None:
    with figures.figure_style():
        fig.savefig(folder / f"{stem}.png", format="png", metadata={"Software": None})
        fig.savefig(folder / f"{stem}.svg", format="svg", metadata={"Date": None})


@pytest.mark.slow
def test_texts_laid_out_before_with_other_properties_give_the_figures_of_plain_savefig(tmp_path):
    plain, shared = tmp_path / "plain", tmp_path / "shared"
    plain.mkdir()
    shared.mkdir()
    cases = [(variant, dpi) for dpi in (100, 150) for variant in VARIANTS]
    figures.save_figure(_figure({}), shared, "first")  # the layouts of the plain texts are kept from here on
    for n, (variant, dpi) in enumerate(cases):
        _saved_plain(_figure(variant, dpi), plain, f"case{n}")
        figures.save_figure(_figure(variant, dpi), shared, f"case{n}")
    (shared / "first.png").unlink()
    (shared / "first.svg").unlink()
    assert report_figure_differences(shared, plain) == []


@pytest.mark.slow
def test_a_figure_saved_again_lays_out_no_text_anew_and_other_saves_are_untouched(tmp_path, monkeypatch):
    laid_out = []

    def counting(self, renderer):  # below the shared layouts: what matplotlib computes
        laid_out.append(self.get_text())
        return figures._matplotlib_text_layout(self, renderer)

    monkeypatch.setattr(Text, "_get_layout", figures._shared_text_layout(counting))
    figures._KEPT_LAYOUTS.clear()
    figures.save_figure(_figure({"fontsize": 11}), tmp_path, "a")
    first = len(laid_out)
    figures.save_figure(_figure({"fontsize": 11}), tmp_path, "b")
    assert first > 0 and len(laid_out) == first  # every layout of the second save was found again
    with figures.figure_style():
        _figure({"fontsize": 11}).savefig(tmp_path / "c.png")  # outside save_figure: matplotlib's own way
    assert len(laid_out) > first


def _figure_with_auto_ticks(width: float, title_lines: int, log: bool) -> Figure:
    """Axes whose size the constrained layout changes between its passes (a title of several lines, long labels,
    shared and twin axes), with ticks located from that size (MaxNLocator, LogLocator)."""
    with figures.figure_style():
        fig = Figure(figsize=(width, 2.4), layout="constrained")
        axes = fig.subplots(1, 2, sharey=True)
        for n, ax in enumerate(axes):
            ax.plot([0.001, 3.7, 12_345.6], [1e-3, 2.5, 7e4 if log else 7.3])
            ax.set_xlabel("a long label that takes room " * (n + 1))
        axes[0].set_yscale("log" if log else "linear")
        axes[1].twinx().plot([0, 1], [5e5, -3])
        fig.suptitle("\n".join(["a title"] * title_lines))
    return fig


@pytest.mark.slow
def test_axes_resized_by_the_layout_get_the_ticks_of_plain_savefig(tmp_path):
    plain, kept = tmp_path / "plain", tmp_path / "kept"
    plain.mkdir()
    kept.mkdir()
    cases = [(width, lines, log) for width in (2.2, 3.1, 5.0) for lines in (1, 4) for log in (False, True)]
    for n, case in enumerate(cases):
        _saved_plain(_figure_with_auto_ticks(*case), plain, f"case{n}")
        figures.save_figure(_figure_with_auto_ticks(*case), kept, f"case{n}")
    assert report_figure_differences(kept, plain) == []


@pytest.mark.slow
def test_ticks_are_updated_once_per_state_of_the_axis_in_a_draw(tmp_path, monkeypatch):
    from matplotlib.axis import Axis

    updates = []
    update_ticks = figures._matplotlib_axis_methods[0]
    counting = figures._ticks_kept(
        lambda axis: updates.append(axis) or update_ticks(axis), figures._matplotlib_axis_methods[1]
    )
    monkeypatch.setattr(Axis, "_update_ticks", counting[0])
    with figures.figure_style():
        _figure_with_auto_ticks(3.1, 4, False).savefig(tmp_path / "plain.png")  # matplotlib's own way
    plain = len(updates)
    updates.clear()
    figures.save_figure(_figure_with_auto_ticks(3.1, 4, False), tmp_path, "kept")
    assert 0 < len(updates) < plain / 2  # for both formats, against one


@pytest.mark.slow
def test_layouts_are_kept_only_for_the_thread_that_saves(tmp_path, monkeypatch):
    import threading

    laid_out = []
    monkeypatch.setattr(
        Text,
        "_get_layout",
        figures._shared_text_layout(
            lambda text, renderer: laid_out.append(1) or figures._matplotlib_text_layout(text, renderer)
        ),
    )

    def layouts_of_two_draws() -> list[int]:
        counts = []
        for n in range(2):
            before = len(laid_out)
            with figures.figure_style():
                _figure({"fontsize": 13}).savefig(tmp_path / f"drawn{n}.png")
            counts.append(len(laid_out) - before)
        return counts

    in_the_other_thread = []
    with figures._text_layouts_shared():  # this thread saves meanwhile
        other = threading.Thread(target=lambda: in_the_other_thread.extend(layouts_of_two_draws()))
        other.start()
        other.join()
    first, second = in_the_other_thread
    assert first > 0 and second == first  # matplotlib's own way: every text laid out again
    figures._KEPT_LAYOUTS.clear()
    with figures._text_layouts_shared():
        assert layouts_of_two_draws()[1] == 0  # the thread that saves finds every layout of its first draw
