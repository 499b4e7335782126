"""The Rating page on the demo project: keyboard-only rating through the writer, double presses, undo, the
no-audio banner, what screening needs, queue creation with its strata preview, skipped clips."""

import csv
from types import SimpleNamespace

import pytest
from demo_copies import linked_copy, replace_file
from PySide6.QtCore import Qt
from support import strip_simulated_qc

import spokenbench.app.rating_page as rating_page
from spokenbench.app.audio import NO_DEVICE_FLASH
from spokenbench.app.rating_page import RatingPage
from spokenbench.core.audio import playback
from spokenbench.core.audio.playback import ClipPlayer, FakeOutputStream
from spokenbench.core.qc import store as qc_store
from spokenbench.core.qc.queues import queue_clips
from spokenbench.core.qc.rating_session import validate_keymap
from spokenbench.core.store import opened

ANNOTATOR = "alice"


@pytest.fixture
def demo_copy(demo_copy):
    """The demo without its simulated transcripts, screening and ratings (its queue sampled by language): these
    tests show such a project and add their own."""
    strip_simulated_qc(demo_copy)
    return demo_copy


@pytest.fixture
def no_asr(monkeypatch):
    monkeypatch.setattr(rating_page, "ready_asr_systems", lambda: [])


@pytest.fixture
def page(qtbot, demo_copy, open_session, no_asr):
    page = RatingPage(SimpleNamespace(annotator=ANNOTATOR))
    qtbot.addWidget(page)
    page.resize(1000, 700)
    page.show()
    page.set_session(open_session(demo_copy))
    qtbot.waitUntil(lambda: page.queue_list.table.rowCount() == 1, timeout=15_000)  # 2 cores, shared
    return page


def open_demo_queue(page, qtbot):
    page.open_queue("demo-qc")
    qtbot.waitUntil(lambda: page.rating is not None and page.idle, timeout=5_000)
    return page.rating


def live_ratings(path):
    with opened(path) as project:
        return qc_store.live_ratings_by(project.conn, ANNOTATOR)


def rating_rows(path):
    with opened(path) as project:
        return [tuple(r) for r in project.conn.execute("SELECT clip_id, rating, undone_at FROM ratings ORDER BY id")]


def press(page, qtbot, key, modifier=Qt.KeyboardModifier.NoModifier):
    qtbot.keyClick(page.view, key, modifier)
    qtbot.waitUntil(lambda: page.idle, timeout=5_000)


@pytest.mark.slow
def test_rating_the_demo_queue_with_keys_alone_stores_each_rating(page, qtbot, demo_copy):
    session = open_demo_queue(page, qtbot)
    assert page.stack.currentWidget() is page.view
    with opened(demo_copy) as project:
        order = [c.clip_id for c in queue_clips(project.conn, "demo-qc")]
    assert session.current.clip_id == order[0]
    assert page.view.text_label.text() == session.current.text
    assert page.view.waveform.column_peaks(100) is not None  # the waveform arrived with the clip
    for key in ("1", "2", "3", "1"):
        press(page, qtbot, key)
    assert {clip: rating for clip, (_id, rating, _note) in live_ratings(demo_copy).items()} == {
        order[0]: "correct",
        order[1]: "acceptable",
        order[2]: "incorrect",
        order[3]: "correct",
    }
    assert session.current.clip_id == order[4]
    assert "4 / 24 rated" in page.view.progress_label.text()
    assert "2 correct, 1 acceptable, 1 incorrect" in page.view.progress_label.text()


@pytest.mark.slow
def test_a_double_key_press_stores_one_rating(page, qtbot, demo_copy):
    open_demo_queue(page, qtbot)
    qtbot.keyClick(page.view, "1")
    qtbot.keyClick(page.view, "1")  # arrives while the first is being saved
    qtbot.waitUntil(lambda: page.idle, timeout=5_000)
    assert page.ignored_keys == 1
    assert len(rating_rows(demo_copy)) == 1


@pytest.mark.slow
def test_ctrl_z_undoes_the_last_rating_and_offers_its_clip_again(page, qtbot, demo_copy):
    session = open_demo_queue(page, qtbot)
    first = session.current.clip_id
    press(page, qtbot, "2")
    assert session.current.clip_id != first
    press(page, qtbot, Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier)
    [(clip, rating, undone_at)] = rating_rows(demo_copy)
    assert (clip, rating) == (first, "acceptable") and undone_at is not None  # kept, marked undone
    assert live_ratings(demo_copy) == {}
    assert session.current.clip_id == first and page.view.text_label.text() == session.current.text


@pytest.mark.slow
def test_left_browses_back_to_a_rated_clip(page, qtbot):
    session = open_demo_queue(page, qtbot)
    first = session.current.clip_id
    press(page, qtbot, "3")
    press(page, qtbot, Qt.Key.Key_Left)
    assert session.current.clip_id == first and "incorrect" in page.view.state_label.text()
    press(page, qtbot, Qt.Key.Key_Right)
    assert session.current.clip_id != first


@pytest.mark.slow
def test_the_key_map_labels_the_buttons_and_the_help_overlay(page, qtbot):
    open_demo_queue(page, qtbot)
    assert page.view.buttons["rate_correct"].text() == "Correct  (1)"
    assert page.view.buttons["replay"].text() == "Replay  (Space / R)"
    qtbot.keyClick(page.view, "?")
    assert page.view.help_overlay.isVisible() and "Ctrl+Z" in page.view.help_overlay.text()
    assert not page.view.transcripts_label.isVisible()
    qtbot.keyClick(page.view, "t")
    assert page.view.transcripts_label.isVisible() and "WER" in page.view.transcripts_label.text()


@pytest.mark.slow
def test_speed_steps_render_the_clip_at_the_new_speed(page, qtbot):
    session = open_demo_queue(page, qtbot)
    normal = page.clip_audio.duration_s
    qtbot.keyClick(page.view, "]")
    qtbot.waitUntil(lambda: page.clip_audio.speed == 1.1, timeout=5_000)
    assert session.speed == 1.1
    assert page.clip_audio.duration_s == pytest.approx(normal / 1.1, rel=0.02)


@pytest.mark.slow
def test_s_shows_the_spectrogram(page, qtbot):
    open_demo_queue(page, qtbot)
    qtbot.keyClick(page.view, "s")
    assert page.view.waveform.show_spectrogram
    # the first spectrogram imports scipy.signal (~2.5 s of CPU): ~10 s of wall at a load average of 13
    qtbot.waitUntil(lambda: page.view.waveform.has_spectrogram, timeout=30_000)


@pytest.mark.slow
def test_the_spectrogram_key_is_one_of_the_key_map_on_its_button_in_the_help_and_remappable(page, qtbot):
    open_demo_queue(page, qtbot)
    assert page.view.buttons["toggle_spectrogram"].text() == "Spectrogram  (S)"
    assert "<b>S</b></td><td>Spectrogram</td>" in page.view.help_overlay.text()
    page.use_keymap(validate_keymap({"note": ["S"], "toggle_spectrogram": ["G"]}))  # as Settings hands it over
    assert page.view.buttons["toggle_spectrogram"].text() == "Spectrogram  (G)"
    assert "<b>G</b></td><td>Spectrogram</td>" in page.view.help_overlay.text()
    qtbot.keyClick(page.view, "s")  # now the note key: it no longer switches the picture
    assert not page.view.waveform.show_spectrogram and page.note_dialog.isVisible()
    page.note_dialog.reject()
    qtbot.keyClick(page.view, "g")
    assert page.view.waveform.show_spectrogram
    page.view.buttons["toggle_spectrogram"].click()
    assert not page.view.waveform.show_spectrogram


@pytest.mark.slow
def test_a_spectrogram_key_pressed_while_saving_still_switches_the_picture(page, qtbot, demo_copy):
    open_demo_queue(page, qtbot)
    qtbot.keyClick(page.view, "1")
    assert page.busy
    qtbot.keyClick(page.view, "s")
    assert page.view.waveform.show_spectrogram and page.ignored_keys == 0
    qtbot.waitUntil(lambda: page.idle, timeout=5_000)
    assert len(rating_rows(demo_copy)) == 1


@pytest.mark.slow
def test_without_an_audio_device_a_banner_explains_and_rating_still_works(
    qtbot, demo_copy, open_session, no_asr, monkeypatch
):
    monkeypatch.setattr(playback, "output_devices", lambda: [])
    page = RatingPage(SimpleNamespace(annotator=ANNOTATOR))
    qtbot.addWidget(page)
    page.show()
    page.set_session(open_session(demo_copy))
    assert page.player is None
    session = open_demo_queue(page, qtbot)
    banner = page.view.banner.text()
    assert page.view.banner.isVisible() and "No audio output device" in banner
    assert "no transcripts yet" in banner and "with T" not in banner  # this demo copy has none to read
    arrived = page.play_requested_at
    assert arrived is not None  # the clip is asked to play on arrival, device or not
    first = session.current.clip_id
    press(page, qtbot, "1")
    assert len(live_ratings(demo_copy)) == 1
    assert session.current.clip_id != first and page.play_requested_at > arrived  # and so is the next one


@pytest.mark.slow
def test_without_an_audio_device_the_banner_points_to_the_transcripts_when_there_are_some(
    qtbot, built_demo, tmp_path, open_session, no_asr, monkeypatch
):

    monkeypatch.setattr(playback, "output_devices", lambda: [])
    project = linked_copy(built_demo, tmp_path / "with-transcripts")  # the demo's simulated transcripts kept
    page = RatingPage(SimpleNamespace(annotator=ANNOTATOR))
    qtbot.addWidget(page)
    page.show()
    page.set_session(open_session(project))
    session = open_demo_queue(page, qtbot)
    assert session.has_transcripts
    assert "with T, the transcripts" in page.view.banner.text()


@pytest.mark.slow
def test_a_project_without_transcripts_says_what_screening_needs(page, qtbot, demo_copy, monkeypatch):
    with opened(demo_copy) as project:  # the demo has no transcripts
        assert project.conn.execute("SELECT count(*) FROM transcripts").fetchone()[0] == 0
    box = page.queue_list
    assert box.screening_box.isVisibleTo(page)
    assert box.screening_text.text() == rating_page.screening_requirements()
    assert not box.transcribe_button.isEnabled() and "OPENAI_API_KEY" in box.transcribe_button.text()
    monkeypatch.setattr(rating_page, "ready_asr_systems", lambda: ["openai:whisper-1", "gemini:gemini-2.5-flash"])
    qtbot.waitSignal(page.refresh_queues().finished, timeout=5_000).wait()
    assert box.transcribe_button.isEnabled()
    assert box.transcribe_button.text() == "Transcribe with openai:whisper-1, gemini:gemini-2.5-flash"


@pytest.mark.slow
def test_creating_a_queue_shows_its_strata_before_storing_it(page, qtbot, demo_copy):
    dialog = page.create_queue()
    qtbot.waitUntil(lambda: dialog.filter_boxes["language"].count() > 1, timeout=5_000)
    dialog.name_edit.setText("mine")
    dialog.per_bin.setValue(3)
    assert not dialog.create_button.isEnabled()  # nothing previewed yet
    dialog.preview_button.click()
    qtbot.waitUntil(lambda: dialog.previewed is not None, timeout=5_000)
    rows = [[dialog.strata.item(r, c).text() for c in range(5)] for r in range(dialog.strata.rowCount())]
    assert [row[0] for row in rows] == ["en", "zh", "ko"] and all(row[4] == "3" for row in rows)
    assert all(int(row[2]) > 3 for row in rows)  # the pool each stratum drew from
    with opened(demo_copy) as project:
        assert qc_store.queue_id_by_name(project.conn, "mine") is None  # previewing stores nothing
    dialog.seed.setValue(7)
    assert not dialog.create_button.isEnabled()  # the preview no longer matches the choice
    dialog.seed.setValue(0)
    dialog.create_button.click()
    qtbot.waitUntil(lambda: page.queue_list.table.rowCount() == 2, timeout=5_000)
    with opened(demo_copy) as project:
        assert len(queue_clips(project.conn, "mine")) == 9


@pytest.mark.slow
def test_a_filtered_queue_holds_only_the_chosen_language(page, qtbot):
    dialog = page.create_queue()
    qtbot.waitUntil(lambda: dialog.filter_boxes["language"].count() > 1, timeout=5_000)
    dialog.mode_buttons.button(1).click()
    dialog.filter_boxes["language"].setCurrentText("ko")
    dialog.per_bin.setValue(5)
    dialog.preview_button.click()
    qtbot.waitUntil(lambda: dialog.previewed is not None, timeout=5_000)
    assert dialog.strata.rowCount() == 1 and dialog.strata.item(0, 0).text() == "ko"


@pytest.mark.slow
def test_a_missing_clip_is_skipped_and_its_reason_shown(page, qtbot, demo_copy):
    with opened(demo_copy) as project:
        first = queue_clips(project.conn, "demo-qc")[0]
        project.audio.path_for(first.sha256, first.audio_format).unlink()
    session = open_demo_queue(page, qtbot)
    assert session.current.clip_id != first.clip_id
    assert page.view.skipped_label.isVisible()
    assert f"clip {first.clip_id}" in page.view.skipped_label.text() and "missing" in page.view.skipped_label.text()


@pytest.mark.slow
def test_a_damaged_clip_file_is_marked_and_skipped_without_a_crash(page, qtbot, demo_copy):
    with opened(demo_copy) as project:
        clips = queue_clips(project.conn, "demo-qc")
        replace_file(project.audio.path_for(clips[1].sha256, clips[1].audio_format), b"not audio at all")
    session = open_demo_queue(page, qtbot)
    assert session.current.clip_id == clips[0].clip_id
    press(page, qtbot, "1")  # the next clip is the damaged one: skipped on the way
    assert session.current.clip_id == clips[2].clip_id
    assert page.view.text_label.text() == session.current.text
    assert [s.clip_id for s in session.skipped] == [clips[1].clip_id]
    assert page.view.skipped_label.isVisible() and f"clip {clips[1].clip_id}" in page.view.skipped_label.text()
    assert "1 skipped" in page.view.progress_label.text()
    press(page, qtbot, "2")
    assert {clip for clip in live_ratings(demo_copy)} == {clips[0].clip_id, clips[2].clip_id}


@pytest.mark.slow
def test_n_asks_for_a_note_that_is_stored_with_the_rating(page, qtbot, demo_copy):
    session = open_demo_queue(page, qtbot)
    first = session.current.clip_id
    qtbot.keyClick(page.view, "n")
    dialog = page.note_dialog
    assert dialog.isVisible()
    dialog.setTextValue("clipped at the end")
    dialog.accept()
    assert "clipped at the end" in page.view.state_label.text()
    press(page, qtbot, "3")
    assert live_ratings(demo_copy)[first][1:] == ("incorrect", "clipped at the end")


def test_a_note_dialog_opened_for_hours_keeps_one_window_not_one_per_note(page, qtbot):
    """Each N made a new dialog that stayed, with its window, until the page went: 35 notes in a 600-clip
    session on the real X server had 35 more memory maps. The closed one is deleted before the next."""
    from PySide6.QtWidgets import QInputDialog

    open_demo_queue(page, qtbot)
    for _ in range(30):
        qtbot.keyClick(page.view, "n")
        assert page.note_dialog.isVisible()
        page.note_dialog.reject()
        qtbot.wait(1)  # the deferred deletion of the one before
    qtbot.waitUntil(lambda: len(page.findChildren(QInputDialog)) == 1)


@pytest.mark.slow
def test_transcribe_starts_a_job_with_the_configured_asr_systems(page, qtbot, demo_copy, monkeypatch):
    asked = []

    def fake_transcription(specs):
        asked.append(specs)
        return lambda project, progress: {"transcripts": 0, "failed_clips": 0}

    monkeypatch.setattr(rating_page, "transcribe_with", fake_transcription)
    monkeypatch.setattr(rating_page, "ready_asr_systems", lambda: ["openai:whisper-1", "gemini:gemini-2.5-flash"])
    qtbot.waitSignal(page.refresh_queues().finished, timeout=5_000).wait()
    with qtbot.waitSignal(page.queue_list.transcribe_button.clicked, timeout=1_000):
        page.queue_list.transcribe_button.click()
    [job] = [op for op in page.session.runner.running if getattr(op, "kind", None) == "transcribe"]
    qtbot.waitSignal(job.finished, timeout=5_000).wait()
    assert job.status == "succeeded" and asked == [["openai:whisper-1", "gemini:gemini-2.5-flash"]]
    with opened(demo_copy) as project:
        kinds = [row[0] for row in project.conn.execute("SELECT kind FROM jobs")]
    assert "transcribe" in kinds


@pytest.mark.slow
def test_space_and_r_replay_the_clip(page, qtbot):
    session = open_demo_queue(page, qtbot)
    shown = session.current.clip_id
    for key in (Qt.Key.Key_Space, "r"):
        before = page.play_requested_at
        page.view.status_label.clear()
        qtbot.keyClick(page.view, key)
        assert page.play_requested_at > before and session.current.clip_id == shown
        assert (
            page.view.status_label.text() == f"{NO_DEVICE_FLASH} (rating still works)"
        )  # the key is answered: no sound here


@pytest.mark.slow
def test_the_clip_plays_on_arrival_and_the_playhead_follows_the_player(qtbot, demo_copy, open_session, no_asr):
    """The page posts the clip to the player (here over a fake PortAudio stream) and polls its position."""
    streams = []
    player = ClipPlayer(
        stream_factory=lambda device, rate: streams.append(FakeOutputStream(device, rate)) or streams[-1]
    )
    page = RatingPage(SimpleNamespace(annotator=ANNOTATOR, player=player))
    qtbot.addWidget(page)
    page.show()
    page.set_session(open_session(demo_copy))
    assert page.player is player and not page.view.banner.isVisible()
    open_demo_queue(page, qtbot)
    qtbot.waitUntil(lambda: page.view.waveform.playhead > 0.05, timeout=5_000)
    assert player.state.request == page.play_request and player.state.playing
    assert sum(len(chunk) for chunk in streams[0].written) > 0
    page.hide()  # leaving the page silences it
    qtbot.waitUntil(lambda: not player.state.playing, timeout=2_000)
    player.close()
    assert player.join(2.0)


@pytest.mark.slow
def test_a_burst_of_speed_and_replay_keys_ends_with_the_current_clip_playing_at_its_speed(
    qtbot, demo_copy, open_session, no_asr
):
    """`]` `[` Space R pressed as fast as keys go: each only posts to the player; the last one wins."""
    player = ClipPlayer(stream_factory=FakeOutputStream)
    page = RatingPage(SimpleNamespace(annotator=ANNOTATOR, player=player))
    qtbot.addWidget(page)
    page.show()
    page.set_session(open_session(demo_copy))
    session = open_demo_queue(page, qtbot)
    for _round in range(15):
        for key in ("]", "[", Qt.Key.Key_Space, "r", "]"):
            qtbot.keyClick(page.view, key)
    qtbot.waitUntil(lambda: page.clip_audio is not None and page.clip_audio.speed == session.speed, timeout=10_000)
    qtbot.waitUntil(lambda: player.state.request == page.play_request and player.state.playing, timeout=5_000)
    assert session.speed > 1.0 and player.state.duration_s == pytest.approx(page.clip_audio.duration_s, rel=0.01)
    press(page, qtbot, "1")
    assert len(rating_rows(demo_copy)) == 1
    player.close()
    assert player.join(2.0)


@pytest.mark.slow
def test_enter_on_the_selected_queue_starts_it(page, qtbot):
    assert page.stack.currentWidget() is page.queue_list and page.queue_list.table.hasFocus()
    qtbot.keyClick(page.queue_list.table, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: page.rating is not None and page.idle, timeout=5_000)
    assert page.stack.currentWidget() is page.view and page.rating.queue == "demo-qc"


@pytest.mark.slow
def test_new_transcripts_are_screened_before_the_queue_dialog_offers_its_strata(page, qtbot, demo_copy, tmp_path, cli):
    from spokenbench.core.asr.screening import screening_needs_update

    with opened(demo_copy) as project:
        clips = queue_clips(project.conn, "demo-qc")[:6]
    for asr in ("asr-a", "asr-b"):  # screening compares two systems
        path = tmp_path / f"{asr}.csv"
        with path.open("w", newline="", encoding="utf-8") as handle:
            writer = csv.writer(handle)
            writer.writerow(["clip_id", "text"])
            writer.writerows([(clip.clip_id, clip.text) for clip in clips])
        assert cli("import-transcripts", demo_copy, path, "--asr", asr).code == 0
    with opened(demo_copy) as project:
        assert screening_needs_update(project.conn)
    dialog = page.create_queue()
    qtbot.waitUntil(lambda: dialog.filter_boxes["language"].count() > 1, timeout=10_000)
    with opened(demo_copy) as project:
        assert not screening_needs_update(project.conn)  # a screen job ran first
        kinds = [row[0] for row in project.conn.execute("SELECT kind FROM jobs")]
    assert "screen" in kinds
    assert "no screening yet" not in dialog.mode_buttons.button(0).text()


@pytest.mark.slow
def test_the_create_queue_dialog_mixes_in_hidden_controls(page, qtbot, demo_copy):
    from spokenbench.core.qc.controls import control_clips

    dialog = page.create_queue()
    qtbot.waitUntil(lambda: dialog.filter_boxes["language"].count() > 1, timeout=5_000)
    dialog.name_edit.setText("with-controls")
    dialog.per_bin.setValue(3)
    dialog.controls.setValue(4)
    dialog.preview_button.click()
    qtbot.waitUntil(lambda: dialog.previewed is not None, timeout=5_000)
    assert "4 hidden control clips" in dialog.summary.text()
    dialog.create_button.click()
    qtbot.waitUntil(lambda: page.queue_list.table.rowCount() == 2, timeout=15_000)
    with opened(demo_copy) as project:
        queue = queue_clips(project.conn, "with-controls")
        known = control_clips(project.conn)
    assert len(queue) == 13 and sum(clip.clip_id in known for clip in queue) == 4


@pytest.mark.slow
def test_an_unscreened_sample_asked_for_says_so_not_that_screening_is_missing(demo_copy):
    """Choosing "Unscreened strata" on purpose said "no ASR screening yet … run `spokenbench screen`": wrong on
    a screened project, and a command for someone in the app. Without screening, the note names the app's
    Transcribe as well as the command."""
    spec = {"per_bin": 5, "seed": 0, "filters": {}}
    with opened(demo_copy) as project:  # the demo without its transcripts: nothing screened
        asked = rating_page.sample_preview(project, {**spec, "mode": "unscreened"})
        wanted = rating_page.sample_preview(project, {**spec, "mode": "wer-bins"})
    assert asked.note == "sampled by language, accent and subject only, as asked (WER intervals ignored)"
    assert wanted.strategy == "unscreened" and wanted.note.startswith("no ASR screening yet")
    assert "Transcribe on the Rating page" in wanted.note and "spokenbench screen" not in wanted.note


def test_the_create_queue_dialog_shows_its_column_headers_whole_before_a_preview(qtbot):
    """Opened by keys on a real X server, its strata table read "uotas (accent: N" until the first preview
    sized the columns."""
    from PySide6.QtGui import QFontMetrics

    from spokenbench.widgets.queue_dialog import QueueDialog

    dialog = QueueDialog()
    qtbot.addWidget(dialog)
    dialog.show()
    header = dialog.strata.horizontalHeader()
    metrics = QFontMetrics(header.font())
    for column in range(dialog.strata.columnCount() - 1):  # the last one stretches
        text = dialog.strata.horizontalHeaderItem(column).text()
        assert header.sectionSize(column) >= metrics.horizontalAdvance(text), text
