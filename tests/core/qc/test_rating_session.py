"""The rating screen's Qt-free state machine: keys rate and save one rating each, saved ahead of the next clip
(a failed one comes back with its note), a double press stores one, undo keeps the row but takes it out of every report, resume after reopening (and after a SIGKILL),
independent annotators, the per-annotator key map, unreadable clips skipped, and playback speed bounds."""

import os
import signal
import subprocess
import sys
import textwrap

import pytest
from qc_support import add_clip, add_transcript, item_id, tone_wav

from spokenbench.core.foundation.errors import SpokenBenchError
from spokenbench.core.qc import rating_session as rs
from spokenbench.core.qc.queues import next_unrated, queue_clips, sample_for_rating
from spokenbench.core.qc.rating_session import (
    DEFAULT_KEYMAP,
    RatingSession,
    SynchronousRatingSession,
    keymap_for,
    save_keymap,
    validate_keymap,
)
from spokenbench.core.qc.ratings import rating_results
from spokenbench.core.store import Project
from spokenbench.core.store.export_queries import ratings_table
from spokenbench.core.store.meta import write_meta

QUEUE = "q"


@pytest.fixture
def queued(qc_project):
    """Four English clips with distinct real audio, sampled into queue 'q'; returns their ids in queue order."""
    specs = [("q1", "question", 220), ("q2", "question", 330), ("q3", "question", 440), ("q1", "option_A", 550)]
    for source, part, frequency in specs:
        add_clip(
            qc_project, item_id(qc_project, source, "en"), part, f"{source} {part}", "en", audio=tone_wav(frequency)
        )
    sample_for_rating(qc_project, QUEUE, per_bin=4, seed=0)
    order = [clip.clip_id for clip in queue_clips(qc_project.conn, QUEUE)]
    assert len(order) == 4
    return order


def session(project, annotator="ana", **kwargs):
    return SynchronousRatingSession.open(project, QUEUE, annotator, **kwargs)


def stored(project, annotator=None):
    query = "SELECT clip_id, annotator, rating, note, undone_at, undone_by FROM ratings"
    rows = [dict(r) for r in project.conn.execute(query + " ORDER BY id")]
    return [r for r in rows if annotator is None or r["annotator"] == annotator]


def test_rating_a_queue_with_keys_alone_stores_each_rating_and_finishes(qc_project, queued):
    s = session(qc_project)
    assert s.first.action == rs.SHOW and s.state == rs.SHOWING and s.current.clip_id == queued[0]
    first = queue_clips(qc_project.conn, QUEUE)[0]
    assert s.current.audio[:4] == b"RIFF" and s.current.text == first.text and s.current.part == first.part
    outcomes = [s.press(key) for key in ("1", "2", "3", "1")]
    assert [o.action for o in outcomes] == [rs.SHOW, rs.SHOW, rs.SHOW, rs.DONE]
    assert s.state == rs.FINISHED and s.current is None
    assert [(r["clip_id"], r["rating"]) for r in stored(qc_project)] == list(
        zip(queued, ("correct", "acceptable", "incorrect", "correct"))
    )
    progress = s.progress
    assert (progress.done, progress.total) == (4, 4)
    assert progress.session_counts == {"correct": 2, "acceptable": 1, "incorrect": 1}
    assert s.press("1").action == rs.IGNORED
    assert s.press("Ctrl+Z").action == rs.SHOW and s.current.clip_id == queued[3]  # undo works after the end too


def test_keys_pressed_before_the_next_clip_is_shown_are_ignored_so_a_double_press_stores_one_rating(qc_project, queued):
    s = RatingSession.open(qc_project, QUEUE, "ana")
    first = s.press("1")
    assert first.action == rs.SAVE_AHEAD and first.clip_id == queued[0] and stored(qc_project) == []
    assert s.saving == 1 and s.current.clip_id == queued[0]  # the next clip is asked for apart: it reads audio
    for key in ("1", "3", "Ctrl+Z", "Left", "N"):
        if key == "N":
            assert s.note("too late").action == rs.IGNORED
        else:
            outcome = s.press(key)
            assert outcome.action == rs.IGNORED and outcome.reason == "saving", key
    assert s.next_after_rating().action == rs.SHOW and s.current.clip_id == queued[1] and s.state == rs.SHOWING
    s.rating_saved(queued[0], first.write(qc_project))  # as the app's writer thread would, then on the UI thread
    assert [(r["clip_id"], r["rating"]) for r in stored(qc_project)] == [(queued[0], "correct")]
    assert s.saving == 0 and s.progress.session_counts["correct"] == 1


def test_the_next_clip_is_rated_while_the_last_rating_is_still_being_saved(qc_project, queued):
    s = RatingSession.open(qc_project, QUEUE, "ana")
    first = s.press("1")
    s.next_after_rating()
    second = s.press("3")  # before the writer answered the first
    assert second.action == rs.SAVE_AHEAD and second.clip_id == queued[1] and s.saving == 2
    assert s.progress.done == 2 and s.progress.session_counts["correct"] == 0  # counted once committed
    for key in ("Ctrl+Z", "Left"):  # they act on committed ratings: they wait for the saves in flight
        assert s.press(key).reason == "saving", key
    s.next_after_rating()
    assert s.current.clip_id == queued[2]
    s.rating_saved(queued[0], first.write(qc_project))
    s.rating_saved(queued[1], second.write(qc_project))
    assert [(r["clip_id"], r["rating"]) for r in stored(qc_project)] == [
        (queued[0], "correct"),
        (queued[1], "incorrect"),
    ]
    assert s.progress.session_counts == {"correct": 1, "acceptable": 0, "incorrect": 1}
    undo = s.press("Ctrl+Z")  # undo reaches it once it is in (a blocking write: nothing moves until it answers)
    assert undo.action == rs.SAVE and s.saved(undo.write(qc_project)).action == rs.SHOW
    assert s.current.clip_id == queued[1] and s.progress.session_counts["incorrect"] == 0


def test_a_failed_rating_brings_its_clip_back_with_its_note_and_stores_nothing(qc_project, queued):
    s = RatingSession.open(qc_project, QUEUE, "ana")
    s.note("hiss")
    s.press("2")
    s.next_after_rating()
    s.note("a click at 0.4 s")  # typed for the second clip, not yet rated
    outcome = s.rating_failed(queued[0], SpokenBenchError("the disk is full"))
    assert outcome.action == rs.SHOW and outcome.reason == "Not saved: the disk is full"
    assert s.current.clip_id == queued[0] and s.current.note == "hiss" and s.current.rating is None
    assert s.progress.done == 0 and s.saving == 0 and stored(qc_project) == []
    again = s.press("2")
    assert again.action == rs.SAVE_AHEAD
    s.rating_saved(queued[0], again.write(qc_project))
    s.next_after_rating()
    assert s.current.clip_id == queued[1] and s.current.note == "a click at 0.4 s"  # held while it was away
    assert [(r["rating"], r["note"]) for r in stored(qc_project)] == [("acceptable", "hiss")]


def test_ratings_saved_ahead_that_fail_come_back_in_queue_order_with_their_notes(qc_project, queued):
    s = RatingSession.open(qc_project, QUEUE, "ana")
    assert s.rates_ahead  # a new clip: its rating is saved ahead
    s.press("1")
    s.next_after_rating()
    s.note("hum")
    s.press("3")  # a second rating in flight, as a quick rater's on a busy disk
    s.next_after_rating()
    assert s.saving == 2 and s.current.clip_id == queued[2] and s.rates_ahead
    assert s.rating_failed(queued[0], SpokenBenchError("database is locked")).action == rs.SHOW
    assert s.current.clip_id == queued[0]
    later = s.rating_failed(queued[1], SpokenBenchError("database is locked"))  # the first unrated stays shown
    assert later.reason == "Not saved: database is locked" and s.current.clip_id == queued[0] and s.saving == 0
    s.rating_saved(queued[0], s.press("1").write(qc_project))
    s.next_after_rating()
    assert s.current.clip_id == queued[1] and s.current.note == "hum" and s.rates_ahead
    s.rating_saved(queued[1], s.press("3").write(qc_project))
    s.next_after_rating()
    assert [(r["clip_id"], r["rating"], r["note"]) for r in stored(qc_project)] == [
        (queued[0], "correct", None),
        (queued[1], "incorrect", "hum"),
    ]
    assert s.press("Left").action == rs.SHOW and not s.rates_ahead  # a rated clip: a re-rating blocks


def test_a_note_edited_on_a_clip_back_from_a_failed_rating_leaves_no_older_note_behind(qc_project, queued):
    s = RatingSession.open(qc_project, QUEUE, "ana")
    s.note("hum")
    s.press("1")
    s.next_after_rating()
    s.press("2")
    s.next_after_rating()
    s.rating_failed(queued[0], SpokenBenchError("database is locked"))
    s.rating_failed(queued[1], SpokenBenchError("database is locked"))  # the first clip stays shown
    assert s.current.clip_id == queued[0] and s.current.note == "hum"
    s.note("hum at 0.2 s")  # edited before rating it again
    s.rating_saved(queued[0], s.press("1").write(qc_project))
    undo = s.press("Ctrl+Z")
    assert undo.action == rs.SAVE and s.saved(undo.write(qc_project)).action == rs.SHOW
    assert s.current.clip_id == queued[0] and s.current.note is None  # not the "hum" it was rated without
    assert [(r["rating"], r["note"], r["undone_at"] is not None) for r in stored(qc_project)] == [
        ("correct", "hum at 0.2 s", True)
    ]


def test_a_rating_that_fails_before_the_next_clip_is_shown_keeps_the_clip(qc_project, queued):
    s = RatingSession.open(qc_project, QUEUE, "ana")
    s.note("hiss")
    s.press("2")
    outcome = s.rating_failed(queued[0], SpokenBenchError("database is locked"))
    assert outcome.action == rs.SHOW and "database is locked" in outcome.reason
    assert s.current.clip_id == queued[0] and s.current.note == "hiss" and s.saving == 0
    assert s.press("2").action == rs.SAVE_AHEAD


def test_right_moves_on_from_a_rated_clip_whose_next_clip_could_not_be_read(qc_project, queued):
    s = RatingSession.open(qc_project, QUEUE, "ana")
    first = s.press("1")
    s.rating_saved(queued[0], first.write(qc_project))  # next_after_rating failed (a read pool error): still shown
    assert s.current.clip_id == queued[0] and s.current.rating == "correct"
    assert s.press("Right").action == rs.SHOW and s.current.clip_id == queued[1] and s.state == rs.SHOWING


def test_a_pulled_drive_skips_no_clip_and_the_session_stays_where_it_is(qc_project, queued, tmp_path):
    s = RatingSession.open(qc_project, QUEUE, "ana")
    first = s.press("2")
    moved = qc_project.path.with_name("pulled")
    qc_project.path.rename(moved)  # the drive pulled out: no file of the project can be reached
    try:
        outcome = s.next_after_rating()
        assert outcome.action == rs.IGNORED and "can no longer be reached" in outcome.reason
        assert s.current.clip_id == queued[0] and s.skipped == []
        back = s.rating_failed(queued[0], SpokenBenchError("disk I/O error"))
        assert back.action == rs.SHOW and back.reason == "Not saved: disk I/O error"
        assert s.current.clip_id == queued[0] and s.current.rating is None and s.skipped == []
    finally:
        moved.rename(qc_project.path)
    assert first.action == rs.SAVE_AHEAD and s.press("2").action == rs.SAVE_AHEAD


def test_a_note_typed_for_a_clip_no_longer_shown_is_held_for_it(qc_project, queued):
    s = RatingSession.open(qc_project, QUEUE, "ana")
    s.press("1")
    s.next_after_rating()
    s.rating_failed(queued[0], SpokenBenchError("the disk is full"))  # while a note dialog was open on the second
    outcome = s.note("echo", clip_id=queued[1])
    assert outcome.action == rs.REDRAW and f"clip {queued[1]}" in outcome.reason and s.current.note is None
    s.rating_saved(queued[0], s.press("1").write(qc_project))
    s.next_after_rating()
    assert s.current.clip_id == queued[1] and s.current.note == "echo"


def test_a_failed_blocking_write_changes_nothing_and_the_clip_stays(qc_project, queued):
    s = session(qc_project)
    s.press("1")
    s.press("Left")
    s2 = RatingSession.open(qc_project, QUEUE, "ana")
    s2.press("Left")
    assert s2.current.clip_id == queued[0] and s2.state == rs.REVIEWING
    rerating = s2.press("2")  # a re-rating: nothing moves until the writer answers
    assert rerating.action == rs.SAVE and s2.state == rs.SAVING
    outcome = s2.failed(SpokenBenchError("disk full"))
    assert outcome.action == rs.ERROR and "disk full" in outcome.reason
    assert s2.state == rs.REVIEWING and s2.current.clip_id == queued[0] and s2.current.rating == "correct"


def test_undo_marks_the_last_rating_undone_keeps_the_row_and_offers_the_clip_again(qc_project, queued):
    s = session(qc_project)
    s.press("1"), s.press("3")
    assert s.press("Ctrl+Z").action == rs.SHOW
    assert s.current.clip_id == queued[1] and s.current.rating is None
    rows = stored(qc_project)
    assert len(rows) == 2 and rows[0]["undone_at"] is None
    assert rows[1]["undone_at"] is not None and rows[1]["undone_by"] == "ana"
    assert next_unrated(qc_project.conn, QUEUE, "ana").clip_id == queued[1]
    results = rating_results(qc_project.conn, QUEUE)
    assert results["ratings"] == 1 and {r["rating"]: r["n_clips"] for r in results["table3"]}["incorrect"] == 0
    assert list(ratings_table(qc_project.conn)["clip_id"]) == [queued[0]]
    assert s.progress.done == 1 and s.progress.session_counts == {"correct": 1, "acceptable": 0, "incorrect": 0}
    assert s.press("Ctrl+Z").action == rs.SHOW and s.current.clip_id == queued[0]
    assert s.press("Ctrl+Z").reason == "nothing to undo" and s.state == rs.SHOWING
    assert len(stored(qc_project)) == 2 and all(r["undone_at"] for r in stored(qc_project))


def test_undoing_a_change_of_mind_brings_back_the_earlier_rating(qc_project, queued):
    s = session(qc_project)
    s.press("1")
    s.press("Left")
    assert s.state == rs.REVIEWING and s.current.rating == "correct"
    s.press("3")  # re-rated while reviewing, then taken back
    assert s.press("Ctrl+Z").action == rs.SHOW
    assert s.current.clip_id == queued[1]
    assert rating_results(qc_project.conn, QUEUE)["table3"][2]["n_clips"] == 1  # 'correct' counts again
    assert s.progress.done == 1


def test_browsing_rated_clips_and_rerating_one(qc_project, queued):
    s = session(qc_project)
    assert s.press("Left").action == rs.IGNORED and s.press("Right").action == rs.IGNORED
    s.press("1"), s.press("2")
    assert s.press("Left").action == rs.SHOW and (s.current.clip_id, s.current.rating) == (queued[1], "acceptable")
    assert s.press("Left").action == rs.SHOW and s.current.clip_id == queued[0]
    assert s.press("Left").action == rs.IGNORED
    assert s.press("Right").action == rs.SHOW and s.current.clip_id == queued[1]
    assert s.press("Right").action == rs.SHOW and s.state == rs.SHOWING and s.current.clip_id == queued[2]
    s.press("Left"), s.press("Left")
    assert s.press("3").action == rs.SHOW and s.current.clip_id == queued[2]  # re-rated, back to the first unrated
    assert [r["rating"] for r in stored(qc_project)] == ["correct", "acceptable", "incorrect"]
    assert s.progress.done == 2


def test_notes_go_with_the_rating_or_onto_a_rated_clip(qc_project, queued):
    s = session(qc_project)
    assert s.press("N").action == rs.ASK_NOTE
    assert s.note("  hiss at the end ").action == rs.REDRAW and stored(qc_project) == []
    s.press("3")
    s.press("Left")
    assert s.note("clipped start").action == rs.REDRAW and s.current.note == "clipped start"
    assert [(r["rating"], r["note"]) for r in stored(qc_project)] == [("incorrect", "clipped start")]


def test_resume_after_reopening_continues_at_the_first_unrated_clip(qc_project, queued):
    s = session(qc_project)
    s.press("1"), s.press("2")
    path = qc_project.path
    qc_project.close()
    with Project.open(path) as reopened:
        again = session(reopened)
        assert again.current.clip_id == queued[2] and again.progress.done == 2
        assert again.progress.session_counts == {"correct": 0, "acceptable": 0, "incorrect": 0}


def test_annotators_each_see_only_their_own_ratings_and_progress(qc_project, queued):
    ana = session(qc_project, "ana")
    ana.press("1"), ana.press("1")
    ben = session(qc_project, "ben")
    assert ben.current.clip_id == queued[0] and ben.progress.done == 0
    assert ben.press("Left").action == rs.IGNORED  # ana's ratings are not his to browse
    ben.press("3")
    assert ben.press("Ctrl+Z").action == rs.SHOW  # undoes ben's, not ana's
    assert [r["annotator"] for r in stored(qc_project) if r["undone_at"] is None] == ["ana", "ana"]
    ana_again = session(qc_project, "ana")
    assert ana_again.current.clip_id == queued[2] and ana_again.progress.done == 2


def test_keymap_override_round_trips_and_drives_the_session(qc_project, queued):
    merged = save_keymap(qc_project, "ana", {"replay": ["p"], "undo": "ctrl+u"})
    assert merged["replay"] == ("P",) and merged["undo"] == ("Ctrl+U",) and merged["rate_correct"] == ("1",)
    assert keymap_for(qc_project.conn, "ana") == merged
    assert keymap_for(qc_project.conn, "ben") == DEFAULT_KEYMAP
    s = session(qc_project)
    assert s.keys_for("replay") == ("P",)
    assert s.press("p").action == rs.PLAY and s.press("R").action == rs.IGNORED
    s.press("1")
    assert s.press("Ctrl+Z").action == rs.IGNORED and s.press("Ctrl+U").action == rs.SHOW
    save_keymap(qc_project, "ana", {})
    assert keymap_for(qc_project.conn, "ana") == DEFAULT_KEYMAP


def test_s_is_in_the_key_map_and_toggles_the_spectrogram_even_while_saving(qc_project, queued):
    assert DEFAULT_KEYMAP["toggle_spectrogram"] == ("S",)
    s = RatingSession.open(qc_project, QUEUE, "ana")
    assert s.keys_for("toggle_spectrogram") == ("S",)
    assert s.press("s").action == rs.SPECTROGRAM
    assert s.press("1").action == rs.SAVE_AHEAD
    assert s.press("S").action == rs.SPECTROGRAM  # only the picture changes: no reason to wait for the save
    with pytest.raises(SpokenBenchError, match="key 'S' is bound twice"):
        validate_keymap({"note": ["S"]})  # the table reserves S like every other key


def test_binding_s_elsewhere_moves_the_spectrogram_to_the_key_given_it(qc_project, queued):
    merged = save_keymap(qc_project, "ana", {"note": ["S"], "toggle_spectrogram": ["G"]})
    assert merged["note"] == ("S",) and merged["toggle_spectrogram"] == ("G",)
    s = session(qc_project)
    assert s.press("S").action == rs.ASK_NOTE and s.press("G").action == rs.SPECTROGRAM


def test_a_map_stored_before_the_spectrogram_key_existed_still_opens(qc_project, queued):
    with qc_project.transaction() as conn:  # S was free then: stored as this annotator's note key
        write_meta(conn, "rating_keymap:ana", '{"note": ["S"], "replay": ["P"]}')
    keymap = keymap_for(qc_project.conn, "ana")
    assert keymap["note"] == ("S",) and keymap["replay"] == ("P",)
    assert keymap["toggle_spectrogram"] == ()  # keyless, to be given a key in Settings
    assert keymap["toggle_transcripts"] == ("T",)  # every other action the old map did not name: its default
    s = session(qc_project)
    assert s.press("S").action == rs.ASK_NOTE
    assert s.perform("toggle_spectrogram").action == rs.SPECTROGRAM  # its button still works
    with qc_project.transaction() as conn:  # an old map without any clash gets the new default key
        write_meta(conn, "rating_keymap:ben", '{"replay": ["P"]}')
    assert keymap_for(qc_project.conn, "ben")["toggle_spectrogram"] == ("S",)


def test_perform_runs_an_action_by_name_and_refuses_an_unknown_one(qc_project, queued):
    save_keymap(qc_project, "ana", {"replay": []})
    s = session(qc_project)
    assert s.press("Space").action == rs.IGNORED and s.perform("replay").action == rs.PLAY
    assert s.perform("rate_incorrect").action == rs.SHOW
    assert [r["rating"] for r in stored(qc_project)] == ["incorrect"]
    with pytest.raises(SpokenBenchError, match="unknown action 'launch'"):
        s.perform("launch")


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"launch": ["L"]}, "unknown action 'launch'"),
        ({"replay": ["1"]}, "key '1' is bound twice"),
        ({"next": ["Space"]}, "key 'Space' is bound twice"),
        ({"rate_incorrect": []}, "'rate_incorrect' needs a key"),
        ({"undo": ["Hyper+Z"]}, "unknown modifier 'Hyper'"),
        ({"note": [""]}, "non-empty name"),
        ({"note": 5}, "must be a list"),
    ],
)
def test_keymap_validation_refuses_with_a_clear_message(overrides, message):
    with pytest.raises(SpokenBenchError, match=message):
        validate_keymap(overrides)


def test_a_stored_keymap_that_is_not_json_is_reported(qc_project):
    with qc_project.transaction() as conn:
        write_meta(conn, "rating_keymap:ana", "{broken")
    with pytest.raises(SpokenBenchError, match="stored key map of 'ana' is not valid JSON"):
        keymap_for(qc_project.conn, "ana")


def test_a_missing_or_damaged_clip_file_is_skipped_with_its_reason(qc_project, queued):
    clips = {c.clip_id: c for c in queue_clips(qc_project.conn, QUEUE)}
    missing, damaged = clips[queued[1]], clips[queued[2]]
    qc_project.audio.path_for(missing.sha256, missing.audio_format).unlink()
    qc_project.audio.path_for(damaged.sha256, damaged.audio_format).write_bytes(b"not audio")
    s = session(qc_project)
    assert s.press("1").action == rs.SHOW and s.current.clip_id == queued[3]
    assert [(k.clip_id, k.position) for k in s.skipped] == [(queued[1], 2), (queued[2], 3)]
    assert "missing" in s.skipped[0].reason and "damaged" in s.skipped[1].reason
    assert s.press("2").action == rs.DONE and s.progress.skipped == 2 and s.progress.done == 2


def test_transcripts_and_wer_are_there_but_hidden_until_toggled(qc_project, queued):
    add_transcript(qc_project, queued[0], "a", "heard text")
    s = session(qc_project)
    assert s.current.transcripts == (("a", "heard text"),) and not s.current.transcripts_visible
    assert s.press("T").action == rs.REDRAW and s.current.transcripts_visible
    assert (s.current.item, s.current.language, s.current.accent, s.current.voice) == ("q1", "en", "american", "v1")


def test_speed_steps_by_a_tenth_between_half_and_double(qc_project, queued):
    s = session(qc_project)
    assert s.press("]").action == rs.SPEED and s.speed == 1.1
    for _ in range(20):
        s.press("]")
    assert s.speed == 2.0 and s.press("]").action == rs.IGNORED
    for _ in range(30):
        s.press("[")
    assert s.speed == 0.5 and s.press("[").action == rs.IGNORED
    assert s.press("Space").action == rs.PLAY and s.press("R").action == rs.PLAY


RATE_AND_WAIT = textwrap.dedent(
    """
    import sys
    from spokenbench.core.qc.rating_session import SynchronousRatingSession
    from spokenbench.core.store import Project

    project = Project.open(sys.argv[1])
    session = SynchronousRatingSession.open(project, sys.argv[2], "ana")
    session.press("3")
    print("RATED", session.current.clip_id, flush=True)
    sys.stdin.readline()  # wait here, the project still open, until killed
    """
)


@pytest.mark.slow
def test_a_rating_survives_sigkill_right_after_it(qc_project, queued):
    path = qc_project.path
    qc_project.close()
    process = subprocess.Popen(
        [sys.executable, "-c", RATE_AND_WAIT, str(path), QUEUE],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    line = process.stdout.readline()
    assert line.split() == ["RATED", str(queued[1])], process.stderr.read()
    os.kill(process.pid, signal.SIGKILL)
    process.wait(10)
    with Project.open(path) as reopened:
        assert [(r["clip_id"], r["rating"]) for r in stored(reopened)] == [(queued[0], "incorrect")]
        assert session(reopened).current.clip_id == queued[1]


def test_a_queue_sampled_before_screening_shows_each_clip_s_error_rate_once_it_is_screened(qc_project, queued):
    """Before, the session's transcripts line read 'WER —' for good: the rate came only from the sampling."""
    from spokenbench.core.asr.screening import screen_project

    assert [clip.error_rate for clip in queue_clips(qc_project.conn, QUEUE)] == [None] * 4
    texts = {clip.clip_id: clip.text for clip in queue_clips(qc_project.conn, QUEUE)}
    first = queued[0]
    for asr in ("a", "b"):
        for clip_id, text in texts.items():  # exact, but the first clip's last word missing
            add_transcript(qc_project, clip_id, asr, text.rsplit(" ", 1)[0] if clip_id == first else text)
    screen_project(qc_project)
    rates = {clip.clip_id: clip.error_rate for clip in queue_clips(qc_project.conn, QUEUE)}
    assert rates == {first: 0.5, **{clip_id: 0.0 for clip_id in queued[1:]}}
    view = session(qc_project).current
    assert view.clip_id == first and view.wer == 0.5
