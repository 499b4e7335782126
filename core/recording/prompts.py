"""What a speaker reads: the project's questions in the speaker's language (their accepted or edited spoken
rewrite where there is one, else the original text), or a reading list — a text file, one prompt per line.

A prompt's key says what it is and survives reordering: 'item:<id>:<part>' for a project part, 'line:<hash>' for a
reading-list line (the hash of its text), so progress through a script is the set of keys with a passing take."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from spokenbench.core.domain.items import option_part
from spokenbench.core.foundation.errors import SpokenBenchError
from spokenbench.core.foundation.safe_files import read_regular_text
from spokenbench.core.store.items import items_in_languages
from spokenbench.core.store.rewrites import latest_rewrites

READY_REWRITE_STATUSES = ("accepted", "edited")  # as in core.audio.synthesis: only reviewed rewrites are read
MAX_PROMPT_CHARS = 2_000
MAX_PROMPTS = 10_000


@dataclass(frozen=True)
class Prompt:
    key: str
    text: str
    item_id: int | None = None
    part: str | None = None
    label: str = ""  # where it comes from: 'demo/001 question', 'reading list line 3'


def project_prompts(conn, language: str | None, parts: tuple[str, ...] = ("question",)) -> list[Prompt]:
    """The project's items in `language` (every language when None), each wanted part once, in item order.
    `parts`: 'question' and/or 'options'."""
    prompts = []
    for item_id, item in items_in_languages(conn, [language] if language else None):
        rewrites = latest_rewrites(conn, item_id)
        wanted = (["question"] if "question" in parts else []) + (
            [option_part(o.letter) for o in item.options] if "options" in parts else []
        )
        for part in wanted:
            rewrite = rewrites.get(part)
            if rewrite is not None and rewrite["status"] in READY_REWRITE_STATUSES:
                text = rewrite["text"]
            elif part == "question":
                text = item.question
            else:
                text = next(o.text for o in item.options if option_part(o.letter) == part)
            prompts.append(Prompt(f"item:{item_id}:{part}", text, item_id, part, f"{item.source_id} {part}"))
            if len(prompts) >= MAX_PROMPTS:
                return prompts
    return prompts


def line_key(text: str) -> str:
    return "line:" + hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def reading_list_prompts(text: str, source: str = "reading list") -> list[Prompt]:
    """One prompt per non-empty line (surrounding whitespace dropped, a repeated line kept once)."""
    prompts: dict[str, Prompt] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        line = line.strip().lstrip("\ufeff")
        if not line:
            continue
        if len(line) > MAX_PROMPT_CHARS:
            raise SpokenBenchError(
                f"{source}, line {number}: {len(line):,} characters; a prompt may have at most {MAX_PROMPT_CHARS:,}"
            )
        key = line_key(line)
        prompts.setdefault(key, Prompt(key, line, label=f"{source} line {number}"))
    if not prompts:
        raise SpokenBenchError(f"{source} holds no prompts: write one sentence per line")
    if len(prompts) > MAX_PROMPTS:
        raise SpokenBenchError(f"{source} holds {len(prompts):,} prompts; at most {MAX_PROMPTS:,} are accepted")
    return list(prompts.values())


def read_reading_list(path: str | Path) -> list[Prompt]:
    path = Path(path)
    try:
        text = read_regular_text(path, encoding="utf-8-sig")  # regular and bounded: never a FIFO or /dev/zero
    except FileNotFoundError:
        raise SpokenBenchError(f"{path}: no such reading list") from None
    except OSError as error:
        raise SpokenBenchError(f"{path}: cannot read the reading list ({error.strerror or error})") from None
    return reading_list_prompts(text, path.name)
