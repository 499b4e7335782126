"""Reading and writing items. Importers hand over fully validated `Item`s; this module only stores them."""

from __future__ import annotations

import contextlib
import json
import sqlite3
import time
import uuid
from collections.abc import Iterable, Iterator, Sequence
from datetime import datetime
from pathlib import Path

from spokenbench.core.domain.items import Item, Option
from spokenbench.core.foundation.processes import STALE_FOREIGN_S, left_behind, owner_tag, tagged_owner_alive
from spokenbench.core.store.changes import count_change
from spokenbench.core.store.database import (
    is_read_only,
    read_only_error,
    skip_fsync_on_commit,
    transaction,
    utc_now,
)

ITEM_COLUMNS = "id, source, source_id, language, kind, subject, subject_category, cultural_label, category, question, answer, extra_json"


def record_import(conn: sqlite3.Connection, file: str, format_name: str, sha256: str, item_count: int) -> int:
    cursor = conn.execute(
        "INSERT INTO imports(file, format, sha256, item_count, created_at) VALUES (?, ?, ?, ?, ?)",
        (file, format_name, sha256, item_count, utc_now()),
    )
    return cursor.lastrowid


def insert_items(conn: sqlite3.Connection, items: Iterable[Item], import_id: int | None = None) -> list[int]:
    """Insert items with their options; the caller owns the transaction. Returns the new row ids. Items of an import
    (`import_id`) are counted here once (migration 14), items without one by the per-row trigger."""
    ids = _insert_item_rows(conn, items, import_id)
    if import_id is not None and ids:
        count_change(conn, "items")
    return ids


def _insert_item_rows(conn: sqlite3.Connection, items: Iterable[Item], import_id: int | None) -> list[int]:
    """The rows of `insert_items`, uncounted: also what a staging file (which has no change counters) holds."""
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
        for row_id, *key in conn.execute("SELECT id, source, source_id, language FROM visible_items")
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
        f"WHERE item_id IN (SELECT id FROM visible_items WHERE {where}) ORDER BY item_id, position",
        params,
    )
    for item_id, letter, text, orientation in option_rows:  # read whole before the cursor runs the items' query
        options_by_item.setdefault(item_id, []).append(Option(letter, text, orientation))
    rows = cursor.execute(f"SELECT {ITEM_COLUMNS} FROM visible_items WHERE {where} ORDER BY {order}", params)
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
        "SELECT id FROM visible_items WHERE source = ? AND source_id = ? AND language = ?",
        (source, source_id, language),
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
# lock, then copied into the project in short transactions, hidden until one last transaction publishes it
# (`copy_staged_import`). A kill before that commit leaves no row of the import visible (its hidden rows are
# removed by the next import or opening, `remove_abandoned_imports`); a kill after it leaves the whole import. A
# leftover staging file is never read again: it is only disk space, removed by the next import
# (`remove_stale_staging_files`).
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


def remove_stale_staging_files(project_path: Path, max_foreign_age_s: float = STALE_FOREIGN_S) -> int:
    """Delete staging files whose importing process is gone (and those of unknown owners — another machine
    sharing the folder — untouched for a day). Returns how many were removed."""
    removed = 0
    for path in Path(project_path).glob(f"{STAGING_PREFIX}.*"):
        try:
            if left_behind(path, path.name.removeprefix(STAGING_PREFIX + "."), max_foreign_age_s):
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
            _insert_item_rows(self._conn, items, import_id)
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


# Items per short copy transaction: ~2 ms of lock calm, a rating's wait for the lock under 25 ms at load 7 on 2
# cores (1,000 items: 10 ms calm, up to 51 ms loaded; tests/benchmarks/bench_studio.py). Hidden chunks commit
# without an fsync, so a chunk is mostly its writes into the WAL, which a loaded disk slows down.
IMPORT_CHUNK_ITEMS = 250
CHUNK_PAUSE_S = 0.003  # between chunks, so a writer polling for the lock (the app's, every 1 ms) gets it first
PENDING_OWNER_SUFFIX = ".import"


def copy_staged_import(conn: sqlite3.Connection, staging: ImportStaging) -> list[int]:
    """Copy everything staged into the project in short transactions of IMPORT_CHUNK_ITEMS items, hidden behind a
    pending_imports row (migration 14) until one last short transaction publishes the whole import at once: other
    writers (a rating in the app) wait at most for one chunk, and no reader ever sees part of an import. Ids are
    offset past the current maxima inside each transaction, so concurrent writers never collide. Returns the new
    import ids in staging order. Raises sqlite3.IntegrityError (nothing left behind) when another process stored
    conflicting items after validation; any failure removes the hidden rows copied so far."""
    staging.close()  # every batch is committed; from here the project connection reads the file
    foreign_keys = conn.execute("PRAGMA foreign_keys").fetchone()[0]
    synchronous = conn.execute("PRAGMA synchronous").fetchone()[0]
    conn.execute("ATTACH DATABASE ? AS staging", (str(staging.path),))
    import_ids: list[int] = []
    try:
        # Both pragmas only apply outside a transaction; both were enforced on every row while it was staged.
        conn.execute("PRAGMA foreign_keys = OFF")
        conn.execute("PRAGMA ignore_check_constraints = ON")
        # Hidden rows need no fsync of their own (in WAL mode): the publishing commit (synchronous as before) syncs
        # them all.
        skip_fsync_on_commit(conn)
        now = utc_now()
        with transaction(conn):
            import_offset = conn.execute("SELECT coalesce(max(id), 0) FROM main.imports").fetchone()[0]
            conn.execute(
                "INSERT INTO main.imports(id, file, format, sha256, item_count, created_at) "
                "SELECT id + ?, file, format, sha256, item_count, ? FROM staging.imports ORDER BY id",
                (import_offset, now),
            )
            conn.execute(
                "INSERT INTO main.pending_imports(import_id, owner, started_at) "
                "SELECT id + ?, ?, ? FROM staging.imports ORDER BY id",
                (import_offset, owner_tag() + PENDING_OWNER_SUFFIX, now),
            )
            import_ids = [row[0] + import_offset for row in conn.execute("SELECT id FROM staging.imports ORDER BY id")]
        first, last = conn.execute("SELECT min(id), max(id) FROM staging.items").fetchone()
        for low in range(first or 1, (last or 0) + 1, IMPORT_CHUNK_ITEMS):
            _let_other_writers_in()
            with transaction(conn):
                _copy_chunk(conn, low, low + IMPORT_CHUNK_ITEMS, import_offset, now)
        conn.execute(f"PRAGMA synchronous = {synchronous}")
        _let_other_writers_in()
        _publish(conn, import_ids)
    except BaseException:
        conn.execute(f"PRAGMA synchronous = {synchronous}")
        with contextlib.suppress(sqlite3.Error):
            remove_pending_imports(conn, import_ids)
        raise
    finally:
        conn.execute("PRAGMA ignore_check_constraints = OFF")
        conn.execute(f"PRAGMA foreign_keys = {'ON' if foreign_keys else 'OFF'}")
        conn.execute("DETACH DATABASE staging")
    return import_ids


def _copy_chunk(conn: sqlite3.Connection, low: int, high: int, import_offset: int, now: str) -> None:
    """The staged items with ids in [low, high) and their options, past the project's largest item id."""
    item_offset = conn.execute("SELECT coalesce(max(id), 0) FROM main.items").fetchone()[0] + 1 - low
    conn.execute(
        f"INSERT INTO main.items(id, {_ITEM_COPY_COLUMNS}, import_id, created_at) "
        f"SELECT id + ?, {_ITEM_COPY_COLUMNS}, import_id + ?, ? FROM staging.items "
        "WHERE id >= ? AND id < ? ORDER BY id",
        (item_offset, import_offset, now, low, high),
    )
    conn.execute(
        "INSERT INTO main.options(item_id, position, letter, text, orientation) "
        "SELECT item_id + ?, position, letter, text, orientation FROM staging.options "
        "WHERE item_id >= ? AND item_id < ? ORDER BY item_id, position",
        (item_offset, low, high),
    )


def _let_other_writers_in() -> None:
    """A pause between two of the copy's transactions, longer than the app's writer's poll for the lock (1 ms):
    without it the copy would take the lock again within microseconds of releasing it, and a rating could wait
    for every chunk."""
    time.sleep(CHUNK_PAUSE_S)


def _publish(conn: sqlite3.Connection, import_ids: list[int]) -> None:
    """Make the whole of the copied imports visible at once, in one short transaction. Their items are counted
    here, once (migration 14: rows that carry an import id do not bump the items counter row by row)."""
    with transaction(conn):
        marks = ",".join("?" * len(import_ids))
        conn.execute(f"DELETE FROM main.pending_imports WHERE import_id IN ({marks})", import_ids)
        count_change(conn, "items")


def remove_pending_imports(conn: sqlite3.Connection, import_ids: Iterable[int]) -> None:
    """Delete the hidden rows of unfinished imports, IMPORT_CHUNK_ITEMS items per short transaction, their
    imports and pending_imports rows last (an interrupted removal is finished by the next one). Foreign keys are
    off meanwhile: nothing but its options can refer to a hidden item (every reader lists visible_items), and
    checking each deleted item against every table that may refer to items would scan those without an index."""
    foreign_keys = conn.execute("PRAGMA foreign_keys").fetchone()[0]
    conn.execute("PRAGMA foreign_keys = OFF")
    try:
        for import_id in import_ids:
            after = 0
            while True:
                with transaction(conn):
                    ids = [
                        row[0]
                        for row in conn.execute(
                            "SELECT id FROM main.items WHERE id > ? AND import_id = ? ORDER BY id LIMIT ?",
                            (after, import_id, IMPORT_CHUNK_ITEMS),
                        )
                    ]
                    if not ids:
                        conn.execute("DELETE FROM main.pending_imports WHERE import_id = ?", (import_id,))
                        conn.execute("DELETE FROM main.imports WHERE id = ?", (import_id,))
                        break
                    marks = ",".join("?" * len(ids))
                    conn.execute(f"DELETE FROM main.options WHERE item_id IN ({marks})", ids)
                    conn.execute(f"DELETE FROM main.items WHERE id IN ({marks})", ids)
                after = ids[-1]
    finally:
        conn.execute(f"PRAGMA foreign_keys = {'ON' if foreign_keys else 'OFF'}")


def remove_abandoned_imports(conn: sqlite3.Connection, max_foreign_age_s: float = STALE_FOREIGN_S) -> int:
    """Remove the hidden rows of imports whose process is gone (those of unknown owners — another machine
    sharing the folder — once started a day ago). Returns how many imports were removed."""
    abandoned = []
    for import_id, owner, started_at in conn.execute("SELECT import_id, owner, started_at FROM pending_imports"):
        alive = tagged_owner_alive(owner)
        if alive is False or (alive is None and _age_s(started_at) > max_foreign_age_s):
            abandoned.append(import_id)
    remove_pending_imports(conn, abandoned)
    return len(abandoned)


def other_imports_pending(conn: sqlite3.Connection) -> bool:
    """Whether another live process is copying an import in (its rows hidden until it publishes them)."""
    mine = owner_tag() + PENDING_OWNER_SUFFIX
    return any(
        owner != mine and tagged_owner_alive(owner) is not False
        for (owner,) in conn.execute("SELECT owner FROM pending_imports")
    )


def _age_s(timestamp: str) -> float:
    """How long ago an import started; infinite for a time this program would not have written — not a time, or
    one in the future beyond clock skew (a shared project's row could otherwise hide its items for ever)."""
    try:
        age = time.time() - datetime.fromisoformat(timestamp).timestamp()
    except (TypeError, ValueError, OverflowError):
        return float("inf")
    return float("inf") if age < -_CLOCK_SKEW_S else age


_CLOCK_SKEW_S = 3600.0


def item_languages(conn: sqlite3.Connection) -> list[str]:
    """The languages the project's items are in, sorted."""
    return [row[0] for row in conn.execute("SELECT DISTINCT language FROM visible_items ORDER BY 1")]
