"""Long jobs in a process of their own: the app's `JobOp` given a `JobCall` runs it here, not on a thread.

Why: a job that runs Python for seconds (an import of 20,000 items, a results file, WER screening) holds the
GIL for most of that time, and so does the garbage it makes for the UI thread's collector; on a thread of the
app's process it kept the UI's event loop from reacting for 50–140 ms at a time. In a process of its own it
shares nothing with the UI but the project, which it already shares safely with CLI runs and scripts: it is a
tracked job like any other (its row in the jobs table carries this process's pid, so a killed job is seen as
stale and its claim released).

A request is `tracked` (the child records the job, as a JobOp on a thread does) or not (the call records its
own, as `run_evaluation` does with its run's claim).

The protocol, over the child's standard streams (pickle frames; both ends are this package):
- parent → child, stdin: one request dict, length-prefixed (project path, kind, label, claim, the `JobCall`); after it,
  a byte — or the end of stdin, when the parent closes it or dies — asks the job to cancel at its next safe
  point, exactly as a cancel from the Jobs panel or another process does (answers to requests already sent are
  waited for and kept); STOP_NOW_BYTE asks it to abandon those too (Stop Now).
- child → parent, stdout: ("job", id, claim) for each job recorded (the first is the work's own), ("progress", done, total, message) at most
  `PROGRESS_INTERVAL_S` apart, then one outcome: ("ok", result), ("cancelled",) or ("error", exception).
  The child's own prints and warnings go to stderr, so nothing but frames ever reaches the parent's reader.

    python -m spokenbench.core.jobs.host      (the frozen app: spokenbench-studio --job-host)
"""

from __future__ import annotations

import collections
import os
import pickle
import signal
import subprocess
import sys
import threading
import time
import traceback
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from spokenbench.core.foundation.environment_errors import explain_environment_error
from spokenbench.core.foundation.errors import Cancelled, SpokenBenchError
from spokenbench.core.foundation.progress import Progress
from spokenbench.core.jobs.registry import CANCEL_POLL_S, TakenOver, tracked_job
from spokenbench.core.store import Project, database
from spokenbench.core.store.project import DATABASE_NAME

PROGRESS_INTERVAL_S = 0.05  # the parent's bar needs no more; every frame costs both processes a wakeup
REAP_S = 10.0  # how long an exit may take after the outcome was sent before the process is killed
LAST_WORDS = 12  # lines of a job process's own output kept for the message if it dies
CANCEL_BYTE = b"c"
STOP_NOW_BYTE = b"n"


@dataclass(frozen=True)
class JobCall:
    """`function(project, *args, progress=progress, **kwargs)` — or without the project for work outside one
    (`task_call`: building the demo) — picklable: a module-level function and plain arguments (paths, strings,
    settings dataclasses), so it can be sent to a job process."""

    function: Callable[..., Any]
    args: tuple = ()
    kwargs: Mapping[str, Any] = field(default_factory=dict)
    with_project: bool = True

    def __call__(self, project, progress: Progress) -> Any:
        if self.with_project:
            return self.function(project, *self.args, progress=progress, **self.kwargs)
        return self.function(*self.args, progress=progress, **self.kwargs)


def job_call(function: Callable[..., Any], *args: Any, **kwargs: Any) -> JobCall:
    return JobCall(function, args, kwargs)


def task_call(function: Callable[..., Any], *args: Any, **kwargs: Any) -> JobCall:
    """A call outside any project: run in a job process, not recorded in a jobs table."""
    return JobCall(function, args, kwargs, with_project=False)


class JobProcessError(Exception):
    """A bug in a job process, carried to the app with the child's traceback (the exception itself could not
    be sent, or is not one of ours)."""

    def __init__(self, type_name: str, message: str, child_traceback: str):
        super().__init__(f"{type_name}: {message}")
        self.type_name, self.message, self.child_traceback = type_name, message, child_traceback

    def __reduce__(self):
        return (type(self), (self.type_name, self.message, self.child_traceback))

    def __str__(self) -> str:
        return f"{self.type_name}: {self.message}\n\nIn the job process:\n{self.child_traceback}"


def job_host_command() -> list[str]:
    """The command that starts a job process: this interpreter, or the frozen app in its job-host mode."""
    if getattr(sys, "frozen", False):
        return [sys.executable, "--job-host"]
    return [sys.executable, "-m", "spokenbench.core.jobs.host"]


def encode_request(
    project_path: str | Path | None,
    call: JobCall,
    *,
    kind: str = "",
    label: str = "",
    claim: str | None = None,
    tracked: bool = True,
) -> bytes:
    """The request frame; pickling happens in the caller, so an unpicklable call fails there, at once."""
    if not isinstance(call, JobCall):
        raise TypeError(f"a job process runs a JobCall, not {type(call).__name__}")
    if (project_path is None) == call.with_project:
        raise ValueError("a job_call needs a project folder; a task_call runs outside any")
    project = None if project_path is None else str(project_path)
    request = {"project": project, "kind": kind, "label": label, "claim": claim, "tracked": tracked}
    data = pickle.dumps({**request, "call": call}, protocol=pickle.HIGHEST_PROTOCOL)
    return len(data).to_bytes(8, "big") + data


def run_in_job_process(request: bytes, progress: Progress, label: str) -> Any:
    """Run an encoded request in a job process and wait for its outcome — on a worker thread, never the UI's.
    Its frames become `progress` reports and `progress.job_recorded` calls; a cancel of `progress` becomes the
    cancel byte (looked at every CANCEL_POLL_S); its outcome is returned or raised as soon as it arrives (the
    process is reaped apart, killed if its exit hangs). A process that ends without one (killed, crashed) is a
    SpokenBenchError with its last lines of output: what it committed is kept, its job shows as interrupted."""
    # In a process group of its own: a Ctrl-C in the terminal the app was started from goes to the app's group
    # only, also while the job process starts (before it can ignore SIGINT); the app tells it when to stop.
    own_group = {"process_group": 0} if os.name == "posix" else {}
    process = subprocess.Popen(
        job_host_command(), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, **own_group
    )
    last_words: collections.deque[str] = collections.deque(maxlen=LAST_WORDS)
    relay = threading.Thread(target=_relay_stderr, args=(process, last_words), name=f"stderr: {label}", daemon=True)
    relay.start()
    finished = threading.Event()

    def forward_cancel() -> None:
        sent = b""
        while not finished.wait(CANCEL_POLL_S):
            wanted = STOP_NOW_BYTE if progress.stopping_now else CANCEL_BYTE if progress.cancelled else b""
            if wanted and wanted != sent:
                try:
                    process.stdin.write(wanted)
                    process.stdin.flush()
                except (OSError, ValueError):
                    return  # it has ended: nothing left to cancel
                sent = wanted
                if wanted == STOP_NOW_BYTE:
                    return

    watcher = threading.Thread(target=forward_cancel, name=f"cancel forward: {label}", daemon=True)
    outcome = None
    try:
        try:
            process.stdin.write(request)
            process.stdin.flush()
        except OSError:  # BrokenPipeError on POSIX, EINVAL on Windows: it died at start (its output says why)
            pass
        watcher.start()
        while outcome is None:
            try:
                frame = pickle.load(process.stdout)
            except Exception:  # noqa: BLE001 - the end of its output, or a frame cut short: no outcome
                break
            if frame[0] == "progress":
                progress.report(*frame[1:])
            elif frame[0] == "job":
                progress.job_recorded(*frame[1:])
            else:
                outcome = frame
    finally:
        finished.set()
        if watcher.is_alive():
            watcher.join()
        for pipe in (process.stdin, process.stdout):
            try:
                pipe.close()
            except OSError:
                pass
        if outcome is not None:
            threading.Thread(target=_reap, args=(process,), name=f"reap: {label}", daemon=True).start()
    if outcome is None:
        code = _reap(process)
        relay.join(timeout=2)
        said = "\n".join(last_words)
        raise SpokenBenchError(
            f"{label}: the job process stopped unexpectedly (exit code {code}). Everything it committed is kept; "
            "the Jobs panel shows where it stopped." + (f"\n\nIts last output:\n{said}" if said else "")
        )
    if outcome[0] == "cancelled":
        raise Cancelled()
    if outcome[0] == "error":
        raise outcome[1]
    return outcome[1]


def _relay_stderr(process: subprocess.Popen, last_words: collections.deque) -> None:
    """Pass the job process's own output (warnings, a library's messages) to this process's stderr, when there
    is one, and keep its last lines for the message if it dies."""
    for raw in process.stderr:
        line = raw.decode("utf-8", errors="replace")
        last_words.append(line.rstrip())
        if sys.stderr is not None:
            try:
                sys.stderr.write(line)
            except (OSError, ValueError):
                pass
    process.stderr.close()


def _reap(process: subprocess.Popen) -> int:
    """Its exit code, waiting at most REAP_S for an exit that hangs (a thread that never ends), then killing it:
    its outcome, and its job's row, were written before."""
    try:
        return process.wait(REAP_S)
    except subprocess.TimeoutExpired:
        process.kill()
        return process.wait()


def run_task_in_job_process(call: JobCall, progress: Progress, label: str) -> Any:
    """A `task_call` (work outside any project) in a job process, waited for on the calling worker thread."""
    return run_in_job_process(encode_request(None, call, label=label), progress, label)


def portable_error(error: BaseException, project: str | None = None) -> BaseException:
    """An exception the parent can unpickle and show as the same message: ours as they are when they survive
    the round trip; the machine's problems (a write lock another process keeps, a full disk, a damaged database)
    in the words the CLI gives them, not as bugs; anything else as a JobProcessError with the child's traceback."""
    if isinstance(error, SpokenBenchError):
        try:
            copy = pickle.loads(pickle.dumps(error))
            if type(copy) is type(error) and str(copy) == str(error):
                return error
        except Exception:  # noqa: BLE001 - falls back to the plain message below
            pass
        return SpokenBenchError(str(error))
    explained = explain_environment_error(error, project)
    if explained is not None:
        return SpokenBenchError(explained)
    return JobProcessError(type(error).__name__, str(error), "".join(traceback.format_exception(error)))


class _Frames:
    """Writes frames to the parent; progress is thinned to one frame per PROGRESS_INTERVAL_S (the last report
    of a finished count always goes)."""

    def __init__(self, stream: BinaryIO, cancel: threading.Event):
        self.stream = stream
        self.cancel = cancel
        self.lock = threading.Lock()
        self.progress_lock = threading.Lock()
        self.last_progress_at = 0.0
        self.pending: tuple | None = None  # the newest report held back by the interval, sent by `flush`
        self.parent_gone = False

    def send(self, frame: tuple) -> None:
        """A frame to the parent; if the parent is gone, the job is cancelled (stops at its next safe point)
        instead of failing in whatever callback reported."""
        data = pickle.dumps(frame, protocol=pickle.HIGHEST_PROTOCOL)
        with self.lock:
            if self.parent_gone:
                return
            try:
                self.stream.write(data)
                self.stream.flush()
            except (OSError, ValueError):  # BrokenPipeError on POSIX, EINVAL on Windows; closed
                self.parent_gone = True
                self.cancel.set()

    def progress(self, done: int, total: int | None, message: str) -> None:
        with self.progress_lock:
            now = time.monotonic()
            if now - self.last_progress_at < PROGRESS_INTERVAL_S and (total is None or done < total):
                self.pending = (done, total, message)
                return
            self.pending, self.last_progress_at = None, now
            self.send(("progress", done, total, message))

    def flush(self) -> None:
        """Send the report held back, if any: a step's last message must not wait for the next report."""
        with self.progress_lock:
            if self.pending is not None:
                pending, self.pending, self.last_progress_at = self.pending, None, time.monotonic()
                self.send(("progress", *pending))


def _flush_held_progress(frames: _Frames, stop: threading.Event) -> None:
    while not stop.wait(PROGRESS_INTERVAL_S):
        frames.flush()


def _read_exactly(fd: int, size: int) -> bytes:
    chunks = []
    while size > 0:
        chunk = os.read(fd, size)
        if not chunk:
            raise EOFError("the parent closed the pipe before the request was whole")
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)


def read_request(fd: int) -> dict:
    """Unbuffered reads of exactly the request (a length, then the pickle), so the byte after it is left for
    the cancel watch — and no Python-level lock is held by a thread blocked on stdin when the process exits."""
    return pickle.loads(_read_exactly(fd, int.from_bytes(_read_exactly(fd, 8), "big")))


def _watch_for_cancel(fd: int, progress: Progress) -> None:
    """A byte cancels; STOP_NOW_BYTE stops now. The end of stdin (the parent closed it, or died) cancels: the
    answers to requests already sent are still kept."""
    while True:
        try:
            byte = os.read(fd, 1)
        except OSError:
            byte = b""
        progress.cancel(now=byte == STOP_NOW_BYTE)
        if byte in (b"", STOP_NOW_BYTE):
            return


def serve(stdin_fd: int, frames_out: BinaryIO) -> int:
    """Run one job from the request on `stdin`; always ends with an outcome frame unless the pipe is gone."""
    request = read_request(stdin_fd)
    cancel = threading.Event()
    frames = _Frames(frames_out, cancel)
    flushing = threading.Event()
    flusher = threading.Thread(target=_flush_held_progress, args=(frames, flushing), name="progress", daemon=True)
    flusher.start()
    progress = Progress(frames.progress, cancel, lambda job_id, claim: frames.send(("job", job_id, claim)))
    threading.Thread(target=_watch_for_cancel, args=(stdin_fd, progress), name="cancel watch", daemon=True).start()
    path = Path(request["project"] or ".")

    def run(job_progress: Progress) -> Any:
        project = Project(path, database.connect(path / DATABASE_NAME))
        try:
            return request["call"](project, job_progress)
        finally:
            project.close()

    try:
        progress.check_cancelled()
        if request["project"] is None:  # a task outside any project
            result = request["call"](None, progress)
        elif request["tracked"]:
            with tracked_job(path, request["kind"], request["label"], progress, claim=request["claim"]) as tracked:
                result = run(tracked)
        else:  # the call records its own job (run_evaluation holds its run's claim): one row, not two
            result = run(progress)
    except TakenOver as error:  # not the user's cancel: the app says why it stopped
        _stop_flushing(frames, flusher, flushing)
        frames.send(("error", SpokenBenchError(str(error))))
    except (Cancelled, KeyboardInterrupt):  # Ctrl-C in the app's terminal reaches its job processes too
        _stop_flushing(frames, flusher, flushing)
        frames.send(("cancelled",))
    except BaseException as error:  # noqa: BLE001 - every failure is the parent's to show
        _stop_flushing(frames, flusher, flushing)
        frames.send(("error", portable_error(error, request["project"])))
    else:
        _stop_flushing(frames, flusher, flushing)
        try:
            frames.send(("ok", result))
        except Exception as error:  # noqa: BLE001 - an unpicklable result is a bug in the JobCall
            frames.send(("error", portable_error(error)))
    return 1 if frames.parent_gone else 0


def _stop_flushing(frames: _Frames, flusher: threading.Thread, flushing: threading.Event) -> None:
    """The last report held back goes before the outcome."""
    flushing.set()
    flusher.join()
    frames.flush()


def main() -> int:
    """Frames go to a private copy of stdout; fd 1 itself is pointed at stderr, so a stray print or a library's
    output never corrupts them."""
    frames_out = os.fdopen(os.dup(1), "wb")
    try:
        error_fd = sys.stderr.fileno()
    except (AttributeError, OSError, ValueError):  # no stderr (pythonw, a windowed frozen app): nowhere to print
        error_fd = os.open(os.devnull, os.O_WRONLY)
        sys.stderr = open(os.devnull, "w")  # noqa: SIM115 - for the life of the process
    os.dup2(error_fd, 1)
    sys.stdout = sys.stderr
    # A Ctrl-C in the terminal the app was started from reaches its job processes too; their app tells them when
    # to stop (a byte, or the end of stdin: a cancel that still waits for the answers to requests already sent).
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    code = serve(sys.stdin.fileno(), frames_out)
    try:
        frames_out.close()
    except OSError:  # the parent is gone; the job's row already says how it ended
        pass
    return code


if __name__ == "__main__":  # run by its real name, so what it pickles (JobProcessError) unpickles in the app
    from spokenbench.core.jobs.host import main as main_by_its_name

    sys.exit(main_by_its_name())
