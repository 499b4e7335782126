"""Printing data for people (aligned text) or scripts (--json), the one way every command does it."""

from __future__ import annotations

import json
import sys
from typing import Any


def print_json(data: Any) -> None:
    json.dump(data, sys.stdout, ensure_ascii=False, indent=2, sort_keys=False, default=_json_default)
    sys.stdout.write("\n")


def _json_default(value: Any) -> Any:
    # numpy scalars and similar objects expose .item(); anything else is stringified explicitly.
    if hasattr(value, "item"):
        return value.item()
    return str(value)


# Characters that would act on the terminal instead of showing: C0 and C1 controls (ESC starts colour and cursor
# sequences, CR overwrites the line), DEL, line separators, and the bidirectional overrides that reorder text.
_INVISIBLE = [*range(0x00, 0x20), *range(0x7F, 0xA0), 0x2028, 0x2029, *range(0x202A, 0x202F), *range(0x2066, 0x206A)]
_ESCAPES = {code: f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" for code in _INVISIBLE}


def printable(text: Any) -> str:
    """Text as it can be shown in a terminal: controls and bidi overrides as visible escapes (\\x1b, \\u202e)."""
    return str(text).translate(_ESCAPES)


def print_table(rows: list[dict[str, Any]], columns: list[str] | None = None) -> None:
    """Left-aligned plain-text table, every cell `printable`; empty input prints nothing."""
    if not rows:
        return
    columns = columns or list(rows[0].keys())
    cells = [[printable(row.get(col, "")) for col in columns] for row in rows]
    widths = [max(len(col), *(len(r[i]) for r in cells)) for i, col in enumerate(columns)]
    print("  ".join(col.ljust(w) for col, w in zip(columns, widths)).rstrip())
    for r in cells:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip())
