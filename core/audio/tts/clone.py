"""Voice cloning from a recorded reference speaker with Chatterbox (Resemble AI), as in BiasInEar Section 5.1.
An optional extra (`pip install 'spokenbench-studio[cloning]'`), imported only when chosen. Voices are the
project's speakers with a consented reference recording; the caller passes their reference WAV paths."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

from spokenbench.core.audio.io import encode_wav
from spokenbench.core.audio.tts.base import SynthesisRequest, TTSBackend, UnsupportedRequest, VoiceSpec
from spokenbench.core.optional import import_optional

CHATTERBOX_LANGUAGES = {"en": "en", "zh": "zh", "ko": "ko"}


class CloneBackend(TTSBackend):
    def __init__(self, references: dict[str, tuple[str, Path]] | None = None, device: str = "cpu", **_ignored):
        """`references`: speaker name -> (gender, reference WAV path)."""
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
        self._model = None
        self._lock = threading.Lock()

    def prepare(self) -> None:
        import_optional("chatterbox.mtl_tts", "Voice cloning")

    def _loaded_model(self):
        module = import_optional("chatterbox.mtl_tts", "Voice cloning")
        with self._lock:
            if self._model is None:
                self._model = module.ChatterboxMultilingualTTS.from_pretrained(device=self.device)
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
