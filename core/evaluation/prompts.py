"""Prompt templates (resources/prompts/*.toml, the one place their wording lives) rendered for one item under
one condition and mode. A template has a system text and a user text per mode, and an answer instruction
for lettered or unlabelled options; `inherit` lets cot/neutral/open change only what differs."""

from __future__ import annotations

import functools
import importlib.resources
import tomllib
from dataclasses import dataclass

from spokenbench.core.errors import SpokenBenchError
from spokenbench.core.items import LETTERS

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
    if mode not in _MODE_KEY:
        raise SpokenBenchError(f"unknown mode '{mode}'; modes: {', '.join(MODES)}")
    if system_variant not in SYSTEM_PROMPT_VARIANTS:
        raise SpokenBenchError(
            f"unknown system-prompt variant '{system_variant}'; one of {', '.join(SYSTEM_PROMPT_VARIANTS)}"
        )
    template = load_template(template_name)
    count = len(option_order)
    presented = LETTERS[:count]
    shown = {letter: option_texts[LETTERS.index(original)] for letter, original in zip(presented, option_order)}
    neutral_letter = LETTERS[count] if template.neutral_option else None
    neutral_text = None
    if neutral_letter:
        neutral_text = template.neutral_text.get(
            language.split("-")[0].lower(), template.neutral_text.get("en", "Cannot be determined")
        )
    listing_letters = [letter for letter in label_sequence]
    line = template.option_line

    def listed(letter: str, text: str) -> str:
        return line.format(letter=letter, text=text) if spoken_labels else f"- {text}"

    lines = [listed(letter, shown[letter]) for letter in listing_letters]
    if neutral_letter:
        lines.append(listed(neutral_letter, neutral_text))
    letters = list(presented) + ([neutral_letter] if neutral_letter else [])
    values = {
        "letters": ", ".join(letters),
        "letters_compact": "".join(letters),
        "question": question,
        "options": "\n".join(lines),
        "transcript": transcript or "",
        "neutral_letter": neutral_letter or "",
        "neutral_text": neutral_text or "",
    }
    answer_key = "letter" if spoken_labels else "text"
    values["answer_instruction"] = _fill(template.answer.get(answer_key, ""), values)
    mode_key = _MODE_KEY[mode]
    system_key = (
        f"{mode_key}_unlabelled" if not spoken_labels and f"{mode_key}_unlabelled" in template.system else mode_key
    )
    system = _fill(template.system.get(system_key, ""), values).strip() or None
    user = _fill(template.user.get(mode_key, "{answer_instruction}"), values).strip()
    if system_variant == "inline" and system:
        user, system = f"{system}\n\n{user}", None
    elif system_variant == "none":
        system = None
    return RenderedPrompt(system, user, presented, shown, neutral_letter, neutral_text)


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
