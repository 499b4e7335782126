"""Reading and writing items. Importers hand over fully validated `Item`s; this module only stores them."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Iterator, Sequence

from spokenbench.core.items import Item, Option
from spokenbench.core.store.database import utc_now

ITEM_COLUMNS = "id, source, source_id, language, kind, subject, subject_category, cultural_label, category, question, answer, extra_json"


def record_import(conn: sqlite3.Connection, file: str, format_name: str, sha256: str, item_count: int) -> int:
    cursor = conn.execute(
        "INSERT INTO imports(file, format, sha256, item_count, created_at) VALUES (?, ?, ?, ?, ?)",
        (file, format_name, sha256, item_count, utc_now()),
    )
    return cursor.lastrowid


def insert_items(conn: sqlite3.Connection, items: Iterable[Item], import_id: int | None = None) -> list[int]:
    """Insert items with their options; the caller owns the transaction. Returns the new row ids."""
    now = utc_now()
    ids = []
    for item in items:
        cursor = conn.execute(
            "INSERT INTO items(source, source_id, language, kind, subject, subject_category, cultural_label, "
            "category, question, answer, extra_json, import_id, created_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                item.source,
                item.source_id,
                item.language,
                item.kind,
                item.subject,
                item.subject_category,
                item.cultural_label,
                item.category,
                item.question,
                item.answer,
                json.dumps(item.extra, ensure_ascii=False) if item.extra else None,
                import_id,
                now,
            ),
        )
        item_id = cursor.lastrowid
        conn.executemany(
            "INSERT INTO options(item_id, position, letter, text, orientation) VALUES (?, ?, ?, ?, ?)",
            [(item_id, pos, o.letter, o.text, o.orientation) for pos, o in enumerate(item.options)],
        )
        ids.append(item_id)
    return ids


def existing_items(conn: sqlite3.Connection, keys: set[tuple[str, str, str]]) -> dict[tuple[str, str, str], Item]:
    """Items already stored under any of the (source, source_id, language) keys."""
    matching_ids = [
        row_id
        for row_id, *key in conn.execute("SELECT id, source, source_id, language FROM items")
        if tuple(key) in keys
    ]
    found = {}
    for start in range(0, len(matching_ids), 500):
        batch = matching_ids[start : start + 500]
        marks = ",".join("?" * len(batch))
        for _, item in iter_items(conn, where=f"id IN ({marks})", params=tuple(batch)):
            found[(item.source, item.source_id, item.language)] = item
    return found


def iter_items(
    conn: sqlite3.Connection, where: str = "1", params: tuple = (), order: str = "id"
) -> Iterator[tuple[int, Item]]:
    """(row id, Item) pairs, options attached, streamed so large projects don't load at once."""
    rows = conn.execute(f"SELECT {ITEM_COLUMNS} FROM items WHERE {where} ORDER BY {order}", params)
    options_by_item: dict[int, list[Option]] = {}
    option_rows = conn.execute(
        f"SELECT item_id, letter, text, orientation FROM options "
        f"WHERE item_id IN (SELECT id FROM items WHERE {where}) ORDER BY item_id, position",
        params,
    )
    for item_id, letter, text, orientation in option_rows:
        options_by_item.setdefault(item_id, []).append(Option(letter, text, orientation))
    for row in rows:
        yield (
            row["id"],
            Item(
                source=row["source"],
                source_id=row["source_id"],
                language=row["language"],
                question=row["question"],
                options=tuple(options_by_item.get(row["id"], [])),
                answer=row["answer"],
                kind=row["kind"],
                subject=row["subject"],
                subject_category=row["subject_category"],
                cultural_label=row["cultural_label"],
                category=row["category"],
                extra=json.loads(row["extra_json"]) if row["extra_json"] else {},
            ),
        )


def items_in_languages(conn: sqlite3.Connection, languages: Sequence[str] | None = None) -> Iterator[tuple[int, Item]]:
    """The items of the given languages (all items when none are given), in id order: the language filter of
    listings and plans, without SQL in their code."""
    if not languages:
        return iter_items(conn)
    return iter_items(conn, where=f"language IN ({','.join('?' * len(languages))})", params=tuple(languages))


def item_id_by_key(conn: sqlite3.Connection, source: str, source_id: str, language: str) -> int | None:
    """The row id of the item a (source, source id, language) key names, or None when it was never imported."""
    row = conn.execute(
        "SELECT id FROM items WHERE source = ? AND source_id = ? AND language = ?", (source, source_id, language)
    ).fetchone()
    return row[0] if row else None


def item_part_text(conn: sqlite3.Connection, item_id: int, part: str) -> str | None:
    """The original text of one item part ('question' or 'option_<letter>'), or None when the item has no such
    part: what a rewrite of that part is checked against."""
    if part == "question":
        row = conn.execute("SELECT question FROM items WHERE id = ?", (item_id,)).fetchone()
    else:
        row = conn.execute(
            "SELECT text FROM options WHERE item_id = ? AND letter = ?", (item_id, part.removeprefix("option_"))
        ).fetchone()
    return row[0] if row else None


def option_letters(conn: sqlite3.Connection, item_id: int) -> list[str]:
    """An item's option letters in their original order."""
    return [
        row[0] for row in conn.execute("SELECT letter FROM options WHERE item_id = ? ORDER BY position", (item_id,))
    ]
