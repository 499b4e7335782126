"""Whether a second process would get a core of its own (`foundation.processes.a_core_is_free`): the 1-minute load
average lags behind a machine whose work just ended, so the threads running now count too (issue 28, round 7)."""

import os

import pytest

from spokenbench.core.foundation import processes


@pytest.fixture
def two_cores(monkeypatch):
    monkeypatch.setattr(processes, "usable_cores", lambda: 2)


def machine(monkeypatch, load_average: float, running_now: int | None) -> None:
    monkeypatch.setattr(os, "getloadavg", lambda: (load_average, load_average, load_average))
    monkeypatch.setattr(processes, "threads_running_now", lambda: running_now)


@pytest.mark.parametrize(
    ("load_average", "running_now", "free"),
    [
        (1.6, 0, True),  # the previous file's minute still in the average; nothing else runs now
        (1.6, 1, True),  # one other thread: the second core is idle
        (1.6, 2, False),  # busy now and over the last minute
        (0.2, 5, True),  # a moment's burst on a calm machine: the average says calm
        (4.5, None, False),  # no count of threads now (not Linux): the average alone
        (0.5, None, True),
    ],
)
def test_a_core_is_free_when_either_the_average_or_the_threads_running_now_leave_one_idle(
    monkeypatch, two_cores, load_average, running_now, free
):
    machine(monkeypatch, load_average, running_now)
    assert processes.a_core_is_free() is free


def test_one_core_is_never_free(monkeypatch):
    monkeypatch.setattr(processes, "usable_cores", lambda: 1)
    machine(monkeypatch, 0.0, 0)
    assert processes.a_core_is_free() is False


def test_the_threads_running_now_are_read_from_loadavg_without_the_reading_thread(monkeypatch, tmp_path):
    loadavg = tmp_path / "loadavg"
    loadavg.write_text("1.52 1.20 0.98 3/467 12345\n")
    monkeypatch.setattr(processes, "LOADAVG_FILE", str(loadavg))
    assert processes.threads_running_now() == 2


@pytest.mark.parametrize("text", ["", "1.0 1.0 1.0\n", "1.0 1.0 1.0 x/467 1\n"])
def test_an_unreadable_or_unexpected_loadavg_means_the_average_alone(monkeypatch, tmp_path, text):
    loadavg = tmp_path / "loadavg"
    loadavg.write_text(text)
    monkeypatch.setattr(processes, "LOADAVG_FILE", str(loadavg))
    assert processes.threads_running_now() is None
    monkeypatch.setattr(processes, "LOADAVG_FILE", str(tmp_path / "missing"))
    assert processes.threads_running_now() is None


@pytest.mark.skipif(not os.path.exists("/proc/loadavg"), reason="Linux only")
def test_this_machine_tells_a_count():
    running = processes.threads_running_now()
    assert running is not None and running >= 0
