"""The real app on a real desktop (issue 22): `spokenbench-studio` in an X server (Xvfb) with a PulseAudio
output (a null sink), both started here, driven by the keyboard alone through xdotool as a fast annotator would:
Ctrl+3 opens the Rating page, ↓ chooses the stress queue and Enter starts it, then 200 rounds of ] [ Space R and
a rating key at 50-100 ms intervals. A watchdog fails the test when the event loop stops answering for 2 s or
the process dies; every rating the app acknowledged must be in the database, and PulseAudio must have seen the
app's playback streams (so a sound device was really used). The old QMediaPlayer playback froze here in the
first rounds. Slow (about 1.5 min); skipped only where Xvfb, PulseAudio or xdotool cannot be installed."""

import sys
from pathlib import Path

import pytest
from real_device import RealDesktop, add_stress_queue, missing_tools, run_output_outage, run_session

ROUNDS = 200


def app_command() -> list[str]:
    """The installed `spokenbench-studio` of this interpreter's environment."""
    script = Path(sys.executable).parent / "spokenbench-studio"
    return [str(script)] if script.is_file() else [sys.executable, "-m", "spokenbench.app.main"]


@pytest.mark.slow
def test_a_fast_keyboard_session_on_a_real_sound_device_neither_freezes_nor_loses_a_rating(demo_copy, tmp_path):
    problem = missing_tools()
    if problem:
        pytest.skip(f"a real X server and sound server are needed: {problem}")
    add_stress_queue(demo_copy)
    with RealDesktop(tmp_path / "desktop") as desktop:
        figures = run_session(desktop, demo_copy, tmp_path, rounds=ROUNDS, app_command=app_command())
    report = "\n".join(figures.lines()) + "\napp output:\n" + (tmp_path / "app.log").read_text(errors="replace")[-3000:]
    print(report)
    assert not figures.froze, f"the event loop stopped answering for more than 2 s\n{report}"
    assert not figures.died, f"the app died during the session\n{report}"
    assert figures.rounds_done == ROUNDS and figures.longest_gap_s < 2.0, report
    assert figures.exit_code == 0, f"Ctrl+Q did not close the app cleanly\n{report}"
    assert figures.ratings_stored == figures.saves_acknowledged, f"an acknowledged rating is missing\n{report}"
    # a key pressed while a save is in flight is ignored by design (no double rating): nearly every round rates
    assert figures.ratings_stored >= 0.9 * ROUNDS, report
    assert figures.sink_inputs_seen >= 1 and figures.polls_with_stream >= figures.polls // 2, (
        f"PulseAudio never saw the app's playback: no sound device was exercised\n{report}"
    )


@pytest.mark.slow
def test_a_sound_server_killed_mid_session_loses_no_rating_and_playback_comes_back(demo_copy, tmp_path):
    """PulseAudio killed (SIGKILL) under a running session, 20 rounds of Space and a rating key without it, then
    started again: the event loop keeps answering, every acknowledged rating is stored, and Space plays again
    (PulseAudio sees the app's stream) without restarting the app."""
    problem = missing_tools()
    if problem:
        pytest.skip(f"a real X server and sound server are needed: {problem}")
    add_stress_queue(demo_copy)
    with RealDesktop(tmp_path / "desktop") as desktop:
        figures = run_output_outage(desktop, demo_copy, tmp_path, rounds=20, app_command=app_command())
    report = "\n".join(figures.lines()) + "\napp output:\n" + (tmp_path / "app.log").read_text(errors="replace")[-3000:]
    print(report)
    assert not figures.froze and not figures.died and figures.rounds_done == 20, report
    assert figures.exit_code == 0, f"Ctrl+Q did not close the app cleanly\n{report}"
    assert figures.ratings_stored == figures.saves_acknowledged >= 20, report
    assert figures.back_after_s is not None, f"playback did not come back after the restart\n{report}"
