"""`spokenbench voices`: the voices a project's clips use (backend, gender, neutralization, clips), a backend's
voices (`--tts NAME`, no project needed), and the voice-gender validation of the gender paper's Tables 6-7
(`--validate`: median F0 of every gender-probe clip in the male / ambiguous / female bands, the clips that
disagree with their intended gender, and any classifiers the user plugs in). Its name and options are a
contract."""

from __future__ import annotations

import argparse

from spokenbench.core.audio.tts import BACKEND_NAMES, get_backend
from spokenbench.core.cli.commands import add_command
from spokenbench.core.cli.output import print_json, print_table
from spokenbench.core.foundation.errors import SpokenBenchError
from spokenbench.core.foundation.progress import text_progress_bar
from spokenbench.core.store import opened

LISTED_DISAGREEMENTS = 30


def register(subparsers) -> None:
    p = add_command(
        subparsers,
        "voices",
        description="List the voices of a project's clips with their gender (or a backend's voices with --tts). "
        "--validate checks each gender-probe clip's median F0 against its intended gender (male below 145 Hz, "
        "female above 175 Hz, ambiguous between: where neutralized clips should be), lists the clips that "
        "disagree, and prints the paper's Tables 6-7 for the pitch bands and any --classifier given.",
    )
    p.add_argument("dir", metavar="DIR", nargs="?", help="project folder")
    p.add_argument("--tts", choices=BACKEND_NAMES, help="list this backend's voices and genders instead")
    p.add_argument("--validate", action="store_true", help="check the clips' voice gender (Tables 6-7)")
    p.add_argument(
        "--classifier",
        action="append",
        default=[],
        metavar="MODULE:FACTORY",
        help="with --validate: also run a gender classifier you provide (e.g. wav2vec 2.0, ECAPA-TDNN); repeatable",
    )
    p.add_argument("--all-clips", action="store_true", help="with --validate: every clip, not only gender probes")
    p.add_argument("--strict", action="store_true", help="with --validate: exit 1 when any clip disagrees")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(handler=cmd_voices)


def cmd_voices(args: argparse.Namespace) -> int:
    if args.tts:
        if args.dir or args.validate:
            raise SpokenBenchError("--tts lists a backend's voices; give it without DIR and --validate")
        return _backend_voices(args)
    if not args.dir:
        raise SpokenBenchError("give a project folder (spokenbench voices DIR), or --tts NAME for a backend's voices")
    if not args.validate and (args.classifier or args.all_clips or args.strict):
        raise SpokenBenchError("--classifier, --all-clips and --strict go with --validate")
    if args.validate:
        return _validate(args)
    from spokenbench.core.audio.store import voice_inventory

    with opened(args.dir) as project:
        rows = [
            {"backend": b, "voice": v, "gender": g, "neutralization": n or "", "clips": c}
            for b, v, g, n, c in voice_inventory(project.conn)
        ]
    if args.json:
        print_json({"voices": rows})
    elif rows:
        print_table(rows)
    else:
        print("no clips yet: run `spokenbench synthesize DIR --tts espeak`")
    return 0


def _backend_voices(args: argparse.Namespace) -> int:
    backend = get_backend(args.tts)  # no model, key or folder is needed to list voices
    defaults = {v.name for v in backend.default_voices}
    rows = [
        {
            "voice": voice.name,
            "gender": voice.gender,
            "neutralization": voice.neutralization or "",
            "default": "yes" if voice.name in defaults else "",
        }
        for voice in backend.voices
    ]
    if args.json:
        print_json({"backend": backend.name, "voices": rows})
    else:
        print_table(rows)
    return 0


def _validate(args: argparse.Namespace) -> int:
    from spokenbench.core.audio.voice_gender import load_classifier, validate_voices

    classifiers = [load_classifier(spec) for spec in args.classifier]
    with opened(args.dir) as project:
        result = validate_voices(project, classifiers, args.all_clips, text_progress_bar())
    if not result.clips:
        raise SpokenBenchError(
            "the project has no gender-probe clips to check: import gender probes and run "
            "`spokenbench synthesize DIR --tts espeak --kinds gender-probe` (or use --all-clips)"
        )
    if args.json:
        print_json(result.as_dict())
    else:
        _print_validation(result)
    return 1 if args.strict and result.disagreements else 0


def _print_validation(result) -> None:
    from spokenbench.core.audio.voice_gender import FEMALE_MIN_HZ, MALE_MAX_HZ

    print(
        f"{len(result.clips)} clips; pitch bands: male < {MALE_MAX_HZ:g} Hz, ambiguous {MALE_MAX_HZ:g}-"
        f"{FEMALE_MIN_HZ:g} Hz, female > {FEMALE_MIN_HZ:g} Hz (neutralized clips are expected in the ambiguous band)"
    )
    print("\nvoices (median F0 of each clip's voiced frames):")
    print_table(result.voice_summary())
    for number, neutralized, title in (
        (6, False, "prediction accuracy by ground truth"),
        (7, True, "prediction accuracy with gender-neutralized voices (ground truth: the voice they come from)"),
    ):
        rows = [r for r in result.accuracy_table(neutralized) if r["total_samples"]]
        if rows:
            print(f"\nTable {number}: {title}")
            print_table([{**r, "accuracy_pct": f"{r['accuracy_pct']:.2f}"} for r in rows])
    disagreeing = result.disagreements
    print(f"\n{len(disagreeing)} clip(s) disagree with their intended gender")
    if disagreeing:
        print_table(
            [
                {
                    "clip": c.clip_id,
                    "item": c.item or "",
                    "part": c.part,
                    "voice": c.voice,
                    "expected": c.expected,
                    "found": c.error or c.pitch_label,
                    "f0_hz": "" if c.f0 is None else f"{c.f0:.0f}",
                }
                for c in disagreeing[:LISTED_DISAGREEMENTS]
            ]
        )
        if len(disagreeing) > LISTED_DISAGREEMENTS:
            print(f"… and {len(disagreeing) - LISTED_DISAGREEMENTS} more (--json lists them all)")
