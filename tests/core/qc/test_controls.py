"""Hidden control clips: the corruptions measure what docs/qc.md says they do, `sample --controls` mixes them in
at seeded positions as ordinary clips rows, gold marking, and controls kept out of screening, sampling, evaluation,
exports and Table 3."""

import numpy as np
import pytest
from qc_support import speechlike
from support import dominant_frequency, tone

from spokenbench.core.asr.store import clips_to_transcribe, screenable_clips
from spokenbench.core.audio import dsp
from spokenbench.core.audio.io import decode_audio
from spokenbench.core.audio.store import good_clips_for_assembly, voice_inventory
from spokenbench.core.qc import controls
from spokenbench.core.qc.queues import queue_clips, rate_clip, sample_for_rating
from spokenbench.core.qc.ratings import rating_results
from spokenbench.core.qc.store import sampleable_clips
from spokenbench.core.store.export_queries import ratings_table

RATE = 16_000
PARTS = ("question", "option_A", "option_B", "option_C", "option_D")


def test_truncation_cuts_at_a_loud_frame_in_the_middle_of_the_clip():
    samples = speechlike()
    cut, parameters = controls.truncate(samples, RATE)
    assert controls.TRUNCATE_WINDOW[0] <= len(cut) / len(samples) <= controls.TRUNCATE_WINDOW[1] + 0.01
    assert parameters["kept_share"] == pytest.approx(len(cut) / len(samples), abs=0.001)
    frame = samples[len(cut) - 160 : len(cut) + 160]  # 20 ms around the cut: speech, not a pause
    assert dsp.speech_level_db(frame, RATE) > dsp.speech_level_db(samples, RATE) - 3
    assert all(not (start <= len(cut) < end) for start, end in dsp.find_pauses(samples, RATE))
    assert abs(cut[-1]) < 1e-3  # faded, no click


def test_noise_is_at_the_documented_snr_and_the_clip_keeps_its_loudness():
    clean = tone(300, 2.0, 0.3, RATE)
    noisy, parameters = controls.corrupt(clean, RATE, "noise", "seed")
    assert parameters["snr_db"] == controls.NOISE_SNR_DB == -5.0
    gain = float(np.dot(noisy, clean) / np.dot(clean, clean))
    residual = noisy - gain * clean
    snr = 10 * np.log10(np.mean((gain * clean) ** 2) / np.mean(residual**2))
    assert snr == pytest.approx(controls.NOISE_SNR_DB, abs=0.5)
    assert dsp.speech_level_db(noisy, RATE) == pytest.approx(dsp.speech_level_db(clean, RATE), abs=1.0)
    assert np.max(np.abs(noisy)) < 1.0


def test_wrong_speed_is_faster_by_the_factor_with_the_pitch_kept():
    clean = tone(220, 2.0, 0.3, RATE)
    fast, parameters = controls.corrupt(clean, RATE, "speed", "seed")
    assert parameters == {"tempo": controls.SPEED_FACTOR, "pitch_kept": True}
    assert len(fast) / len(clean) == pytest.approx(1 / controls.SPEED_FACTOR, abs=0.01)
    assert dominant_frequency(fast, RATE) == pytest.approx(220, abs=10)


def test_sample_mixes_in_controls_at_seeded_positions_as_ordinary_clips(qc_project, speech_clips):
    outcome = sample_for_rating(qc_project, "c", per_bin=3, seed=5, controls=4)
    assert outcome.created and outcome.controls == 4
    queue = queue_clips(qc_project.conn, "c")
    known = controls.control_clips(qc_project.conn)
    assert len(queue) == 7 and sum(c.clip_id in known for c in queue) == 4
    assert {k.kind for k in known.values()} == set(controls.CORRUPTIONS)  # no known-good clip yet: all corrupted
    assert {k.expected for k in known.values()} == {"incorrect"}
    sampled = {(c.item, c.part) for c in queue if c.clip_id not in known}
    for clip in queue:
        if clip.clip_id in known:
            assert (clip.item, clip.part) not in sampled  # no text repeated beside a sampled clip
            assert clip.audio_format == "wav" and len(clip.sha256) == 64
            audio = decode_audio(qc_project.audio.read_bytes(clip.sha256, "wav"), "control")
            assert dsp.speech_level_db(audio.samples, audio.rate) > -40  # never silent
    # the same seed again: the same queue, nothing new made
    again = sample_for_rating(qc_project, "c", per_bin=3, seed=5, controls=4)
    assert not again.created and len(controls.control_clips(qc_project.conn)) == 4
    # the positions come from the seed
    sample_for_rating(qc_project, "d", per_bin=3, seed=5, controls=4)
    positions = [[i for i, c in enumerate(queue_clips(qc_project.conn, name)) if c.clip_id in
                  controls.control_clips(qc_project.conn)] for name in ("c", "d")]  # fmt: skip
    assert positions[0] == positions[1]


def test_controls_stay_out_of_screening_sampling_evaluation_exports_and_table3(qc_project, speech_clips):
    sample_for_rating(qc_project, "c", per_bin=3, seed=5, controls=4)
    known = set(controls.control_clips(qc_project.conn))
    conn = qc_project.conn
    assert not known & {row[0] for row in sampleable_clips(conn)}
    assert not known & set(screenable_clips(conn))
    assert known <= {row[0] for row in clips_to_transcribe(conn, None, False)}  # transcribed, never screened
    assert len(good_clips_for_assembly(conn)) == len(speech_clips)
    assert sum(row[4] for row in voice_inventory(conn)) == len(speech_clips)
    for clip in queue_clips(conn, "c"):
        rate_clip(qc_project, clip.clip_id, "ana", "correct", queue="c")
    assert rating_results(conn, "c")["ratings"] == 3  # the three sampled clips only
    assert rating_results(conn)["rated_clips"] == 3
    assert not known & set(ratings_table(conn)["clip_id"])


def test_known_good_controls_copy_gold_clips(cli, qc_project, speech_clips):
    gold = speech_clips[-4:]  # q3's option_C / option_D clips: never the sampled question clips
    result = cli("gold", qc_project.path, *[a for c in gold for a in ("--clip", c)], "--by", "coordinator")
    assert result.code == 0 and "marked 4" in result.out
    assert cli("gold", qc_project.path, "--json").json()["gold"][0]["clip_id"] == gold[0]
    sample_for_rating(qc_project, "c", per_bin=3, seed=1, controls=4)
    known = controls.control_clips(qc_project.conn)
    kinds = sorted(k.kind for k in known.values())
    assert kinds.count("gold") == 2 and {known[c].expected for c in known if known[c].kind == "gold"} == {"correct"}
    copies = qc_project.conn.execute(
        "SELECT c.sha256, s.sha256 FROM control_clips k JOIN clips c ON c.id = k.clip_id "
        "JOIN clips s ON s.id = k.source_clip_id WHERE k.kind = 'gold'"
    ).fetchall()
    assert all(a == b for a, b in copies)  # the same audio file, content-addressed


def test_gold_refuses_unknown_clips_and_a_missing_coordinator(cli, qc_project, speech_clips):
    result = cli("gold", qc_project.path, "--clip", 999_999, "--by", "c")
    assert result.code == 2 and "no clip 999999" in result.err
    result = cli("gold", qc_project.path, "--clip", speech_clips[0])
    assert result.code == 2 and "--by" in result.err
    assert cli("gold", qc_project.path, "--json").json()["gold"] == []


def test_too_many_controls_is_refused_and_nothing_is_stored(cli, qc_project, speech_clips):
    result = cli("sample", qc_project.path, "--name", "c", "--per-bin", "3", "--controls", "40")
    assert result.code == 2 and "controls can be made" in result.err and "Traceback" not in result.err
    assert qc_project.conn.execute("SELECT count(*) FROM rating_queues").fetchone()[0] == 0
    assert controls.control_clips(qc_project.conn) == {}


def test_sample_cli_reports_the_controls(cli, qc_project, speech_clips):
    body = cli("sample", qc_project.path, "--name", "c", "--per-bin", "3", "--controls", "2", "--json").json()
    assert body["controls"] == 2 and body["sampled_clips"] == 3 and body["clips"] == 5


def test_a_control_with_unchanged_audio_carries_its_transcripts_and_screening_stays_current(qc_project, speech_clips):
    from qc_support import add_transcript

    from spokenbench.core.asr.screening import ensure_screening, screening_is_current, stored_screening_settings

    for clip_id in speech_clips:
        add_transcript(qc_project, clip_id, "asr-a", "heard")
        add_transcript(qc_project, clip_id, "asr-b", "heard")
    ensure_screening(qc_project)
    mark = controls.mark_gold(qc_project, speech_clips[-4:], "coordinator")
    assert mark == 4
    sample_for_rating(qc_project, "c", per_bin=3, seed=1, controls=4)
    known = controls.control_clips(qc_project.conn)
    with_transcripts = {row[0] for row in qc_project.conn.execute("SELECT DISTINCT clip_id FROM transcripts")}
    for clip_id, control in known.items():
        assert (clip_id in with_transcripts) == (control.kind in ("gold", "agreed", "mismatch"))
    assert screening_is_current(qc_project.conn, stored_screening_settings(qc_project.conn))
