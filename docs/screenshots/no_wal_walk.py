"""Screenshots of a rating session on a file system that cannot share SQLite's write-ahead log index, with a CLI
import into the same project running meanwhile, on a real X server with a PulseAudio null sink, driven by keys
alone (tests/real_device.py):

    python docs/screenshots/no_wal_walk.py OUT [--screen 1280x720]

Mounts OUT/fuse/backing at OUT/fuse/mounted through bindfs with FUSE's direct I/O (needs root, bindfs and
/dev/fuse: as on WSL's Windows drives or sshfs -o direct_io, no file can be mapped shared), copies the demo there
(built into OUT/demo, a WAL file) and opens the Rating page on the demo's queue (Ctrl+3, ↓, Enter). It starts
`spokenbench import` of 20,000 questions into the same project, rates five clips with 1, 2, 3, 1, 2 while the
import runs, and takes OUT/no-wal-rating.png (the status bar reads "Rollback journal"); once the import is done it
rates one more with 3 and takes OUT/no-wal-after-import.png. Prints the ratings stored and what the import said. Needs Xvfb, PulseAudio and xdotool (apt-get install xvfb pulseaudio xdotool bindfs)."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests"))
from real_device import demo_in, stored_ratings, walk_arguments, walked_session  # noqa: E402
from support import gmmlu_rows, no_shared_memory_file_system, write_csv  # noqa: E402


def main() -> None:
    out, screen = walk_arguments(__doc__)
    table = write_csv(out / "more-questions.csv", gmmlu_rows(20_000, language_tag="walk"))
    with no_shared_memory_file_system(out / "fuse") as mounted:
        project = Path(shutil.copytree(demo_in(out), mounted / "project"))
        with walked_session(out, screen, project) as (desktop, _process, _figures):
            before = stored_ratings(project)
            started = time.perf_counter()
            importer = subprocess.Popen(
                ["spokenbench", "import", str(project), str(table), "--format", "gmmlu-lite", "--language", "en"],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for key in "12312":
                desktop.xdotool("key", key)
                time.sleep(0.4)
            running = importer.poll() is None
            time.sleep(1.0)
            desktop.screenshot(out / "no-wal-rating.png")
            print(f"ratings stored: {before} before, {stored_ratings(project)} after five keys")
            print(f"the import was {'still running' if running else 'already done'} after the fifth key")
            output, errors = importer.communicate(timeout=300)
            print(f"import exit {importer.returncode} after {time.perf_counter() - started:.1f} s:", output.strip())
            print("import stderr:", errors.strip() or "(nothing)")
            desktop.xdotool("key", "3")
            time.sleep(4.0)
            desktop.screenshot(out / "no-wal-after-import.png")
            print(f"ratings stored after the import and one more key: {stored_ratings(project)}")
    print(out / "no-wal-rating.png")


if __name__ == "__main__":
    main()
