"""Annotation packs: `pack` carries a rating queue to an annotator on another machine as one file,
`pack-ratings` writes the ratings made in an opened pack into the pack file, `unpack` merges them back;
`import-ratings` brings back ratings made in Label Studio (core/qc/label_studio.py)."""

from __future__ import annotations

from spokenbench.core.cli.commands import add_command
from spokenbench.core.cli.output import print_json, print_table


def register(subparsers) -> None:
    p = add_command(
        subparsers,
        "pack",
        description="Write rating queue NAME for annotator A to a pack file: the queue's clips, their texts and "
        "audio, room for ratings and the pack's own signing key — nothing else of the project (no API keys, no "
        "other tables). The annotator rates it offline (the app opens .sbpack files) and sends it back for "
        "`spokenbench unpack`.",
    )
    p.add_argument("dir", metavar="DIR", help="project folder")
    p.add_argument("--queue", required=True, metavar="NAME", help="rating queue to pack")
    p.add_argument("--annotator", required=True, metavar="A", help="who rates it")
    p.add_argument("--out", required=True, metavar="FILE", help="pack file to write (e.g. A.sbpack; must not exist)")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(handler=cmd_pack)

    p = add_command(
        subparsers,
        "pack-ratings",
        description="Write every rating made in the pack's folder (PACK.d/, created when the pack was opened for "
        "rating) into PACK, undone ones included, so the one file can be sent back. Safe to repeat.",
    )
    p.add_argument("pack", metavar="PACK", help="pack file (its folder PACK.d/ holds the ratings)")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(handler=cmd_pack_ratings)

    p = add_command(
        subparsers,
        "unpack",
        description="Merge the ratings in PACK into project DIR. Repeating it adds nothing; a pack of another "
        "project, one it never made, an edited (its signature does not match) or damaged pack is refused (exit 2, "
        "nothing merged); clips the annotator meanwhile rated differently in the project are listed as conflicts "
        "(both ratings kept, the merged one counts as the newest).",
    )
    p.add_argument("dir", metavar="DIR", help="project folder")
    p.add_argument("pack", metavar="PACK", help="pack file")
    p.add_argument(
        "--accept-unsigned",
        action="store_true",
        help="also merge an unsigned pack (format 1, made before packs were signed): its ratings are checked "
        "field by field but could have been edited by anyone who had the file",
    )
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(handler=cmd_unpack)

    p = add_command(
        subparsers,
        "import-ratings",
        description="Store the ratings in FILE, a Label Studio JSON export of tasks made with `spokenbench export "
        "DIR --what label-studio`, under each annotator's email (or 'label-studio user N'). Every field is "
        "checked first; a task that is not one of this project's clips refuses the file (exit 2, nothing stored). "
        "Repeating it adds nothing; an annotation changed since adds its new verdict as the newest rating.",
    )
    p.add_argument("dir", metavar="DIR", help="project folder")
    p.add_argument("file", metavar="FILE", help="Label Studio export (JSON)")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(handler=cmd_import_ratings)


def cmd_pack(args) -> int:
    from spokenbench.core.qc.packs import create_pack
    from spokenbench.core.store import opened

    with opened(args.dir) as project:
        summary = create_pack(project, args.queue, args.annotator, args.out)
    if args.json:
        print_json({**summary.__dict__, "path": str(summary.path)})
    else:
        print(
            f"packed queue '{summary.queue}' for {summary.annotator}: {summary.clips} clips, "
            f"{summary.audio_files} audio files -> {summary.path}"
        )
    return 0


def cmd_pack_ratings(args) -> int:
    from spokenbench.core.qc.pack_folders import save_pack_ratings

    count = save_pack_ratings(args.pack)
    if args.json:
        print_json({"pack": args.pack, "ratings": count})
    else:
        print(f"{args.pack} now carries {count} rating(s)")
    return 0


def cmd_unpack(args) -> int:
    from spokenbench.core.qc.packs import unpack
    from spokenbench.core.store import opened

    with opened(args.dir) as project:
        report = unpack(project, args.pack, accept_unsigned=args.accept_unsigned)
    if args.json:
        print_json(report.as_dict())
        return 0
    print(
        f"queue '{report.queue}': {report.added} rating(s) added, {report.already_merged} already merged"
        + (f", {report.newly_undone} undone since" if report.newly_undone else "")
        + ("" if report.signed else " (an unsigned pack: its ratings were not protected against edits)")
    )
    if report.conflicts:
        print(f"{len(report.conflicts)} conflict(s) — rated differently in the project (the pack's rating counts):")
        print_table([conflict.as_dict() for conflict in report.conflicts])
    return 0


def cmd_import_ratings(args) -> int:
    from spokenbench.core.qc.label_studio import import_label_studio
    from spokenbench.core.store import opened

    with opened(args.dir) as project:
        report = import_label_studio(project, args.file)
    if args.json:
        print_json({**report.__dict__, "annotators": list(report.annotators)})
    else:
        print(
            f"{report.tasks} task(s): {report.added} rating(s) added, {report.already_imported} already imported"
            + (f", {report.skipped} skipped annotation(s) ignored" if report.skipped else "")
            + (f" (annotators: {', '.join(report.annotators)})" if report.annotators else "")
        )
    return 0
