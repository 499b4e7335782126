"""Evaluation commands: evaluate, runs, reparse, parse, power. Their names and options are a contract.

Every numeric and enumerated option has a range, shown in its help and checked by argparse before anything
runs (exit code 2 with the option's name). Exit codes of `evaluate` (docs/evaluation.md):
0 every request answered; 2 a user error (bad option, missing key, rejected key, the run held by another
job without --wait); 3 incomplete: stopped at the budget, or requests left to an in-flight provider batch
(resume once collected); 4 every request of the session failed (nothing answered);
5 finished, but some requests failed (stored with their error; --resume retries them); 130 cancelled."""

from __future__ import annotations

import argparse
import string
import sys

from spokenbench.core.cli.arguments import (
    add_request_limits,
    comma_list,
    http_url,
    language_list,
    number,
    number_list,
    whole_number,
)
from spokenbench.core.cli.commands import add_command
from spokenbench.core.cli.output import print_json, print_table
from spokenbench.core.domain.items import MAX_OPTIONS, MIN_OPTIONS
from spokenbench.core.evaluation.adapters import GenerationParams
from spokenbench.core.evaluation.plans import FACTOR_FILTERS, PERMUTATION_STRATEGIES, VOICE_KINDS, PlanOptions
from spokenbench.core.evaluation.preparation import (
    MAX_OUTPUT_TOKENS,
    MAX_SEED,
    MAX_TEMPERATURE,
    MAX_THINKING_BUDGET,
    THINKING_WORDS,
    check_thinking,
)
from spokenbench.core.evaluation.presets import CONVENTIONS, Price
from spokenbench.core.evaluation.prompts import MODES, PROMPTS, SYSTEM_PROMPT_VARIANTS, prompt_output_tokens
from spokenbench.core.foundation.errors import InputError, InputProblem, SpokenBenchError
from spokenbench.core.foundation.progress import text_progress_bar
from spokenbench.core.jobs.remote import RetryPolicy, strip_url_credentials
from spokenbench.core.store import opened

EXIT_INCOMPLETE = 3  # the run is not complete: stopped at its budget (resume with a larger --budget), or
# requests left to a provider batch that may still answer them (resume once it is collected)
EXIT_ALL_FAILED = 4  # every request of this session failed: nothing was answered
EXIT_SOME_FAILED = 5  # the run went through, but some requests failed; --resume retries them
MAX_POWER_CONDITIONS = 1000
MIN_SIMULATIONS, MAX_SIMULATIONS = 10, 100_000  # fewer than 10 simulated benchmarks cannot estimate a power
MAX_QUESTIONS = 1_000_000


# Option types this module needs beyond core/cli/arguments.py (local, so that module stays shared).


def _number_strings(low: float | None = None, *, above: bool = False, extra: tuple[str, ...] = ()):
    """A comma list of numbers in range (or words in `extra`), kept as the text given: plan filters compare
    levels as text, and a run's identity stores them so."""
    check = number_list(low, above=above, extra=extra)

    def parse(text: str) -> tuple[str, ...]:
        check(text)
        return tuple(part.lower() if part.lower() in extra else part for part in comma_list(text))

    parse.__name__ = "list"
    return parse


def _choices(*choices: str):
    """A comma list whose every entry is one of `choices`."""

    def parse(text: str) -> tuple[str, ...]:
        values = comma_list(text)
        unknown = [value for value in values if value not in choices]
        if unknown or not values:
            raise argparse.ArgumentTypeError(f"use {', '.join(choices)}, not {text!r}")
        return values

    parse.__name__ = "list"
    return parse


def _open_fraction(text: str) -> float:
    """A number strictly between 0 and 1 (a power, a significance level, an accuracy)."""
    value = number(0, 1, above=True)(text)
    if value >= 1:
        raise argparse.ArgumentTypeError(f"must be below 1, not {text}")
    return value


_open_fraction.__name__ = "number"


def _unit_below_one(text: str) -> float:
    """A number in [0, 1)."""
    value = number(0, 1)(text)
    if value >= 1:
        raise argparse.ArgumentTypeError(f"must be below 1, not {text}")
    return value


_unit_below_one.__name__ = "number"


def _nonzero(text: str) -> float:
    value = number()(text)
    if value == 0:
        raise argparse.ArgumentTypeError("must not be 0")
    return value


_nonzero.__name__ = "number"


def _thinking(text: str) -> str:
    try:
        return check_thinking(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error).removeprefix("--thinking must be ")) from None


_thinking.__name__ = "thinking setting"


def _letters(text: str) -> str:
    """Answer letters: one distinct letter A-Z per option, MIN_OPTIONS to MAX_OPTIONS of them (any case)."""
    letters = text.strip().upper()
    if not letters or any(letter not in string.ascii_uppercase for letter in letters):
        raise argparse.ArgumentTypeError(f"letters A-Z only, one per option (e.g. ABCD), not {text!r}")
    repeated = sorted({letter for letter in letters if letters.count(letter) > 1})
    if repeated:
        raise argparse.ArgumentTypeError(f"each letter once (e.g. ABCD); {', '.join(repeated)} repeated in {text!r}")
    if not MIN_OPTIONS <= len(letters) <= MAX_OPTIONS:
        raise argparse.ArgumentTypeError(
            f"{MIN_OPTIONS} to {MAX_OPTIONS} letters, one per option (e.g. ABCD), not {text!r}"
        )
    return letters


_letters.__name__ = "letters"


def register(subparsers) -> None:
    p = add_command(
        subparsers,
        "evaluate",
        description="Evaluate one model on the project's items. Every request is cached by (model, parameters, "
        "prompt, audio sha256), so reruns and --resume never pay twice. Use a model 'simulated:PROFILE' "
        "(steady, order-sensitive, accent-sensitive) for an offline simulated listener.",
    )
    p.add_argument("dir", metavar="DIR", help="project folder")
    p.add_argument(
        "--model",
        required=True,
        metavar="PROVIDER:NAME",
        help="gemini:gemini-2.5-flash, openai:gpt-audio-mini, nvidia:gemma-3n-e4b, mistral:voxtral-small-latest, "
        "vllm:MODEL (with --base-url), simulated:PROFILE, local:smollm2-135m or local:PATH.gguf (llama.cpp on this "
        "machine, the local-llm extra; text or pipeline mode); presets in resources/models.json",
    )
    p.add_argument(
        "--base-url",
        type=http_url,
        metavar="URL",
        help="API endpoint, an http(s) URL (an OpenAI-compatible server, a proxy, a test stub)",
    )
    p.add_argument(
        "--convention",
        choices=CONVENTIONS,
        help="override how audio goes into the request (see docs/evaluation.md)",
    )
    p.add_argument(
        "--mode",
        required=True,
        choices=MODES,
        help="audio: end to end; pipeline: transcribe, then answer "
        "from text; text: original or rewritten text; audio+text-options: spoken question, written options",
    )
    p.add_argument("--prompt", required=True, choices=PROMPTS, help="prompt template in resources/prompts/")
    p.add_argument(
        "--system-prompt",
        default="separate",
        choices=SYSTEM_PROMPT_VARIANTS,
        help="instructions as a system message (default), inlined into the user message, or left out",
    )
    p.add_argument(
        "--orders",
        type=comma_list,
        metavar="ORDER,...",
        help="original, reversed, order-backward, token-backward or explicit permutations like CABD "
        "(default: audio modes take every assembled order, text modes 'original')",
    )
    p.add_argument(
        "--permutations",
        choices=PERMUTATION_STRATEGIES,
        help="add the Hearing-the-Order strategy: gold answer at each position, cyclic (n) or full (n!)",
    )
    p.add_argument(
        "--identifiers",
        choices=("yes", "no", "both"),
        default="yes",
        help="options with letters (yes), without (no: the model repeats the option text), or both",
    )
    p.add_argument(
        "--languages",
        type=language_list,
        metavar="CODE,...",
        help="only items in these languages (ISO 639-1 codes, e.g. en,zh,ko)",
    )
    p.add_argument("--accents", type=comma_list, metavar="ACCENT,...")
    p.add_argument("--voices", type=comma_list, metavar="VOICE,...")
    p.add_argument("--genders", type=_choices("female", "male"), metavar="female,male", help="female and/or male")
    p.add_argument(
        "--speeds", type=_number_strings(0, above=True), metavar="0.75,1.0,...", help="speed factors, more than 0"
    )
    p.add_argument(
        "--volumes", type=_number_strings(0, above=True), metavar="0.5,1.0,...", help="volume factors, more than 0"
    )
    p.add_argument(
        "--snr",
        type=_number_strings(extra=("clean",)),
        metavar="clean,20,...",
        help="noise levels in dB, any number ('clean' = none)",
    )
    p.add_argument(
        "--voice-source", type=_choices("direct", "cloned"), metavar="direct,cloned", help="direct and/or cloned"
    )
    p.add_argument(
        "--voice-kind",
        choices=VOICE_KINDS,
        default="original",
        help="audio modes: the original male and female voices (default), the gender-neutralized voices only "
        "(clips with a neutralization; the gender paper's Section 5, Table 4), or all; a neutralized clip keeps "
        "its source voice's gender, so the default keeps it out of the male-vs-female comparison",
    )
    p.add_argument("--kind", choices=("mcq", "gender-probe"), help="only this kind of item")
    p.add_argument(
        "--text",
        dest="text_source",
        choices=("original", "rewritten"),
        default="original",
        help="text modes: the imported text or the newest accepted spoken-readable rewrite",
    )
    p.add_argument(
        "--asr",
        metavar="self|PROVIDER:MODEL",
        default="self",
        help="pipeline mode: who transcribes: the evaluated model itself (default, as in BiasInEar 5.3) "
        "or a transcription model such as openai:whisper-1, or local:tiny.en (Whisper on this machine, the "
        "local-asr extra; what a local:NAME model needs)",
    )
    p.add_argument(
        "--asr-base-url",
        type=http_url,
        metavar="URL",
        help="pipeline mode: the transcription model's endpoint, an http(s) URL (default: --base-url when it has "
        "the same provider)",
    )
    p.add_argument("--limit", type=whole_number(1), metavar="N", help="only the first N items (N at least 1)")
    p.add_argument(
        "--option-count",
        type=whole_number(MIN_OPTIONS, MAX_OPTIONS),
        metavar="N",
        help=f"only questions with exactly N options ({MIN_OPTIONS} to {MAX_OPTIONS}; Hearing the Order: 4)",
    )
    p.add_argument(
        "--max-audio-seconds",
        type=number(0, above=True),
        metavar="S",
        help="audio modes: leave out a question whose input is longer than S seconds, S more than 0 (Hearing the "
        "Order: 180)",
    )
    p.add_argument(
        "--seed",
        type=whole_number(0, MAX_SEED),
        default=0,
        metavar="N",
        help="seed for gold-position shuffles and the simulated listener (0 or more; default 0)",
    )
    p.add_argument(
        "--thinking",
        type=_thinking,
        metavar="off|on|auto|N|LEVEL",
        help=f"Gemini thinking: off, on, auto, a token budget N (0 to {MAX_THINKING_BUDGET}; Gemini 2.5) or a level "
        f"({', '.join(THINKING_WORDS[3:])}; Gemini 3); default: the model's own",
    )
    p.add_argument(
        "--max-output-tokens",
        type=whole_number(1, MAX_OUTPUT_TOKENS),
        metavar="N",
        help=f"1 to {MAX_OUTPUT_TOKENS:,}; default 4096, or the prompt set's own (simple-evals: 1024); recorded "
        "with the run",
    )
    p.add_argument(
        "--temperature",
        type=number(0, MAX_TEMPERATURE),
        default=0.0,
        metavar="T",
        help=f"0 to {MAX_TEMPERATURE:g}; default 0 (recorded with the run)",
    )
    add_request_limits(p)
    p.add_argument(
        "--tpm",
        type=number(0, above=True),
        metavar="N",
        help="at most N (estimated) input tokens per minute (N more than 0)",
    )
    p.add_argument(
        "--budget",
        type=number(0, above=True),
        metavar="USD",
        help="stop before the run's total cost would exceed this (more than 0; exit code 3)",
    )
    for option, what in (
        ("--price-input", "input text tokens"),
        ("--price-audio-input", "input audio tokens"),
        ("--price-output", "output tokens"),
    ):
        p.add_argument(option, type=number(0), metavar="USD", help=f"override: USD per 1M {what} (0 or more)")
    p.add_argument("--resume", action="store_true", help="continue the newest run with the same settings")
    p.add_argument("--run", dest="run_id", type=whole_number(1), metavar="ID", help="continue this run (ID at least 1)")
    p.add_argument(
        "--wait",
        action="store_true",
        help="with --resume or --run: when another live job is working on the run, wait until it ends (a message "
        "on stderr), then continue it, sending only what is still missing (without --wait: exit code 2)",
    )
    p.add_argument("--name", help="run name (default: model, mode and prompt)")
    p.add_argument("--listener-profile", metavar="FILE.json", help="simulated listener profile(s) from a JSON file")
    p.add_argument("--dry-run", action="store_true", help="show the plan's counts and stop")
    p.add_argument("--json", action="store_true", help="print the plan and the result as JSON")
    batch = p.add_mutually_exclusive_group()
    batch.add_argument(
        "--batch",
        choices=("gemini", "openai"),
        help="submit the plan as provider batch jobs at half the price (results within 24 h), record them and "
        "return; then `spokenbench batches DIR --collect` (docs/evaluation.md, Large runs)",
    )
    batch.add_argument(
        "--batch-file",
        metavar="FILE",
        help="write the OpenAI batch-format request file (audio inline) for vLLM's run_batch or any compatible "
        "runner, and return; then `spokenbench import-results DIR RESULTS`",
    )
    p.set_defaults(handler=cmd_evaluate)

    p = add_command(subparsers, "runs", description="List the project's runs.")
    p.add_argument("dir", metavar="DIR")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(handler=cmd_runs)

    p = add_command(
        subparsers, "reparse", description="Parse every stored raw answer again (after a parser change); asks no model."
    )
    p.add_argument("dir", metavar="DIR")
    p.add_argument("--run", dest="run_id", type=whole_number(1), metavar="ID", help="only this run (ID at least 1)")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.set_defaults(handler=cmd_reparse)

    p = add_command(
        subparsers,
        "parse",
        description="Read raw_response (and optional option_order, options) per row of a JSONL/CSV/Parquet file; "
        "write the rows with prediction (presented letter) and parse_status (ok, failed, ambiguous, refusal) "
        "added, plus parse_detail, and mapped_option where option_order is given.",
    )
    p.add_argument("file", metavar="FILE", help="the answers table; - reads it from standard input")
    p.add_argument(
        "--out",
        required=True,
        metavar="FILE",
        help="file to write (.csv, .jsonl, .parquet); - writes CSV to standard output",
    )
    p.add_argument(
        "--letters",
        type=_letters,
        default=None,
        help=f"answer letters when rows give neither options nor option_order: {MIN_OPTIONS} to {MAX_OPTIONS} distinct letters "
        "A-Z, one per option (default ABCD)",
    )
    p.add_argument("--json", action="store_true", help="print the counts as JSON")
    p.set_defaults(handler=cmd_parse)

    p = add_command(
        subparsers,
        "power",
        description="How many questions a benchmark needs to detect an accuracy, APES or kappa difference with the "
        "given power, estimated by simulation with the simulated listener's answer model (see docs/evaluation.md).",
    )
    p.add_argument("--metric", choices=("accuracy", "apes", "kappa"), default="accuracy")
    p.add_argument(
        "--effect",
        type=_nonzero,
        required=True,
        help="any number but 0 — accuracy: difference in points between the two levels (e.g. -3); apes/kappa: "
        "difference of the per-question mean between two listeners (e.g. 0.02)",
    )
    p.add_argument(
        "--power", type=_open_fraction, default=0.8, help="the power to reach, between 0 and 1 (default 0.8)"
    )
    p.add_argument(
        "--alpha", type=_open_fraction, default=0.05, help="significance level, between 0 and 1 (default 0.05)"
    )
    p.add_argument(
        "--conditions",
        type=whole_number(1, MAX_POWER_CONDITIONS),
        default=6,
        help=f"combinations of the other factors per level, 1 to {MAX_POWER_CONDITIONS} (default 6; apes and "
        "kappa need at least 2)",
    )
    p.add_argument(
        "--options",
        type=whole_number(MIN_OPTIONS, MAX_OPTIONS),
        default=4,
        help=f"options per question, {MIN_OPTIONS} to {MAX_OPTIONS} (default 4)",
    )
    p.add_argument(
        "--base-accuracy",
        type=_open_fraction,
        default=0.7,
        help="the simulated listener's accuracy, between 0 and 1 (default 0.7)",
    )
    p.add_argument(
        "--consistency",
        type=_unit_below_one,
        default=0.7,
        help="share of correctness common to a question's conditions, 0 or more and below 1 (default 0.7)",
    )
    p.add_argument(
        "--simulations",
        type=whole_number(MIN_SIMULATIONS, MAX_SIMULATIONS),
        default=200,
        help=f"simulated benchmarks per candidate size, {MIN_SIMULATIONS} to {MAX_SIMULATIONS:,} (default 200)",
    )
    p.add_argument(
        "--max-questions",
        type=whole_number(8, MAX_QUESTIONS),
        default=20000,
        help=f"the largest benchmark tried, 8 to {MAX_QUESTIONS:,} (default 20,000)",
    )
    p.add_argument(
        "--seed", type=whole_number(0, MAX_SEED), default=0, help="seed of the simulation (0 or more; default 0)"
    )
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(handler=cmd_power)


def _plan_options(args: argparse.Namespace) -> PlanOptions:
    filters = {}
    for factor, value in (
        ("language", args.languages),
        ("accent", args.accents),
        ("voice", args.voices),
        ("gender", args.genders),
        ("speed", args.speeds),
        ("volume", args.volumes),
        ("snr_db", args.snr),
        ("voice_source", args.voice_source),
    ):
        if value:
            filters[factor] = value
    assert set(filters) <= set(FACTOR_FILTERS)
    identifiers = {"yes": (True,), "no": (False,), "both": (True, False)}[args.identifiers]
    return PlanOptions(
        mode=args.mode,
        orders=args.orders or None,
        permutations=args.permutations,
        identifiers=identifiers,
        filters=filters,
        kind=args.kind,
        limit=args.limit,
        option_count=args.option_count,
        max_audio_s=args.max_audio_seconds,
        seed=args.seed,
        text_source=args.text_source,
        voices=args.voice_kind,
    )


def _settings(args: argparse.Namespace):
    from spokenbench.core.evaluation.preparation import RunSettings

    price = None
    if any(v is not None for v in (args.price_input, args.price_output, args.price_audio_input)):
        price = Price(
            input=args.price_input or 0.0, output=args.price_output or 0.0, audio_input=args.price_audio_input
        )
    return RunSettings(
        model=args.model,
        mode=args.mode,
        prompt=args.prompt,
        plan=_plan_options(args),
        params=GenerationParams(
            temperature=args.temperature,
            max_output_tokens=args.max_output_tokens or prompt_output_tokens(args.prompt),
            thinking=args.thinking,
            timeout_s=args.timeout,
        ),
        system_variant=args.system_prompt,
        base_url=args.base_url,
        convention=args.convention,
        asr=args.asr,
        asr_base_url=args.asr_base_url,
        concurrency=args.concurrency,
        rpm=args.rpm,
        tpm=args.tpm,
        budget_usd=args.budget,
        price=price,
        resume=args.resume,
        run_id=args.run_id,
        name=args.name,
        listener_profile_file=args.listener_profile,
        retry=RetryPolicy(max_attempts=max(1, args.retries)),
    )


def cmd_evaluate(args: argparse.Namespace) -> int:
    """Exit codes: see the module docstring."""
    from spokenbench.core.evaluation.preparation import prepare_evaluation

    if args.batch_file:
        from spokenbench.core.foundation.safe_files import check_output_file

        check_output_file(args.batch_file)  # before any work, a dry run's too: its folder exists, it is no folder
    with opened(args.dir) as project:
        prepared = prepare_evaluation(project, _settings(args))
        if args.dry_run:
            if args.json:
                print_json(prepared.as_dict())
            else:
                _print_preparation(prepared, file=sys.stdout)
            return 0
        if args.batch or args.batch_file:
            from spokenbench.core.cli.batch_commands import evaluate_in_batch

            return evaluate_in_batch(args, project, prepared, _print_preparation)
        if not args.json:
            _print_preparation(prepared, file=sys.stderr)
        from spokenbench.core.evaluation.runner import run_evaluation  # not for a dry run: parsing's patterns

        summary = run_evaluation(
            project, prepared, text_progress_bar(), wait=args.wait, on_wait=lambda note: print(note, file=sys.stderr)
        )
    if args.json:
        print_json(summary.as_dict())
    else:
        parse = ", ".join(f"{k} {v}" for k, v in sorted(summary.parse_counts.items())) or "-"
        print(
            f"run {summary.run_id} ({summary.model}, {summary.mode}): {summary.status}"
            + (f" ({summary.stop_reason})" if summary.stop_reason else "")
        )
        print(f"  answered {summary.answered}/{summary.total}, errors {summary.errors}, parsed: {parse}")
        print(
            f"  sent {summary.fresh_requests} request(s), {summary.cache_hits} from cache, {summary.retries} retr(y/ies); "
            f"{summary.requests_per_s:.1f} req/s; cost so far ${summary.cost_usd:.4f}"
        )
    if summary.reused_from_other_jobs:  # on stderr also with --json: the user should know who paid
        jobs = ", ".join(map(str, summary.reused_from_jobs))
        print(
            f"note: {summary.reused_from_other_jobs} answer(s) were reused from job(s) {jobs}, which sent the same "
            "request(s) at the same time; they were not sent again",
            file=sys.stderr,
        )
    if summary.waiting_on:  # on stderr also with --json: the run needs a resume once the batch is collected
        from spokenbench.core.cli.batch_commands import waiting_note

        print(waiting_note(summary.waiting_on, args.dir, summary.run_id), file=sys.stderr)
    if summary.stop_reason == "budget":
        if not args.json:
            print(
                "  stopped before exceeding the budget; continue with --resume and a larger --budget", file=sys.stderr
            )
        return EXIT_INCOMPLETE
    if summary.errors:
        _print_failures(summary, prepared)
    if summary.waiting_on:
        return EXIT_INCOMPLETE
    if summary.errors:
        return EXIT_ALL_FAILED if summary.all_failed else EXIT_SOME_FAILED
    return 0


def _print_failures(summary, prepared) -> None:
    """On stderr (also with --json): how many requests failed, by kind, with one message of each kind."""
    if summary.all_failed:
        print(f"error: every request failed, none was answered — {summary.failure_summary()}", file=sys.stderr)
    else:
        print(f"warning: {summary.failure_summary()}", file=sys.stderr)
    for kind, example in list(summary.error_examples.items())[:5]:
        print(f"  {kind}: {example}", file=sys.stderr)
    kinds = set(summary.error_kinds)
    if kinds & {"connection failed", "timed out"} and prepared.preset.base_url:
        print(
            f"  is the server at {strip_url_credentials(prepared.preset.base_url)} up and reachable? "
            f"(--timeout is {prepared.settings.params.timeout_s:g} s)",
            file=sys.stderr,
        )
    print("  failed requests are kept with their error; `--resume` retries them", file=sys.stderr)


def _print_preparation(prepared, file) -> None:
    """The prepared plan in words: what is asked, what is reused, what is sent and what it may cost."""
    summary = prepared.conditions
    print(
        f"plan: {summary['requests']} request(s) over {summary['items']} item(s), {summary['conditions']} condition(s)",
        file=file,
    )
    for factor, levels in summary["by_factor"].items():
        shown = ", ".join(f"{level} {count}" for level, count in list(levels.items())[:12])
        more = f", … ({len(levels)} levels)" if len(levels) > 12 else ""
        print(f"  {factor}: {shown}{more}", file=file)
    preset = prepared.preset
    model = f"model: {prepared.model_name} ({preset.convention}"
    if preset.base_url:
        model += f" at {strip_url_credentials(preset.base_url)}"
    if prepared.asr_preset is not None:
        model += f"; transcribed by {prepared.asr_preset.spec}"
    print(model + f"), mode {prepared.settings.mode}, prompt {prepared.settings.prompt}", file=file)
    if prepared.resume_run_id is None:
        print("run: a new run", file=file)
    else:
        print(
            f"run: continues run {prepared.resume_run_id} ({prepared.already_stored} of {prepared.request_count} "
            f"answered, ${prepared.spent_usd:.4f} spent)",
            file=file,
        )
    reused = [f"{prepared.already_cached} from the response cache"]
    if prepared.already_stored:
        reused.insert(0, f"{prepared.already_stored} already stored")
    if prepared.shared:
        reused.append(f"{prepared.shared} shared with an identical request")
    print(f"to send: {prepared.requests_to_send} model call(s) ({', '.join(reused)})", file=file)
    if prepared.simulated:
        cost = "free (simulated listener, offline)"
    elif prepared.estimated_cost_usd is None:
        cost = "not estimated (no price known)"
    else:
        cost = (
            f"at most ${prepared.estimated_cost_usd:.4f} (each call's worst case: 1.5 x the estimated input plus "
            f"{prepared.settings.params.max_output_tokens} output tokens); the input alone about "
            f"${prepared.estimated_input_cost_usd:.4f}"
        )
    budget = "" if prepared.settings.budget_usd is None else f"; budget ${prepared.settings.budget_usd:g}"
    print(f"cost: {cost}{budget}", file=file)
    for warning in prepared.warnings:
        print(f"  warning: {warning}", file=file)


def cmd_runs(args: argparse.Namespace) -> int:
    from spokenbench.core.evaluation.runner import list_runs

    with opened(args.dir) as project:
        runs = list_runs(project.conn)
    if args.json:
        print_json(runs)
        return 0
    if not runs:
        print("no runs yet (spokenbench evaluate DIR --model ... )")
        return 0
    rows = [
        {
            **r,
            "answers": f"{r['responses'] - r['errors']}/{r['total_requests'] or r['responses']}",
            "acc": "" if r["accuracy"] is None else f"{r['accuracy']:.3f}",
            "parse": f"ok {r['parsed_ok']} fail {r['parse_failed']} amb {r['ambiguous']} ref {r['refusals']}",
            "cost": f"${r['cost_usd']:.4f}",
            "status": r["status"] + (f" ({r['stop_reason']})" if r["stop_reason"] else ""),
        }
        for r in runs
    ]
    print_table(rows, ["id", "model", "mode", "prompt", "status", "answers", "errors", "acc", "parse", "cost", "name"])
    if any(r["status"] == "interrupted" for r in runs):
        print(
            "interrupted: stopped without finishing (killed, machine off); continue with the same `spokenbench "
            "evaluate` command and --resume (or --run ID), see `spokenbench jobs DIR`",
            file=sys.stderr,
        )
    return 0


def cmd_reparse(args: argparse.Namespace) -> int:
    from spokenbench.core.evaluation.reparse import reparse_project

    with opened(args.dir) as project:
        result = reparse_project(project, args.run_id)
    if args.json:
        print_json(result)
    else:
        print(
            f"re-parsed {result['responses']} stored answer(s) in {result['runs']} run(s) with parser version "
            f"{result['parser_version']}: {result['changed']} changed; "
            + ", ".join(f"{k} {v}" for k, v in sorted(result["parse_counts"].items()))
        )
    return 0


def cmd_parse(args: argparse.Namespace) -> int:
    from spokenbench.core.evaluation.reparse import parse_rows
    from spokenbench.core.foundation.safe_files import check_output_file
    from spokenbench.core.foundation.tables import read_table, write_table

    to_stdout = args.out == "-"
    if to_stdout and args.json:
        raise SpokenBenchError("--json cannot go with --out - (the table itself is written to standard output)")
    if not to_stdout:
        check_output_file(args.out, inputs=(args.file,))  # before reading: `parse F --out F` would destroy F
    table = read_table(args.file)
    if "raw_response" not in table.columns:
        raise InputError(InputProblem(table.file, "the column 'raw_response' is missing", column="raw_response"))
    rows, counts = parse_rows(table, args.letters)
    columns = list(
        dict.fromkeys(
            [
                *table.columns,
                "prediction",
                "parse_status",
                "parse_detail",
                *(["mapped_option"] if "option_order" in table.columns else []),
            ]
        )
    )
    write_table(rows, args.out, columns=columns)
    if args.json:
        print_json({"rows": len(rows), "out": args.out, "parse_counts": counts})
    else:  # beside a table on standard output, the note goes to standard error
        print(
            f"parsed {len(rows)} row(s) into {args.out}: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())),
            file=sys.stderr if to_stdout else sys.stdout,
        )
    return 0


def cmd_power(args: argparse.Namespace) -> int:
    from spokenbench.core.evaluation.power import PowerDesign, questions_needed

    design = PowerDesign(
        metric=args.metric,
        effect=args.effect,
        power=args.power,
        alpha=args.alpha,
        conditions=args.conditions,
        options=args.options,
        base_accuracy=args.base_accuracy,
        consistency=args.consistency,
        simulations=args.simulations,
        max_questions=args.max_questions,
        seed=args.seed,
        position_preference=(1.0,) * args.options,
    )
    result = questions_needed(design, text_progress_bar())
    if args.json:
        print_json(result.as_dict())
        return 0
    label = {"accuracy": "accuracy difference (points)", "apes": "APES difference", "kappa": "kappa difference"}[
        args.metric
    ]
    if result.questions is None:
        print(f"{label} {args.effect}: {result.note} (power {args.power}, alpha {args.alpha}) — simulated estimate")
        return 0
    print(
        f"{label} {args.effect} with power {args.power} at alpha {args.alpha}: about {result.questions} questions "
        f"(estimated power {result.achieved_power:.2f}; {args.conditions} condition(s) per level)"
    )
    print(
        f"  simulated listener: base accuracy {args.base_accuracy}, consistency {args.consistency}; "
        f"accuracy shift used {result.shift_points:+.1f} points"
    )
    print(f"  {result.note}")
    return 0
