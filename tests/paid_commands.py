"""Real paid commands against a loopback stub, for the tests and benchmarks of what a stopped or paused job pays:
each setup makes a project in `folder` with `items` units and scripts `server` to answer every request after
`answer_s`; it returns the command's arguments (after `spokenbench`) and the route its requests go to."""

import sys
from dataclasses import replace
from pathlib import Path

from eval_support import add_assembled, add_items
from qc_support import CHAT_ROUTE, chat_reply, rewrite_json
from stub_server import Reply, StubServer, chat_answer
from support import physics_items, write_jsonl

from spokenbench.core.audio.io import encode_wav
from spokenbench.core.domain.conditions import Condition
from spokenbench.core.importers import ImportOptions, import_files
from spokenbench.core.store import Project

SPOKENBENCH = str(Path(sys.executable).with_name("spokenbench"))
GOOD_REWRITE = rewrite_json("What is this speed in kilometers per hour?", ["one", "two", "three", "four"])


def _tone_wav() -> bytes:
    import numpy as np

    samples = (0.2 * np.sin(2 * np.pi * 220 * np.arange(24_000) / 24_000)).astype(np.float32)
    return encode_wav(samples, 24_000)


def _project_of_items(folder: Path, items: int) -> None:
    with Project.create(folder / "project") as project:
        rows = physics_items(items, "s")
        import_files(project, [write_jsonl(folder / "items.jsonl", rows)], "mcq", ImportOptions(source="b"))


def rewrite_setup(
    folder: Path, items: int, server: StubServer, concurrency: int, answer_s: float
) -> tuple[list[str], str]:
    _project_of_items(folder, items)
    server.script("POST", CHAT_ROUTE, replace(chat_reply(GOOD_REWRITE), delay_s=answer_s))
    command = ["rewrite", str(folder / "project"), "--base-url", f"{server.url}/v1", "--concurrency", str(concurrency)]
    return command, CHAT_ROUTE


def synthesize_setup(
    folder: Path, items: int, server: StubServer, concurrency: int, answer_s: float
) -> tuple[list[str], str]:
    _project_of_items(folder, items)
    route = r"/v1/audio/speech$"
    server.script("POST", route, Reply(200, _tone_wav(), headers={"Content-Type": "audio/wav"}, delay_s=answer_s))
    command = ["synthesize", str(folder / "project"), "--tts", "openai", "--base-url", f"{server.url}/v1"]
    command += ["--voices", "nova", "--accents", "american", "--parts", "questions", "--original-text"]
    return command, route


def evaluate_setup(
    folder: Path, items: int, server: StubServer, concurrency: int, answer_s: float
) -> tuple[list[str], str]:
    with Project.create(folder / "project") as project:
        for item_id in add_items(project, items):
            add_assembled(project, item_id, Condition(language="en", voice="Zephyr", order="original"))
    server.script("POST", CHAT_ROUTE, Reply(200, chat_answer("A"), delay_s=answer_s))
    command = ["evaluate", str(folder / "project"), "--model", "vllm:stub-model", "--base-url", f"{server.url}/v1"]
    command += ["--mode", "audio", "--prompt", "standard", "--concurrency", str(concurrency)]
    return command, CHAT_ROUTE


KINDS = {"rewrite": rewrite_setup, "synthesize": synthesize_setup, "evaluate": evaluate_setup}
