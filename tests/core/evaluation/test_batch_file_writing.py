"""How the batch file is written changes no byte: each line spliced from the body's encoded pieces (built once per
distinct text) is the encoding of the whole record; a missing or damaged audio file is refused with the store's own
error, leaving no file and no batch record. And planning a large run stays lean: no pandas, one condition per key."""

import json
import subprocess
import sys

import pytest

from spokenbench.core.domain.conditions import Condition
from spokenbench.core.evaluation import batch_files
from spokenbench.core.evaluation.adapters import AudioInput, GenerationParams, ModelRequest, OpenAICompatibleAdapter
from spokenbench.core.evaluation.plans import PlanOptions, build_plan
from spokenbench.core.evaluation.preparation import RunSettings, prepare_evaluation
from spokenbench.core.evaluation.presets import resolve_model
from spokenbench.core.foundation.errors import ProjectError

VLLM = RunSettings(model="vllm:my-audio-model", base_url="http://127.0.0.1:9/v1", mode="audio", prompt="standard")


@pytest.mark.parametrize("convention", ["openai-input-audio", "mistral-input-audio", "audio-url"])
def test_a_spliced_line_is_the_encoding_of_the_whole_record(audio_project, convention):
    preset = resolve_model("vllm:my-audio-model", "http://127.0.0.1:9/v1", convention)
    adapter = OpenAICompatibleAdapter(preset, GenerationParams(), None)
    writer = batch_files._Writer(audio_project, adapter)
    shas = [row[0] for row in audio_project.conn.execute("SELECT sha256 FROM assembled_inputs ORDER BY id LIMIT 2")]
    audio = tuple(AudioInput(b"", sha, "wav", 0.3) for sha in shas)  # two audios: a chunked input
    for system, user in (("Listen.", 'Answer "A" or \\B\\ — ünïcode'), (None, "")):
        request = ModelRequest(system, user, audio)
        line = b"".join(writer.openai_line(batch_files._Line("ab" * 32, request, [])))
        record = {"custom_id": "ab" * 32, "method": "POST", "url": "/v1/chat/completions"}
        record["body"] = adapter.chat_body(writer.loaded(request))
        assert line == json.dumps(record, separators=(",", ":")).encode() + b"\n"


@pytest.mark.parametrize("spoil", ["missing", "damaged"])
def test_a_bad_audio_file_leaves_no_file_and_no_batch(audio_project, tmp_path, spoil):
    sha = audio_project.conn.execute("SELECT sha256 FROM assembled_inputs ORDER BY id DESC LIMIT 1").fetchone()[0]
    path = audio_project.audio.path_for(sha, "wav")
    if spoil == "missing":
        path.unlink()
    else:
        data = bytearray(path.read_bytes())
        data[-1] ^= 0xFF  # the same size, another content
        path.write_bytes(bytes(data))
    prepared = prepare_evaluation(audio_project, VLLM)
    out = tmp_path / "out"
    target = out / "requests.jsonl"
    with pytest.raises(ProjectError, match="is missing from the project" if spoil == "missing" else "is damaged"):
        batch_files.write_batch_file(audio_project, prepared, target)
    assert list(out.iterdir()) == []  # neither the file nor its temporary
    assert audio_project.conn.execute("SELECT count(*) FROM batch_jobs").fetchone()[0] == 0


def test_a_plan_shares_one_condition_per_key(audio_project):
    plan = build_plan(audio_project.conn, PlanOptions(mode="audio"))
    keys = {request.condition_key for request in plan.requests}
    assert len(plan.requests) == 6 and len(keys) == 2
    assert len({id(request.condition) for request in plan.requests}) == len(keys)
    assert len({id(request.condition_key) for request in plan.requests}) == len(keys)
    for request in plan.requests:
        assert request.condition == Condition.from_key(request.condition_key)


def test_preparing_an_audio_run_imports_no_pandas(audio_project):
    """pandas (with numpy and pyarrow) is about 100 MB of a process: planning has no use for it."""
    script = (
        "import sys\n"
        "from spokenbench.core.evaluation.preparation import RunSettings, prepare_evaluation\n"
        "from spokenbench.core.store import opened\n"
        "with opened(sys.argv[1]) as project:\n"
        "    prepare_evaluation(project, RunSettings(model='vllm:m', base_url='http://127.0.0.1:9/v1'))\n"
        "print(sorted(name for name in ('pandas', 'numpy', 'pyarrow') if name in sys.modules))\n"
    )
    audio_project.conn.commit()
    done = subprocess.run([sys.executable, "-c", script, str(audio_project.path)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
