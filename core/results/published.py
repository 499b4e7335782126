"""The three papers' published tables (bundled as CSV in resources/published/, see its README): the
"published results" layer that our own tables are laid out like and compared against."""

from __future__ import annotations

import importlib.resources
from pathlib import Path

from spokenbench.core.foundation.errors import SpokenBenchError

STUDIES = ("biasinear", "gender_differentiation", "hearing_the_order")


def published_dir(study: str) -> Path:
    if study not in STUDIES:
        raise SpokenBenchError(f"unknown study '{study}'; choose one of {', '.join(STUDIES)}")
    return Path(str(importlib.resources.files("spokenbench.resources") / "published" / study))


def published_table(study: str, name: str) -> Path:
    path = published_dir(study) / name
    if not path.is_file():
        raise SpokenBenchError(f"no published table '{name}' for {study}")
    return path
