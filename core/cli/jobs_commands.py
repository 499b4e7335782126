"""`spokenbench jobs DIR`: the jobs of every process on a project — the app's, other CLI runs', scripts' —
with their progress, the way to cancel one from here, and to resume an interrupted one (`--resume JOB`): the
command is rebuilt from re-validated values of a known job kind, never taken from the jobs table, shown before
it runs, and a key is sent to a host this machine has not used only after a yes (core/cli/resume.py). Its name and
options are a contract."""

from __future__ import annotations

import shlex
import subprocess
import sys

from spokenbench.core.cli.arguments import whole_number
from spokenbench.core.cli.commands import add_command
from spokenbench.core.cli.output import print_json, print_table
from spokenbench.core.cli.resume import ApprovedHosts, ResumePlan, ResumeRefused, plan_resume, resume_process_argv
from spokenbench.core.foundation.errors import SpokenBenchError
from spokenbench.core.jobs.registry import JobInfo, get_job, list_jobs, paused_for_room, request_cancel
from spokenbench.core.store import opened


def register(subparsers) -> None:
    p = add_command(
        subparsers,
        "jobs",
        description="List the project's jobs — running, finished, and interrupted ones (their process stopped "
        "without finishing) with the command that resumes them — ask a running job to cancel (it stops at its "
        "next safe point, keeping everything it stored), or resume an interrupted one.",
    )
    p.add_argument("dir", metavar="DIR", help="project folder")
    p.add_argument("--running", action="store_true", help="only running jobs")
    p.add_argument(
        "--limit", type=whole_number(1, 100_000), default=50, metavar="N", help="at most N jobs, 1-100,000 (default 50)"
    )
    p.add_argument(
        "--cancel",
        type=whole_number(1),
        metavar="JOB",
        help="ask running job JOB to cancel; answers to requests it has already sent are waited for and kept",
    )
    p.add_argument(
        "--now",
        action="store_true",
        help="with --cancel: do not wait for the answers to requests already sent (they are lost, and a resume "
        "sends and pays for them again)",
    )
    p.add_argument(
        "--resume",
        type=whole_number(1),
        metavar="JOB",
        help="resume interrupted job JOB: its command is rebuilt from checked values of a known job kind (never "
        "the stored one), shown, and run after a yes; a key is sent to a host not used on this machine only "
        "after a yes",
    )
    p.add_argument("--yes", action="store_true", help="with --resume: run without asking, approving the hosts it shows")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(handler=cmd_jobs)


def _resume_fields(job: JobInfo, project_dir) -> dict:
    try:
        plan = plan_resume(job, project_dir)
    except ResumeRefused as refused:
        return {"resume_argv": None, "resume_refused": str(refused), "resume_endpoints": []}
    endpoints = [endpoint.__dict__ for endpoint in plan.endpoints]
    return {"resume_argv": plan.argv, "resume_refused": None, "resume_endpoints": endpoints}


KILLED = "stopped without finishing (no heartbeat"  # the usual reason, which the table's status says already


def cmd_jobs(args) -> int:
    with opened(args.dir) as project:
        if args.now and args.cancel is None:
            raise SpokenBenchError("--now goes with --cancel JOB")
        if args.cancel is not None:
            asked = request_cancel(project.conn, args.cancel, now=args.now)
            if args.json:
                print_json({"job": args.cancel, "cancel_requested": asked, "now": args.now})
            elif asked and args.now:
                print(f"job {args.cancel} asked to stop now; answers to requests it has already sent are abandoned")
            elif asked:
                print(
                    f"job {args.cancel} asked to cancel; it stops at its next safe point, once the answers to "
                    f"requests it has already sent are in (`--cancel {args.cancel} --now` abandons them)"
                )
            else:
                print(f"job {args.cancel} is not running; nothing to cancel")
            return 0 if asked else 1
        if args.resume is not None:
            job = get_job(project.conn, args.resume)
            if job is None:
                raise SpokenBenchError(f"no job {args.resume} in this project (see `spokenbench jobs {args.dir}`)")
            plan = plan_resume(job, project.path)
        else:
            jobs = list_jobs(project.conn, limit=args.limit, include_finished=not args.running)
            project_dir = project.path
    if args.resume is not None:
        return _resume(plan, args.yes)
    if args.json:
        print_json([{**job.as_dict(), **_resume_fields(job, project_dir)} for job in jobs])
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
        if job.status == "interrupted" and job.stop_reason and not str(job.stop_reason).startswith(KILLED):
            print(f"job {job.id}: {job.stop_reason}")  # paused, taken over, a clock ahead: not simply killed
        if paused_for_room(job):
            print(f"job {job.id} goes on by itself once there is room; it is not for resuming")
        elif job.status == "interrupted":
            try:
                plan_resume(job, project_dir)
            except ResumeRefused as refused:
                print(f"job {job.id} was interrupted; it cannot be resumed from here: {refused}")
            else:
                print(
                    f"job {job.id} was interrupted; resume: spokenbench jobs {shlex.quote(args.dir)} --resume {job.id}"
                )
    return 0


def _resume(plan: ResumePlan, yes: bool) -> int:
    """Show what will run; ask (or take --yes); then run it as a child process and return its exit code."""
    approved = ApprovedHosts()
    new_hosts = plan.keys_to_new_hosts(approved)
    print(f"job {plan.job_id} resumes with:\n  " + plan.describe().replace("\n", "\n  "), file=sys.stderr)
    for endpoint in new_hosts:
        print(
            f"warning: this sends {endpoint.key} to {endpoint.host}, a host this machine has not sent a key to",
            file=sys.stderr,
        )
    if not yes:
        if not sys.stdin.isatty():
            raise SpokenBenchError("not resumed: confirm with --yes (or run it in a terminal to be asked)")
        question = "send the key and run it? [y/N] " if new_hosts else "run it? [y/N] "
        print(question, end="", file=sys.stderr, flush=True)
        if sys.stdin.readline().strip().lower() not in ("y", "yes"):
            raise SpokenBenchError(f"job {plan.job_id} not resumed: not confirmed")
    if new_hosts:
        approved.approve([endpoint.host for endpoint in new_hosts])
    return subprocess.call(resume_process_argv(plan))
