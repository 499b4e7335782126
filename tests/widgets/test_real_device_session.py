"""The real app on a real desktop (issue 22): `spokenbench-studio` in an X server (Xvfb) with a PulseAudio
output (a null sink), both started here, driven by the keyboard alone through xdotool as a fast annotator would:
Ctrl+3 opens the Rating page, ↓ chooses the stress queue and Enter starts it, then 200 rounds of ] [ Space R and
a rating key at 50-100 ms intervals. A watchdog fails the test when the event loop stops answering for 2 s or
the process dies; every rating the app acknowledged must be in the database, and PulseAudio must have seen the
app's playback streams (so a sound device was really used). The old QMediaPlayer playback froze here in the
first rounds. Slow (about 1.5 min); skipped only where Xvfb, PulseAudio or xdotool cannot be installed."""

import time
from pathlib import Path

import pytest
from real_device import (
    RealDesktop,
    SessionFigures,
    add_stress_queue,
    app_command,
    close_app,
    launch_rating_session,
    missing_tools,
    run_hung_server_session,
    run_output_outage,
    run_session,
    settle,
    stored_ratings,
)

ROUNDS = 200


def prepared_stress_queue(demo_copy: Path) -> None:
    """The demo copy's stress queue added; the test skipped where no X server or sound server can run."""
    problem = missing_tools()
    if problem:
        pytest.skip(f"a real X server and sound server are needed: {problem}")
    add_stress_queue(demo_copy)


def real_session(run, demo_copy: Path, tmp_path: Path, **options) -> tuple[SessionFigures, str]:
    """`run` (a session of tests/real_device.py) on a fresh desktop over the demo copy's stress queue: its figures
    and the report, printed and given with every failed assertion."""
    prepared_stress_queue(demo_copy)
    with RealDesktop(tmp_path / "desktop") as desktop:
        figures = run(desktop, demo_copy, tmp_path, app_command=app_command(), **options)
    report = "\n".join(figures.lines()) + "\napp output:\n" + (tmp_path / "app.log").read_text(errors="replace")[-3000:]
    print(report)
    return figures, report


@pytest.mark.slow
def test_a_fast_keyboard_session_on_a_real_sound_device_neither_freezes_nor_loses_a_rating(demo_copy, tmp_path):
    figures, report = real_session(run_session, demo_copy, tmp_path, rounds=ROUNDS)
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
    figures, report = real_session(run_output_outage, demo_copy, tmp_path, rounds=20)
    assert not figures.froze and not figures.died and figures.rounds_done == 20, report
    assert figures.exit_code == 0, f"Ctrl+Q did not close the app cleanly\n{report}"
    assert figures.ratings_stored == figures.saves_acknowledged >= 20, report
    assert figures.back_after_s is not None, f"playback did not come back after the restart\n{report}"


@pytest.mark.slow
def test_the_app_started_while_the_sound_server_does_not_answer_opens_rates_and_plays_once_it_does(demo_copy, tmp_path):
    """PulseAudio stopped (SIGSTOP: its socket there, no answer, as a hung server) before the app starts. Before,
    the app's start listed the devices on the UI thread and showed no window for as long as the server did not
    answer (none in 60 s, then SIGKILL), and Ctrl+Q with the server hung mid-clip never ended it (PortAudio's exit
    hook waiting on that server). Now the window opens, the clip is said not playing, ratings are stored, once the
    server goes on Space plays without a restart, and Ctrl+Q ends the app with it hung again."""
    figures, report = real_session(run_hung_server_session, demo_copy, tmp_path, rounds=5)
    assert figures.window_after_s is not None and figures.window_after_s < 15, f"no window\n{report}"
    assert not figures.froze and not figures.died and figures.rounds_done == 5, report
    assert figures.ratings_stored == figures.saves_acknowledged == 6, report  # 5 hung, 1 hung again at the end
    assert figures.back_after_s is not None, f"playback did not come back once the server answered\n{report}"
    assert figures.exit_code == 0 and figures.quit_after_s < 10, f"Ctrl+Q with the server hung\n{report}"


# Keys as a person at a French (AZERTY) or Russian keyboard presses them: xdotool sends the key's own symbol on
# that layout ('ampersand' is the unshifted key labelled 1 on AZERTY, 'Cyrillic_ya' the key at US Z on Russian),
# then what the app did: the annotator's live ratings in the project, and the page shown
FRENCH_STEPS = (
    ("ampersand", 1, "rating"),  # the key labelled 1 (types &): Correct
    ("eacute", 2, "rating"),  # 2 (types é): Acceptable
    ("quotedbl", 3, "rating"),  # 3 (types "): Incorrect
    ("ctrl+z", 2, "rating"),  # AZERTY's own Z, elsewhere than on a US keyboard: Undo
    ("ctrl+ampersand", 2, "items"),  # Ctrl and the key labelled 1: the Items page
    ("ctrl+minus", 2, "evaluate"),  # Ctrl and the key labelled 6 (types -): Evaluate, not View → Smaller text
)
RUSSIAN_STEPS = (
    ("1", 1, "rating"),  # digits are digits on this layout
    ("2", 2, "rating"),
    ("ctrl+Cyrillic_ya", 1, "rating"),  # the key at US Z types я: Undo
)


def wait_until_done(heart, reached, timeout: float = 10) -> None:
    """Until `reached()` holds and the app takes keys again: a heartbeat written after that moment says no save
    or step is in flight (a key pressed during one is ignored by design). A beat from before the key was handled
    says "not busy" too, so only a later one counts."""
    deadline, reached_at = time.monotonic() + timeout, None
    while time.monotonic() < deadline:
        values = heart.read()
        if values is not None and reached():
            reached_at = reached_at or time.monotonic()
            if values[0] > reached_at and not heart.busy:  # the app's monotonic clock is this machine's
                return
        else:
            reached_at = None
        time.sleep(0.05)


@pytest.mark.slow
@pytest.mark.parametrize(("layout", "steps"), [("fr", FRENCH_STEPS), ("ru", RUSSIAN_STEPS)])
def test_rating_keys_work_by_their_place_on_a_french_or_russian_keyboard(demo_copy, tmp_path, layout, steps):
    """An annotator whose keyboard has another layout rates, undoes and changes pages with the keys the help
    names: on AZERTY the digit row types & é " without Shift, on a Russian layout the letter keys type Cyrillic.
    Before, neither rated nor undid (the keys were looked up by what they type only)."""
    prepared_stress_queue(demo_copy)
    figures = SessionFigures(len(steps), round_keys=f"keys of a {layout} keyboard")
    seen = []
    with RealDesktop(tmp_path / "desktop") as desktop:
        desktop.set_layout(layout)
        process, heart, log = launch_rating_session(desktop, demo_copy, tmp_path, figures, app_command())
        try:
            assert process is not None, "\n".join(figures.notes)
            for key, ratings, page in steps:
                desktop.xdotool("key", key)
                wait_until_done(heart, lambda r=ratings, p=page: (stored_ratings(demo_copy), heart.page) == (r, p))
                seen.append((key, stored_ratings(demo_copy), heart.page))
            settle(heart)
        finally:
            close_app(desktop, process, heart, log, figures)
    expected = [(key, ratings, page) for key, ratings, page in steps]
    assert seen == expected, f"(key, live ratings, page) seen {seen}, expected {expected}\n" + "\n".join(
        figures.lines()
    )
    assert figures.exit_code == 0 and not figures.froze and not figures.died, "\n".join(figures.lines())
