"""The guided tour's wiring: a dock on the right of the window (below the page where a page would scroll sideways
beside it: `TourController.place`) holding widgets/tour_panel.py, Help → Guided tour
to open it, and each step (core/demo/tour.py) opened where it points — the sidebar page, the Results panel selected,
its published layer on or off, and an orange frame around the run list, the panel or the gender-probe detail.

Skipping (or closing the dock) and finishing are remembered in QSettings (`tour/state`), so `--demo` shows the tour
until the user has skipped or finished it once; Help → Guided tour always opens it again, at the first step."""

from __future__ import annotations

from PySide6.QtCore import QEvent, QObject, QPoint, Qt, QTimer, Signal
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QDockWidget, QScrollArea, QSplitter, QStyle, QWidget

from spokenbench.core.demo.tour import TOUR, TourStep
from spokenbench.widgets.text_size import text_scale
from spokenbench.widgets.tour_panel import Highlight, TourPanel

DOCK_WIDTH = 270
BELOW_SHARE = 0.35  # of the window's height: the tour's dock below the page (`place`)
PLACE_AFTER_MS = 100  # a page that scrolls sideways this long beside the dock sends it below
RUN_LIST_WIDTH = 200  # the Results page's run and panel lists while the tour takes the right side
TOUR_STATE_KEY = "tour/state"  # "skipped" or "finished" once the user did either
NO_PROJECT_NOTE = (
    "No project is open, so there are no panels to point at: open the demo project (below, or File → Open the "
    "Demo Project; `spokenbench-studio --demo` from a terminal)."
)


class TourController(QObject):
    step_shown = Signal(int)  # after a step's page and panel are opened
    closed = Signal(str)  # "skipped" or "finished"

    def __init__(self, window, steps: tuple[TourStep, ...] = TOUR):
        super().__init__(window)
        self.window = window
        self.steps = steps
        self._with_real_step = steps is TOUR  # the default tour gains the real model's step when its run is open
        self.index = -1
        self._came_from: str | None = None
        self._watched_page: QWidget | None = None  # the Results page whose gender detail re-scrolls the tour
        self.panel = TourPanel()
        self.panel.set_steps(steps)
        self.dock = QDockWidget("Guided tour", window)
        self.dock.setObjectName("tourDock")
        self.dock.setWidget(self.panel)
        self.dock.setAllowedAreas(
            Qt.DockWidgetArea.RightDockWidgetArea
            | Qt.DockWidgetArea.LeftDockWidgetArea
            | Qt.DockWidgetArea.BottomDockWidgetArea
        )
        self.dock.setMinimumWidth(DOCK_WIDTH)
        window.addDockWidget(Qt.DockWidgetArea.RightDockWidgetArea, self.dock)
        self.dock.hide()
        self.dock.installEventFilter(self)  # the dock's own close button skips the tour
        self.placed_by_person = False  # the dock dragged elsewhere or floated: `place` leaves it there
        self._placing_dock = False
        self.dock.dockLocationChanged.connect(self._dock_moved)
        self.dock.topLevelChanged.connect(lambda floating: self._dock_moved() if floating else None)
        # after the layout the change asks for, and after a page's own fitting once shown (a new page's table)
        self._place_soon = QTimer(self, singleShot=True, interval=PLACE_AFTER_MS)
        self._place_soon.timeout.connect(self.place)
        self._below_since: tuple[float, int] | None = None  # the text scale and window width it went below at
        self._fit_width = False  # the text size changed: the dock beside the page fitted to it (`place`)
        self._back_by_fit: tuple[float, int] | None = None  # the size it last came back beside at by the pages' fit
        window.installEventFilter(self)  # resized, larger text: placed again
        window.page_scroll.horizontalScrollBar().rangeChanged.connect(lambda *_: self._place_soon.start())
        self._shown_pages: set[str] = set()  # the keys of the pages shown so far (`_every_page_fits_beside`)
        window.page_stack.currentChanged.connect(self._page_shown)
        self.highlight = Highlight()
        self.panel.next_requested.connect(self.next)
        self.panel.back_requested.connect(self.back)
        self.panel.skip_requested.connect(self.skip)
        self.panel.finish_requested.connect(self.finish)
        self.panel.demo_requested.connect(self.open_demo)

        help_menu = window.menuBar().addMenu("&Help")
        self.action = QAction("Guided &Tour", window)
        self.action.setShortcut(QKeySequence("F1"))
        self.action.setToolTip("Walk through the papers' findings on the demo project's panels")
        self.action.triggered.connect(lambda: self.start())
        help_menu.addAction(self.action)

    # -- state ----------------------------------------------------------------------------------

    @property
    def settings(self):
        return self.window.settings

    def state(self) -> str:
        return str(self.settings.value(TOUR_STATE_KEY, "") or "")

    def is_open(self) -> bool:
        return not self.dock.isHidden()

    def start_if_new(self) -> bool:
        """Open the tour unless the user skipped or finished it before; True when opened."""
        if self.state() in ("skipped", "finished"):
            return False
        self.start()
        return True

    def _refresh_steps(self) -> None:
        """The real model's step (core/demo/tour.py) only when the open project has its run: read from the Results
        page's run list, already loaded off the UI thread."""
        if not self._with_real_step:
            return
        from spokenbench.core.demo.tour import tour_steps
        from spokenbench.core.evaluation.real_demo import REAL_LABEL

        page = self.window.page_widgets.get("results") if self.window.session is not None else None
        runs = getattr(page, "runs", None) or []
        steps = tour_steps(has_real=any(run.get("name") == REAL_LABEL for run in runs))
        if steps != self.steps:
            self.steps = steps
            self.panel.set_steps(steps)

    def start(self, index: int = 0) -> None:
        self._refresh_steps()
        opening = self.dock.isHidden()
        if opening:
            self._came_from = self.window.current_page_key()  # where closing the tour goes back to
        self.dock.show()
        self.dock.raise_()
        if opening and self.dock_beside():  # its width taken from the page, never widening the window
            self.window.resizeDocks([self.dock], [DOCK_WIDTH + 10], Qt.Orientation.Horizontal)
        self.show_step(index)
        self.place()
        if opening:
            self.window.when_page("results", lambda _page: self._make_room())  # once the page is built
        self.panel.setFocus()

    def _make_room(self) -> None:
        """The dock takes width from the page: narrow the Results page's lists of runs and panels so its figures
        keep theirs (the user can drag them back). Not with the dock below the page."""
        if not self.dock_beside():
            return
        page = self.window.page_widgets.get("results")
        lists = getattr(page, "run_list", None)
        body = lists.parentWidget().parentWidget() if lists is not None and lists.parentWidget() else None
        if isinstance(body, QSplitter) and body.count() == 2:
            sizes = body.sizes()
            if sizes[0] > RUN_LIST_WIDTH:
                body.setSizes([RUN_LIST_WIDTH, sum(sizes) - RUN_LIST_WIDTH])

    # -- where the dock goes ------------------------------------------------------------------------

    def dock_beside(self) -> bool:
        return self.window.dockWidgetArea(self.dock) != Qt.DockWidgetArea.BottomDockWidgetArea

    def place(self) -> None:
        """Below the page once the page shown scrolls sideways beside the dock and its least width is more than
        its room (PLACE_AFTER_MS after the last change), beside it again once the text is smaller or the window
        wider than when it went, or once every page shown so far fits beside it: with the text made larger (175 %
        on a 1280×720 laptop, 200 % on 1400×900) Items, Rewrites, QC, Speakers and Evaluate scrolled sideways
        beside the tour (Rewrites 889 pixels in 564 at 200 %); below it they scroll only down. Back beside, a
        page that still does not fit sends it below again a moment later. A dock a person dragged elsewhere or
        floated stays there."""
        fit_width, self._fit_width = self._fit_width, False
        if fit_width:
            # a dock's layout raises its least width to its content's and never lowers it: at 200 % the tour took
            # 350 pixels, and after Ctrl+0 it kept them until the app ended (here once the fonts have all changed)
            self.dock.setMinimumWidth(DOCK_WIDTH)
        if not self.is_open() or self.placed_by_person or self.dock.isFloating():
            return
        window = self.window
        if self.dock_beside():
            page, room = window.page_stack.currentWidget(), window.page_scroll.viewport().width()
            # it scrolls, and not only while it is filled: its least width is more than its room
            if window.page_scroll.horizontalScrollBar().maximum() > 0 and page.minimumSizeHint().width() > room:
                self._below_since = (text_scale(), window.width())
                self._move_dock(below=True)
                return
            self._back_by_fit = None  # the page shown fits: a return by the pages' fit held, another may follow
            if fit_width:  # the text size changed: as wide as the tour's text needs at it, no wider
                window.resizeDocks([self.dock], [self._beside_width()], Qt.Orientation.Horizontal)
        else:
            now = (text_scale(), window.width())
            since = self._below_since
            smaller_or_wider = since is None or since[0] > now[0] or since[1] < now[1]
            # at 100 % in a maximized window neither can change: back once the pages fit, once for this size (a
            # page that then does not fit after all sends it below again, for good at this size)
            fits_now = now != self._back_by_fit and self._every_page_fits_beside()
            if smaller_or_wider or fits_now:
                self._back_by_fit = now if fits_now and not smaller_or_wider else None
                self._below_since = None
                self._move_dock(below=False)

    def _page_shown(self, index: int) -> None:
        shown = self.window.page_stack.widget(index)  # the sidebar follows a moment later: not asked here
        self._shown_pages.update(key for key, page in self.window.page_widgets.items() if page is shown)
        if self.is_open():  # below: perhaps back beside it
            self._place_soon.start()

    def _every_page_fits_beside(self) -> bool:
        """Whether every page shown so far (a page never shown lays out none of its widgets) would fit beside the
        dock: the widest one's least width (a page that adapts, as Evaluate does, as it was last laid out: on the
        safe side) and the dock's in the page's room now, a scroll bar's too where it does not scroll down yet."""
        window = self.window
        pages = [window.page_widgets.get(key) for key in self._shown_pages]
        widest = max((page.minimumSizeHint().width() for page in pages if page is not None), default=0)
        style = window.style()
        separator = style.pixelMetric(QStyle.PixelMetric.PM_DockWidgetSeparatorExtent, None, window)
        scrolls_down = window.page_scroll.verticalScrollBar().isVisible()
        bar = 0 if scrolls_down else style.pixelMetric(QStyle.PixelMetric.PM_ScrollBarExtent, None, window)
        return widest + self._beside_width() + separator + bar <= window.page_scroll.viewport().width()

    def _beside_width(self) -> int:
        return max(DOCK_WIDTH + 10, self.dock.minimumSizeHint().width())

    def _move_dock(self, below: bool) -> None:
        window = self.window
        self._placing_dock = True
        try:
            if below:
                window.addDockWidget(Qt.DockWidgetArea.BottomDockWidgetArea, self.dock)
                window.resizeDocks([self.dock], [int(window.height() * BELOW_SHARE)], Qt.Orientation.Vertical)
            else:
                window.addDockWidget(Qt.DockWidgetArea.RightDockWidgetArea, self.dock)
                window.resizeDocks([self.dock], [self._beside_width()], Qt.Orientation.Horizontal)
            self.dock.show()  # re-added: shown again
        finally:
            self._placing_dock = False

    def _dock_moved(self, *_args) -> None:
        if not self._placing_dock and self.is_open():
            self.placed_by_person = True

    # -- moving ---------------------------------------------------------------------------------

    def show_step(self, index: int) -> TourStep:
        index = max(0, min(index, len(self.steps) - 1))
        self.index = index
        step = self.steps[index]
        self.panel.show_step(index)
        no_project = self.window.session is None
        self.panel.set_note(NO_PROJECT_NOTE if no_project else None, offer_demo=no_project)
        self.open_target(step)
        self.step_shown.emit(index)
        return step

    def open_demo(self):
        """Open the demo from the tour (no project was open), then show the current step on it."""
        operation = self.window.open_demo()
        operation.success(lambda _opened: self.show_step(max(self.index, 0)) if self.is_open() else None)
        return operation

    def next(self) -> None:
        if self.index < len(self.steps) - 1:
            self.show_step(self.index + 1)
        else:
            self.finish()

    def back(self) -> None:
        if self.index > 0:
            self.show_step(self.index - 1)

    def skip(self) -> None:
        self._close("skipped")

    def finish(self) -> None:
        self._close("finished")

    def _close(self, how: str) -> None:
        self.settings.setValue(TOUR_STATE_KEY, how)
        self.highlight.point_at(None)
        self.dock.hide()  # hiding sends no Close event
        self._go_back()
        self.closed.emit(how)

    def _go_back(self) -> None:
        """Back to the page the tour was opened from, with the keys (a rating session takes 1 / 2 / 3 at once)."""
        came_from, self._came_from = self._came_from, None
        if came_from is not None and self.window.session is not None:
            self.window.show_page(came_from)
        else:
            self.window.focus_page()

    def eventFilter(self, watched, event) -> bool:
        if watched is self.window:
            font_changed = event.type() in (QEvent.Type.FontChange, QEvent.Type.ApplicationFontChange)
            self._fit_width = self._fit_width or font_changed
            if (font_changed or event.type() == QEvent.Type.Resize) and self.is_open():
                self._place_soon.start()
            return False
        if watched is self.dock and event.type() == QEvent.Type.Close:
            self.settings.setValue(TOUR_STATE_KEY, "skipped")
            self.highlight.point_at(None)
            self._go_back()
            self.closed.emit("skipped")
        return False

    # -- pointing -------------------------------------------------------------------------------

    def open_target(self, step: TourStep) -> None:
        """Open the step's page and panel, set its published layer, and frame what it talks about: once the page
        is built (its module may still be importing: app/page_modules.py), if the step is still shown."""
        self.window.show_page(step.page, focus=False)  # the keys stay with the tour
        shown_now = self.index

        def frame(page: QWidget) -> None:
            if self.is_open() and self.index == shown_now and self.steps[shown_now] is step:  # still this step
                self._frame(step, page)

        if self.window.page_opening(step.page):
            self.window.when_page(step.page, frame)
        else:
            self._frame(step, self.window.page_widgets.get(step.page))

    def _frame(self, step: TourStep, page: QWidget) -> QWidget:
        target = page
        if step.panel is not None and hasattr(page, "show_panel"):
            view = page.view
            view.published_on[step.panel] = step.published  # set_panel reads it when the panel is (re)drawn
            page.show_panel(step.panel)
            if view.panel is not None and view.panel.key == step.panel:
                view.published_toggle.setChecked(step.published)
            if hasattr(page, "gender_panel"):
                page.gender_panel.choose_setting(step.view)  # the answer setting it shows; None: as it was
            if step.focus == "runs":
                target = page.run_list
            elif step.focus == "gender_detail":
                target = page.gender_panel
                page.gender_panel.show_tab(0)
                if self._watched_page is not page:  # the detail is computed after: scroll to it once it is shown
                    self._watched_page = page
                    page.gender_ready.connect(lambda _view: self._rescroll())
            else:
                target = view
        self.highlight.point_at(target)
        self._scroll_to(target)
        return target

    def _rescroll(self) -> None:
        if self.is_open() and self.index >= 0 and self.steps[self.index].focus == "gender_detail":
            self._scroll_to(self.target_widget())

    @staticmethod
    def _scroll_to(target: QWidget | None) -> None:
        """Scroll every scroll area around the target (the Results figures', the page's) so it is in view: at
        1280×720 the gender-probe detail sits below the figure."""
        area = target.parentWidget() if target is not None else None
        while area is not None and not area.isWindow():
            if isinstance(area, QScrollArea):
                area.ensureWidgetVisible(target, 0, 0)
                left = target.mapTo(area.widget(), QPoint(0, 0)).x()
                area.horizontalScrollBar().setValue(left)  # its start in view, where its text begins
            area = area.parentWidget()

    def target_widget(self) -> QWidget | None:
        return self.highlight.target


def install_tour(window) -> TourController:
    return TourController(window)
