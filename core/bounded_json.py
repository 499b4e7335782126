"""JSON from files made by others, parsed within known bounds: the text's length, its nesting depth, how many
lists and objects it holds, and the size of its numbers are checked before or while parsing — so a crafted file
is a clear error, never a RecursionError, a ValueError from a 5,000-digit integer or gigabytes of small objects.

The checks before parsing work on the text with its strings blanked out (a bracket inside a string is text),
found by one regular expression; counting and the depth scan then cost at most `max_containers` steps."""

from __future__ import annotations

import json
import math
import re

_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_BRACKET = re.compile(r"[\[\]{}]")
MAX_NUMBER_CHARS = 40  # an int of up to 19 digits (SQLite's range) or a float's repr fits


class JsonBoundError(ValueError):
    """The text is not JSON within the bounds; the message says which bound or what is wrong."""


def loads_bounded(text: str, *, max_chars: int, max_depth: int, max_containers: int):
    """`json.loads(text)` after checking the bounds; integers longer than 19 digits, other numbers longer than
    MAX_NUMBER_CHARS, NaN and infinities are refused. Raises JsonBoundError saying what is wrong."""
    if len(text) > max_chars:
        raise JsonBoundError(f"is {len(text):,} characters long (at most {max_chars:,})")
    structure = _STRING.sub('""', text)
    containers = structure.count("[") + structure.count("{")
    if containers > max_containers:
        raise JsonBoundError(f"holds {containers:,} lists and objects (at most {max_containers:,})")
    depth = 0
    for match in _BRACKET.finditer(structure):
        depth += 1 if match.group() in "[{" else -1
        if depth > max_depth:
            raise JsonBoundError(f"is nested more than {max_depth} levels deep")
    try:
        return json.loads(text, parse_int=_bounded_int, parse_float=_bounded_float, parse_constant=_no_constant)
    except json.JSONDecodeError as error:
        raise JsonBoundError(f"is not valid JSON ({error.msg}, line {error.lineno} column {error.colno})") from None
    except RecursionError:  # the scan above rules this out; kept so no input can turn it into a traceback
        raise JsonBoundError(f"is nested more than {max_depth} levels deep") from None


def _bounded_int(digits: str) -> int:
    if len(digits.lstrip("-")) > 19:
        raise JsonBoundError(f"holds an integer of {len(digits.lstrip('-')):,} digits (at most 19)")
    return int(digits)


def _bounded_float(literal: str) -> float:
    if len(literal) > MAX_NUMBER_CHARS:
        raise JsonBoundError(f"holds a number written with {len(literal):,} characters (at most {MAX_NUMBER_CHARS})")
    value = float(literal)
    if not math.isfinite(value):
        raise JsonBoundError(f"holds a number too large to represent ({literal})")
    return value


def _no_constant(name: str):
    raise JsonBoundError(f"holds {name}, which is not a number")
