"""`spokenbench check DIR [--repair]`: verify every stored audio file against its hash. Its name and options
are a contract."""

from __future__ import annotations

from spokenbench.core.cli.commands import add_command
from spokenbench.core.cli.output import print_json
from spokenbench.core.foundation.progress import text_progress_bar
from spokenbench.core.store import opened
from spokenbench.core.store.integrity import check_audio

EXIT_PROBLEMS_FOUND = 1


def register(subparsers) -> None:
    p = add_command(
        subparsers,
        "check",
        description="Verify every audio file the project refers to against the sha256 it is named by. Missing "
        "and damaged files are listed with what refers to them. With --repair, clips are marked for synthesis "
        "again (their transcripts and ratings stay), assembled inputs are removed so `assemble` rebuilds them, "
        "and damaged files are deleted; then run `spokenbench synthesize` and `spokenbench assemble` as before. "
        "Exit code 0: everything intact (or repaired); 1: problems found and not repaired.",
    )
    p.add_argument("dir", metavar="DIR", help="project folder")
    p.add_argument("--repair", action="store_true", help="mark what can be re-created for re-creation")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(handler=cmd_check)


def cmd_check(args) -> int:
    with opened(args.dir) as project:
        report = check_audio(project.conn, project.audio, text_progress_bar(), repair=args.repair)
    if args.json:
        print_json(report.as_dict())
    else:
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
    return 0 if report.ok or args.repair else EXIT_PROBLEMS_FOUND
