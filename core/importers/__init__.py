"""Importing benchmarks into a project: every file is read and validated completely first, then the rows are
staged beside the project and copied in in short transactions, hidden until one last transaction makes the whole
import visible, so an import either lands whole or leaves nothing visible, and never holds the project's write lock
for longer than one short transaction."""

from __future__ import annotations

import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path

from spokenbench.core.domain.items import IMPORT_FORMATS, Item
from spokenbench.core.foundation.errors import InputError, InputProblem, Problems, SpokenBenchError
from spokenbench.core.foundation.progress import Progress, no_progress
from spokenbench.core.foundation.standard_streams import STANDARD_INPUT_NAME, is_standard_stream
from spokenbench.core.foundation.tables import read_table, table_digest
from spokenbench.core.importers.formats import PARSERS, ImportOptions, language_from_path
from spokenbench.core.store import Project
from spokenbench.core.store.items import (
    ImportStaging,
    copy_staged_import,
    existing_items,
    other_imports_pending,
    remove_abandoned_imports,
    remove_stale_staging_files,
)

FORMATS = IMPORT_FORMATS
assert set(PARSERS) == set(FORMATS), "core.domain.items.IMPORT_FORMATS must name every parser"

__all__ = ["FORMATS", "ImportOptions", "ImportedFile", "import_files", "parse_file", "language_from_path"]


@dataclass
class ImportedFile:
    file: str
    imported: int
    skipped: int
    languages: list[str]


def parse_file(path: str | Path, format_name: str, options: ImportOptions) -> list[Item]:
    if format_name not in PARSERS:
        raise SpokenBenchError(f"unknown format '{format_name}'; use one of {', '.join(FORMATS)}")
    return PARSERS[format_name](read_table(path), options)


def import_files(
    project: Project,
    paths: list[str | Path],
    format_name: str,
    options: ImportOptions | None = None,
    skip_existing: bool = False,
    progress: Progress | None = None,
) -> list[ImportedFile]:
    """Validate all files, then write them all at once (see `_write`). With skip_existing, items already in the
    project with identical content are skipped (re-running an import is harmless); differing ones are errors."""
    options = options or ImportOptions()
    progress = progress or no_progress()
    parsed: list[tuple[str, str, list[Item]]] = []
    problems = Problems()
    for done, path in enumerate(paths):
        progress.check_cancelled()
        progress.report(done, len(paths), f"reading {Path(path).name}")
        try:
            items = parse_file(path, format_name, options)
        except InputError as error:
            problems.extend(error.problems)
            continue
        parsed.append((STANDARD_INPUT_NAME if is_standard_stream(path) else str(path), table_digest(path), items))
    if problems:
        raise InputError(problems)

    problems.extend(_cross_file_duplicates(parsed))
    if problems:
        raise InputError(problems)
    for attempt in range(1, CONCURRENT_IMPORT_ATTEMPTS + 1):
        to_write = _against_stored(project, parsed, skip_existing)
        try:
            return _write(project, to_write, format_name, progress)
        except _StoredMeanwhile as conflict:
            # Another process imported some of these items while this import was staged: look again (with
            # --skip-existing its identical items are now skipped; without it they are reported as duplicates).
            if attempt == CONCURRENT_IMPORT_ATTEMPTS:
                raise SpokenBenchError(
                    f"other processes kept storing these items while this import was being prepared ({conflict}); "
                    "nothing was imported — run the import again"
                ) from None
            _wait_for_other_imports(project, progress)
    raise AssertionError("unreachable")


CONCURRENT_IMPORT_ATTEMPTS = 3


OTHER_IMPORT_WAIT_S = 120


class _StoredMeanwhile(Exception):
    """The final copy met items another process stored after this import was validated."""


def _wait_for_other_imports(project: Project, progress: Progress) -> None:
    """Before validating again: let another process's import that is being copied in (still hidden, so this
    import could not see its items) finish, so the next look sees its items as stored."""
    deadline = time.monotonic() + OTHER_IMPORT_WAIT_S
    while other_imports_pending(project.conn) and time.monotonic() < deadline:
        progress.check_cancelled()
        time.sleep(0.05)


def _against_stored(
    project: Project, parsed: list[tuple[str, str, list[Item]]], skip_existing: bool
) -> list[tuple[str, str, list[Item], int]]:
    """The items of each file still to write, after comparing them with what the project holds now."""
    problems = Problems()
    keys = {(i.source, i.source_id, i.language) for _, _, items in parsed for i in items}
    stored = existing_items(project.conn, keys)
    to_write: list[tuple[str, str, list[Item], int]] = []
    for file, digest, items in parsed:
        fresh = []
        for number, item in enumerate(items, start=1):
            existing = stored.get((item.source, item.source_id, item.language))
            if existing is None:
                fresh.append(item)
            elif not (skip_existing and existing.same_content(item)):
                already = f"id '{item.source_id}' ({item.language}, source {item.source}) is already in the project"
                if skip_existing:
                    message = f"{already} with different content"
                else:
                    message = f"{already}; use --skip-existing to skip items imported before"
                problems.append(InputProblem(file, message, number))
        to_write.append((file, digest, fresh, len(items) - len(fresh)))
    if problems:
        raise InputError(problems)
    return to_write


STAGING_BATCH = 1000


def _write(
    project: Project, to_write: list[tuple[str, str, list[Item], int]], format_name: str, progress: Progress
) -> list[ImportedFile]:
    """Stage every row in batches outside the project's write lock, then copy them in short transactions,
    hidden until the last one: the import lands whole or not at all, and other writers (a rating in the app) wait
    at most for one of them (`copy_staged_import`)."""
    remove_stale_staging_files(project.path)
    remove_abandoned_imports(project.conn)  # an interrupted import's hidden rows would collide with these
    total = sum(len(items) for _, _, items, _ in to_write)
    written = 0
    with ImportStaging(project.path, project.conn) as staging:
        for file, digest, items, _ in to_write:
            staged_import_id = staging.add_import(file, format_name, digest, len(items))
            for start in range(0, len(items), STAGING_BATCH):
                progress.check_cancelled()  # nothing has reached the project yet
                staging.add_items(items[start : start + STAGING_BATCH], staged_import_id)
                written += len(items[start : start + STAGING_BATCH])
                progress.report(written, total, f"writing {Path(file).name}")
        progress.check_cancelled()
        progress.report(written, total, f"saving {written} items")
        try:
            copy_staged_import(project.conn, staging)
        except sqlite3.IntegrityError as error:
            raise _StoredMeanwhile(str(error)) from None
    return [
        ImportedFile(file, len(items), skipped, sorted({i.language for i in items}))
        for file, _, items, skipped in to_write
    ]


def _cross_file_duplicates(parsed: list[tuple[str, str, list[Item]]]) -> list[InputProblem]:
    first_file: dict[tuple[str, str, str], tuple[int, str]] = {}
    problems = Problems()
    for position, (file, _, items) in enumerate(parsed):
        for number, item in enumerate(items, start=1):
            key = (item.source, item.source_id, item.language)
            if key in first_file and first_file[key] != (position, file):
                problems.append(
                    InputProblem(
                        file,
                        f"id '{item.source_id}' ({item.language}) is also in {first_file[key][1]}"
                        + (" (the same file given twice)" if first_file[key][1] == file else ""),
                        number,
                    )
                )
            first_file.setdefault(key, (position, file))
    return problems
