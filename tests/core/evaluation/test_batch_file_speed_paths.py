"""The batch file's fast paths change no byte and no figure: audio base64-encoded with pybase64 (SIMD, the
optional extra `fast-batch-files`) gives the same file as the standard library's encoder, and the preparation's cache and
cost count, made without a request object per planned request, gives the same figures as counting request by request."""

import base64

import pytest

from spokenbench.core.evaluation import batch_files, preparation
from spokenbench.core.evaluation.preparation import RunSettings, prepare_evaluation

VLLM = RunSettings(model="vllm:my-audio-model", base_url="http://127.0.0.1:9/v1", mode="audio", prompt="standard")


def test_pybase64_writes_the_same_bytes_as_the_standard_library(audio_project, tmp_path, monkeypatch):
    pybase64 = pytest.importorskip("pybase64")  # the optional extra `fast-batch-files`
    assert batch_files._b64encode is pybase64.b64encode
    fast = tmp_path / "fast.jsonl"
    batch_files.write_batch_file(audio_project, prepare_evaluation(audio_project, VLLM), fast)
    monkeypatch.setattr(batch_files, "_b64encode", base64.b64encode)
    plain = tmp_path / "plain.jsonl"
    batch_files.write_batch_file(audio_project, prepare_evaluation(audio_project, VLLM), plain)
    assert fast.read_bytes() == plain.read_bytes() and fast.stat().st_size > 6 * 10_000


def counted_request_by_request(project, prepared) -> dict:
    """The reuse and cost counts as preparation made them before issue 28's round 3: a Job, a request and a key
    per remaining planned request, in plan order."""
    from spokenbench.core.evaluation import store
    from spokenbench.core.evaluation.adapters import ModelAdapter
    from spokenbench.core.evaluation.budget import input_cost, worst_case_cost

    builder = preparation.RequestBuilder(prepared.settings, prepared.preset, None)
    adapter = ModelAdapter(prepared.preset, prepared.settings.params)
    stored = store.done_keys(project.conn, prepared.resume_run_id) if prepared.resume_run_id else set()
    requests = [builder.answer(job) for job in prepared.jobs if job.key not in stored]
    keys = [adapter.request_key(request) for request in requests]
    known, seen = store.cached_replies(project.conn, sorted(set(keys))), set()
    figures = {"already_cached": 0, "shared": 0, "requests_to_send": 0, "ceiling": 0.0, "floor": 0.0}
    for request, key in zip(requests, keys):
        if key in known:
            figures["already_cached"] += 1
        elif key in seen:
            figures["shared"] += 1
        else:
            seen.add(key)
            figures["requests_to_send"] += 1
            figures["ceiling"] += worst_case_cost(
                prepared.price, adapter, request, prepared.settings.params.max_output_tokens
            )
            figures["floor"] += input_cost(prepared.price, adapter, request)
    figures["cache_keys"] = tuple(sorted(set(keys)))
    figures["answer_keys"] = keys
    return figures


def with_a_cached_reply_and_a_twin(project, settings) -> None:
    """One planned request answered in the response cache, and (text mode) an item whose twin asks the same."""
    from eval_support import make_items

    from spokenbench.core.evaluation import store
    from spokenbench.core.evaluation.adapters import ModelAdapter
    from spokenbench.core.store.items import insert_items

    if settings.mode == "text":
        with project.transaction() as conn:
            insert_items(conn, make_items(1, source="twin"))  # the texts of item q0 under another source
    prepared = prepare_evaluation(project, settings)
    job = prepared.jobs[1]
    key = ModelAdapter(prepared.preset, prepared.settings.params).request_key(
        preparation.RequestBuilder(prepared.settings, prepared.preset, None).answer(job)
    )
    reply = store.CachedReply("Answer: [[B]]", 90, 4, 0.3, 12.0, 0.0001)
    with project.transaction() as conn:
        store.store_cached_replies(conn, [store.CacheEntry(key, prepared.model_name, reply, "stop")])


@pytest.mark.parametrize(
    "settings",
    [
        RunSettings(model="openai:gpt-audio-mini", base_url="http://127.0.0.1:9/v1", mode="audio"),
        RunSettings(model="openai:gpt-audio-mini", base_url="http://127.0.0.1:9/v1", mode="text", prompt="cot"),
        RunSettings(model="vllm:m", base_url="http://127.0.0.1:9/v1", mode="text", system_variant="inline"),
        VLLM,
    ],
    ids=["audio-priced", "text-priced-cot", "text-inline", "audio-unpriced"],
)
def test_counting_without_request_objects_gives_the_figures_of_counting_request_by_request(audio_project, settings):
    """Preparation keys and costs the remaining requests without a Job or request per planned request (issue 28):
    the same counts, cost (to the last bit), cache keys and per-request keys as counted one request at a time."""
    with_a_cached_reply_and_a_twin(audio_project, settings)
    prepared = prepare_evaluation(audio_project, settings)
    expected = counted_request_by_request(audio_project, prepared)
    assert prepared.already_cached == expected["already_cached"] == 1
    assert prepared.shared == expected["shared"] == (1 if settings.mode == "text" else 0)
    assert prepared.requests_to_send == expected["requests_to_send"] > 1
    if prepared.price is not None:
        assert expected["ceiling"] > expected["floor"] > 0
        assert (prepared.estimated_cost_usd, prepared.estimated_input_cost_usd) == (
            expected["ceiling"],
            expected["floor"],
        )
    else:
        assert prepared.estimated_cost_usd is None
    assert prepared.cache_keys == expected["cache_keys"]
    assert [prepared.answer_key(job) for job in prepared.jobs] == expected["answer_keys"]


def resumed_with_one_answer(project, settings=VLLM):
    """A run of `settings` whose third request is answered, prepared again to resume it: (that job, the plan)."""
    from spokenbench.core.evaluation.runner import create_prepared_run

    prepared = prepare_evaluation(project, settings)
    job = prepared.jobs[2]
    with project.transaction() as conn:
        run_id = create_prepared_run(conn, prepared)
        conn.execute(
            "INSERT INTO responses(run_id, item_id, condition_key, option_order, raw_text, created_at) "
            "VALUES (?, ?, ?, ?, 'Answer: [[B]]', '2026-01-01')",
            (run_id, job.planned.item_id, job.planned.condition_key, job.planned.option_order),
        )
    return job, prepare_evaluation(project, RunSettings(**{**settings.__dict__, "run_id": run_id}))


def test_a_resumed_run_counts_only_what_it_has_not_answered(audio_project):
    """Stored answers are left out of the count, and their requests get no precomputed key."""
    _job, resumed = resumed_with_one_answer(audio_project)
    expected = counted_request_by_request(audio_project, resumed)
    assert resumed.already_stored == 1 and resumed.requests_to_send == expected["requests_to_send"] == 5
    assert resumed.answer_key(resumed.jobs[2]) is None
    assert [resumed.answer_key(job) for job in resumed.jobs if resumed.answer_key(job)] == expected["answer_keys"]


def test_a_dry_run_makes_no_job_per_request(audio_project, monkeypatch, capsys):
    """`evaluate --dry-run` prints counts, reuse and cost: no Job object is made for any planned request."""
    from spokenbench.core.cli.main import main

    def refuse(self):
        raise AssertionError("a dry run made the jobs")

    monkeypatch.setattr(preparation.JobSource, "jobs", refuse)
    argv = [
        "evaluate",
        str(audio_project.path),
        "--model",
        "vllm:m",
        "--base-url",
        "http://127.0.0.1:9/v1",
        "--mode",
        "audio",
    ]
    argv += ["--prompt", "standard"]
    assert main([*argv, "--dry-run"]) == 0
    assert "plan: 6 request(s) over 3 item(s)" in capsys.readouterr().out
    assert main([*argv, "--dry-run", "--json"]) == 0
    assert '"requests_to_send": 6' in capsys.readouterr().out


@pytest.mark.parametrize("cached", [3, 1500])
def test_the_cache_says_which_keys_it_holds_read_whole_or_asked_in_batches(project, cached):
    """store.cached_keys reads a cache no larger than the keys asked whole, a larger one a batch at a time (more
    than one batch of 500 here): the same answer either way, only keys asked for, none it does not hold."""
    from spokenbench.core.evaluation import store

    reply = store.CachedReply("Answer: [[A]]", 1, 1, None, None, 0.0)
    held = [f"{n:064x}" for n in range(cached)]
    with project.transaction() as conn:
        store.store_cached_replies(conn, [store.CacheEntry(key, "vllm:m", reply, "stop") for key in held])
    asked = sorted(held[::2] + [f"{n:064x}" for n in range(10_000, 10_100)])
    assert (len(asked) >= cached) == (cached == 3) and (cached == 3 or len(asked) > 500)  # read whole, or 2 batches
    assert store.cached_keys(project.conn, asked) == set(held[::2])
    assert store.cached_keys(project.conn, []) == set()
