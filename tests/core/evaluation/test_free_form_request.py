"""The free form's spoken question has nothing written beside it: the request carries the audio and no empty text
part (providers refuse one), for the OpenAI-compatible body and for the Gemini parts alike."""

from spokenbench.core.evaluation.adapters import AudioInput, GenerationParams, ModelRequest, create_adapter
from spokenbench.core.evaluation.presets import resolve_model

AUDIO = AudioInput(data=b"RIFF....WAVE", sha256="0" * 64, format="wav", seconds=1.0)


def _adapter(spec):
    return create_adapter(resolve_model(spec, base_url="http://127.0.0.1:9"), GenerationParams(), key="test-key")


def test_openai_body_has_no_empty_text_part_beside_audio():
    adapter = _adapter("openai:gpt-audio-mini")
    spoken = adapter.chat_body(ModelRequest(system="Answer freely.", user="", audio=(AUDIO,)))
    assert [part["type"] for part in spoken["messages"][-1]["content"]] == ["input_audio"]
    written = adapter.chat_body(ModelRequest(system=None, user="A. he\nB. she", audio=(AUDIO,)))
    assert [part["type"] for part in written["messages"][-1]["content"]] == ["input_audio", "text"]


def test_gemini_parts_have_no_empty_text_part_beside_audio():
    adapter = _adapter("gemini:gemini-2.5-flash")
    contents, _ = adapter.request_parts(ModelRequest(system="Answer freely.", user="", audio=(AUDIO,)))
    assert len(contents) == 1 and contents[0].inline_data is not None and not contents[0].text
    contents, _ = adapter.request_parts(ModelRequest(system=None, user="A. he", audio=(AUDIO,)))
    assert [bool(part.inline_data) for part in contents] == [True, False] and contents[1].text == "A. he"
