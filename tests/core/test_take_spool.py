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
from spokenbench.core.recording.quality import waking_zeros
from spokenbench.core.recording.recorder import InputDevice, Recorder, fake_stream_factory
from spokenbench.core.recording.speakers import ConsentRequired, add_speaker, give_consent, withdraw_consent
from spokenbench.core.recording.spool import (
    SOUNDLESS_GRACE_S,
    SPOOL_DIR_NAME,
    ClaimedTake,
    TakeSpool,
    left_takes,
    takes_to_offer,
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
    woke = waking_zeros(signal_samples, RATE)  # the zeros it began with (0.4 s): in the spool, not in the take
    assert spool.frames == woke + len(samples) and pcm_seconds(spool) == spool.frames / RATE  # whole once stopped
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
    started = time.monotonic()
    time.sleep(1.5)
    assert left_takes(project_dir) == []  # still being recorded: not offered (once LOCK_WAIT_S has passed)
    child.send_signal(signal.SIGKILL)
    killed_after = time.monotonic() - started
    child.wait(10)
    [left] = left_takes(project_dir)
    assert left.problem is None and left.speaker_id == 1 and left.prompt == PROMPT and left.device == "fake mic"
    assert left.rate == RATE and killed_after - 1.1 <= left.seconds <= killed_after + 0.1  # a spool interval behind
    claimed = ClaimedTake(left)
    samples = claimed.samples()
    read = take_signal(30.0)
    expected = read[waking_zeros(read, RATE) :][: len(samples)]  # without the zeros it woke with
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
    if isinstance(meta, bytes):
        (folder / f"{name}.json").write_bytes(meta)
    else:
        (folder / f"{name}.json").write_text(meta if isinstance(meta, str) else json.dumps(meta), encoding="utf-8")
    return folder / f"{name}.pcm"


GOOD_META = {
    "speaker_id": 1,
    "prompt": {"key": "q0:question", "text": "Question 0?", "item_id": None, "part": "question", "label": "x"},
    "rate": RATE,
    "device": None,
    "started": "2026-12-06 09:00:00",
}


def test_a_take_left_before_its_input_heard_anything_is_removed_not_offered(project_dir):
    """The app killed while the input was still waking (no sample yet, or only the exact zeros an input wakes with):
    before, "A take was cut short … 0 s" was asked about, and Keep saved a take of nothing. A take with one sound
    in it, however late, is offered; one that cannot be read is offered to be removed. A soundless one written in
    the last SOUNDLESS_GRACE_S is left alone: without flock it could be a take being recorded now."""
    silent = left_pair(project_dir, GOOD_META, b"", name="20261206-000000-1-00000001")
    zeros = left_pair(project_dir, GOOD_META, b"\0\0" * RATE * 3, name="20261206-000000-1-00000002")
    late = left_pair(project_dir, GOOD_META, b"\0\0" * RATE * 3 + b"\x01\0", name="20261206-000000-1-00000003")
    broken = left_pair(project_dir, "{not json", b"\0\0", name="20261206-000000-1-00000004")
    assert [left.pcm_path for left in takes_to_offer(project_dir)] == [late, broken]
    assert silent.exists() and zeros.exists()  # just written: left alone
    offered = takes_to_offer(project_dir, now=time.time() + SOUNDLESS_GRACE_S)
    assert [left.pcm_path for left in offered] == [late, broken] and offered[1].problem is not None
    assert not silent.exists() and not zeros.exists() and not silent.with_suffix(".json").exists()
    assert late.exists() and broken.exists()


def test_a_take_read_back_loses_the_zeros_its_input_woke_with(project_dir):
    """As `Recorder.stop` returns a take: the zeros before its first sound, when it came within the muted wait,
    are not the take's (its noise floor is); zeros for longer than the wait (muted, a noise filter) stay."""
    sound = (np.full(RATE, 0.01) * 32767).astype("<i2").tobytes()
    woke = left_pair(project_dir, GOOD_META, b"\0\0" * (RATE // 2) + sound, name="20261206-000000-1-00000005")
    muted = left_pair(project_dir, GOOD_META, b"\0\0" * (RATE * 2) + sound, name="20261206-000000-1-00000006")
    by_path = {left.pcm_path: left for left in left_takes(project_dir)}
    woke_samples, muted_samples = (ClaimedTake(by_path[path]).samples() for path in (woke, muted))
    assert len(woke_samples) == RATE and woke_samples.all()
    assert len(muted_samples) == 3 * RATE and not muted_samples[: 2 * RATE].any()


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
        ("[" * 30_000 + "]" * 30_000, "nested too deeply"),
        (b"\xff\xfe{}", "its description"),
    ],
)
def test_a_left_take_from_someone_else_is_checked_field_by_field(project_dir, meta, problem):
    pcm_path = left_pair(project_dir, meta)
    if problem.startswith("longer"):
        os.truncate(pcm_path, 3600 * 8000 * 2 + 2)  # sparse: an hour at 8 kHz and a sample more
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
    for left in left_takes(project_dir):  # removed as entries, never through them, and without waiting
        ClaimedTake(left).remove()
    assert left_takes(project_dir) == [] and secret.read_bytes() == b"\1\0" * 100
    assert time.perf_counter() - started < 4.0


def test_a_spool_folder_that_is_a_link_is_never_followed(project_dir, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    left_pair(tmp_path, GOOD_META)  # a take pair in tmp_path/recording-spool, reached through the link
    (project_dir / SPOOL_DIR_NAME).symlink_to(tmp_path / SPOOL_DIR_NAME)
    assert left_takes(project_dir) == []
    with pytest.raises(OSError, match="not a folder"):
        TakeSpool(project_dir, 1, PROMPT, RATE, None)
    assert len(list((tmp_path / SPOOL_DIR_NAME).iterdir())) == 2  # untouched


def test_a_withdrawal_removes_the_audio_even_with_a_hostile_spool(project_dir):
    """A description nested 30,000 deep made `json.loads` raise RecursionError, which stopped the withdrawal
    after its rows were deleted, before its audio files were."""
    left_pair(project_dir, "[" * 30_000 + "]" * 30_000)
    with opened(project_dir) as project:
        withdrawal = withdraw_consent(project, "Ana")
    assert withdrawal.speaker == "Ana" and left_takes(project_dir) == []


def test_a_take_thrown_away_loses_its_spool_at_once_even_with_its_stop_held(project_dir):
    import threading

    from recording_fakes import HeldStop

    held = threading.Event()
    recorder = Recorder(
        InputDevice(None, "fake", 1, RATE),
        blocksize=512,
        stream_factory=lambda **o: HeldStop(fake_stream_factory(take_signal(5.0), realtime=True)(**o), held, 30),
    )
    recorder.start(lambda rate: TakeSpool(project_dir, 1, PROMPT, rate, None))
    time.sleep(0.6)
    worker = threading.Thread(target=recorder.abort, daemon=True)
    worker.start()
    deadline = time.monotonic() + 1.0
    while any((project_dir / SPOOL_DIR_NAME).iterdir()) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not any((project_dir / SPOOL_DIR_NAME).iterdir())  # before the held stop answered
    held.set()
    worker.join(10)


def test_a_start_thrown_away_while_it_was_held_leaves_no_stream_and_no_spool(project_dir):
    """Before, a take discarded while its start was held (R, then a project switch or a withdrawal) went on
    recording once the server answered, with nobody to stop it."""
    import threading

    answered = threading.Event()
    made = []

    def held_start(**options):
        answered.wait(10)
        stream = fake_stream_factory(take_signal(5.0), realtime=True)(**options)
        made.append(stream)
        return stream

    recorder = Recorder(InputDevice(None, "fake", 1, RATE), blocksize=512, stream_factory=held_start)
    starting = threading.Thread(
        target=recorder.start, args=(lambda rate: TakeSpool(project_dir, 1, PROMPT, rate, None),), daemon=True
    )
    starting.start()
    time.sleep(0.2)
    recorder.abort()  # thrown away while its start waits on the server
    answered.set()
    starting.join(10)
    time.sleep(0.3)
    spool_dir = project_dir / SPOOL_DIR_NAME
    assert recorder.spool is None and not (spool_dir.exists() and any(spool_dir.iterdir()))
    assert made and not made[0].active  # the stream was closed as soon as it had started


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


def test_a_take_cut_short_whose_item_was_deleted_since_is_kept_unlinked(project_dir):
    """Before, its save failed on the item's foreign key at every opening."""
    from spokenbench.core.recording.spool import prompt_as_it_is_now

    with opened(project_dir) as project:
        [item_id] = [row[0] for row in project.conn.execute("SELECT id FROM items")]
        linked = Prompt("k", "Question 0?", item_id, "question", "x")
        assert prompt_as_it_is_now(project.conn, linked) == linked
        gone = prompt_as_it_is_now(project.conn, Prompt("k", "Question 0?", item_id + 1, "question", "x"))
        assert gone.item_id is None and gone.text == "Question 0?"
        take = save_recorded_take(project, 1, prepare_take(take_signal(1.0), RATE, gone), lambda remove: None)
        assert take.prompt_key == "k"


LOOKING = """
import sys, time
from spokenbench.core.recording.spool import left_takes
print("looking", flush=True)
end = time.monotonic() + float(sys.argv[2])
while time.monotonic() < end:
    left_takes(sys.argv[1])
"""


def test_a_take_is_claimed_while_another_process_only_looks_at_the_spool(project_dir):
    """Another app on the project looks for left takes (`left_takes` locks each one while it reads its description).
    Before, a claim made meanwhile was refused as "another process is recovering this take" about one time in four
    (the Speakers page's Discard or Keep failed), and a look made meanwhile did not see the take (a withdrawn
    consent's `remove_left_takes_of` left it behind)."""
    pcm = left_pair(project_dir, GOOD_META, b"\x01\0" * RATE)
    [left] = left_takes(project_dir)
    looker = subprocess.Popen(
        [sys.executable, "-c", LOOKING, str(project_dir), "20"], stdout=subprocess.PIPE, text=True
    )
    try:
        assert looker.stdout.readline() == "looking\n"
        refused = unseen = 0
        until = time.monotonic() + 1.5
        while time.monotonic() < until:
            unseen += not left_takes(project_dir)
            try:
                ClaimedTake(left).release()
            except InputError:
                refused += 1
        assert (refused, unseen) == (0, 0)
        ClaimedTake(left).remove()
        assert not pcm.exists()
    finally:
        looker.kill()
        looker.wait(10)


def test_a_take_another_process_recovers_is_still_refused_after_the_claim_s_wait(project_dir):
    left_pair(project_dir, GOOD_META, b"\x01\0")
    [left] = left_takes(project_dir)
    held = ClaimedTake(left)
    try:
        started = time.monotonic()
        with pytest.raises(InputError, match="another process is recovering"):
            ClaimedTake(left)
        assert 0.4 < time.monotonic() - started < 3.0  # CLAIM_WAIT_S, then refused
    finally:
        held.release()
