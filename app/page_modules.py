"""The optional pages' modules (the Rating, QC, Speakers, Evaluate and Results pages), imported off the UI thread.

Why: importing the Results page's module loads matplotlib, pandas and pyarrow: 0.7 s in a fresh process, 1.0 s
after the page cache was dropped, 5.4 s with that and another program writing to the disk (medians,
tests/benchmarks/bench_first_results_visit.py). When it ran on the UI thread, at the first Ctrl+7, the window was
frozen meanwhile. Now a page asked for before its module is in says "Opening …" while the module is imported on a
thread, and the window keeps answering.

The window prefetches the small pages' modules soon after it is shown (app/main_window.py PREFETCHED_PAGES), so
they open at once. Not the Results page's: its module adds 131 MB to the app's process, which issue 28 keeps out
until the page is asked for.

The imports run one after another, each on a thread of its own: two at once would only share the GIL, and modules
that import each other can meet half-initialised if two threads import them at once. The UI thread builds the page
once its module is in (widgets are made there)."""

from __future__ import annotations

import importlib
import sys

from PySide6.QtCore import QObject, Signal
from PySide6.QtWidgets import QWidget

from spokenbench.app.operations import BackgroundOp, OperationRunner


def imported(name: str) -> bool:
    """Whether module `name` is wholly imported: in `sys.modules` and not still running its body (on the import
    thread), so importing it here only looks it up."""
    module = sys.modules.get(name)
    return module is not None and not getattr(getattr(module, "__spec__", None), "_initializing", False)


class PageModules(QObject):
    """A queue of modules to import on a thread, one at a time; `loaded` says when each is in, or why not."""

    loaded = Signal(str, object)  # the module's name, and None or the import's error: on the UI thread

    def __init__(self, runner: OperationRunner, window: QWidget):
        super().__init__(window)
        self.runner, self.window = runner, window
        self.waiting: list[str] = []  # in the order they will be imported
        self.importing: str | None = None

    def load(self, name: str) -> None:
        """Import `name` next (a page the user asked for goes before the prefetch); `loaded` answers."""
        if name == self.importing:
            return
        if name in self.waiting:
            self.waiting.remove(name)
        self.waiting.insert(0, name)
        self._next()

    def prefetch(self, names: list[str]) -> None:
        """Import these after what is waiting, each unless it is in already."""
        self.waiting += [name for name in names if name not in self.waiting and name != self.importing]
        self._next()

    def _next(self) -> None:
        while self.importing is None and self.waiting:
            name = self.waiting.pop(0)
            if imported(name):
                self.loaded.emit(name, None)
                continue
            self.importing = name
            operation = BackgroundOp(
                self.runner,
                lambda _progress, name=name: importlib.import_module(name),
                label=f"Importing {name}",
                parent=self.window,  # a window closed meanwhile: its outcome is dropped
            )
            operation.quiet = True  # never a row in the jobs panel: the page's placeholder says it is opening
            operation.success(lambda _module, name=name: self._done(name, None))
            operation.failure(lambda error, name=name: self._done(name, error))
            operation.finished.connect(lambda name=name: self._ended(name))
            operation.run()

    def _done(self, name: str, error: BaseException | None) -> None:
        self.importing = None
        self.loaded.emit(name, error)
        self._next()

    def _ended(self, name: str) -> None:
        if self.importing == name:  # abandoned, as the window closed: no outcome came, nothing more is imported
            self.importing = None
            self.waiting.clear()
