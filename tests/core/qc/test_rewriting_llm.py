"""LLM rewriting through the real openai SDK against a loopback stub: validation, retries, manual marking,
rate limits, auth failure, caching, the prompt and its project override."""

import asyncio
import json

import pytest
from qc_support import CHAT_ROUTE, FAST_RETRIES, SECRET, StubServer, chat_reply, item_id, rewrite_json
from stub_server import Reply

from spokenbench.core.domain.items import Item, Option
from spokenbench.core.jobs.registry import list_jobs
from spokenbench.core.jobs.remote import RemoteAuthError
from spokenbench.core.rewriting.llm import RewriteSettings, plan_rewrites, run_rewrites
from spokenbench.core.rewriting.prompts import load_template
from spokenbench.core.rewriting.validation import InvalidAnswer, validate_answer
from spokenbench.core.store.rewrites import latest_rewrites

EN_GOOD = rewrite_json(
    "What is the molar mass of sulfuric acid?",
    [
        "ninety-six grams per mole",
        "ninety-eight grams per mole",
        "eighty-two grams per mole",
        "forty-nine grams per mole",
    ],
)


def settings_for(server, **overrides) -> RewriteSettings:
    values = dict(base_url=f"{server.url}/v1", key=SECRET, languages=("en",), source="qc", limit=1, concurrency=1)
    values.update(overrides)
    return RewriteSettings(**values)


def run(project, settings, policy=FAST_RETRIES):
    plan = plan_rewrites(project.conn, settings)
    return asyncio.run(run_rewrites(project, plan, settings, retry_policy=policy))


def outcome(project, source_id="q1", language="en"):
    return project.conn.execute(
        "SELECT status, attempts, problem FROM rewrite_outcomes WHERE item_id = ?",
        (item_id(project, source_id, language),),
    ).fetchone()


@pytest.mark.slow
def test_valid_json_is_stored_as_pending_rewrites(qc_project):
    with StubServer() as server:
        server.script("POST", CHAT_ROUTE, chat_reply(f"```json\n{EN_GOOD}\n```"))
        report = run(qc_project, settings_for(server))
        [sent] = server.requests_to(CHAT_ROUTE)
    assert report.rewritten == 1 and report.requests == 1 and report.manual == 0
    rewrites = latest_rewrites(qc_project.conn, item_id(qc_project, "q1", "en"))
    assert rewrites["question"]["text"] == "What is the molar mass of sulfuric acid?"
    assert rewrites["option_B"]["text"] == "ninety-eight grams per mole"
    assert {r["status"] for r in rewrites.values()} == {"pending"}
    assert {r["origin"] for r in rewrites.values()} == {"llm:openai/gpt-oss-120b"}
    body = sent.json()
    assert body["model"] == "openai/gpt-oss-120b" and body["temperature"] == 0.0
    assert sent.headers["authorization"] == f"Bearer {SECRET}"
    system, user = body["messages"]
    assert (
        system["role"] == "system"
        and "Roman numerals" in system["content"]
        and "Chemical formulas" in system["content"]
    )
    assert "Subject: high school chemistry" in user["content"] and '"H2SO4"' not in user["content"]
    assert (
        json.dumps(
            {
                "question": "What is the molar mass of H2SO4?",
                "options": ["96 g/mol", "98 g/mol", "82 g/mol", "49 g/mol"],
            }
        )
        in user["content"]
    )


@pytest.mark.slow
def test_invalid_json_is_asked_again_with_the_reason_then_accepted(qc_project):
    with StubServer() as server:
        server.script(
            "POST", CHAT_ROUTE, chat_reply("Sure! The rewritten question is about sulfuric acid."), chat_reply(EN_GOOD)
        )
        report = run(qc_project, settings_for(server))
        first, second = server.requests_to(CHAT_ROUTE)
    assert report.rewritten == 1 and report.requests == 2
    messages = second.json()["messages"]
    assert messages[2] == {"role": "assistant", "content": "Sure! The rewritten question is about sulfuric acid."}
    assert "not JSON" in messages[3]["content"] and "exactly 4 non-empty options" in messages[3]["content"]
    assert outcome(qc_project)["attempts"] == 2


@pytest.mark.slow
@pytest.mark.parametrize(
    "answer, problem",
    [
        ("no json here at all", "not JSON"),
        (rewrite_json("What is the molar mass?", ["a", "b", "c"]), "expected 4 options, got 3"),
        (rewrite_json("What is the molar mass?", ["a", "b", " ", "d"]), "option C is empty"),
        (rewrite_json("", ["a", "b", "c", "d"]), "the question is empty"),
        (rewrite_json("What?", ["same", "Same", "c", "d"]), "options A and B became identical"),
        (json.dumps(["a", "b"]), "not an object"),
    ],
)
def test_answers_that_stay_invalid_mark_the_item_for_manual_rewriting(qc_project, answer, problem):
    with StubServer() as server:
        server.script("POST", CHAT_ROUTE, chat_reply(answer))
        report = run(qc_project, settings_for(server, max_attempts=3))
        sent = server.requests_to(CHAT_ROUTE)
    assert report.manual == 1 and report.rewritten == 0 and len(sent) == 3
    row = outcome(qc_project)
    assert row["status"] == "manual" and row["attempts"] == 3 and problem in row["problem"]
    assert latest_rewrites(qc_project.conn, item_id(qc_project, "q1", "en")) == {}, (
        "an invalid answer is never stored as a rewrite"
    )
    assert problem in report.problems[0]
    # marked items are skipped by the next run unless asked for
    q1 = item_id(qc_project, "q1", "en")
    assert q1 not in [i for i, _ in plan_rewrites(qc_project.conn, settings_for(server)).items]
    assert plan_rewrites(qc_project.conn, settings_for(server, retry_manual=True)).items[0][0] == q1


@pytest.mark.slow
def test_a_chinese_item_answered_in_english_or_korean_is_rejected(qc_project):
    english = rewrite_json(
        "What is the approximate molar mass of sulfuric acid?", ["96克每摩尔", "98克每摩尔", "82克每摩尔", "49克每摩尔"]
    )
    korean = rewrite_json("황산의 몰 질량은 약 얼마입니까?", ["96克每摩尔", "98克每摩尔", "82克每摩尔", "49克每摩尔"])
    good = rewrite_json("硫酸的摩尔质量约为多少？", ["96克每摩尔", "98克每摩尔", "82克每摩尔", "49克每摩尔"])
    with StubServer() as server:
        server.script("POST", CHAT_ROUTE, chat_reply(english), chat_reply(korean), chat_reply(good))
        report = run(qc_project, settings_for(server, languages=("zh",)))
        sent = server.requests_to(CHAT_ROUTE)
    assert report.rewritten == 1 and len(sent) == 3
    retries = [r.json()["messages"][-1]["content"] for r in sent[1:]]
    assert "not written in zh" in retries[0]
    assert "hangul letters" in retries[1]
    assert (
        latest_rewrites(qc_project.conn, item_id(qc_project, "q1", "zh"))["question"]["text"]
        == "硫酸的摩尔质量约为多少？"
    )


def test_script_check_keeps_latin_abbreviations_and_catches_foreign_letters():
    item = Item("s", "1", "zh", "哪种细胞器产生ATP？", (Option("A", "ATP"), Option("B", "核糖体")), "A")
    assert validate_answer(rewrite_json("哪种细胞器产生ATP？", ["ATP", "核糖体"]), item).options == ("ATP", "核糖体")
    with pytest.raises(InvalidAnswer, match="hangul"):
        validate_answer(rewrite_json("哪种细胞器产生ATP？", ["ATP", "리보솜"]), item)
    english = Item("s", "1", "en", "Which gas?", (Option("A", "Oxygen"), Option("B", "Helium")), "A")
    with pytest.raises(InvalidAnswer, match="han letters"):
        validate_answer(rewrite_json("Which gas?", ["氧气", "Helium"]), english)


@pytest.mark.slow
def test_429_with_retry_after_is_retried_then_succeeds(qc_project):
    with StubServer() as server:
        server.script(
            "POST",
            CHAT_ROUTE,
            Reply(429, {"error": {"message": "slow down", "type": "rate_limit"}}, headers={"retry-after": "0.05"}),
            Reply(503, {"error": {"message": "overloaded"}}),
            chat_reply(EN_GOOD),
        )
        report = run(qc_project, settings_for(server))
        sent = server.requests_to(CHAT_ROUTE)
    assert report.rewritten == 1 and len(sent) == 3 and report.requests == 1


@pytest.mark.slow
def test_401_stops_the_run_and_keeps_nothing_half_done(qc_project):
    with StubServer() as server:
        server.script("POST", CHAT_ROUTE, Reply(401, {"error": {"message": "invalid key", "type": "auth"}}))
        settings = settings_for(server, limit=None, languages=("en", "zh", "ko"))
        with pytest.raises(RemoteAuthError) as caught:
            run(qc_project, settings)
        sent = server.requests_to(CHAT_ROUTE)
    assert len(sent) == 1, "concurrency 1: the first 401 stops everything"
    assert SECRET not in str(caught.value)
    assert qc_project.conn.execute("SELECT count(*) FROM rewrites").fetchone()[0] == 0
    assert qc_project.conn.execute("SELECT count(*) FROM rewrite_outcomes").fetchone()[0] == 0


@pytest.mark.slow
def test_a_failing_request_marks_the_item_failed_and_the_next_run_retries_it(qc_project):
    with StubServer() as server:
        server.script("POST", CHAT_ROUTE, Reply(400, {"error": {"message": "context too long"}}))
        report = run(qc_project, settings_for(server))
    assert report.failed == 1 and outcome(qc_project)["status"] == "failed"
    assert "context too long" in report.problems[0]
    with StubServer() as server:
        server.script("POST", CHAT_ROUTE, chat_reply(EN_GOOD))
        assert run(qc_project, settings_for(server)).rewritten == 1
    assert outcome(qc_project)["status"] == "done"


@pytest.mark.slow
def test_answers_are_cached_so_a_redo_asks_nothing(qc_project):
    with StubServer() as server:
        server.script("POST", CHAT_ROUTE, chat_reply("not json"), chat_reply(EN_GOOD))
        run(qc_project, settings_for(server))
    with StubServer() as server:
        server.script("POST", CHAT_ROUTE, Reply(500, {"error": {"message": "must not be called"}}))
        report = run(qc_project, settings_for(server, redo=True))
        assert server.requests_to(CHAT_ROUTE) == []
    assert report.rewritten == 1 and report.cached == 2 and report.requests == 0
    versions = qc_project.conn.execute("SELECT max(version) FROM rewrites WHERE part = 'question'").fetchone()[0]
    assert versions == 2


def test_the_prompt_carries_the_eight_rules_and_per_language_notes():
    template = load_template()
    for rule in (
        "Mathematical expressions",
        "Symbols whose reading depends on the subject",
        "Numbers and units",
        "Parentheses and brackets",
        "Blanks and placeholders",
        "Roman numerals",
        "Chemical formulas",
        "Change nothing else",
    ):
        assert rule in template.system
    assert "空白" in template.notes("zh") and "빈칸" in template.notes("ko") and "blank" in template.notes("en")


@pytest.mark.slow
def test_cli_rewrite_with_a_project_prompt_then_flag(cli, qc_project, tmp_path, monkeypatch):
    monkeypatch.setenv("NVIDIA_API_KEY", SECRET)
    prompt = load_template().source.replace('user = """Subject: $subject', 'user = """Topic: $subject')
    prompt_file = tmp_path / "prompt.toml"
    prompt_file.write_text(prompt, encoding="utf-8")
    with StubServer() as server:
        server.script("POST", CHAT_ROUTE, chat_reply(EN_GOOD))
        result = cli(
            "rewrite",
            qc_project.path,
            "--base-url",
            f"{server.url}/v1",
            "--languages",
            "en",
            "--limit",
            "1",
            "--prompt-file",
            prompt_file,
            "--json",
        )
        [sent] = server.requests_to(CHAT_ROUTE)
    assert result.code == 0, result.err
    assert result.json()["rewritten"] == 1
    assert sent.json()["messages"][1]["content"].startswith("Topic: high school chemistry")
    flagged = cli("flag", qc_project.path, "--json", "--list")
    assert flagged.code == 0 and flagged.json()["flagged"] == 5  # every part changed (math, units)
    bad = tmp_path / "bad.toml"
    bad.write_text(prompt.replace("$subject", "$topic"), encoding="utf-8")
    refused = cli("rewrite", qc_project.path, "--prompt-file", bad, "--dry-run")
    assert refused.code == 2 and "$topic" in refused.err


def test_cli_rewrite_without_a_key_names_the_variable(cli, qc_project, monkeypatch):
    monkeypatch.delenv("NVIDIA_API_KEY", raising=False)
    monkeypatch.setattr("spokenbench.core.foundation.credentials._from_keyring", lambda variable: None)
    result = cli("rewrite", qc_project.path, "--base-url", "http://127.0.0.1:9/v1", "--limit", "1")
    assert result.code == 2 and "NVIDIA_API_KEY" in result.err


@pytest.mark.slow
def test_cancelling_stops_the_run_keeping_finished_items_and_the_reply_in_flight(qc_project):
    """Cancelled once the first item is stored, while the second item's (slow) request is in flight: nothing more
    is sent, and that reply — billed whether or not it is read — is waited for and stored, not paid for again by
    the next run."""
    import dataclasses
    import time

    from spokenbench.core.foundation.errors import Cancelled
    from spokenbench.core.foundation.progress import Progress

    progress = Progress(lambda done, total, message: progress.cancel() if done >= 1 else None)
    with StubServer() as server:
        fast = chat_reply(EN_GOOD)
        server.script("POST", CHAT_ROUTE, fast, dataclasses.replace(fast, delay_s=1.5))
        settings = settings_for(server, limit=None)
        started = time.monotonic()
        with pytest.raises(Cancelled, match="the answers to 1 request.s. already sent were waited for and kept"):
            asyncio.run(
                run_rewrites(
                    qc_project,
                    plan_rewrites(qc_project.conn, settings),
                    settings,
                    progress=progress,
                    retry_policy=FAST_RETRIES,
                )
            )
        assert 1.0 < time.monotonic() - started < 4.0
        assert len(server.requests_to(CHAT_ROUTE)) == 2
    assert qc_project.conn.execute("SELECT count(DISTINCT item_id) FROM rewrites").fetchone()[0] == 2
    [job] = list_jobs(qc_project.conn)
    assert job.kind == "rewrite" and job.status == "cancelled"
