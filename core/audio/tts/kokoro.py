"""Kokoro TTS (Kokoro-82M, StyleTTS 2), the gender paper's synthesizer (its Section 2.2 and Appendix B.1), run
offline through the `kokoro-onnx` package from a model folder the user provides — nothing is downloaded.

An optional extra (`pip install 'spokenbench-studio[kokoro]'`), imported only when chosen. The folder holds the
ONNX model (kokoro-v1.0.onnx, or its fp16 / int8 variant) and the voice file (voices-v1.0.bin) of the
kokoro-onnx release; `spokenbench synthesize DIR --tts kokoro --kokoro-model FOLDER` saves the folder with the
project, so later runs need no flag.

Voices are Kokoro's own, named as Kokoro names them: the first letter is the accent (a American, b British),
the second the speaker gender. The paper's eight are the defaults. A gender-neutralized voice is written
`MALE+FEMALE` (or `FEMALE+MALE`): the two speakers' style embeddings averaged, the paper's Section 5 method
(embedding-based gender-ambiguous synthesis after Székely et al., 2023). It speaks with the first voice's
accent, and its clips keep the first voice's gender as their ground truth (clips.neutralization =
'embedding-average')."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import numpy as np

from spokenbench.core.audio.io import encode_wav
from spokenbench.core.audio.neutralize import EMBEDDING_METHOD
from spokenbench.core.audio.tts.base import SynthesisRequest, TTSBackend, UnsupportedRequest, VoiceSpec
from spokenbench.core.foundation.errors import MissingDependencyError, SpokenBenchError

# The paper's voices (Appendix B.1): four male, four female.
PAPER_MALE_VOICES = ("am_puck", "bm_george", "bm_lewis", "am_adam")
PAPER_FEMALE_VOICES = ("bf_isabella", "af_sarah", "af_nova", "bf_alice")
PAPER_VOICES = {**dict.fromkeys(PAPER_MALE_VOICES, "male"), **dict.fromkeys(PAPER_FEMALE_VOICES, "female")}
# Neutralized voices, one per paper voice so both ground truths have four (as in the paper's Table 7): each
# male voice averaged with the female voice in the same place, each female voice with the next male voice
# (pairs never repeat, so no two neutralized voices are the same embedding).
PAPER_NEUTRALIZED_VOICES = tuple(f"{m}+{f}" for m, f in zip(PAPER_MALE_VOICES, PAPER_FEMALE_VOICES)) + tuple(
    f"{f}+{m}" for f, m in zip(PAPER_FEMALE_VOICES, PAPER_MALE_VOICES[1:] + PAPER_MALE_VOICES[:1])
)
ACCENT_OF_PREFIX = {"a": "american", "b": "british"}
LANGUAGE_CODE = {"american": "en-us", "british": "en-gb"}  # kokoro-onnx's phonemizer language per accent
GENDER_OF_LETTER = {"m": "male", "f": "female"}
MODEL_NAMES = ("kokoro-v1.0.onnx", "kokoro-v1.0.fp16.onnx", "kokoro-v1.0.int8.onnx")
VOICES_NAMES = ("voices-v1.0.bin",)
INSTALL_HINT = "pip install 'spokenbench-studio[kokoro]' (the kokoro-onnx package)"
FOLDER_HINT = (
    "a folder holding the kokoro-onnx release's model (kokoro-v1.0.onnx, or its fp16 / int8 variant) and voice "
    "file (voices-v1.0.bin); pass it with --kokoro-model FOLDER (saved with the project)"
)


def voice_gender(name: str) -> str:
    """The gender a Kokoro voice presents, from its name (am_adam: American male)."""
    if len(name) < 3 or name[2] != "_" or name[1] not in GENDER_OF_LETTER or name[0] not in ACCENT_OF_PREFIX:
        raise UnsupportedRequest(
            f"kokoro has no English voice '{name}'; voices look like am_adam or bf_alice (accent a/b, gender m/f), "
            f"the paper's are {', '.join(PAPER_VOICES)}"
        )
    return GENDER_OF_LETTER[name[1]]


def voice_accent(name: str) -> str:
    return ACCENT_OF_PREFIX[name.split("+")[0][0]]


def kokoro_voice(name: str) -> VoiceSpec:
    """A voice by name: a plain Kokoro voice, or `A+B` (a male and a female voice averaged)."""
    parts = name.split("+")
    if len(parts) == 1:
        return VoiceSpec(name, voice_gender(name))
    if len(parts) != 2:
        raise UnsupportedRequest(f"kokoro voice '{name}': a neutralized voice averages exactly two voices, A+B")
    genders = [voice_gender(part) for part in parts]
    if genders[0] == genders[1]:
        raise UnsupportedRequest(
            f"kokoro voice '{name}': a neutralized voice averages a male and a female voice (both are {genders[0]})"
        )
    return VoiceSpec(name, genders[0], EMBEDDING_METHOD)


def find_model_files(folder: str | Path | None) -> tuple[Path, Path]:
    """(model, voices) in the user's folder, or an error naming what is missing and how to provide it."""
    if folder is None:
        raise MissingDependencyError(f"Kokoro TTS needs its model folder: {FOLDER_HINT}")
    folder = Path(folder).expanduser()
    if not folder.is_dir():
        raise MissingDependencyError(f"the Kokoro model folder {folder} does not exist; it should be {FOLDER_HINT}")
    model = next((folder / n for n in MODEL_NAMES if (folder / n).is_file()), None) or _only(folder, "*.onnx")
    voices = next((folder / n for n in VOICES_NAMES if (folder / n).is_file()), None) or _only(folder, "voices*.bin")
    wanted = (("the model kokoro-v1.0.onnx", model), ("the voices file voices-v1.0.bin", voices))
    missing = [what for what, path in wanted if not path]
    if missing:
        raise MissingDependencyError(f"the Kokoro model folder {folder} lacks {' and '.join(missing)}; {FOLDER_HINT}")
    return model, voices


def _only(folder: Path, pattern: str) -> Path | None:
    found = sorted(folder.glob(pattern))
    return found[0] if len(found) == 1 else None


class KokoroBackend(TTSBackend):
    def __init__(self, model_dir: str | Path | None = None, engine=None, **_ignored):
        """`engine`: an object with kokoro-onnx's `create(text, voice, speed, lang) -> (samples, rate)` and
        `get_voice_style(name)`, for tests; by default the folder's model is loaded on first use."""
        super().__init__(
            name="kokoro",
            model="kokoro-82m-v1.0",
            output_rate=24_000,
            accents={"en": ("american", "british")},
            voices=tuple(kokoro_voice(n) for n in (*PAPER_VOICES, *PAPER_NEUTRALIZED_VOICES)),
            default_voice_names=tuple(PAPER_VOICES),
            max_concurrency=1,  # onnxruntime uses every core for one utterance already
            notes={"en:indian": "Kokoro has no Indian-English voice"},
        )
        self.model_dir = Path(model_dir) if model_dir else None
        self._engine = engine
        self._lock = threading.Lock()

    def voice(self, name: str) -> VoiceSpec:
        return kokoro_voice(name)

    def voice_speaks(self, voice: VoiceSpec, language: str, accent: str | None) -> bool:
        return voice_accent(voice.name) == accent

    def prepare(self) -> None:
        """Fail fast: the package, the folder and its files, and the voices the plan needs."""
        self._loaded_engine()

    def _loaded_engine(self):
        with self._lock:
            if self._engine is None:
                model, voices = find_model_files(self.model_dir)
                try:
                    from kokoro_onnx import Kokoro
                except ImportError as error:
                    raise MissingDependencyError(f"Kokoro TTS needs kokoro-onnx ({error}); {INSTALL_HINT}") from None
                try:
                    self._engine = Kokoro(str(model), str(voices))
                except Exception as error:  # a damaged or foreign file: onnxruntime and numpy raise many kinds
                    raise SpokenBenchError(f"cannot load the Kokoro model from {model.parent}: {error}") from None
            return self._engine

    def style(self, engine, voice: VoiceSpec) -> np.ndarray | str:
        """The voice's style embedding: Kokoro's own, or the average of two (the paper's neutralization)."""
        names = voice.name.split("+")
        try:
            styles = [np.asarray(engine.get_voice_style(n), dtype=np.float32) for n in names]
        except KeyError:
            raise UnsupportedRequest(f"the Kokoro voice file has no voice {' or '.join(names)}") from None
        return styles[0] if len(styles) == 1 else (styles[0] + styles[1]) / 2

    def _generate(self, request: SynthesisRequest) -> bytes:
        if not self.voice_speaks(request.voice, request.language, request.accent):
            raise UnsupportedRequest(
                f"kokoro voice {request.voice.name} speaks {voice_accent(request.voice.name)} English, "
                f"not {request.accent}"
            )
        engine = self._loaded_engine()
        style = self.style(engine, request.voice)
        with self._lock:
            samples, rate = engine.create(request.text, voice=style, speed=1.0, lang=LANGUAGE_CODE[request.accent])
        return encode_wav(np.asarray(samples, dtype=np.float32), int(rate))

    async def synthesize(self, request: SynthesisRequest) -> bytes:
        self.check(request)
        return await asyncio.to_thread(self._generate, request)
