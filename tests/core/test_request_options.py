"""The remote-call options (`--concurrency`, `--rpm`, `--retries`, `--timeout`), declared once in
core/cli/arguments.py (issue 27): `rewrite`, `transcribe` and `evaluate` show the same help, parse to the same
defaults, and refuse the same bad values with the option's name and exit code 2; transcribe's values reach the
ASR backend."""

import re

import pytest

from spokenbench.core.cli.main import main as cli_main
from spokenbench.core.jobs.remote import DEFAULT_ATTEMPTS, DEFAULT_CONCURRENCY, DEFAULT_TIMEOUT_S

REQUEST_OPTIONS = ("--concurrency", "--rpm", "--retries", "--timeout")
# The least each command needs to parse: its project folder and required options.
MINIMAL_ARGS = {
    "rewrite": ["rewrite", "DIR"],
    "transcribe": ["transcribe", "DIR"],
    "evaluate": ["evaluate", "DIR", "--model", "simulated:steady", "--mode", "text", "--prompt", "standard"],
}


def help_entries(command: str, capsys) -> dict[str, str]:
    """Each request option's entry in `spokenbench COMMAND --help`, as printed (name, metavar, wrapped help)."""
    with pytest.raises(SystemExit) as stopped:
        cli_main([command, "--help"])
    assert stopped.value.code == 0
    text = capsys.readouterr().out
    entries = {}
    for option in REQUEST_OPTIONS:
        match = re.search(rf"^  {option} .*?(?=^  -|^\S|\Z)", text, re.MULTILINE | re.DOTALL)
        assert match, f"{command} --help does not show {option}"
        entries[option] = " ".join(match.group(0).split())
    return entries


def parsed(argv: list[str]):
    from spokenbench.core.cli.main import build_parser

    return build_parser(argv).parse_args(argv)


@pytest.mark.slow  # imports the three command modules: ~0.4 s
def test_the_three_commands_show_the_same_help_for_the_request_options(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "100")  # one wrapping for all three
    rewrite = help_entries("rewrite", capsys)
    assert rewrite == help_entries("transcribe", capsys) == help_entries("evaluate", capsys)
    assert f"(default {DEFAULT_CONCURRENCY})" in rewrite["--concurrency"]
    assert f"(default {DEFAULT_TIMEOUT_S:g})" in rewrite["--timeout"]
    assert f"(default {DEFAULT_ATTEMPTS})" in rewrite["--retries"]


def test_the_three_commands_parse_to_the_same_defaults():
    defaults = {
        command: {name: getattr(parsed(argv), name) for name in ("concurrency", "rpm", "retries", "timeout")}
        for command, argv in MINIMAL_ARGS.items()
    }
    expected = {"concurrency": 8, "rpm": None, "retries": 6, "timeout": 300.0}
    assert defaults == dict.fromkeys(MINIMAL_ARGS, expected)


def test_given_values_are_parsed_alike_by_the_three_commands():
    given = ["--concurrency", "3", "--rpm", "12.5", "--retries", "2", "--timeout", "7.5"]
    for command, argv in MINIMAL_ARGS.items():
        args = parsed(argv + given)
        assert (args.concurrency, args.rpm, args.retries, args.timeout) == (3, 12.5, 2, 7.5), command


@pytest.mark.parametrize("command", MINIMAL_ARGS)
@pytest.mark.parametrize("option", REQUEST_OPTIONS)
@pytest.mark.parametrize("value", ["0", "-2", "many", "nan"])
def test_a_bad_value_is_exit_2_naming_the_option(command, option, value, tmp_path, capsys):
    argv = [tmp_path if word == "DIR" else word for word in MINIMAL_ARGS[command]]
    with pytest.raises(SystemExit) as stopped:
        cli_main([str(word) for word in argv] + [f"{option}={value}"])
    assert stopped.value.code == 2
    error = capsys.readouterr().err
    assert f"argument {option}:" in error and "Traceback" not in error
    assert not any(tmp_path.iterdir())  # refused before any project was made or opened


def test_an_out_of_range_value_names_the_range(capsys):
    with pytest.raises(SystemExit):
        cli_main(["transcribe", "DIR", "--concurrency", "257"])
    assert "argument --concurrency: must be at most 256, not 257" in capsys.readouterr().err


@pytest.mark.slow  # imports the openai and google-genai SDKs: ~2 s
def test_transcribe_hands_its_request_limits_to_remote_asr_systems():
    from spokenbench.core.asr.backends import get_asr_backend

    args = parsed(["transcribe", "DIR", "--concurrency", "3", "--rpm", "30", "--timeout", "2.5"])
    for spec in ("openai:whisper-1@http://127.0.0.1:9/v1", "gemini:gemini-2.5-flash@http://127.0.0.1:9"):
        backend = get_asr_backend(
            spec, key="sk-test-key", concurrency=args.concurrency, requests_per_minute=args.rpm, timeout_s=args.timeout
        )
        assert (backend.max_concurrency, backend.requests_per_minute, backend.timeout_s) == (3, 30.0, 2.5)
    openai_backend = get_asr_backend(
        "openai:whisper-1@http://127.0.0.1:9/v1", key="sk-test-key", timeout_s=args.timeout
    )
    openai_backend.prepare()
    assert openai_backend._client.timeout == 2.5  # the SDK client itself gives up after --timeout
