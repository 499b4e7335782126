"""Voice-gender validation: F0 by YIN on signals of known pitch, the male / ambiguous / female bands, every demo
voice in its intended band, the project-wide check with pluggable classifiers (Tables 6-7), and its command."""

import asyncio
import sys
import types

import numpy as np
import pytest
from audio_support import ToneBackend
from gender_support import RATE, import_demo_probes, voiced

from spokenbench.core.audio.io import decode_audio
from spokenbench.core.audio.pitch import f0_track, median_f0
from spokenbench.core.audio.synthesis import plan_synthesis, run_synthesis
from spokenbench.core.audio.tts import SynthesisRequest, get_backend
from spokenbench.core.audio.voice_gender import (
    PITCH_CLASSIFIER,
    gender_of_f0,
    load_classifier,
    validate_voices,
)
from spokenbench.core.demo.project import DEMO_PROBE_VOICES
from spokenbench.core.foundation.errors import SpokenBenchError


@pytest.mark.parametrize("f0, band", [(110.0, "male"), (210.0, "female"), (160.0, "ambiguous")])
@pytest.mark.parametrize("rate", [16_000, 22_050, 24_000])
def test_median_f0_of_a_known_pitch_and_its_band(f0, band, rate):
    estimate = median_f0(voiced(f0, rate=rate), rate)
    assert estimate == pytest.approx(f0, rel=0.02)
    assert gender_of_f0(estimate) == band


def test_silence_and_noise_have_no_pitch():
    assert median_f0(np.zeros(RATE, np.float32), RATE) is None
    noise = np.random.default_rng(1).standard_normal(RATE).astype(np.float32) * 0.1
    assert median_f0(noise, RATE) is None
    assert gender_of_f0(None) == "unknown"
    assert len(f0_track(np.zeros(10, np.float32), RATE).f0) == 0  # shorter than one frame


def test_bands_edges():
    assert [gender_of_f0(f) for f in (144.9, 145.0, 175.0, 175.1)] == ["male", "ambiguous", "ambiguous", "female"]


@pytest.fixture(scope="module")
def espeak():
    return get_backend("espeak")


@pytest.mark.parametrize("voice", ["espeak-male", "espeak-female", *DEMO_PROBE_VOICES])
@pytest.mark.parametrize("accent", ["american", "british"])
def test_every_demo_voice_lands_in_its_intended_band(espeak, voice, accent):
    text = "I'm planning a short trip for the weekend. Which destination should I choose?"
    spec = espeak.voice(voice)
    data = asyncio.run(espeak.synthesize(SynthesisRequest(text, "en", accent, spec)))
    audio = decode_audio(data, voice)
    expected = "ambiguous" if spec.neutralization else spec.gender
    assert gender_of_f0(median_f0(audio.samples, audio.rate)) == expected


@pytest.fixture
def probe_project(project):
    """The demo's gender probes with their questions in the demo's voices (American English)."""
    import_demo_probes(project)
    backend = get_backend("espeak")
    plan = plan_synthesis(
        project.conn,
        backend,
        voices=["espeak-male", "espeak-female", *DEMO_PROBE_VOICES],
        accents=["american"],
        parts=("questions",),
        kinds=("gender-probe",),
    )
    report = asyncio.run(run_synthesis(project, plan))
    assert report.failed == 0 and report.synthesized == 12 * 6
    return project


class AlwaysMale:
    name = "always-male"

    def predict(self, samples, rate):
        return "male"


@pytest.mark.slow
def test_validation_of_the_probe_questions_matches_tables_6_and_7(probe_project):
    result = validate_voices(probe_project, [AlwaysMale()])
    assert len(result.clips) == 72 and result.disagreements == []
    assert result.classifiers == [PITCH_CLASSIFIER, "always-male"]
    table_6 = {row["ground_truth"]: row for row in result.accuracy_table(neutralized=False)}
    assert list(table_6) == [
        "pitch (median F0): Female",
        "pitch (median F0): Male",
        "always-male: Female",
        "always-male: Male",
    ]
    assert table_6["pitch (median F0): Female"] == {
        "ground_truth": "pitch (median F0): Female",
        "total_samples": 24,
        "accuracy_pct": 100.0,
    }
    assert table_6["always-male: Female"]["accuracy_pct"] == 0.0 and table_6["always-male: Male"]["accuracy_pct"] == 100
    table_7 = {row["ground_truth"]: row for row in result.accuracy_table(neutralized=True)}
    # neutralized clips keep the gender they were made from as ground truth; the pitch finds neither
    assert table_7["pitch (median F0): Male"]["total_samples"] == 12
    assert table_7["pitch (median F0): Male"]["accuracy_pct"] == 0.0
    voices = {row["voice"]: row for row in result.voice_summary()}
    assert voices["espeak-male"]["f0_max_hz"] < 145 < voices["espeak-male-neutral-approx"]["f0_min_hz"]
    assert voices["espeak-female-neutral-approx"]["f0_max_hz"] < 175 < voices["espeak-female-2"]["f0_min_hz"]


def test_a_clip_off_its_intended_band_is_listed(project):
    """ToneBackend's 'low' voice (male) speaks tones of 150-345 Hz: the check must say so."""
    from audio_support import MINI_ITEMS
    from support import write_jsonl

    from spokenbench.core.importers import ImportOptions, import_files

    import_files(project, [write_jsonl(project.path / "mini.jsonl", MINI_ITEMS[:1])], "mcq", ImportOptions())
    backend = ToneBackend()
    plan = plan_synthesis(project.conn, backend, voices=["low"], accents=["american"], parts=("questions",))
    asyncio.run(run_synthesis(project, plan))
    assert validate_voices(project).clips == []  # gender probes only by default
    result = validate_voices(project, all_clips=True)
    assert len(result.clips) == 1 and len(result.disagreements) == 1
    clip = result.disagreements[0]
    assert clip.intended == "male" and clip.pitch_label in ("ambiguous", "female") and clip.f0 > 145


def test_classifiers_load_from_a_module_and_bad_ones_are_refused(monkeypatch):
    module = types.ModuleType("my_gender_models")
    module.make = AlwaysMale
    module.ready = AlwaysMale()
    module.not_one = object()
    monkeypatch.setitem(sys.modules, "my_gender_models", module)
    assert load_classifier("my_gender_models:make").name == "always-male"
    assert load_classifier("my_gender_models:ready").name == "always-male"
    for spec, message in [
        ("my_gender_models", "package.module:factory"),
        ("no_such_module_here:make", "cannot import"),
        ("my_gender_models:missing", "has no missing"),
        ("my_gender_models:not_one", "not a gender classifier"),
    ]:
        with pytest.raises(SpokenBenchError, match=message):
            load_classifier(spec)


@pytest.mark.slow
def test_voices_command(cli, probe_project, monkeypatch):
    path = probe_project.path
    listed = cli("voices", path, "--json")
    assert listed.code == 0
    voices = {row["voice"]: row for row in listed.json()["voices"]}
    assert voices["espeak-male-neutral-approx"] == {
        "backend": "espeak",
        "voice": "espeak-male-neutral-approx",
        "gender": "male",
        "neutralization": "signal-approximation",
        "clips": 12,
    }
    checked = cli("voices", path, "--validate", "--json")
    assert checked.code == 0, checked.err
    body = checked.json()
    assert body["clips"] == 72 and body["disagreements"] == []
    assert [row["total_samples"] for row in body["table_6"]] == [24, 24]
    assert [row["total_samples"] for row in body["table_7"]] == [12, 12]
    text = cli("voices", path, "--validate")
    assert text.code == 0 and "Table 6" in text.out and "Table 7" in text.out and "0 clip(s) disagree" in text.out
    module = types.ModuleType("my_gender_models")
    module.make = AlwaysMale
    monkeypatch.setitem(sys.modules, "my_gender_models", module)
    plugged = cli("voices", path, "--validate", "--classifier", "my_gender_models:make", "--json")
    assert plugged.code == 0, plugged.err
    assert plugged.json()["classifiers"] == [PITCH_CLASSIFIER, "always-male"]
    backend = cli("voices", "--tts", "espeak", "--json").json()
    assert {v["voice"] for v in backend["voices"] if v["default"]} == {"espeak-male", "espeak-female"}


def test_voices_command_refuses_bad_input_with_exit_2(cli, project, tmp_path):
    for args, message in [
        (("voices", tmp_path / "nowhere", "--validate"), "no such project"),
        (("voices",), "give a project folder"),
        (("voices", project.path, "--classifier", "x:y"), "go with --validate"),
        (("voices", project.path, "--validate", "--classifier", "nonsense"), "package.module:factory"),
        (("voices", project.path, "--validate"), "no gender-probe clips"),
        (("voices", project.path, "--tts", "espeak"), "without DIR"),
    ]:
        result = cli(*args)
        assert result.code == 2 and message in result.err, (args, result.err)


def test_strict_exits_1_when_a_clip_disagrees(cli, project):
    from audio_support import MINI_ITEMS
    from support import write_jsonl

    from spokenbench.core.importers import ImportOptions, import_files

    import_files(project, [write_jsonl(project.path / "mini.jsonl", MINI_ITEMS[:1])], "mcq", ImportOptions())
    plan = plan_synthesis(project.conn, ToneBackend(), voices=["low"], accents=["american"], parts=("questions",))
    asyncio.run(run_synthesis(project, plan))
    assert cli("voices", project.path, "--validate", "--all-clips").code == 0
    strict = cli("voices", project.path, "--validate", "--all-clips", "--strict")
    assert strict.code == 1 and "1 clip(s) disagree" in strict.out


@pytest.mark.parametrize("name", ["espeak", "gemini", "openai", "kokoro"])
def test_every_backend_voice_presents_a_gender(name):
    """What clips.speaker_gender records comes from here (cloned voices from the speaker's profile)."""
    backend = get_backend(name)
    assert backend.voices and all(voice.gender in ("male", "female") for voice in backend.voices)
    assert {voice.gender for voice in backend.default_voices} == {"male", "female"}
