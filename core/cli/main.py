"""`spokenbench`: the headless runner. Each command family lives in its own module exposing
`register(subparsers)`; a handler returns an exit code (or None for 0). User errors become one clear
message and exit code 2; nothing prints a traceback unless SPOKENBENCH_DEBUG=1."""

from __future__ import annotations

import argparse
import gc
import importlib
import os
import signal
import sys
import threading

from spokenbench.core import __version__
from spokenbench.core.cli.commands import COMMANDS
from spokenbench.core.foundation.errors import Cancelled, SpokenBenchError

EXIT_USER_ERROR = 2
EXIT_INTERNAL_ERROR = 1
EXIT_CANCELLED = 130


def command_named(argv: list[str]) -> str | None:
    """The command argv runs: its first word that is not an option (the top level takes no option values)."""
    return next((word for word in argv if not word.startswith("-")), None)


class _Parser(argparse.ArgumentParser):
    """argparse's parser, printing a value that is not UTF-8 (bytes such as $'\\xff', lone surrogates in Python)
    as \\xff instead of failing to print it. Every command's parser is one (subparsers take their parent's class)."""

    def _print_message(self, message, file=None):
        if message:
            message = os.fsencode(message).decode("utf-8", "backslashreplace")
        super()._print_message(message, file)


def build_parser(argv: list[str] | None = None) -> argparse.ArgumentParser:
    """The whole parser (argv None), or one for `argv`: only the module of the command it names is imported,
    every other command is listed with its help from the command table. `--help` imports no command module."""
    parser = _Parser(
        prog="spokenbench",
        description="Build and audit spoken multiple-choice benchmarks (headless runner of SpokenBench Studio).",
    )
    parser.add_argument("--version", action="version", version=f"spokenbench {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    parser.command_parsers = subparsers.choices  # each command's own parser, by name
    wanted = None if argv is None else COMMANDS.get(command_named(argv), (None,))[0]
    registered: set[str] = set()
    for name, (module_name, summary) in COMMANDS.items():
        if name in registered:
            continue
        if argv is None or module_name == wanted:
            before = set(subparsers.choices)
            importlib.import_module(f"spokenbench.core.cli.{module_name}").register(subparsers)
            registered |= set(subparsers.choices) - before
        else:
            subparsers.add_parser(name, help=summary)  # listed; parsed only when named (then it is complete)
            registered.add(name)
    return parser


# Commands that start no job: they skip importing core.jobs.registry (asyncio, ssl, the store: ~0.1 s of a `spokenbench
# metrics` run) just to record the command a job would be resumed with.
# tests/core/metrics/test_metrics_startup.py checks that these commands indeed never import core.jobs.registry.
JOBLESS_COMMANDS = frozenset({"metrics", "report", "info"})


def main(argv: list[str] | None = None) -> int:
    """Run one command. Without `argv` (sys.argv read) this call is the program — the console script, `python -m`
    — and the process exits when it returns: what the command made and imported is then frozen out of the cyclic
    collector, whose passes during the interpreter's exit would traverse it all (about 0.03-0.06 s of CPU after a
    demo build). Every file and connection is closed by then, so nothing waits on a collection to be finished."""
    if argv is not None:
        return _run_command(list(argv))
    try:
        return _run_command(sys.argv[1:])
    finally:
        gc.freeze()


def _run_command(argv: list[str]) -> int:
    parser = build_parser(argv)
    args = parser.parse_args(argv)
    undecodable = undecodable_argument(parser, args)
    if undecodable is not None:  # before anything stores it (a job's command, a speaker's name, a run's name)
        print(f"error: {undecodable}", file=sys.stderr)
        return EXIT_USER_ERROR
    if command_named(argv) in JOBLESS_COMMANDS:
        return _run_handler(args)
    previous_sigterm = _stop_on_sigterm_as_on_ctrl_c()
    try:
        return _run_job_command(argv, args)
    finally:
        if previous_sigterm is not None:
            signal.signal(signal.SIGTERM, previous_sigterm)


def _run_job_command(argv: list[str], args: argparse.Namespace) -> int:
    from spokenbench.core.jobs.registry import (
        set_invocation,  # not before: `--help` and usage errors need no job machinery
    )

    set_invocation(argv)  # every job this command starts can be resumed with the same command
    previous_sigint = _keep_paid_answers_on_ctrl_c()
    try:
        return _run_handler(args)
    finally:
        set_invocation(None)
        if previous_sigint is not None:
            signal.signal(signal.SIGINT, previous_sigint)


def _keep_paid_answers_on_ctrl_c():
    """Ctrl+C during a job's loop stops the job as a cancel does: at once, but for requests already out to a paid
    service (a model, a TTS or ASR service), whose answers are waited for and stored, since the provider bills
    them anyway and a resume would pay again (core.jobs.loop.stop_on_interrupt). It says so on stderr; a
    second Ctrl+C abandons them, and one more interrupts at once. Outside a job's loop, Ctrl+C interrupts at
    once, as always. Returns the handler to restore, or None where none was set (not the main thread, or SIGINT
    ignored: a background job)."""
    if threading.current_thread() is not threading.main_thread():
        return None
    if signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
        return None
    return signal.signal(signal.SIGINT, lambda signum, frame: _interrupt_keeping_paid_answers())


def _stop_on_sigterm_as_on_ctrl_c():
    """A service manager, `timeout` or `kill` stops a run with SIGTERM: turn it into the SIGINT of a Ctrl-C, so the
    run stops the same clean way (answers kept, claims released, job marked cancelled, exit code 130) — also in a
    process started with SIGINT ignored, as a shell starts background jobs. Returns the handler to restore, or
    None where no handler can be set (not the main thread)."""
    if threading.current_thread() is not threading.main_thread():
        return None

    def as_ctrl_c(signum, frame):
        on_ctrl_c = signal.getsignal(signal.SIGINT)
        if callable(on_ctrl_c):  # ours (_keep_paid_answers_on_ctrl_c), Python's, or asyncio's
            on_ctrl_c(signal.SIGINT, frame)
            return
        _interrupt_keeping_paid_answers()  # SIGINT ignored (a background job: `cmd &`, nohup): SIGTERM still stops

    return signal.signal(signal.SIGTERM, as_ctrl_c)


def _interrupt_keeping_paid_answers() -> None:
    """Raise KeyboardInterrupt, unless a job loop runs in this process (core.jobs.loop.stop_on_interrupt): then
    it is asked to stop — and the user told when it waits for answers to requests already sent. Runs in a signal
    handler."""
    loop = sys.modules.get("spokenbench.core.jobs.loop")  # imported by every command that runs a job's loop
    said = loop.stop_on_interrupt() if loop is not None else None
    if said is None:
        raise KeyboardInterrupt
    if said:  # os.write, not print: the main thread this runs on may be inside a write to stderr (the progress bar)
        os.write(2, f"\n{said}\n".encode(errors="replace"))


def undecodable_argument(parser: argparse.ArgumentParser, args: argparse.Namespace) -> str | None:
    """A message for the first argument that is not valid UTF-8 (bytes such as $'\\xff' reach Python as lone
    surrogates): such text can be neither stored in the project nor printed, so every command refuses it up front,
    naming the option — free text and file names alike."""
    names = {}
    command = getattr(parser, "command_parsers", {}).get(getattr(args, "command", None))
    for action in command._actions if command is not None else []:
        names[action.dest] = action.option_strings[-1] if action.option_strings else (action.metavar or action.dest)
    for dest, value in vars(args).items():
        for text in value if isinstance(value, (list, tuple)) else [value]:
            if isinstance(text, (str, os.PathLike)) and any(0xD800 <= ord(c) <= 0xDFFF for c in os.fspath(text)):
                shown = os.fsencode(text).decode("utf-8", "backslashreplace")
                return (
                    f"argument {names.get(dest, dest)}: '{shown}' is not valid UTF-8; give the text in UTF-8 "
                    "(for a file name: rename the file)"
                )
    return None


def _run_handler(args) -> int:
    try:
        code = args.handler(args)
        sys.stdout.flush()  # here, not at exit: a reader gone by then is a BrokenPipeError the interpreter prints
    except SpokenBenchError as error:
        print(f"error: {error}", file=sys.stderr)
        return EXIT_USER_ERROR
    except Cancelled as cancelled:
        print(str(cancelled) or "cancelled; everything reported saved is kept", file=sys.stderr)
        return EXIT_CANCELLED
    except BrokenPipeError:
        # The reader went away (`spokenbench … | head`): stop quietly, as Unix tools do.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except KeyboardInterrupt:
        print("\ninterrupted; everything reported saved is kept", file=sys.stderr)
        return EXIT_CANCELLED
    except Exception as error:  # a bug: say so briefly, keep the traceback for those who ask
        # imported here, not at the top: every command's start-up would pay for them (sqlite3, linecache)
        import traceback

        from spokenbench.core.foundation.environment_errors import explain_environment_error

        if os.environ.get("SPOKENBENCH_DEBUG"):
            traceback.print_exc()
        from spokenbench.core.store.stored_values import explain_failure

        project = getattr(args, "dir", None)
        explained = explain_failure(error, project) or explain_environment_error(error, project)
        if explained is not None:  # not a bug: another program's rows, a damaged database, a full disk, …
            print(f"error: {explained}", file=sys.stderr)
            return EXIT_USER_ERROR
        print(
            f"internal error: {type(error).__name__}: {error}\n"
            "This is a bug in spokenbench. Re-run with SPOKENBENCH_DEBUG=1 to see the traceback.",
            file=sys.stderr,
        )
        return EXIT_INTERNAL_ERROR
    return int(code or 0)


if __name__ == "__main__":
    sys.exit(main())
