"""Per-project TTS settings: a prompt template a project overrides, and the cloning references it holds."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from spokenbench.core.audio.store import consented_recordings
from spokenbench.core.audio.tts.presets import render_template
from spokenbench.core.store import Project
from spokenbench.core.store.meta import read_meta, write_meta


def _template_key(backend: str) -> str:
    return f"tts_prompt_template:{backend}"


def project_prompt_template(conn: sqlite3.Connection, backend: str) -> str | None:
    return read_meta(conn, _template_key(backend))


def save_prompt_template(project: Project, backend: str, template: str) -> None:
    """Validate (all placeholders known) and store the project's own template for this backend."""
    render_template(template, "text", "en", "american")
    with project.transaction() as conn:
        write_meta(conn, _template_key(backend), template)


def _model_dir_key(backend: str) -> str:
    return f"tts_model_dir:{backend}"


def project_model_dir(conn: sqlite3.Connection, backend: str) -> str | None:
    """The model folder a project saved for a local backend (Kokoro), if any."""
    return read_meta(conn, _model_dir_key(backend))


def save_model_dir(project: Project, backend: str, folder: str | Path) -> str:
    """Remember the model folder (as an absolute path) for this project's later runs; returns what was saved."""
    path = str(Path(folder).expanduser().resolve())
    with project.transaction() as conn:
        write_meta(conn, _model_dir_key(backend), path)
    return path


def cloning_references(project: Project) -> dict[str, tuple[str, Path]]:
    """speaker name -> (gender, reference recording path), for speakers whose consent is not withdrawn.
    The newest recording of each speaker is the reference."""
    return {
        name: (gender, project.audio.path_for(sha, fmt))
        for name, gender, sha, fmt in consented_recordings(project.conn)
    }
