"""Voice cloning from a local Chatterbox model folder (SPOKENBENCH_CHATTERBOX_MODEL) instead of the Hugging Face
Hub: a folder lacking a model file is refused by name before chatterbox is imported; a complete one is loaded
with chatterbox's from_local with the Hub switched off. chatterbox itself cannot be installed here (docs/voices.md,
'Cloning extra'), so a stand-in module with its two constructors records which one is called."""

import sys
import types

import pytest

from spokenbench.core.audio.tts import get_backend
from spokenbench.core.audio.tts.clone import MODEL_FILES, MODEL_FOLDER_VARIABLE
from spokenbench.core.foundation.errors import MissingDependencyError


@pytest.fixture
def model_folder(tmp_path):
    folder = tmp_path / "chatterbox"
    folder.mkdir()
    for name in MODEL_FILES:
        (folder / name).write_bytes(b"weights")
    return folder


@pytest.fixture
def stand_in_chatterbox(monkeypatch):
    calls = []

    class ChatterboxMultilingualTTS:
        @classmethod
        def from_local(cls, folder, device):
            calls.append(("from_local", folder, device))
            return cls()

        @classmethod
        def from_pretrained(cls, device):
            raise AssertionError("the Hub must not be used when a local folder is given")

    module = types.ModuleType("chatterbox.mtl_tts")
    module.ChatterboxMultilingualTTS = ChatterboxMultilingualTTS
    monkeypatch.setitem(sys.modules, "chatterbox", types.ModuleType("chatterbox"))
    monkeypatch.setitem(sys.modules, "chatterbox.mtl_tts", module)
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    return calls


def test_a_folder_lacking_files_is_refused_before_the_import(tmp_path, monkeypatch, model_folder):
    (model_folder / "s3gen.pt").unlink()
    monkeypatch.setenv(MODEL_FOLDER_VARIABLE, str(model_folder))
    monkeypatch.setitem(sys.modules, "chatterbox.mtl_tts", None)  # an import would fail differently
    backend = get_backend("clone", references={})
    with pytest.raises(MissingDependencyError, match=r"lacks s3gen.pt; docs/voices.md"):
        backend.prepare()


def test_a_local_folder_is_loaded_offline(monkeypatch, model_folder, stand_in_chatterbox):
    import os

    monkeypatch.setenv(MODEL_FOLDER_VARIABLE, str(model_folder))
    backend = get_backend("clone", references={})
    backend.prepare()
    assert os.environ["HF_HUB_OFFLINE"] == "1"
    backend._loaded_model()
    assert stand_in_chatterbox == [("from_local", model_folder, "cpu")]
