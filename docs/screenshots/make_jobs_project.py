"""Add to a demo project the three job rows `jobs_panel_walk.sh` shows: a job whose process on this machine is
stopped (PAUSED_PID, `kill -STOP`), one a resume took over, one from a machine whose clock runs two hours ahead.

    python docs/screenshots/make_jobs_project.py PROJECT PAUSED_PID
"""

import datetime as dt
import sqlite3
import sys

from spokenbench.core.foundation.processes import THIS_HOST
from spokenbench.core.jobs.registry import TAKEN_OVER


def stamp(seconds_from_now: float) -> str:
    return (dt.datetime.now(dt.UTC) + dt.timedelta(seconds=seconds_from_now)).isoformat(timespec="milliseconds")


project, paused_pid = sys.argv[1], int(sys.argv[2])
with sqlite3.connect(f"{project}/project.sqlite") as conn:
    rows = [
        (
            "rewrite",
            "rewrite 48 items with openai/gpt-oss-120b",
            paused_pid,
            THIS_HOST,
            stamp(-95),
            stamp(-40),
            "running",
            None,
        ),
        (
            "evaluate",
            "gemini-2.5-flash audio standard (run 2)",
            4242,
            THIS_HOST,
            stamp(-300),
            stamp(-180),
            "interrupted",
            TAKEN_OVER,
        ),
        (
            "evaluate",
            "gpt-4o-audio audio standard (run 3)",
            5150,
            "colleague-laptop",
            stamp(7200),
            stamp(7200),
            "running",
            None,
        ),
    ]
    conn.executemany(
        "INSERT INTO jobs(kind, label, project, pid, host, started_at, heartbeat_at, status, stop_reason, done, total) "
        "VALUES (?, ?, '/elsewhere', ?, ?, ?, ?, ?, ?, 12, 48)",
        rows,
    )
