"""Batch commands: `batches` (list, --collect, --cancel) and `import-results`, and what `evaluate --batch` /
`--batch-file` do once the plan is prepared. Printing only; the work is core/evaluation/batches.py.

Exit codes: 0 done; 2 a user error (a bad option or file, a missing key, an invalid results line: nothing
imported); 5 `--collect` or `import-results` stored results but some requests failed (stored with their
error: `evaluate … --resume`, online or with `--batch`, sends them again); 130 cancelled."""

from __future__ import annotations

import argparse
import sys

from spokenbench.core.cli.arguments import whole_number
from spokenbench.core.cli.commands import add_command
from spokenbench.core.cli.output import print_json, print_table
from spokenbench.core.foundation.progress import text_progress_bar
from spokenbench.core.store import opened

EXIT_SOME_FAILED = 5


def register(subparsers) -> None:
    p = add_command(
        subparsers,
        "batches",
        description="The project's batch jobs (spokenbench evaluate … --batch gemini|openai, --batch-file) and "
        "their state, asked of the provider for unfinished ones. --collect stores what finished jobs answered in "
        "the responses table (as online answers: a later --resume never pays for them again); --cancel cancels.",
    )
    p.add_argument("dir", metavar="DIR", help="project folder")
    action = p.add_mutually_exclusive_group()
    action.add_argument("--collect", action="store_true", help="store the results of every finished job")
    action.add_argument("--cancel", action="store_true", help="cancel unfinished jobs (all, or those given with --id)")
    p.add_argument(
        "--id",
        dest="ids",
        type=whole_number(1),
        action="append",
        metavar="N",
        help="only batch job N (repeatable; see the id column)",
    )
    p.add_argument("--no-refresh", action="store_true", help="list the stored states without asking the providers")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(handler=cmd_batches)

    p = add_command(
        subparsers,
        "import-results",
        description="Import the output of vLLM's run_batch (or any OpenAI batch output) for a request file this "
        "project wrote with `evaluate … --batch-file`. Every line is checked first (JSON, a known custom_id, the "
        "model the file was written for, a chat completion body): any problem is reported by line and nothing is "
        "imported.",
    )
    p.add_argument("dir", metavar="DIR", help="project folder")
    p.add_argument("file", metavar="RESULTS", help="the results JSONL file")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(handler=cmd_import_results)


def waiting_note(waiting_on: list[dict], project_dir: str, run_id: int) -> str:
    """What `evaluate` (online or --batch) says about requests it did not send because they wait elsewhere."""
    from spokenbench.core.evaluation.request_claims import describe_waits

    return (
        f"note: not sent again: {describe_waits(waiting_on)}. `spokenbench batches {project_dir} --collect` fills "
        f"run {run_id}'s from the response cache at no cost once that batch is done (else, or if the collect says "
        f"run {run_id} is still incomplete, `spokenbench evaluate {project_dir} … --run {run_id}` does)"
    )


def not_sent_note(requests: int, project_dir: str, run_id: int, provider: str) -> str:
    """What `evaluate --batch` says about requests it left to a batch that was collected meanwhile without
    answering them: not sent anywhere yet."""
    return (
        f"note: {requests} request(s) of run {run_id} were left to a batch that was collected meanwhile and did not "
        f"answer them: not submitted. `spokenbench evaluate {project_dir} … --run {run_id} --batch {provider}` "
        f"submits them (`… --run {run_id}` sends them online)"
    )


def evaluate_in_batch(args: argparse.Namespace, project, prepared, print_preparation) -> int:
    """`evaluate … --batch PROVIDER` or `--batch-file FILE`, after the plan was prepared."""
    from spokenbench.core.evaluation.batch_files import write_batch_file
    from spokenbench.core.evaluation.batch_records import BATCH_DISCOUNT
    from spokenbench.core.evaluation.batches import submit_batches

    if not args.json:
        print_preparation(prepared, file=sys.stderr)
    if args.batch_file:
        summary = write_batch_file(project, prepared, args.batch_file, text_progress_bar())
        if args.json:
            print_json(summary.as_dict())
            return 0
        print(
            f"wrote {summary.lines} request line(s) for {summary.requests} planned request(s) of run {summary.run_id} "
            f"to {summary.path} ({summary.bytes / 1e6:.1f} MB, {summary.elapsed_s:.1f} s); "
            f"{summary.cached} answered from the response cache"
        )
        print(
            f"  run it: python -m vllm.entrypoints.openai.run_batch -i {summary.path} -o results.jsonl "
            f"--model {prepared.preset.model}"
        )
        print(f"  then:   spokenbench import-results {args.dir} results.jsonl")
        return 0
    submission = submit_batches(project, prepared, args.batch, text_progress_bar())
    for orphan in submission.orphans:  # a killed submitter's part, looked for at the provider first
        print(f"note: batch {orphan['batch_id']} (run {orphan['run_id']}): {orphan['note']}", file=sys.stderr)
    if submission.waiting_on:  # on stderr also with --json: nothing is lost, but the run needs a resume
        print(waiting_note(submission.waiting_on, args.dir, submission.run_id), file=sys.stderr)
    if submission.not_sent:
        print(not_sent_note(submission.not_sent, args.dir, submission.run_id, args.batch), file=sys.stderr)
    if args.json:
        print_json(submission.as_dict())
        return 0
    print(
        f"run {submission.run_id}: {submission.submitted} request(s) in {len(submission.batch_ids)} {args.batch} batch "
        f"job(s) ({submission.lines} line(s), {submission.bytes / 1e6:.1f} MB); {submission.cached} from the response "
        f"cache, {submission.already_stored} already stored, {submission.waiting_elsewhere} waiting elsewhere"
    )
    if submission.estimated_cost_usd is not None:
        print(
            f"  cost: at most ${submission.estimated_cost_usd:.4f} at the batch price ({BATCH_DISCOUNT:.0%} of online)"
        )
    if submission.batch_ids:
        print(f"  batch job(s): {', '.join(map(str, submission.batch_ids))}; results usually within 24 h")
        print(f"  state: spokenbench batches {args.dir}; results: spokenbench batches {args.dir} --collect")
    return 0


def cmd_batches(args: argparse.Namespace) -> int:
    from spokenbench.core.evaluation.batches import batch_states, cancel_batches, collect_batches

    with opened(args.dir) as project:
        if args.cancel:
            changed = cancel_batches(project, args.ids)
            if args.json:
                print_json(changed)
            elif not changed:
                print("no unfinished batch job to cancel")
            else:
                for entry in changed:
                    print(f"batch {entry['id']}: {entry['state']}" + (f" ({entry['note']})" if entry["note"] else ""))
                print("what they answered before stopping is stored by `spokenbench batches DIR --collect`")
            return 0
        if args.collect:
            summary = collect_batches(project, args.ids, text_progress_bar())
            if args.json:
                print_json(summary.as_dict())
            else:
                _print_collect(summary, args.dir)
            return EXIT_SOME_FAILED if summary.failed else 0
        states = batch_states(project, refresh=not args.no_refresh)
    if args.json:
        print_json(states)
        return 0
    if not states:
        print("no batch jobs yet (spokenbench evaluate DIR … --batch gemini|openai, or --batch-file FILE)")
        return 0
    rows = [
        {
            **entry,
            "state": entry["state"] + (f" ({entry['remote_state']})" if entry["remote_state"] else ""),
            "results": f"{entry['answered']} ok, {entry['failed']} failed" if entry["collected_at"] else "-",
            "cost": f"${entry['cost_usd']:.4f}",
            "remote": entry["remote_id"] or entry["input_file"] or "",
        }
        for entry in states
    ]
    print_table(rows, ["id", "run_id", "provider", "model", "part", "state", "requests", "results", "cost", "remote"])
    for entry in states:
        if entry["note"]:
            print(f"batch {entry['id']}: {entry['note']}", file=sys.stderr)
    return 0


def _print_collect(summary, folder) -> None:
    if summary.collected:
        print(
            f"collected {len(summary.collected)} batch job(s): {summary.answered} answered, {summary.failed} failed; "
            f"cost ${summary.cost_usd:.4f} at the batch price"
        )
    for orphan in summary.orphans:  # parts whose submitter was killed before it stored the provider's id
        if orphan["outcome"] != "kept":
            print(f"batch {orphan['batch_id']} (run {orphan['run_id']}): {orphan['note']}")
    for batch_id, state in summary.not_ready:
        print(f"batch {batch_id}: not finished ({state}); collect again later")
    for filled in summary.filled:
        print(f"run {filled['run_id']}: {filled['results']} result(s) filled from the response cache at no cost")
    if not summary.collected and not summary.not_ready and not summary.orphans:
        print("nothing to collect")
    for run in summary.still_incomplete:
        remaining = "" if run["remaining"] is None else f" ({run['remaining']} request(s) left)"
        print(
            f"note: run {run['run_id']} is still incomplete{remaining}: {run['why']}; "
            f"`spokenbench evaluate {folder} … --run {run['run_id']}` resumes it",
            file=sys.stderr,
        )
    if summary.failed:
        print(f"warning: {summary.failed} request(s) failed; they are stored with their error", file=sys.stderr)
        for example in summary.failed_examples:
            print(f"  batch {example['batch_id']}, {example['custom_id'][:16]}…: {example['error']}", file=sys.stderr)
        print(
            "  re-submit them: the same `spokenbench evaluate` command with --resume (online), or with --resume "
            "--batch PROVIDER (another batch)",
            file=sys.stderr,
        )


def cmd_import_results(args: argparse.Namespace) -> int:
    from spokenbench.core.evaluation.batch_results import import_results

    with opened(args.dir) as project:
        summary = import_results(project, args.file, text_progress_bar())
    if args.json:
        print_json(summary.as_dict())
    else:
        print(
            f"imported {summary.lines} line(s) into run(s) {', '.join(map(str, summary.runs)) or '-'}: "
            f"{summary.answered} answered, {summary.failed} failed, {summary.skipped} already answered"
        )
    if summary.failed:
        print(
            f"warning: {summary.failed} request(s) failed (stored with their error); --resume sends them again",
            file=sys.stderr,
        )
        return EXIT_SOME_FAILED
    return 0
