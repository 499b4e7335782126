"""`spokenbench check DIR [--repair] [--use-wal]`: verify every stored audio file against its hash, and every stored value's
type and text (a project from someone else may hold rows another program wrote). Its name and options are a
contract."""

from __future__ import annotations

from spokenbench.core.cli.commands import add_command
from spokenbench.core.cli.output import print_json, printable
from spokenbench.core.foundation.progress import text_progress_bar
from spokenbench.core.store import opened
from spokenbench.core.store.integrity import check_audio
from spokenbench.core.store.project import use_wal
from spokenbench.core.store.stored_values import stored_value_problems

EXIT_PROBLEMS_FOUND = 1
MAX_VALUES_LISTED = 100


def register(subparsers) -> None:
    p = add_command(
        subparsers,
        "check",
        description="Verify every audio file the project refers to against the sha256 it is named by. Missing "
        "and damaged files are listed with what refers to them. With --repair, clips are marked for synthesis "
        "again (their transcripts and ratings stay), assembled inputs are removed so `assemble` rebuilds them, "
        "and damaged files are deleted; then run `spokenbench synthesize` and `spokenbench assemble` as before. "
        "Also lists stored values another program wrote that SpokenBench cannot read (a value of another type than "
        "its column's, JSON of another shape, a letter outside A-Z, text that is not UTF-8), by table, row and "
        "column; --repair leaves those to you. "
        "Exit code 0: everything intact (or repaired); 1: problems found and not repaired.",
    )
    p.add_argument("dir", metavar="DIR", help="project folder")
    p.add_argument("--repair", action="store_true", help="mark what can be re-created for re-creation")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.add_argument(
        "--use-wal",
        action="store_true",
        help="switch a project that keeps a rollback journal (it was opened where SQLite's write-ahead log cannot "
        "work) back to WAL: only on a local disk, with no other program using it",
    )
    p.set_defaults(handler=cmd_check)


def cmd_check(args) -> int:
    with opened(args.dir) as project:
        values = stored_value_problems(project.conn, limit=MAX_VALUES_LISTED)
        report = check_audio(project.conn, project.audio, text_progress_bar(), repair=args.repair)
    if args.json:
        print_json({**report.as_dict(), "stored_values": [problem.as_dict() for problem in values]})
    else:
        if values:
            more = "+" if len(values) == MAX_VALUES_LISTED else ""
            print(f"{len(values)}{more} stored values another program wrote that SpokenBench cannot read:")
            for problem in values:
                print(f"  {printable(problem)}")
            print("correct or delete those rows (e.g. in the sqlite3 shell), or restore project.sqlite from a backup")
        summary = report.as_dict()
        print(f"{report.files_checked} audio files checked: {summary['missing']} missing, {summary['damaged']} damaged")
        for bad in report.bad[:20]:
            refs = ", ".join(f"{kind} {', '.join(map(str, ids[:5]))}" for kind, ids in bad.references.items())
            print(f"{bad.problem}: {bad.sha256}.{bad.audio_format} (used by {refs})")
        if len(report.bad) > 20:
            print(f"… and {len(report.bad) - 20} more")
        for what, count in report.repaired.items():
            print(f"repaired: {what.replace('_', ' ')}: {count}")
        if report.bad and not args.repair:
            print("run `spokenbench check DIR --repair`, then `synthesize` and `assemble` again to re-create them")
    if args.use_wal:
        switched = use_wal(args.dir)
        if not args.json:
            print("journal: switched back to WAL" if switched else "journal: WAL already")
    return 0 if (report.ok or args.repair) and not values else EXIT_PROBLEMS_FOUND
