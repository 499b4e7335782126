"""Chinese and Korean typed into the real app through the desktop's input method, as the benchmark's zh and ko
annotators type their notes and edits: `spokenbench-studio` on a real X server with a session bus and Fcitx 5
(pinyin) or IBus (Hangul) started here, driven by xdotool's keys (tests/real_device.py).

PySide6's Qt carries IBus's plugin only. Under Fcitx 5, whose environment says QT_IM_MODULE=fcitx, every key
reached the app as a Latin letter: the note typed as 你好 was stored as "nihao" (app/input_methods.py). Under
IBus, Korean's last syllable, still composing when Enter or Ctrl+Enter is pressed, is kept. Slow (about 30 s
each); skipped where the input method, Xvfb, xfwm4 or xdotool cannot be installed."""

from __future__ import annotations

import time

import pytest
from real_device import (
    RealDesktop,
    SessionFigures,
    add_stress_queue,
    app_command,
    close_app,
    launch_rating_session,
    missing_input_method,
    missing_tools,
    missing_window_manager,
    settle,
    start_input_method,
    stored_edits,
    stored_notes,
)

pytestmark = pytest.mark.slow


def typed_session(demo_copy, tmp_path, kind: str, keys: list[str]) -> SessionFigures:
    """The app on the demo copy's stress queue under the input method `kind`, `keys` pressed one by one (a
    pause after each, as a person types); its figures once it is closed."""
    problem = missing_tools() or missing_window_manager() or missing_input_method(kind)
    if problem:
        pytest.skip(f"a real desktop with {kind} is needed: {problem}")
    add_stress_queue(demo_copy)
    figures = SessionFigures(0)
    # a window manager gives the keyboard back to the window when the note's dialog closes
    with RealDesktop(tmp_path / "desktop", window_manager="xfwm4") as desktop:
        env = start_input_method(desktop, kind, tmp_path / "config")
        process, heart, log = launch_rating_session(desktop, demo_copy, tmp_path, figures, app_command(), env=env)
        assert process is not None, figures.notes
        try:
            for key in keys:
                desktop.xdotool("key", key)
                time.sleep(1.5 if key in ("n", "e", "ctrl+2", "ctrl+3") else 0.25)  # a dialog or page opens
            settle(heart)
        finally:
            close_app(desktop, process, heart, log, figures)
    assert not (figures.froze or figures.died), "\n".join(figures.lines())
    return figures


def test_a_chinese_note_typed_through_fcitx5_is_stored_in_chinese(demo_copy, tmp_path):
    """N opens the note; Ctrl+Space turns pinyin on; 'nihao' and Space choose 你好; Enter keeps the note and 1
    rates the clip with it."""
    keys = ["n", "ctrl+space", *"nihao", "space", "Return", "1"]
    typed_session(demo_copy, tmp_path, "fcitx5", keys)
    assert stored_notes(demo_copy) == ["你好"]


def test_a_chinese_edit_typed_through_fcitx5_is_stored_in_chinese(demo_copy, tmp_path):
    """Ctrl+2 opens the review; E edits the first rewrite; its text is replaced by 你好 and Ctrl+Enter saves it."""
    keys = ["ctrl+2", "e", "ctrl+a", "BackSpace", "ctrl+space", *"nihao", "space", "ctrl+Return"]
    typed_session(demo_copy, tmp_path, "fcitx5", keys)
    assert stored_edits(demo_copy) == ["你好"]


def test_korean_typed_through_ibus_is_stored_whole_when_enter_closes_the_last_syllable(demo_copy, tmp_path):
    """IBus's Hangul engine (Shift+Space): the edit 한글 saved by Ctrl+Enter and the note 한글 kept by Enter, each
    while its last syllable 글 is still composing; then 1 rates the clip with the note. It passed before the app
    chose input methods too: it guards IBus itself (Qt's own plugin), which the app must not lose."""
    hangeul = ["g", "k", "s", "r", "m", "f"]  # 한글 on the Korean two-set layout
    keys = ["ctrl+2", "e", "ctrl+a", "BackSpace", "shift+space", *hangeul, "ctrl+Return"]
    keys += ["ctrl+3", "n", *hangeul, "Return", "1"]  # the Hangul mode stays on for the app's input context
    typed_session(demo_copy, tmp_path, "ibus", keys)
    assert stored_edits(demo_copy) == ["한글"]
    assert stored_notes(demo_copy) == ["한글"]
