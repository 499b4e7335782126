"""Chinese and Korean typed into the real app through the desktop's input method, as the benchmark's zh and ko
annotators type their notes and edits: `spokenbench-studio` on a real X server with a session bus and Fcitx 5
(pinyin) or IBus (Hangul) started here, driven by xdotool's keys (tests/real_device.py).

PySide6's Qt carries IBus's plugin only. Under Fcitx 5, whose environment says QT_IM_MODULE=fcitx, every key
reached the app as a Latin letter: the note typed as 你好 was stored as "nihao" (app/input_methods.py). Under
IBus, Korean's last syllable, still composing when Enter or Ctrl+Enter is pressed, is kept. Slow (about 30 s
each); skipped where the input method, Xvfb, xfwm4 or xdotool cannot be installed."""

from __future__ import annotations

import pytest
from real_device import (
    missing_input_method,
    missing_tools,
    missing_window_manager,
    stored_edits,
    stored_notes,
    typed_session,
)

pytestmark = pytest.mark.slow


def typed(demo_copy, tmp_path, kind: str, keys: list[str], env: dict[str, str] | None = None) -> None:
    """`keys` typed into the app under the input method `kind` (tests/real_device.py's `typed_session`, its
    variables changed by `env`); skipped where the desktop or the input method cannot be installed."""
    problem = missing_tools() or missing_window_manager() or missing_input_method(kind)
    if problem:
        pytest.skip(f"a real desktop with {kind} is needed: {problem}")
    figures = typed_session(demo_copy, tmp_path, kind, keys, env=env)
    assert not (figures.froze or figures.died), "\n".join(figures.lines())


def test_a_chinese_note_typed_through_fcitx5_is_stored_in_chinese(demo_copy, tmp_path):
    """N opens the note; Ctrl+Space turns pinyin on; 'nihao' and Space choose 你好; Enter keeps the note and 1
    rates the clip with it."""
    keys = ["n", "ctrl+space", *"nihao", "space", "Return", "1"]
    typed(demo_copy, tmp_path, "fcitx5", keys)
    assert stored_notes(demo_copy) == ["你好"]


def test_a_chinese_edit_typed_through_fcitx5_is_stored_in_chinese(demo_copy, tmp_path):
    """Ctrl+2 opens the review; E edits the first rewrite; its text is replaced by 你好 and Ctrl+Enter saves it."""
    keys = ["ctrl+2", "e", "ctrl+a", "BackSpace", "ctrl+space", *"nihao", "space", "ctrl+Return"]
    typed(demo_copy, tmp_path, "fcitx5", keys)
    assert stored_edits(demo_copy) == ["你好"]


def test_korean_typed_through_ibus_is_stored_whole_when_enter_closes_the_last_syllable(demo_copy, tmp_path):
    """IBus's Hangul engine (Shift+Space): the edit 한글 saved by Ctrl+Enter and the note 한글 kept by Enter, each
    while its last syllable 글 is still composing; then 1 rates the clip with the note. It passed before the app
    chose input methods too: it guards IBus itself (Qt's own plugin), which the app must not lose."""
    hangeul = ["g", "k", "s", "r", "m", "f"]  # 한글 on the Korean two-set layout
    keys = ["ctrl+2", "e", "ctrl+a", "BackSpace", "shift+space", *hangeul, "ctrl+Return"]
    keys += ["ctrl+3", "n", *hangeul, "Return", "1"]  # the Hangul mode stays on for the app's input context
    typed(demo_copy, tmp_path, "ibus", keys)
    assert stored_edits(demo_copy) == ["한글"]
    assert stored_notes(demo_copy) == ["한글"]


def test_korean_typed_through_ibus_named_by_xmodifiers_only_is_stored_in_korean(demo_copy, tmp_path):
    """A login that names IBus in XMODIFIERS=@im=ibus alone (QT_IM_MODULE empty): Qt 6 on X11 took its dead-key
    plugin, and the edit was saved as the Latin 'gksrmf'; the app asks Qt for IBus."""
    keys = ["ctrl+2", "e", "ctrl+a", "BackSpace", "shift+space", "g", "k", "s", "r", "m", "f", "ctrl+Return"]
    typed(demo_copy, tmp_path, "ibus", keys, env={"QT_IM_MODULE": ""})
    assert stored_edits(demo_copy) == ["한글"]
