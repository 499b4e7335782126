"""`spokenbench rate`: one clip, a --from file (CSV or JSONL) stored whole or not at all, --undo, the seconds
a rating took, the same checks as the rating screen (bad rows named, exit 2) and --json."""

import json

import pytest
from qc_support import add_clip, item_id, tone_wav
from support import write_csv, write_jsonl

from spokenbench.core.qc.queues import queue_clips, sample_for_rating
from spokenbench.core.qc.rating_session import SynchronousRatingSession

QUEUE = "q"


@pytest.fixture
def queued(qc_project):
    specs = [("q1", "question", 220), ("q2", "question", 330), ("q3", "question", 440)]
    for source, part, frequency in specs:
        add_clip(
            qc_project, item_id(qc_project, source, "en"), part, f"{source} {part}", "en", audio=tone_wav(frequency)
        )
    sample_for_rating(qc_project, QUEUE, per_bin=3, seed=0)
    return [clip.clip_id for clip in queue_clips(qc_project.conn, QUEUE)]


def ratings(project):
    rows = project.conn.execute("SELECT clip_id, annotator, rating, note, seconds, undone_at FROM ratings ORDER BY id")
    return [dict(row) for row in rows]


def test_one_clip_is_rated_with_note_and_seconds(cli, qc_project, queued):
    result = cli(
        "rate", qc_project.path, "--queue", QUEUE, "--annotator", "ana", "--clip", queued[0],
        "--rating", "acceptable", "--note", "slight lisp", "--seconds", "4.5", "--json",
    )  # fmt: skip
    assert result.code == 0, result.err
    body = result.json()
    assert body["stored"] == 1 and body["ratings"][0]["clip_id"] == queued[0]
    assert ratings(qc_project) == [
        {"clip_id": queued[0], "annotator": "ana", "rating": "acceptable", "note": "slight lisp", "seconds": 4.5,
         "undone_at": None}
    ]  # fmt: skip


def test_a_from_file_is_stored_whole_in_order(cli, qc_project, queued, tmp_path):
    rows = [
        {"clip": c, "rating": r, "note": "", "seconds": "2"}
        for c, r in zip(queued, ("correct", "incorrect", "correct"))
    ]
    result = cli(
        "rate", qc_project.path, "--queue", QUEUE, "--annotator", "ben", "--from", write_csv(tmp_path / "r.csv", rows)
    )
    assert result.code == 0, result.err
    assert [(r["clip_id"], r["rating"], r["seconds"], r["note"]) for r in ratings(qc_project)] == [
        (queued[0], "correct", 2.0, None), (queued[1], "incorrect", 2.0, None), (queued[2], "correct", 2.0, None)
    ]  # fmt: skip
    # the session sees them: the annotator's queue is finished
    assert SynchronousRatingSession.open(qc_project, QUEUE, "ben").current is None


def test_a_bad_row_is_named_and_nothing_is_stored(cli, qc_project, queued, tmp_path):
    rows = [
        {"clip": queued[0], "rating": "correct"},
        {"clip": queued[1], "rating": "great"},
        {"clip": 999_999, "rating": "correct"},
        {"clip": queued[2], "rating": "correct", "seconds": -3},
    ]
    path = write_jsonl(tmp_path / "r.jsonl", rows)
    result = cli("rate", qc_project.path, "--queue", QUEUE, "--annotator", "ben", "--from", path)
    assert result.code == 2 and "Traceback" not in result.err
    assert f"{path} row 2" in result.err and "great" in result.err
    assert f"{path} row 3" in result.err and "no clip 999999" in result.err
    assert f"{path} row 4" in result.err and "seconds" in result.err
    assert ratings(qc_project) == []


@pytest.mark.parametrize(
    "rows, message",
    [
        ([{"clip": "x", "rating": "correct"}], "not a clip id"),
        ([{"rating": "correct"}], "missing column"),
        ([{"clip": 1, "rating": "correct", "seconds": "soon"}], "not a number of seconds"),
    ],
)
def test_malformed_files_are_refused_before_opening_the_project(cli, qc_project, queued, tmp_path, rows, message):
    result = cli(
        "rate",
        qc_project.path,
        "--queue",
        QUEUE,
        "--annotator",
        "ben",
        "--from",
        write_jsonl(tmp_path / "r.jsonl", rows),
    )
    assert result.code == 2 and message in result.err and ratings(qc_project) == []


def test_a_clip_outside_the_queue_or_an_unknown_queue_is_refused(cli, qc_project, queued):
    other = add_clip(qc_project, item_id(qc_project, "q1", "en"), "option_B", "b", "en")
    result = cli(
        "rate", qc_project.path, "--queue", QUEUE, "--annotator", "ana", "--clip", other, "--rating", "correct"
    )
    assert result.code == 2 and f"clip {other} is not in rating queue 'q'" in result.err
    result = cli(
        "rate", qc_project.path, "--queue", "nope", "--annotator", "ana", "--clip", queued[0], "--rating", "correct"
    )
    assert result.code == 2 and "no rating queue named 'nope'" in result.err
    result = cli("rate", qc_project.path, "--queue", QUEUE, "--annotator", "ana", "--clip", queued[0])
    assert result.code == 2 and "--clip needs --rating" in result.err
    assert ratings(qc_project) == []


def test_undo_takes_back_the_last_rating_and_keeps_the_row(cli, qc_project, queued):
    for clip, verdict in ((queued[0], "correct"), (queued[1], "incorrect")):
        assert (
            cli(
                "rate", qc_project.path, "--queue", QUEUE, "--annotator", "ana", "--clip", clip, "--rating", verdict
            ).code
            == 0
        )
    result = cli("rate", qc_project.path, "--queue", QUEUE, "--annotator", "ana", "--undo", "--json")
    assert result.code == 0 and result.json()["undone"]["clip_id"] == queued[1]
    rows = ratings(qc_project)
    assert len(rows) == 2 and rows[0]["undone_at"] is None and rows[1]["undone_at"] is not None
    # the session offers the undone clip again
    assert SynchronousRatingSession.open(qc_project, QUEUE, "ana").current.clip_id == queued[1]
    assert (
        cli("rate", qc_project.path, "--queue", QUEUE, "--annotator", "nobody", "--undo", "--json").json()["undone"]
        is None
    )


def test_the_rating_screen_stores_the_seconds_since_the_clip_was_shown(qc_project, queued):
    ticks = iter([100.0, 107.25, 107.25, 200.0])
    session = SynchronousRatingSession.open(qc_project, QUEUE, "ana", clock=lambda: next(ticks))
    session.press("1")
    assert ratings(qc_project)[0]["seconds"] == 7.25


def test_seconds_are_checked_in_the_store_as_well(qc_project, queued):
    import sqlite3

    with pytest.raises(sqlite3.IntegrityError):
        qc_project.conn.execute(
            "INSERT INTO ratings(clip_id, annotator, rating, created_at, seconds) VALUES (?, 'a', 'correct', 'x', -1)",
            (queued[0],),
        )
    assert json.dumps(ratings(qc_project)) == "[]"
