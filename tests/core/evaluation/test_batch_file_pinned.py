"""Batch files are pinned: the digests below were computed with the code before issue 28's planning work
(commit 562acf0: every prompt rendered whole, every key serialized whole), so rendering a presentation's texts
once and splicing a key's encoded texts must write the same bytes and record the same request contexts."""

import hashlib

import pytest

from spokenbench.core.evaluation.batch_files import write_batch_file
from spokenbench.core.evaluation.preparation import RunSettings, prepare_evaluation

SETTINGS = {
    "audio standard": RunSettings(model="vllm:my-audio-model", base_url="http://127.0.0.1:9/v1", mode="audio"),
    "audio cot inline": RunSettings(
        model="vllm:my-audio-model",
        base_url="http://127.0.0.1:9/v1",
        mode="audio",
        prompt="cot",
        system_variant="inline",
    ),
    "audio neutral none": RunSettings(
        model="vllm:my-audio-model",
        base_url="http://127.0.0.1:9/v1",
        mode="audio",
        prompt="neutral",
        system_variant="none",
    ),
    "text standard": RunSettings(model="vllm:my-text-model", base_url="http://127.0.0.1:9/v1", mode="text"),
}


def written(project, settings: RunSettings, path) -> str:
    """sha256 of the file's bytes and of the request rows recorded with it (keys and parsing contexts)."""
    write_batch_file(project, prepare_evaluation(project, settings), path)
    rows = project.conn.execute(
        "SELECT item_id, condition_key, option_order, request_key, context_json FROM batch_requests "
        "ORDER BY item_id, condition_key"
    ).fetchall()
    project.conn.execute("DELETE FROM batch_requests")
    digest = hashlib.sha256(path.read_bytes())
    for row in rows:
        digest.update(repr(tuple(row)).encode())
    return digest.hexdigest()


@pytest.mark.parametrize("name", list(SETTINGS))
def test_batch_files_are_unchanged(audio_project, tmp_path, name):
    assert written(audio_project, SETTINGS[name], tmp_path / "requests.jsonl") == PINNED[name]


PINNED = {
    "audio standard": "9f15fb791a8375fdb4b86e3576a9a022d56a46f435b0b4dba08992c9788c91a1",
    "audio cot inline": "39da12b48e065a7008daa76e09e5e3485a73752704e09d11ab1fb88d1e3780fb",
    "audio neutral none": "62ef2419e880bec5b37b78e54dbdd34e070dbb56a577c448f8522e821982d5a4",
    "text standard": "26732527c7d60a97f209ae98eb2ca76b4fc34aa38b71925e3f34bea243c9351f",
}


@pytest.mark.parametrize(
    ("texts", "neutral", "seconds"),
    [
        ({"A": "Paris", "B": 'say "B" \\ ü 中文\n'}, (None, None), (1.5, 0.25)),
        ({"A": "x", "B": "y", "C": "z"}, ("D", "Cannot be determined — ¿"), ()),
        ({"A": "\u2028 control \x01"}, ("B", "none"), (3.0,)),
        ({"A": "x", "B": None}, (None, None), (1, 2)),  # a text that is no string: written by json, as before
    ],
)
def test_a_request_context_is_the_json_of_its_fields(texts, neutral, seconds):
    import json

    from spokenbench.core.evaluation.adapters import AudioInput, GenerationParams, ModelAdapter, ModelRequest
    from spokenbench.core.evaluation.batch_records import _context
    from spokenbench.core.evaluation.presets import resolve_model
    from spokenbench.core.evaluation.prompts import RenderedPrompt

    keyer = ModelAdapter(resolve_model("vllm:m", "http://127.0.0.1:9/v1"), GenerationParams())
    request = ModelRequest("Système", "Réponds", tuple(AudioInput(b"", "ab" * 32, "wav", s) for s in seconds))
    rendered = RenderedPrompt("Système", "Réponds", "".join(texts), texts, *neutral)
    text_est, audio_est = keyer.estimate_tokens(request)
    expected = {
        "letters": "".join(texts),
        "texts": texts,
        "neutral_letter": neutral[0],
        "neutral_text": neutral[1],
        "text_est": text_est,
        "audio_est": audio_est,
        "audio_s": sum(seconds),
    }
    assert _context(rendered, keyer, request) == json.dumps(expected, ensure_ascii=False, separators=(",", ":"))
