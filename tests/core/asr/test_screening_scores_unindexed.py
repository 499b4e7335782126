"""Screening's scores carry no index on their WER interval (migration 18, issue 28): nothing selects them by it,
and every screening rewrote that index over all the scores."""

import pytest
from support import project_at_schema

from spokenbench.core.asr.store import replace_screening_scores, screened_clip_bins
from spokenbench.core.store import Project, migrations


def _indexes(conn) -> set[str]:
    return {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL")}


def _old_project_with_a_score(path):
    """A project made at schema 17, with the index, a clip and its score."""
    with project_at_schema(path, 17) as conn:
        replace_screening_scores(conn, [(7, "wer", 1, 4, 0.25, 2, "asr-a", 2, None, "then")])
        assert "clip_screening_bin" in _indexes(conn)


def test_a_new_project_has_no_index_on_the_wer_interval(tmp_path):
    with Project.create(tmp_path / "p") as project:
        assert not {name for name in _indexes(project.conn) if name.startswith("clip_screening")}


def test_an_older_project_loses_the_index_and_keeps_its_scores(tmp_path):
    _old_project_with_a_score(tmp_path / "p")
    with Project.open(tmp_path / "p") as project:
        conn = project.conn
        assert conn.execute("PRAGMA user_version").fetchone()[0] == migrations.SCHEMA_VERSION
        assert "clip_screening_bin" not in _indexes(conn)
        assert screened_clip_bins(conn) == [(7, "en", 2)]
        with project.transaction() as conn:  # the CHECK constraints stay: an interval out of 0-3 is refused
            with pytest.raises(Exception, match="CHECK"):
                replace_screening_scores(conn, [(7, "wer", 1, 4, 0.25, 4, "asr-a", 2, None, "now")])
