"""An annotation pack opened in the app: the annotator on another machine rates the pack's queue on the usual
Rating page, and every rating lands in the pack file to send back.

`open_pack` unpacks the `.sbpack` once into a small project beside it (`A.sbpack.d/`); the window opens that
folder like any project, with the pack's annotator as the one who rates. Ratings are committed to that folder at
once (as everywhere); this controller also writes them into the `.sbpack` itself — 1.5 s after the last change,
on "Save Ratings into Pack" (Ctrl+S) and when the pack is closed — so the file to send back is never stale for
long. The zip is replaced atomically, so a save rewrites it whole, audio too: ~18 s for a pack of 480 real-length
clips (112 MB) on a USB 2 stick. Automatic saves are therefore spaced by what the last one cost (the disk busy
at most a tenth of the time), and quitting waits for the last save, showing how far it is (`PackQuitDialog`). A
crash leaves the previous pack, and the folder keeps every rating. A save that fails (the pack moved away, a full
disk, a file another program holds) is said in the status bar, in the warning tone, until a save succeeds; only
Ctrl+S, which the annotator asked for, answers with a dialog: one popping up 1.5 s after a rating would take the
next rating keys."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from pathlib import Path

from PySide6.QtCore import QObject, QStandardPaths, Qt, QTimer, Signal
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QLabel,
    QMessageBox,
    QProgressBar,
    QVBoxLayout,
    QWidget,
)

from spokenbench.app.operations import BackgroundOp, Operation, OperationRunner, WriteOp, explained_error
from spokenbench.core.foundation.progress import Progress
from spokenbench.core.qc.pack_folders import TakenIn, open_pack, pack_folder, save_pack_ratings
from spokenbench.core.qc.packs import PACK_SUFFIX, read_pack
from spokenbench.widgets.keys import shown_as_is

SAVE_DELAY_MS = 1500  # after the last rating: a burst of ratings costs one rewrite of the zip
SAVE_COST_FACTOR = 9  # an automatic save waits 9x as long as the last one took: the disk busy at most 1/10


@dataclass(frozen=True)
class OpenedPack:
    path: Path  # the .sbpack file
    folder: Path  # the project it is rated in
    annotator: str
    queue: str
    clips: int
    taken_in: TakenIn = TakenIn()  # ratings made elsewhere that the file brought and its folder lacked


def is_pack(path: Path) -> bool:
    return Path(path).suffix == PACK_SUFFIX and Path(path).is_file()


def prepare_pack(path: Path, progress: Progress) -> OpenedPack:
    """Check the pack and unpack it (first time) or reuse its folder. Runs off the UI thread."""
    progress.report(0, None, f"opening {Path(path).name}")
    pack = read_pack(path)
    taken: list[TakenIn] = []
    open_pack(path, progress, taken.append).close()  # the first opening copies every clip: bytes reported
    manifest = pack.manifest
    return OpenedPack(
        path=pack.path,
        folder=pack_folder(pack.path),
        annotator=manifest["annotator"],
        queue=manifest["queue"]["name"],
        clips=len(manifest["clips"]),
        taken_in=taken[0] if taken else TakenIn(),
    )


class PackController(QObject):
    """Keeps the open pack's file in step with the ratings made in it."""

    saved = Signal(int)  # how many ratings the pack file now carries
    status_changed = Signal(str, bool)  # the status line, and whether it warns (the last save failed)
    save_progress = Signal(int, object)  # bytes copied by the save in flight, of how many (None: not known yet)
    settled = Signal(bool)  # after `flush`: True once the file holds every rating, False when a save failed

    def __init__(self, runner: OperationRunner, parent: QObject | None = None):
        super().__init__(parent)
        self.runner = runner
        self.pack: OpenedPack | None = None
        self.dirty = False
        self.saving: Operation | None = None
        self.last_saved: int | None = None
        self.problem: str | None = None  # why the last save into the pack file failed; None once one succeeds
        self.last_save_s: float | None = None  # how long the last save that worked took
        self.flushing = False  # quitting: saving until the file holds every rating
        self.flush_failure: tuple[Path, str] | None = None  # a save that failed while quitting: the pack, why
        self.closed_saves: list[Operation] = []  # last saves of packs closed (another opened), still running
        self.saves_stopped = False  # the annotator quit without the last save
        self.copied: tuple[int, int | None] | None = None  # the save in flight: bytes copied, of how many
        self._due: float | None = None  # when the next automatic save starts (time.time())
        self._again_at_once = False  # Ctrl+S during a save: ratings made since are saved right after it
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.timeout.connect(self.save)

    def opened(self, pack: OpenedPack | None) -> None:
        """A pack opened: saved into at once, as the folder may hold ratings the file lacks (a save that failed
        before the app was closed); a file that already says so is not rewritten."""
        self.pack, self.dirty, self.last_saved, self.problem = pack, False, None, None
        self.last_save_s, self.saves_stopped = None, False
        self._timer.stop()
        self._tell()
        if pack is not None:
            self.save()

    def save_delay_ms(self) -> int:
        """How long after a rating the automatic save starts: 1.5 s after the last of a burst, or, where the last
        save took long (a big pack on a stick or a share), 9x that after the first rating since."""
        if self.last_save_s is None:
            return SAVE_DELAY_MS
        return max(SAVE_DELAY_MS, round(self.last_save_s * 1000 * SAVE_COST_FACTOR))

    def _schedule(self) -> None:
        delay = self.save_delay_ms()
        if delay > SAVE_DELAY_MS and self._timer.isActive():
            return  # a slow pack is saved this long after the first unsaved rating, not after the last
        self._timer.start(delay)
        self._due = time.time() + delay / 1000

    def ratings_changed(self) -> None:
        if self.pack is not None:
            self.dirty = True
            if not self.flushing:
                self._schedule()
            elif self.saving is None:  # a rating stored while the quit waits: it goes in at once
                self._start_save(self.pack.path)
            self._tell()

    def save(self, asked: bool = False) -> Operation | None:
        """Write the folder's ratings into the pack file (off the UI thread); a save in flight is followed by
        another when ratings arrived meanwhile. `asked` (Ctrl+S): a failure is a dialog too."""
        if self.pack is None:
            return None
        if self.flushing:
            return self.saving  # the quit saves already
        if self.saving is not None:
            if asked:  # Ctrl+S during an automatic save: its failure, if it fails, is a dialog, and ratings
                self.saving.failure(lambda _error: None, dialog=True)  # made since go in right after it
                self._again_at_once = True
            return self.saving
        self._timer.stop()
        self.saving = self._start_save(self.pack.path, asked)
        return self.saving

    def _start_save(self, path: Path, asked: bool = False) -> Operation:
        self.dirty, self.copied, self._due = False, None, None
        self._again_at_once = False
        started = time.monotonic()
        operation = PackSave(self.runner, path, parent=self)
        operation.on_progress(lambda done, total, _message: self._copying(path, done, total))
        operation.success(lambda count: self._saved(path, count, time.monotonic() - started))
        operation.failure(lambda error: self._failed(path, error), dialog=asked)
        operation.finished.connect(lambda: self._finished(operation))
        self.saving = operation.run()
        self._tell()
        return operation

    def flush(self) -> bool:
        """Quitting: save until the pack file holds every rating, and let the saves of packs closed earlier end;
        `settled` says how it ended (a failed save is tried once more first). False when there is nothing to wait
        for. Ratings queued for a project with no pack open are the window's to wait for
        (`MainWindow.writes_in_before_quitting`), not the pack's: this said "Saving the ratings into the pack"."""
        rating_writes = self._rating_writes() if self.pack is not None else []
        waiting = any(operation.is_running for operation in self.closed_saves) or rating_writes
        if not waiting and (self.pack is None or not (self.dirty or self.saving or self.problem is not None)):
            return False
        self.flushing, self.flush_failure = True, None
        self._timer.stop()
        for write in rating_writes:  # queued ratings: stored, then saved into the pack
            write.finished.connect(self._rating_stored)
        if self.pack is not None and self.saving is None and (self.dirty or self.problem is not None):
            self._start_save(self.pack.path)
        return True

    def resume_saves(self) -> None:
        """A quit called off after "Quit without saving into the pack" (the annotator went back to rating from a
        later question): the pack is saved again, as before the quit."""
        if self.saves_stopped:
            self.saves_stopped = False
            if self.dirty and self.pack is not None and self.saving is None:  # else once the stopped save ends
                self._schedule()

    def stop_flushing(self, cancel: bool) -> None:
        """The quit was called off (`cancel` False: automatic saves go on) or the annotator quits without the
        last save (`cancel`: the saves in flight stop, each pack stays as it was, the folders keep every rating)."""
        self.flushing = False
        if cancel:
            self.saves_stopped = True  # closing the pack next saves nothing either
            for operation in [self.saving, *self.closed_saves]:
                if operation is not None:
                    operation.stop()
            if self.saving is not None:
                self.dirty = True  # the stopped save leaves the file as it was
        elif self.dirty and self.saving is None:
            self._schedule()

    def _finished(self, operation: Operation) -> None:
        if operation in self.closed_saves:
            self.closed_saves.remove(operation)
        elif self.saving is operation:
            self.saving, self.copied = None, None
            if self.dirty and self.pack is not None and operation.status == "succeeded":
                if self.flushing or self._again_at_once:  # ratings came while it saved: they go in at once
                    self._start_save(self.pack.path, asked=self._again_at_once)
                else:  # spaced from this save's end, by what it cost
                    self._timer.stop()
                    self._schedule()
            elif self.dirty and self.pack is not None and operation.status == "cancelled" and not self.saves_stopped:
                self._schedule()  # stopped by a quit that was then called off (`resume_saves`)
        else:
            return
        if operation.status == "failed" and self.flushing and self.flush_failure is None:
            error = operation.error
            self.flush_failure = (operation.saving_into, explained_error(error) or f"{type(error).__name__}: {error}")
        self._settle_flush()
        self._tell()

    def _rating_writes(self) -> list[Operation]:
        """Ratings queued for the project's writer, not yet stored: the pack file must wait for them too."""
        return [op for op in list(self.runner.running) if isinstance(op, WriteOp) and "ratings" in op.changes]

    def _rating_stored(self) -> None:
        if self.flushing and self.pack is not None:
            self.ratings_changed()  # its change may be announced after this: saving again costs no rewrite
        self._settle_flush()

    def _settle_flush(self) -> None:
        running = self.saving is not None or any(op.is_running for op in self.closed_saves)
        if not self.flushing or running or self._rating_writes():
            return
        self.flushing = False
        self.settled.emit(self.flush_failure is None)

    def close(self) -> Operation | None:
        """The pack is being closed: one last save if anything changed since the last one started. It goes on
        in the background; a quit (`flush`) waits for it."""
        previous = self.saving
        wanted = self.pack is not None and self.dirty and not self.saves_stopped
        operation = self._start_save(self.pack.path) if wanted else None
        self.closed_saves.extend(op for op in (previous, operation) if op is not None and op.is_running)
        self._timer.stop()
        self.pack = None
        self.saving = None
        self.status_changed.emit("", False)
        return operation

    def _copying(self, path: Path, done: int, total: int | None) -> None:
        if self.pack is not None and self.pack.path == path:
            self.copied = (done, total)
            self._tell()
        self.save_progress.emit(done, total)

    def waited_for(self) -> Path | None:
        """The pack file a quit waits for: the open one, else one closed whose last save still runs."""
        if self.pack is not None:
            return self.pack.path
        running = [op.saving_into for op in self.closed_saves if op.is_running]
        return running[0] if running else None

    def _saved(self, path: Path, count: int, seconds: float) -> None:
        if self.pack is not None and self.pack.path == path:
            self.last_saved, self.problem, self.last_save_s = count, None, seconds
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
        """The status line's tooltip: what failed, and that nothing rated is lost; or when the next save comes."""
        if self.pack is None:
            return ""
        if self.problem is None:
            if self.dirty and self._due is not None and self.save_delay_ms() > SAVE_DELAY_MS:
                return (
                    f"The last save into {self.pack.path.name} took {self.last_save_s:.0f} s (the whole pack is "
                    f"rewritten), so the next starts at {time.strftime('%H:%M:%S', time.localtime(self._due))}. "
                    f"Every rating is already kept in {self.pack.folder}; Ctrl+S saves into the pack now, and "
                    "quitting saves first."
                )
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
        if self.saving is not None and self.copied is not None and self.copied[1]:
            return f"{head} · saving… {100 * self.copied[0] // self.copied[1]}%"
        if self.dirty and self.saving is None and self._due is not None and self.save_delay_ms() > SAVE_DELAY_MS:
            return f"{head} · next save {time.strftime('%H:%M:%S', time.localtime(self._due))} · Ctrl+S now"
        if self.dirty or self.saving is not None:
            return f"{head} · saving…"
        if self.last_saved:
            return f"{head} · {self.last_saved} ratings saved into the pack at {time.strftime('%H:%M:%S')}"
        return f"{head} · send the .sbpack back when done"


class PackSave(BackgroundOp):
    """One save of the ratings into a pack file. Stopped only by `stop()` (the annotator's "Quit without saving
    into the pack"), never by a cancel — the jobs panel's, or the runner's at shutdown, which a quit has waited
    out: a save cut short leaves the file without the ratings it was to carry, and its temp file behind."""

    def __init__(self, runner: OperationRunner, path: Path, parent: QObject):
        self.saving_into = path
        self._stop = threading.Event()
        super().__init__(
            runner,
            lambda progress: save_pack_ratings(path, Progress(progress.report, self._stop)),
            label=f"Saving ratings into {path.name}",
            parent=parent,
            error_title="Cannot save ratings into the pack",
        )

    @property
    def cancellable(self) -> bool:
        return False

    def cancel(self) -> None:
        """Ignored: see the class."""

    def stop(self) -> None:
        self._stop.set()


class PackQuitDialog(QDialog):
    """Quitting while the pack file lacks ratings: the last save runs, with how far it is (a pack of real audio
    takes ~18 s on a USB 2 stick); the window closes when it is done. Esc or Enter goes back to rating (the save
    goes on); only the explicit "Quit without saving into the pack" quits first, the pack left as it was."""

    BACK, QUIT_UNSAVED = 0, 2  # its results (0: rejected)

    def __init__(self, packs: PackController, parent: QWidget):
        super().__init__(parent)
        path = packs.waited_for() or Path("the pack")
        self.setWindowTitle("Saving ratings into the pack")
        self.setModal(True)
        self.message = QLabel(
            f"Saving the ratings into {path.name} before quitting. The whole pack is rewritten, which takes a "
            "while on a USB stick or a network share: keep it connected. The window closes when it is done.\n\n"
            f"Every rating is already kept in {pack_folder(path).name}."
        )
        self.message.setTextFormat(Qt.TextFormat.PlainText)
        self.message.setWordWrap(True)
        self.bar = QProgressBar()
        self.bar.setRange(0, 0)  # busy until the first bytes are copied
        self.bar.setFormat("%p%")
        buttons = QDialogButtonBox()
        self.back_button = buttons.addButton("&Back to rating", QDialogButtonBox.ButtonRole.RejectRole)
        self.quit_button = buttons.addButton(
            "&Quit without saving into the pack", QDialogButtonBox.ButtonRole.ActionRole
        )
        self.back_button.setDefault(True)
        self.back_button.clicked.connect(self.reject)
        self.quit_button.clicked.connect(lambda: self.done(self.QUIT_UNSAVED))
        layout = QVBoxLayout(self)
        layout.addWidget(self.message)
        layout.addWidget(self.bar)
        layout.addWidget(buttons)
        self.setMinimumWidth(480)
        packs.save_progress.connect(self._copied)
        if packs.copied is not None:
            self._copied(*packs.copied)

    def _copied(self, done: int, total: int | None) -> None:
        if total:
            self.bar.setRange(0, 1000)
            self.bar.setValue(min(1000, 1000 * done // total))
            self.bar.setFormat(f"{done / 1e6:,.0f} of {total / 1e6:,.0f} MB")


PACK_COPY_FOLDER_KEY = "packs/copy_folder"  # the folder a pack was last copied into (Choose Folder…)


def pack_copy_folder(settings) -> Path:
    """Where a pack that cannot be rated where it is gets copied: the folder chosen last where it still is, else
    the user's Documents, else the home folder."""
    chosen = str(settings.value(PACK_COPY_FOLDER_KEY, "") or "")
    if chosen and Path(chosen).is_dir():
        return Path(chosen)
    documents = QStandardPaths.writableLocation(QStandardPaths.StandardLocation.DocumentsLocation)
    return Path(documents) if documents and Path(documents).is_dir() else Path.home()


class PackCopyDialog(QMessageBox):
    """A pack on a read-only stick, a mounted image or a share without write rights cannot be rated where it is
    (its folder is made beside it): say so, and offer to copy it to `folder` (Enter) or to another folder, and
    rate the copy. An earlier copy there is reused, never overwritten (`copy_pack_to`)."""

    COPY, CHOOSE, CANCEL = "copy", "choose", "cancel"

    def __init__(self, pack_path: Path, reason: str, folder: Path, parent: QWidget):
        super().__init__(
            QMessageBox.Icon.Warning, "Copy the pack to rate it?", "", QMessageBox.StandardButton.NoButton, parent
        )
        self.setTextFormat(Qt.TextFormat.PlainText)
        self.setText(
            f"{pack_path.name} cannot be rated where it is: {pack_path.parent} cannot be written ({reason}). A "
            "pack is rated in a folder made beside it, and its ratings are saved into the pack file."
        )
        self.setInformativeText(
            f"Copy it to {folder} and rate the copy there? Send that copy back when you are done; the original "
            "stays as it is. A copy made there before is opened again, with its ratings."
        )
        named = "Home Folder" if folder == Path.home() else (folder.name or str(folder))
        self.copy_button = self.addButton(f"&Copy to {shown_as_is(named)} and Open", QMessageBox.ButtonRole.AcceptRole)
        self.choose_button = self.addButton("C&hoose Another Folder…", QMessageBox.ButtonRole.ActionRole)
        self.cancel_button = self.addButton(QMessageBox.StandardButton.Cancel)
        self.setDefaultButton(self.copy_button)
        self.setEscapeButton(self.cancel_button)

    def answer(self) -> str:
        clicked = self.clickedButton()
        if clicked is self.copy_button:
            return self.COPY
        return self.CHOOSE if clicked is self.choose_button else self.CANCEL
