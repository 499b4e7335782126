"""Helpers shared by tests: table writers and the installed console script."""

import contextlib
import json
import os
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

GMMLU_COLUMNS = [
    "sample_id",
    "subject",
    "subject_category",
    "question",
    "option_a",
    "option_b",
    "option_c",
    "option_d",
    "answer",
    "required_knowledge",
    "time_sensitive",
    "reference",
    "culture",
    "region",
    "country",
    "cultural_sensitivity_label",
    "is_annotated",
]


def run_event_loop_until(done, timeout_s: float = 30.0) -> None:
    """Run the UI thread's event loop (idle between events, as in the app) until `done()` holds or `timeout_s`
    passes: the benchmarks' way to wait for a page without sleeping through its events."""
    import time

    from PySide6.QtCore import QEventLoop, QTimer

    loop = QEventLoop()
    check = QTimer(interval=1)
    deadline = time.perf_counter() + timeout_s
    check.timeout.connect(lambda: (done() or time.perf_counter() > deadline) and loop.quit())
    check.start()
    loop.exec()
    check.stop()


def gmmlu_rows(count: int = 3, language_tag: str = "") -> list[dict]:
    rows = []
    for n in range(count):
        rows.append(
            {
                "sample_id": f"subject_{n % 5}/test/{n}",
                "subject": f"subject_{n % 5}",
                "subject_category": "STEM",
                "question": f"{language_tag}Question number {n}?",
                "option_a": f"alpha {n}",
                "option_b": f"beta {n}",
                "option_c": f"gamma {n}",
                "option_d": f"delta {n}",
                "answer": "ABCD"[n % 4],
                "required_knowledge": "[]",
                "time_sensitive": "No",
                "reference": "",
                "culture": "",
                "region": "",
                "country": "",
                "cultural_sensitivity_label": "CS" if n % 2 else "CA",
                "is_annotated": "True",
            }
        )
    return rows


def write_csv(path: Path, rows: list[dict], columns: list[str] | None = None, encoding: str = "utf-8") -> Path:
    import csv

    columns = columns or list(rows[0])
    with open(path, "w", newline="", encoding=encoding) as handle:
        writer = csv.DictWriter(handle, fieldnames=columns, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)
    return path


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


def write_parquet(path: Path, rows: list[dict]) -> Path:
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.Table.from_pylist(rows), path)
    return path


def run_console_script(*args: str, env: dict | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess:
    """The installed `spokenbench` entry point, as users and outside scripts run it."""
    script = Path(sys.executable).with_name("spokenbench")
    return subprocess.run([str(script), *map(str, args)], capture_output=True, text=True, env=env, cwd=cwd, timeout=120)


# --- audio -------------------------------------------------------------------------------------------------

AUDIO_RATE = 16_000


def tone(frequency: float, seconds: float, amplitude: float = 0.5, rate: int = AUDIO_RATE):
    import numpy as np

    t = np.arange(int(seconds * rate)) / rate
    return (amplitude * np.sin(2 * np.pi * frequency * t)).astype(np.float32)


def pitch(samples, rate: int = AUDIO_RATE) -> float:
    """Fundamental frequency by autocorrelation, 60–500 Hz."""
    import numpy as np

    x = samples[: rate // 4] - samples[: rate // 4].mean()
    ac = np.correlate(x, x, "full")[len(x) - 1 :]
    low, high = rate // 500, rate // 60
    return rate / (low + int(np.argmax(ac[low:high])))


def dominant_frequency(samples, rate: int = AUDIO_RATE) -> float:
    import numpy as np

    spectrum = np.abs(np.fft.rfft(samples * np.hanning(len(samples))))
    return float(np.fft.rfftfreq(len(samples), 1 / rate)[int(np.argmax(spectrum))])


def strip_simulated_qc(project_dir) -> None:
    """Take the demo back to its QC state without transcripts: no simulated ASR transcripts, no screening, no
    ratings, and its rating queue sampled by language alone (24 clips), for tests of what such a project shows and
    of adding transcripts and ratings to it."""
    from spokenbench.core.asr.screening import ensure_screening
    from spokenbench.core.qc.demo import DEMO_QUEUE, DEMO_QUEUE_PER_LANGUAGE
    from spokenbench.core.qc.queues import sample_for_rating
    from spokenbench.core.qc.store import delete_queue, queue_id_by_name
    from spokenbench.core.store import opened

    with opened(project_dir) as project:
        with project.transaction() as conn:
            conn.execute("DELETE FROM ratings")
            conn.execute("DELETE FROM transcripts")
            delete_queue(conn, queue_id_by_name(conn, DEMO_QUEUE))
        ensure_screening(project)
        sample_for_rating(project, DEMO_QUEUE, per_bin=DEMO_QUEUE_PER_LANGUAGE, seed=0)


CONTROL_QUEUE = "controls-demo"


def mark_demo_gold(project) -> list[int]:
    """A coordinator's gold clips on the demo: its first twelve question clips of at least 1 s screened at WER 0."""
    from spokenbench.core.qc.controls import mark_gold

    gold = [row[0] for row in project.conn.execute(
        "SELECT c.id FROM clips c JOIN clip_screening s ON s.clip_id = c.id WHERE s.wer_bin = 0 "
        "AND c.part = 'question' AND c.duration_s >= 1 ORDER BY c.id LIMIT 12")]  # fmt: skip
    mark_gold(project, gold, "coordinator")
    return gold


def rate_control_demo(project_dir, work_dir) -> dict:
    """Issue 24's demo check on a demo project: a coordinator marks twelve WER-0 question clips gold, samples
    queue 'controls-demo' (8 per stratum, seed 0) with 10 hidden controls, and two annotators rate all of it with
    `spokenbench rate --from`: 'careless' says Correct to everything in 1 s, 'attentive' gets every control right
    (Acceptable on every fifth ordinary clip, Correct otherwise) in 4-9 s. Returns the queue's clip ids and which
    are controls."""
    import csv

    from spokenbench.core.cli.main import main as cli_main
    from spokenbench.core.qc.controls import control_clips
    from spokenbench.core.qc.queues import queue_clips, sample_for_rating
    from spokenbench.core.store import opened

    with opened(project_dir) as project:
        mark_demo_gold(project)
        sample_for_rating(project, CONTROL_QUEUE, per_bin=8, seed=0, controls=10)
        queue = [clip.clip_id for clip in queue_clips(project.conn, CONTROL_QUEUE)]
        controls = control_clips(project.conn)
    for annotator in ("careless", "attentive"):
        path = Path(work_dir) / f"{annotator}.csv"
        with open(path, "w", newline="", encoding="utf-8") as handle:
            writer = csv.writer(handle)
            writer.writerow(["clip", "rating", "note", "seconds"])
            for position, clip_id in enumerate(queue, start=1):
                if annotator == "careless":
                    writer.writerow([clip_id, "correct", "", 1])
                else:
                    expected = controls[clip_id].expected if clip_id in controls else None
                    ordinary = "acceptable" if position % 5 == 0 else "correct"
                    writer.writerow([clip_id, expected or ordinary, "", 4 + position % 6])
        code = cli_main(
            ["rate", str(project_dir), "--queue", CONTROL_QUEUE, "--annotator", annotator, "--from", str(path)]
        )
        assert code == 0
    return {"queue": queue, "controls": {c: controls[c] for c in queue if c in controls}}


def as_from_a_terminal() -> None:
    """`preexec_fn` for a command a test stops with Ctrl-C: SIGINT as a terminal's foreground job has it. A test
    run started in the background (a CI job, `cmd &`) inherits SIGINT ignored, and so would the command."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_DFL)


def as_a_background_job() -> None:
    """`preexec_fn` for a command started as a shell starts background jobs: SIGINT ignored."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)


@contextlib.contextmanager
def project_at_schema(path: Path, schema: int):
    """A project created as the code of migration `schema` made it (the later migrations withheld), open in the block
    with an item and its clip 7 in a transaction; the migrations are given back after it (only this helper's own
    patches are undone), so the next open upgrades it."""
    import pytest

    from spokenbench.core.store import Project, database, migrations

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(database, "MIGRATIONS", migrations.MIGRATIONS[:schema])
        patch.setattr(database, "SCHEMA_VERSION", schema)
        patch.setattr("spokenbench.core.store.project.SCHEMA_VERSION", schema)
        with Project.create(path) as old, old.transaction() as conn:
            conn.execute(
                "INSERT INTO items(source, source_id, language, subject, question, answer, created_at) "
                "VALUES ('old', 'o1', 'en', 's', 'q', 'A', 'then')"
            )
            conn.execute(
                "INSERT INTO clips(id, item_id, part, text, language, backend, cache_key, audio_format, status, "
                "created_at) VALUES (7, 1, 'question', 't', 'en', 'b', 'k', 'flac', 'ok', 'then')"
            )
            yield conn


def write_arrow_stream(path, rows):
    """An Arrow IPC stream file, as `datasets` writes its shards."""
    import pyarrow as pa

    table = pa.Table.from_pylist(rows)
    with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return path


def save_to_disk(folder, rows, shards=1):
    """A folder as `Dataset.save_to_disk` writes it: dataset_info.json, state.json and data-*.arrow shards."""
    folder.mkdir(parents=True)
    names = [f"data-{n:05d}-of-{shards:05d}.arrow" for n in range(shards)]
    for n, name in enumerate(names):
        write_arrow_stream(folder / name, rows[n::shards])
    (folder / "dataset_info.json").write_text(json.dumps({"features": {}, "splits": {}}), encoding="utf-8")
    state = {"_data_files": [{"filename": name} for name in names], "_fingerprint": "abc", "_split": "test"}
    (folder / "state.json").write_text(json.dumps(state), encoding="utf-8")
    return folder


def silence_flac_bytes(seconds: int, rate: int) -> bytes:
    """`seconds` of 16-bit silence as FLAC: ~1,300 times smaller than its samples."""
    import io

    import numpy as np
    import soundfile

    buffer = io.BytesIO()
    with soundfile.SoundFile(buffer, "w", samplerate=rate, channels=1, format="FLAC", subtype="PCM_16") as handle:
        minute = np.zeros(rate * 60, dtype=np.int16)
        for _ in range(seconds // 60):
            handle.write(minute)
        handle.write(np.zeros(rate * (seconds % 60), dtype=np.int16))
    return buffer.getvalue()


def silence_bomb_clip(project_folder: Path, hours: float = 4) -> int:
    """Replace demo/001's American male English question clip with `hours` of silence as FLAC (a 1 MB file for 4
    hours at 22,050 Hz), content-addressed like any clip: a decompression bomb in a shared project. Its clip id."""
    import hashlib
    import sqlite3

    with contextlib.closing(sqlite3.connect(project_folder / "project.sqlite")) as conn:
        clip_id, rate = conn.execute(
            "SELECT c.id, c.sample_rate FROM clips c JOIN items i ON i.id = c.item_id WHERE i.source_id = 'demo/001' "
            "AND c.part = 'question' AND c.accent = 'american' AND c.voice = 'espeak-male' AND c.language = 'en'"
        ).fetchone()
        data = silence_flac_bytes(int(hours * 3600), rate)
        sha = hashlib.sha256(data).hexdigest()
        (project_folder / "audio" / sha[:2]).mkdir(exist_ok=True)
        (project_folder / "audio" / sha[:2] / f"{sha}.flac").write_bytes(data)
        with conn:
            conn.execute("UPDATE clips SET sha256 = ?, audio_format = 'flac' WHERE id = ?", (sha, clip_id))
    return clip_id


def physics_items(count: int, prefix: str) -> list[dict]:
    """`count` multiple-choice items (ids PREFIX1…), each a unit conversion with A right: the rewrite tests' and
    benchmarks' items."""
    return [
        {
            "id": f"{prefix}{n}",
            "language": "en",
            "subject": "high_school_physics",
            "question": f"What is {n} m/s in km/h?",
            "options": [f"{n} km/h", f"{2 * n} km/h", f"{3 * n} km/h", f"{4 * n} km/h"],
            "answer": "A",
        }
        for n in range(1, count + 1)
    ]


def entered_or_skipped(stack: contextlib.ExitStack, made):
    """A fixture's file system (`tmpfs`, `no_shared_memory_file_system`, `usb_stick`) entered on `stack`, or the
    test skipped with why it cannot be made here (no root, a tool not installed). Only making it may skip: a
    failure in the test is never a reason to."""
    import pytest

    try:
        return stack.enter_context(made)
    except OSError as error:
        pytest.skip(str(error))


@contextlib.contextmanager
def tmpfs(folder: Path, size: str = "100m"):
    """A small disk: a tmpfs of `size` mounted at `folder` (made) for the block, unmounted after. OSError where
    this process cannot mount one (not root, or without CAP_SYS_ADMIN)."""
    folder.mkdir(parents=True, exist_ok=True)
    made = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)], capture_output=True)
    if made.returncode != 0:
        raise OSError(f"cannot mount a tmpfs at {folder}: {made.stderr.decode(errors='replace').strip()}")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=False)


@contextlib.contextmanager
def no_shared_memory_file_system(folder: Path):
    """A folder where SQLite's WAL cannot work: `backing` seen through bindfs with FUSE's direct I/O, which maps no
    file shared (SQLITE_IOERR_SHMMAP), as on WSL's Windows drives or sshfs -o direct_io. Yields the mount point;
    OSError where it cannot be mounted (no bindfs, no /dev/fuse, not root)."""
    import shutil

    backing, mounted = folder / "backing", folder / "mounted"
    backing.mkdir(parents=True, exist_ok=True)
    mounted.mkdir(exist_ok=True)
    if shutil.which("bindfs") is None:
        raise OSError("bindfs is not installed (apt-get install bindfs)")
    made = subprocess.run(["bindfs", "-o", "direct_io", str(backing), str(mounted)], capture_output=True)
    if made.returncode != 0:
        raise OSError(f"cannot mount bindfs at {mounted}: {made.stderr.decode(errors='replace').strip()}")
    try:
        yield mounted
    finally:
        subprocess.run(["umount", "-l", str(mounted)], check=False, capture_output=True)


class UsbStick:
    """An exFAT file system on a loop device, mounted through exfat-fuse as a USB stick is on many desktops, that
    can be pulled out (its FUSE process killed: every file open on it then fails with ENOTCONN, as when the stick
    is removed) and put back (mounted again at the same place). Needs root, losetup and `apt-get install
    exfatprogs exfat-fuse`; OSError otherwise."""

    def __init__(self, folder: Path, size_mb: int = 256):
        import shutil

        for tool in ("losetup", "mkfs.exfat", "mount.exfat-fuse"):
            if shutil.which(tool) is None:
                raise OSError(f"{tool} is not installed (apt-get install exfatprogs exfat-fuse)")
        folder.mkdir(parents=True, exist_ok=True)
        self.image, self.mounted = folder / "stick.img", folder / "stick"
        self.mounted.mkdir(exist_ok=True)
        with open(self.image, "wb") as image:
            image.truncate(size_mb << 20)
        self._run("mkfs.exfat", str(self.image))
        self.devices: list[str] = []
        self.plug_in()

    @staticmethod
    def _run(*command: str) -> str:
        done = subprocess.run(command, capture_output=True, text=True)
        if done.returncode != 0:
            raise OSError(f"{' '.join(command)}: {done.stderr.strip() or done.stdout.strip()}")
        return done.stdout

    def plug_in(self) -> None:
        """A new device each time, as a stick put back gets one (the old one stays claimed while a process still
        has a file of the pulled stick open)."""
        self.devices.append(self._run("losetup", "--find", "--show", str(self.image)).strip())
        self._run("mount.exfat-fuse", self.devices[-1], str(self.mounted))
        self._wait_until(mounted=True)

    def pull_out(self) -> None:
        pattern = f"mount.exfat-fuse {self.devices[-1]} "
        found = subprocess.run(["pgrep", "-f", pattern], capture_output=True, text=True)
        if not found.stdout.split():
            raise OSError(f"no exfat-fuse process serves {self.devices[-1]}")
        for pid in found.stdout.split():
            subprocess.run(["kill", "-9", pid], check=False)
        time.sleep(0.3)
        subprocess.run(["umount", "-l", str(self.mounted)], check=False, capture_output=True)
        self._wait_until(mounted=False)

    def _wait_until(self, mounted: bool) -> None:
        for _ in range(50):
            if (subprocess.run(["mountpoint", "-q", str(self.mounted)]).returncode == 0) == mounted:
                return
            time.sleep(0.1)
        raise OSError(f"{self.mounted} is {'not ' if mounted else ''}mounted after 5 s")

    def close(self) -> None:
        subprocess.run(["umount", "-l", str(self.mounted)], check=False, capture_output=True)
        for device in self.devices:  # a device still claimed is detached once its last user lets it go
            subprocess.run(["losetup", "-d", device], check=False, capture_output=True)


@contextlib.contextmanager
def usb_stick(folder: Path, size_mb: int = 256):
    stick = UsbStick(folder, size_mb)
    try:
        yield stick
    finally:
        stick.close()


def fill_disk(folder: Path) -> Path:
    """A file written in `folder` until its file system has not a byte left (the last block partly); returns it."""
    filler = folder / "filler"
    with open(filler, "wb", buffering=0) as handle:
        for block in (1 << 20, 4096, 1):
            with contextlib.suppress(OSError):
                while True:
                    handle.write(b"\0" * block)
    return filler


def import_in_bounded_memory(
    folder: Path, table: Path, format_name: str, address_space: int, timeout: float = 300
) -> subprocess.CompletedProcess:
    """A fresh project in `folder`, then `spokenbench import FOLDER TABLE --format F --language en` in a child
    process whose address space is limited to `address_space` bytes (RLIMIT_AS): what a file from others costs,
    measured where too much memory ends in a MemoryError rather than the machine's OOM killer."""
    import resource

    def limit_memory():
        resource.setrlimit(resource.RLIMIT_AS, (address_space, address_space))

    cli = [sys.executable, "-m", "spokenbench.core.cli.main"]
    assert subprocess.run([*cli, "init", str(folder)], capture_output=True).returncode == 0
    return subprocess.run(
        [*cli, "import", str(folder), str(table), "--format", format_name, "--language", "en"],
        capture_output=True, text=True, timeout=timeout, preexec_fn=limit_memory,
    )  # fmt: skip


@contextlib.contextmanager
def read_only_copy(source: Path):
    """A copy of `source` (a project folder, or any file) in a folder this process cannot write: a tmpfs remounted
    read-only when running as root (root ignores permissions), the copy's write bits removed otherwise."""
    import pytest

    base = Path("/tmp") / f"spokenbench-ro-{uuid.uuid4().hex[:8]}"
    base.mkdir()
    mounted = False
    try:
        if os.geteuid() == 0:
            if subprocess.run(["mount", "-t", "tmpfs", "none", str(base)], capture_output=True).returncode != 0:
                pytest.skip("cannot mount a tmpfs here to make a read-only file system")
            mounted = True
        copy = base / ("project" if source.is_dir() else source.name)
        if source.is_dir():
            from demo_copies import project_copy  # the shared demo may be open meanwhile: its database's snapshot

            project_copy(source, copy)
        else:
            shutil.copy2(source, copy)
        if mounted:
            subprocess.run(["mount", "-o", "remount,ro", str(base)], check=True)
        else:  # the folder holding the copy too: nothing can be made beside it
            for path in [*copy.rglob("*"), copy, base]:
                path.chmod(path.stat().st_mode & ~0o222)
        yield copy
    finally:
        if mounted:
            subprocess.run(["umount", str(base)], check=False)
        else:
            for path in [base, *base.rglob("*")]:
                with contextlib.suppress(OSError):
                    path.chmod(path.stat().st_mode | 0o200)
        shutil.rmtree(base, ignore_errors=True)


HOLDER = (  # holds the write lock until a line comes on stdin, then commits and exits
    "import sqlite3, sys; conn = sqlite3.connect(sys.argv[1], isolation_level=None); "
    "conn.execute('BEGIN IMMEDIATE'); conn.execute('UPDATE project_meta SET value = value'); "
    "print('holding', flush=True); sys.stdin.readline(); conn.execute('COMMIT')"
)


def hold_write_lock(project: Path) -> subprocess.Popen:
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(project / "project.sqlite")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdout.readline().strip() == "holding"
    return holder


def let_go(holder: subprocess.Popen) -> None:
    holder.stdin.write("\n")
    holder.stdin.flush()
    assert holder.wait(10) == 0


@contextlib.contextmanager
def write_lock_held(project: Path):
    """Another process holding the project's write lock for the block (let go at its end, if not already)."""
    holder = hold_write_lock(project)
    try:
        yield holder
    finally:
        if holder.poll() is None:
            let_go(holder)


def overlapping(widgets) -> list[tuple[str, str]]:
    """The pairs of `widgets` (buttons: their texts) drawn over each other, in their window's coordinates."""
    from PySide6.QtCore import QPoint, QRect

    places = [(widget.text(), QRect(widget.mapTo(widget.window(), QPoint(0, 0)), widget.size())) for widget in widgets]
    return [
        (one, other)
        for index, (one, place) in enumerate(places)
        for other, shape in places[index + 1 :]
        if place.intersects(shape)
    ]
