"""clip_screening counts its changes per statement, not per row (issue 28, migration 13): other processes still see
every screening stored or forgotten and every score removed with its clip, and a project made before migration 13
keeps its scores and counts the same way once opened."""

from qc_support import add_clip, add_transcript, item_id
from support import project_at_schema

from spokenbench.core.asr.screening import ensure_screening, screen_project
from spokenbench.core.store import Project, migrations
from spokenbench.core.store.changes import changed_tables, table_versions


def _screened_clips(project) -> list[int]:
    item = item_id(project, "q1", "en")
    clips = [add_clip(project, item, part, f"the {part} text", "en") for part in ("question", "option_A")]
    for clip in clips:
        add_transcript(project, clip, "asr-a", "the text")
        add_transcript(project, clip, "asr-b", "a text")
    return clips


def _screening_version(project) -> int:
    return table_versions(project.conn)["clip_screening"]


def test_storing_and_forgetting_a_screening_moves_its_counter(qc_project):
    clips = _screened_clips(qc_project)
    before = table_versions(qc_project.conn)
    screen_project(qc_project)
    assert "clip_screening" in changed_tables(before, table_versions(qc_project.conn))
    after_store = _screening_version(qc_project)
    with qc_project.transaction() as conn:
        conn.execute("DELETE FROM transcripts WHERE clip_id IN (?, ?)", clips)
    assert ensure_screening(qc_project) == 0  # transcripts gone: the scores are forgotten
    assert _screening_version(qc_project) > after_store
    assert qc_project.conn.execute("SELECT count(*) FROM clip_screening").fetchone()[0] == 0


def test_deleting_a_screened_clip_moves_the_counter_and_an_unscreened_one_does_not(qc_project):
    screened, _ = _screened_clips(qc_project)
    screen_project(qc_project)
    unscreened = add_clip(qc_project, item_id(qc_project, "q2", "en"), "question", "no transcript yet", "en")
    version = _screening_version(qc_project)
    with qc_project.transaction() as conn:
        conn.execute("DELETE FROM clips WHERE id = ?", (unscreened,))
    assert _screening_version(qc_project) == version
    with qc_project.transaction() as conn:
        conn.execute("DELETE FROM clips WHERE id = ?", (screened,))
    assert _screening_version(qc_project) == version + 1
    assert (
        qc_project.conn.execute("SELECT count(*) FROM clip_screening WHERE clip_id = ?", (screened,)).fetchone()[0] == 0
    )


def test_migration_13_keeps_scores_and_drops_the_row_triggers(tmp_path):
    with project_at_schema(tmp_path / "p", 12) as conn:
        conn.execute(
            "INSERT INTO clip_screening(clip_id, metric, errors, reference_units, error_rate, wer_bin, best_asr, "
            "asr_count, screened_at) VALUES (7, 'wer', 1, 4, 0.25, 2, 'asr-a', 2, 'then')"
        )
    with Project.open(tmp_path / "p") as project:
        conn = project.conn
        assert conn.execute("PRAGMA user_version").fetchone()[0] == migrations.SCHEMA_VERSION  # 13 and later
        assert [tuple(row) for row in conn.execute("SELECT clip_id, wer_bin FROM clip_screening")] == [(7, 2)]
        triggers = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'")}
        assert not {name for name in triggers if name.startswith("clip_screening_")}
        assert "clips_delete_counts_screening" in triggers and "clips_delete_counted" in triggers
        version = _screening_version(project)
        with project.transaction() as conn:
            conn.execute("DELETE FROM clips WHERE id = 7")
        assert _screening_version(project) == version + 1
