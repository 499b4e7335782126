"""A report is published whole: its files are written into a staging folder and moved into place once all are
written, the index last. Before, `report` wrote each file where it belongs as it went: a report killed, cancelled
or failing half-way left the folder with some tables of the new report, some of the old one and a truncated file
under an index that described neither (a paper's LaTeX reading that folder would have built silently)."""

import fcntl
import hashlib
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from metrics_helpers import random_design

from spokenbench.core.foundation.errors import Cancelled
from spokenbench.core.foundation.progress import Progress
from spokenbench.core.metrics.report import STAGING_PREFIX, write_report

FACTORS = ["language", "accent", "gender", "order"]
SPOKENBENCH = str(Path(sys.executable).with_name("spokenbench"))


def _contents(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir()) if p.is_file()}


def _staged(folder: Path) -> list[Path]:
    return [p for p in folder.iterdir() if p.name.startswith(STAGING_PREFIX)]


@pytest.fixture
def earlier_report(tmp_path):
    """A folder holding a report of other responses, as a paper's figures folder would."""
    frame = random_design(np.random.default_rng(7), n_questions=4)
    out = tmp_path / "report"
    write_report(frame, out, factors=FACTORS, n_resamples=0, workers=0, figure_formats=("png",))
    return out


def test_a_report_killed_while_writing_leaves_the_earlier_report_as_it_was(earlier_report, tmp_path):
    responses = tmp_path / "responses.csv"
    random_design(np.random.default_rng(8), n_questions=40).to_csv(responses, index=False)
    before = _contents(earlier_report)
    report = subprocess.Popen(
        [SPOKENBENCH, "report", str(responses), "--out", str(earlier_report), "--factors", ",".join(FACTORS)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 60
    while True:  # until it has written a file of its own (staged, or, before the fix, in place)
        staged = [p for folder in _staged(earlier_report) for p in folder.iterdir()]
        if staged or _contents(earlier_report) != before:
            break
        assert report.poll() is None and time.monotonic() < deadline, "the report ended before it wrote anything"
        time.sleep(0.005)
    report.send_signal(signal.SIGKILL)
    report.wait(timeout=30)
    assert _contents(earlier_report) == before, "the earlier report's files are untouched"
    assert len(_staged(earlier_report)) == 1, "the killed report's staging folder is left, hidden"
    # the next report there removes it, and publishes the same files a report into an empty folder writes
    written = write_report(responses, earlier_report, factors=FACTORS, workers=0, n_resamples=0)
    fresh = write_report(responses, tmp_path / "fresh", factors=FACTORS, workers=0, n_resamples=0)
    assert _staged(earlier_report) == []
    names = {p.name for p in written.files}
    assert names == {p.name for p in fresh.files}
    assert {k: v for k, v in _contents(earlier_report).items() if k in names} == _contents(tmp_path / "fresh")


def test_a_cancelled_report_changes_nothing_and_leaves_no_staging_folder(earlier_report):
    before = _contents(earlier_report)
    reports = []

    def cancel_once_writing(done, total, message):
        reports.append(message)
        if message == "writing tables and figures":
            progress.cancel()

    progress = Progress(cancel_once_writing)
    frame = random_design(np.random.default_rng(9), n_questions=6)
    with pytest.raises(Cancelled):
        write_report(frame, earlier_report, factors=FACTORS, n_resamples=0, workers=0, progress=progress)
    assert "writing tables and figures" in reports, "it was cancelled half-way through writing"
    assert _contents(earlier_report) == before
    assert _staged(earlier_report) == []


def test_a_report_published_into_a_folder_waits_for_one_publishing_there(earlier_report):
    """Two reports into one folder publish one after the other: the second's files all come after the first's."""
    before = _contents(earlier_report)
    frame = random_design(np.random.default_rng(10), n_questions=5)
    folder = os.open(earlier_report, os.O_RDONLY)
    fcntl.flock(folder, fcntl.LOCK_EX)  # as another report does while it moves its files in
    done = threading.Event()
    thread = threading.Thread(
        target=lambda: (write_report(frame, earlier_report, factors=FACTORS, n_resamples=0, workers=0), done.set())
    )
    try:
        thread.start()
        deadline = time.monotonic() + 60
        while not any(folder_ for folder_ in _staged(earlier_report) if (folder_ / "README.md").exists()):
            assert time.monotonic() < deadline, "the report was never staged"
            time.sleep(0.01)
        time.sleep(0.2)
        assert not done.is_set() and _contents(earlier_report) == before, "nothing moved in while the lock is held"
    finally:
        os.close(folder)
    thread.join(timeout=60)
    assert done.is_set() and _contents(earlier_report) != before and _staged(earlier_report) == []


def test_another_machines_staging_folder_is_removed_only_after_a_day(earlier_report, tmp_path):
    """Whether another machine's report still writes cannot be asked: its folder is garbage once a day old."""
    fresh, old = (earlier_report / f"{STAGING_PREFIX}another-host.4242.{n}.part" for n in ("0a", "0b"))
    for folder in (fresh, old):
        folder.mkdir()
        (folder / "accuracy.csv").write_text("half-written")
    day_ago = time.time() - 86_400 - 60
    os.utime(old, (day_ago, day_ago))
    responses = tmp_path / "responses.csv"
    random_design(np.random.default_rng(9), n_questions=4).to_csv(responses, index=False)
    write_report(responses, earlier_report, factors=FACTORS, workers=0, n_resamples=0, figure_formats=())
    assert _staged(earlier_report) == [fresh]
    assert (fresh / "accuracy.csv").read_text() == "half-written"


def test_publishing_cut_short_leaves_no_index_describing_the_wrong_files(earlier_report, tmp_path):
    """A file that cannot be replaced (here a folder where a table goes): the error is raised, the staging folder
    is gone, and the folder has no index — not the earlier one beside some of the new tables."""
    responses = tmp_path / "responses.csv"
    random_design(np.random.default_rng(10), n_questions=4).to_csv(responses, index=False)
    (earlier_report / "summary.md").unlink()
    (earlier_report / "summary.md").mkdir()
    (earlier_report / "summary.md" / "keep").write_text("a colleague's")
    with pytest.raises(IsADirectoryError):
        write_report(responses, earlier_report, factors=FACTORS, workers=0, n_resamples=0, figure_formats=())
    assert not (earlier_report / "README.md").exists() and _staged(earlier_report) == []
    assert (earlier_report / "summary.md" / "keep").read_text() == "a colleague's"
