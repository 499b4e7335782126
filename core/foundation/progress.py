"""One progress/cancel interface for all long work. Core functions take a `Progress`; the CLI backs it with
a text bar, the app with a Qt signal, tests with a list. Cancellation is cooperative: work calls
`check_cancelled()` at safe points (between transactions), never mid-write. It has two steps: a cancel lets a
request already sent to a paid service finish, so its answer is kept, not paid for again by a resume
(core.jobs.loop.JobLoop); `cancel(now=True)` abandons those too."""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable

from spokenbench.core.foundation.errors import Cancelled

ProgressCallback = Callable[[int, int | None, str], None]


class Progress:
    """Reports (done, total, message) and carries a cancel flag that any thread may set."""

    def __init__(
        self,
        callback: ProgressCallback | None = None,
        cancel_event: threading.Event | None = None,
        on_job_recorded: Callable[[int, str | None], None] | None = None,
        stop_now_event: threading.Event | None = None,
    ):
        self._callback = callback
        self._cancel_event = cancel_event or threading.Event()
        self._stop_now_event = stop_now_event or threading.Event()
        self._on_job_recorded = on_job_recorded

    def job_recorded(self, job_id: int, claim: str | None) -> None:
        """Called by `core.jobs.registry.tracked_job` once the work's job row exists: a job process tells the app which
        job (and which run's claim) the work it was handed recorded itself."""
        if self._on_job_recorded is not None:
            self._on_job_recorded(job_id, claim)

    def report(self, done: int, total: int | None = None, message: str = "") -> None:
        if self._callback is not None:
            self._callback(done, total, message)

    def sub_task(self, callback: ProgressCallback | None = None) -> Progress:
        """A progress for one step of a larger job: its own reports (or none), the same cancel flags."""
        return Progress(callback, self._cancel_event, self._on_job_recorded, self._stop_now_event)

    def cancel(self, *, now: bool = False) -> None:
        """Ask the work to stop at its next safe point. Requests already sent to a paid service are waited for
        and their answers kept, unless `now`: then they are abandoned too (and a resume pays for them again)."""
        if now:
            self._stop_now_event.set()
        self._cancel_event.set()

    @property
    def cancelled(self) -> bool:
        return self._cancel_event.is_set()

    @property
    def stopping_now(self) -> bool:
        """Cancelled with `now`: nothing is waited for."""
        return self._stop_now_event.is_set()

    def check_cancelled(self) -> None:
        if self._cancel_event.is_set():
            raise Cancelled()


def no_progress() -> Progress:
    return Progress()


def text_progress_bar(stream=None, min_interval_s: float = 0.1) -> Progress:
    """A progress bar on stderr, drawn only when stderr is a terminal (scripts get clean output)."""
    out = stream or sys.stderr
    if not getattr(out, "isatty", lambda: False)():
        return Progress()
    last_draw = [0.0]

    def draw(done: int, total: int | None, message: str) -> None:
        now = time.monotonic()
        finished = total is not None and done >= total
        if not finished and now - last_draw[0] < min_interval_s:
            return
        last_draw[0] = now
        if total:
            filled = int(30 * done / total)
            bar = f"[{'#' * filled}{'.' * (30 - filled)}] {done}/{total}"
        else:
            bar = f"{done}"
        out.write(f"\r{bar} {message[:40]:<40}")
        if finished:
            out.write("\n")
        out.flush()

    return Progress(draw)
