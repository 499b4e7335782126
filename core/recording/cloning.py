"""A cloned voice from a speaker's best passing take (BiasInEar Section 5.1: a few seconds of a real speaker given
to Chatterbox, `--tts clone`). The take's stored file is the reference the clone backend
(core/audio/tts/clone.py) reads; a test sentence is synthesized with the new voice so it can be listened to
before any benchmark audio is made with it. The voice is recorded in `cloned_voices` with the take it came from;
withdrawing the speaker's consent deletes it, its test sentence and every clip made with it.

Loading the cloning model and synthesizing take long: callers run `create_cloned_voice` off the UI thread (the
app as a JobOp). `backend_factory` replaces the real backend (tests, a stub offline voice)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from spokenbench.core.audio.tts import get_backend
from spokenbench.core.audio.tts.base import SynthesisRequest, TTSBackend, VoiceSpec
from spokenbench.core.foundation.errors import SpokenBenchError
from spokenbench.core.foundation.progress import Progress, no_progress
from spokenbench.core.recording import store
from spokenbench.core.recording.speakers import get_speaker, require_consent
from spokenbench.core.recording.takes import Take, best_take, speaker_takes
from spokenbench.core.store import Project

TEST_SENTENCES = {
    "en": "This is a test of my cloned voice. Which of the four answers is correct?",
    "zh": "这是对我的克隆声音的测试。四个选项中哪一个是正确的？",
    "ko": "이것은 제 복제된 목소리의 테스트입니다. 네 가지 답 중 어느 것이 맞습니까?",
}

# name -> (voice gender, reference audio path) -> a TTS backend that speaks with those references
BackendFactory = Callable[[dict[str, tuple[str | None, Path]]], TTSBackend]


def clone_backend(references: dict[str, tuple[str | None, Path]]) -> TTSBackend:
    return get_backend("clone", references=references)


@dataclass(frozen=True)
class ClonedVoice:
    id: int
    speaker: str
    take_id: int
    backend: str
    model: str | None
    test_text: str
    test_audio: bytes  # the test sentence as WAV, to listen to
    test_sha256: str


def test_sentence(language: str | None) -> str:
    base = (language or "en").split("-")[0]
    return TEST_SENTENCES.get(base, TEST_SENTENCES["en"])


def create_cloned_voice(
    project: Project,
    speaker_name: str,
    text: str | None = None,
    backend_factory: BackendFactory | None = None,
    progress: Progress | None = None,
    take: Take | None = None,
) -> ClonedVoice:
    """Clone the speaker's voice from their best passing take (or `take`) and speak `text` (a test sentence in
    their language by default) with it; store the voice and its test sentence."""
    progress = progress or no_progress()
    speaker = get_speaker(project.conn, speaker_name)
    require_consent(project.conn, speaker.id)
    reference = take or best_take(speaker_takes(project.conn, speaker.id))
    if reference is None:
        raise SpokenBenchError(
            f"{speaker.name} has no take that passed every quality check: record one before cloning the voice"
        )
    path = project.audio.path_for(reference.sha256, reference.audio_format)
    if not path.is_file():
        raise SpokenBenchError(f"the audio of take {reference.id} is missing from the project ({path})")
    language = (speaker.language or "en").split("-")[0]
    sentence = (text or test_sentence(language)).strip()
    if not sentence:
        raise SpokenBenchError("the test sentence is empty")
    progress.report(0, 2, f"loading the cloning backend for {speaker.name}")
    backend = (backend_factory or clone_backend)({speaker.name: (speaker.voice_gender, path)})
    backend.prepare()
    progress.check_cancelled()
    progress.report(1, 2, "synthesizing the test sentence")
    request = SynthesisRequest(sentence, language, None, VoiceSpec(speaker.name, speaker.voice_gender))
    backend.check(request)
    audio = asyncio.run(backend.synthesize(request))
    progress.check_cancelled()
    sha256 = project.audio.put_bytes(audio, "wav")
    with project.transaction() as conn:
        require_consent(conn, speaker.id)  # withdrawn meanwhile: nothing is stored
        if store.take_by_id(conn, reference.id) is None:
            raise SpokenBenchError(f"take {reference.id} was discarded while the voice was being cloned")
        voice_id = store.insert_cloned_voice(
            conn, speaker.id, reference.id, backend.name, backend.model, sentence, sha256, "wav"
        )
    progress.report(2, 2, "done")
    return ClonedVoice(voice_id, speaker.name, reference.id, backend.name, backend.model, sentence, audio, sha256)


def cloned_voices(conn, speaker_name: str) -> list[store.ClonedVoiceRow]:
    speaker = get_speaker(conn, speaker_name)
    return store.cloned_voices_of(conn, speaker.id)
