"""A project is a folder: `project.sqlite` plus `audio/` (content-addressed). Open one `Project` per
thread; SQLite's WAL lets the app and a headless run work on the same folder at once."""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator
from pathlib import Path

from spokenbench.core import __version__
from spokenbench.core.foundation.errors import ProjectError
from spokenbench.core.store import database
from spokenbench.core.store.audio_files import AudioStore
from spokenbench.core.store.items import remove_abandoned_imports
from spokenbench.core.store.migrations import SCHEMA_VERSION

DATABASE_NAME = "project.sqlite"
AUDIO_DIR_NAME = "audio"


class Project:
    def __init__(self, path: Path, conn: sqlite3.Connection, read_only: bool = False):
        self.path = path
        self.conn = conn
        self.read_only = read_only  # reading works; writes raise a ProjectError saying why they cannot happen
        self.audio = AudioStore(path / AUDIO_DIR_NAME)

    @property
    def db_path(self) -> Path:
        return self.path / DATABASE_NAME

    @classmethod
    def create(cls, path: str | Path) -> Project:
        """Create a new project in an empty or missing folder; never adopts a folder holding other files."""
        path = Path(path)
        if path.exists() and not path.is_dir():
            raise ProjectError(f"{path} exists and is not a folder")
        if (path / DATABASE_NAME).exists():
            raise ProjectError(f"{path} is already a SpokenBench project")
        if path.is_dir() and any(path.iterdir()):
            raise ProjectError(f"{path} is not empty; choose a new or empty folder for the project")
        try:
            (path / AUDIO_DIR_NAME).mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise ProjectError(f"cannot create a project in {path}: {error.strerror or error}") from None
        conn = database.connect(path / DATABASE_NAME, read_only=False)
        try:
            database.migrate(conn, path / DATABASE_NAME)
            with database.transaction(conn):
                conn.executemany(
                    "INSERT INTO project_meta(key, value) VALUES (?, ?)",
                    [("created_at", database.utc_now()), ("created_by_version", __version__)],
                )
            database.mark_as_project(conn)
        except BaseException:
            conn.close()  # an open file keeps a folder from being removed (Windows, and FUSE's .fuse_hidden files)
            raise
        return cls(path, conn)

    @classmethod
    def open(cls, path: str | Path) -> Project:
        path = Path(path)
        db_path = path / DATABASE_NAME
        if not path.is_dir():
            raise ProjectError(f"{path}: no such project folder (create one with `spokenbench init {path}`)")
        if not db_path.is_file():
            raise ProjectError(f"{path} is not a SpokenBench project: {DATABASE_NAME} is missing")
        marker = database.inspect_project_file(db_path)  # read-only: a foreign file must stay byte-identical
        if marker == "empty":
            raise ProjectError(f"{db_path} is empty: not a SpokenBench project")
        if marker == "foreign":
            raise ProjectError(
                f"{db_path} is an SQLite database of another program, not a SpokenBench project (it carries no "
                "SpokenBench marker); it was left untouched. Create a project with `spokenbench init DIR` and import "
                "your items into it."
            )
        read_only = not database.is_writable(db_path)
        conn = database.connect(db_path, read_only=read_only)
        if not read_only:
            try:  # before any write (a migration, a job row): a damaged file is never written to
                database.check_not_damaged(conn, db_path)
            except ProjectError:
                conn.close()
                raise
        if read_only:
            with database.read_snapshot(conn):  # the number and the schema it is checked against from one moment
                version = database.schema_version(conn)
                problem = database.schema_problem(conn, version) if version == SCHEMA_VERSION else None
            if version != SCHEMA_VERSION:
                conn.close()
                raise ProjectError(
                    f"{path} is read-only and its database has schema {version} (this version uses "
                    f"{SCHEMA_VERSION}); opening it needs a migration, which writes: copy it somewhere writable first"
                )
            if problem is not None:
                conn.close()
                raise database.schema_error(db_path, problem)
            return cls(path, conn, read_only=True)
        try:
            database.migrate(conn, db_path)
        except BaseException:
            conn.close()
            raise
        if marker == "legacy":
            database.mark_as_project(conn)
        project = cls(path, conn)
        project.audio.remove_stale_temp_files()
        with contextlib.suppress(sqlite3.OperationalError):  # busy: the next import or opening removes them
            remove_abandoned_imports(conn)
        return project

    def transaction(self) -> contextlib.AbstractContextManager[sqlite3.Connection]:
        return database.transaction(self.conn)

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> Project:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


@contextlib.contextmanager
def opened(path: str | Path) -> Iterator[Project]:
    project = Project.open(path)
    try:
        yield project
    finally:
        project.close()


def audio_store_of(conn: sqlite3.Connection) -> AudioStore:
    """The audio folder of the project whose database `conn` is connected to."""
    return AudioStore(Path(database.database_file(conn)).parent / AUDIO_DIR_NAME)


def use_wal(path: str | Path) -> bool:
    """`spokenbench check DIR --use-wal`: the project's file back in WAL mode after a rollback journal (see
    `database.switch_back_to_wal`); True if it switched."""
    return database.switch_back_to_wal(Path(path) / DATABASE_NAME)
