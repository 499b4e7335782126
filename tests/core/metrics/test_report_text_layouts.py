"""The report's figures keep each text's layout for the process (issue 28, round 6: `figures._text_layouts_shared`):
a layout found again must be one matplotlib would have computed, so figures whose texts differ only in what a
layout depends on (size, weight, rotation, alignment, line spacing, dpi, format) are the figures of plain
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
