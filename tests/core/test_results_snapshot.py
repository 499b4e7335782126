"""The Results page's figures as plain data (core/results/snapshot.py): a computation crosses from a job process
whole — no closure, no connection — and is kept by the project's change counters and the request."""

import pickle

import pytest

from spokenbench.core.evaluation.store import mark_run
from spokenbench.core.foundation.errors import ProjectError
from spokenbench.core.foundation.progress import no_progress
from spokenbench.core.jobs.host import run_task_in_job_process, task_call
from spokenbench.core.metrics.synthetic import biasinear_like
from spokenbench.core.results.compute import compute_panels
from spokenbench.core.results.names import PANEL_ORDER
from spokenbench.core.results.published_overlay import published_for
from spokenbench.core.results.snapshot import (
    ResultsCache,
    ResultsRequest,
    ResultsSnapshot,
    compute_results,
    open_read_only,
    results_versions,
)
from spokenbench.core.store import opened


@pytest.mark.slow
def test_panels_pickle_as_plain_values_with_their_questions_and_tables():
    panels = compute_panels(biasinear_like(8, 2, seed=3), n_resamples=20)
    pending = {key: panel.tables.pending() for key, panel in panels.panels.items()}
    assert any(pending.values())  # the Δ tables are left for later in-process
    point = panels.panels["accuracy_by_level"].points[0]
    assert callable(point.questions_source)  # worked out on first use
    back = pickle.loads(pickle.dumps(panels))
    copy = back.panels["accuracy_by_level"].points[0]
    assert not callable(copy.questions_source) and copy.questions == point.questions and copy.questions
    for key in PANEL_ORDER:
        # the published layer is not sent: the receiving process takes it from its own cache
        assert [p.label for p in back.panels[key].published] == [p.label for p in published_for(key)]
        assert back.panels[key].published and back.panels[key].published[0] is published_for(key)[0]
        assert back.panels[key].tables.pending() == []
        assert set(back.panels[key].tables) == set(panels.panels[key].tables)


def test_the_cache_answers_the_same_counters_and_request_only():
    cache = ResultsCache(keep=2)
    every, first = ResultsRequest(None, 10), ResultsRequest((1,), 10)
    versions = (("items", 1), ("runs", 2), ("responses", 3))
    snapshot = ResultsSnapshot(every, versions, [], None)
    cache.put(snapshot)
    assert cache.get(versions, every) is snapshot
    assert cache.get(versions, first) is None  # other runs picked
    assert cache.get((("items", 1), ("runs", 3), ("responses", 3)), every) is None  # a run changed since
    cache.put(ResultsSnapshot(first, versions, [], None))
    cache.put(ResultsSnapshot(ResultsRequest((2,), 10), versions, [], None))
    assert cache.get(versions, every) is None  # the oldest is forgotten beyond `keep`


@pytest.mark.slow
def test_a_job_process_computes_the_demo_s_panels_and_their_counters(demo_copy):
    request = ResultsRequest(None, 50)
    snapshot = run_task_in_job_process(task_call(compute_results, str(demo_copy), request), no_progress(), "panels")
    assert snapshot.request == request and len(snapshot.runs) == 14
    assert set(snapshot.panels.panels) == set(PANEL_ORDER) and len(snapshot.panels.responses) == 2016
    with open_read_only(demo_copy) as project:
        assert snapshot.versions == results_versions(project.conn)
    with opened(demo_copy) as project, project.transaction() as conn:
        mark_run(conn, 2, "finished")
    with open_read_only(demo_copy) as project:
        assert snapshot.versions != results_versions(project.conn)  # a changed run: the cache key moves


@pytest.mark.slow
def test_a_folder_that_is_no_project_is_refused_with_its_path(tmp_path):
    with pytest.raises(ProjectError, match="cannot be opened"):
        run_task_in_job_process(
            task_call(compute_results, str(tmp_path / "nowhere"), ResultsRequest()), no_progress(), "panels"
        )
