"""The batch file's fast paths change no byte and no figure: audio base64-encoded with pybase64 (SIMD, the
optional extra `fast-batch-files`) gives the same file as the standard library's encoder, and the preparation's cache and cost count, done a chunk of
planned requests at a time, gives the same figures as all at once."""

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


def test_counting_a_chunk_at_a_time_gives_the_same_figures(audio_project, monkeypatch):
    priced = RunSettings(model="openai:gpt-audio-mini", base_url="http://127.0.0.1:9/v1", mode="audio")
    whole = prepare_evaluation(audio_project, priced)
    monkeypatch.setattr(preparation, "COUNT_CHUNK", 4)  # six requests: two chunks
    chunked = prepare_evaluation(audio_project, priced)
    assert whole.estimated_cost_usd > 0
    fields = ("already_cached", "shared", "requests_to_send", "estimated_cost_usd", "estimated_input_cost_usd")
    assert [getattr(chunked, name) for name in fields] == [getattr(whole, name) for name in fields]
    assert chunked.cache_keys == whole.cache_keys and len(whole.cache_keys) == 6
