"""`batches --collect` also fills the other runs waiting on the collected batch (their requests were not sent
again because that batch held them) from the response cache: no provider call, no cost, each request stored
once, and a run a live job holds is left to that job. The real openai SDK talks to the loopback batch stub."""

import json
import os
import subprocess

import pytest
from eval_support import TEST_KEYS
from test_batch_claims import CHAT, SPOKENBENCH, _evaluate_args, _responses, _run, _uploaded_keys

from spokenbench.core.evaluation.launcher import settings_for_run
from spokenbench.core.evaluation.preparation import prepare_evaluation, run_claim
from spokenbench.core.evaluation.runner import run_evaluation
from spokenbench.core.foundation.progress import Progress
from spokenbench.core.jobs.registry import tracked_job

pytestmark = pytest.mark.slow  # real SDK round trips through the batch stub, real processes


def _answers(project, run_id) -> dict:
    rows = project.conn.execute(
        "SELECT item_id, condition_key, raw_text, parsed_letter FROM responses WHERE run_id = ?", (run_id,)
    )
    return {(row[0], row[1]): (row[2], row[3]) for row in rows}


def _rows_per_request(project, run_id) -> list[int]:
    rows = project.conn.execute(
        "SELECT count(*) FROM responses WHERE run_id = ? GROUP BY item_id, condition_key", (run_id,)
    )
    return [row[0] for row in rows]


def _live_run_waiting_on_batch_1(project, bstub, cli) -> None:
    """Run 1 submits a batch of the 6 requests; run 2 (same model, prompt and conditions) is started online and
    leaves all 6 waiting on it (exit 3)."""
    assert cli(*_evaluate_args(project, bstub.openai_url, "--batch", "openai")).code == 0
    live = cli(*_evaluate_args(project, bstub.openai_url, "--json"))
    assert live.code == 3, live.err
    assert live.json()["waiting_elsewhere"] == 6 and _responses(project, 2) == []
    assert "--collect` fills run 2" in live.err


def _assert_run_2_holds_batch_1s_answers_once_at_no_cost(project) -> None:
    assert _rows_per_request(project, 2) == [1] * 6
    assert _answers(project, 2) == _answers(project, 1)
    assert _run(project, 2)["status"] == "finished" and _run(project, 2)["cost_usd"] == 0


def _assert_the_collect_left_run_2_to_its_holder(collects: list[subprocess.CompletedProcess]) -> None:
    """One `batches --collect --json` ran, stored batch 1 and left run 2, held by a live job, unfilled."""
    assert len(collects) == 1 and collects[0].returncode == 0, collects[0].stderr
    collected = json.loads(collects[0].stdout)
    assert collected["collected"] == [1] and collected["filled"] == []
    assert "held by a live job" in collected["still_incomplete"][0]["why"]


def test_collect_completes_the_live_run_waiting_on_the_batch_at_no_cost(audio_project, bstub, cli):
    _live_run_waiting_on_batch_1(audio_project, bstub, cli)
    collected = cli("batches", audio_project.path, "--collect", "--json")
    assert collected.code == 0, collected.err
    summary = collected.json()
    assert summary["collected"] == [1] and summary["answered"] == 6
    assert summary["filled"] == [{"run_id": 2, "results": 6}] and summary["still_incomplete"] == []
    assert _run(audio_project, 1)["status"] == "finished" and _run(audio_project, 2)["status"] == "finished"
    uploaded = _uploaded_keys(bstub)
    assert len(uploaded) == 6 and max(uploaded.values()) == 1, "each request went to the provider once"
    assert bstub.paths("POST").count(CHAT) == 0, "nothing sent online"
    first, second = _answers(audio_project, 1), _answers(audio_project, 2)
    assert len(second) == 6 and second == first, "run 2 holds batch 1's answers"
    assert _run(audio_project, 1)["cost_usd"] > 0 and _run(audio_project, 2)["cost_usd"] == 0  # paid once
    rows = _responses(audio_project, 2)
    assert all(row["cached"] and row["error"] is None and not row["cost_usd"] for row in rows)
    assert _rows_per_request(audio_project, 2) == [1] * 6


def test_a_run_the_user_cancelled_is_not_filled(audio_project, bstub, cli):
    """Cancelled by the user (Cancel, not a budget stop or an interruption): the collect leaves it as it was."""
    _live_run_waiting_on_batch_1(audio_project, bstub, cli)
    with audio_project.transaction() as conn:
        conn.execute("UPDATE runs SET status = 'cancelled', stop_reason = 'cancelled' WHERE id = 2")
    collected = cli("batches", audio_project.path, "--collect", "--json")
    assert collected.code == 0, collected.err
    assert collected.json()["filled"] == [] and _responses(audio_project, 2) == []
    assert _run(audio_project, 2)["status"] == "cancelled" and _run(audio_project, 1)["status"] == "finished"


def test_collect_says_which_runs_it_filled(audio_project, bstub, cli):
    _live_run_waiting_on_batch_1(audio_project, bstub, cli)
    collected = cli("batches", audio_project.path, "--collect")
    assert collected.code == 0, collected.err
    assert "run 2: 6 result(s) filled from the response cache at no cost" in collected.out
    assert "still incomplete" not in collected.err and "--run 2" not in collected.err
    assert cli("batches", audio_project.path, "--collect").out.strip() == "nothing to collect"


def test_a_run_a_live_job_holds_is_left_to_it_and_the_note_says_to_resume(audio_project, bstub, cli):
    _live_run_waiting_on_batch_1(audio_project, bstub, cli)
    with tracked_job(audio_project.path, "evaluate", "run 2 resumed elsewhere", claim=run_claim(2)):
        collected = cli("batches", audio_project.path, "--collect", "--json")
    assert collected.code == 0, collected.err
    summary = collected.json()
    assert summary["filled"] == [] and [entry["run_id"] for entry in summary["still_incomplete"]] == [2]
    assert "held by a live job" in summary["still_incomplete"][0]["why"]
    assert _responses(audio_project, 2) == [] and _run(audio_project, 2)["status"] == "created"
    text = cli("batches", audio_project.path, "--collect")  # nothing left to collect: run 2 is not looked at again
    assert text.out.strip() == "nothing to collect"
    resumed = cli(*_evaluate_args(audio_project, bstub.openai_url, "--run", "2", "--json"))
    assert resumed.code == 0, resumed.err
    assert resumed.json()["fresh_requests"] == 0 and resumed.json()["cost_usd"] == 0
    assert _rows_per_request(audio_project, 2) == [1] * 6 and bstub.paths("POST").count(CHAT) == 0


def test_the_note_of_a_held_run_is_printed_on_stderr(audio_project, bstub, cli):
    _live_run_waiting_on_batch_1(audio_project, bstub, cli)
    with tracked_job(audio_project.path, "evaluate", "run 2 resumed elsewhere", claim=run_claim(2)):
        collected = cli("batches", audio_project.path, "--collect")
    assert collected.code == 0, collected.err
    assert "note: run 2 is still incomplete" in collected.err and "--run 2` resumes it" in collected.err
    assert "filled" not in collected.out


def test_a_resume_and_a_collect_at_the_same_time_store_each_result_once(audio_project, bstub, cli):
    """Whichever of the two processes holds run 2 first fills it; the other leaves it (the collect) or finds
    it answered (the resume, which then waits for the run or stores what the cache answers): one row per request,
    nothing sent online, nothing paid twice."""
    _live_run_waiting_on_batch_1(audio_project, bstub, cli)
    env = {**os.environ, **TEST_KEYS}
    commands = [
        [SPOKENBENCH, "batches", str(audio_project.path), "--collect", "--json"],
        [SPOKENBENCH, *_evaluate_args(audio_project, bstub.openai_url, "--run", "2", "--wait", "--json")],
    ]
    started = [
        subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for command in commands
    ]
    outputs = [process.communicate(timeout=120) for process in started]
    codes = [process.returncode for process in started]
    assert codes[0] == 0, outputs[0][1]
    assert codes[1] in (0, 3), outputs[1][1]  # 3: it ran before the batch was collected, leaving run 2 waiting
    filled = json.loads(outputs[0][0])["filled"]
    if codes[1] == 3:
        assert filled == [{"run_id": 2, "results": 6}], outputs
    _assert_run_2_holds_batch_1s_answers_once_at_no_cost(audio_project)
    assert bstub.paths("POST").count(CHAT) == 0 and max(_uploaded_keys(bstub).values()) == 1


def test_a_resume_that_saw_the_batch_pending_fills_the_run_the_collect_left_to_it(
    audio_project, bstub, cli, monkeypatch
):
    """The interleaving CI met (the test above, one run in many): the resume has seen all 6 requests waiting in
    batch 1 and still holds run 2 when the collect stores batch 1 and finds run 2 held, so it leaves run 2 to
    the resume. The resume, having let the run go, sees batch 1 collected and fills run 2 from the cache."""
    _live_run_waiting_on_batch_1(audio_project, bstub, cli)
    for name, value in TEST_KEYS.items():
        monkeypatch.setenv(name, value)
    collects = []

    def collect_once_every_request_was_seen(done, total, _message):
        if done == total and not collects:  # on the resume's event loop, while it holds run 2
            command = [SPOKENBENCH, "batches", str(audio_project.path), "--collect", "--json"]
            collects.append(subprocess.run(command, capture_output=True, text=True, timeout=120))

    prepared = prepare_evaluation(audio_project, settings_for_run(audio_project.conn, 2))
    summary = run_evaluation(audio_project, prepared, Progress(collect_once_every_request_was_seen))
    _assert_the_collect_left_run_2_to_its_holder(collects)
    assert summary.status == "finished" and summary.stop_reason is None
    assert summary.waiting_elsewhere == 0 and summary.waiting_on == []
    assert summary.answered == 6 and summary.cache_hits == 6 and summary.fresh_requests == 0
    _assert_run_2_holds_batch_1s_answers_once_at_no_cost(audio_project)
    assert bstub.paths("POST").count(CHAT) == 0 and max(_uploaded_keys(bstub).values()) == 1


def _submit_while_batch_1_is_collected(project, bstub, cli, monkeypatch, failing: int = 0):
    """Run 1 submits batch 1; run 2's submit finds all 6 requests held by it, and while it holds run 2 a
    `batches --collect --json` stores batch 1 (with its first `failing` requests answered with an error) and
    leaves run 2 to the submit. Returns the submit's CliResult and the collect's CompletedProcess."""
    from spokenbench.core.evaluation import batches

    assert cli(*_evaluate_args(project, bstub.openai_url, "--batch", "openai")).code == 0
    bstub.state.fail_keys = set(list(_uploaded_keys(bstub))[:failing])
    collects = []
    drop_held = batches._drop_held

    def drop_held_then_collect(*args):
        kept = drop_held(*args)
        if not collects:  # the submit has planned and holds run 2
            command = [SPOKENBENCH, "batches", str(project.path), "--collect", "--json"]
            env = {**os.environ, **TEST_KEYS}
            collects.append(subprocess.run(command, env=env, capture_output=True, text=True, timeout=120))
        return kept

    monkeypatch.setattr(batches, "_drop_held", drop_held_then_collect)
    second = cli(*_evaluate_args(project, bstub.openai_url, "--batch", "openai", "--json"))
    assert second.code == 0, second.err
    assert len(collects) == 1
    return second, collects[0]


def test_a_batch_submit_that_saw_the_batch_pending_fills_the_run_the_collect_left_to_it(
    audio_project, bstub, cli, monkeypatch
):
    """The same interleaving for `evaluate --batch`: run 2's submit has found all 6 requests held by batch 1 and
    still holds run 2 when the collect stores batch 1 and leaves run 2 to it. The submit, having let the run go,
    fills run 2 from the cache: nothing submitted, nothing left waiting."""
    second, collect = _submit_while_batch_1_is_collected(audio_project, bstub, cli, monkeypatch)
    _assert_the_collect_left_run_2_to_its_holder([collect])
    summary = second.json()
    assert summary["run_id"] == 2 and summary["batch_ids"] == [] and summary["cached"] == 6
    assert summary["waiting_elsewhere"] == 0 and summary["waiting_on"] == [] and summary["not_sent"] == 0
    assert "note:" not in second.err
    _assert_run_2_holds_batch_1s_answers_once_at_no_cost(audio_project)
    assert max(_uploaded_keys(bstub).values()) == 1 and len(_uploaded_keys(bstub)) == 6


def test_a_batch_submit_names_the_requests_the_collected_batch_did_not_answer(audio_project, bstub, cli, monkeypatch):
    """As above, but batch 1 answers 2 of its 6 requests with an error: the submit fills run 2 with the other 4
    and says that 2 were neither sent nor waiting, and how to send them; resubmitting the run sends just those."""
    second, collect = _submit_while_batch_1_is_collected(audio_project, bstub, cli, monkeypatch, failing=2)
    assert collect.returncode == 5, collect.stderr  # the collect's own failures
    assert json.loads(collect.stdout)["filled"] == []
    summary = second.json()
    assert summary["batch_ids"] == [] and summary["cached"] == 4 and summary["waiting_elsewhere"] == 0
    assert summary["not_sent"] == 2
    assert "note: 2 request(s) of run 2 were left to a batch that was collected meanwhile" in second.err
    assert "--run 2 --batch openai` submits them" in second.err
    assert _rows_per_request(audio_project, 2) == [1] * 4 and _run(audio_project, 2)["status"] != "finished"
    bstub.state.fail_keys = set()
    again = cli(*_evaluate_args(audio_project, bstub.openai_url, "--batch", "openai", "--run", "2", "--json"))
    assert again.code == 0, again.err
    assert again.json()["lines"] == 2 and again.json()["already_stored"] == 4 and again.json()["not_sent"] == 0
