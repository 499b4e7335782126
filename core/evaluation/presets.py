"""Model presets from `resources/models.json`: which API a model speaks, how audio goes into the request,
its input limits, prices and retirement date. A model is data, so a retired one is swapped without code."""

from __future__ import annotations

import datetime as _dt
import functools
import importlib.resources
import json
from dataclasses import dataclass, field

from spokenbench.core.foundation.errors import SpokenBenchError

PROVIDERS = ("gemini", "openai", "nvidia", "mistral", "vllm", "openai-compatible", "simulated", "local")
CONVENTIONS = (
    "gemini",  # google-genai generate_content with Part.from_bytes
    "openai-input-audio",  # {"type": "input_audio", "input_audio": {"data": b64, "format": "wav"}}
    "mistral-input-audio",  # {"type": "input_audio", "input_audio": "<b64>"}
    "nvidia-inline-audio",  # plain-string user message with <audio src="data:audio/wav;base64,..." />
    "nvidia-inline-audio-phi",  # the same, prefixed with Phi-4's <|audio_1|> placeholder
    "audio-url",  # {"type": "audio_url", "audio_url": {"url": "data:audio/wav;base64,..."}} (vLLM)
    "simulated",
    "local-llama",  # local:NAME|PATH.gguf: a llama.cpp server started for the run (core/evaluation/local_llm.py)
    "local-whisper",  # local:tiny.en|MODEL_DIR: faster-whisper in process, the pipeline's transcriber
)


@dataclass(frozen=True)
class Price:
    """USD per 1M tokens, or per audio minute where a provider bills audio by time."""

    input: float = 0.0
    output: float = 0.0
    audio_input: float | None = None  # per 1M audio tokens; None = same as input
    audio_per_minute: float | None = None
    checked: str | None = None

    def cost(self, text_tokens: int, audio_tokens: int, output_tokens: int, audio_seconds: float) -> float:
        audio_rate = self.input if self.audio_input is None else self.audio_input
        cost = (text_tokens * self.input + audio_tokens * audio_rate + output_tokens * self.output) / 1e6
        if self.audio_per_minute:
            cost += audio_seconds / 60.0 * self.audio_per_minute
        return cost


@dataclass(frozen=True)
class ModelPreset:
    provider: str
    model: str
    convention: str
    id: str | None = None  # the preset's name; None for an ad-hoc model
    base_url: str | None = None
    thinking: str = "none"  # 'budget' (Gemini 2.5), 'level' (Gemini 3), 'none'
    max_tokens_param: str = "max_tokens"
    system_role: bool = True
    max_audio_seconds: float | None = None
    max_inline_base64_chars: int | None = None
    languages: tuple[str, ...] | None = None
    price: Price | None = None
    retired: str | None = None
    successor: str | None = None
    notes: str = ""
    extra: dict = field(default_factory=dict)

    @property
    def spec(self) -> str:
        return f"{self.provider}:{self.model}"

    def retired_on(self, today: _dt.date | None = None) -> str | None:
        """The retirement date if it has passed."""
        if not self.retired:
            return None
        today = today or _dt.date.today()
        return self.retired if _dt.date.fromisoformat(self.retired) <= today else None


@functools.cache
def _catalog() -> dict:
    resource = importlib.resources.files("spokenbench.resources") / "models.json"
    try:
        return json.loads(resource.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as error:
        raise SpokenBenchError(f"the model presets file resources/models.json cannot be read ({error})") from None


def all_presets() -> list[ModelPreset]:
    catalog = _catalog()
    return [_preset(entry, catalog["defaults"].get(entry["provider"], {})) for entry in catalog["models"]]


def provider_default_urls() -> list[str]:
    """Each provider's default endpoint in the bundled presets: hosts known without asking (core/cli/resume.py)."""
    return [defaults["base_url"] for defaults in _catalog()["defaults"].values() if defaults.get("base_url")]


def transcription_presets() -> list[dict]:
    return list(_catalog().get("transcription", []))


def parse_model_spec(spec: str) -> tuple[str, str]:
    provider, sep, name = spec.partition(":")
    provider, name = provider.strip().lower(), name.strip()
    if not sep or not provider or not name:
        raise SpokenBenchError(f"--model '{spec}' is not PROVIDER:NAME (for example gemini:gemini-2.5-flash)")
    if provider not in PROVIDERS:
        raise SpokenBenchError(f"--model '{spec}': unknown provider '{provider}'; known: {', '.join(PROVIDERS)}")
    return provider, name


def resolve_model(
    spec: str, base_url: str | None = None, convention: str | None = None, today: _dt.date | None = None
) -> ModelPreset:
    """The preset for PROVIDER:NAME (NAME may be a preset id or the API model name); an unknown model of a
    known provider gets that provider's defaults. A retired preset is refused unless the user points
    --base-url at their own server (a self-hosted copy does not retire)."""
    provider, name = parse_model_spec(spec)
    if provider == "local":
        return local_preset(name)
    catalog = _catalog()
    matches = [p for p in all_presets() if p.provider == provider and name in (p.id, p.model)]
    if matches:
        preset = matches[0]
    else:
        defaults = catalog["defaults"].get(provider, {})
        preset = _preset({"provider": provider, "model": name}, defaults)
    if base_url:
        preset = _replace(preset, base_url=base_url)
    if convention:
        if convention not in CONVENTIONS:
            raise SpokenBenchError(f"unknown audio convention '{convention}'; known: {', '.join(CONVENTIONS)}")
        preset = _replace(preset, convention=convention)
    if provider in ("vllm", "openai-compatible") and not preset.base_url:
        raise SpokenBenchError(
            f"--model {spec}: an OpenAI-compatible server needs --base-url (e.g. http://HOST:8000/v1)"
        )
    retired = preset.retired_on(today)
    if retired and not base_url:
        hint = (
            f"; use {preset.successor} instead"
            if preset.successor
            else "; choose a current model (see resources/models.json)"
        )
        raise SpokenBenchError(f"{preset.spec} was retired on {retired}{hint}")
    return preset


def local_preset(name: str) -> ModelPreset:
    """`local:NAME`: a Whisper model (local:tiny.en, a faster-whisper folder) transcribes; anything else is a
    GGUF language model served by llama.cpp. Checked here, so a missing extra or file fails before planning
    (exit 2, naming the install commands). Free: the price is zero, not unknown."""
    from spokenbench.core.evaluation import local_llm

    if local_llm.is_whisper_name(name):
        from spokenbench.core.asr.backends import resolve_local_model
        from spokenbench.core.foundation.optional import import_optional

        import_optional("faster_whisper", f"local Whisper (local:{name})")
        resolve_local_model(name)
        convention, notes = local_llm.WHISPER_CONVENTION, "faster-whisper on this machine"
    else:
        local_llm.resolve_gguf(name)
        local_llm.check_llama_installed()
        convention, notes = local_llm.LLM_CONVENTION, "llama.cpp on this machine"
    return ModelPreset(provider="local", model=name, convention=convention, price=Price(), notes=notes)


def _preset(entry: dict, defaults: dict) -> ModelPreset:
    merged = {**defaults, **{k: v for k, v in entry.items() if v is not None or k not in defaults}}
    price = merged.get("price")
    known = {f for f in ModelPreset.__dataclass_fields__}
    return ModelPreset(
        provider=merged["provider"],
        model=merged["model"],
        convention=merged.get("convention") or "openai-input-audio",
        id=entry.get("id"),
        base_url=merged.get("base_url"),
        thinking=merged.get("thinking") or "none",
        max_tokens_param=merged.get("max_tokens_param") or "max_tokens",
        system_role=merged.get("system_role", True),
        max_audio_seconds=merged.get("max_audio_seconds"),
        max_inline_base64_chars=merged.get("max_inline_base64_chars"),
        languages=tuple(merged["languages"]) if merged.get("languages") else None,
        price=Price(
            input=price.get("input", 0.0),
            output=price.get("output", 0.0),
            audio_input=price.get("audio_input"),
            audio_per_minute=price.get("audio_per_minute"),
            checked=price.get("price_checked"),
        )
        if price
        else None,
        retired=merged.get("retired"),
        successor=merged.get("successor"),
        notes=merged.get("notes", ""),
        extra={k: v for k, v in merged.items() if k not in known and k not in ("price",)},
    )


def _replace(preset: ModelPreset, **changes) -> ModelPreset:
    import dataclasses

    return dataclasses.replace(preset, **changes)
