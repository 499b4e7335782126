"""Backbone pairs of the gender study, declared once per project: which text model (the backbone LLM) each speech
model is compared with (Cohen's κ and Bowker's test, the free-form similarity s). Kept in the project's settings
(`project_meta`, key `gender_study.backbones`, a JSON object {speech model: text model}), so `spokenbench report
PROJECT --kind gender-probe` and the app pair them without flags.

    spokenbench backbone DIR --pair simulated:male-leaning=simulated:steady
"""

from __future__ import annotations

import json
from pathlib import Path

from spokenbench.core.foundation.errors import SpokenBenchError
from spokenbench.core.store import Project
from spokenbench.core.store.meta import delete_meta, read_meta, write_meta

META_KEY = "gender_study.backbones"


def parse_pairs(specs: list[str] | None, option: str = "--pair") -> dict[str, str]:
    """`SPEECH=TEXT` pairs (several per argument allowed, comma-separated) -> {speech: text}. A speech model
    named twice with different text models, or an empty side, is an error."""
    pairs: dict[str, str] = {}
    for spec in specs or []:
        for part in spec.split(","):
            if not part.strip():
                continue
            speech, sep, text = part.partition("=")
            speech, text = speech.strip(), text.strip()
            if not sep or not speech or not text:
                raise SpokenBenchError(f"{option} expects AUDIO_MODEL=TEXT_MODEL, got '{part.strip()}'")
            if "=" in text:
                raise SpokenBenchError(f"{option} expects one '=' in AUDIO_MODEL=TEXT_MODEL, got '{part.strip()}'")
            if pairs.get(speech, text) != text:
                raise SpokenBenchError(
                    f"{option} pairs {speech} with two text models ({pairs[speech]} and {text}); give one"
                )
            pairs[speech] = text
    return pairs


def read_backbone_pairs(conn) -> dict[str, str]:
    """The project's declared pairs ({} when none were declared)."""
    value = read_meta(conn, META_KEY)
    if not value:
        return {}
    try:
        data = json.loads(value)
    except ValueError:
        raise SpokenBenchError(f"the project's backbone pairs ({META_KEY}) are not valid JSON") from None
    if not isinstance(data, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in data.items()):
        raise SpokenBenchError(f"the project's backbone pairs ({META_KEY}) must map model names to model names")
    return dict(data)


def project_backbone_pairs(project_path: str | Path) -> dict[str, str]:
    with Project.open(project_path) as project:
        return read_backbone_pairs(project.conn)


def declare_backbone_pairs(
    project_path: str | Path,
    pairs: dict[str, str] | None = None,
    remove: list[str] | None = None,
    clear: bool = False,
) -> dict[str, str]:
    """Add or replace pairs, remove speech models' pairs, or clear them all; returns the pairs now declared.
    Removing a speech model that has no pair is an error (a typo would otherwise pass unnoticed)."""
    with Project.open(project_path) as project:
        with project.transaction() as conn:
            current = {} if clear else read_backbone_pairs(conn)
            for speech in remove or []:
                if speech not in current:
                    declared = ", ".join(current) or "none"
                    raise SpokenBenchError(f"no backbone pair for '{speech}' (declared for: {declared})")
                del current[speech]
            current.update(pairs or {})
            if current:
                write_meta(conn, META_KEY, json.dumps(current, sort_keys=True))
            else:
                delete_meta(conn, META_KEY)
    return current


def gender_probe_models(project_path: str | Path) -> dict[str, set[str]]:
    """model -> the modes of its runs that answered gender probes (to check a pair against what was run)."""
    from spokenbench.core.importers.exports import responses_frame

    with Project.open(project_path) as project:
        frame = responses_frame(project.conn)
    if frame.empty or "category" not in frame.columns:
        return {}
    frame = frame[frame["category"].notna() & (frame["category"].astype(str) != "")]
    return {str(m): set(map(str, g["mode"])) for m, g in frame.groupby("model")}
