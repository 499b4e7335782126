"""Errors a user can act on. The CLI turns them into a message and exit code 2, the app into a dialog;
anything else is a bug and is reported as one."""

from __future__ import annotations

from dataclasses import dataclass


class SpokenBenchError(Exception):
    """A problem with the user's input or environment, explained in plain words."""


class ProjectError(SpokenBenchError):
    """The project folder is missing, not a project, or from a newer version."""


class MissingDependencyError(SpokenBenchError):
    """An optional package or system library is not installed; the message says what to install."""


class Cancelled(Exception):
    """Raised inside long work when the user cancels; the work stops at a safe point."""


@dataclass(frozen=True)
class InputProblem:
    """One problem in an input file, located as precisely as the format allows."""

    file: str
    message: str
    row: int | None = None  # 1-based data row (header not counted)
    column: str | None = None

    def __str__(self) -> str:
        where = [self.file]
        if self.row is not None:
            where.append(f"row {self.row}")
        if self.column is not None:
            where.append(f"column '{self.column}'")
        return f"{', '.join(where)}: {self.message}"


class Problems(list):
    """The problems found in a file: the first MAX_KEPT kept, the others only counted, so a file with a problem on
    each of its millions of rows takes no more memory to refuse than one with a few (an 80 MB CSV of malformed
    rows took 9.6 GB). `len()` counts every problem found, kept or not; iterating and slicing give the kept ones."""

    MAX_KEPT = 1_000
    unlisted = 0  # the problems counted, not kept (a class default: unpickling appends before it sets attributes)

    def __init__(self, problems=()):
        super().__init__()
        self.extend(problems)

    def append(self, problem: InputProblem) -> None:
        if super().__len__() < self.MAX_KEPT:
            super().append(problem)
        else:
            self.unlisted += 1

    def extend(self, problems) -> None:
        for problem in problems:
            self.append(problem)
        self.unlisted += getattr(problems, "unlisted", 0)

    def __len__(self) -> int:
        return super().__len__() + self.unlisted

    @property
    def full(self) -> bool:
        """Whether another problem would only be counted: a loop over millions of rows then counts it
        (`unlisted += 1`) without building it."""
        return super().__len__() >= self.MAX_KEPT


class InputError(SpokenBenchError):
    """An input file is malformed. Carries every problem found (up to a cap) so users fix them in one pass."""

    MAX_LISTED = 20

    def __init__(self, problems: list[InputProblem] | InputProblem):
        if isinstance(problems, InputProblem):
            problems = [problems]
        self.problems = problems if isinstance(problems, Problems) else Problems(problems)
        listed = [str(p) for p in self.problems[: self.MAX_LISTED]]
        hidden = len(self.problems) - len(listed)
        if hidden > 0:
            listed.append(f"... and {hidden:,} more problem(s)")
        super().__init__("\n".join(listed))

    def __reduce__(self):
        """Pickled as its problems (a job process sends it to the app), not as its joined message."""
        return (type(self), (self.problems,))
