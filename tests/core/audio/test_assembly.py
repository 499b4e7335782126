import asyncio
import hashlib
import math

import numpy as np
import pytest
from support import dominant_frequency

from spokenbench.core.audio import dsp
from spokenbench.core.audio.assembly import (
    AssemblySettings,
    GroupDurability,
    chunk_bounds,
    plan_assembly,
    run_assembly,
)
from spokenbench.core.audio.io import AudioError, decode_audio
from spokenbench.core.audio.synthesis import plan_synthesis, run_synthesis
from spokenbench.core.domain.conditions import Condition
from spokenbench.core.store.audio_files import AudioStore

SETTINGS = AssemblySettings()


@pytest.fixture
def voiced_project(mini_project, tone_backend):
    plan = plan_synthesis(mini_project.conn, tone_backend, languages=["en"], accents=["american"], voices=["low"])
    asyncio.run(run_synthesis(mini_project, plan))
    return mini_project


def assemble(project, orders, **options):
    chunks = options.pop("chunk_seconds", ())
    plan = plan_assembly(project.conn, orders, languages=["en"], **options)
    return plan, run_assembly(project, plan, chunks, SETTINGS)


def stored_input(project, source_id: str, condition: Condition):
    row = project.conn.execute(
        "SELECT a.* FROM assembled_inputs a JOIN items i ON i.id = a.item_id WHERE i.source_id = ? AND i.language = 'en' "
        "AND a.condition_key = ?",
        (source_id, condition.key()),
    ).fetchone()
    audio = decode_audio(project.audio.read_bytes(row["sha256"], row["audio_format"]), "assembled")
    return row, audio


def voiced_runs(audio) -> list[np.ndarray]:
    """The non-silent stretches between the assembly's pauses."""
    pauses = dsp.find_pauses(audio.samples, audio.rate, min_pause_s=0.3)
    edges = [0] + [e for p in pauses for e in p] + [len(audio.samples)]
    runs = [audio.samples[a:b] for a, b in zip(edges[::2], edges[1::2])]
    return [r for r in runs if len(r) > audio.rate * 0.05]


def expected_frequency(backend, text: str) -> float:
    from spokenbench.core.audio.tts import SynthesisRequest

    return backend.frequency(SynthesisRequest(text, "en", "american", backend.voice("low")))


OPTIONS = {"A": "Oxygen", "B": "Carbon dioxide", "C": "Nitrogen", "D": "Helium"}


@pytest.mark.slow
@pytest.mark.parametrize(
    "order, spoken",
    [
        ("original", [("A", "A"), ("B", "B"), ("C", "C"), ("D", "D")]),
        ("reversed", [("A", "D"), ("B", "C"), ("C", "B"), ("D", "A")]),
        ("order-backward", [("D", "D"), ("C", "C"), ("B", "B"), ("A", "A")]),
        ("token-backward", [("D", "A"), ("C", "B"), ("B", "C"), ("A", "D")]),
        ("CABD", [("A", "C"), ("B", "A"), ("C", "B"), ("D", "D")]),
    ],
)
def test_segments_follow_the_order(voiced_project, tone_backend, order, spoken):
    """Listen to the assembled audio: (spoken label, original option) pairs must come in the documented order."""
    assemble(voiced_project, [order])
    condition = Condition("en", "american", "low", "male", order)
    row, audio = stored_input(voiced_project, "q1", condition)
    runs = voiced_runs(audio)
    assert len(runs) == 2 + 2 * 4  # "question" token, question, then label + option four times
    heard = [dominant_frequency(r, audio.rate) for r in runs]
    expected = [
        expected_frequency(tone_backend, "Question"),
        expected_frequency(tone_backend, "Which gas do plants take in?"),
    ]
    for label, option in spoken:
        expected += [expected_frequency(tone_backend, label), expected_frequency(tone_backend, OPTIONS[option])]
    assert heard == pytest.approx(expected, abs=3.0)
    option_order = "".join(option for _, option in sorted(spoken))
    assert row["option_order"] == option_order and row["label_sequence"] == "".join(label for label, _ in spoken)
    lines = row["text_rendering"].splitlines()
    assert lines[0] == "Question: Which gas do plants take in?"
    assert lines[1:] == [f"{label}. {OPTIONS[option]}" for label, option in spoken]


@pytest.mark.slow
def test_without_labels_and_loudness_matched_at_one_rate(voiced_project, tone_backend):
    assemble(voiced_project, ["original"], spoken_labels=False)
    condition = Condition("en", "american", "low", "male", "original", spoken_labels=False)
    row, audio = stored_input(voiced_project, "q1", condition)
    runs = voiced_runs(audio)
    assert len(runs) == 5 and audio.rate == 16_000 and row["sample_rate"] == 16_000
    levels = [dsp.speech_level_db(r, audio.rate) for r in runs]
    assert levels == pytest.approx([SETTINGS.target_level_db] * 5, abs=0.5)
    assert row["text_rendering"].splitlines()[1] == "- Oxygen"


@pytest.mark.slow
def test_perturbations(voiced_project):
    assemble(voiced_project, ["original"], speeds=[1.0, 1.25], volumes=[1.0, 1.5], snrs=[None, 10.0])
    base = Condition("en", "american", "low", "male")
    _, plain = stored_input(voiced_project, "q1", base)
    _, fast = stored_input(voiced_project, "q1", Condition("en", "american", "low", "male", speed=1.25))
    assert fast.duration == pytest.approx(plain.duration / 1.25, abs=0.02)
    assert dominant_frequency(voiced_runs(fast)[1], 16_000) == pytest.approx(
        dominant_frequency(voiced_runs(plain)[1], 16_000), abs=3
    )
    row, loud = stored_input(voiced_project, "q1", Condition("en", "american", "low", "male", volume=1.5))
    assert np.abs(loud.samples).max() == pytest.approx(1.5 * np.abs(plain.samples).max(), rel=0.01)
    assert row["clipped_samples"] == 0
    _, noisy = stored_input(voiced_project, "q1", Condition("en", "american", "low", "male", snr_db=10.0))
    noise = noisy.samples - plain.samples
    snr = dsp.speech_level_db(plain.samples, 16_000) - 10 * math.log10(np.mean(noise.astype(np.float64) ** 2))
    assert snr == pytest.approx(10.0, abs=0.3)


@pytest.mark.slow
def test_chunks_stay_within_the_limit_and_cut_in_pauses(voiced_project):
    assemble(voiced_project, ["original"], chunk_seconds=[4.0])
    rows = voiced_project.conn.execute("SELECT max_seconds, duration_s, sha256 FROM input_chunks").fetchall()
    assert len(rows) > 4 and all(duration <= 4.0 for _, duration, _ in rows)
    for _, _, sha in rows[:12]:
        chunk = decode_audio(voiced_project.audio.read_bytes(sha, "wav"), "chunk")
        edge = int(0.02 * chunk.rate)
        assert np.abs(chunk.samples[:edge]).max() < 1e-3 or np.abs(chunk.samples[-edge:]).max() < 1e-3
    totals = voiced_project.conn.execute(
        "SELECT a.duration_s, sum(c.duration_s) FROM assembled_inputs a JOIN input_chunks c ON c.input_id = a.id GROUP BY a.id"
    ).fetchall()
    assert all(whole == pytest.approx(parts, abs=1e-3) for whole, parts in totals)


def test_chunking_refuses_to_cut_a_word():
    speech = np.concatenate(
        [np.zeros(1600, np.float32), np.full(16_000 * 4, 0.3, np.float32), np.zeros(1600, np.float32)]
    )
    with pytest.raises(AudioError, match="q7 .*no pause to split at"):
        chunk_bounds(speech, 16_000, cuts=[], max_seconds=2.0, what="q7 (en)")


@pytest.mark.slow
def test_rerun_skips_unchanged_inputs_and_rebuilds_changed_ones(voiced_project):
    from support import tone

    from spokenbench.core.audio.io import encode_audio

    plan, report = assemble(voiced_project, ["original", "reversed"])
    assert report.assembled == 4
    again, _ = assemble(voiced_project, ["original", "reversed"])
    assert again.jobs == [] and again.already_done == 4
    new_take = voiced_project.audio.put_bytes(encode_audio(tone(333, 1.0, 0.3), 16_000, "flac"), "flac")
    with voiced_project.transaction() as conn:  # a newer clip for q2's option A, e.g. after a corrected rewrite
        conn.execute(
            "INSERT INTO clips(item_id, part, text, language, accent, voice, speaker_gender, backend, model, cache_key, "
            "sha256, audio_format, duration_s, sample_rate, status, created_at) SELECT item_id, part, text, language, "
            "accent, voice, speaker_gender, backend, model, 'new-take', ?, 'flac', 1.0, 16000, 'ok', 'now' FROM clips "
            "WHERE part = 'option_A' AND item_id = (SELECT id FROM items WHERE source_id = 'q2' AND language = 'en')",
            (new_take,),
        )
    changed, report = assemble(voiced_project, ["original", "reversed"])
    assert report.assembled == 2 and changed.already_done == 2
    assert {job.label for job in changed.jobs} == {"q2 (en)"}
    assert voiced_project.conn.execute("SELECT count(*) FROM assembled_inputs").fetchone()[0] == 4


def test_missing_clips_are_named(mini_project, tone_backend):
    plan = plan_synthesis(
        mini_project.conn,
        tone_backend,
        languages=["en"],
        accents=["american"],
        voices=["low"],
        parts=("questions", "options"),
    )
    asyncio.run(run_synthesis(mini_project, plan))
    plan = plan_assembly(mini_project.conn, ["original"], languages=["en"])
    assert plan.jobs == [] and any("no instruction token 'question'" in m for m in plan.missing)


@pytest.mark.parametrize("writes", ["writev", "short writev", "write"])
def test_a_file_of_many_buffers_is_written_whole(tmp_path, monkeypatch, writes):
    """Assembly hands each file over as its buffers (a header, then some thirty segments and pauses, views of
    cached samples), written with writev where the OS has it: more buffers than one call takes, empty ones,
    bytes and int16 arrays all end up in the file in order, also when a call writes only part of them."""
    import hashlib
    import os

    from spokenbench.core.store.audio_files import IOV_MAX, AudioStore

    if writes == "write":
        monkeypatch.delattr("os.writev", raising=False)
    elif writes == "short writev":  # at most 7 bytes a call: buffers are resumed in the middle
        real_writev = os.writev
        monkeypatch.setattr("os.writev", lambda fd, views: real_writev(fd, [b"".join(map(bytes, views[:8]))[:7]]))
    rng = np.random.default_rng(7)
    parts = [b"RIFF-header"] + [
        rng.integers(-(2**15), 2**15, int(rng.integers(0, 50)), dtype=np.int16) for _ in range(IOV_MAX * 2 + 5)
    ]
    expected = b"".join(bytes(memoryview(part).cast("B")) for part in parts)
    store = AudioStore(tmp_path / "audio")
    pending = store.write_pending(parts, "wav")
    store.make_durable([pending])
    assert pending.sha256 == hashlib.sha256(expected).hexdigest()
    assert store.read_bytes(pending.sha256, "wav") == expected


def test_outputs_ready_in_one_turn_are_written_together_and_fail_alone(tmp_path, monkeypatch):
    """A chunk of clips comes back from the speech workers at once: their files go to the writer thread in one
    hand-off (the demo's 1,162 clips: 156 instead of 1,162). One output that cannot be written fails alone; the
    others are stored whole, and no temp file is left."""
    batches = []
    write_each = GroupDurability._write_each
    monkeypatch.setattr(
        GroupDurability, "_write_each", lambda self, batch: batches.append(len(batch)) or write_each(self, batch)
    )
    store = AudioStore(tmp_path / "audio")

    async def three_at_once():
        files = GroupDurability(store, "flac", 2, 1 << 20)
        try:
            return await asyncio.gather(
                files.durable([[b"first"]]), files.durable([[b""]]), files.durable([[b"third"]]), return_exceptions=True
            )
        finally:
            await files.close()

    first, empty, third = asyncio.run(three_at_once())
    assert batches == [3]
    assert isinstance(empty, ValueError) and "empty audio" in str(empty)
    for outcome, data in ((first, b"first"), (third, b"third")):
        assert outcome == [hashlib.sha256(data).hexdigest()]
        assert store.read_bytes(outcome[0], "flac") == data
    assert list(store.temp_dir.iterdir()) == []
