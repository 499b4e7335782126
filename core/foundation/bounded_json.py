"""JSON from files made by others, parsed within known bounds: the text's length, its nesting depth, how many
lists and objects it holds, and the size of its numbers are checked before or while parsing — so a crafted file
is a clear error, never a RecursionError, a ValueError from a 5,000-digit integer or gigabytes of small objects.

The checks before parsing work on the text with its strings blanked out (a bracket inside a string is text),
found by one regular expression; the depth scan then stops after at most 2 * `max_containers` brackets."""

from __future__ import annotations

import json
import math
import re

_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_BRACKET = re.compile(r"[\[\]{}]")
MAX_NUMBER_CHARS = 40  # digits of an integer, characters of another number: any real value fits


class JsonBoundError(ValueError):
    """The text is not JSON within the bounds; the message says which bound or what is wrong."""


def loads_bounded(text: str, *, max_chars: int, max_depth: int, max_containers: int):
    """`json.loads(text)` after checking the bounds; numbers longer than MAX_NUMBER_CHARS, NaN and infinities are
    refused. Raises JsonBoundError saying what is wrong."""
    if len(text) > max_chars:
        raise JsonBoundError(f"is {len(text):,} characters long (at most {max_chars:,})")
    structure = _STRING.sub('""', text)
    depth = 0
    for seen, match in enumerate(_BRACKET.finditer(structure)):
        if seen > 2 * max_containers:
            break  # too many containers, counted below: the scan stays bounded
        depth += 1 if match.group() in "[{" else -1
        if depth > max_depth:
            raise JsonBoundError(f"is nested more than {max_depth} levels deep")
    containers = structure.count("[") + structure.count("{")
    if containers > max_containers:
        raise JsonBoundError(f"holds {containers:,} lists and objects (at most {max_containers:,})")
    try:
        return _DECODER.decode(text)
    except json.JSONDecodeError as error:
        raise JsonBoundError(f"is not valid JSON ({error.msg}, line {error.lineno} column {error.colno})") from None
    except RecursionError:  # the scan above rules this out; kept so no input can turn it into a traceback
        raise JsonBoundError(f"is nested more than {max_depth} levels deep") from None


def _bounded_int(digits: str) -> int:
    """Integers of up to MAX_NUMBER_CHARS digits: a field's own check says what range it needs (and names it);
    longer ones are refused here, before int() spends quadratic time or raises ValueError."""
    if len(digits.lstrip("-")) > MAX_NUMBER_CHARS:
        raise JsonBoundError(f"holds an integer of {len(digits.lstrip('-')):,} digits (at most {MAX_NUMBER_CHARS})")
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


_DECODER = json.JSONDecoder(parse_int=_bounded_int, parse_float=_bounded_float, parse_constant=_no_constant)
