"""Audio commands: synthesize and assemble. Both show the plan's counts before working, draw a progress bar,
and are resumable: rerunning skips every clip or input already stored."""

from __future__ import annotations

import argparse
import asyncio

from spokenbench.core.audio.assembly import (
    PAUSE_MAX_S,
    RATE_RANGE,
    SNR_RANGE_DB,
    SPEED_RANGE,
    VOLUME_MAX,
    AssemblySettings,
    plan_assembly,
    run_assembly,
)
from spokenbench.core.audio.synthesis import PART_KINDS, plan_synthesis, run_synthesis
from spokenbench.core.audio.tokens import TOKEN_LANGUAGES
from spokenbench.core.audio.tts import BACKEND_NAMES, get_backend
from spokenbench.core.audio.tts.kokoro import find_model_files
from spokenbench.core.audio.tts.project_settings import (
    cloning_references,
    project_model_dir,
    project_prompt_template,
    save_model_dir,
    save_prompt_template,
)
from spokenbench.core.cli.arguments import (
    choice_list,
    http_url,
    language_list,
    number,
    number_list,
    option_value,
    whole_number,
)
from spokenbench.core.cli.commands import add_command
from spokenbench.core.cli.output import print_json
from spokenbench.core.domain.conditions import NAMED_ORDERS
from spokenbench.core.foundation.errors import InputError, SpokenBenchError
from spokenbench.core.foundation.progress import text_progress_bar
from spokenbench.core.foundation.safe_files import read_regular_text
from spokenbench.core.store import opened


def read_text_file(path: str) -> str:
    try:
        return read_regular_text(path)  # a FIFO or /dev/zero is refused, not waited on
    except (OSError, InputError) as error:
        raise SpokenBenchError(f"cannot read the prompt file: {error}") from None


def _csv(text: str | None) -> list[str] | None:
    return [t.strip() for t in text.split(",") if t.strip()] if text else None


CHUNK_SECONDS_RANGE = (1, 3600)
ITEM_KINDS = ("mcq", "gender-probe")


def register(subparsers) -> None:
    p = add_command(
        subparsers,
        "synthesize",
        description="Synthesize every item part and instruction token in every chosen language, accent and voice. "
        "Clips are cached by recipe, checked on arrival, and a rerun resumes where the last one stopped.",
    )
    p.add_argument("dir", metavar="DIR")
    p.add_argument("--tts", required=True, choices=BACKEND_NAMES, help="TTS backend (espeak works offline)")
    p.add_argument("--model", help="backend model (default: the preset's current model)")
    p.add_argument(
        "--languages", type=language_list, help="comma-separated language codes (default: all in the project)"
    )
    p.add_argument("--accents", help="comma-separated accents (default: all the backend offers)")
    p.add_argument("--voices", help="comma-separated voice names (default: the backend's voices)")
    p.add_argument(
        "--parts",
        type=choice_list(PART_KINDS),
        default=PART_KINDS,
        help=f"which parts, comma-separated: {', '.join(PART_KINDS)} (default: all)",
    )
    p.add_argument(
        "--token-language",
        choices=TOKEN_LANGUAGES,
        default="english",
        help="speak 'question', 'A'..'D' in English for every language as the paper did, or natively",
    )
    p.add_argument(
        "--prompt-file",
        metavar="FILE",
        help="this project's own style prompt for gemini/openai (placeholders {text}, {language_name}, "
        "{accent_name}); saved with the project and used from then on",
    )
    p.add_argument("--base-url", type=http_url, help="API base URL (an OpenAI-compatible or Gemini-compatible server)")
    p.add_argument(
        "--kokoro-model",
        metavar="FOLDER",
        help="for --tts kokoro: the folder with kokoro-v1.0.onnx and voices-v1.0.bin (kokoro-onnx release); saved "
        "with the project and used from then on",
    )
    p.add_argument(
        "--kinds",
        type=choice_list(ITEM_KINDS),
        help=f"only items of these kinds, comma-separated: {', '.join(ITEM_KINDS)} (default: all)",
    )
    p.add_argument(
        "--original-text", action="store_true", help="speak the original text even where a rewrite is accepted"
    )
    p.add_argument("--dry-run", action="store_true", help="show the plan and its cost estimate, synthesize nothing")
    p.add_argument("--json", action="store_true", help="print the plan and result as JSON")
    p.set_defaults(handler=cmd_synthesize)

    p = add_command(
        subparsers,
        "assemble",
        description="Assemble question + label + option audio for every item under every condition. Orders: "
        f"{', '.join(NAMED_ORDERS)}, or explicit permutations such as CABD.",
    )
    p.add_argument("dir", metavar="DIR")
    p.add_argument("--orders", default="original", help="comma-separated orders or permutations (default: original)")
    p.add_argument(
        "--speed",
        default="1.0",
        help=f"speech rates, e.g. 0.75,1.0,1.25 (pitch preserved); each {SPEED_RANGE[0]:g}–{SPEED_RANGE[1]:g}",
    )
    p.add_argument(
        "--volume",
        default="1.0",
        help=f"loudness factors, e.g. 0.5,1.0,1.5 (peaks limited, never clipped); each above 0, at most {VOLUME_MAX:g}",
    )
    p.add_argument(
        "--snr",
        default="clean",
        help=f"additive-noise SNRs in dB, e.g. clean,20,10; each 'clean' or {SNR_RANGE_DB[0]:g} to {SNR_RANGE_DB[1]:g}",
    )
    p.add_argument(
        "--chunk-seconds",
        default="",
        help=f"also store chunks no longer than this, e.g. 30; each {CHUNK_SECONDS_RANGE[0]}–{CHUNK_SECONDS_RANGE[1]} seconds",
    )
    p.add_argument("--languages", type=language_list, help="comma-separated language codes")
    p.add_argument("--accents", help="comma-separated accents")
    p.add_argument("--voices", help="comma-separated voice names")
    p.add_argument("--tts", choices=BACKEND_NAMES, help="use only clips from this backend")
    p.add_argument("--no-labels", action="store_true", help="omit the spoken 'question' and letter tokens")
    p.add_argument("--token-language", choices=TOKEN_LANGUAGES, default="english")
    p.add_argument(
        "--rate",
        type=whole_number(*RATE_RANGE),
        default=16_000,
        help=f"output sample rate in Hz, {RATE_RANGE[0]}–{RATE_RANGE[1]} (default 16000)",
    )
    p.add_argument(
        "--pause",
        type=number(0, PAUSE_MAX_S),
        default=0.5,
        help=f"pause between segments in seconds, 0–{PAUSE_MAX_S:g} (default 0.5)",
    )
    p.add_argument("--format", choices=("wav", "flac"), default="wav", help="stored audio format (default wav)")
    p.add_argument("--dry-run", action="store_true", help="show the plan, assemble nothing")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=cmd_assemble)


def _backend_for(args: argparse.Namespace, project):
    """The chosen backend with the project's settings: its saved prompt template, its cloning references."""
    if args.tts == "clone":
        return get_backend("clone", references=cloning_references(project))
    if args.tts == "kokoro":
        if args.kokoro_model:
            find_model_files(args.kokoro_model)  # refuse a wrong folder before saving it
            save_model_dir(project, "kokoro", args.kokoro_model)
        return get_backend("kokoro", model_dir=project_model_dir(project.conn, "kokoro"))
    options = {"model": args.model, "base_url": args.base_url}
    prompt = read_text_file(args.prompt_file) if args.prompt_file else None  # checked whatever the backend
    if args.tts in ("gemini", "openai"):
        if prompt is not None:
            save_prompt_template(project, args.tts, prompt)
        options["prompt_template"] = project_prompt_template(project.conn, args.tts)
    return get_backend(args.tts, **{k: v for k, v in options.items() if v is not None})


def cmd_synthesize(args: argparse.Namespace) -> int:
    with opened(args.dir) as project:
        backend = _backend_for(args, project)
        plan = plan_synthesis(
            project.conn,
            backend,
            list(args.languages or ()) or None,
            _csv(args.voices),
            _csv(args.accents),
            args.parts,
            args.token_language,
            use_rewrites=not args.original_text,
            kinds=tuple(args.kinds) if args.kinds else None,
        )
        summary = plan.summary()
        if not args.json:
            print(
                f"{summary['to_synthesize']} clips to synthesize with {backend.name} ({backend.model}), "
                f"{summary['already_done']} already stored; {summary['characters']} characters, "
                f"estimated cost ${summary['estimated_cost_usd']:.2f}"
            )
            for note in plan.unsupported:
                print(f"note: {note}")
        if args.dry_run or not plan.jobs:
            if args.json:
                print_json({"plan": summary})
            return 0
        report = asyncio.run(run_synthesis(project, plan, text_progress_bar()))
    if args.json:
        print_json(
            {
                "plan": summary,
                "synthesized": report.synthesized,
                "reused": report.reused,
                "failed": report.failed,
                "failures": report.failures,
            }
        )
    else:
        print(f"synthesized {report.synthesized}, reused {report.reused}, failed {report.failed}")
        for failure in report.failures[:10]:
            print(f"failed: {failure}")
    return 0 if report.failed == 0 else 1


def cmd_assemble(args: argparse.Namespace) -> int:
    settings = AssemblySettings(args.rate, args.pause, token_language=args.token_language, audio_format=args.format)
    # The lists are checked here rather than by argparse: their errors have always been SpokenBenchErrors.
    speeds = list(option_value(args.speed, number_list(*SPEED_RANGE), "--speed"))
    volumes = list(option_value(args.volume, number_list(0, VOLUME_MAX, above=True), "--volume"))
    snr_values = option_value(args.snr, number_list(*SNR_RANGE_DB, extra=("clean", "none")), "--snr")
    snrs = [None if snr in ("clean", "none") else snr for snr in snr_values]
    chunks = (
        list(option_value(args.chunk_seconds, number_list(*CHUNK_SECONDS_RANGE), "--chunk-seconds"))
        if args.chunk_seconds.strip()
        else []
    )
    with opened(args.dir) as project:
        plan = plan_assembly(
            project.conn,
            _csv(args.orders) or ["original"],
            speeds,
            volumes,
            snrs,
            list(args.languages or ()) or None,
            _csv(args.voices),
            _csv(args.accents),
            not args.no_labels,
            args.tts,
            settings,
        )
        summary = plan.summary()
        if not args.json:
            print(f"{summary['to_assemble']} inputs to assemble, {summary['already_done']} already stored")
            for message in plan.missing[:10]:
                print(f"skipped: {message}")
            if len(plan.missing) > 10:
                print(f"skipped: … and {len(plan.missing) - 10} more (run `spokenbench synthesize` first)")
        if args.dry_run or not plan.jobs:
            if args.json:
                print_json({"plan": summary})
            return 0
        report = run_assembly(project, plan, chunks, settings, text_progress_bar())
    result = {
        "plan": summary,
        "assembled": report.assembled,
        "limited_inputs": report.limited_inputs,
        "seconds_of_audio": round(report.seconds_of_audio, 1),
        "skipped": report.skipped,
    }
    if args.json:
        print_json(result)
    else:
        print(
            f"assembled {report.assembled} inputs ({report.seconds_of_audio / 60:.1f} min of audio); "
            f"{report.limited_inputs} needed peak limiting"
        )
        for message in report.skipped[:20]:
            print(f"skipped: {message}")
        if report.skipped:
            print(
                f"{len(report.skipped)} input(s) not built: a source clip is missing or damaged; run "
                "`spokenbench check DIR --repair`, then `synthesize` and `assemble` again"
            )
    return 1 if report.skipped else 0
