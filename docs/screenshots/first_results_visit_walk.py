"""Screenshot walk: the first Ctrl+7 (the Results page) soon after the app starts, with the page cache dropped and
another process writing 3 GiB files to the same disk: the page says it is opening while its module (matplotlib,
pandas) is imported on a thread, and the window keeps answering (app/page_modules.py).

    python docs/screenshots/first_results_visit_walk.py OUT [--screen 1280x720] [--baseline DIR]

Xvfb with xfwm4 and a PulseAudio null sink (tests/real_device.py), the app on a copy of the demo. Root drops the
page cache before each start (as after a reboot; skipped, and said, without the right). With the writer running:
1 s after the window's first heartbeat, Ctrl+7; at once a screenshot (studio-results-opening), then Ctrl+1 and
Ctrl+7 again while it opens (the sidebar answers), and once the page is built a screenshot
(studio-results-opened). Prints, per start, how long xdotool's Ctrl+7 took and the longest event-loop gap (the
heartbeat, on tmpfs). With `--baseline DIR` (an older tree as DIR/spokenbench), the same keys on that tree too, its
screenshots named -baseline."""

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests" / "benchmarks"))

from bench_disk_writeback import disk_writing  # noqa: E402
from real_device import (  # noqa: E402
    RealDesktop,
    app_trees,
    demo_copy_in,
    drop_page_cache,
    walk_app,
    walk_app_ended,
    walk_arguments,
)

OPENED_WAIT_S = 15.0


def visit(desktop: RealDesktop, project: Path, out: Path, command: list[str] | None, suffix: str) -> str:
    cold = drop_page_cache()
    app, heart = walk_app(desktop, project, out, command, f"walk{suffix}")
    time.sleep(1.0)
    pressed = time.monotonic()
    desktop.xdotool("key", "ctrl+7")
    pressed_s = time.monotonic() - pressed
    desktop.screenshot(out / f"studio-results-opening{suffix}.png")
    desktop.xdotool("key", "ctrl+1")
    time.sleep(0.3)
    desktop.xdotool("key", "ctrl+7")
    time.sleep(OPENED_WAIT_S)
    desktop.screenshot(out / f"studio-results-opened{suffix}.png")
    longest_gap = walk_app_ended(desktop, app, heart)
    return (
        f"page cache {'dropped' if cold else 'NOT dropped (not root)'}; xdotool's Ctrl+7 returned in "
        f"{pressed_s:.2f} s; longest event-loop gap {longest_gap:.2f} s"
    )


def main() -> None:
    baseline = None
    if "--baseline" in sys.argv:
        at = sys.argv.index("--baseline")
        baseline = Path(sys.argv[at + 1])
        del sys.argv[at : at + 2]
    out, screen = walk_arguments(__doc__)
    size = screen.removesuffix("x24")
    project = demo_copy_in(out)
    with RealDesktop(out / "desktop", screen=screen, window_manager="xfwm4") as desktop:
        with disk_writing(out):
            for name, command in app_trees(baseline):
                suffix = f"-{size}" if command is None else f"-{size}-baseline"
                print(f"{name}, {size}: {visit(desktop, project, out, command, suffix)}", flush=True)


if __name__ == "__main__":
    main()
