"""The one way to talk to a project's SQLite database: WAL so a GUI and a headless run can share it (a rollback
journal where the file system cannot share WAL's index), foreign keys on, a busy timeout instead of 'database is
locked', synchronous=FULL so a committed rating survives a power cut, and short explicit transactions."""

from __future__ import annotations

import contextlib
import datetime as _dt
import functools
import hashlib
import logging
import os
import random
import re
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path

from spokenbench.core.foundation.errors import ProjectError
from spokenbench.core.store.migrations import CURRENT_SCHEMA_DIGEST, MIGRATIONS, SCHEMA_VERSION

BUSY_TIMEOUT_MS = 15_000
# A connection that polls for the write lock (`poll_for_the_write_lock`): SQLite's own wait for at most this long,
# then `transaction()` tries again every POLL_INTERVAL_S until BUSY_TIMEOUT_MS have passed.
POLL_BUSY_TIMEOUT_MS = 5
POLL_INTERVAL_S = 0.001
# Stored in the SQLite header (PRAGMA application_id): says "this file is a SpokenBench project", so a foreign
# SQLite file named project.sqlite is refused instead of being converted.
PROJECT_APPLICATION_ID = 0x53424E43  # "SBNC"
_log = logging.getLogger("spokenbench.store")
# A project's schema may come from anyone: its triggers, views, checks and defaults may call only SQLite's harmless
# functions (SQLite's advice for database files from others; `schema_objects_problem` refuses a schema that is not
# ours before anything is written, this also covers a file changed after that check)
UNTRUSTED_SCHEMA = "PRAGMA trusted_schema = OFF"
# SQLite's write-ahead log keeps its index in memory every process shares: the `-shm` file, sized and mapped. Some
# file systems cannot give that (WSL's view of a Windows drive, some network shares and FUSE file systems such as
# fusefat: the file cannot be sized, SQLITE_IOERR_SHM*). There a project uses a rollback journal instead: the same
# durability (synchronous FULL), but a write waits while another connection reads. Folders found so in this process:
_ROLLBACK_JOURNAL_FOLDERS: set[str] = set()
WAL_PROBE_PREFIX = ".spokenbench-wal-probe"


# Control clips (core/qc/controls.py) are ordinary clips rows so that nothing a rater sees tells them apart; every
# query that feeds screening, sampling, evaluation, voice checks, exports or Table 3 leaves them out with this
# condition on the clip id ("c.id {NOT_A_CONTROL}").
NOT_A_CONTROL = "NOT IN (SELECT clip_id FROM control_clips)"


class ProjectConnection(sqlite3.Connection):
    """A project's connection; it remembers whether its transactions poll for the write lock."""

    polls_for_the_write_lock = False


def utc_now() -> str:
    """Timestamps are ISO-8601 UTC strings: sortable, readable in exports, timezone-safe."""
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="milliseconds")


def is_writable(db_path: Path) -> bool:
    """Whether this process may change the project: its folder and database file are writable (on a read-only
    file system or without permission, the project is opened read-only instead of failing)."""
    db_path = Path(db_path)
    return os.access(db_path.parent, os.W_OK) and (not db_path.exists() or os.access(db_path, os.W_OK))


def _read_only_uri(db_path: Path) -> str:
    """A read-only URI; `immutable` where SQLite could not create the WAL's shared-memory file next to it."""
    uri = f"{Path(db_path).resolve().as_uri()}?mode=ro"
    wal_files_present = Path(f"{db_path}-shm").exists() and Path(f"{db_path}-wal").exists()
    if not os.access(Path(db_path).parent, os.W_OK) and not wal_files_present:
        uri += "&immutable=1"
    return uri


def skip_fsync_on_commit(conn: sqlite3.Connection) -> None:
    """Commit on this connection without an fsync (WAL's synchronous=NORMAL): for rows that need not survive a
    power cut, such as request claims, whose job would be dead and its claims stale all the same. With a rollback
    journal it stays FULL: there NORMAL could damage the file at a power cut."""
    if uses_wal(conn):
        conn.execute("PRAGMA synchronous = NORMAL")


def connect(db_path: Path, read_only: bool | None = None) -> sqlite3.Connection:
    """Open a connection with the project's pragmas. Autocommit mode: writes go through `transaction()`. A
    project that is not writable is opened read-only (`read_only=None` decides by the file system): reading
    works, and a write says why it cannot happen."""
    if read_only is None:
        read_only = not is_writable(db_path)
    try:
        if read_only:
            conn = sqlite3.connect(
                _read_only_uri(db_path), uri=True, isolation_level=None, timeout=BUSY_TIMEOUT_MS / 1000
            )
            conn.row_factory = sqlite3.Row
            conn.execute("PRAGMA query_only = 1")
            conn.execute("PRAGMA foreign_keys = ON")
            conn.execute(UNTRUSTED_SCHEMA)
            return conn
        conn, mode = connect_with_journal(Path(db_path))
    except sqlite3.DatabaseError as error:
        raise ProjectError(_open_failure(db_path, error)) from None
    if mode.lower() not in ("wal", "delete"):
        raise ProjectError(f"{db_path}: could not switch the database to WAL mode (got {mode!r})")
    conn.execute("PRAGMA foreign_keys = ON")
    conn.execute("PRAGMA synchronous = FULL")
    return conn


def _writable_connection(db_path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(db_path, isolation_level=None, timeout=BUSY_TIMEOUT_MS / 1000, factory=ProjectConnection)
    conn.row_factory = sqlite3.Row
    conn.execute(UNTRUSTED_SCHEMA)
    conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    return conn


def connect_with_journal(db_path: Path, make_connection=None) -> tuple[sqlite3.Connection, str]:
    """A writable connection in WAL mode, or with a rollback journal where this file system cannot share WAL's
    index. A file is opened in the mode its header says: a WAL file is read as it is (the common case costs
    nothing more) and switched to a rollback journal only where that first read cannot share the index; a file
    with a rollback journal keeps it (it is never switched back to WAL behind the back of a process that cannot
    use WAL: `spokenbench check DIR --use-wal` does it on request); a new file gets WAL where a scratch database in
    the folder shows WAL works. The header is only ever read through SQLite: a file descriptor of our own on the
    database, once closed, would drop every lock this process's connections hold on it (POSIX locks).
    `make_connection`: a new connection to the file (the project's writable one by default; the verified-clips
    cache has its own)."""
    make_connection = make_connection or (lambda: _writable_connection(db_path))
    folder = os.path.realpath(db_path.parent)
    conn = make_connection()
    try:
        try:
            pages = conn.execute("PRAGMA page_count").fetchone()[0]  # a WAL file: sizes and maps the shared index
        except sqlite3.OperationalError as error:
            if not wal_index_unavailable(error):
                raise
            conn.close()
            _leave_wal(db_path)
            _ROLLBACK_JOURNAL_FOLDERS.add(folder)
            conn = make_connection()
            return conn, conn.execute("PRAGMA journal_mode").fetchone()[0]
        if pages == 0:  # a new database
            wal = folder not in _ROLLBACK_JOURNAL_FOLDERS and _wal_works_in(folder)
            if not wal:
                _ROLLBACK_JOURNAL_FOLDERS.add(folder)
            return conn, conn.execute(f"PRAGMA journal_mode = {'WAL' if wal else 'DELETE'}").fetchone()[0]
        return conn, conn.execute("PRAGMA journal_mode").fetchone()[0]
    except BaseException:
        conn.close()
        raise


def wal_index_unavailable(error: BaseException) -> bool:
    """Whether SQLite failed because the file system cannot share WAL's index (the `-shm` file)."""
    return (getattr(error, "sqlite_errorname", "") or "").startswith("SQLITE_IOERR_SHM")


ROLLBACK_JOURNAL_NOTE = (
    "the project keeps a rollback journal, as it was opened where SQLite's write-ahead log cannot work (WSL's "
    "Windows drives, some network shares and FUSE file systems): as safe, but a write waits while another program "
    "reads it. On a local disk, `spokenbench check DIR --use-wal` switches it back"
)


def journal_kind(conn: sqlite3.Connection) -> str:
    """'wal', 'rollback', or 'unknown': how the project's file is kept, as this connection reads it. A read-only
    connection that reads the file as immutable (`_read_only_uri`) cannot tell: it never uses a journal."""
    if uses_wal(conn):
        return "wal"
    file = database_file(conn)
    if not file:
        return "unknown"
    if is_read_only(conn) and "immutable=1" in _read_only_uri(Path(file)):
        return "unknown"
    return "rollback"


def _wal_works_in(folder: str) -> bool:
    """Whether a WAL database works in this folder: a scratch one is made, written and removed (a few ms, only for
    a new project or one that has a rollback journal)."""
    probe = Path(folder) / f"{WAL_PROBE_PREFIX}.{os.getpid()}.{os.urandom(4).hex()}.sqlite"
    try:
        with contextlib.closing(sqlite3.connect(probe, isolation_level=None)) as conn:
            conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("PRAGMA synchronous = OFF")
            conn.execute("CREATE TABLE probe(x)")
        return True
    except sqlite3.OperationalError as error:
        if wal_index_unavailable(error):
            return False
        raise
    finally:
        for suffix in ("-wal", "-shm", "-journal", ""):
            with contextlib.suppress(OSError):
                os.unlink(f"{probe}{suffix}")


def _leave_wal(db_path: Path) -> None:
    """Switch a WAL database to a rollback journal where WAL's shared index cannot be made: in exclusive locking
    mode SQLite keeps the index in its own memory, so it can still read the log, copy what it holds into the file
    and remove it — nothing committed is lost. Several processes may try at once: each tries without waiting (one
    that waited would keep the shared lock the others need) and, while another has the file, again a few ms later,
    for BUSY_TIMEOUT_MS in all; one that finds it switched already has nothing to do."""
    deadline = time.monotonic() + BUSY_TIMEOUT_MS / 1000
    while True:
        conn = sqlite3.connect(db_path, isolation_level=None, timeout=0)
        try:
            conn.execute(UNTRUSTED_SCHEMA)
            conn.execute("PRAGMA locking_mode = EXCLUSIVE")
            if conn.execute("PRAGMA journal_mode").fetchone()[0].lower() != "wal":
                return  # switched by another process meanwhile
            conn.execute("PRAGMA journal_mode = DELETE").fetchone()
            _log.warning(
                f"note: {db_path.parent}: this file system cannot share SQLite's write-ahead log index, so the "
                "project now keeps a rollback journal: as safe, but a write waits while another program reads it"
            )
            return
        except sqlite3.OperationalError as error:
            if error.sqlite_errorcode & 0xFF != sqlite3.SQLITE_BUSY:
                raise
            if time.monotonic() >= deadline:
                raise ProjectError(
                    f"{db_path}: this file system cannot share SQLite's write-ahead log index, so the project must "
                    "switch to a rollback journal, which needs it to itself for a moment, and another program kept "
                    f"it open for {BUSY_TIMEOUT_MS // 1000} s; close the other programs using it and open it again"
                ) from None
        finally:
            conn.close()
        time.sleep(random.uniform(0.001, 0.02))


def switch_back_to_wal(db_path: Path) -> bool:
    """Put a project that keeps a rollback journal back in WAL mode (`check --use-wal`), where a scratch database
    shows WAL works and no other connection holds the file: True if it switched, False if it was in WAL mode
    already. A process that still had the file open where WAL cannot work switches it back to a rollback journal
    when it next reads it (its next write fails once), so this is done only when asked."""
    folder = os.path.realpath(db_path.parent)
    conn = sqlite3.connect(db_path, isolation_level=None, timeout=0)
    try:
        conn.execute(UNTRUSTED_SCHEMA)
        conn.execute("PRAGMA locking_mode = EXCLUSIVE")
        if conn.execute("PRAGMA journal_mode").fetchone()[0].lower() == "wal":
            return False
        if not _wal_works_in(folder):
            raise ProjectError(
                f"{db_path.parent}: this file system cannot share SQLite's write-ahead log index, so the project "
                "keeps its rollback journal here"
            )
        conn.execute("BEGIN EXCLUSIVE")  # nobody else may be reading or writing it now
        conn.execute("COMMIT")
        conn.execute("PRAGMA journal_mode = WAL").fetchone()
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except sqlite3.OperationalError as error:
        if error.sqlite_errorcode & 0xFF != sqlite3.SQLITE_BUSY:
            raise
        raise ProjectError(
            f"{db_path}: another program is using the project, so it was left with its rollback journal; close it "
            "and try again"
        ) from None
    finally:
        conn.close()
    _ROLLBACK_JOURNAL_FOLDERS.discard(folder)
    return True


def uses_wal(conn: sqlite3.Connection) -> bool:
    return conn.execute("PRAGMA main.journal_mode").fetchone()[0].lower() == "wal"


def is_read_only(conn: sqlite3.Connection) -> bool:
    return bool(conn.execute("PRAGMA query_only").fetchone()[0])


def database_file(conn: sqlite3.Connection) -> str:
    """The file of the connection's main database ('' for one in memory)."""
    return next((row[2] for row in conn.execute("PRAGMA database_list") if row[1] == "main"), "")


@contextlib.contextmanager
def read_snapshot(conn: sqlite3.Connection) -> Iterator[None]:
    """The reads inside see the database at one moment (a read transaction)."""
    conn.execute("BEGIN")
    try:
        yield
    except BaseException:
        _roll_back_keeping_the_error(conn)
        raise
    if conn.in_transaction:
        conn.execute("COMMIT")


def _roll_back_keeping_the_error(conn: sqlite3.Connection) -> None:
    """After a failure inside a transaction: SQLite has already rolled it back after some errors (a disk I/O error,
    a full disk), and a ROLLBACK then fails too; the error to report is the first."""
    if conn.in_transaction:
        with contextlib.suppress(sqlite3.Error):
            conn.execute("ROLLBACK")


def read_only_error(conn: sqlite3.Connection) -> ProjectError:
    file = database_file(conn)
    folder = Path(file).parent if file else "the project"
    return ProjectError(
        f"{folder} is open read-only (its folder or database is not writable), and this command changes the "
        "project; reading commands work. Copy the project somewhere writable, or make it writable, to change it."
    )


@contextlib.contextmanager
def transaction(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """BEGIN IMMEDIATE … COMMIT: the write lock is taken up front so two writers queue instead of failing
    halfway; any exception rolls everything back, so a caller never leaves half a change behind. On a
    read-only project it raises a ProjectError saying so before anything is attempted."""
    if is_read_only(conn):
        raise read_only_error(conn)
    polls = getattr(conn, "polls_for_the_write_lock", False)
    if polls:
        conn.execute(f"PRAGMA busy_timeout = {POLL_BUSY_TIMEOUT_MS}")
    try:
        _execute_while_busy(conn, "BEGIN IMMEDIATE")
        try:
            yield conn
        except BaseException:
            _roll_back_keeping_the_error(conn)
            raise
        try:
            _execute_while_busy(conn, "COMMIT")
        except BaseException:
            _roll_back_keeping_the_error(conn)
            raise
    finally:
        if polls:
            conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")


def poll_for_the_write_lock(conn: sqlite3.Connection) -> None:
    """Wait for another writer's lock in short polls instead of SQLite's back-off, which sleeps 1, 2, 5 … 100 ms
    at a time and so wakes up to 100 ms after the lock was released: a rating queued behind an import's copy
    waited for the copy plus that. For the app's writer thread, where a rating waits; never the UI thread. In WAL
    mode reads never wait, so the connection's busy timeout is simply short; with a rollback journal a read
    outside a transaction waits for a writer's commit, so there only `transaction()` polls."""
    if uses_wal(conn):
        conn.execute(f"PRAGMA busy_timeout = {POLL_BUSY_TIMEOUT_MS}")
    else:
        conn.polls_for_the_write_lock = True


def _execute_while_busy(conn: sqlite3.Connection, statement: str) -> None:
    """BEGIN IMMEDIATE or COMMIT, tried again while another connection holds the lock it needs, for
    BUSY_TIMEOUT_MS in all (a connection with SQLite's full busy timeout has already waited that long when it
    fails). A busy COMMIT leaves the transaction open, so trying again is what SQLite advises: with a rollback
    journal a commit waits for other connections' reads to end (in WAL mode it never does)."""
    deadline = time.monotonic() + BUSY_TIMEOUT_MS / 1000
    while True:
        try:
            conn.execute(statement)
            return
        except sqlite3.OperationalError as error:
            if error.sqlite_errorcode != sqlite3.SQLITE_BUSY or time.monotonic() >= deadline:
                raise
        time.sleep(POLL_INTERVAL_S)


def schema_version(conn: sqlite3.Connection) -> int:
    return conn.execute("PRAGMA user_version").fetchone()[0]


def check_not_damaged(conn: sqlite3.Connection, db_path: Path) -> None:
    """Refuse to go on with a database that fails SQLite's quick check (pages, indexes, records): nothing may be
    written into a damaged file — it would spread the damage and hide it. Done once per file and process (the
    check reads the whole file, ~5 ms per MB; the app opens a project on many threads)."""
    try:
        status = os.stat(db_path)
    except OSError:
        return
    key = (os.path.realpath(db_path), status.st_dev, status.st_ino)
    if key in _QUICK_CHECKED:
        return
    try:
        rows = [row[0] for row in conn.execute("PRAGMA quick_check(5)")]
    except sqlite3.DatabaseError as error:
        rows = [str(error)]
    if rows != ["ok"]:
        raise ProjectError(
            f"{db_path}: the project database is damaged (SQLite's quick check: {'; '.join(rows)[:300]}); nothing "
            "was written. Restore project.sqlite from a backup (each upgrade keeps one as project.schemaN.bak.sqlite)"
        )
    _QUICK_CHECKED.add(key)


_QUICK_CHECKED: set[tuple] = set()


def schema_problem(conn: sqlite3.Connection, version: int) -> str | None:
    """Whether the tables and columns match the schema number the file claims: a table or column of a later
    migration (the number was lowered: re-running migrations would fail half-way) or a missing one (a table was
    dropped by hand) is reported before anything runs. None when they match."""
    if not 0 < version <= SCHEMA_VERSION:
        return None
    present = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    expected = {table for tables, _ in _SCHEMA_PARTS[:version] for table in tables}
    later = {table for tables, _ in _SCHEMA_PARTS[version:] for table in tables}
    missing = sorted(expected - present)
    if missing:
        return f"table(s) {', '.join(missing)} of schema {version} are missing"
    too_new = sorted(later & present)
    if too_new:
        return f"it claims schema {version} but holds table(s) {', '.join(too_new)} of a later schema"
    for _, columns in _SCHEMA_PARTS[version:]:
        for table, column in columns:
            if table in present and column in {row[1] for row in conn.execute(f"PRAGMA table_info({table})")}:
                return f"it claims schema {version} but table {table} has column {column} of a later schema"
    return schema_objects_problem(conn, version)


def schema_error(db_path: Path, problem: str) -> ProjectError:
    return ProjectError(
        f"{db_path}: the database's schema is not the one SpokenBench makes ({problem}): another program changed "
        "it (or a development build whose migrations differed made it), and SQLite runs a schema's triggers and "
        "checks on every write, so the project was not opened and nothing was changed. Restore project.sqlite from "
        "a backup, or drop what you added yourself (e.g. `DROP TRIGGER name` in the sqlite3 shell) and open it again"
    )


# SQLite's own tables (AUTOINCREMENT's counters, ANALYZE's statistics, which a colleague's `sqlite3` shell may add):
# data for the query planner, never code, so a project may hold them
SQLITE_OWN_TABLES = frozenset({"sqlite_sequence", "sqlite_stat1", "sqlite_stat2", "sqlite_stat3", "sqlite_stat4"})


def schema_objects_problem(conn: sqlite3.Connection, version: int) -> str | None:
    """Whether the database's tables, indexes, triggers and views are exactly those the migrations up to `version`
    create (their SQL compared in one layout). A schema is code SQLite runs on our writes: a trigger added by
    someone else could rewrite every new rating, a CHECK or UNIQUE taken out would let bad rows or a second claim
    in. None when it matches; else what differs (at most three objects)."""
    present = _schema_objects(conn)
    if version == SCHEMA_VERSION and schema_digest(present) == CURRENT_SCHEMA_DIGEST:
        return None  # the usual case, without building the expected schema (~15 ms)
    expected = migrated_schema(tuple(MIGRATIONS[:version]))
    problems = [
        f"{_schema_object(key, present[key][0])} that SpokenBench does not create"
        for key in present.keys() - expected.keys()
    ]
    problems += [
        f"{_schema_object(key, expected[key][0])} of schema {version} is missing"
        for key in expected.keys() - present.keys()
    ]
    problems += [
        f"{_schema_object(key, present[key][0])} differs from the one SpokenBench creates"
        for key in present.keys() & expected.keys()
        if present[key] != expected[key]
    ]
    return "; ".join(sorted(problems)[:3]) or None


def schema_digest(objects: dict[tuple[str, str], tuple[str, str | None]]) -> str:
    return hashlib.sha256(repr(sorted(objects.items())).encode()).hexdigest()


def _schema_object(key: tuple[str, str], table: str) -> str:
    kind, name = key
    shown = repr(name)[:80]  # repr escapes control characters and bidirectional overrides
    return f"{kind} {shown}" + (f" on {repr(table)[:80]}" if kind in ("index", "trigger") else "")


@functools.lru_cache(maxsize=8)
def migrated_schema(scripts: tuple[str, ...]) -> dict[tuple[str, str], tuple[str, str | None]]:
    """The schema objects the migration `scripts` create, as `schema_objects_problem` compares them: built once per
    process in an empty in-memory database (~15 ms for the 18 migrations)."""
    with contextlib.closing(sqlite3.connect(":memory:", isolation_level=None)) as conn:
        for script in scripts:  # run as `migrate` runs them
            for statement in _statements(script):
                conn.execute(statement)
        return _schema_objects(conn)


def _schema_objects(conn: sqlite3.Connection) -> dict[tuple[str, str], tuple[str, str | None]]:
    """(type, name) → (table, SQL in one layout) of every schema object but SQLite's own tables."""
    rows = conn.execute("SELECT type, name, tbl_name, sql FROM sqlite_master")
    return {
        (kind, name): (table, _comparable_sql(sql))
        for kind, name, table, sql in rows
        if not (kind == "table" and name in SQLITE_OWN_TABLES)
    }


# In SQL text: a string or quoted name (kept as it is), or a run of spaces and comments (layout)
_SQL_SPACING = re.compile(
    r"""('(?:[^']|'')*'|"(?:[^"]|"")*"|`(?:[^`]|``)*`|\[[^\]]*\])|(?:\s|--[^\n]*|/\*.*?(?:\*/|\Z))+""", re.S
)


@functools.lru_cache(maxsize=4096)
def _comparable_sql(sql: str | None) -> str | None:
    """`sql` in one layout: each run of spaces and comments outside strings and quoted names is one space between
    two word characters and nothing elsewhere. A migration's comments and layout changed over time, and SQLite
    keeps the text a project's tables were made with."""
    if sql is None:
        return None

    def layout(match: re.Match) -> str:
        if match.group(1):
            return match.group(1)
        start, end = match.start(), match.end()
        between_words = 0 < start and end < len(sql) and _word_character(sql[start - 1]) and _word_character(sql[end])
        return " " if between_words else ""

    return _SQL_SPACING.sub(layout, sql)


def _word_character(character: str) -> bool:
    return character.isalnum() or character == "_"


def _schema_parts() -> list[tuple[set[str], list[tuple[str, str]]]]:
    """Per migration: the tables it creates and the (table, column) pairs it adds, read from its script."""
    parts = []
    for script in MIGRATIONS:
        tables = set(re.findall(r"CREATE TABLE (?:IF NOT EXISTS )?(\w+)", script))
        columns = re.findall(r"ALTER TABLE (\w+) ADD COLUMN (\w+)", script)
        parts.append((tables, columns))
    return parts


_SCHEMA_PARTS = _schema_parts()


def migrate(conn: sqlite3.Connection, db_path: Path) -> list[int]:
    """Apply missing migrations, each atomically (SQLite DDL is transactional). Backs the database up
    first when it already holds data, so a failed migration can be undone by hand. Returns the versions applied.
    Several processes may open an old project at once (the app and a script after an upgrade): each migration is
    applied under the write lock only if the schema number read under that lock still lacks it."""
    with read_snapshot(conn):  # the number and the schema it is checked against from one moment
        current = schema_version(conn)
        if current > SCHEMA_VERSION:
            raise ProjectError(
                f"{db_path.parent}: this project was written by a newer SpokenBench (schema {current}, "
                f"this version knows up to {SCHEMA_VERSION}); upgrade spokenbench to open it"
            )
        problem = schema_problem(conn, current)
    if problem is not None:
        raise schema_error(db_path, problem)
    if current == SCHEMA_VERSION:
        return []
    if current > 0:
        backup = db_path.with_name(f"{db_path.stem}.schema{current}.bak{db_path.suffix}")
        with contextlib.closing(sqlite3.connect(backup)) as target:
            conn.backup(target)
    applied = []
    for version in range(current + 1, SCHEMA_VERSION + 1):
        with transaction(conn):
            if schema_version(conn) >= version:  # another process applied it meanwhile
                continue
            for statement in _statements(MIGRATIONS[version - 1]):
                conn.execute(statement)
            conn.execute(f"PRAGMA user_version = {version}")
        applied.append(version)
    return applied


def _statements(script: str) -> Iterator[str]:
    """A migration's statements one by one (a trigger's body holds semicolons: SQLite says when one is whole),
    so they run in a transaction this code began: `executescript` would commit it first."""
    statement = ""
    for piece in script.split(";"):
        statement += piece + ";"
        if sqlite3.complete_statement(statement):
            if statement.strip("; \t\n"):
                yield statement
            statement = ""


SQLITE_NEIGHBOURS = ("-wal", "-shm", "-journal")


def check_database_files(db_path: Path) -> None:
    """The database's neighbours — its log, index and journal — must be regular files if present: SQLite would
    wait forever on a FIFO journal, and fail on a link to /dev/zero with a misleading "disk I/O error". Checked
    (without following links) before SQLite opens anything."""
    import stat

    for suffix in SQLITE_NEIGHBOURS:
        neighbour = Path(f"{db_path}{suffix}")
        try:
            mode = os.lstat(neighbour).st_mode
        except FileNotFoundError:
            continue
        if not stat.S_ISREG(mode):
            kind = (
                "a symbolic link" if stat.S_ISLNK(mode) else "a FIFO" if stat.S_ISFIFO(mode) else "not a regular file"
            )
            raise ProjectError(
                f"{neighbour} is {kind}, not a file SQLite wrote: the project is not opened (SQLite could wait on it "
                "or read it without end). Remove it; a healthy project has none such"
            )


def inspect_project_file(db_path: Path, recovered: bool = False) -> str:
    """What a project.sqlite is, read without changing a byte: 'marked' (a SpokenBench project), 'legacy' (made
    before the marker existed: it has our project_meta with the version that created it), 'empty', or 'foreign'
    (any other SQLite database). Raises ProjectError for a file that is not SQLite or is damaged."""
    check_database_files(db_path)
    uri = _read_only_uri(db_path)
    try:
        return _inspect(uri)
    except sqlite3.DatabaseError as error:
        if wal_index_unavailable(error):
            return _inspect_without_the_wal_index(db_path)
        if not recovered and _recover_hot_journal(db_path, error):
            return inspect_project_file(db_path, recovered=True)
        raise ProjectError(_open_failure(db_path, error)) from None


def _inspect_without_the_wal_index(db_path: Path) -> str:
    """A WAL file on a file system that cannot share WAL's index, looked at without changing it. Its marker is in
    the header of its first page, whether that page is the one the project was made with or one a checkpoint (or
    an interrupted switch to a rollback journal) copied from the log: read through `immutable` (no index, no
    lock), a marked file is a project. Otherwise the main file tells a project made before the marker from a
    foreign database; one another process has meanwhile switched to a rollback journal is read as it is now."""
    header = _first_bytes(db_path, 100)
    if header.startswith(b"SQLite format 3\x00") and int.from_bytes(header[68:72], "big") == PROJECT_APPLICATION_ID:
        return "marked"
    immutable = f"{Path(db_path).resolve().as_uri()}?mode=ro&immutable=1"
    failure = None
    try:
        if (kind := _inspect(immutable)) == "legacy":
            return kind
    except sqlite3.DatabaseError as error:
        failure = error
    try:
        return _inspect(_read_only_uri(db_path))
    except sqlite3.DatabaseError as error:
        if not wal_index_unavailable(error):
            raise ProjectError(_open_failure(db_path, error)) from None
    if failure is not None:
        raise ProjectError(_open_failure(db_path, failure)) from None
    raise ProjectError(
        f"{db_path}: this file system cannot share SQLite's write-ahead log index, and the database carries no "
        "SpokenBench marker in its main file, so it was not opened and nothing was changed. Copy the folder to a "
        "local disk and open it there."
    )


# Descriptors of database files whose first bytes were read on our own (`_first_bytes`), by path: never closed,
# since closing any descriptor of a file drops every POSIX lock this process's SQLite connections hold on it.
_HEADER_DESCRIPTORS: dict[str, tuple[int, tuple[int, int]]] = {}


def _first_bytes(db_path: Path, count: int) -> bytes:
    """The file's first `count` bytes, read where SQLite cannot read them without changing the file (a WAL file
    whose shared index cannot be made), through a descriptor kept open for the life of the process (b'' if the
    file cannot be read)."""
    path = os.path.realpath(db_path)
    if os.name == "nt":  # Windows locks belong to a handle, and a handle kept open would keep the file from moving
        try:
            with open(path, "rb") as file:
                return file.read(count)
        except OSError:
            return b""
    try:
        status = os.stat(path)
        kept = _HEADER_DESCRIPTORS.get(path)
        if kept is None or kept[1] != (status.st_dev, status.st_ino):  # not read yet, or replaced since
            descriptor = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
            opened_status = os.fstat(descriptor)
            kept = (descriptor, (opened_status.st_dev, opened_status.st_ino))
            _HEADER_DESCRIPTORS[path] = kept
        return os.pread(kept[0], count, 0)
    except OSError:
        return b""


def _inspect(uri: str) -> str:
    with contextlib.closing(sqlite3.connect(uri, uri=True)) as conn:
        if conn.execute("PRAGMA application_id").fetchone()[0] == PROJECT_APPLICATION_ID:
            return "marked"
        tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if not tables:
            return "empty"
        if (
            "project_meta" in tables
            and conn.execute("SELECT 1 FROM project_meta WHERE key = 'created_by_version'").fetchone()
        ):
            return "legacy"
        return "foreign"


def _recover_hot_journal(db_path: Path, error: sqlite3.DatabaseError) -> bool:
    """A rollback journal left by a write that was interrupted (`project.sqlite-journal`) must be rolled back
    before the database can be read; the read-only look above cannot do that. Where the folder is writable,
    SQLite's own recovery runs (what any SQLite program does on open) and True is returned; otherwise the
    ProjectError says what the file is and that recovering it needs write access — it is not damage."""
    journal = Path(f"{db_path}-journal")
    if not (getattr(error, "sqlite_errorname", "") or "").startswith("SQLITE_READONLY") or not journal.exists():
        return False
    if not is_writable(db_path):
        raise ProjectError(
            f"{journal}: a write to this project was interrupted and left its rollback journal; SQLite must roll it "
            f"back before the project can be read, which needs write access to {db_path.parent}. The database is not "
            "damaged: open the project once where it is writable (or with permission to write)."
        )
    try:
        with contextlib.closing(sqlite3.connect(db_path)) as conn:
            conn.execute("PRAGMA schema_version").fetchone()  # reading rolls the journal back
    except sqlite3.DatabaseError as recovery_error:
        raise ProjectError(_open_failure(db_path, recovery_error)) from None
    _log.warning(f"note: {journal}: rolled back the journal an interrupted write left (nothing committed was lost)")
    return True


def _open_failure(db_path: Path, error: sqlite3.DatabaseError) -> str:
    """What stopped the database from opening, in words that fit the cause: a damaged file is not a full disk."""
    from spokenbench.core.foundation.environment_errors import explain_environment_error

    explained = explain_environment_error(error, db_path.parent)
    name = getattr(error, "sqlite_errorname", "") or ""
    if explained is None or name.startswith(("SQLITE_CORRUPT", "SQLITE_NOTADB")):
        return f"{db_path}: the database is damaged or not SQLite ({error})"
    return explained


def mark_as_project(conn: sqlite3.Connection) -> None:
    with transaction(conn):
        conn.execute(f"PRAGMA application_id = {PROJECT_APPLICATION_ID}")
