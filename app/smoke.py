"""`spokenbench-studio --demo --smoke` and `spokenbench-studio PROJECT --smoke`: open the project, render every
screen once — each sidebar page, every Results panel (drawn with its published layer below it, so both are
drawn), the gender-probe detail, each step of the guided tour — and exit 0; on any failure exit 1 with the message. Used by the tests and
by the packaged build's check; works offscreen (`QT_QPA_PLATFORM=offscreen`) and with no audio device (nothing
is played).

A failure is: the project not opening, a page that could not be loaded (its placeholder says why), an exception
in any slot or callback (caught through `sys.excepthook`, where PySide reports them), an error dialog left open,
or a screen not ready within the time limit."""

from __future__ import annotations

import sys
import time
import traceback

from PySide6.QtWidgets import QMessageBox

OPEN_TIMEOUT_S = 900.0  # opening, with the first `--demo`'s build (a minute on a quiet machine, more on a busy one)
SCREEN_TIMEOUT_S = 180.0  # each screen once the project is open


class SmokeFailure(Exception):
    pass


class _Smoke:
    def __init__(self, app, window, screen_timeout_s: float):
        self.app = app
        self.window = window
        self.screen_timeout_s = screen_timeout_s
        self.errors: list[str] = []
        self.screens = 0

    def pump(self, seconds: float = 0.0) -> None:
        end = time.monotonic() + seconds
        while True:
            self.app.processEvents()
            self.check()
            if time.monotonic() >= end:
                return
            time.sleep(0.005)

    def wait(self, condition, what: str, timeout_s: float | None = None) -> None:
        limit = time.monotonic() + (timeout_s or self.screen_timeout_s)
        while not condition():
            if time.monotonic() > limit:
                raise SmokeFailure(f"timed out waiting for {what}")
            self.pump()
            time.sleep(0.005)

    def idle(self, what: str) -> None:
        """Until no operation of the window runs, twice in a row a little apart (a page's timers start more)."""
        runner = self.window.runner
        quiet = 0
        while quiet < 2:
            self.wait(lambda: not runner.running, what)
            self.pump(0.06)
            quiet = quiet + 1 if not runner.running else 0

    def check(self) -> None:
        for widget in self.app.topLevelWidgets():
            if isinstance(widget, QMessageBox) and widget.isVisible():
                self.errors.append(f"{widget.windowTitle()}: {widget.text()}\n{widget.detailedText()}".strip())
                widget.close()
        if self.errors:
            raise SmokeFailure(self.errors[0])

    def render(self, what: str) -> None:
        self.idle(what)
        # the figures, drawn off the UI thread: a failed drawing raises here. Their module is not imported here: the
        # Results page's module brings it, on a thread (app/page_modules.py), as in the app
        panels = sys.modules.get("spokenbench.widgets.metric_panels")
        for canvas in self.window.findChildren(panels.BackgroundCanvas) if panels else ():
            canvas.finish()
        image = self.window.grab()  # paints every visible widget
        if image.isNull():
            raise SmokeFailure(f"{what}: nothing was drawn")
        self.screens += 1


PARTS = ("pages", "tour", "panels")


def run_smoke(
    app,
    window,
    opening,
    open_timeout_s: float = OPEN_TIMEOUT_S,
    screen_timeout_s: float = SCREEN_TIMEOUT_S,
    out=None,
    parts=PARTS,
) -> int:
    """Drive `window` (its project being opened by the operation `opening`) through every screen; 0 when all
    rendered, 1 with the message on stderr otherwise. `parts` (all by default, as `--smoke` runs it) picks among
    the sidebar pages, the tour's steps and the Results panels: the fast widget test renders the pages only."""
    from spokenbench.app.main_window import PAGES, PlaceholderPage
    from spokenbench.core.results.names import PANEL_ORDER

    out = out or sys.stdout
    started = time.monotonic()
    smoke = _Smoke(app, window, screen_timeout_s)
    previous_hook = sys.excepthook

    def record(kind, value, tb) -> None:
        smoke.errors.append("".join(traceback.format_exception(kind, value, tb)).strip())

    sys.excepthook = record
    try:
        smoke.wait(
            lambda: opening.status not in ("new", "running", "cancelling"), "the project to open", open_timeout_s
        )
        if opening.status != "succeeded":
            raise SmokeFailure(f"the project did not open ({opening.status}): {opening.error}")
        smoke.render("the opened project")
        for key, name in PAGES if "pages" in parts else ():
            window.show_page(key)
            smoke.wait(lambda key=key: not window.page_opening(key), f"the {name} page to open", open_timeout_s)
            smoke.render(f"the {name} page")
            page = window.page_widgets[key]
            if isinstance(page, PlaceholderPage) and getattr(page, "failed", False):
                raise SmokeFailure(f"the {name} page could not be loaded: {page.message.text()}")
        window.show_page("results", focus=False)
        smoke.wait(lambda: not window.page_opening("results"), "the Results page to open", open_timeout_s)
        results = window.page_widgets["results"]
        tour = window.tour
        drawn = set()
        if "tour" in parts or "panels" in parts:
            window.show_page("results")
            smoke.wait(lambda: results.panels is not None, "the Results panels")
        # the tour's steps first (each opens a panel), then every panel no step drew with its published layer;
        # each panel is drawn with its published layer below it where it has one, so both layers are drawn
        for index, step in enumerate(tour.steps if "tour" in parts else ()):
            if index == 0:
                tour.start(0)
            else:
                tour.show_step(index)
            smoke.render(f"step {index + 1} of the guided tour ({step.title})")
            if tour.target_widget() is None:
                raise SmokeFailure(f"step {index + 1} of the guided tour points at nothing")
            if step.published:
                drawn.add(step.panel)
            if step.panel == "gender_probe":
                smoke.wait(lambda: results.gender_panel.view is not None, "the gender-probe detail")
                smoke.render("the gender-probe detail")
        for key in PANEL_ORDER if "panels" in parts else ():
            if key in drawn:
                continue
            results.view.published_on[key] = True
            results.show_panel(key)
            smoke.render(f"the Results panel {key}")
            if key == "gender_probe":
                smoke.wait(lambda: results.gender_panel.view is not None, "the gender-probe detail")
        if "panels" in parts:
            results.view.published_on.clear()
        tour.highlight.point_at(None)
        tour.dock.hide()  # the user's skipped/finished state is left as it was
        smoke.pump(0.05)
    except SmokeFailure as failure:
        print(f"smoke test failed: {failure}", file=sys.stderr)
        return 1
    except Exception as error:  # a bug in the smoke test's own driving is a failure too
        print(f"smoke test failed: {type(error).__name__}: {error}\n{traceback.format_exc()}", file=sys.stderr)
        return 1
    finally:
        sys.excepthook = previous_hook
    peak = peak_memory_mib()
    print(
        f"smoke test passed: {smoke.screens} screens rendered in {time.monotonic() - started:.1f} s "
        f"({window.project_path})" + (f", peak memory {peak:.0f} MiB" if peak else ""),
        file=out,
    )
    return 0


def peak_memory_mib() -> float | None:
    """This process's peak resident memory so far (issue 28's target for `--demo --smoke`: 300 MiB), or None
    where it cannot be read (Windows). Job processes are not counted: each exits once its work is done. On Linux
    from /proc (VmHWM): getrusage's ru_maxrss keeps the peak of the process that started this one across exec,
    so a smoke run started by a large process (a test run) would report that process's size."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024  # kB
    except OSError:
        pass
    try:
        import resource
    except ImportError:
        return None
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / 2**20 if sys.platform == "darwin" else peak / 1024  # bytes on macOS, KiB on Linux
