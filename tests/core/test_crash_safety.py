"""SIGKILL at the worst moments: the project must open afterwards and hold all or nothing of what was
in flight, and never a half-written audio file."""

import os
import signal
import subprocess
import sys
import textwrap

import pytest
from support import gmmlu_rows, write_csv

from spokenbench.core.store import Project

IMPORT_AND_SIGNAL = textwrap.dedent(
    """
    import sys
    from spokenbench.core.importers import import_files
    from spokenbench.core.foundation.progress import Progress
    from spokenbench.core.store import Project

    def report(done, total, message):
        if message.startswith("writing") and done >= {kill_after}:
            print("MID-TRANSACTION", flush=True)
            sys.stdin.readline()  # wait here, inside the open transaction, until killed

    with Project.open(sys.argv[1]) as project:
        import_files(project, [sys.argv[2]], "gmmlu-lite", progress=Progress(report))
    print("DONE", flush=True)
    """
)


def run_until_marker(script: str, *args, marker: str) -> subprocess.Popen:
    process = subprocess.Popen(
        [sys.executable, "-c", script, *map(str, args)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    line = process.stdout.readline()
    assert line.strip() == marker, process.stderr.read()
    return process


@pytest.mark.slow
def test_sigkill_in_the_middle_of_a_large_import_keeps_nothing_from_it(tmp_path):
    Project.create(tmp_path / "p").close()
    earlier = write_csv(tmp_path / "ko.csv", gmmlu_rows(10))
    with Project.open(tmp_path / "p") as project:
        from spokenbench.core.importers import import_files

        import_files(project, [earlier], "gmmlu-lite")  # reported saved before the crash
    large = write_csv(tmp_path / "en.csv", gmmlu_rows(20_000))
    process = run_until_marker(
        IMPORT_AND_SIGNAL.format(kill_after=5_000), tmp_path / "p", large, marker="MID-TRANSACTION"
    )
    os.kill(process.pid, signal.SIGKILL)
    process.wait(10)
    assert process.returncode == -signal.SIGKILL
    with Project.open(tmp_path / "p") as project:
        conn = project.conn
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        by_language = dict(conn.execute("SELECT language, count(*) FROM items GROUP BY 1").fetchall())
        assert by_language == {"ko": 10}, "the killed import must leave nothing; the earlier one everything"
        assert conn.execute("SELECT count(*) FROM options").fetchone()[0] == 40
        assert conn.execute("SELECT count(*) FROM imports").fetchone()[0] == 1


@pytest.mark.slow
@pytest.mark.parametrize("delay_s", [0.05, 0.3, 0.8])
def test_sigkill_at_any_moment_leaves_all_or_nothing(tmp_path, delay_s):
    Project.create(tmp_path / "p").close()
    large = write_csv(tmp_path / "en.csv", gmmlu_rows(8_000))
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "spokenbench.core.cli.main",
            "import",
            str(tmp_path / "p"),
            str(large),
            "--format",
            "gmmlu-lite",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        process.wait(delay_s)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(10)
    with Project.open(tmp_path / "p") as project:
        assert project.conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        items = project.conn.execute("SELECT count(*) FROM items").fetchone()[0]
        options = project.conn.execute("SELECT count(*) FROM options").fetchone()[0]
    assert (items, options) in ((0, 0), (8_000, 32_000))


WRITE_AUDIO_AND_SIGNAL = textwrap.dedent(
    """
    import os, sys
    from spokenbench.core.store.audio_files import AudioStore

    store = AudioStore(sys.argv[1])
    real_replace = os.replace

    def paused_replace(src, dst):
        print("WRITTEN-NOT-RENAMED", flush=True)
        sys.stdin.readline()
        real_replace(src, dst)

    os.replace = paused_replace
    store.put_bytes(os.urandom(2_000_000), "wav")
    """
)


def test_sigkill_while_storing_audio_never_leaves_a_partial_file(tmp_path):
    Project.create(tmp_path / "p").close()
    process = run_until_marker(WRITE_AUDIO_AND_SIGNAL, tmp_path / "p" / "audio", marker="WRITTEN-NOT-RENAMED")
    os.kill(process.pid, signal.SIGKILL)
    process.wait(10)
    stored = [p for p in (tmp_path / "p" / "audio").rglob("*.wav")]
    assert stored == []
    with Project.open(tmp_path / "p"):
        pass
    assert list((tmp_path / "p" / "audio" / ".incoming").iterdir()) == []
