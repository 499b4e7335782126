"""Voice cloning from a recorded reference speaker with Chatterbox (Resemble AI), as in BiasInEar Section 5.1.
An optional extra (`pip install 'spokenbench-studio[cloning]'`), imported only when chosen. Voices are the
project's speakers with a consented reference recording; the caller passes their reference WAV paths.

The model: by default chatterbox's `from_pretrained` downloads it from the Hugging Face Hub (ResembleAI/chatterbox)
on first use and keeps it in the Hub cache. To run without the Hub, set SPOKENBENCH_CHATTERBOX_MODEL to a folder
holding the model files (MODEL_FILES; docs/voices.md says how to get them): it is loaded with `from_local`, with the
Hub switched off (HF_HUB_OFFLINE) so nothing is fetched."""

from __future__ import annotations

import asyncio
import os
import threading
from pathlib import Path

from spokenbench.core.audio.io import encode_wav
from spokenbench.core.audio.tts.base import SynthesisRequest, TTSBackend, UnsupportedRequest, VoiceSpec
from spokenbench.core.foundation.errors import MissingDependencyError
from spokenbench.core.foundation.optional import import_optional

CHATTERBOX_LANGUAGES = {"en": "en", "zh": "zh", "ko": "ko"}
MODEL_FOLDER_VARIABLE = "SPOKENBENCH_CHATTERBOX_MODEL"
# What chatterbox's multilingual from_local reads (conds.pt, the built-in voice, is optional and unused here).
MODEL_FILES = ("ve.pt", "t3_mtl23ls_v2.safetensors", "s3gen.pt", "grapheme_mtl_merged_expanded_v1.json")


def local_model_folder(folder: str | Path | None = None) -> Path | None:
    """The local Chatterbox model folder (the argument, else SPOKENBENCH_CHATTERBOX_MODEL), checked to hold
    MODEL_FILES; None to use the Hub."""
    folder = folder or os.environ.get(MODEL_FOLDER_VARIABLE) or None
    if folder is None:
        return None
    folder = Path(folder).expanduser()
    missing = [name for name in MODEL_FILES if not (folder / name).is_file()]
    if missing:
        raise MissingDependencyError(
            f"the Chatterbox model folder {folder} ({MODEL_FOLDER_VARIABLE}) lacks {', '.join(missing)}; "
            "docs/voices.md, 'Cloning extra', says how to get the files"
        )
    return folder


class CloneBackend(TTSBackend):
    def __init__(
        self,
        references: dict[str, tuple[str, Path]] | None = None,
        device: str = "cpu",
        model_dir: str | Path | None = None,
        **_ignored,
    ):
        """`references`: speaker name -> (gender, reference WAV path); `model_dir`: a local model folder (default
        SPOKENBENCH_CHATTERBOX_MODEL, else the Hub)."""
        references = references or {}
        super().__init__(
            name="clone",
            model="chatterbox-multilingual",
            output_rate=24_000,
            accents={language: (None,) for language in CHATTERBOX_LANGUAGES},
            voices=tuple(VoiceSpec(name, gender) for name, (gender, _) in references.items()),
        )
        self.references = {name: Path(path) for name, (_, path) in references.items()}
        self.device = device
        self.model_dir = model_dir
        self._model = None
        self._lock = threading.Lock()

    def prepare(self) -> None:
        self._chatterbox()

    def _chatterbox(self):
        """chatterbox.mtl_tts, imported after the local folder is checked (a wrong one fails before the slow
        import) and, with a local folder, after the Hub is switched off (huggingface_hub reads HF_HUB_OFFLINE when
        it is imported)."""
        if local_model_folder(self.model_dir) is not None:
            os.environ["HF_HUB_OFFLINE"] = "1"
        return import_optional("chatterbox.mtl_tts", "Voice cloning")

    def _loaded_model(self):
        module = self._chatterbox()
        with self._lock:
            if self._model is None:
                folder = local_model_folder(self.model_dir)
                if folder is None:
                    self._model = module.ChatterboxMultilingualTTS.from_pretrained(device=self.device)
                else:
                    self._model = module.ChatterboxMultilingualTTS.from_local(folder, device=self.device)
        return self._model

    def _generate(self, request: SynthesisRequest) -> bytes:
        reference = self.references.get(request.voice.name)
        if reference is None or not reference.is_file():
            raise UnsupportedRequest(f"no reference recording for speaker '{request.voice.name}'")
        model = self._loaded_model()
        with self._lock:
            wav = model.generate(
                request.text, language_id=CHATTERBOX_LANGUAGES[request.language], audio_prompt_path=str(reference)
            )
        return encode_wav(wav.squeeze().cpu().numpy(), model.sr)

    async def synthesize(self, request: SynthesisRequest) -> bytes:
        self.check(request)
        return await asyncio.to_thread(self._generate, request)
