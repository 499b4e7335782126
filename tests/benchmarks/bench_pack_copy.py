"""Benchmark (run by hand, prints its figures; not part of the test run): rating a pack from a USB 2 stick in place
against copying it to the annotator's own disk first (what the app offers for a read-only stick), side by side.

    python tests/benchmarks/bench_pack_copy.py [--repeats 3] [--pack PACK]

The stick is `tests/slow_stick.py` (FUSE at a USB 2 stick's pace: 8 MB/s written, 20 MB/s read; needs /dev/fuse,
libfuse2 and fusepy). PACK is a pack of real-length audio; without it, the 112 MB pack of 480 clips that
`docs/screenshots/slow_stick_pack_walk.py` builds (OUT/big/ana.sbpack) is built in a temporary folder first
(~1 min). Each repeat, on a fresh stick holding the pack:
- in place: the first opening (`open_pack`, its folder made on the stick), then one save of one rating into the
  pack (`save_pack_ratings`, the whole zip rewritten on the stick);
- copied: `copy_pack_to` a local folder (the copy, and its folder made there), then the same rating and save on
  the copy. Prints the medians and their ratios."""

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/, for slow_stick.py
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "docs" / "screenshots"))  # the big pack's recipe

from slow_stick import SlowStick, missing

from spokenbench.core.qc.pack_folders import copy_pack_to, open_pack, save_pack_ratings
from spokenbench.core.qc.packs import read_pack
from spokenbench.core.qc.rating_session import SynchronousRatingSession


def rate_one_and_save(pack: Path) -> float:
    with open_pack(pack) as project:
        queue = read_pack(pack).manifest["queue"]["name"]
        SynchronousRatingSession.open(project, queue, read_pack(pack).manifest["annotator"]).press("1")
    started = time.monotonic()
    save_pack_ratings(pack)
    return time.monotonic() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--pack", type=Path)
    args = parser.parse_args()
    if missing():
        raise SystemExit(f"no slow stick here: {missing()}")
    work = Path(tempfile.mkdtemp(prefix="bench-pack-copy-", dir="/var/tmp"))
    try:
        if args.pack is None:
            from slow_stick_pack_walk import big_pack

            args.pack = big_pack(work)
        size_mb = args.pack.stat().st_size / 1e6
        figures: dict[str, list[float]] = {"open in place": [], "save in place": [], "copy": [], "save on copy": []}
        for repeat in range(args.repeats):
            with SlowStick(work / f"stick{repeat}") as stick:
                shutil.copy(args.pack, stick.backing / "ana.sbpack")  # behind the stick's pace: not timed
                on_stick = Path(stick.mounted) / "ana.sbpack"
                started = time.monotonic()
                open_pack(on_stick).close()
                figures["open in place"].append(time.monotonic() - started)
                figures["save in place"].append(rate_one_and_save(on_stick))
                shutil.rmtree(stick.backing / "ana.sbpack.d")  # the copy starts from the pack alone
                documents = work / f"documents{repeat}"
                documents.mkdir()
                started = time.monotonic()
                copy = copy_pack_to(on_stick, documents)
                figures["copy"].append(time.monotonic() - started)
                figures["save on copy"].append(rate_one_and_save(copy.path))
        medians = {name: statistics.median(values) for name, values in figures.items()}
        print(f"pack {size_mb:,.0f} MB, {args.repeats} repeats, medians:")
        for name, value in medians.items():
            print(f"  {name:14s} {value:6.2f} s   ({', '.join(f'{v:.2f}' for v in figures[name])})")
        print(f"  opening: copied first {medians['open in place'] / medians['copy']:.1f}x faster than in place")
        print(f"  each save: {medians['save in place'] / medians['save on copy']:.1f}x faster on the copy")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
