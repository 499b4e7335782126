"""Parsing stored or foreign raw answers again, without asking any model: after a parser change
(`spokenbench reparse DIR`) or for outputs produced elsewhere (`spokenbench parse FILE --out FILE`)."""

from __future__ import annotations

import json
from collections import Counter

from spokenbench.core.domain.conditions import Condition
from spokenbench.core.domain.items import LETTERS, option_part
from spokenbench.core.evaluation import store
from spokenbench.core.evaluation.parsing import PARSER_VERSION, map_to_original, parse_answer
from spokenbench.core.evaluation.prompts import PROMPTS, render_prompt
from spokenbench.core.foundation.errors import InputError, SpokenBenchError
from spokenbench.core.foundation.tables import Table
from spokenbench.core.store import Project
from spokenbench.core.store.items import iter_items
from spokenbench.core.store.rewrites import latest_rewrites


def reparse_project(project: Project, run_id: int | None = None) -> dict:
    """Re-parse every stored raw answer (of one run, or all) with the current parser, in one transaction."""
    conn = project.conn
    runs = store.runs_to_reparse(conn, run_id)
    if run_id and not runs:
        raise SpokenBenchError(f"no run {run_id} in this project (see `spokenbench runs DIR`)")
    items = {item_id: item for item_id, item in iter_items(conn)}
    counts: Counter = Counter()
    changed = total = 0
    updates = []
    for run in runs:
        parameters = json.loads(run["parameters_json"] or "{}")
        plan = parameters.get("plan", {})
        mode = plan.get("mode") or (run["mode"] if run["mode"] != "simulated" else "audio")
        prompt = run["prompt"] if run["prompt"] in PROMPTS else "standard"
        rewritten = plan.get("text_source") == "rewritten"
        texts_cache: dict[int, dict] = {}
        rows = store.answered_rows(conn, run["id"])
        for row in rows:
            item = items.get(row["item_id"])
            if item is None:
                continue
            if rewritten and row["item_id"] not in texts_cache:
                texts_cache[row["item_id"]] = {
                    p: r["text"]
                    for p, r in latest_rewrites(conn, row["item_id"]).items()
                    if r["status"] in ("accepted", "edited")
                }
            texts = texts_cache.get(row["item_id"], {})
            condition = Condition.from_key(row["condition_key"])
            order = row["option_order"]
            rendered = render_prompt(
                prompt,
                mode,
                texts.get("question", item.question),
                [texts.get(option_part(o.letter), o.text) for o in item.options],
                order,
                LETTERS[: len(order)],
                condition.spoken_labels,
                item.language,
            )
            parsed = parse_answer(
                row["raw_text"],
                rendered.presented_letters,
                rendered.option_texts,
                rendered.neutral_letter,
                rendered.neutral_text,
            )
            total += 1
            counts[parsed.status] += 1
            if (parsed.letter, parsed.status, parsed.detail) != (
                row["parsed_letter"],
                row["parse_status"],
                row["parse_detail"],
            ):
                changed += 1
                updates.append(
                    (parsed.letter, parsed.status, map_to_original(parsed.letter, order), parsed.detail, row["id"])
                )
    with project.transaction() as write:
        store.update_parses(write, updates)
    return {
        "runs": len(runs),
        "responses": total,
        "changed": changed,
        "parse_counts": dict(counts),
        "parser_version": PARSER_VERSION,
    }


def check_letters(letters: str | None) -> str | None:
    """Answer letters for rows without options: 2 to 10 distinct letters of A–J, as many as the options
    ('AAAA' would make every answer ambiguous)."""
    if letters is None:
        return None
    value = letters.strip().upper()
    if not 2 <= len(value) <= len(LETTERS) or len(set(value)) != len(value) or not set(value) <= set(LETTERS):
        raise SpokenBenchError(
            f"--letters '{letters}': give 2 to {len(LETTERS)} distinct letters of {LETTERS}, one per option (e.g. ABCD)"
        )
    return value


def parse_rows(table: Table, letters: str | None = None) -> tuple[list[dict], dict]:
    """Rows of a foreign outputs table with prediction / parse_status / parse_detail (/ mapped_option) added.
    `options` may be a list or a JSON list of option texts in the original order; `option_order` the original
    letter at each presented letter (e.g. 'DCBA'). Problems are reported all at once with their row."""
    letters = check_letters(letters)
    problems, out, counts = [], [], Counter()
    for number, row in enumerate(table.rows, start=1):
        raw = row.get("raw_response")
        options = row.get("options")
        if isinstance(options, str) and options.strip():
            try:
                options = json.loads(options)
            except (ValueError, RecursionError):  # not JSON, a 4,300-digit number, or nested too deeply
                problems.append(table.problem("is not a JSON list of option texts", number, "options"))
                continue
        if options is not None and not isinstance(options, list):
            options = None if options == "" else options
            if options is not None and not hasattr(options, "__iter__"):
                problems.append(table.problem("must be a list of option texts", number, "options"))
                continue
            options = list(options) if options is not None else None
        order = str(row.get("option_order") or "").strip().upper() or None
        count = len(order) if order else len(options) if options else len(letters or "ABCD")
        if order and sorted(order) != list(LETTERS[:count]):
            problems.append(
                table.problem(f"'{order}' is not a permutation of {LETTERS[:count]}", number, "option_order")
            )
            continue
        if options and order and len(options) != len(order):
            problems.append(
                table.problem(f"{len(options)} options but option_order has {len(order)} letters", number, "options")
            )
            continue
        presented = (letters or LETTERS[:count]) if not (order or options) else LETTERS[:count]
        shown = {}
        if options:
            originals = order or LETTERS[:count]
            shown = {letter: str(options[LETTERS.index(original)]) for letter, original in zip(presented, originals)}
        parsed = parse_answer(None if raw is None else str(raw), presented, shown)
        counts[parsed.status] += 1
        result = {**row, "prediction": parsed.letter, "parse_status": parsed.status, "parse_detail": parsed.detail}
        if "option_order" in table.columns:
            result["mapped_option"] = map_to_original(parsed.letter, order) if order else parsed.letter
        out.append(result)
    if problems:
        raise InputError(problems)
    return out, dict(counts)
