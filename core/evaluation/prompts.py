"""Prompt templates (resources/prompts/*.toml, the one place their wording lives) rendered for one item under
one condition and mode. A template has a system text and a user text per mode, and an answer instruction
for lettered or unlabelled options; `inherit` lets cot/neutral/open change only what differs."""

from __future__ import annotations

import functools
import importlib.resources
import re
import string
import tomllib
from dataclasses import dataclass

from spokenbench.core.domain.items import LETTERS
from spokenbench.core.foundation.errors import SpokenBenchError

PROMPTS = (
    "standard",
    "cot",
    "neutral",
    "open",
    "gender-paper",
    "gender-paper-neutral",
    "gender-paper-open",
    "simple-evals",
)
# The gender paper's own prompts, verbatim (Appendix C and E): the binary, neutral-option and free-form settings
GENDER_PAPER_PROMPTS = ("gender-paper", "gender-paper-neutral", "gender-paper-open")
ANSWER_SETTINGS = ("binary_option", "neutral_option", "free_form")
DEFAULT_MAX_OUTPUT_TOKENS = 4096
MODES = ("audio", "pipeline", "text", "audio+text-options")
SYSTEM_PROMPT_VARIANTS = ("separate", "inline", "none")
_MODE_KEY = {"audio": "audio", "text": "text", "audio+text-options": "spoken_question", "pipeline": "pipeline"}


@dataclass(frozen=True)
class PromptTemplate:
    name: str
    description: str
    system: dict[str, str]
    user: dict[str, str]
    answer: dict[str, str]
    neutral_option: bool
    neutral_text: dict[str, str]
    free_form: bool = False  # the answer is free text; no option is asked for (the gender paper's free form)
    option_line: str = "{letter}. {text}"  # how a lettered option is listed in the text
    max_output_tokens: int | None = None  # the study's own output limit (simple-evals: 1024), unless a run sets one


@dataclass(frozen=True)
class RenderedPrompt:
    """What is sent besides the audio: system text (None when folded into the user text or dropped)."""

    system: str | None
    user: str
    presented_letters: str  # letters the model may answer with, real options only, in letter order
    option_texts: dict[str, str]  # presented letter → option text as shown/spoken
    neutral_letter: str | None = None
    neutral_text: str | None = None


@functools.cache
def load_template(name: str) -> PromptTemplate:
    resource = importlib.resources.files("spokenbench.resources") / "prompts" / f"{name}.toml"
    try:
        data = tomllib.loads(resource.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise SpokenBenchError(f"no prompt template '{name}'; templates: {', '.join(PROMPTS)}") from None
    except tomllib.TOMLDecodeError as error:
        raise SpokenBenchError(f"prompt template resources/prompts/{name}.toml is malformed: {error}") from None
    base = load_template(data["inherit"]) if data.get("inherit") else None

    def merged(section: str) -> dict[str, str]:
        return {**(getattr(base, section) if base else {}), **data.get(section, {})}

    return PromptTemplate(
        name=name,
        description=data.get("description", ""),
        system=merged("system"),
        user=merged("user"),
        answer=merged("answer"),
        neutral_option=bool(data.get("neutral_option", base.neutral_option if base else False)),
        neutral_text=merged("neutral_text"),
        free_form=bool(data.get("free_form", base.free_form if base else False)),
        option_line=data.get("option_line", base.option_line if base else "{letter}. {text}"),
        max_output_tokens=data.get("max_output_tokens", base.max_output_tokens if base else None),
    )


def prompt_output_tokens(name: str) -> int:
    """The output limit a run uses unless it sets one: the prompt set's own (simple-evals: 1024), else 4096."""
    return load_template(name).max_output_tokens or DEFAULT_MAX_OUTPUT_TOKENS


def answer_setting(name: str, neutral_offered: bool | None = None) -> str:
    """The gender study's answer setting of a prompt: 'free_form', 'neutral_option' or 'binary_option'.
    `neutral_offered` (from the texts a run stored) overrides the template's own flag; a prompt name that is
    no template (any more) is taken as binary unless the stored texts say otherwise."""
    try:
        template = load_template(name)
    except (SpokenBenchError, KeyError):
        template = None
    if template is not None and template.free_form:
        return "free_form"
    offered = neutral_offered if neutral_offered is not None else bool(template and template.neutral_option)
    return "neutral_option" if offered else "binary_option"


def template_fingerprint(name: str) -> dict:
    """The template's texts, stored with a run so results say exactly what was asked."""
    template = load_template(name)
    return {
        "system": template.system,
        "user": template.user,
        "answer": template.answer,
        "neutral_text": template.neutral_text if template.neutral_option else {},
    }


def render_prompt(
    template_name: str,
    mode: str,
    question: str,
    option_texts: list[str],
    option_order: str,
    label_sequence: str,
    spoken_labels: bool,
    language: str,
    system_variant: str = "separate",
    transcript: str | None = None,
) -> RenderedPrompt:
    """Render the prompt for one presentation. `option_texts` are in the original order (index 0 = original
    option A); `option_order[i]` is the original letter presented under letter i; options are listed in the
    order `label_sequence` speaks them."""
    shape = _presentation(template_name, mode, option_order, label_sequence, spoken_labels, language, system_variant)
    shown = {letter: option_texts[source] for letter, source in shape.sources}
    if shape.texts is not None:  # no question text goes into system or user: made once for the presentation
        return RenderedPrompt(*shape.texts, shape.presented, shown, shape.neutral_letter, shape.neutral_text)
    line = shape.option_line
    if spoken_labels:
        lines = [line.format(letter=letter, text=shown[letter]) for letter in label_sequence]
    else:
        lines = [f"- {shown[letter]}" for letter in label_sequence]
    if shape.neutral_line is not None:
        lines.append(shape.neutral_line)
    values = {**shape.values, "question": question, "options": "\n".join(lines), "transcript": transcript or ""}
    if shape.answer_instruction is None:
        values["answer_instruction"] = _fill(shape.answer_template, values)
    else:
        values["answer_instruction"] = shape.answer_instruction
    system = shape.system if shape.system_fixed else (_fill(shape.system_template, values).strip() or None)
    system, user = _placed(system, _fill(shape.user_template, values).strip(), system_variant)
    return RenderedPrompt(system, user, shape.presented, shown, shape.neutral_letter, shape.neutral_text)


def render_texts(
    template_name: str,
    mode: str,
    question: str,
    option_texts: list[str] | tuple[str, ...],
    option_order: str,
    label_sequence: str,
    spoken_labels: bool,
    language: str,
    system_variant: str = "separate",
    transcript: str | None = None,
) -> tuple[str | None, str]:
    """render_prompt's (system, user) alone, for keying and costing a request: under a presentation whose texts
    hold no question (audio mode: the question is heard) they are made once per presentation, not per request."""
    texts = presentation_texts(
        template_name, mode, option_order, label_sequence, spoken_labels, language, system_variant
    )
    if texts is not None:
        return texts
    rendered = render_prompt(
        template_name,
        mode,
        question,
        list(option_texts),
        option_order,
        label_sequence,
        spoken_labels,
        language,
        system_variant,
        transcript,
    )
    return rendered.system, rendered.user


def presentation_texts(
    template_name: str,
    mode: str,
    option_order: str,
    label_sequence: str,
    spoken_labels: bool,
    language: str,
    system_variant: str = "separate",
) -> tuple[str | None, str] | None:
    """The (system, user) every question under this presentation is sent with, or None when the question or
    its options go into them (render_texts then renders each): a plan keys its requests per presentation."""
    return _presentation(
        template_name, mode, option_order, label_sequence, spoken_labels, language, system_variant
    ).texts


# What a presentation's texts may use that is the same for every question under it
_PRESENTATION_VALUES = frozenset({"letters", "letters_compact", "neutral_letter", "neutral_text"})


@dataclass(frozen=True)
class _Presentation:
    """Everything render_prompt needs that depends on the template and the presentation, not on the question:
    a plan renders 100,000s of prompts under a handful of presentations. A text whose placeholders are all
    per-presentation values is filled here once (`answer_instruction`, `system`), else per question."""

    sources: tuple[tuple[str, int], ...]  # (presented letter, index of the original option)
    presented: str
    option_line: str
    neutral_letter: str | None
    neutral_text: str | None
    neutral_line: str | None
    values: dict[str, str]
    answer_template: str
    answer_instruction: str | None
    system_template: str
    system_fixed: bool
    system: str | None
    user_template: str
    texts: tuple[str | None, str] | None  # (system, user) as sent, when no question text goes into either


def _placeholders(text: str) -> set[str] | None:
    """The names `text` fills, or None when any is not a plain name (or the text is malformed)."""
    try:
        fields = [field for _, field, _, _ in string.Formatter().parse(text) if field is not None]
    except ValueError:
        return None
    names = {re.split(r"[.\[]", field, maxsplit=1)[0] for field in fields}
    return None if any(not name or name.isdigit() for name in names) else names


@functools.lru_cache(maxsize=4096)
def _presentation(
    template_name: str,
    mode: str,
    option_order: str,
    label_sequence: str,
    spoken_labels: bool,
    language: str,
    system_variant: str,
) -> _Presentation:
    if mode not in _MODE_KEY:
        raise SpokenBenchError(f"unknown mode '{mode}'; modes: {', '.join(MODES)}")
    if system_variant not in SYSTEM_PROMPT_VARIANTS:
        raise SpokenBenchError(
            f"unknown system-prompt variant '{system_variant}'; one of {', '.join(SYSTEM_PROMPT_VARIANTS)}"
        )
    template = load_template(template_name)
    count = len(option_order)
    presented = LETTERS[:count]
    sources = tuple((letter, LETTERS.index(original)) for letter, original in zip(presented, option_order))
    neutral_letter = LETTERS[count] if template.neutral_option else None
    neutral_text = None
    if neutral_letter:
        neutral_text = template.neutral_text.get(
            language.split("-")[0].lower(), template.neutral_text.get("en", "Cannot be determined")
        )
    neutral_line = None
    if neutral_letter:
        neutral_line = (
            template.option_line.format(letter=neutral_letter, text=neutral_text)
            if spoken_labels
            else f"- {neutral_text}"
        )
    letters = list(presented) + ([neutral_letter] if neutral_letter else [])
    values = {
        "letters": ", ".join(letters),
        "letters_compact": "".join(letters),
        "neutral_letter": neutral_letter or "",
        "neutral_text": neutral_text or "",
    }
    answer_template = template.answer.get("letter" if spoken_labels else "text", "")
    answer_names = _placeholders(answer_template)
    answer_instruction = None
    if answer_names is not None and answer_names <= _PRESENTATION_VALUES:
        answer_instruction = _fill(answer_template, values)
    mode_key = _MODE_KEY[mode]
    system_key = (
        f"{mode_key}_unlabelled" if not spoken_labels and f"{mode_key}_unlabelled" in template.system else mode_key
    )
    system_template = template.system.get(system_key, "")
    system_names = _placeholders(system_template)
    system_fixed = (
        answer_instruction is not None
        and system_names is not None
        and system_names <= _PRESENTATION_VALUES | {"answer_instruction"}
    )
    system = None
    if system_fixed:
        system = _fill(system_template, {**values, "answer_instruction": answer_instruction}).strip() or None
    user_template = template.user.get(mode_key, "{answer_instruction}")
    user_names = _placeholders(user_template)
    texts = None
    if system_fixed and user_names is not None and user_names <= _PRESENTATION_VALUES | {"answer_instruction"}:
        user = _fill(user_template, {**values, "answer_instruction": answer_instruction}).strip()
        texts = _placed(system, user, system_variant)
    return _Presentation(
        sources,
        presented,
        template.option_line,
        neutral_letter,
        neutral_text,
        neutral_line,
        values,
        answer_template,
        answer_instruction,
        system_template,
        system_fixed,
        system,
        user_template,
        texts,
    )


def _placed(system: str | None, user: str, system_variant: str) -> tuple[str | None, str]:
    """(system, user) as the system-prompt variant sends them: separate, inline in the user text, or none."""
    if system_variant == "inline" and system:
        return None, f"{system}\n\n{user}"
    if system_variant == "none":
        return None, user
    return system, user


def render_transcription_prompt(system_variant: str = "separate") -> tuple[str | None, str]:
    template = load_template("transcribe")
    system, user = template.system.get("audio"), template.user["audio"]
    if system_variant == "inline" and system:
        return None, f"{system}\n\n{user}"
    if system_variant == "none":
        return None, user
    return system, user


def _fill(text: str, values: dict[str, str]) -> str:
    try:
        return text.format_map(values)
    except (KeyError, IndexError, ValueError) as error:
        raise SpokenBenchError(f"prompt template placeholder problem: {error!r} in {text[:60]!r}") from None
