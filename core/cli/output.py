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


def print_table(rows: list[dict[str, Any]], columns: list[str] | None = None) -> None:
    """Left-aligned plain-text table; empty input prints nothing."""
    if not rows:
        return
    columns = columns or list(rows[0].keys())
    cells = [[str(row.get(col, "")) for col in columns] for row in rows]
    widths = [max(len(col), *(len(r[i]) for r in cells)) for i, col in enumerate(columns)]
    print("  ".join(col.ljust(w) for col, w in zip(columns, widths)).rstrip())
    for r in cells:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip())
