"""Argument types every command uses, so each numeric or enumerated option has a documented range and a bad
value is refused by argparse with the option's name (exit code 2) before anything runs. The ranges are part of
the option's help text; see docs/reliability.md."""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from urllib.parse import urlsplit


def comma_list(text: str) -> tuple[str, ...]:
    """'a, b,,c' → ('a', 'b', 'c')."""
    return tuple(part.strip() for part in text.split(",") if part.strip())


def _finite(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"must be a finite number, not {text!r}")
    return value


def number(low: float | None = None, high: float | None = None, *, above: bool = False) -> Callable[[str], float]:
    """A finite float within [low, high] (or (low, high] with above=True)."""

    def parse(text: str) -> float:
        value = _finite(text)
        if low is not None and (value <= low if above else value < low):
            raise argparse.ArgumentTypeError(f"must be {'above' if above else 'at least'} {low:g}, not {text}")
        if high is not None and value > high:
            raise argparse.ArgumentTypeError(f"must be at most {high:g}, not {text}")
        return value

    parse.__name__ = "number"  # argparse names the type in its message
    return parse


def whole_number(low: int | None = None, high: int | None = None) -> Callable[[str], int]:
    """An integer within [low, high]."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
        if low is not None and value < low:
            raise argparse.ArgumentTypeError(f"must be at least {low}, not {text}")
        if high is not None and value > high:
            raise argparse.ArgumentTypeError(f"must be at most {high}, not {text}")
        return value

    parse.__name__ = "whole number"
    return parse


def number_list(low: float | None = None, high: float | None = None, *, above: bool = False, extra: tuple = ()):
    """A comma list of numbers in range; words in `extra` (such as 'clean') pass as they are (any case)."""
    one = number(low, high, above=above)
    words = {word.lower(): word for word in extra}

    def parse(text: str) -> tuple:
        values = []
        for part in comma_list(text):
            values.append(words[part.lower()] if part.lower() in words else one(part))
        if not values:
            raise argparse.ArgumentTypeError("give at least one value")
        return tuple(values)

    parse.__name__ = "list"
    return parse


def option_value(text: str, parse: Callable[[str], object], option: str):
    """Apply an option type inside a handler, its refusal as a SpokenBenchError naming the option (exit code 2):
    for options whose value was always checked there, so callers that catch those errors keep working."""
    from spokenbench.core.foundation.errors import SpokenBenchError

    try:
        return parse(text)
    except argparse.ArgumentTypeError as error:
        raise SpokenBenchError(f"{option}: {error}") from None


def http_url(text: str) -> str:
    """An http(s) URL with a host: anything else would make every request of a run fail."""
    parts = urlsplit(text.strip())
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise argparse.ArgumentTypeError(f"not an http(s) URL: {text!r} (e.g. http://127.0.0.1:8000/v1)")
    return text.strip()


def add_request_limits(parser: argparse.ArgumentParser) -> None:
    """The options every command that calls a remote service shares — `--concurrency`, `--rpm`, `--retries`,
    `--timeout` — declared once, so their range, default and help are the same in `rewrite`, `transcribe` and
    `evaluate` (docs/reliability.md)."""
    from spokenbench.core.jobs.remote import (  # asyncio, ssl: ~0.1 s
        DEFAULT_ATTEMPTS,
        DEFAULT_CONCURRENCY,
        DEFAULT_TIMEOUT_S,
        MAX_ATTEMPTS,
        MAX_CONCURRENCY,
        MAX_TIMEOUT_S,
    )

    parser.add_argument(
        "--concurrency",
        type=whole_number(1, MAX_CONCURRENCY),
        default=DEFAULT_CONCURRENCY,
        metavar="N",
        help=f"requests in flight to each provider (each ASR system), 1 to {MAX_CONCURRENCY} "
        f"(default {DEFAULT_CONCURRENCY})",
    )
    parser.add_argument(
        "--rpm",
        type=number(0, above=True),
        metavar="N",
        help="at most N requests per minute to each provider (N more than 0; default: no limit)",
    )
    parser.add_argument(
        "--retries",
        type=whole_number(1, MAX_ATTEMPTS),
        default=DEFAULT_ATTEMPTS,
        metavar="N",
        help=f"attempts per request on 429/5xx/timeouts/connection errors, 1 to {MAX_ATTEMPTS} "
        f"(default {DEFAULT_ATTEMPTS})",
    )
    parser.add_argument(
        "--timeout",
        type=number(0, MAX_TIMEOUT_S, above=True),
        default=DEFAULT_TIMEOUT_S,
        metavar="S",
        help=f"per-request timeout in seconds, more than 0 and at most {MAX_TIMEOUT_S:g} "
        f"(default {DEFAULT_TIMEOUT_S:g})",
    )


MAX_SEED = 2**63 - 1  # seeds are stored in SQLite (signed 64-bit) and given to numpy (non-negative)
seed = whole_number(0, MAX_SEED)
seed.__name__ = "seed"


def language_code(text: str) -> str:
    """A known language code (core/domain/languages.py), in its canonical lower-case form."""
    from spokenbench.core.domain.languages import normalize_language

    try:
        return normalize_language(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


language_code.__name__ = "language code"


def language_list(text: str) -> tuple[str, ...]:
    """A comma list of known language codes."""
    codes = tuple(dict.fromkeys(language_code(part) for part in comma_list(text)))
    if not codes:
        raise argparse.ArgumentTypeError("give at least one language code")
    return codes


language_list.__name__ = "language list"


def choice_list(choices: tuple[str, ...]) -> Callable[[str], tuple[str, ...]]:
    """A comma list whose every entry is one of `choices`."""

    def parse(text: str) -> tuple[str, ...]:
        values = comma_list(text)
        unknown = [value for value in values if value not in choices]
        if unknown:
            raise argparse.ArgumentTypeError(f"unknown {', '.join(unknown)}; use {', '.join(choices)}")
        if not values:
            raise argparse.ArgumentTypeError(f"give at least one of {', '.join(choices)}")
        return tuple(dict.fromkeys(values))

    parse.__name__ = "list"
    return parse


def short_text(max_chars: int) -> Callable[[str], str]:
    """Non-empty text of at most `max_chars` characters, without control characters (names, notes, edits):
    text that would otherwise be stored and printed as it is."""

    def parse(text: str) -> str:
        value = text.strip()
        if not value:
            raise argparse.ArgumentTypeError("must not be empty")
        if len(value) > max_chars:
            raise argparse.ArgumentTypeError(f"is {len(value):,} characters long; at most {max_chars:,} are accepted")
        bad = next((c for c in value if (ord(c) < 32 and c not in "\t\n") or 0xD800 <= ord(c) <= 0xDFFF), None)
        if bad is not None:
            raise argparse.ArgumentTypeError(f"contains the control or invalid character U+{ord(bad):04X}")
        return value

    parse.__name__ = "text"
    return parse
