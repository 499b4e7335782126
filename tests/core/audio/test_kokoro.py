"""The Kokoro backend without its model: the paper's voice table, neutralized (averaged) voices, the errors that
say what to install or which folder is missing, and synthesis through a stand-in engine (the real model is never
downloaded in tests)."""

import asyncio
import sys

import numpy as np
import pytest
from gender_support import import_demo_probes

from spokenbench.core.audio.io import decode_audio
from spokenbench.core.audio.synthesis import plan_synthesis, run_synthesis
from spokenbench.core.audio.tts import BACKEND_NAMES, SynthesisRequest, get_backend
from spokenbench.core.audio.tts.base import UnsupportedRequest
from spokenbench.core.audio.tts.kokoro import (
    PAPER_NEUTRALIZED_VOICES,
    PAPER_VOICES,
    KokoroBackend,
    find_model_files,
    kokoro_voice,
)
from spokenbench.core.foundation.errors import MissingDependencyError, SpokenBenchError


def test_the_papers_voices_and_genders():
    assert PAPER_VOICES == {
        "am_puck": "male",
        "bm_george": "male",
        "bm_lewis": "male",
        "am_adam": "male",
        "bf_isabella": "female",
        "af_sarah": "female",
        "af_nova": "female",
        "bf_alice": "female",
    }
    backend = get_backend("kokoro")
    assert "kokoro" in BACKEND_NAMES
    assert {v.name: v.gender for v in backend.default_voices} == PAPER_VOICES
    assert all(v.neutralization is None for v in backend.default_voices)


def test_neutralized_voices_average_a_male_and_a_female_voice():
    voices = [kokoro_voice(name) for name in PAPER_NEUTRALIZED_VOICES]
    assert len(set(PAPER_NEUTRALIZED_VOICES)) == 8
    assert {frozenset(name.split("+")) for name in PAPER_NEUTRALIZED_VOICES}.__len__() == 8  # no pair twice
    assert all(v.neutralization == "embedding-average" for v in voices)
    assert sorted(v.gender for v in voices) == ["female"] * 4 + ["male"] * 4  # ground truth: the first voice's
    assert kokoro_voice("af_sarah+am_adam").gender == "female"
    assert kokoro_voice("bm_lewis").gender == "male"
    for name, message in [
        ("am_adam+bm_george", "a male and a female"),
        ("am_adam+af_sarah+bf_alice", "exactly two"),
        ("zz_adam", "no English voice"),
        ("jf_alpha", "no English voice"),
        ("adam", "no English voice"),
    ]:
        with pytest.raises(UnsupportedRequest, match=message):
            kokoro_voice(name)


def test_a_voice_speaks_its_own_accent_only(project):
    import_demo_probes(project)
    backend = get_backend("kokoro")
    plan = plan_synthesis(project.conn, backend, parts=("questions",))
    spoken = {(job.request.voice.name, job.request.accent) for job in plan.jobs}
    assert spoken == {(name, "american" if name[0] == "a" else "british") for name in PAPER_VOICES}
    assert len(plan.jobs) == 12 * 8
    assert any("Indian-English" in note for note in plan.unsupported)
    neutral = plan_synthesis(project.conn, backend, voices=["bf_alice+am_puck"], parts=("questions",))
    assert {job.request.accent for job in neutral.jobs} == {"british"} and len(neutral.jobs) == 12


def test_missing_folder_and_files_are_named(tmp_path):
    with pytest.raises(MissingDependencyError, match="--kokoro-model FOLDER"):
        find_model_files(None)
    with pytest.raises(MissingDependencyError, match="does not exist"):
        find_model_files(tmp_path / "nowhere")
    folder = tmp_path / "kokoro"
    folder.mkdir()
    with pytest.raises(
        MissingDependencyError, match="lacks the model kokoro-v1.0.onnx and the voices file voices-v1.0.bin"
    ):
        find_model_files(folder)
    (folder / "kokoro-v1.0.int8.onnx").write_bytes(b"x")
    with pytest.raises(MissingDependencyError, match="lacks the voices file voices-v1.0.bin"):
        find_model_files(folder)
    (folder / "voices-v1.0.bin").write_bytes(b"x")
    assert find_model_files(folder) == (folder / "kokoro-v1.0.int8.onnx", folder / "voices-v1.0.bin")


def test_without_the_package_the_error_names_the_extra(tmp_path, monkeypatch):
    folder = tmp_path / "kokoro"
    folder.mkdir()
    (folder / "kokoro-v1.0.onnx").write_bytes(b"x")
    (folder / "voices-v1.0.bin").write_bytes(b"x")
    monkeypatch.setitem(sys.modules, "kokoro_onnx", None)  # as if not installed
    with pytest.raises(MissingDependencyError, match=r"spokenbench-studio\[kokoro\]"):
        KokoroBackend(model_dir=folder).prepare()


@pytest.mark.slow
def test_a_damaged_model_file_is_refused_with_the_folder(tmp_path):
    pytest.importorskip("kokoro_onnx")
    folder = tmp_path / "kokoro"
    folder.mkdir()
    (folder / "kokoro-v1.0.onnx").write_bytes(b"not a model")
    (folder / "voices-v1.0.bin").write_bytes(b"not voices")
    with pytest.raises(SpokenBenchError, match="cannot load the Kokoro model"):
        KokoroBackend(model_dir=folder).prepare()


def test_the_installed_package_has_the_api_the_backend_uses():
    kokoro_onnx = pytest.importorskip("kokoro_onnx")
    for method in ("create", "get_voice_style"):
        assert callable(getattr(kokoro_onnx.Kokoro, method))


class StubEngine:
    """Stands in for kokoro_onnx.Kokoro: each voice's style is a constant array; the tone's pitch is the style's
    mean, so the test can hear which style was used."""

    STYLES = {"am_adam": 100.0, "af_sarah": 220.0, "bm_george": 110.0, "bf_alice": 200.0}

    def __init__(self):
        self.calls = []

    def get_voice_style(self, name):
        return np.full((510, 1, 256), self.STYLES[name], dtype=np.float32)

    def create(self, text, voice, speed=1.0, lang="en-us"):
        self.calls.append((text, np.asarray(voice), speed, lang))
        f0 = float(np.mean(voice))
        t = np.arange(int(24_000 * (0.3 + 0.06 * len(text)))) / 24_000
        return (0.3 * np.sin(2 * np.pi * f0 * t)).astype(np.float32), 24_000


def test_synthesis_through_an_engine_averages_embeddings():
    engine = StubEngine()
    backend = KokoroBackend(engine=engine)
    backend.prepare()  # an injected engine needs no folder
    request = SynthesisRequest("Which one should I pick?", "en", "american", backend.voice("am_adam+af_sarah"))
    audio = decode_audio(asyncio.run(backend.synthesize(request)), "kokoro")
    text, style, speed, lang = engine.calls[-1]
    assert np.allclose(style, 160.0) and lang == "en-us" and speed == 1.0
    assert audio.rate == 24_000 and audio.duration > 1
    british = SynthesisRequest("Which one?", "en", "british", backend.voice("bm_george"))
    asyncio.run(backend.synthesize(british))
    assert engine.calls[-1][3] == "en-gb" and np.allclose(engine.calls[-1][1], 110.0)
    with pytest.raises(UnsupportedRequest, match="speaks american English, not british"):
        asyncio.run(backend.synthesize(SynthesisRequest("Hi there", "en", "british", backend.voice("am_adam"))))
    with pytest.raises(UnsupportedRequest, match="no voice am_puck"):
        asyncio.run(backend.synthesize(SynthesisRequest("Hi there", "en", "american", backend.voice("am_puck"))))


@pytest.mark.slow
def test_clips_record_the_voice_gender_and_the_neutralization(project):
    import_demo_probes(project)
    backend = KokoroBackend(engine=StubEngine())
    voices = ["am_adam", "af_sarah", "am_adam+af_sarah", "bf_alice+bm_george"]
    plan = plan_synthesis(project.conn, backend, voices=voices, parts=("questions",))
    report = asyncio.run(run_synthesis(project, plan))
    assert report.failed == 0, report.failures
    rows = project.conn.execute(
        "SELECT voice, accent, speaker_gender, neutralization, backend, count(*) FROM clips GROUP BY voice ORDER BY voice"
    ).fetchall()
    assert [tuple(r) for r in rows] == [
        ("af_sarah", "american", "female", None, "kokoro", 12),
        ("am_adam", "american", "male", None, "kokoro", 12),
        ("am_adam+af_sarah", "american", "male", "embedding-average", "kokoro", 12),
        ("bf_alice+bm_george", "british", "female", "embedding-average", "kokoro", 12),
    ]


def test_command_line_errors_and_the_saved_folder(cli, project, tmp_path):
    import_demo_probes(project)
    path = project.path
    dry = cli("synthesize", path, "--tts", "kokoro", "--parts", "questions", "--dry-run", "--json")
    assert dry.code == 0 and dry.json()["plan"]["to_synthesize"] == 96  # planning needs no model
    missing = cli("synthesize", path, "--tts", "kokoro", "--parts", "questions")
    assert missing.code == 2 and "--kokoro-model FOLDER" in missing.err and "Traceback" not in missing.err
    wrong = cli("synthesize", path, "--tts", "kokoro", "--kokoro-model", tmp_path / "nowhere", "--dry-run")
    assert wrong.code == 2 and "does not exist" in wrong.err
    folder = tmp_path / "kokoro"
    folder.mkdir()
    (folder / "kokoro-v1.0.onnx").write_bytes(b"x")
    (folder / "voices-v1.0.bin").write_bytes(b"x")
    saved = cli("synthesize", path, "--tts", "kokoro", "--kokoro-model", folder, "--dry-run")
    assert saved.code == 0
    from spokenbench.core.audio.tts.project_settings import project_model_dir

    assert project_model_dir(project.conn, "kokoro") == str(folder.resolve())
    listed = cli("voices", "--tts", "kokoro", "--json").json()["voices"]
    assert {v["voice"] for v in listed if v["default"]} == set(PAPER_VOICES)
    assert {v["voice"] for v in listed if v["neutralization"] == "embedding-average"} == set(PAPER_NEUTRALIZED_VOICES)
