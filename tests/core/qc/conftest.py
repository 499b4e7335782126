"""Fixtures for the quality-control tests: a small trilingual project."""

import pytest
from qc_support import QC_ITEMS
from support import write_jsonl

from spokenbench.core.importers import ImportOptions, import_files


@pytest.fixture
def qc_project(project, tmp_path):
    """Five items: three English, one Chinese, one Korean, four options each."""
    import_files(project, [write_jsonl(tmp_path / "qc.jsonl", QC_ITEMS)], "mcq", ImportOptions(source="qc"))
    return project
