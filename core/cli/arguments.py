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
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
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
    """A comma list of numbers in range; words in `extra` (such as 'clean') pass as they are."""
    one = number(low, high, above=above)

    def parse(text: str) -> tuple:
        values = []
        for part in comma_list(text):
            values.append(part if part in extra else one(part))
        if not values:
            raise argparse.ArgumentTypeError("give at least one value")
        return tuple(values)

    parse.__name__ = "list"
    return parse


def http_url(text: str) -> str:
    """An http(s) URL with a host: anything else would make every request of a run fail."""
    parts = urlsplit(text.strip())
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise argparse.ArgumentTypeError(f"not an http(s) URL: {text!r} (e.g. http://127.0.0.1:8000/v1)")
    return text.strip()
