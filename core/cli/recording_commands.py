"""`spokenbench speakers DIR`: the project's recorded speakers — list them, add one, record their consent, or
withdraw it (which deletes their recordings, any voice cloned from them and the audio made with it). Recording
itself happens in the app's Speakers page. Its name and options are a contract."""

from __future__ import annotations

import argparse
from pathlib import Path

from spokenbench.core.cli.commands import add_command
from spokenbench.core.cli.output import print_json, print_table
from spokenbench.core.foundation.errors import InputError, SpokenBenchError
from spokenbench.core.foundation.safe_files import read_regular_text
from spokenbench.core.recording.speakers import (
    MAX_CONSENT_CHARS,
    add_speaker,
    give_consent,
    list_speakers,
    withdraw_consent,
)
from spokenbench.core.store import opened

PROFILE_OPTIONS = ("language", "accent", "gender", "notes")


def register(subparsers) -> None:
    p = add_command(
        subparsers,
        "speakers",
        description="List the project's speakers (consent, takes, cloned voices); add one with --add; record the "
        "text they agreed to with --consent; withdraw it with --withdraw, which deletes their recordings, every "
        "voice cloned from them and the clips and inputs made with it. Recording happens in the app's Speakers page.",
    )
    p.add_argument("dir", metavar="DIR", help="project folder")
    action = p.add_mutually_exclusive_group()
    action.add_argument("--add", metavar="NAME", help="add a speaker with this name")
    action.add_argument("--consent", metavar="NAME", help="record that speaker NAME agreed to --consent-text")
    action.add_argument("--withdraw", metavar="NAME", help="withdraw NAME's consent and delete their recordings")
    p.add_argument("--language", help="with --add: the language the speaker records in (en, zh, ko, …)")
    p.add_argument("--accent", help="with --add: the speaker's accent, e.g. american, british, indian")
    p.add_argument("--gender", help="with --add: the speaker's gender in their own words (free text)")
    p.add_argument("--notes", help="with --add: a note on the speaker")
    p.add_argument(
        "--consent-text",
        metavar="FILE_OR_TEXT",
        help="with --consent: a file holding the consent text, or the text itself",
    )
    p.add_argument("--by", metavar="WHO", help="with --consent: who took the consent")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(handler=cmd_speakers)


def _refuse_stray_options(args: argparse.Namespace) -> None:
    """Options that belong to another action are refused, never silently ignored."""
    stray = []
    if args.add is None:
        stray += [f"--{name}" for name in PROFILE_OPTIONS if getattr(args, name) is not None]
    if args.consent is None:
        stray += [
            option for option, value in (("--consent-text", args.consent_text), ("--by", args.by)) if value is not None
        ]
    if stray:
        wanted = "--add" if any(s in ("--language", "--accent", "--gender", "--notes") for s in stray) else "--consent"
        raise SpokenBenchError(f"{', '.join(stray)} can only be used with {wanted} NAME")


def consent_text_argument(value: str | None) -> str:
    """--consent-text: a readable file's content, else the text as given."""
    if value is None or not value.strip():
        raise SpokenBenchError("--consent needs --consent-text FILE_OR_TEXT: the text the speaker agreed to")
    path = Path(value)
    try:
        is_file = len(value) < 4096 and "\n" not in value and path.is_file()
    except OSError:
        is_file = False
    if not is_file:
        return value
    try:
        return read_regular_text(path, 4 * MAX_CONSENT_CHARS, encoding="utf-8-sig")
    except InputError as error:
        raise SpokenBenchError(f"the consent text: {error}") from None
    except OSError as error:
        raise SpokenBenchError(f"{path}: cannot read the consent text ({error.strerror or error})") from None


def cmd_speakers(args: argparse.Namespace) -> int:
    _refuse_stray_options(args)
    with opened(args.dir) as project:
        if args.add is not None:
            if args.language is None:
                raise SpokenBenchError("--add needs --language, e.g. --language en")
            speaker = add_speaker(project, args.add, args.language, args.accent, args.gender, args.notes)
            if args.json:
                print_json(speaker.as_dict())
            else:
                print(
                    f"added speaker {speaker.name} ({speaker.language}, accent {speaker.accent or '—'}, gender "
                    f"{speaker.gender_group}); record their consent next: --consent '{speaker.name}'"
                )
            return 0
        if args.consent is not None:
            text = consent_text_argument(args.consent_text)
            consent = give_consent(project, args.consent, text, args.by)
            if args.json:
                print_json({"speaker": args.consent, **consent.as_dict()})
            else:
                print(f"consent of {args.consent} recorded at {consent.given_at} (taken by {consent.recorded_by})")
            return 0
        if args.withdraw is not None:
            report = withdraw_consent(project, args.withdraw)
            if args.json:
                print_json(report.as_dict())
            else:
                print(
                    f"consent of {report.speaker} withdrawn at {report.withdrawn_at}: deleted {report.recordings_deleted} "
                    f"recordings, {report.cloned_voices_deleted} cloned voices, {report.clips_deleted} cloned clips, "
                    f"{report.inputs_deleted} assembled inputs and {report.files_deleted} audio files"
                )
            return 0
        speakers = list_speakers(project.conn)
    if args.json:
        print_json([speaker.as_dict() for speaker in speakers])
        return 0
    if not speakers:
        print("no speakers yet; add one with --add NAME --language L")
        return 0
    print_table(
        [
            {
                "speaker": s.name,
                "language": s.language or "",
                "accent": s.accent or "",
                "gender": s.gender_self_described or "",
                "group": s.gender_group,
                "consent": s.consent_state,
                "takes": s.takes,
                "passing": s.passing_takes,
                "cloned voices": s.cloned_voices,
            }
            for s in speakers
        ]
    )
    return 0
