"""Reading and writing items. Importers hand over fully validated `Item`s; this module only stores them."""

from __future__ import annotations

import json
import sqlite3
import time
import uuid
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

from spokenbench.core.domain.items import Item, Option
from spokenbench.core.foundation.processes import owner_tag, tagged_owner_alive
from spokenbench.core.store.database import is_read_only, read_only_error, transaction, utc_now

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
    cursor = conn.cursor()
    cursor.row_factory = None  # plain tuples, unpacked in ITEM_COLUMNS' order: a plan reads 100,000s of items
    options_by_item: dict[int, list[Option]] = {}
    option_rows = cursor.execute(
        f"SELECT item_id, letter, text, orientation FROM options "
        f"WHERE item_id IN (SELECT id FROM items WHERE {where}) ORDER BY item_id, position",
        params,
    )
    for item_id, letter, text, orientation in option_rows:  # read whole before the cursor runs the items' query
        options_by_item.setdefault(item_id, []).append(Option(letter, text, orientation))
    rows = cursor.execute(f"SELECT {ITEM_COLUMNS} FROM items WHERE {where} ORDER BY {order}", params)
    for (
        item_id, source, source_id, language, kind, subject, subject_category, cultural_label, category, question,
        answer, extra_json,
    ) in rows:  # fmt: skip
        yield (
            item_id,
            Item(
                source=source,
                source_id=source_id,
                language=language,
                question=question,
                options=tuple(options_by_item.get(item_id, ())),
                answer=answer,
                kind=kind,
                subject=subject,
                subject_category=subject_category,
                cultural_label=cultural_label,
                category=category,
                extra=json.loads(extra_json) if extra_json else {},
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


# --- Import staging ---------------------------------------------------------------------------------------------
# A large import is written in batches to a throwaway SQLite file next to the project, without the project's write
# lock, then copied into the project in one short transaction. A kill before that transaction's commit leaves the
# project unchanged; a kill after it leaves the whole import. A leftover staging file is never read again: it is
# only disk space, removed by the next import (`remove_stale_staging_files`).
#
# The staging file holds `imports`, `items` and `options` created from the project's own CREATE TABLE statements,
# so every staged row passes exactly the project's CHECK, NOT NULL, foreign-key and within-import UNIQUE rules while
# it is staged. The copy then skips re-evaluating CHECKs and foreign keys row by row (they cost more than half the
# locked time): ids are shifted by one offset per table, which keeps every staged reference pointing at its staged
# parent. UNIQUE constraints against rows already in the project are still enforced by the copy.

STAGING_PREFIX = ".import-staging"
STAGED_TABLES = ("imports", "items", "options")  # parents first
# the columns the copy carries over; ids and the parents' ids they reference are shifted, created_at is the copy's
_ITEM_COPY_COLUMNS = (
    "source, source_id, language, kind, subject, subject_category, cultural_label, category, question, answer, "
    "extra_json"
)


def remove_stale_staging_files(project_path: Path, max_foreign_age_s: float = 86_400) -> int:
    """Delete staging files whose importing process is gone (and those of unknown owners — another machine
    sharing the folder — untouched for a day). Returns how many were removed."""
    removed = 0
    for path in Path(project_path).glob(f"{STAGING_PREFIX}.*"):
        alive = tagged_owner_alive(path.name.removeprefix(STAGING_PREFIX + "."))
        try:
            if alive is False or (alive is None and time.time() - path.stat().st_mtime > max_foreign_age_s):
                path.unlink()
                removed += 1
        except FileNotFoundError:
            pass
    return removed


class ImportStaging:
    """The rows of one import, staged in their own SQLite file (no durability needed: the file is copied before
    anything relies on it and never trusted after a crash). Use as a context manager; the file is removed at exit."""

    def __init__(self, project_path: Path, project_conn: sqlite3.Connection):
        if is_read_only(project_conn):
            raise read_only_error(project_conn)
        token = uuid.uuid4().hex[:8]
        self.path = Path(project_path) / f"{STAGING_PREFIX}.{owner_tag()}.{token}.sqlite"
        schema = dict(
            project_conn.execute(
                f"SELECT name, sql FROM sqlite_master WHERE type = 'table' AND name IN ({','.join('?' * 3)})",
                STAGED_TABLES,
            ).fetchall()
        )
        self._conn = sqlite3.connect(self.path, isolation_level=None)
        self._conn.execute("PRAGMA journal_mode = OFF")
        self._conn.execute("PRAGMA synchronous = OFF")
        self._conn.execute("PRAGMA foreign_keys = ON")
        for table in STAGED_TABLES:
            self._conn.execute(schema[table])
        self.item_count = 0

    def add_import(self, file: str, format_name: str, sha256: str, item_count: int) -> int:
        return self._conn.execute(
            "INSERT INTO imports(file, format, sha256, item_count, created_at) VALUES (?, ?, ?, ?, ?)",
            (file, format_name, sha256, item_count, utc_now()),
        ).lastrowid

    def add_items(self, items: list[Item], import_id: int) -> None:
        """Stage one batch in one cheap, unsynced transaction of the staging file."""
        with transaction(self._conn):
            insert_items(self._conn, items, import_id)
        self.item_count += len(items)

    def close(self) -> None:
        self._conn.close()

    def remove(self) -> None:
        self.close()
        for path in (self.path, self.path.with_name(self.path.name + "-journal")):
            path.unlink(missing_ok=True)

    def __enter__(self) -> ImportStaging:
        return self

    def __exit__(self, *exc) -> None:
        self.remove()


def copy_staged_import(conn: sqlite3.Connection, staging: ImportStaging) -> list[int]:
    """Copy everything staged into the project in ONE transaction, the only time an import holds the write lock.
    Ids are offset past the current maxima inside that transaction, so concurrent writers never collide. Returns
    the new import ids in staging order. Raises sqlite3.IntegrityError (nothing copied) when another process
    stored conflicting items after validation."""
    staging.close()  # every batch is committed; from here the project connection reads the file
    foreign_keys = conn.execute("PRAGMA foreign_keys").fetchone()[0]
    conn.execute("ATTACH DATABASE ? AS staging", (str(staging.path),))
    try:
        # Both pragmas only apply outside a transaction; both were enforced on every row while it was staged.
        conn.execute("PRAGMA foreign_keys = OFF")
        conn.execute("PRAGMA ignore_check_constraints = ON")
        now = utc_now()
        with transaction(conn):
            item_offset = conn.execute("SELECT coalesce(max(id), 0) FROM main.items").fetchone()[0]
            import_offset = conn.execute("SELECT coalesce(max(id), 0) FROM main.imports").fetchone()[0]
            conn.execute(
                "INSERT INTO main.imports(id, file, format, sha256, item_count, created_at) "
                "SELECT id + ?, file, format, sha256, item_count, ? FROM staging.imports ORDER BY id",
                (import_offset, now),
            )
            conn.execute(
                f"INSERT INTO main.items(id, {_ITEM_COPY_COLUMNS}, import_id, created_at) "
                f"SELECT id + ?, {_ITEM_COPY_COLUMNS}, import_id + ?, ? FROM staging.items ORDER BY id",
                (item_offset, import_offset, now),
            )
            conn.execute(
                "INSERT INTO main.options(item_id, position, letter, text, orientation) "
                "SELECT item_id + ?, position, letter, text, orientation FROM staging.options "
                "ORDER BY item_id, position",
                (item_offset,),
            )
            staged_ids = [row[0] for row in conn.execute("SELECT id FROM staging.imports ORDER BY id")]
    finally:
        conn.execute("PRAGMA ignore_check_constraints = OFF")
        conn.execute(f"PRAGMA foreign_keys = {'ON' if foreign_keys else 'OFF'}")
        conn.execute("DETACH DATABASE staging")
    return [staged_id + import_offset for staged_id in staged_ids]


def item_languages(conn: sqlite3.Connection) -> list[str]:
    """The languages the project's items are in, sorted."""
    return [row[0] for row in conn.execute("SELECT DISTINCT language FROM items ORDER BY 1")]
