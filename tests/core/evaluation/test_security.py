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


@pytest.mark.slow
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
    assert first.code == 5, first.err  # finished, one request failed for good (the 400)
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


TOKEN = "q-token-5f1e2d3c4b5a"


@pytest.mark.slow
@pytest.mark.parametrize("style", ["separate", "equals"])
def test_a_token_in_the_base_urls_query_is_stored_nowhere(audio_project, stub, cli, caplog, tmp_path, style):
    """A gateway token given in --base-url's query string (`?api_key=…`) is kept out of the run's parameters,
    the jobs table's command, exports, printed output and logs: it is stored as [redacted]."""
    caplog.set_level(logging.DEBUG)
    url = f"{stub.openai_url}?api_key={TOKEN}&tier=eu"
    option = ["--base-url", url] if style == "separate" else [f"--base-url={url}"]
    args = ["evaluate", audio_project.path, "--model", "vllm:m", *option, "--mode", "audio", "--prompt", "standard"]
    stub.script(Scripted("400"))  # an error message, stored with its response
    run = cli(*args, "--retries", "1")
    assert run.code == 5, run.err
    parameters = audio_project.conn.execute("SELECT parameters_json FROM runs").fetchone()[0]
    assert "api_key=[redacted]&tier=[redacted]" in parameters
    [argv] = [row[0] for row in audio_project.conn.execute("SELECT argv_json FROM jobs")]
    assert "api_key=[redacted]&tier=[redacted]" in argv
    outputs = [run.out, run.err, cli("runs", audio_project.path, "--json").out]
    outputs.append(cli("jobs", audio_project.path, "--json").out)
    outputs.append(cli(*args, "--dry-run", "--json").out)
    for what in ("responses", "items"):
        out = tmp_path / f"{what}.jsonl"
        assert cli("export", audio_project.path, "--what", what, "--out", out).code == 0
        outputs.append(out.read_text())
    audio_project.conn.execute("PRAGMA wal_checkpoint(PASSIVE)")
    logs = "\n".join(record.getMessage() for record in caplog.records)
    assert TOKEN.encode() not in _all_bytes(audio_project.path)
    assert all(TOKEN not in text for text in outputs), [text for text in outputs if TOKEN in text][0][:300]
    assert TOKEN not in logs
