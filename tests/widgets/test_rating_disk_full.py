"""A rating pressed on a full disk (a laptop's disk filled by a download, the project on a small USB stick): the
rater is told it was not saved and why, stays on the clip with the note typed for it, and the same key saves it
once there is room. The disk is a real one: a 100 MB tmpfs filled to the last byte (mounting needs root; the test
is skipped where it is not allowed). Before, the message told the annotator to "run the command again", words
for the command line."""

import contextlib
import os
import shutil
from types import SimpleNamespace

import pytest
from support import entered_or_skipped, fill_disk, tmpfs

from spokenbench.core.store import opened

ANNOTATOR = "alice"


@pytest.fixture
def small_disk(tmp_path):
    """A 100 MB tmpfs at tmp_path/disk, unmounted after the test."""
    with contextlib.ExitStack() as stack:
        yield entered_or_skipped(stack, tmpfs(tmp_path / "disk"))


def stored(project) -> list[tuple[str, str | None]]:
    with opened(project) as opened_project:
        rows = opened_project.conn.execute(
            "SELECT rating, note FROM ratings WHERE annotator = ? ORDER BY id", (ANNOTATOR,)
        ).fetchall()
    return [tuple(row) for row in rows]


@pytest.mark.slow
@pytest.mark.skipif(os.geteuid() != 0, reason="mounting a tmpfs needs root")
def test_a_rating_on_a_full_disk_is_not_saved_says_why_and_saves_with_its_note_once_there_is_room(
    qtbot, built_demo, small_disk, rating_page_on_demo_queue
):
    project = shutil.copytree(built_demo, small_disk / "demo-project")
    page = rating_page_on_demo_queue(SimpleNamespace(annotator=ANNOTATOR), project)
    qtbot.keyClick(page.view, "1")
    qtbot.waitUntil(lambda: page.view.status_label.text() == "Saved" and page.idle, timeout=10_000)
    clip = page.rating.current.clip_id
    qtbot.keyClick(page.view, "n")
    qtbot.waitUntil(lambda: getattr(page, "note_dialog", None) is not None and page.note_dialog.isVisible())
    page.note_dialog.setTextValue("a click at 0.4 s")
    page.note_dialog.accept()

    filler = fill_disk(small_disk)
    qtbot.keyClick(page.view, "2")
    qtbot.waitUntil(lambda: page.view.status_label.text().startswith("Not saved:") and page.idle, timeout=10_000)
    text = page.view.status_label.text()
    assert "the disk is full" in text and "free some space and try again" in text, text
    assert "command" not in text, text  # an annotator runs no command
    assert page.rating.current.clip_id == clip and stored(project) == [("correct", None)]

    filler.unlink()
    qtbot.keyClick(page.view, "2")  # the same key, once there is room
    qtbot.waitUntil(lambda: page.view.status_label.text() == "Saved" and page.idle, timeout=10_000)
    assert stored(project) == [("correct", None), ("acceptable", "a click at 0.4 s")]
    assert page.rating.current.clip_id != clip
