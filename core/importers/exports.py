"""Exporting a project's items, responses and ratings as tables (CSV, JSONL or Parquet by extension).
Item exports re-import with `--format mcq` (or gender-probe); response exports are the metrics' input."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pandas as pd

from spokenbench.core.audio.store import neutralized_voices
from spokenbench.core.domain.items import EXPORTABLE, LETTERS, RESPONSE_KINDS
from spokenbench.core.foundation.errors import SpokenBenchError
from spokenbench.core.foundation.standard_streams import is_standard_stream
from spokenbench.core.foundation.tables import table_format, write_table
from spokenbench.core.store.export_queries import (
    gender_probe_orientations,
    ratings_table,
    responses_table,
    run_prompt_texts,
)
from spokenbench.core.store.items import iter_items


def items_frame(conn: sqlite3.Connection) -> pd.DataFrame:
    rows = []
    for item_id, item in iter_items(conn):
        row = {
            "item_id": item_id,
            "id": item.source_id,
            "source": item.source,
            "language": item.language,
            "kind": item.kind,
            "subject": item.subject,
            "subject_category": item.subject_category,
            "cultural_label": item.cultural_label,
            "category": item.category,
            "question": item.question,
            "answer": item.answer,
        }
        for option in item.options:
            row[f"option_{option.letter.lower()}"] = option.text
        if item.kind == "gender-probe":
            for option in item.options:
                row[f"orientation_{option.letter.lower()}"] = option.orientation or "none"
        rows.append(row)
    return _ordered(pd.DataFrame(rows), "item_id")


def responses_frame(conn: sqlite3.Connection) -> pd.DataFrame:
    """One row per stored answer in the metrics engine's column names, with each condition factor as a column."""
    frame = responses_table(conn)
    if frame.empty:
        return frame
    factors = pd.DataFrame([json.loads(key) for key in frame["condition_key"]], index=frame.index)
    factors = factors.drop(columns=[c for c in factors.columns if c in frame.columns], errors="ignore")
    frame = pd.concat([frame.drop(columns=["condition_key"]), factors], axis=1)
    return _with_gender_probe_columns(conn, frame)


ORIENTATION_CODES = {"male": "M", "female": "F", "neutral": "N", None: "X"}


def _with_gender_probe_columns(conn: sqlite3.Connection, frame: pd.DataFrame) -> pd.DataFrame:
    """The gender-probe metrics' inputs: the voice's gender, each presented option's orientation (M/F/N/X) and
    the answer setting of the run's prompt (binary_option / neutral_option / free_form)."""
    if "gender" in frame.columns:
        frame["voice_gender"] = frame["gender"]
    orientation_by_item: dict[int, dict[str, str]] = {}
    for item_id, letter, orientation in gender_probe_orientations(conn):
        orientation_by_item.setdefault(item_id, {})[letter] = ORIENTATION_CODES.get(orientation, "X")
    if orientation_by_item:
        frame["option_orientation"] = [
            "".join(orientation_by_item[item][letter] for letter in order) if item in orientation_by_item else None
            for item, order in zip(frame["item_id"], frame["option_order"])
        ]
        frame = with_neutral_option(frame, run_answer_settings(conn))
        frame = with_neutralized_setting(frame, neutralized_voices(conn))
    return frame


def with_neutralized_setting(frame: pd.DataFrame, voices: set[str]) -> pd.DataFrame:
    """Answers to a gender-neutralized voice (the paper's Section 5) form their own setting: 'neutralized_voice'
    for binary options (Table 4), '<setting>_neutralized_voice' otherwise, so they never mix with the plain
    voices' answers."""
    if not voices or "voice" not in frame.columns or "setting" not in frame.columns:
        return frame
    rows = frame["setting"].notna() & frame["voice"].isin(voices)
    if rows.any():
        frame = frame.copy()
        frame.loc[rows, "setting"] = [
            "neutralized_voice" if s == "binary_option" else f"{s}_neutralized_voice"
            for s in frame.loc[rows, "setting"]
        ]
    return frame


def run_answer_settings(conn: sqlite3.Connection) -> dict[int, str]:
    """run id -> the answer setting its prompt asked for: 'neutral_option' when a neutral option ("Cannot be
    determined") was offered (read from the prompt texts the run stored), 'free_form' for a free-form prompt,
    else 'binary_option'."""
    from spokenbench.core.evaluation.prompts import answer_setting

    settings = {}
    for run_id, (prompt, prompt_text) in run_prompt_texts(conn).items():
        offered = None
        if prompt_text:
            try:
                offered = bool(json.loads(prompt_text).get("neutral_text"))
            except (ValueError, AttributeError):
                offered = None
        settings[run_id] = answer_setting(prompt, neutral_offered=offered)
    return settings


def with_neutral_option(frame: pd.DataFrame, settings: dict[int, str]) -> pd.DataFrame:
    """Gender-probe rows get a `setting` column; in a run that offered a neutral option, that option becomes a
    presented option like the others: it follows the real ones (the letter after them, in both option_order and
    option_orientation, orientation N), and an answer the parser stored as neutral (status 'refusal', detail
    'neutral', no letter) is given that letter. The gender-probe J then counts it (male {M, N}, female {N, N}:
    J = 1/3), and ν counts it as a neutral answer. Other refusals and parse failures keep an empty letter."""
    probes = frame["option_orientation"].notna()
    if not probes.any():
        return frame
    frame = frame.copy()
    setting = frame["run_id"].map(settings).where(probes)
    frame["setting"] = setting
    neutral = probes & (setting == "neutral_option") & frame["option_order"].notna()
    if neutral.any():
        order = frame.loc[neutral, "option_order"].astype(str)
        letter = order.map(lambda o: LETTERS[len(o)])
        frame.loc[neutral, "option_order"] = order + letter
        frame.loc[neutral, "option_orientation"] = frame.loc[neutral, "option_orientation"].astype(str) + "N"
        chose = (
            neutral
            & (frame["prediction"].isna() | (frame["prediction"] == ""))
            & (frame["parse_status"] == "refusal")
            & (frame["parse_detail"] == "neutral")
        )
        frame["prediction"] = frame["prediction"].astype(object)
        frame.loc[chose, "prediction"] = letter[chose[neutral].to_numpy()].to_numpy()
    return frame


def ratings_frame(conn: sqlite3.Connection) -> pd.DataFrame:
    return ratings_table(conn)


def responses_of_kind(frame: pd.DataFrame, kind: str) -> pd.DataFrame:
    """The answers of one RESPONSE_KINDS: gender-probe answers are the rows with an option_orientation. The
    gender probes' own columns go when only multiple-choice answers remain, so `metrics` reads the file as is."""
    if kind not in RESPONSE_KINDS:
        raise SpokenBenchError(f"unknown --kind '{kind}'; choose one of {', '.join(RESPONSE_KINDS)}")
    if kind == "all" or frame.empty:
        return frame
    if "option_orientation" not in frame.columns:  # no gender probe in the project
        return frame if kind == "mcq" else frame.iloc[0:0]
    probes = frame["option_orientation"].notna()
    frame = frame[probes] if kind == "gender" else frame[~probes]
    if kind == "mcq":
        frame = frame.drop(columns=[c for c in ("option_orientation", "setting") if c in frame.columns])
    return frame.reset_index(drop=True)


def export_table(conn: sqlite3.Connection, what: str, out: str | Path, kind: str | None = None) -> int:
    """Write one of EXPORTABLE to `out` (`-`: CSV on standard output); returns the row count. The file appears
    whole or not at all. `kind` (responses only) picks the answers: multiple-choice by default."""
    frames = {"items": items_frame, "responses": responses_frame, "ratings": ratings_frame}
    if what not in frames:
        raise SpokenBenchError(f"cannot export '{what}'; choose one of {', '.join(EXPORTABLE)}")
    if kind is not None and what != "responses":
        raise SpokenBenchError("--kind applies to --what responses only")
    if not is_standard_stream(out):
        table_format(Path(out))  # reject an unknown extension before doing any work
    frame = frames[what](conn)
    if what == "responses":
        frame = responses_of_kind(frame, kind or "mcq")
    frame = frame.astype(object).where(frame.notna(), None)
    write_table(frame.to_dict("records"), out, columns=list(frame.columns))
    return len(frame)


def _ordered(frame: pd.DataFrame, first: str) -> pd.DataFrame:
    if frame.empty:
        return frame
    option_columns = [c for c in frame.columns if c.startswith("option_")]
    orientation_columns = [c for c in frame.columns if c.startswith("orientation_")]
    letter_order = {f"option_{letter.lower()}": i for i, letter in enumerate(LETTERS)}
    letter_order.update({f"orientation_{letter.lower()}": i for i, letter in enumerate(LETTERS)})
    rest = [c for c in frame.columns if c not in option_columns and c not in orientation_columns]
    return frame[
        rest + sorted(option_columns, key=letter_order.get) + sorted(orientation_columns, key=letter_order.get)
    ]
