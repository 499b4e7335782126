"""`spokenbench backbone DIR`: the gender study's backbone pairs, declared once per project (which text model each
speech model is compared with), so `spokenbench report DIR --kind gender-probe` pairs them without flags.

    spokenbench backbone DIR                                   # list the pairs
    spokenbench backbone DIR --pair AUDIO_MODEL=TEXT_MODEL     # add or replace (repeatable, or comma-separated)
    spokenbench backbone DIR --remove AUDIO_MODEL | --clear
"""

from __future__ import annotations

import sys

from spokenbench.core.cli.commands import add_command
from spokenbench.core.cli.output import print_json, print_table
from spokenbench.core.metrics.gender_backbones import (
    declare_backbone_pairs,
    gender_probe_models,
    parse_pairs,
    project_backbone_pairs,
)


def register(subparsers) -> None:
    p = add_command(
        subparsers,
        "backbone",
        description="Declare, for the gender study, which text model (the backbone LLM, run with --mode text) each "
        "speech model is compared with: Cohen's κ and Bowker's test, and the free-form similarity s. Stored in the "
        "project; reports pair them without flags. Without options, lists the pairs.",
    )
    p.add_argument("dir", metavar="DIR", help="project folder")
    p.add_argument(
        "--pair",
        metavar="AUDIO_MODEL=TEXT_MODEL",
        action="append",
        default=None,
        help="pair a speech model with its text backbone, as the models are named in the project's runs "
        "(repeatable or comma-separated; replaces the speech model's earlier pair)",
    )
    p.add_argument(
        "--remove", metavar="AUDIO_MODEL", action="append", default=None, help="forget a speech model's pair"
    )
    p.add_argument("--clear", action="store_true", help="forget every pair")
    p.add_argument("--json", action="store_true", help="print the pairs as one JSON object")
    p.set_defaults(handler=cmd_backbone)


def cmd_backbone(args) -> int:
    pairs = parse_pairs(args.pair)
    changing = bool(pairs or args.remove or args.clear)
    if changing:
        current = declare_backbone_pairs(args.dir, pairs, args.remove, args.clear)
        models = gender_probe_models(args.dir)
        for name in sorted({m for pair in pairs.items() for m in pair}):
            if name not in models:
                print(
                    f"note: '{name}' has no gender-probe answers in {args.dir} yet; the pair applies once it has",
                    file=sys.stderr,
                )
    else:
        current = project_backbone_pairs(args.dir)
    if args.json:
        print_json(current)
    elif current:
        print_table([{"speech model": s, "text backbone": t} for s, t in sorted(current.items())])
    else:
        print("no backbone pairs declared (add one with --pair AUDIO_MODEL=TEXT_MODEL)")
    return 0
