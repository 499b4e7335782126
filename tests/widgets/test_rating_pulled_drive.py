"""A rating pressed while the project's USB stick is out, then again once it is back: the rater is told the project
can no longer be reached and to put it back, stays on the clip, and the same key saves the rating once the stick
is back. Before, the message said "the disk reported an input/output error … check the disk, then try again", and
trying again never worked: the app's writer kept its connection to the pulled stick's files, which fail for good
while the path works again (a stick put back is a new mount). The stick is a real exFAT file system on a loop
device through exfat-fuse (tests/support.py UsbStick: root, exfatprogs and exfat-fuse; skipped without them)."""

import contextlib
import os
import shutil
import threading
import time
from types import SimpleNamespace

import pytest
from support import entered_or_skipped, usb_stick

from spokenbench.app.operations import ProjectMonitor
from spokenbench.app.store_writer import StoreWriter
from spokenbench.core.store import Project, database, opened
from spokenbench.core.store.meta import read_meta, write_meta

ANNOTATOR = "alice"


@pytest.fixture
def stick(tmp_path):
    with contextlib.ExitStack() as stack:
        yield entered_or_skipped(stack, usb_stick(tmp_path / "usb"))


def stored(project) -> list[str]:
    with opened(project) as opened_project:
        rows = opened_project.conn.execute(
            "SELECT rating FROM ratings WHERE annotator = ? ORDER BY id", (ANNOTATOR,)
        ).fetchall()
    return [row[0] for row in rows]


@pytest.mark.slow
@pytest.mark.skipif(os.geteuid() != 0, reason="a loop device and a FUSE mount need root")
def test_a_rating_while_the_stick_is_out_says_so_and_the_same_key_saves_it_once_it_is_back(
    qtbot, built_demo, stick, rating_page_on_demo_queue
):
    project = shutil.copytree(built_demo, stick.mounted / "demo-project")
    os.sync()  # the copy on the stick, as one made and ejected elsewhere (a pull loses what was not written)
    page = rating_page_on_demo_queue(SimpleNamespace(annotator=ANNOTATOR), project)
    qtbot.keyClick(page.view, "1")
    qtbot.waitUntil(lambda: page.view.status_label.text() == "Saved" and page.idle, timeout=10_000)
    clip = page.rating.current.clip_id

    stick.pull_out()
    # the first fails on the old connection, the second opening a new one
    for said in ("the project can no longer be reached", "the project database cannot be opened"):
        qtbot.keyClick(page.view, "2")
        qtbot.waitUntil(lambda: page.view.status_label.text().startswith("Not saved:") and page.idle, timeout=10_000)
        text = page.view.status_label.text()
        assert said in text and "put it back, then try again" in text.lower(), text
        assert page.rating.current.clip_id == clip
        page.view.status_label.setText("")

    stick.plug_in()
    qtbot.keyClick(page.view, "2")  # the same key, once the stick is back
    qtbot.waitUntil(lambda: page.view.status_label.text() == "Saved" and page.idle, timeout=10_000)
    assert stored(project) == ["correct", "acceptable"]
    assert page.rating.current.clip_id != clip


def test_a_project_whose_folder_is_gone_is_said_to_be_unreachable(tmp_path):
    """What a writer opening its connection again hears while the stick is still out (a real SQLITE_CANTOPEN)."""
    with pytest.raises(database.ProjectError, match="cannot be opened \\(No such file or directory; .*put it back"):
        database.connect(tmp_path / "gone" / "project.sqlite", read_only=False)


@pytest.mark.slow
@pytest.mark.skipif(os.geteuid() != 0, reason="a loop device and a FUSE mount need root")
def test_the_writer_opens_its_connection_again_once_the_stick_is_back(stick):
    """The app's writer alone (no screen): every write while the stick is out fails, and the first after it is
    back succeeds. Before, the writer kept its connection to the pulled stick's files and failed for good."""
    Project.create(stick.mounted / "p").close()
    os.sync()
    writer = StoreWriter(stick.mounted / "p")

    def write(key: str) -> BaseException | None:
        done, errors = threading.Event(), []

        def store(project) -> None:
            with project.transaction() as conn:
                write_meta(conn, key, "1")

        writer.submit(store, lambda _result, error: (errors.append(error), done.set()), label=key)
        assert done.wait(30)
        return errors[0]

    try:
        assert write("before") is None
        stick.pull_out()
        assert write("out 1") is not None and write("out 2") is not None
        stick.plug_in()
        assert write("back") is None
    finally:
        writer.close()
    with opened(stick.mounted / "p") as project:
        assert [read_meta(project.conn, key) for key in ("before", "out 1", "out 2", "back")] == ["1", None, None, "1"]


@pytest.mark.slow
@pytest.mark.skipif(os.geteuid() != 0, reason="a loop device and a FUSE mount need root")
def test_the_monitor_sees_other_processes_changes_again_once_the_stick_is_back(stick):
    """The session's monitor (what tells the screens that another process changed the project) had kept its
    connection to the pulled stick's files too, and so saw nothing more until the project was opened again."""
    Project.create(stick.mounted / "p").close()
    os.sync()
    changes = []
    monitor = ProjectMonitor(stick.mounted / "p", changes.append, lambda _jobs: None, interval_s=0.05)
    monitor.start()
    try:
        time.sleep(0.3)  # its first reading
        stick.pull_out()
        time.sleep(0.3)
        stick.plug_in()
        time.sleep(0.3)
        with opened(stick.mounted / "p") as project, project.transaction() as conn:
            conn.execute("INSERT INTO speakers(name, created_at) VALUES ('Ana', '2026-12-05')")
        deadline = time.monotonic() + 5
        while not any("speakers" in tables for tables in changes) and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        monitor.stop()
    assert any("speakers" in tables for tables in changes), changes
