"""The evaluation commands' contract: names, options, exit codes, JSON."""

import pytest
from eval_support import add_items


def _evaluate(cli, project, stub, *extra):
    return cli(
        "evaluate",
        project.path,
        "--model",
        "openai:gpt-audio-mini",
        "--base-url",
        stub.openai_url,
        "--mode",
        "audio",
        "--prompt",
        "standard",
        "--retries",
        "2",
        *extra,
    )


def test_help_lists_the_contract(cli, capsys):
    for command in ("evaluate", "runs", "reparse", "parse", "power"):
        with pytest.raises(SystemExit) as done:
            cli(command, "--help")
        assert done.value.code == 0
    text = capsys.readouterr().out
    for option in (
        "--model",
        "--base-url",
        "--mode",
        "--prompt",
        "--orders",
        "--concurrency",
        "--rpm",
        "--budget",
        "--resume",
        "--permutations",
        "--languages",
        "--accents",
        "--voices",
        "--limit",
        "--seed",
        "--out",
    ):
        assert option in text


def test_dry_run_shows_counts_and_sends_nothing(audio_project, stub, cli):
    result = _evaluate(cli, audio_project, stub, "--dry-run", "--json")
    assert result.code == 0, result.err
    prepared = result.json()
    plan = prepared["plan"]
    assert plan["requests"] == 6 and plan["by_factor"]["order"] == {"original": 3, "reversed": 3}
    assert prepared["requests_to_send"] == 6 and prepared["already_cached"] == 0 and prepared["resume_run_id"] is None
    assert prepared["preset"]["spec"] == "openai:gpt-audio-mini" and prepared["estimated_cost_usd"] > 0
    assert stub.requests == [] and audio_project.conn.execute("SELECT count(*) FROM runs").fetchone()[0] == 0
    text = _evaluate(cli, audio_project, stub, "--dry-run")
    assert text.code == 0 and "plan: 6 request(s) over 3 item(s)" in text.out
    assert "to send: 6 model call(s)" in text.out and "cost: at most $" in text.out
    assert stub.requests == [] and audio_project.conn.execute("SELECT count(*) FROM jobs").fetchone()[0] == 0


def test_dry_run_after_a_run_counts_what_is_reused(audio_project, stub, cli):
    assert _evaluate(cli, audio_project, stub).code == 0
    again = _evaluate(cli, audio_project, stub, "--dry-run", "--json").json()
    assert again["already_cached"] == 6 and again["requests_to_send"] == 0 and again["estimated_cost_usd"] == 0
    resumed = _evaluate(cli, audio_project, stub, "--dry-run", "--resume", "--json").json()
    assert resumed["resume_run_id"] == 1 and resumed["already_stored"] == 6 and resumed["requests_to_send"] == 0


def test_dry_run_needs_no_key(audio_project, stub, cli, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY")
    monkeypatch.setattr("spokenbench.core.credentials._from_keyring", lambda variable: None)
    result = _evaluate(cli, audio_project, stub, "--dry-run")
    assert result.code == 0, result.err


def test_evaluate_runs_and_lists(audio_project, stub, cli):
    result = _evaluate(cli, audio_project, stub, "--json")
    assert result.code == 0, result.err
    assert result.json()["answered"] == 6 and result.json()["status"] == "finished"
    runs = cli("runs", audio_project.path, "--json").json()
    assert len(runs) == 1 and runs[0]["responses"] == 6 and runs[0]["parsed_ok"] == 6 and runs[0]["simulated"] is False
    table = cli("runs", audio_project.path)
    assert "openai:gpt-audio-mini" in table.out and "finished" in table.out
    again = _evaluate(cli, audio_project, stub, "--resume")
    assert again.code == 0 and "6 from cache" not in again.out and "answered 6/6" in again.out


def test_budget_stop_exits_3(audio_project, stub, cli):
    result = _evaluate(
        cli,
        audio_project,
        stub,
        "--budget",
        "0.0003",
        "--price-input",
        "1",
        "--price-output",
        "1",
        "--max-output-tokens",
        "50",
        "--concurrency",
        "1",
    )
    assert result.code == 3 and "budget" in result.out


def test_missing_key_is_a_clear_user_error(audio_project, stub, cli, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY")
    monkeypatch.setattr("spokenbench.core.credentials._from_keyring", lambda variable: None)
    result = _evaluate(cli, audio_project, stub)
    assert result.code == 2 and "OPENAI_API_KEY" in result.err and stub.requests == []


def test_bad_model_spec(audio_project, cli):
    result = cli("evaluate", audio_project.path, "--model", "gpt", "--mode", "audio", "--prompt", "standard")
    assert result.code == 2 and "PROVIDER:NAME" in result.err
    result = cli("evaluate", audio_project.path, "--model", "acme:x", "--mode", "audio", "--prompt", "standard")
    assert result.code == 2 and "unknown provider" in result.err


def test_text_mode_with_permutations(project, stub, cli):
    add_items(project, 2)
    result = cli(
        "evaluate",
        project.path,
        "--model",
        "vllm:m",
        "--base-url",
        stub.openai_url,
        "--mode",
        "text",
        "--prompt",
        "cot",
        "--permutations",
        "gold-position",
        "--seed",
        "3",
        "--json",
    )
    assert result.code == 0, result.err
    assert result.json()["total"] == 8  # 2 items x 4 gold positions
    orders = [r[0] for r in project.conn.execute("SELECT option_order FROM responses WHERE item_id = 1")]
    assert sorted(order.index("B") for order in orders) == [0, 1, 2, 3]
