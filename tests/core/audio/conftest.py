import pytest
from audio_support import MINI_ITEMS, ToneBackend
from support import write_jsonl

from spokenbench.core.importers import ImportOptions, import_files


@pytest.fixture
def tone_backend():
    return ToneBackend()


@pytest.fixture
def mini_project(project, tmp_path):
    """Three items (two English, one Korean) with four options each."""
    import_files(project, [write_jsonl(tmp_path / "mini.jsonl", MINI_ITEMS)], "mcq", ImportOptions(source="mini"))
    return project
