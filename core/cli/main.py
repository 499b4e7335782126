"""`spokenbench`: the headless runner. Each command family lives in its own module exposing
`register(subparsers)`; a handler returns an exit code (or None for 0). User errors become one clear
message and exit code 2; nothing prints a traceback unless SPOKENBENCH_DEBUG=1."""

from __future__ import annotations

import argparse
import os
import sys
import traceback

from spokenbench.core import __version__
from spokenbench.core.environment_errors import explain_environment_error
from spokenbench.core.errors import Cancelled, SpokenBenchError
from spokenbench.core.jobs import set_invocation

EXIT_USER_ERROR = 2
EXIT_INTERNAL_ERROR = 1
EXIT_CANCELLED = 130


def _command_modules():
    # Imported here so `spokenbench --help` stays fast and one broken optional module names itself.
    from spokenbench.core.cli import (
        audio_commands,
        check_commands,
        evaluation_commands,
        jobs_commands,
        metrics_commands,
        pack_commands,
        project_commands,
        qc_commands,
        recording_commands,
    )

    return [
        project_commands,
        audio_commands,
        evaluation_commands,
        metrics_commands,
        qc_commands,
        jobs_commands,
        check_commands,
        pack_commands,
        recording_commands,
    ]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="spokenbench",
        description="Build and audit spoken multiple-choice benchmarks (headless runner of SpokenBench Studio).",
    )
    parser.add_argument("--version", action="version", version=f"spokenbench {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for module in _command_modules():
        module.register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    argv = sys.argv[1:] if argv is None else list(argv)
    args = parser.parse_args(argv)
    set_invocation(argv)  # every job this command starts can be resumed with the same command
    try:
        return _run_handler(args)
    finally:
        set_invocation(None)


def _run_handler(args) -> int:
    try:
        code = args.handler(args)
    except SpokenBenchError as error:
        print(f"error: {error}", file=sys.stderr)
        return EXIT_USER_ERROR
    except Cancelled:
        print("cancelled", file=sys.stderr)
        return EXIT_CANCELLED
    except BrokenPipeError:
        # The reader went away (`spokenbench … | head`): stop quietly, as Unix tools do.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except KeyboardInterrupt:
        print("\ninterrupted; everything reported saved is kept", file=sys.stderr)
        return EXIT_CANCELLED
    except Exception as error:  # a bug: say so briefly, keep the traceback for those who ask
        if os.environ.get("SPOKENBENCH_DEBUG"):
            traceback.print_exc()
        explained = explain_environment_error(error, getattr(args, "dir", None))
        if explained is not None:  # not a bug: a damaged database, a full disk, a file without permission
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
