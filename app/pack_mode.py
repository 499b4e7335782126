"""An annotation pack opened in the app: the annotator on another machine rates the pack's queue on the usual
Rating page, and every rating lands in the pack file to send back.

`open_pack` unpacks the `.sbpack` once into a small project beside it (`A.sbpack.d/`); the window opens that
folder like any project, with the pack's annotator as the one who rates. Ratings are committed to that folder at
once (as everywhere); this controller also writes them into the `.sbpack` itself — 1.5 s after the last change,
on "Save Ratings into Pack" (Ctrl+S) and when the pack is closed — so the file to send back is never stale for
long. The zip is replaced atomically: a crash leaves the previous pack, and the folder keeps every rating. A save
that fails (the pack moved away, a full disk, a file another program holds) is said in the status bar, in the
warning tone, until a save succeeds; only Ctrl+S, which the annotator asked for, answers with a dialog: one popping
up 1.5 s after a rating would take the next rating keys."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from pathlib import Path

from PySide6.QtCore import QObject, QTimer, Signal

from spokenbench.app.operations import BackgroundOp, Operation, OperationRunner, explained_error
from spokenbench.core.foundation.progress import Progress
from spokenbench.core.qc.packs import PACK_SUFFIX, open_pack, pack_folder, read_pack, save_pack_ratings

SAVE_DELAY_MS = 1500  # after the last rating: a burst of ratings costs one rewrite of the zip
_SAVE_LOCK = threading.Lock()  # one rewrite of a pack file at a time; each reads the ratings inside the lock


def save_ratings_in_order(path: Path) -> int:
    """`save_pack_ratings`, one at a time: whichever save runs last has read the latest ratings."""
    with _SAVE_LOCK:
        return save_pack_ratings(path)


@dataclass(frozen=True)
class OpenedPack:
    path: Path  # the .sbpack file
    folder: Path  # the project it is rated in
    annotator: str
    queue: str
    clips: int


def is_pack(path: Path) -> bool:
    return Path(path).suffix == PACK_SUFFIX and Path(path).is_file()


def prepare_pack(path: Path, progress: Progress) -> OpenedPack:
    """Check the pack and unpack it (first time) or reuse its folder. Runs off the UI thread."""
    progress.report(0, None, f"opening {Path(path).name}")
    pack = read_pack(path)
    open_pack(path).close()
    manifest = pack.manifest
    return OpenedPack(
        path=pack.path,
        folder=pack_folder(pack.path),
        annotator=manifest["annotator"],
        queue=manifest["queue"]["name"],
        clips=len(manifest["clips"]),
    )


class PackController(QObject):
    """Keeps the open pack's file in step with the ratings made in it."""

    saved = Signal(int)  # how many ratings the pack file now carries
    status_changed = Signal(str, bool)  # the status line, and whether it warns (the last save failed)

    def __init__(self, runner: OperationRunner, parent: QObject | None = None):
        super().__init__(parent)
        self.runner = runner
        self.pack: OpenedPack | None = None
        self.dirty = False
        self.saving: Operation | None = None
        self.last_saved: int | None = None
        self.problem: str | None = None  # why the last save into the pack file failed; None once one succeeds
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(SAVE_DELAY_MS)
        self._timer.timeout.connect(self.save)

    def opened(self, pack: OpenedPack | None) -> None:
        """A pack opened: saved into at once, as the folder may hold ratings the file lacks (a save that failed
        before the app was closed); a file that already says so is not rewritten."""
        self.pack, self.dirty, self.last_saved, self.problem = pack, False, None, None
        self._timer.stop()
        self._tell()
        if pack is not None:
            self.save()

    def ratings_changed(self) -> None:
        if self.pack is not None:
            self.dirty = True
            self._timer.start()
            self._tell()

    def save(self, asked: bool = False) -> Operation | None:
        """Write the folder's ratings into the pack file (off the UI thread); a save in flight is followed by
        another when ratings arrived meanwhile. `asked` (Ctrl+S): a failure is a dialog too."""
        if self.pack is None:
            return None
        if self.saving is not None:
            self._timer.start()  # try again once this one is done
            if asked:  # Ctrl+S during an automatic save: its failure, if it fails, is a dialog
                self.saving.failure(lambda _error: None, dialog=True)
            return self.saving
        self.saving = self._start_save(self.pack.path, asked)
        return self.saving

    def _start_save(self, path: Path, asked: bool = False) -> Operation:
        self.dirty = False
        operation = BackgroundOp(
            self.runner,
            lambda progress: save_ratings_in_order(path),
            label=f"Saving ratings into {path.name}",
            parent=self,
            error_title="Cannot save ratings into the pack",
        )
        operation.success(lambda count: self._saved(path, count))
        operation.failure(lambda error: self._failed(path, error), dialog=asked)
        operation.finished.connect(lambda: self._finished(operation))
        return operation.run()

    def _finished(self, operation: Operation) -> None:
        if self.saving is operation:
            self.saving = None

    def close(self) -> Operation | None:
        """The pack is being closed: one last save if anything changed since the last one started (the
        window's shutdown waits for it)."""
        operation = self._start_save(self.pack.path) if self.pack is not None and self.dirty else None
        self._timer.stop()
        self.pack = None
        self.saving = None
        self.status_changed.emit("", False)
        return operation

    def _saved(self, path: Path, count: int) -> None:
        if self.pack is not None and self.pack.path == path:
            self.last_saved, self.problem = count, None
            self._tell()
        self.saved.emit(count)

    def _failed(self, path: Path, error: BaseException) -> None:
        if self.pack is not None and self.pack.path == path:
            self.dirty = True
            self.problem = explained_error(error) or f"{type(error).__name__}: {error}"
            self._tell()

    def _tell(self) -> None:
        self.status_changed.emit(self.describe(), self.problem is not None)

    def explain(self) -> str:
        """The status line's tooltip: what failed, and that nothing rated is lost."""
        if self.pack is None or self.problem is None:
            return ""
        return (
            f"The last save into {self.pack.path} failed: {self.problem}. Every rating is kept in "
            f"{self.pack.folder}, and the next save that works writes them all into the pack (after the next "
            "rating, or File → Save Ratings into Pack, Ctrl+S). Send the pack back only once this line says so."
        )

    def describe(self) -> str:
        if self.pack is None:
            return ""
        head = f"Pack {self.pack.path.name} · queue {self.pack.queue} · rating as {self.pack.annotator}"
        if self.problem is not None:  # short enough for a 1280-pixel status bar; the whole story: `explain`
            reason = self.problem.removeprefix(f"{self.pack.path}: ")
            return f"Pack {self.pack.path.name} NOT saved: {reason} · ratings kept in {self.pack.folder.name} · Ctrl+S"
        if self.dirty:
            return f"{head} · saving…"
        if self.last_saved:
            return f"{head} · {self.last_saved} ratings saved into the pack at {time.strftime('%H:%M:%S')}"
        return f"{head} · send the .sbpack back when done"
