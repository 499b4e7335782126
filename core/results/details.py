"""What a clicked point's responses were: questions, answers, and the audio the model heard."""

from __future__ import annotations

import json

import pandas as pd

from spokenbench.core.results.model import PanelSet, Point

# --------------------------------------------------------------------------------------------------
# What a clicked point's responses were: questions, answers, and the audio the model heard


def point_details(project, panels: PanelSet, point: Point, probe: bool = False, limit: int = 500) -> pd.DataFrame:
    """The responses behind a point (at most `limit`), with each question's text and options, the model's raw
    answer, and the audio file it heard: the assembled input of that item and condition when one is stored,
    else the item's question clip in the same voice (`audio_kind` says which), else none."""
    from spokenbench.core.evaluation.store import assembled_audio, assembled_input_rows, clip_audio, question_clips
    from spokenbench.core.metrics.store import item_texts, response_texts
    from spokenbench.core.store.project import audio_store_of

    rows = panels.responses_behind(point, probe).head(limit).copy()
    if rows.empty or "item_id" not in rows.columns:
        return rows.assign(question_text="", options="", raw_text="", audio_path="", audio_kind="")
    conn = project.conn
    item_ids = sorted({int(i) for i in rows["item_id"].dropna()})
    texts = item_texts(conn, item_ids)
    rows["question_text"] = [texts.get(int(i), ("", ""))[0] for i in rows["item_id"]]
    rows["options"] = [texts.get(int(i), ("", ""))[1] for i in rows["item_id"]]
    if "response_id" in rows.columns:
        answers = response_texts(conn, [int(i) for i in rows["response_id"]])
        for position, column in enumerate(("raw_text", "parse_detail", "error", "transcript")):
            rows[column] = [answers.get(int(i), (None,) * 4)[position] for i in rows["response_id"]]

    audio = audio_store_of(conn)
    wanted = set(item_ids)
    inputs: dict[int, list[tuple[int, dict]]] = {}
    for row in assembled_input_rows(conn):
        if row["item_id"] in wanted:
            inputs.setdefault(row["item_id"], []).append((row["id"], json.loads(row["condition_key"])))
    files = assembled_audio(conn, [i for entries in inputs.values() for i, _ in entries])
    clips_by_item = {item_id: question_clips(conn, item_id) for item_id in item_ids if item_id not in inputs}
    clip_files = clip_audio(conn, [c["id"] for clips in clips_by_item.values() for c in clips])
    paths, kinds = [], []
    for record in rows.to_dict("records"):
        item_id = int(record["item_id"])
        path, kind = "", ""
        for input_id, factors in inputs.get(item_id, []):
            if all(str(record.get(k, v)) == str(v) for k, v in factors.items()) and input_id in files:
                sha, fmt, _ = files[input_id]
                path, kind = str(audio.path_for(sha, fmt)), "assembled input"
                break
        if not path:
            path, kind = _matching_clip(record, clips_by_item.get(item_id, []), clip_files, audio)
        paths.append(path)
        kinds.append(kind)
    rows["audio_path"] = paths
    rows["audio_kind"] = kinds
    return rows


def _matching_clip(record: dict, clips, clip_files, audio) -> tuple[str, str]:
    """The item's question clip closest to the response's condition: the same voice, else the same accent and
    voice gender, else the same accent."""
    gender = record.get("voice_gender") or record.get("gender")
    tiers = (
        ("question clip, same voice", lambda c: record.get("voice") and c["voice"] == record.get("voice")),
        (
            "question clip, same accent and voice gender",
            lambda c: c["accent"] == record.get("accent") and gender and c["speaker_gender"] == gender,
        ),
        ("question clip, same accent", lambda c: c["accent"] == record.get("accent")),
    )
    for kind, matches in tiers:
        for clip in clips:
            found = clip_files.get(clip["id"])
            if found and found[0] and matches(clip):
                return str(audio.path_for(found[0], found[1])), kind
    return "", ""
