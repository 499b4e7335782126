"""Quality-control commands: rewrite, flag, review, transcribe, import-transcripts, screen, sample, qc-report.
Long ones draw a progress bar and are resumable: a rerun skips everything already stored."""

from __future__ import annotations

import argparse
import asyncio

from spokenbench.core.cli.arguments import (
    add_request_limits,
    http_url,
    language_code,
    language_list,
    number,
    seed,
    short_text,
    whole_number,
)
from spokenbench.core.cli.commands import add_command
from spokenbench.core.cli.output import print_json, print_table, printable
from spokenbench.core.domain.items import MAX_TEXT_CHARS_CEILING
from spokenbench.core.foundation.credentials import PROVIDER_VARIABLES
from spokenbench.core.foundation.errors import SpokenBenchError
from spokenbench.core.foundation.progress import text_progress_bar
from spokenbench.core.foundation.table_layout import TABLE2_LAYOUTS
from spokenbench.core.rewriting.llm import DEFAULT_BASE_URL, DEFAULT_KEY_PROVIDER, DEFAULT_MODEL

# The rest is imported by each handler, so that `spokenbench --help` does not load jiwer, numpy and scipy.

KEY_PROVIDERS = (*PROVIDER_VARIABLES, "none")


def _metric_overrides(values: list[str] | None) -> tuple[tuple[str, str], ...]:
    from spokenbench.core.asr.scoring import METRICS
    from spokenbench.core.domain.languages import normalize_language

    overrides = {}
    for value in values or []:
        language, _, metric = value.partition("=")
        if not language.strip() or metric.strip() not in METRICS:
            raise SpokenBenchError(f"--metric '{value}': use LANGUAGE=wer or LANGUAGE=cer, e.g. ko=cer")
        try:
            overrides[normalize_language(language)] = metric.strip()
        except ValueError as error:
            raise SpokenBenchError(f"--metric '{value}': {error}") from None
    return tuple(sorted(overrides.items()))


def register(subparsers) -> None:
    p = add_command(
        subparsers,
        "rewrite",
        description="Rewrite every item without a rewrite through an OpenAI-compatible chat endpoint (default: "
        f"{DEFAULT_MODEL} on NVIDIA's API, key NVIDIA_API_KEY) following the eight rules of BiasInEar Appendix "
        "B.1 (prompt: resources/prompts/rewrite/rewrite.toml). Answers are validated; an invalid one is asked "
        "again, then the item is marked for manual rewriting. Every answer is cached: reruns never pay twice.",
    )
    p.add_argument("dir", metavar="DIR")
    p.add_argument("--model", default=DEFAULT_MODEL, help=f"chat model (default {DEFAULT_MODEL})")
    p.add_argument(
        "--base-url",
        type=http_url,
        default=DEFAULT_BASE_URL,
        metavar="URL",
        help=f"OpenAI-compatible endpoint (default {DEFAULT_BASE_URL})",
    )
    p.add_argument(
        "--key-provider",
        default=DEFAULT_KEY_PROVIDER,
        choices=KEY_PROVIDERS,
        help="whose API key to send (nvidia = NVIDIA_API_KEY, ...; none for a local server)",
    )
    p.add_argument("--languages", type=language_list, help="only items in these languages (comma-separated)")
    p.add_argument("--source", help="only items from this source")
    p.add_argument(
        "--limit", type=whole_number(1, 10_000_000), metavar="N", help="only the first N items (1–10,000,000)"
    )
    p.add_argument("--redo", action="store_true", help="also items that already have rewrites (adds new versions)")
    p.add_argument("--retry-manual", action="store_true", help="also items marked for manual rewriting")
    p.add_argument(
        "--attempts",
        type=whole_number(1, 10),
        default=3,
        metavar="N",
        help="answers per item before marking it manual, 1–10 (default 3)",
    )
    add_request_limits(p)
    p.add_argument(
        "--prompt-file",
        metavar="FILE",
        help="this project's own rewrite prompt (TOML like the bundled one); saved with the project",
    )
    p.add_argument("--dry-run", action="store_true", help="show what would be rewritten")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=cmd_rewrite)

    p = add_command(
        subparsers,
        "flag",
        description="Normalize rewrite and original (whitespace removed, lower case) and flag every difference "
        "with a character-level diff (BiasInEar Section 2.2). Unflagged rewrites are accepted; flagged ones wait "
        "for `spokenbench review`.",
    )
    p.add_argument("dir", metavar="DIR")
    p.add_argument("--list", action="store_true", help="list the flagged parts awaiting review, with diffs")
    p.add_argument("--all", action="store_true", help="with --list: also flagged parts already reviewed")
    p.add_argument("--language", type=language_code, help="with --list: one language only")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=cmd_flag)

    p = add_command(
        subparsers,
        "review",
        description="Record a review decision with reviewer and time. Without --part, --accept/--reject apply to "
        "every part of the item awaiting review. --edit stores a corrected text (also for items marked for "
        "manual rewriting).",
    )
    p.add_argument("dir", metavar="DIR")
    p.add_argument(
        "--item",
        type=whole_number(1, 2**63 - 1),
        required=True,
        metavar="ID",
        help="item row id (shown by `flag --list`)",
    )
    p.add_argument("--part", type=short_text(40), help="question, option_A, ... (required for --edit)")
    decision = p.add_mutually_exclusive_group(required=True)
    decision.add_argument("--accept", action="store_true")
    decision.add_argument("--reject", action="store_true", help="use the original text for this part")
    decision.add_argument(
        "--edit",
        type=short_text(MAX_TEXT_CHARS_CEILING),
        metavar="TEXT",
        help=f"the corrected spoken-readable text (at most {MAX_TEXT_CHARS_CEILING:,} characters)",
    )
    p.add_argument("--reviewer", type=short_text(200), required=True, help="who decided (at most 200 characters)")
    p.add_argument("--note", type=short_text(2000), help="at most 2,000 characters")
    p.set_defaults(handler=cmd_review)

    p = add_command(
        subparsers,
        "transcribe",
        description="Transcribe every synthesized item clip with each --asr system (two independent ones for "
        "screening): openai:whisper-1, openai:gpt-4o-transcribe, gemini:gemini-2.5-flash, "
        "mistral:voxtral-mini-transcribe-latest, compatible:MODEL@URL (an OpenAI-compatible server), "
        "local:tiny.en (or just local: Whisper tiny.en, offline, from the local-asr extra; English only, so clips "
        "in other languages are skipped and counted), local:MODEL_DIR (a faster-whisper model folder). Append "
        "+context to the model (local:tiny.en+context) to have it hear each item's question and options as one "
        "clip. Append @URL to any to change its endpoint. A failing clip is listed and retried by the next run; "
        "the batch goes on.",
    )
    p.add_argument("dir", metavar="DIR")
    p.add_argument(
        "--asr",
        action="append",
        metavar="PROVIDER[:MODEL][+context][@URL]",
        help="an ASR system; give it twice for two: openai[:MODEL], gemini[:MODEL], mistral[:MODEL], "
        "compatible:MODEL@URL, local (= local:tiny.en, English only: clips in other languages are skipped) or "
        "local:MODEL_DIR; the model without one is the provider's default (whisper-1, gemini-2.5-flash, "
        "voxtral-mini-transcribe-latest, tiny.en). MODEL+context (local:tiny.en+context) is a screening variant "
        "that hears each item's question and options as one clip, stored as a system of its own",
    )
    p.add_argument("--languages", type=language_list, help="only clips in these languages")
    p.add_argument("--include-tokens", action="store_true", help="also the instruction-token clips")
    add_request_limits(p)
    p.add_argument(
        "--clips-out",
        metavar="FILE",
        help="instead: write the clips (id, language, text, audio path) for an external ASR",
    )
    p.add_argument("--dry-run", action="store_true")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=cmd_transcribe)

    p = add_command(
        subparsers,
        "import-transcripts",
        description="Import a CSV, TSV, JSONL or Parquet table with columns clip_id and text (optional model) as "
        "the transcripts of ASR system NAME. The whole file is checked first; any problem names file, row and "
        "column and nothing is imported.",
    )
    p.add_argument("dir", metavar="DIR")
    p.add_argument("file", metavar="FILE", help="the transcripts table; - reads it from standard input")
    p.add_argument(
        "--asr",
        type=short_text(200),
        required=True,
        metavar="NAME",
        help="the ASR system's name, e.g. whisper-large-v3",
    )
    p.add_argument("--model", type=short_text(200), help="model name stored with rows that have no model column")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=cmd_import_transcripts)

    p = add_command(
        subparsers,
        "screen",
        description="Error rate of each transcript against the clip's text (language-aware normalization, see "
        "docs/qc.md), the minimum over the ASR systems, and the BiasInEar intervals 0, (0, 0.2], (0.2, 0.6], "
        "> 0.6 per language (Table 2's layout).",
    )
    p.add_argument("dir", metavar="DIR")
    p.add_argument(
        "--min-asr",
        type=whole_number(1, 10),
        default=2,
        metavar="N",
        help="transcripts a clip needs, 1–10 (default 2: two ASR systems)",
    )
    p.add_argument(
        "--metric", action="append", metavar="LANG=wer|cer", help="override a language's metric, e.g. ko=cer"
    )
    p.add_argument(
        "--rescore",
        action="store_true",
        help="score every transcript from its text again, not from the edit counts stored with it (and store them "
        "anew): for counts from someone else's project you do not trust; the result is the same",
    )
    p.add_argument(
        "--worst",
        type=whole_number(0, 100_000),
        default=0,
        metavar="N",
        help="also list the N clips with the highest error, 0–100,000",
    )
    p.add_argument(
        "--layout",
        choices=TABLE2_LAYOUTS,
        default="default",
        help="Table 2's rows: default (the four intervals, and a 'likely ASR hallucination' row when a clip's every "
        "transcript is one) or paper (exactly the paper's four intervals; such a clip counts where its WER puts it)",
    )
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=cmd_screen)

    p = add_command(
        subparsers,
        "sample",
        description="Per language and non-zero WER interval, N clips (BiasInEar Appendix B.4): accent quotas by "
        "largest remainder, one clip per item preferring the question, subjects round-robin, shortfalls filled "
        "from the pool; seeded. Without screening, strata are languages (accent and subject still apply).",
    )
    p.add_argument("dir", metavar="DIR")
    p.add_argument(
        "--per-bin",
        type=whole_number(1, 100_000),
        default=40,
        metavar="N",
        help="clips per stratum, 1–100,000 (default 40, as in the paper)",
    )
    p.add_argument("--seed", type=seed, default=0, help="sampling seed, 0 to 2^63-1 (default 0)")
    p.add_argument("--name", type=short_text(200), required=True, help="the rating queue's name")
    p.add_argument("--replace", action="store_true", help="replace an existing queue of that name")
    p.add_argument(
        "--controls",
        type=whole_number(0, 1000),
        default=0,
        metavar="N",
        help="mix N hidden control clips into the queue at seeded positions, 0–1,000 (default 0): up to half "
        "known-good (gold or agreed-Correct clips, expected Correct), the rest corrupted copies of the project's "
        "clips (mismatched audio, cut off, noise, wrong speed; expected Incorrect). See docs/qc.md",
    )
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=cmd_sample)

    p = add_command(
        subparsers,
        "gold",
        description="Mark clips as gold: known-good clips (expected Correct) that `sample --controls` may copy "
        "as known-good controls, besides clips two or more annotators rated Correct. Without --clip, list them.",
    )
    p.add_argument("dir", metavar="DIR")
    p.add_argument(
        "--clip", type=whole_number(1, 2**63 - 1), action="append", metavar="ID", help="a clip to mark (repeatable)"
    )
    p.add_argument("--by", type=short_text(200), help="the coordinator marking them (required to mark)")
    p.add_argument("--note", type=short_text(2000), help="why (at most 2,000 characters)")
    p.add_argument("--remove", action="store_true", help="unmark the --clip clips instead")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=cmd_gold)

    p = add_command(
        subparsers,
        "rate",
        description="Rate clips of a rating queue without the app, for scripted sessions, batch corrections and "
        "tests: one clip (--clip, --rating) or a file of them (--from: CSV, TSV, JSONL or Parquet with columns "
        "clip, rating and optional note, seconds). The same checks, undo history and crash safety as the rating "
        "screen: ratings are appended (the newest counts), --undo takes back the annotator's last one in the "
        "queue, and a --from file is stored whole or, if any row is wrong, not at all.",
    )
    p.add_argument("dir", metavar="DIR")
    p.add_argument("--queue", type=short_text(200), required=True, help="the rating queue's name")
    p.add_argument("--annotator", type=short_text(200), required=True, help="who rates (at most 200 characters)")
    what = p.add_mutually_exclusive_group(required=True)
    what.add_argument("--clip", type=whole_number(1, 2**63 - 1), metavar="ID", help="the clip to rate (with --rating)")
    what.add_argument(
        "--from", dest="from_file", metavar="FILE", help="ratings to store: columns clip, rating[, note, seconds]"
    )
    what.add_argument("--undo", action="store_true", help="take back the annotator's last live rating in the queue")
    p.add_argument("--rating", choices=("correct", "acceptable", "incorrect"), help="the verdict for --clip")
    p.add_argument("--note", type=short_text(2000), help="with --clip: a note (at most 2,000 characters)")
    p.add_argument(
        "--seconds", type=number(0, 86_400), metavar="S", help="with --clip: seconds spent on the clip (0–86,400)"
    )
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=cmd_rate)

    p = add_command(
        subparsers,
        "qc-report",
        description="The project's quality control: flagged and verified rewrite errors (Table 9), the WER "
        "distribution (Table 2), rating results per language and WER interval (Table 3), annotator agreement "
        "and disagreements.",
    )
    p.add_argument("dir", metavar="DIR")
    p.add_argument("--queue", type=short_text(200), help="ratings of this queue only")
    p.add_argument("--out", metavar="FOLDER", help="also write the tables as CSV in the published layouts")
    p.add_argument(
        "--exclude-flagged",
        action="store_true",
        help="recompute Table 3 and agreement without the flagged annotators (says how many ratings that drops)",
    )
    p.add_argument(
        "--min-control-accuracy",
        type=number(0, 1),
        default=0.8,
        metavar="P",
        help="flag annotators right on fewer of their control clips than this, 0–1 (default 0.8)",
    )
    p.add_argument(
        "--min-agreement",
        type=number(0, 1),
        default=0.6,
        metavar="P",
        help="flag annotators agreeing with the other annotators' majority less often, 0–1 (default 0.6)",
    )
    p.add_argument(
        "--min-median-seconds",
        type=number(0, 86_400),
        metavar="S",
        help="also flag annotators whose median time per clip is below S seconds (default: not checked)",
    )
    p.add_argument(
        "--min-controls",
        type=whole_number(1, 100_000),
        default=5,
        metavar="N",
        help="control clips an annotator must have rated before accuracy can flag them (default 5)",
    )
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=cmd_qc_report)


# --------------------------------------------------------------------------------------------------


def cmd_rewrite(args: argparse.Namespace) -> int:
    from spokenbench.core.jobs.remote import RetryPolicy
    from spokenbench.core.rewriting.llm import RewriteSettings, plan_rewrites, run_rewrites
    from spokenbench.core.rewriting.prompts import load_template, parse_template, save_project_template
    from spokenbench.core.store import opened

    settings = RewriteSettings(
        model=args.model,
        base_url=args.base_url,
        key_provider=None if args.key_provider == "none" else args.key_provider,
        max_attempts=args.attempts,
        concurrency=args.concurrency,
        requests_per_minute=args.rpm,
        timeout_s=args.timeout,
        languages=tuple(args.languages or ()),
        source=args.source,
        limit=args.limit,
        redo=args.redo,
        retry_manual=args.retry_manual,
    )
    with opened(args.dir) as project:
        if args.prompt_file and args.dry_run:
            template = parse_template(_read(args.prompt_file), args.prompt_file)  # checked, not stored
        elif args.prompt_file:
            template = save_project_template(project, _read(args.prompt_file), args.prompt_file)
        else:
            template = load_template(project.conn)
        plan = plan_rewrites(project.conn, settings)
        summary = plan.summary() | {"model": settings.model}
        if not args.json:
            print(
                f"{summary['to_rewrite']} items to rewrite with {settings.model}; {summary['skipped_with_rewrites']} "
                f"already have rewrites, {summary['skipped_marked_manual']} marked for manual rewriting"
            )
        if args.dry_run or not plan.items:
            if args.json:
                print_json({"plan": summary})
            return 0
        report = asyncio.run(
            run_rewrites(project, plan, settings, template, text_progress_bar(), RetryPolicy(max_attempts=args.retries))
        )
    if args.json:
        print_json({"plan": summary, **report.as_dict()})
    else:
        print(
            f"rewrote {report.rewritten} items ({report.requests} requests, {report.cached} answers from the cache); "
            f"{report.manual} marked for manual rewriting, {report.failed} failed"
        )
        for problem in report.problems[:20]:
            print(f"  {problem}")
        if report.rewritten:
            print("next: spokenbench flag DIR   (diff-check the rewrites against the originals)")
    return 1 if report.failed else 0


def _read(path: str) -> str:
    from spokenbench.core.cli.audio_commands import read_text_file

    return read_text_file(path)


def cmd_flag(args: argparse.Namespace) -> int:
    from spokenbench.core.rewriting.flagging import flag_rewrites, flagged_rewrites
    from spokenbench.core.rewriting.report import rewrite_qc
    from spokenbench.core.store import opened

    with opened(args.dir) as project:
        report = flag_rewrites(project, text_progress_bar())
        qc = rewrite_qc(project.conn)
        listed = (
            [f.as_dict() for f in flagged_rewrites(project.conn, not args.all, args.language)] if args.list else None
        )
    result = {
        "checked": report.checked,
        "flagged": report.flagged,
        "accepted_unchanged": report.accepted_unchanged,
        "table9": qc["table9"],
        "by_language": qc["by_language"],
    }
    if listed is not None:
        result["flagged_rewrites"] = listed
    if args.json:
        print_json(result)
        return 0
    print(
        f"checked {report.checked} pending rewrites: {report.flagged} flagged, {report.accepted_unchanged} accepted unchanged"
    )
    print_table(qc["table9"])
    waiting = sum(v["awaiting_review"] for v in qc["by_language"].values())
    if listed:
        for f in listed:
            print()
            print(printable(f"item {f['item_id']} {f['source_id']} ({f['language']}) {f['part']} [{f['status']}]"))
            for label, key in (("original:", "original"), ("rewrite: ", "rewrite"), ("diff:    ", "diff")):
                print(f"  {label} {printable(f[key])}")
    if waiting:
        print(
            f"{waiting} flagged parts await review: spokenbench review DIR --item ID [--part P] --accept|--reject|--edit TEXT --reviewer NAME"
            + ("" if args.list else "   (list them with --list)")
        )
    return 0


def cmd_review(args: argparse.Namespace) -> int:
    from spokenbench.core.rewriting.flagging import review_item, review_rewrite
    from spokenbench.core.store import opened

    decision = "accept" if args.accept else "reject" if args.reject else "edit"
    with opened(args.dir) as project:
        if args.part is None:
            if decision == "edit":
                raise SpokenBenchError("--edit needs --part (question, option_A, ...)")
            count = review_item(project, args.item, decision, args.reviewer, args.note)
            if count == 0:
                raise SpokenBenchError(
                    f"item {args.item} has no rewrite awaiting review; name the --part to decide on another"
                )
            print(f"{decision} recorded for {count} parts of item {args.item} ({args.reviewer})")
        else:
            review_rewrite(project, args.item, args.part, decision, args.reviewer, args.edit, args.note)
            print(f"item {args.item} {args.part}: {decision} recorded ({args.reviewer})")
    return 0


def _skipped_note(plan, asr: str) -> str:
    """', 20 skipped: ko 10, zh 10 (…)' for a system that cannot transcribe some clips' language (an English-only
    local model)."""
    by_language = plan.unsupported.get(asr)
    if not by_language:
        return ""
    counts = ", ".join(f"{language} {count}" for language, count in sorted(by_language.items()))
    return f", {sum(by_language.values())} skipped: {counts} (a language it cannot transcribe)"


def cmd_transcribe(args: argparse.Namespace) -> int:
    from spokenbench.core.asr.backends import describe_endpoint, get_asr_backend, parse_asr_spec, screening_requirements
    from spokenbench.core.asr.store import asr_systems_with_transcripts
    from spokenbench.core.asr.transcribe import clips_for_transcription, plan_transcription, run_transcription
    from spokenbench.core.foundation.tables import write_table
    from spokenbench.core.jobs.remote import RetryPolicy
    from spokenbench.core.store import opened

    languages = list(args.languages or ()) or None
    with opened(args.dir) as project:
        if args.clips_out:
            rows = clips_for_transcription(project, languages, args.include_tokens)
            write_table(
                rows,
                args.clips_out,
                ["clip_id", "language", "accent", "voice", "item", "part", "reference_text", "audio_path"],
            )
            print(
                f"wrote {len(rows)} clips to {args.clips_out}; import the transcripts with "
                "`spokenbench import-transcripts DIR FILE --asr NAME` (columns clip_id,text)"
            )
            return 0
        if not args.asr:
            raise SpokenBenchError(
                "name the ASR systems with --asr (twice for two), or use --clips-out FILE\n" + screening_requirements()
            )
        specs = [parse_asr_spec(spec) for spec in args.asr]
        backends = [
            get_asr_backend(spec, concurrency=args.concurrency, requests_per_minute=args.rpm, timeout_s=args.timeout)
            for spec in specs
        ]
        plan = plan_transcription(project.conn, backends, languages, args.include_tokens)
        systems = asr_systems_with_transcripts(project.conn) | {b.name for b in backends}
        summary = plan.summary()
        skipped = sum(sum(by_language.values()) for by_language in plan.unsupported.values())
        if not args.json:
            for spec, backend in zip(specs, backends):
                print(
                    f"{describe_endpoint(spec)}: {plan.clips_to_do.get(backend.name, 0)} clips to transcribe, "
                    f"{plan.already_done.get(backend.name, 0)} already done{_skipped_note(plan, backend.name)}"
                )
            if len(systems) < 2:
                print("note: screening takes the better of two ASR systems; add a second --asr (or import-transcripts)")
        if args.dry_run or not plan.jobs:
            if args.json:
                print_json({"plan": summary, "skipped_clips": skipped})
            return 0
        report = asyncio.run(
            run_transcription(project, plan, text_progress_bar(), RetryPolicy(max_attempts=args.retries))
        )
    result = {
        "plan": summary,
        "requests": report.requests,
        "transcripts": report.transcripts,
        "failed_clips": report.failed_clips,
        "skipped_clips": skipped,
        "failures": report.failures,
    }
    if args.json:
        print_json(result)
    else:
        print(
            f"stored {report.transcripts} transcripts ({report.requests} requests); {report.failed_clips} clips "
            f"failed; {skipped} clips skipped (a language the ASR system cannot transcribe)"
        )
        for failure in report.failures[:20]:
            print(f"  failed: {failure}")
        if report.failed_clips:
            print("rerun the same command to retry the failed clips")
    return 1 if report.failed_clips else 0


def cmd_import_transcripts(args: argparse.Namespace) -> int:
    from spokenbench.core.asr.transcribe import import_transcripts
    from spokenbench.core.store import opened

    with opened(args.dir) as project:
        result = import_transcripts(project, args.file, args.asr, args.model)
    if args.json:
        print_json({"asr": result.asr, "imported": result.rows, "replaced": result.replaced})
    else:
        print(f"imported {result.rows} transcripts as '{result.asr}' ({result.replaced} replaced earlier ones)")
    return 0


def cmd_screen(args: argparse.Namespace) -> int:
    from spokenbench.core.asr.backends import screening_requirements
    from spokenbench.core.asr.screening import ScreeningSettings, screen_project, worst_clips
    from spokenbench.core.asr.store import transcript_count
    from spokenbench.core.store import opened

    if args.min_asr < 1:
        raise SpokenBenchError("--min-asr must be at least 1")
    settings = ScreeningSettings(args.min_asr, _metric_overrides(args.metric))
    with opened(args.dir) as project:
        if transcript_count(project.conn) == 0:
            needs = screening_requirements()
            if args.json:
                print_json({"screened": 0, "table2": [], "needs": needs})
            else:
                print("no transcripts yet, so no clip is screened.\n" + needs)
            return 0
        result = screen_project(project, settings, text_progress_bar(), rescore=args.rescore)
        worst = worst_clips(project.conn, args.worst) if args.worst else []
    summary = result.summary()
    if args.json:
        print_json({**summary, "table2": result.table2(args.layout), **({"worst": worst} if args.worst else {})})
        return 0
    print(
        f"screened {summary['screened']} of {summary['clips']} clips (the better of ≥{settings.min_asr} ASR transcripts; "
        f"metric per language: {', '.join(f'{k} {v.upper()}' for k, v in summary['metric_by_language'].items())})"
    )
    missing = summary["not_screened_too_few_transcripts"]
    if missing:
        print(
            f"not screened (fewer than {settings.min_asr} transcripts): "
            + ", ".join(f"{k} {v}" for k, v in missing.items())
        )
    print_table(result.table2(args.layout))
    print(
        "corpus error rate (total edits / total reference units): "
        + ", ".join(f"{k} {v}" for k, v in summary["corpus_error_rate"].items())
    )
    if worst:
        print()
        print_table(
            [
                {
                    k: w[k]
                    for k in (
                        "clip_id",
                        "language",
                        "accent",
                        "voice",
                        "part",
                        "error_rate",
                        "best_asr",
                        "text",
                        "transcript",
                    )
                }
                for w in worst
            ]
        )
    return 0


def cmd_sample(args: argparse.Namespace) -> int:
    from spokenbench.core.qc.queues import sample_for_rating
    from spokenbench.core.store import opened

    if args.per_bin < 1:
        raise SpokenBenchError("--per-bin must be at least 1")
    with opened(args.dir) as project:
        outcome = sample_for_rating(project, args.name, args.per_bin, args.seed, args.replace, controls=args.controls)
    result = outcome.result
    strata = [s.as_dict() for s in result.strata]
    if args.json:
        print_json(
            {
                "queue": outcome.name,
                "created": outcome.created,
                "strategy": result.strategy,
                "clips": len(result.selected) + outcome.controls,
                "sampled_clips": len(result.selected),
                "controls": outcome.controls,
                "note": result.note,
                "strata": strata,
            }
        )
        return 0
    if result.note:
        print(f"note: {result.note}")
    print_table(
        [
            {
                k: s[k]
                for k in (
                    "language",
                    "wer_interval",
                    "pool",
                    "wanted",
                    "selected",
                    "unique_items",
                    "subjects",
                    "filled_from_pool",
                )
            }
            | {"accent_quotas": ", ".join(f"{a or '-'} {q}" for a, q in s["quotas"].items())}
            for s in strata
        ]
    )
    verb = "created" if outcome.created else "already exists (same sample), unchanged:"
    hidden = f" (+{outcome.controls} hidden control clips)" if outcome.controls else ""
    print(f"rating queue '{outcome.name}' {verb} {len(result.selected)} clips{hidden}")
    return 0


def cmd_qc_report(args: argparse.Namespace) -> int:
    from spokenbench.core.qc.reliability import Thresholds
    from spokenbench.core.qc.report import qc_report, write_report_tables
    from spokenbench.core.store import opened

    thresholds = Thresholds(
        args.min_control_accuracy, args.min_agreement, args.min_median_seconds, min_controls=args.min_controls
    )
    with opened(args.dir) as project:
        report = qc_report(project, args.queue, thresholds, args.exclude_flagged)
    written = write_report_tables(report, args.out) if args.out else []
    if args.json:
        print_json(report | ({"written": [str(p) for p in written]} if written else {}))
        return 0
    rewriting, screening, ratings = report["rewriting"], report["screening"], report["ratings"]
    print("Rewriting (Table 9): flagged by the diff check / verified errors, per language")
    if rewriting["table9"]:
        print_table(rewriting["table9"])
    else:
        print("  no rewrite has been diff-checked yet (spokenbench flag)")
    waiting = sum(v["awaiting_review"] for v in rewriting["by_language"].values())
    if waiting:
        print(f"  {waiting} flagged parts await review")
    if rewriting["manual_items"]:
        print(f"  {len(rewriting['manual_items'])} items marked for manual rewriting")
    print("\nASR screening (Table 2): clips per WER interval")
    if screening["table2"]:
        print_table(screening["table2"])
    if screening.get("needs"):
        print(screening["needs"])
    print("\nRating queues")
    if report["queues"]:
        print_table(
            [
                {k: v for k, v in q.items() if k != "rated_by"}
                | {"rated_by": ", ".join(f"{a} {n}" for a, n in q["rated_by"].items())}
                for q in report["queues"]
            ]
        )
    else:
        print("  none (spokenbench sample DIR --name NAME)")
    _print_annotators(report)
    exclusion = ratings.get("exclusion")
    without = ""
    if exclusion:
        left_out = ", ".join(exclusion["excluded_annotators"]) or "nobody is flagged"
        without = f" without flagged annotators ({left_out}: {exclusion['ratings_dropped']} ratings dropped)"
    print(
        f"\nRatings (Table 3){' of queue ' + args.queue if args.queue else ''}{without}: "
        f"{ratings['rated_clips']} clips rated (control clips never count)"
    )
    if exclusion and exclusion["ratings_dropped"]:
        print(f"  {exclusion['clips_dropped']} clips were rated only by the flagged annotators and drop out")
    if ratings["table3"]:
        print_table(ratings["table3"])
        print()
        print_table(ratings["table3_by_wer_interval"])
        agreement = ratings["agreement"]
        if agreement["clips_rated_by_several"]:
            print(
                f"\nagreement over {agreement['clips_rated_by_several']} clips rated by several annotators: "
                f"Fleiss' κ = {agreement['fleiss_kappa']}"
            )
            for pair in agreement["pairs"]:
                print(
                    f"  {' vs '.join(pair['annotators'])}: Cohen's κ = {pair['cohen_kappa']} "
                    f"(raw agreement {pair['raw_agreement']}, {pair['shared_clips']} clips)"
                )
            print(f"  {len(ratings['disagreements'])} clips with disagreeing ratings")
    for path in written:
        print(f"wrote {path}")
    return 0


def _rating_rows(path: str) -> list:
    """A --from file's rows as RatingRows, each naming its file and row; any malformed row is an InputError
    listing every problem, and nothing is stored."""
    from spokenbench.core.asr.transcribe import as_clip_id
    from spokenbench.core.foundation.errors import InputError
    from spokenbench.core.foundation.tables import read_table
    from spokenbench.core.qc.queues import RatingRow

    table = read_table(path)
    clip_column = "clip" if "clip" in table.columns else "clip_id"
    missing = [c for c in (clip_column, "rating") if c not in table.columns]
    if missing:
        have = ", ".join(table.columns) or "no columns"
        raise InputError([table.problem(f"missing column (the file has: {have})", column=c) for c in missing])
    problems, rows = [], []
    for number_, row in enumerate(table.rows, start=1):
        clip_id = as_clip_id(row.get(clip_column))
        if clip_id is None:
            problems.append(table.problem(f"not a clip id: {row.get(clip_column)!r}", number_, clip_column))
            continue
        seconds = row.get("seconds")
        if isinstance(seconds, str):
            try:
                seconds = float(seconds) if seconds.strip() else None
            except ValueError:
                problems.append(table.problem(f"not a number of seconds: {seconds!r}", number_, "seconds"))
                continue
        note = row.get("note")
        rows.append(
            RatingRow(clip_id, row.get("rating"), note if note != "" else None, seconds, f"{path} row {number_}")
        )
    if problems:
        raise InputError(problems)
    return rows


def cmd_rate(args: argparse.Namespace) -> int:
    from spokenbench.core.qc.queues import RatingRow, rate_clips, undo_last_rating
    from spokenbench.core.store import opened

    if args.clip is not None and args.rating is None:
        raise SpokenBenchError("--clip needs --rating correct|acceptable|incorrect")
    if args.clip is None and (args.rating or args.note or args.seconds is not None):
        raise SpokenBenchError("--rating, --note and --seconds go with --clip (a --from file carries its own)")
    rows = _rating_rows(args.from_file) if args.from_file else None
    with opened(args.dir) as project:
        if args.undo:
            undone = undo_last_rating(project, args.annotator, args.queue)
            result = {"queue": args.queue, "annotator": args.annotator, "undone": None}
            if undone is not None:
                result["undone"] = {"rating_id": undone.rating_id, "clip_id": undone.clip_id}
            if args.json:
                print_json(result)
            elif undone is None:
                print(f"{args.annotator} has no live rating in queue '{args.queue}' to undo")
            else:
                print(f"undid rating {undone.rating_id} of clip {undone.clip_id} ({args.annotator}, kept as undone)")
            return 0
        if rows is None:
            rows = [RatingRow(args.clip, args.rating, args.note, args.seconds)]
        ids = rate_clips(project, args.queue, args.annotator, rows)
    stored = [
        {"rating_id": rating_id, "clip_id": row.clip_id, "rating": row.rating.strip().lower(), "seconds": row.seconds}
        for rating_id, row in zip(ids, rows)
    ]
    if args.json:
        print_json({"queue": args.queue, "annotator": args.annotator, "stored": len(ids), "ratings": stored})
    else:
        print(f"stored {len(ids)} rating(s) by {args.annotator} in queue '{args.queue}'")
    return 0


def cmd_gold(args: argparse.Namespace) -> int:
    from spokenbench.core.qc.controls import gold_clips, mark_gold, unmark_gold
    from spokenbench.core.store import opened

    with opened(args.dir) as project:
        if args.clip and args.remove:
            changed = unmark_gold(project, args.clip)
        elif args.clip:
            if not args.by:
                raise SpokenBenchError("marking gold needs --by NAME (the coordinator)")
            changed = mark_gold(project, args.clip, args.by, args.note)
        elif args.remove or args.by or args.note:
            raise SpokenBenchError("--by, --note and --remove go with --clip ID")
        else:
            changed = 0
        listed = gold_clips(project.conn)
    if args.json:
        print_json({"changed": changed, "gold": listed})
        return 0
    if args.clip:
        print(f"{'unmarked' if args.remove else 'marked'} {changed} clip(s); {len(listed)} gold clip(s) in all")
    elif listed:
        print_table(
            [{k: g[k] for k in ("clip_id", "language", "part", "marked_by", "marked_at", "note")} for g in listed]
        )
    else:
        print("no gold clips (mark one with: spokenbench gold DIR --clip ID --by NAME)")
    return 0


def _print_annotators(report: dict) -> None:
    """The Annotators table: control accuracy with its Wilson interval, agreement, time, flags and reasons."""
    annotators = report["annotators"]
    print("\nAnnotators (control clips, agreement, time; docs/qc.md)")
    if not annotators:
        print("  no ratings yet")
        return
    rows = []
    for a in annotators:
        ci = a["control_ci"]
        rows.append(
            {
                "annotator": a["annotator"],
                "ratings": a["ratings"],
                "controls": a["controls_rated"],
                "control_accuracy": "-" if a["control_accuracy"] is None else f"{a['control_accuracy']:.0%}",
                "95% CI (Wilson)": "-" if ci is None else f"{ci[0]:.0%}–{ci[1]:.0%}",
                "agreement": "-" if a["agreement_with_majority"] is None else f"{a['agreement_with_majority']:.0%}",
                "median_s": "-" if a["median_seconds"] is None else a["median_seconds"],
                "flagged": "FLAGGED" if a["flagged"] else "",
            }
        )
    print_table(rows)
    for a in annotators:
        for reason in a["reasons"]:
            print(printable(f"  {a['annotator']}: {reason}"))
        if len(a["blocks"]) > 1:
            print(
                printable(
                    f"  {a['annotator']} per {len(a['blocks'])} blocks of positions: "
                    + "; ".join(
                        f"{b['positions']}: "
                        + ("-" if b["control_accuracy"] is None else f"{b['control_accuracy']:.0%} controls right")
                        + f", median {b['median_seconds'] if b['median_seconds'] is not None else '-'} s"
                        for b in a["blocks"]
                    )
                )
            )
