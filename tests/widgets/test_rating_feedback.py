"""What the Rating page says back, driven by keys: the session tally after re-rating a browsed clip, what an
undo took back, a character-language clip's error rate named CER as on the Items page, and a skipped clip named
once."""

from types import SimpleNamespace

import pytest
from PySide6.QtCore import Qt

import spokenbench.app.rating_page as rating_page
from spokenbench.app.rating_page import RatingPage
from spokenbench.core.asr.normalize import error_rate_name
from spokenbench.core.qc.queues import queue_clips, rate_clip
from spokenbench.core.store import opened

ANNOTATOR = "alice"


@pytest.fixture
def page(qtbot, demo_copy, open_session, monkeypatch):
    monkeypatch.setattr(rating_page, "ready_asr_systems", lambda: [])
    page = RatingPage(SimpleNamespace(annotator=ANNOTATOR))
    qtbot.addWidget(page)
    page.resize(1000, 700)
    page.show()
    page.set_session(open_session(demo_copy))
    qtbot.waitUntil(lambda: page.queue_list.table.rowCount() >= 1, timeout=15_000)
    return page


def open_demo_queue(page, qtbot):
    page.open_queue("demo-qc")
    qtbot.waitUntil(lambda: page.rating is not None and page.idle, timeout=5_000)
    return page.rating


def press(page, qtbot, key, modifier=Qt.KeyboardModifier.NoModifier):
    qtbot.keyClick(page.view, key, modifier)
    qtbot.waitUntil(lambda: page.idle, timeout=5_000)


@pytest.mark.slow
def test_re_rating_a_browsed_clip_replaces_its_count_and_undo_says_what_it_took_back(page, qtbot):
    session = open_demo_queue(page, qtbot)
    first = session.current
    press(page, qtbot, "1")
    press(page, qtbot, "2")
    assert session.progress.session_counts == {"correct": 1, "acceptable": 1, "incorrect": 0}
    press(page, qtbot, Qt.Key.Key_Left)
    press(page, qtbot, Qt.Key.Key_Left)
    assert session.current.clip_id == first.clip_id
    press(page, qtbot, "3")  # re-rate the first clip: it now counts as incorrect, no longer as correct
    assert session.progress.done == 2
    assert session.progress.session_counts == {"correct": 0, "acceptable": 1, "incorrect": 1}
    assert "2 / " in page.view.progress_label.text()
    assert "0 correct, 1 acceptable, 1 incorrect" in page.view.progress_label.text()

    press(page, qtbot, Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier)
    qtbot.waitUntil(lambda: page.view.status_label.text().startswith("Undid"), timeout=5_000)
    status = page.view.status_label.text()
    assert f"Undid rating 3 (incorrect) of clip {first.clip_id} ({first.item} {first.part})" in status
    assert "correct counts again" in status
    assert session.progress.session_counts == {"correct": 1, "acceptable": 1, "incorrect": 0}  # the 1 is back
    assert "Saved" not in status


@pytest.mark.slow
def test_a_chinese_clip_s_error_rate_reads_cer_as_on_the_items_page(page, qtbot, demo_copy):
    with opened(demo_copy) as project:
        clips = queue_clips(project.conn, "demo-qc")
        zh_at = next(i for i, clip in enumerate(clips) if clip.language.startswith("zh"))
        for clip in clips[:zh_at]:  # rated already: the session resumes at the Chinese clip
            rate_clip(project, clip.clip_id, ANNOTATOR, "correct", None, queue="demo-qc")
    session = open_demo_queue(page, qtbot)
    assert session.current.language.startswith("zh")
    press(page, qtbot, Qt.Key.Key_T)
    assert page.view.transcripts_label.text().splitlines()[0].startswith("CER ")
    assert error_rate_name("zh") == error_rate_name("ja") == "CER" and error_rate_name("en") == "WER"
    assert error_rate_name("ko", "cer") == "CER"  # the screened metric wins where one is stored


def spectrogram_shown(page, qtbot):
    """The demo queue opened and S pressed: the waveform view once its spectrogram is drawn for the size it has
    (drawn again, if the widget was resized while it was computed)."""
    open_demo_queue(page, qtbot)
    waveform = page.view.waveform
    press(page, qtbot, Qt.Key.Key_S)
    qtbot.waitUntil(lambda: waveform.has_spectrogram and waveform.spectrogram_fits, timeout=30_000)
    return waveform


@pytest.mark.slow
def test_s_shows_a_spectrogram_with_time_and_frequency_axes_at_the_size_shown(page, qtbot):
    waveform = spectrogram_shown(page, qtbot)
    picture = waveform._spectrogram
    assert picture.shape == (waveform.height(), waveform.width())
    assert 0.03 < picture.plot_left < 0.15 and 0.95 < picture.plot_right <= 1.0  # room for the kHz labels
    labels = picture.rgba[:, : int(picture.plot_left * waveform.width()) - 4, :3]
    assert (labels.max(axis=2) > 150).any()  # light text on the dark margin: the frequency tick labels
    below = picture.rgba[-20:, :, :3]
    assert (below.max(axis=2) > 150).any()  # and the time axis under the plot
    waveform.set_playhead(0.0)  # the playhead starts at the time axis' 0, not at the window's edge
    image = waveform.grab().toImage()
    x = round(picture.plot_left * waveform.width())
    assert image.pixelColor(x, waveform.height() // 2).name() == "#ffb347"


@pytest.mark.slow
def test_a_spectrogram_is_drawn_again_for_the_size_the_waveform_is_resized_to(page, qtbot):
    waveform = spectrogram_shown(page, qtbot)
    page.window().resize(page.window().width() - 120, page.window().height() - 60)
    qtbot.waitUntil(lambda: (waveform.height(), waveform.width()) != waveform._spectrogram.shape, timeout=5_000)
    qtbot.waitUntil(lambda: waveform.spectrogram_fits, timeout=30_000)  # drawn again, once the resize settled
    assert waveform._spectrogram.shape == (waveform.height(), waveform.width())


def test_a_skipped_clip_is_named_once_in_the_session_s_skipped_line(qtbot):
    """The audio's own error already names the clip ('clip 7 (demo/001 question): …'): the line said 'clip 7
    (#1): clip 7 (…)' and '1 clips'."""
    from spokenbench.core.qc.rating_session import SkippedClip
    from spokenbench.widgets.rating_view import RatingView

    view = RatingView()
    qtbot.addWidget(view)
    view.show_skipped([SkippedClip(7, 1, "clip 7 (demo/001 question): the audio decodes to more than 240 minutes")])
    assert view.skipped_label.text() == (
        "1 clip skipped (missing or unreadable audio): #1 clip 7 (demo/001 question): the audio decodes to more "
        "than 240 minutes"
    )
    view.show_skipped([SkippedClip(7, 1, "clip 7: gone"), SkippedClip(9, 4, "the audio file is missing")])
    assert view.skipped_label.text() == (
        "2 clips skipped (missing or unreadable audio): #1 clip 7: gone; #4 clip 9: the audio file is missing"
    )


@pytest.mark.slow
def test_the_spectrogram_s_labels_are_drawn_again_as_large_as_the_app_s_text(page, qtbot):
    """View → Larger text left the spectrogram's axis labels at the size they had (8 points at 100 dpi) while
    every other text on the Rating page grew."""
    from spokenbench.app.text_size import apply_text_size

    def label_columns(picture) -> int:
        """Columns left of the plot with light text in them: the frequency axis' name and its numbers, side by side."""
        margin = picture.rgba[:, : round(picture.shape[1] * picture.plot_left) - 6, :3]
        return int((margin.max(axis=2) > 150).any(axis=0).sum())

    waveform = spectrogram_shown(page, qtbot)
    before = waveform._spectrogram
    apply_text_size(150)
    qtbot.waitUntil(lambda: waveform.spectrogram_fits, timeout=30_000)  # drawn again on its own
    after = waveform._spectrogram
    assert after.drawn_for[3] == 1.5 and after.shape == (waveform.height(), waveform.width())  # lower: the text grew
    assert after.plot_left == pytest.approx(before.plot_left * 1.5, rel=0.05)  # room for the larger kHz labels
    assert label_columns(after) >= 1.3 * label_columns(before)


def test_the_session_s_lines_take_one_line_each_at_the_normal_size(page, qtbot):
    """The progress line wraps where the text is larger (it made the Rating page 1,078 pixels wide at 175 %): given
    only its size hint beside the queue's name, it took two lines at 100 % in a 1000-pixel page."""
    open_demo_queue(page, qtbot)
    press(page, qtbot, Qt.Key.Key_1)  # 'this session: 1 correct, …': its longest
    view = page.view
    qtbot.waitUntil(lambda: "this session" in view.progress_label.text(), timeout=5_000)
    two_lines = 2 * view.fontMetrics().lineSpacing()
    for label in (view.progress_label, view.meta_label, view.state_label):
        assert label.heightForWidth(label.width()) < two_lines, label.text()  # its text at the width it has
