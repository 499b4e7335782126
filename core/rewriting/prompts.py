"""The rewriting prompt: resources/prompts/rewrite/rewrite.toml (the one place its wording lives), or a project's
own copy stored in project_meta. Placeholders are `$name` (string.Template), so the JSON in the prompt needs
no brace escaping."""

from __future__ import annotations

import importlib.resources
import json
import string
import tomllib
from dataclasses import dataclass

from spokenbench.core.domain.items import Item
from spokenbench.core.foundation.errors import SpokenBenchError
from spokenbench.core.store import Project
from spokenbench.core.store.meta import read_meta, write_meta

TEMPLATE_RESOURCE = ("prompts", "rewrite", "rewrite.toml")
PROJECT_META_KEY = "rewrite_prompt_template"
PLACEHOLDERS = frozenset({"language_name", "language_notes", "subject", "option_count", "item_json", "problem"})
REQUIRED_SECTIONS = ("system", "user", "retry")


@dataclass(frozen=True)
class RewriteTemplate:
    source: str  # the TOML text, stored as is when a project overrides it
    system: str
    user: str
    retry: str
    parameters: dict
    language_names: dict[str, str]
    language_notes: dict[str, str]

    def language_name(self, language: str) -> str:
        return self.language_names.get(language) or self.language_names.get(language.split("-")[0]) or language

    def notes(self, language: str) -> str:
        return (
            self.language_notes.get(language)
            or self.language_notes.get(language.split("-")[0])
            or self.language_notes.get("default", "")
        )


def parse_template(source: str, origin: str) -> RewriteTemplate:
    """Parse and check a template: TOML, the three texts present, only known placeholders."""
    try:
        data = tomllib.loads(source)
    except tomllib.TOMLDecodeError as error:
        raise SpokenBenchError(f"{origin}: the rewrite prompt is not valid TOML ({error})") from None
    missing = [key for key in REQUIRED_SECTIONS if not isinstance(data.get(key), str) or not data[key].strip()]
    if missing:
        raise SpokenBenchError(f"{origin}: the rewrite prompt needs the texts {', '.join(missing)}")
    for key in (*REQUIRED_SECTIONS, *(f"language_notes.{k}" for k in data.get("language_notes", {}))):
        section, _, sub = key.partition(".")
        text = data[section][sub] if sub else data[section]
        template = string.Template(text)
        unknown = set(template.get_identifiers()) - PLACEHOLDERS
        if unknown or not template.is_valid():
            what = (
                f"unknown placeholder(s) {', '.join('$' + u for u in sorted(unknown))}"
                if unknown
                else "a lone '$' (write $$ for a dollar sign)"
            )
            raise SpokenBenchError(
                f"{origin}: {key} has {what}; placeholders: {', '.join('$' + p for p in sorted(PLACEHOLDERS))}"
            )
    return RewriteTemplate(
        source=source,
        system=data["system"],
        user=data["user"],
        retry=data["retry"],
        parameters=dict(data.get("parameters", {})),
        language_names=dict(data.get("language_names", {})),
        language_notes=dict(data.get("language_notes", {})),
    )


def default_template_source() -> str:
    resource = importlib.resources.files("spokenbench.resources")
    for part in TEMPLATE_RESOURCE:
        resource = resource / part
    return resource.read_text(encoding="utf-8")


def load_template(conn=None) -> RewriteTemplate:
    """The project's own template when it has one, else the bundled one."""
    if conn is not None:
        source = read_meta(conn, PROJECT_META_KEY)
        if source is not None:
            return parse_template(source, "the project's rewrite prompt")
    return parse_template(default_template_source(), "/".join(("resources", *TEMPLATE_RESOURCE)))


def save_project_template(project: Project, source: str, origin: str) -> RewriteTemplate:
    template = parse_template(source, origin)
    with project.transaction() as conn:
        write_meta(conn, PROJECT_META_KEY, source)
    return template


def item_json(item: Item) -> str:
    return json.dumps({"question": item.question, "options": [o.text for o in item.options]}, ensure_ascii=False)


def _values(template: RewriteTemplate, item: Item, problem: str = "") -> dict[str, str]:
    values = {
        "language_name": template.language_name(item.language),
        "subject": (item.subject or "general").replace("_", " "),
        "option_count": str(len(item.options)),
        "item_json": item_json(item),
        "problem": problem,
    }
    # the notes are a template too ($$ → $, and they may name the language)
    values["language_notes"] = string.Template(template.notes(item.language)).safe_substitute(
        values | {"language_notes": ""}
    )
    return values


def render_messages(template: RewriteTemplate, item: Item) -> list[dict]:
    values = _values(template, item)
    return [
        {"role": "system", "content": string.Template(template.system).substitute(values)},
        {"role": "user", "content": string.Template(template.user).substitute(values)},
    ]


def render_retry(template: RewriteTemplate, item: Item, problem: str) -> str:
    return string.Template(template.retry).substitute(_values(template, item, problem))
