"""API keys come from the environment (or keyring) and never reach the project, logs, exports or errors,
even when the server echoes them back in its error messages."""

import logging
from pathlib import Path

import pytest
from eval_support import TEST_KEYS
from model_stub import Scripted

SECRETS = {name: value for name, value in TEST_KEYS.items() if name in ("OPENAI_API_KEY", "GEMINI_API_KEY")}


def _all_bytes(folder: Path) -> bytes:
    return b"".join(path.read_bytes() for path in sorted(folder.rglob("*")) if path.is_file())


@pytest.mark.parametrize(
    "model, url_attr", [("openai:gpt-audio-mini", "openai_url"), ("gemini:gemini-2.5-flash", "gemini_url")]
)
def test_keys_never_reach_project_logs_exports_or_errors(audio_project, stub, cli, caplog, tmp_path, model, url_attr):
    caplog.set_level(logging.DEBUG)
    url = getattr(stub, url_attr)
    base = [
        "evaluate",
        audio_project.path,
        "--model",
        model,
        "--base-url",
        url,
        "--mode",
        "audio",
        "--prompt",
        "standard",
        "--retries",
        "2",
        "--concurrency",
        "1",
    ]
    stub.script(Scripted("500"), Scripted("500"), Scripted("400"))  # errors that echo the key, stored with responses
    first = cli(*base)
    assert first.code == 0, first.err
    stub.script(Scripted("401"))  # a run that fails on authentication, also echoing the key
    second = cli(*base, "--name", "again", "--orders", "original", "--limit", "1", "--text", "rewritten")
    assert second.code == 2 and "rejected the API key" in second.err
    outputs = [first.out, first.err, second.out, second.err]
    for what in ("responses", "items"):
        for extension in ("csv", "jsonl"):
            out = tmp_path / f"{what}.{extension}"
            result = cli("export", audio_project.path, "--what", what, "--out", out)
            assert result.code == 0
            outputs.append(out.read_text())
    runs = cli("runs", audio_project.path, "--json")
    outputs.append(runs.out)
    errors = [row[0] for row in audio_project.conn.execute("SELECT error FROM responses WHERE error IS NOT NULL")]
    assert errors and all("[redacted]" in e for e in errors)  # the echo happened and was scrubbed
    audio_project.conn.execute("PRAGMA wal_checkpoint(PASSIVE)")
    project_bytes = _all_bytes(audio_project.path)
    logs = "\n".join(record.getMessage() for record in caplog.records)
    for secret in SECRETS.values():
        assert secret.encode() not in project_bytes
        assert all(secret not in text for text in outputs + errors)
        assert secret not in logs
    assert any(r["authorization"] for r in stub.requests)  # the key did go to the server, and only there
