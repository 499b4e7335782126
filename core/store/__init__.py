"""The project store: one SQLite database and content-addressed audio per project folder."""

from spokenbench.core.store.project import Project, opened

__all__ = ["Project", "opened"]
