"""Screenshots and widths of a column a person widened by dragging its edge, on a real X server (xfwm4, a 40-pixel
panel), the app maximized:

    python docs/screenshots/dragged_columns_walk.py OUT [--screen 1280x720] [--baseline DIR]

Copies the demo into OUT/project and opens the app on it. Ctrl+1: the first item's rewrites. The edge between the
rewrites' Origin and Reviewer columns, found in a screenshot (the header's separators: grey lines down the whole
table), is dragged 80 pixels right with the mouse (xdotool): studio-columns-dragged.png. A click on the first item
(the press on the header gave the rewrites table the keys), then ↓ ↓ in the item list (the next items, whose
rewrites refill the table): studio-columns-after-down.png. The app ended (SIGTERM, as a
logout does) and started again on the same settings, Ctrl+1: studio-columns-after-restart.png. Prints Origin's
width in each, measured between the separators. `--baseline DIR`: the same with an older tree's app
(DIR/spokenbench, `git worktree add X REV` and a link DIR/spokenbench → X) into OUT/baseline, its shots unsaved
under docs' names. Screenshots at a screen other than 1400x900 end in -WxH. Needs Xvfb, PulseAudio, xdotool and
xfwm4."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests"))
from real_device import (  # noqa: E402
    RealDesktop,
    app_on,
    app_trees,
    app_window,
    demo_copy_in,
    missing_tools,
    missing_window_manager,
)

SEPARATOR_GREY = range(195, 213)  # the grid (199) and the header's separators (206), in Fusion's light palette
LONG_RUN = 60  # pixels: a separator runs down the table; a letter's stem does not
DRAG_BY = 80
FIRST_ITEM = ("300", "88")  # the item list's first row, in the window (under the menus, the filters and the header)


def separators(shot: Path) -> tuple[int, list[int]]:
    """(the header's middle row, the x of each column's right edge) of the lowest table at the right of the
    screen: the item detail's table under its tabs. The grid's lines run down from the header's bottom border."""
    from PIL import Image

    image = Image.open(shot).convert("L")
    width, height = image.size
    pixels = image.load()
    probe = int(height * 0.8)

    def run(x: int) -> tuple[int, int]:
        top = bottom = probe
        while top > 0 and pixels[x, top - 1] in SEPARATOR_GREY:
            top -= 1
        while bottom < height - 1 and pixels[x, bottom + 1] in SEPARATOR_GREY:
            bottom += 1
        return top, bottom

    found = [(x, run(x)) for x in range(int(width * 0.44), width - 20) if pixels[x, probe] in SEPARATOR_GREY]
    lines = [(x, top) for x, (top, bottom) in found if bottom - top >= LONG_RUN]
    if len(lines) < 5:
        raise SystemExit(f"the detail table's separators were not found in {shot}: {lines}")
    top = min(top for _x, top in lines)
    return top - 10, [x for x, line_top in lines if line_top == top]  # the header: above the grid's top


def origin_width(shot: Path) -> int:
    """Origin's width: between the 4th and 5th separators (Part, Version, Status, Text, Origin, Reviewer)."""
    _y, edges = separators(shot)
    return edges[4] - edges[3]


def walk(out: Path, screen: str, command, suffix: str) -> list[int]:
    project = demo_copy_in(out)
    widths = []
    with RealDesktop(out / "desktop", screen=screen, window_manager="xfwm4", panel=40) as desktop:
        with app_on(desktop, project, out, command=command) as app:
            time.sleep(6.0)  # the project opens and the first item's detail is read
            desktop.xdotool("key", "ctrl+1")
            time.sleep(2.0)
            first = out / f"studio-columns-before{suffix}.png"
            desktop.screenshot(first)
            y, edges = separators(first)
            x = edges[4]
            desktop.xdotool("mousemove", str(x), str(y))
            time.sleep(0.3)
            desktop.xdotool("mousedown", "1")
            for step in range(1, 9):
                desktop.xdotool("mousemove", str(x + DRAG_BY * step // 8), str(y))
                time.sleep(0.05)
            desktop.xdotool("mouseup", "1")
            desktop.xdotool("mousemove", "5", str(y))  # the pointer out of the way
            time.sleep(1.0)
            for name, keys in (("dragged", ()), ("after-down", ("Down", "Down"))):
                if keys:  # the press on the header gave the rewrites table the keys: a click gives them back
                    window = app_window(desktop, app)
                    desktop.xdotool("mousemove", "--window", window, *FIRST_ITEM, "click", "1")
                    time.sleep(1.0)
                    desktop.xdotool("key", "--delay", "400", *keys)
                    time.sleep(2.0)
                shot = out / f"studio-columns-{name}{suffix}.png"
                desktop.screenshot(shot)
                widths.append(origin_width(shot))
            widths.insert(0, origin_width(first))
        with app_on(desktop, project, out, fresh=False, command=command):
            time.sleep(6.0)
            desktop.xdotool("key", "ctrl+1")
            time.sleep(2.0)
            shot = out / f"studio-columns-after-restart{suffix}.png"
            desktop.screenshot(shot)
            widths.append(origin_width(shot))
    return widths


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--screen", default="1400x900")
    parser.add_argument("--baseline", type=Path)
    args = parser.parse_args()
    problem = missing_tools() or missing_window_manager()
    if problem:
        raise SystemExit(problem)
    screen = f"{args.screen}x24"
    suffix = "" if screen == "1400x900x24" else f"-{args.screen}"
    for name, command in app_trees(args.baseline):
        out = args.out.resolve() / ("this" if command is None else "baseline")
        out.mkdir(parents=True, exist_ok=True)
        before, dragged, after_down, after_restart = walk(out, screen, command, suffix)
        print(
            f"{name}: Origin {before} px fitted, {dragged} px dragged, {after_down} px after ↓ ↓, "
            f"{after_restart} px after a restart"
        )


if __name__ == "__main__":
    main()
