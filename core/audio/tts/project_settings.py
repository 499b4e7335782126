"""Per-project TTS settings: a prompt template a project overrides, and the cloning references it holds."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from spokenbench.core.audio.tts.presets import render_template
from spokenbench.core.store import Project


def _template_key(backend: str) -> str:
    return f"tts_prompt_template:{backend}"


def project_prompt_template(conn: sqlite3.Connection, backend: str) -> str | None:
    row = conn.execute("SELECT value FROM project_meta WHERE key = ?", (_template_key(backend),)).fetchone()
    return row[0] if row else None


def save_prompt_template(project: Project, backend: str, template: str) -> None:
    """Validate (all placeholders known) and store the project's own template for this backend."""
    render_template(template, "text", "en", "american")
    with project.transaction() as conn:
        conn.execute(
            "INSERT INTO project_meta(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            (_template_key(backend), template),
        )


def cloning_references(project: Project) -> dict[str, tuple[str, Path]]:
    """speaker name -> (gender, reference recording path), for speakers whose consent is not withdrawn.
    The newest recording of each speaker is the reference."""
    rows = project.conn.execute(
        """SELECT s.name, s.gender, r.sha256, r.audio_format FROM recordings r
           JOIN speakers s ON s.id = r.speaker_id JOIN consents c ON c.id = r.consent_id
           WHERE c.withdrawn_at IS NULL ORDER BY r.id"""
    )
    return {name: (gender, project.audio.path_for(sha, fmt)) for name, gender, sha, fmt in rows}
