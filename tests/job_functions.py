"""Core-style job functions for the job-process tests: module-level, so a `JobCall` of them can be pickled and
run by `python -m spokenbench.core.jobs.host` (the tests put this folder on the child's PYTHONPATH)."""

import os
import sys
import time

from spokenbench.core.foundation.errors import InputError, InputProblem, SpokenBenchError


def count_items(project, label: str, *, progress):
    """Reports a few steps, prints to stdout (which must not reach the frames) and returns plain data."""
    print("a stray print from the job")
    for done in range(1, 4):
        progress.report(done, 3, f"step {done}")
    count = project.conn.execute("SELECT count(*) FROM items").fetchone()[0]
    return {"label": label, "items": count, "pid": os.getpid(), "executable": sys.executable}


def wait_for_cancel(project, marker: str, *, progress):
    """Writes `marker` once running, then reports and waits at safe points until cancelled (at most 30 s)."""
    with open(marker, "w") as out:
        out.write(str(os.getpid()))
    deadline = time.monotonic() + 30
    ticks = 0
    while time.monotonic() < deadline:
        progress.check_cancelled()
        ticks += 1
        progress.report(ticks, None, "waiting")
        time.sleep(0.02)
    return "not cancelled"


def refuse_a_file(project, *, progress):
    raise InputError([InputProblem("results.jsonl", "not JSON", row=3), InputProblem("results.jsonl", "no id", 7)])


def refuse(project, *, progress):
    raise SpokenBenchError("the file results.jsonl is not a results file")


def fail_with_a_bug(project, *, progress):
    return {}["a missing key"]


def return_the_unpicklable(project, *, progress):
    return lambda: None


def describe_folder(folder: str, *, progress):
    """A task outside any project: reports, then returns what it was given and where it ran."""
    progress.report(1, 1, "looked")
    return {"folder": folder, "pid": os.getpid()}


def two_steps(*, progress):
    """A step's last report comes right after the previous one (within the frame interval), then a long step."""
    progress.report(1, 10, "phase A")
    progress.report(0, None, "phase B: long")
    time.sleep(0.6)
    return "done"


def return_leaving_a_thread_behind(*, progress):
    """Returns at once, but a non-daemon thread keeps the process from exiting for 30 s."""
    import threading

    threading.Thread(target=time.sleep, args=(30,)).start()
    return "early"


def die_saying(message: str, *, progress):
    print(message, file=sys.stderr, flush=True)
    os._exit(3)


def fail_on_the_write_lock(project, *, progress):
    """A write that waits for a lock another connection keeps (briefly, as a stopped process would for ever)."""
    import sqlite3

    holder = sqlite3.connect(project.path / "project.sqlite", isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    waiter = sqlite3.connect(project.path / "project.sqlite", isolation_level=None, timeout=0.05)
    try:
        waiter.execute("BEGIN IMMEDIATE")
    finally:
        holder.execute("ROLLBACK")


def one_request_out(project, marker: str, answer_after_s: float, *, progress):
    """A JobLoop whose one unit sends a request (an awaitable answering after `answer_after_s`) through
    `JobLoop.remote`, as a model, TTS or ASR request goes. Writes `marker` once it is out, and the answer to
    `marker`.answer once it arrives (as a job stores what it paid for); returns the answer."""
    import asyncio

    from spokenbench.core.jobs.loop import JobLoop
    from spokenbench.core.jobs.remote import ProviderLimiter, RetryPolicy

    async def run() -> str:
        loop = JobLoop(project.db_path, progress, concurrency=1)
        answers = []

        async def request() -> str:
            with open(marker, "w") as out:
                out.write(str(os.getpid()))
            await asyncio.sleep(answer_after_s)
            return "answered"

        async def work(_unit):
            answer, _attempts = await loop.remote(request, ProviderLimiter("stub"), RetryPolicy(max_attempts=1))
            with open(f"{marker}.answer", "w") as out:
                out.write(answer)
            answers.append(answer)

        await loop.run([1], work)
        return answers[0]

    return asyncio.run(run())
