"""A take kept on disk as it is recorded (core/recording/spool.py): written while it comes, whole and durable once
stopped, gone once saved or thrown away; left behind by a process killed mid-take and read back at the next
opening; never offered while another process holds it; a folder from someone else is data (every field checked,
links and oversize files refused); a withdrawn consent removes the speaker's left takes."""

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest
from recording_fakes import RATE, take_signal
from support import write_jsonl

from spokenbench.core.foundation.errors import InputError
from spokenbench.core.importers import ImportOptions, import_files
from spokenbench.core.recording.prompts import Prompt
from spokenbench.core.recording.recorder import InputDevice, Recorder, fake_stream_factory
from spokenbench.core.recording.speakers import ConsentRequired, add_speaker, give_consent, withdraw_consent
from spokenbench.core.recording.spool import (
    SPOOL_DIR_NAME,
    ClaimedTake,
    TakeSpool,
    left_takes,
)
from spokenbench.core.recording.takes import prepare_take, save_recorded_take
from spokenbench.core.store import Project, opened

PROMPT = Prompt("q0:question", "Question 0?", None, "question", "t/q0 question")


@pytest.fixture
def project_dir(tmp_path):
    rows = [{"id": "q0", "language": "en", "question": "Question 0?", "options": ["a", "b"], "answer": "A"}]
    with Project.create(tmp_path / "p") as project:
        import_files(project, [write_jsonl(tmp_path / "q.jsonl", rows)], "mcq", ImportOptions(source="t"))
        add_speaker(project, "Ana", "en", "british", "woman")
        give_consent(project, "Ana", "I agree.", "tester")
    return tmp_path / "p"


def spooled_recorder(project_dir, signal_samples, speaker_id=1):
    recorder = Recorder(
        InputDevice(None, "fake", 1, RATE),
        blocksize=512,
        stream_factory=fake_stream_factory(signal_samples, realtime=True, noise_dbfs=None),
    )
    recorder.start(lambda rate: TakeSpool(project_dir, speaker_id, PROMPT, rate, "fake"))
    return recorder


def pcm_seconds(spool) -> float:
    return spool.pcm_path.stat().st_size / 2 / RATE


def test_a_take_is_on_disk_as_it_comes_whole_once_stopped_and_gone_once_let_go(project_dir):
    signal_samples = take_signal(1.5)
    recorder = spooled_recorder(project_dir, signal_samples)
    spool = recorder.spool
    time.sleep(1.0)
    assert 0.4 < pcm_seconds(spool) <= 1.0  # written while it comes, a quarter second behind at most
    assert left_takes(project_dir) == []  # ours, locked: never offered while it is being recorded
    samples = recorder.stop()
    assert spool.frames == len(samples) and pcm_seconds(spool) == len(samples) / RATE  # whole once stopped
    recorder.release_spool(remove=True)
    assert not any((project_dir / SPOOL_DIR_NAME).iterdir())


KILLED_MID_TAKE = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from recording_fakes import RATE, take_signal
    from spokenbench.core.recording.prompts import Prompt
    from spokenbench.core.recording.recorder import Recorder, fake_stream_factory
    from spokenbench.core.recording.spool import TakeSpool

    prompt = Prompt("q0:question", "Question 0?", None, "question", "t/q0 question")
    recorder = Recorder(rate=RATE, blocksize=512,
                        stream_factory=fake_stream_factory(take_signal(30.0), realtime=True, noise_dbfs=None))
    recorder.start(lambda rate: TakeSpool(Path(sys.argv[1]), 1, prompt, rate, "fake mic"))
    print("recording", flush=True)
    time.sleep(60)
    """
)


def test_a_take_whose_process_was_killed_mid_take_is_left_and_read_back(project_dir, tmp_path):
    """Before, a take lived in memory until R: SIGKILL (a crash, a power cut) in the middle lost all of it."""
    script = tmp_path / "killed.py"
    script.write_text(KILLED_MID_TAKE)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}  # tests/, for recording_fakes
    child = subprocess.Popen(
        [sys.executable, str(script), str(project_dir)], stdout=subprocess.PIPE, text=True, env=env
    )
    assert child.stdout.readline() == "recording\n"
    time.sleep(2.0)
    assert left_takes(project_dir) == []  # still being recorded: not offered
    child.send_signal(signal.SIGKILL)
    child.wait(10)
    [left] = left_takes(project_dir)
    assert left.problem is None and left.speaker_id == 1 and left.prompt == PROMPT and left.device == "fake mic"
    assert left.rate == RATE and 1.0 <= left.seconds <= 2.1  # at most a spool interval behind the kill
    claimed = ClaimedTake(left)
    samples = claimed.samples()
    expected = take_signal(30.0)[: len(samples)]
    assert np.max(np.abs(samples - expected)) < 2 / 32767  # 16-bit PCM of what was read
    with pytest.raises(InputError, match="another process is recovering"):
        ClaimedTake(left)
    assert left_takes(project_dir) == []  # claimed: not offered to another process meanwhile
    with opened(project_dir) as project:
        take = save_recorded_take(project, 1, prepare_take(samples, left.rate, left.prompt, left.device),
                                  lambda remove: claimed.remove() if remove else claimed.release())  # fmt: skip
    assert take.take == 1 and take.prompt_key == PROMPT.key
    assert left_takes(project_dir) == [] and not any((project_dir / SPOOL_DIR_NAME).iterdir())


def left_pair(project_dir, meta, pcm: bytes = b"\0\0" * RATE, name="20261206-000000-1-abcdef12"):
    folder = project_dir / SPOOL_DIR_NAME
    folder.mkdir(exist_ok=True)
    (folder / f"{name}.pcm").write_bytes(pcm)
    (folder / f"{name}.json").write_text(meta if isinstance(meta, str) else json.dumps(meta), encoding="utf-8")
    return folder / f"{name}.pcm"


GOOD_META = {
    "speaker_id": 1,
    "prompt": {"key": "q0:question", "text": "Question 0?", "item_id": None, "part": "question", "label": "x"},
    "rate": RATE,
    "device": None,
    "started": "2026-12-06 09:00:00",
}


@pytest.mark.parametrize(
    ("meta", "problem"),
    [
        ("{not json", "its description"),
        ([1, 2], "not an object with a prompt"),
        ({**GOOD_META, "speaker_id": "1"}, "speaker_id is not a positive whole number"),
        ({**GOOD_META, "speaker_id": True}, "speaker_id is not a positive whole number"),
        ({**GOOD_META, "rate": 10**9}, "rate is not a sample rate"),
        ({**GOOD_META, "prompt": {**GOOD_META["prompt"], "text": 7}}, "its text is not a text"),
        ({**GOOD_META, "prompt": {**GOOD_META["prompt"], "key": "k" * 5000}}, "its key is not a text"),
        ({**GOOD_META, "rate": 8000}, "longer than 60 minutes"),
    ],
)
def test_a_left_take_from_someone_else_is_checked_field_by_field(project_dir, meta, problem):
    pcm = b"\0\0" * (3600 * 8000 + 1) if problem.startswith("longer") else b"\0\0" * RATE
    left_pair(project_dir, meta, pcm)
    [left] = left_takes(project_dir)
    assert left.problem is not None and problem in left.problem
    claimed = ClaimedTake(left)
    with pytest.raises(InputError, match=problem.split(" ")[0]):
        claimed.samples()
    claimed.remove()
    assert left_takes(project_dir) == []


def test_links_and_special_files_in_the_spool_are_never_read(project_dir, tmp_path):
    secret = tmp_path / "secret.raw"
    secret.write_bytes(b"\1\0" * 100)
    folder = project_dir / SPOOL_DIR_NAME
    folder.mkdir()
    (folder / "a.pcm").symlink_to(secret)
    (folder / "a.json").write_text(json.dumps(GOOD_META))
    os.mkfifo(folder / "b.pcm")
    (folder / "b.json").write_text(json.dumps(GOOD_META))
    left_pair(project_dir, GOOD_META, name="c")
    (folder / "c.json").unlink()
    (folder / "c.json").symlink_to(secret)
    (folder / "notes.txt").write_text("ignored")
    started = time.perf_counter()
    found = {left.id: left.problem for left in left_takes(project_dir)}
    assert time.perf_counter() - started < 2.0  # the FIFO never waited for a writer
    assert "cannot be read" in found["a"] and found["b"] == "is not a regular file"
    assert "symbolic link" in found["c"] and set(found) == {"a", "b", "c"}
    assert secret.read_bytes() == b"\1\0" * 100


def test_withdrawing_consent_removes_the_speakers_left_takes(project_dir):
    left_pair(project_dir, GOOD_META)
    left_pair(project_dir, {**GOOD_META, "speaker_id": 2}, name="other")
    with opened(project_dir) as project:
        withdraw_consent(project, "Ana")
    assert [left.speaker_id for left in left_takes(project_dir)] == [2]


def test_a_take_saved_without_consent_removes_its_spool_and_a_failed_save_keeps_it(project_dir, monkeypatch):
    """Consent gone: nothing of the voice stays. A full disk: the take stays in the spool, offered again."""
    prepared = prepare_take(take_signal(1.0), RATE, PROMPT)
    released = []
    with opened(project_dir) as project:

        def full_disk(*_args, **_kwargs):
            raise OSError(28, "No space left on device")

        monkeypatch.setattr(project.audio, "put_bytes", full_disk)
        with pytest.raises(OSError):
            save_recorded_take(project, 1, prepared, released.append)
        withdraw_consent(project, "Ana")
        with pytest.raises(ConsentRequired):
            save_recorded_take(project, 1, prepared, released.append)
    assert released == [False, True]
