"""Screenshots of Chinese typed into the app through Fcitx 5's pinyin on a real X server (xfwm4), keys only:

    python docs/screenshots/input_method_walk.py OUT [--screen 1280x720]

Builds the demo into OUT/demo, starts Xvfb, PulseAudio, a session bus and Fcitx 5 as an annotator's login does
(QT_IM_MODULE=fcitx; tests/real_device.py), and opens the Rating page on a 260-clip queue. Into OUT:
1-fcitx-note.png (N, Ctrl+Space, 'nihao': the pinyin's candidates under the note), 2-fcitx-noted.png (Space
chose 你好, Enter kept it: the clip's state line shows the note), 3-fcitx-edit.png (Ctrl+2, E: a rewrite edited
to 你好 and 'ma' still composing), 4-fcitx-before.png (the note as the app typed it before, Qt asked for the
fcitx plugin only: 'nihao'), 5-no-input-method.png (QT_IM_MODULE=kime, an input method this Qt cannot reach: the
status bar says so, its tooltip shown by resting the mouse on it), 6-no-portal.png (QT_IM_MODULE=fcitx with no
Fcitx answering on the session bus's IBus portal, as under Fcitx 4: the same, naming fcitx). Needs Xvfb, PulseAudio, xdotool, xfwm4, fcitx5
and fcitx5-chinese-addons, and a Chinese font for the text to be legible (fonts-noto-cjk; without one the app's
status bar says No font and the characters are boxes)."""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests"))
from real_device import (  # noqa: E402
    RealDesktop,
    app_window,
    demo_copy_in,
    missing_input_method,
    missing_window_manager,
    stored_edits,
    stored_notes,
    type_keys,
    typed_session,
    walk_arguments,
)


def walk(out: Path, screen: str, name: str, env: dict[str, str], steps, fcitx: bool = True) -> Path:
    """The app on a fresh copy of the demo under Fcitx 5 (with `fcitx` False, the session bus alone), its variables
    changed by `env`; `steps(desktop, process)` presses keys and takes the screenshots."""
    project = demo_copy_in(out, f"project-{name}")
    kind = "fcitx5" if fcitx else None
    typed_session(project, out / f"work-{name}", kind, [], env=env, steps=steps, screen=screen)
    return project


def main() -> None:
    out, screen = walk_arguments(__doc__)
    problem = missing_window_manager() or missing_input_method("fcitx5")
    if problem:
        raise SystemExit(problem)

    def chinese(desktop: RealDesktop, _process) -> None:
        type_keys(desktop, "n", "ctrl+space", *"nihao")
        desktop.screenshot(out / "1-fcitx-note.png")
        type_keys(desktop, "space", "Return")
        time.sleep(1.0)
        desktop.screenshot(out / "2-fcitx-noted.png")
        type_keys(desktop, "1", "ctrl+2", "e", "ctrl+a", "BackSpace", *"nihao", "space", *"ma")
        desktop.screenshot(out / "3-fcitx-edit.png")
        type_keys(desktop, "space", "ctrl+Return")
        time.sleep(1.0)

    project = walk(out, screen, "fcitx", {}, chinese)
    print(f"under Fcitx 5: notes {stored_notes(project)}, edits {stored_edits(project)}")

    def before(desktop: RealDesktop, _process) -> None:
        type_keys(desktop, "n", "ctrl+space", *"nihao")
        desktop.screenshot(out / "4-fcitx-before.png")
        type_keys(desktop, "Escape")

    walk(out, screen, "before", {"QT_IM_MODULES": "fcitx"}, before)

    def unreachable(shot: str):
        def steps(desktop: RealDesktop, process) -> None:
            x, y, width, height = desktop.frame(app_window(desktop, process))
            # the mouse rests on the label, left of 'Jobs' and 'Audio', for its tooltip (the only step not a key)
            desktop.xdotool("mousemove", "--sync", str(x + width - 230), str(y + height - 14))
            time.sleep(2.5)
            desktop.screenshot(out / shot)

        return steps

    walk(out, screen, "kime", {"QT_IM_MODULE": "kime", "XMODIFIERS": "@im=kime"}, unreachable("5-no-input-method.png"))
    walk(out, screen, "no-portal", {"QT_IM_MODULE": "fcitx"}, unreachable("6-no-portal.png"), fcitx=False)
    print(f"screenshots in {out}")


if __name__ == "__main__":
    main()
