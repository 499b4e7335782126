"""The real app on two real X screens (tests/real_device.TwoMonitorDesktop: Xorg's dummy driver, a laptop's
1280x720 and a 1400x900 monitor to its right, as Qt sees RandR monitors): the window remembered on the monitor
opens there, and when the monitor is unplugged it comes back onto the laptop's screen by itself, within 3 s; the
geometry remembered at Ctrl+Q is the laptop's. No window manager, so only the app moves it (before: it stayed
where the monitor had been, the screen black). Slow; skipped where Xorg's dummy driver is not installed or not
root (apt-get install xserver-xorg-core xserver-xorg-video-dummy x11-xserver-utils)."""

import os
import shutil
import time
from pathlib import Path

import pytest
from real_device import TwoMonitorDesktop, app_on, app_window, frame_inside

DUMMY_DRIVER = Path("/usr/lib/xorg/modules/drivers/dummy_drv.so")


@pytest.mark.slow
def test_a_window_on_a_monitor_unplugged_comes_back_onto_the_laptops_screen(built_demo, tmp_path, monkeypatch):
    if os.geteuid() != 0 or not DUMMY_DRIVER.exists() or not all(map(shutil.which, ("Xorg", "xrandr", "xdotool"))):
        pytest.skip("needs root, Xorg's dummy driver, xrandr and xdotool")
    monkeypatch.delenv("SPOKENBENCH_WALK_WM", raising=False)
    settings = tmp_path / "config" / "SpokenBench" / "SpokenBench Studio.conf"
    settings.parent.mkdir(parents=True)
    settings.write_text("[window]\ngeometry=1400, 60, 1250, 780\nmaximized=false\n")
    with TwoMonitorDesktop(tmp_path / "desktop", panel=0) as desktop:
        laptop = (0, 0, *desktop.laptop)
        with app_on(desktop, built_demo, tmp_path, fresh=False) as app:
            window = app_window(desktop, app)
            time.sleep(3.0)
            assert desktop.frame(window)[0] >= desktop.laptop[0], "the window did not open on the monitor"
            desktop.unplug()
            deadline = time.monotonic() + 3.0
            while not frame_inside(desktop.frame(window), laptop) and time.monotonic() < deadline:
                time.sleep(0.1)
            assert frame_inside(desktop.frame(window), laptop), desktop.frame(window)
            desktop.xdotool("windowfocus", window)
            desktop.xdotool("key", "ctrl+q")
            app.wait(30)
    remembered = next(line for line in settings.read_text().splitlines() if line.startswith("geometry="))
    x, y, width, height = (int(value) for value in remembered.split("=")[1].split(","))
    assert x + width <= desktop.laptop[0] and y + height <= desktop.laptop[1], remembered
