"""`spokenbench metrics` and `spokenbench report`: the bias metrics engine (core/metrics) from the shell.

    spokenbench metrics FILE [--factors a,b] [--kind mcq|gender-probe] [--backbone A=B] [--bootstrap N] [--json]
    spokenbench report (FILE|PROJECT) --out DIR [--kind gender-probe] [--figures png,svg|png|svg|none]
                                           (a project's backbone pairs: `backbone`)

The option names and the --json layout are a contract that outside scripts rely on."""

from __future__ import annotations

import argparse
import sys

from spokenbench.core.cli.arguments import comma_list, seed, whole_number
from spokenbench.core.cli.commands import add_command
from spokenbench.core.foundation.errors import SpokenBenchError
from spokenbench.core.foundation.progress import text_progress_bar

DEFAULT_RESAMPLES = 1000
FIGURE_FORMATS = ("png", "svg")  # core.metrics.report's default, named here so --help imports no metrics
MAX_RESAMPLES = 100_000  # ~100 times the default: beyond it the interval no longer changes, only the wait does


def register(subparsers) -> None:
    metrics = add_command(
        subparsers,
        "metrics",
        description="Compute the bias metrics of a responses table (CSV, Parquet or JSONL) per model. "
        "Definitions: docs/metrics.md.",
    )
    metrics.add_argument(
        "file", metavar="FILE", help="responses table: .csv, .tsv, .parquet or .jsonl; - reads it from standard input"
    )
    _common_options(metrics)
    metrics.add_argument(
        "--setting",
        metavar="SETTING",
        default=None,
        help="gender probes: the answer setting to show (binary_option, neutral_option, free_form, … or all); "
        "--json needs it when the table holds several (default: the only one)",
    )
    metrics.add_argument("--json", action="store_true", help="print one JSON object keyed by model (scripts)")
    metrics.set_defaults(handler=run_metrics)

    report = add_command(
        subparsers,
        "report",
        description="Write the metrics report of a responses file or a project folder: tables as CSV, Markdown "
        "and LaTeX, figures as PNG and SVG (--figures: fewer), and an index README.md.",
    )
    report.add_argument(
        "source",
        metavar="FILE|PROJECT",
        help="responses table (- reads it from standard input), or a SpokenBench project folder",
    )
    report.add_argument(
        "--out", metavar="DIR", required=True, help="folder to write the report into (created if needed)"
    )
    _common_options(report)
    report.add_argument(
        "--figures",
        metavar="FORMATS",
        type=_figure_formats,
        default=FIGURE_FORMATS,
        help="figure files to write: png,svg (default), png, svg, or none (tables only, faster; a figure's "
        "file is the same whichever others are written)",
    )
    report.set_defaults(handler=run_report)


def _common_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--factors",
        metavar="A,B,...",
        type=_factor_list,
        default=None,
        help="factor columns, comma-separated (default: every other column with 2-100 levels and no empty cell)",
    )
    parser.add_argument(
        "--kind",
        choices=("mcq", "gender-probe"),
        default=None,
        help="table kind (default: gender-probe if the table has option_orientation and no answer column)",
    )
    parser.add_argument(
        "--backbone",
        metavar="SPEECH_MODEL=TEXT_MODEL",
        action="append",
        default=None,
        help="gender probes: compare a speech model with its text backbone (repeatable; a project's report uses "
        "the pairs declared with `spokenbench backbone DIR --pair` when none is given)",
    )
    parser.add_argument(
        "--bootstrap",
        metavar="N",
        type=whole_number(0, MAX_RESAMPLES),
        default=DEFAULT_RESAMPLES,
        help=f"question-level bootstrap resamples for 95%% intervals, 0–{MAX_RESAMPLES:,} "
        f"(default {DEFAULT_RESAMPLES}; 0 = none)",
    )
    parser.add_argument(
        "--seed",
        type=seed,
        default=None,
        help="bootstrap seed, also the random tie-break's, 0 to 2^63-1 (default: a fixed seed)",
    )
    parser.add_argument(
        "--vote-ties",
        choices=("fractional", "first", "random"),
        default="fractional",
        help="permutation votes: what a tie between t options earns: 'fractional' 1/t each (default), 'first' the "
        "tied option listed first in the original order, 'random' one tied option drawn with --seed",
    )
    parser.add_argument(
        "--failures-as-category",
        action="store_true",
        help="count parse failures as an answer category in entropy, APES and κ (default: leave them out)",
    )


def _figure_formats(text: str) -> tuple[str, ...]:
    if text.strip().lower() == "none":
        return ()
    formats = comma_list(text.lower())
    unknown = [f for f in formats if f not in FIGURE_FORMATS]
    if unknown or not formats:
        raise argparse.ArgumentTypeError(f"{text!r}: give png, svg, png,svg or none")
    return formats


_figure_formats.__name__ = "figure formats"  # argparse names the type in its message


def _factor_list(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


def _seed(args) -> int:
    from spokenbench.core.metrics.bootstrap import DEFAULT_SEED

    return DEFAULT_SEED if args.seed is None else args.seed


def _only_kind(columns, kind: str, source: str):
    """A file with both multiple-choice and gender-probe answers (`export --kind all`): the other kind's rows
    (gender probes: those with an option_orientation) are left out, and stderr says how many."""
    if "option_orientation" not in columns.columns:
        return columns
    from spokenbench.core.foundation.tables import TextColumns

    frame = columns.to_frame()
    probes = frame["option_orientation"] != ""
    keep = probes if kind == "gender-probe" else ~probes
    if keep.all():
        return columns
    if not keep.any():
        raise SpokenBenchError(f"{source}: no {kind} answers in this file (choose --kind)")
    dropped = "multiple-choice" if kind == "gender-probe" else "gender-probe"
    print(
        f"note: {source}: left out {int((~keep).sum())} {dropped} answer(s) of {len(frame)} (a mixed file; "
        f"`spokenbench export --what responses --kind` writes one kind); read {int(keep.sum())} {kind} answer(s)",
        file=sys.stderr,
    )
    frame = frame[keep].reset_index(drop=True)
    if kind != "gender-probe":
        frame = frame.drop(columns=[c for c in ("option_orientation", "setting") if c in frame.columns])
    return TextColumns.of(frame)


def run_metrics(args) -> int:
    from spokenbench.core.cli.output import print_json, print_table
    from spokenbench.core.metrics.analysis import (
        analyze_mcq,
        check_kind,
    )
    from spokenbench.core.metrics.loading import read_responses_columns

    columns = read_responses_columns(args.file)
    kind = check_kind(args.kind, columns)
    columns = _only_kind(columns, kind, args.file)
    progress = text_progress_bar()
    if kind == "gender-probe":
        if args.factors:
            raise SpokenBenchError("--factors applies to --kind mcq only")
        if args.vote_ties != "fractional":
            raise SpokenBenchError("--vote-ties applies to --kind mcq only (permutation votes)")
        from spokenbench.core.metrics.gender_probe import parse_backbones
        from spokenbench.core.metrics.gender_study import analyze_gender_study, gender_study_json

        study = analyze_gender_study(
            columns.to_frame(),
            parse_backbones(args.backbone),
            source=args.file,
            failures_as_category=args.failures_as_category,
            n_resamples=args.bootstrap,
            seed=_seed(args),
            progress=progress,
        )
        for note in study.notes:
            print(f"note: {note}", file=sys.stderr)
        if args.json:
            print_json(gender_study_json(study, args.setting))
            return 0
        if args.setting not in (None, "all") and args.setting not in study.settings:
            raise SpokenBenchError(f"no answers in setting '{args.setting}' (settings: {', '.join(study.settings)})")
        table = study.table
        if args.setting not in (None, "all"):
            table = table[table["setting"] == args.setting]
        rows = []
        for r in table.to_dict("records"):
            row = {"setting": r["setting"]} if len(study.settings) > 1 else {}
            row |= {
                "model": r["model"],
                "category": r["category"],
                "n": r["n"],
                "J": _num(r["J"]),
                "delta": _num(r["delta"]),
                "p_value": _num(r["p_value"]),
                "neutral_rate": _num(r["neutral_rate"]),
                "parse_failures": _num(r["parse_failure_rate"]),
                "backbone": r["backbone"],
                "kappa": _num(r["kappa"]),
                "bowker_p": _num(r["bowker_p"]),
            }
            if "J_s" in table.columns:
                row.update(
                    {"J_s": _num(r.get("J_s")), "s": _num(r.get("s")), "unclassified": _num(r.get("unclassified_rate"))}
                )
            rows.append(row)
        print_table(rows)
        return 0

    if args.backbone:
        raise SpokenBenchError("--backbone applies to --kind gender-probe only")
    if args.setting:
        raise SpokenBenchError("--setting applies to --kind gender-probe only")
    analysis = analyze_mcq(
        columns,
        args.factors,
        source=args.file,
        failures_as_category=args.failures_as_category,
        n_resamples=args.bootstrap,
        seed=_seed(args),
        vote_ties=args.vote_ties,
        progress=progress,
    )
    for column, reason in analysis.data.ignored_columns.items():
        print(
            f"note: column '{column}' not used as a factor ({reason}); name it with --factors to use it",
            file=sys.stderr,
        )
    if args.json:
        print_json(analysis.to_json())
        return 0
    summary = analysis.summary_columns
    rows = []
    for i, model in enumerate(analysis.data.models):
        ci = analysis.intervals[i] if analysis.intervals else {}
        rows.append(
            {
                "model": model,
                "n": int(summary["n"][i]),
                "accuracy": _num(summary["accuracy"][i]) + _ci(ci.get("accuracy")),
                "entropy_mean": _num(summary["entropy_mean"][i]),
                "rsd": _num(summary["rsd"][i]),
                "ckld": _num(summary["ckld"][i]),
                "parse_failures": _num(summary["parse_failure_rate"][i]),
            }
        )
    print_table(rows)
    print(f"permutation votes (--json: permutation_vote): {analysis.selection.vote_tie_note}")
    if analysis.data.factors:
        print()
        factor_rows = []
        for i, model in enumerate(analysis.data.models):
            for f in analysis.data.factors:
                factor_rows.append(
                    {
                        "model": model,
                        "factor": f,
                        "level_entropy": _num(summary[f"level_entropy[{f}]"][i]),
                        "apes": _num(summary[f"apes[{f}]"][i]),
                        "fleiss_kappa": _num(summary[f"kappa[{f}]"][i]),
                        "kappa_questions": f"{int(summary[f'kappa_defined[{f}]'][i])} defined, "
                        f"{int(summary[f'kappa_undefined[{f}]'][i])} not",
                    }
                )
        print_table(factor_rows)
    return 0


def run_report(args) -> int:
    from spokenbench.core.metrics.report import write_report

    report = write_report(
        args.source,
        args.out,
        kind=args.kind,
        factors=args.factors,
        backbones=args.backbone,
        n_resamples=args.bootstrap,
        seed=_seed(args),
        failures_as_category=args.failures_as_category,
        vote_ties=args.vote_ties,
        progress=text_progress_bar(),
        figure_formats=args.figures,
    )
    print(f"wrote {len(report.files)} files to {report.out_dir} (index: {report.out_dir / 'README.md'})")
    for note in report.skipped:
        print(f"skipped {note}")
    return 0


def _num(value) -> str:
    try:
        value = float(value)
    except (TypeError, ValueError):
        return str(value)
    return "-" if value != value else f"{value:.4f}"


def _ci(interval) -> str:
    if not interval or any(v != v for v in interval):
        return ""
    return f" [{interval[0]:.4f}, {interval[1]:.4f}]"
