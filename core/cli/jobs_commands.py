"""`spokenbench jobs DIR`: the jobs of every process on a project — the app's, other CLI runs', scripts' —
with their progress, and the way to cancel one from here. Its name and options are a contract."""

from __future__ import annotations

import shlex

from spokenbench.core.cli.arguments import whole_number
from spokenbench.core.cli.commands import add_command
from spokenbench.core.cli.output import print_json, print_table
from spokenbench.core.jobs import list_jobs, request_cancel
from spokenbench.core.store import opened


def register(subparsers) -> None:
    p = add_command(
        subparsers,
        "jobs",
        description="List the project's jobs — running, finished, and interrupted ones (their process stopped "
        "without finishing) with the command that resumes them — or ask a running job to cancel; it stops at "
        "its next safe point, keeping everything it stored.",
    )
    p.add_argument("dir", metavar="DIR", help="project folder")
    p.add_argument("--running", action="store_true", help="only running jobs")
    p.add_argument(
        "--limit", type=whole_number(1, 100_000), default=50, metavar="N", help="at most N jobs, 1-100,000 (default 50)"
    )
    p.add_argument("--cancel", type=whole_number(1), metavar="JOB", help="ask running job JOB to cancel")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(handler=cmd_jobs)


def cmd_jobs(args) -> int:
    with opened(args.dir) as project:
        if args.cancel is not None:
            asked = request_cancel(project.conn, args.cancel)
            if args.json:
                print_json({"job": args.cancel, "cancel_requested": asked})
            elif asked:
                print(f"job {args.cancel} asked to cancel; it stops at its next safe point")
            else:
                print(f"job {args.cancel} is not running; nothing to cancel")
            return 0 if asked else 1
        jobs = list_jobs(project.conn, limit=args.limit, include_finished=not args.running)
    if args.json:
        print_json([job.as_dict() for job in jobs])
        return 0
    if not jobs:
        print("no jobs")
        return 0
    print_table(
        [
            {
                "job": job.id,
                "kind": job.kind,
                "status": job.status,
                "progress": f"{job.done}/{job.total}" if job.total else str(job.done),
                "started": job.started_at[:19].replace("T", " "),
                "process": f"{job.pid}@{job.host}",
                "label": job.label,
            }
            for job in jobs
        ]
    )
    for job in jobs:
        if job.status == "interrupted" and job.resume_argv:
            print(f"job {job.id} was interrupted; resume: spokenbench {shlex.join(job.resume_argv)}")
    return 0
