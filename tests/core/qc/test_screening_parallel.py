"""Screening on two cores (issue 28): half of the clips read and scored in a second process (forked, or spawned
where another thread runs) gives the same stored rows,
summary, Table 2, hallucinations and per-clip scores as scoring them all here — the pinned digests of
test_screening_pinned.py (computed before issue 28) hold for the forked path too — and a child that fails, or a
cancel while it runs, leaves the same result or nothing behind."""

import json
import multiprocessing
import os
import threading

import pytest
from test_screening_pinned import PINNED_RESULT, PINNED_ROWS, digest
from test_screening_pinned import test_stored_screening_is_unchanged as screen_the_pinned_corpus_here

from spokenbench.core.asr import screening
from spokenbench.core.asr.screening import compute_screening, screen_project, stored_table2
from spokenbench.core.foundation.child_process import ChildCallFailed, call_in_child, child_start_method
from spokenbench.core.foundation.errors import Cancelled
from spokenbench.core.foundation.processes import usable_cores
from spokenbench.core.foundation.progress import Progress

pytestmark = pytest.mark.skipif("fork" not in multiprocessing.get_all_start_methods(), reason="no fork here")


def _pinned_corpus_project(project):
    """The pinned test's corpus in `project`, screened in one process, its pinned digests checked."""
    screen_the_pinned_corpus_here(project)  # imported under another name: not collected again here
    return project


def _stored_rows(project) -> list:
    return [
        list(row)
        for row in project.conn.execute(
            "SELECT clip_id, metric, errors, reference_units, error_rate, wer_bin, best_asr, asr_count, cer "
            "FROM clip_screening ORDER BY clip_id"
        )
    ]


def _everything(result) -> tuple:
    return (
        list(result.scores.items()),
        result.unscorable,
        list(result.too_few_transcripts.items()),
        result.summary(),
        result.table2(),
        result.hallucinated,
    )


@pytest.fixture
def forked_parts(monkeypatch) -> list:
    """The parts the forked child handed back (screening fell back to one process when it stays empty). Forked
    whether or not an earlier test left a thread running: the child sees this test's patches."""
    monkeypatch.setattr(screening, "child_start_method", lambda: "fork")
    handed_back = []
    decoded_part = screening._decoded_part

    def recorded(part):
        handed_back.append(part)
        return decoded_part(part)

    monkeypatch.setattr(screening, "_decoded_part", recorded)
    return handed_back


@pytest.mark.slow
def test_the_forked_half_stores_the_pinned_rows_and_results(project, forked_parts):
    _pinned_corpus_project(project)
    serial = compute_screening(project.conn, parallel=False)
    result = screen_project(project, parallel=True)
    assert len(forked_parts) == 1 and 500 < len(forked_parts[0][1]) < 1000  # the child scored about half
    assert digest(_stored_rows(project)) == PINNED_ROWS
    pinned = [result.summary(), result.table2(), stored_table2(project.conn), result.hallucinated, result.unscorable]
    assert digest(json.loads(json.dumps(pinned))) == PINNED_RESULT
    assert _everything(result) == _everything(serial)  # every clip's score, per ASR system, in the same order
    # read by the child alone since round 4 of issue 28: every clip's language, in the same order, and the state
    assert list(result.languages.items()) == list(serial.languages.items())
    assert result.transcript_state == serial.transcript_state == screening.store.transcript_state(project.conn)
    assert all(type(score) is type(serial.scores[clip_id]) for clip_id, score in result.scores.items())
    assert result.unscorable and result.too_few_transcripts and result.hallucinated  # the corpus has each kind
    assert compute_screening(project.conn, parallel=True).scores == serial.scores  # without storing, the same
    assert not multiprocessing.active_children()


def _in_the_child_only(monkeypatch, target, name: str, replacement) -> None:
    parent, original = os.getpid(), getattr(target, name)
    monkeypatch.setattr(target, name, lambda *args: replacement(*args) if os.getpid() != parent else original(*args))


def _fails(*_args):
    raise MemoryError("the child ran out")


@pytest.mark.slow
@pytest.mark.parametrize(
    "what_goes_wrong",
    [
        (screening, "_score_part_in_child", _fails),
        # a write between the two processes' reads: the child saw other change counters than this process
        (screening.store, "screening_inputs_version", lambda conn: (("clips", -1),)),
    ],
    ids=["the child fails", "the parts were read from different data"],
)
def test_a_part_that_cannot_be_used_is_redone_here(project, monkeypatch, forked_parts, what_goes_wrong):
    _pinned_corpus_project(project)
    serial = compute_screening(project.conn, parallel=False)
    _in_the_child_only(monkeypatch, *what_goes_wrong)
    result = screen_project(project, parallel=True)
    assert _everything(result) == _everything(serial)
    assert digest(_stored_rows(project)) == PINNED_ROWS
    assert len(forked_parts) == (0 if what_goes_wrong[2] is _fails else 1)  # the child's answer, then refused
    assert not multiprocessing.active_children()


def test_a_cancel_while_the_child_scores_stores_nothing_and_leaves_no_process(qc_project):
    from qc_support import add_clip, add_transcript, item_id

    item = item_id(qc_project, "q1", "en")
    for n in range(6):
        clip = add_clip(qc_project, item, "question", f"the text number {n}", "en", voice=f"v{n}")
        add_transcript(qc_project, clip, "asr-a", "the text")
        add_transcript(qc_project, clip, "asr-b", f"the text number {n}")
    progress = Progress()
    progress.cancel()
    with pytest.raises(Cancelled):
        screen_project(qc_project, progress=progress, parallel=True)
    assert qc_project.conn.execute("SELECT count(*) FROM clip_screening").fetchone()[0] == 0
    assert not multiprocessing.active_children()


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_a_call_in_a_child_returns_its_result_or_says_it_failed(method):
    with call_in_child(method, sorted, [3, 1, 2]) as wait:
        assert wait() == [1, 2, 3]
    # it raises; it dies; what it is given or gives back cannot be pickled (spawn: given, fork: given back)
    for function, args in ((int, ("not a number",)), (os._exit, (3,)), (sorted, [lambda: 0])):
        with call_in_child(method, function, *args) as wait, pytest.raises(ChildCallFailed):
            wait(lambda: None)
    assert not multiprocessing.active_children()


@pytest.fixture
def another_thread():
    """A thread running in this process, as in a job process (its cancel watch and progress flusher)."""
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    other.start()
    yield
    stop.set()
    other.join()


def test_no_fork_while_another_thread_runs(another_thread):
    assert child_start_method() == ("spawn" if usable_cores() >= 2 else None)


@pytest.mark.slow
def test_with_another_thread_running_the_child_is_spawned_and_stores_the_pinned_rows(
    project, monkeypatch, another_thread
):
    _pinned_corpus_project(project)
    handed_back = []
    decoded_part = screening._decoded_part
    monkeypatch.setattr(screening, "_decoded_part", lambda part: handed_back.append(part) or decoded_part(part))
    assert child_start_method() == "spawn"
    result = screen_project(project, parallel=True)
    assert len(handed_back) == 1  # the spawned child's part, used
    assert digest(_stored_rows(project)) == PINNED_ROWS
    pinned = [result.summary(), result.table2(), stored_table2(project.conn), result.hallucinated, result.unscorable]
    assert digest(json.loads(json.dumps(pinned))) == PINNED_RESULT
    assert not multiprocessing.active_children()
