"""A batch submitter killed (SIGKILL) after the provider was asked to create a part but before the part's id was
stored: the part carries a random tag from before the provider call (OpenAI metadata `spokenbench_part`, Gemini
display name), so `batches --collect` (or the next submit) finds it again once the submitter is dead and collects
it — paid once — or, after a complete search without it, deletes the row so a resume submits its requests once.
A live submitter's part is left alone, and a provider error never reads as 'never created'. The real SDKs talk to
the loopback batch stub; the stub counts what was created (what would be paid for)."""

import os
import signal
import subprocess
import time

import pytest
from eval_support import TEST_KEYS
from test_batch_claims import CHAT, OPENAI, SPOKENBENCH, _evaluate_args, _uploaded_keys

from spokenbench.core.evaluation import batches
from spokenbench.core.evaluation.runner import list_runs
from spokenbench.core.store import batches as batch_store

pytestmark = pytest.mark.slow  # real processes killed, real SDK round trips

GEMINI = "gemini:gemini-2.5-flash"


def _start_submitter(project, model, url, provider):
    return subprocess.Popen(
        [SPOKENBENCH, *_evaluate_args(project, url, "--batch", provider, "--json", model=model)],
        env={**os.environ, **TEST_KEYS},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _wait_for(predicate, process, what):
    deadline = time.monotonic() + 60
    while not predicate():
        assert time.monotonic() < deadline and process.poll() is None, f"{what} never happened"
        time.sleep(0.02)


def _kill(process, bstub):
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=10)
    bstub.release()  # the dead submitter's hanging call ends at the stub


def _killed_after_create(project, model, url, provider, bstub):
    """A submitter killed while the provider's reply to its create is on the way: the batch exists remotely, its id
    was never stored."""
    bstub.state.create_hangs = True
    process = _start_submitter(project, model, url, provider)
    try:
        _wait_for(lambda: bstub.state.creates_hanging >= 1, process, "the batch create")
    finally:
        _kill(process, bstub)
    bstub.state.create_hangs = False


def _killed_before_create(project, bstub):
    """A submitter killed while it uploads its input file: the provider never saw a batch create."""
    bstub.state.upload_budget = 0
    process = _start_submitter(project, OPENAI, bstub.openai_url, "openai")
    try:
        _wait_for(lambda: bstub.state.uploads_hanging >= 1, process, "the upload")
    finally:
        _kill(process, bstub)
    bstub.state.upload_budget = None


def _rows(project):
    return project.conn.execute(
        "SELECT id, state, remote_id, part_tag, submit_job FROM batch_jobs ORDER BY id"
    ).fetchall()


def _run(project, run_id):
    return next(run for run in list_runs(project.conn) if run["id"] == run_id)


def test_a_part_created_before_the_submitter_was_killed_is_found_by_its_tag_and_collected_once(
    audio_project, bstub, cli
):
    _killed_after_create(audio_project, OPENAI, bstub.openai_url, "openai", bstub)
    [row] = _rows(audio_project)
    assert row["state"] == "submitting" and row["remote_id"] is None and len(row["part_tag"]) == 16
    [remote] = bstub.state.batches.values()
    assert remote["metadata"] == {"spokenbench_batch": str(row["id"]), "spokenbench_part": row["part_tag"]}
    # meanwhile an online run of the same plan sends nothing: the part may still answer its requests
    live = cli(*_evaluate_args(audio_project, bstub.openai_url, "--run", "1", "--json"))
    assert live.code == 3 and live.json()["fresh_requests"] == 0, live.err
    assert bstub.paths("POST").count(CHAT) == 0
    collected = cli("batches", audio_project.path, "--collect", "--json")
    assert collected.code == 0, collected.err
    summary = collected.json()
    assert summary["collected"] == [1] and summary["answered"] == 6 and summary["not_ready"] == []
    [orphan] = summary["orphans"]
    assert orphan["outcome"] == "adopted" and remote["id"] in orphan["note"]
    [row] = _rows(audio_project)
    assert row["state"] == "collected" and row["remote_id"] == remote["id"]
    assert _run(audio_project, 1)["status"] == "finished"
    responses = audio_project.conn.execute("SELECT error FROM responses WHERE run_id = 1").fetchall()
    assert len(responses) == 6 and all(r["error"] is None for r in responses)
    created = _uploaded_keys(bstub)
    assert len(bstub.state.batches) == 1 and len(created) == 6 and max(created.values()) == 1, "paid once"
    text = cli("batches", audio_project.path, "--collect")
    assert text.code == 0 and "nothing to collect" in text.out


def test_a_resumed_submit_adopts_the_killed_part_instead_of_paying_for_it_again(audio_project, bstub, cli):
    _killed_after_create(audio_project, OPENAI, bstub.openai_url, "openai", bstub)
    resumed = cli(*_evaluate_args(audio_project, bstub.openai_url, "--batch", "openai", "--run", "1", "--json"))
    assert resumed.code == 0, resumed.err
    summary = resumed.json()
    assert summary["lines"] == 0 and summary["waiting_elsewhere"] == 6
    assert [orphan["outcome"] for orphan in summary["orphans"]] == ["adopted"]
    assert "batch 1 (run 1): found at the provider by its tag" in resumed.err
    assert len(bstub.state.batches) == 1
    assert cli("batches", audio_project.path, "--collect").code == 0
    assert _run(audio_project, 1)["status"] == "finished"


def test_a_part_never_created_is_released_and_the_resume_submits_it_once(audio_project, bstub, cli, monkeypatch):
    _killed_before_create(audio_project, bstub)
    [row] = _rows(audio_project)
    assert row["state"] == "submitting" and row["remote_id"] is None
    assert bstub.paths("POST").count("/v1/batches") == 0
    # moments after the submitter died its create could still be on the way: not declared missing yet
    early = cli("batches", audio_project.path, "--collect", "--json")
    assert early.code == 0, early.err
    assert [orphan["outcome"] for orphan in early.json()["orphans"]] == ["kept"]
    assert "moments ago" in early.json()["not_ready"][0][1] and len(_rows(audio_project)) == 1
    monkeypatch.setattr(batches, "ORPHAN_GRACE_S", 0.0)
    released = cli("batches", audio_project.path, "--collect")
    assert released.code == 0, released.err
    assert "batch 1 (run 1): never created at the provider" in released.out and "resume run 1" in released.out
    assert _rows(audio_project) == []
    resumed = cli(*_evaluate_args(audio_project, bstub.openai_url, "--batch", "openai", "--resume", "--json"))
    assert resumed.code == 0, resumed.err
    assert resumed.json()["run_id"] == 1 and resumed.json()["lines"] == 6 and resumed.json()["orphans"] == []
    assert cli("batches", audio_project.path, "--collect").code == 0
    assert _run(audio_project, 1)["status"] == "finished"
    created = _uploaded_keys(bstub)
    assert len(bstub.state.batches) == 1 and len(created) == 6 and max(created.values()) == 1


@pytest.mark.parametrize("model, provider", [(OPENAI, "openai"), (GEMINI, "gemini")])
def test_a_create_answered_with_a_server_error_is_not_retried_and_its_part_is_kept_and_found(
    audio_project, bstub, cli, monkeypatch, model, provider
):
    """The provider made the batch but answered 500: the SDK does not create it again, and the part is kept (not
    released to be paid for twice) until a collect finds it by its tag."""
    monkeypatch.setattr(batches, "ORPHAN_GRACE_S", 0.0)
    bstub.state.create_reply_status = 500
    url = bstub.openai_url if provider == "openai" else bstub.gemini_url
    failed = cli(*_evaluate_args(audio_project, url, "--batch", provider, model=model))
    assert failed.code == 2 and "Traceback" not in failed.err
    assert "did not confirm batch 1" in failed.err and "it is kept" in failed.err, failed.err
    assert len(bstub.state.batches) == 1, "the create was not retried"
    [row] = _rows(audio_project)
    assert row["state"] == "submitting" and row["remote_id"] is None
    bstub.state.create_reply_status = None
    collected = cli("batches", audio_project.path, "--collect", "--json")
    assert collected.code == 0, collected.err
    assert collected.json()["collected"] == [1] and collected.json()["answered"] == 6
    assert [orphan["outcome"] for orphan in collected.json()["orphans"]] == ["adopted"]
    assert _run(audio_project, 1)["status"] == "finished" and len(bstub.state.batches) == 1


def test_a_submit_stopped_by_sigterm_while_the_provider_creates_keeps_its_part(audio_project, bstub, cli):
    """SIGTERM (or Ctrl-C) while the create's reply is on the way: the submitter stops as interrupted, and the part
    it cannot know the fate of is kept, not deleted, so collect finds it."""
    bstub.state.create_hangs = True
    submitter = _start_submitter(audio_project, OPENAI, bstub.openai_url, "openai")
    try:
        _wait_for(lambda: bstub.state.creates_hanging >= 1, submitter, "the batch create")
        submitter.send_signal(signal.SIGTERM)
        _out, err = submitter.communicate(timeout=30)
    finally:
        if submitter.poll() is None:
            submitter.kill()
            submitter.wait(timeout=10)
        bstub.release()
    assert submitter.returncode not in (0, 2) and "Traceback" not in err, err
    [row] = _rows(audio_project)
    assert row["state"] == "submitting" and row["remote_id"] is None
    collected = cli("batches", audio_project.path, "--collect", "--json")
    assert collected.code == 0 and collected.json()["collected"] == [1] and collected.json()["answered"] == 6
    assert len(bstub.state.batches) == 1


def test_a_live_submitters_part_is_left_alone(audio_project, bstub, cli):
    bstub.state.create_hangs = True
    submitter = _start_submitter(audio_project, OPENAI, bstub.openai_url, "openai")
    try:
        _wait_for(lambda: bstub.state.creates_hanging >= 1, submitter, "the batch create")
        collected = cli("batches", audio_project.path, "--collect", "--json")
        assert collected.code == 0, collected.err
        summary = collected.json()
        assert summary["orphans"] == [] and summary["collected"] == []
        [[batch_id, why]] = summary["not_ready"]
        assert batch_id == 1 and why.startswith("submitting: being submitted by job ")
        assert bstub.paths("GET").count("/v1/batches") == 0, "the provider was not even searched"
        [row] = _rows(audio_project)
        assert row["state"] == "submitting" and row["remote_id"] is None
        bstub.release()
        out, err = submitter.communicate(timeout=60)
    finally:
        if submitter.poll() is None:
            submitter.kill()
            submitter.wait(timeout=10)
    assert submitter.returncode == 0, err
    [row] = _rows(audio_project)
    assert row["remote_id"] == next(iter(bstub.state.batches)) and len(bstub.state.batches) == 1


@pytest.mark.parametrize("failure", ["429", "garbage"])
def test_a_provider_error_while_searching_keeps_the_part_and_says_so(audio_project, bstub, cli, monkeypatch, failure):
    """The same state as a killed submitter leaves (a finished submit's part with its id unstored, written here
    directly to keep the test quick): the list fails, so nothing is deleted or submitted again."""
    monkeypatch.setattr(batches, "ORPHAN_GRACE_S", 0.0)
    assert cli(*_evaluate_args(audio_project, bstub.openai_url, "--batch", "openai")).code == 0
    with audio_project.transaction() as conn:
        batch_store.update_batch(conn, 1, state="submitting", remote_id=None)
    bstub.state.list_failure = failure
    collected = cli("batches", audio_project.path, "--collect", "--json")
    assert collected.code == 0, collected.err
    assert "Traceback" not in collected.err
    summary = collected.json()
    [orphan] = summary["orphans"]
    assert orphan["outcome"] == "kept" and "the provider's batch list cannot be read" in orphan["note"]
    assert summary["not_ready"][0][0] == 1 and "collect again later" in summary["not_ready"][0][1]
    text = cli("batches", audio_project.path, "--collect")
    assert text.code == 0 and "batch 1: not finished (submitting: its submitter stopped;" in text.out
    assert len(_rows(audio_project)) == 1 and _rows(audio_project)[0]["state"] == "submitting"
    # a resumed submit does not pay for them either: they wait in the kept part
    resumed = cli(*_evaluate_args(audio_project, bstub.openai_url, "--batch", "openai", "--run", "1", "--json"))
    assert resumed.code == 0, resumed.err
    assert resumed.json()["lines"] == 0 and resumed.json()["waiting_elsewhere"] == 6
    assert len(bstub.state.batches) == 1
    # once the provider answers again, the part is found and collected
    bstub.state.list_failure = None
    again = cli("batches", audio_project.path, "--collect", "--json")
    assert again.code == 0 and again.json()["collected"] == [1] and again.json()["answered"] == 6


def test_a_search_that_reaches_its_bound_without_the_part_keeps_it(audio_project, bstub, cli, monkeypatch):
    """The provider's list goes on past the search's page bound: not found there is not 'never created'."""
    monkeypatch.setattr(batches, "ORPHAN_GRACE_S", 0.0)
    monkeypatch.setattr(batches, "ORPHAN_SEARCH_PAGES", 2)
    bstub.state.list_page_size = 1
    assert cli(*_evaluate_args(audio_project, bstub.openai_url, "--batch", "openai")).code == 0
    with bstub.state.lock:  # three batches of another project on the account, created after the part
        for number in range(3):
            bstub.state.batches[f"batch_other{number}"] = {
                **bstub.state.batches["batch_2"],
                "id": f"batch_other{number}",
                "metadata": {"spokenbench_batch": "1", "spokenbench_part": "another project's part"},
            }
    with audio_project.transaction() as conn:
        batch_store.update_batch(conn, 1, state="submitting", remote_id=None)
    collected = cli("batches", audio_project.path, "--collect", "--id", "1", "--json")
    assert collected.code == 0, collected.err
    [orphan] = collected.json()["orphans"]
    assert orphan["outcome"] == "kept" and "not in the newest 2 page(s) of the provider's batch list" in orphan["note"]
    assert bstub.paths("GET").count("/v1/batches") == 2
    monkeypatch.setattr(batches, "ORPHAN_SEARCH_PAGES", 20)
    found = cli("batches", audio_project.path, "--collect", "--id", "1", "--json")
    assert [orphan["outcome"] for orphan in found.json()["orphans"]] == ["adopted"]


def test_a_gemini_part_created_before_the_submitter_was_killed_is_found_by_its_display_name(audio_project, bstub, cli):
    _killed_after_create(audio_project, GEMINI, bstub.gemini_url, "gemini", bstub)
    [row] = _rows(audio_project)
    assert row["state"] == "submitting" and row["remote_id"] is None
    [remote] = bstub.state.batches.values()
    assert remote["display_name"] == f"spokenbench-batch-{row['id']}-{row['part_tag']}"
    collected = cli("batches", audio_project.path, "--collect", "--json")
    assert collected.code == 0, collected.err
    summary = collected.json()
    assert summary["collected"] == [1] and summary["answered"] == 6, summary
    [row] = _rows(audio_project)
    assert row["state"] == "collected" and row["remote_id"] == remote["name"]
    assert _run(audio_project, 1)["status"] == "finished" and len(bstub.state.batches) == 1


def test_a_gemini_part_never_created_is_released(audio_project, bstub, cli, monkeypatch):
    """Written directly (a finished submit's row with its id unstored and a tag the provider never saw)."""
    monkeypatch.setattr(batches, "ORPHAN_GRACE_S", 0.0)
    assert cli(*_evaluate_args(audio_project, bstub.gemini_url, "--batch", "gemini", model=GEMINI)).code == 0
    with audio_project.transaction() as conn:
        batch_store.update_batch(conn, 1, state="submitting", remote_id=None, part_tag="0123456789abcdef")
    bstub.state.list_page_size = 1
    with bstub.state.lock:  # two more batches on the account: the list is read page by page to its end
        for number in range(2):
            name = f"batches/other{number}"
            bstub.state.batches[name] = {**bstub.state.batches["batches/b1"], "name": name, "display_name": "other"}
    collected = cli("batches", audio_project.path, "--collect", "--json")
    assert collected.code == 0, collected.err
    assert [orphan["outcome"] for orphan in collected.json()["orphans"]] == ["released"]
    assert _rows(audio_project) == []
    assert bstub.paths("GET").count("/v1beta/batches") + bstub.paths("GET").count("/v1/batches") == 3


def test_an_untagged_part_from_before_tags_keeps_its_old_message(audio_project, bstub, cli):
    assert cli(*_evaluate_args(audio_project, bstub.openai_url, "--batch", "openai")).code == 0
    with audio_project.transaction() as conn:
        batch_store.update_batch(conn, 1, state="submitting", remote_id=None, part_tag=None)
    collected = cli("batches", audio_project.path, "--collect", "--json")
    assert collected.json()["not_ready"] == [[1, "never submitted (the submitting process stopped)"]]
    assert bstub.paths("GET").count("/v1/batches") == 0
