"""The pack corpus: bad annotation packs generated from a valid, rated one (tests/pack_mutations.py) — damaged zip
structure, crafted JSON, every manifest and rating field broken each way, tampering, bombs. Each is refused by
`spokenbench unpack` with exit 2 and a message naming the pack and the member or field, the home project
unchanged; the annotator's side (`open_pack`, what the app's Open Pack runs) refuses it too and leaves no folder.
The default run takes the first case of each class; `pytest -m slow` runs them all and the memory bounds."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections import Counter, defaultdict
from pathlib import Path

import pytest
from bad_input_support import project_snapshot
from pack_mutations import PackParts, Variant, build_rated_pack, pack_variants, write_pack

from spokenbench.core.foundation.errors import SpokenBenchError
from spokenbench.core.qc.pack_folders import open_pack, save_pack_ratings
from spokenbench.core.qc.packs import CLIP_ID_KEY, permute_clip_id
from spokenbench.core.qc.queues import note_rating
from spokenbench.core.store import Project

MEMORY_LIMIT_MB = 600
VARIANTS = list(pack_variants())
TALLY: dict[str, Counter] = defaultdict(Counter)


def _sampled(variants: list[Variant]) -> set[str]:
    first: dict[str, str] = {}
    for variant in variants:
        if not variant.heavy:
            first.setdefault(variant.cls, variant.id)
    return set(first.values())


SAMPLED = _sampled(VARIANTS)


@pytest.fixture(scope="module")
def home(tmp_path_factory):
    root = tmp_path_factory.mktemp("packs")
    project_dir, pack, outside = build_rated_pack(root)
    shutil.copytree(project_dir, root / "pristine")
    return project_dir, PackParts.of(pack, outside)


def _restore(project_dir: Path) -> None:
    shutil.rmtree(project_dir)
    shutil.copytree(project_dir.parent / "pristine", project_dir)


def _marks(variant: Variant) -> list:
    return [] if variant.id in SAMPLED else [pytest.mark.slow]


@pytest.mark.parametrize("variant", [pytest.param(v, id=v.id, marks=_marks(v)) for v in VARIANTS])
def test_a_bad_pack_is_refused_clearly_and_changes_nothing(variant: Variant, home, tmp_path, cli):
    project_dir, parts = home
    bad = variant.make(parts, tmp_path / "bad.sbpack")
    pack_bytes = bad.read_bytes() if bad.is_file() else None
    tally = TALLY[variant.cls]
    tally["cases"] += 1
    if not variant.away_only:
        before = project_snapshot(project_dir)
        result = cli("unpack", project_dir, bad)
        changed = project_snapshot(project_dir) != before
        if changed:
            _restore(project_dir)
        internal = "Traceback" in result.err or "internal error" in result.err
        tally["internal"] += internal
        tally["changed"] += changed
        tally["clear"] += result.code == 2 and str(bad) in result.err and variant.named_in(result.err)
        assert not internal, result.err
        assert result.code == 2, f"exit {result.code}\n{result.out}\n{result.err}"
        assert str(bad) in result.err and variant.named_in(result.err), result.err
        assert not changed, "the refused pack changed the project"
    if not variant.home_only:  # the annotator's side: what the app's Open Pack runs
        with pytest.raises(SpokenBenchError) as refused:
            open_pack(bad).close()
        assert str(bad) in str(refused.value) and variant.named_in(str(refused.value)), refused.value
        assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.sbpack"], "a refused pack left files behind"
    if pack_bytes is not None:
        assert bad.read_bytes() == pack_bytes, "reading the pack changed it"


@pytest.mark.slow
def test_the_valid_pack_the_corpus_starts_from_is_merged_once(home, tmp_path, cli):
    """The mutations are what is refused: the pack they start from merges, and merges once."""
    project_dir, parts = home
    copy = Path(shutil.copytree(project_dir, tmp_path / "project"))
    pack = write_pack(parts, tmp_path / "valid.sbpack")
    first = cli("unpack", copy, pack, "--json")
    assert first.code == 0, first.err
    assert first.json()["added"] == 3
    again = cli("unpack", copy, pack, "--json")
    assert again.json()["added"] == 0 and again.json()["already_merged"] == 3
    open_pack(pack).close()


@pytest.mark.slow
def test_an_unsigned_format_1_pack_merges_only_when_accepted(home, tmp_path, cli):
    project_dir, parts = home
    copy = Path(shutil.copytree(project_dir, tmp_path / "project"))
    legacy = next(v for v in VARIANTS if v.id == "tamper:unsigned-format-1").make(parts, tmp_path / "old.sbpack")
    refused = cli("unpack", copy, legacy)
    assert refused.code == 2 and "--accept-unsigned" in refused.err
    accepted = cli("unpack", copy, legacy, "--accept-unsigned", "--json")
    assert accepted.code == 0 and accepted.json()["added"] == 3 and accepted.json()["signed"] is False
    assert "an unsigned pack" in cli("unpack", copy, legacy, "--accept-unsigned").out
    bob = parts.ratings[0] | {"annotator": "bob", "origin_uuid": "12345678-1234-4234-8234-123456789abc"}
    forged = write_pack(
        parts, tmp_path / "forged.sbpack", manifest=json.loads(legacy_manifest(legacy)), ratings=[bob], sign=False,
        drop=("ratings.sig",),
    )  # fmt: skip
    still = cli("unpack", copy, forged, "--accept-unsigned")
    assert still.code == 2 and "made for 'ana'" in still.err  # fields are checked in unsigned packs too


def legacy_manifest(path: Path) -> str:
    import zipfile

    with zipfile.ZipFile(path) as archive:
        return archive.read("manifest.json").decode()


def test_a_rating_uuid_of_another_rating_at_home_is_refused(home, tmp_path, cli):
    """A pack re-using the uuid of a rating merged from elsewhere cannot undo or rewrite it."""
    project_dir, parts = home
    copy = Path(shutil.copytree(project_dir, tmp_path / "project"))
    assert cli("unpack", copy, write_pack(parts, tmp_path / "valid.sbpack")).code == 0
    ratings = [dict(r) for r in parts.ratings]
    ratings[0]["rating"] = "incorrect" if ratings[0]["rating"] != "incorrect" else "correct"
    before = project_snapshot(copy)
    result = cli("unpack", copy, write_pack(parts, tmp_path / "reused.sbpack", ratings=ratings))
    assert result.code == 2 and "names another rating" in result.err
    assert project_snapshot(copy) == before


def _peak_rss_mb(args: list[str]) -> tuple[int, float]:
    """Exit code and peak resident memory (MB) of the command run in a process of its own."""
    probe = (
        "import resource, subprocess, sys; code = subprocess.call(sys.argv[1:], stdout=subprocess.DEVNULL, "
        "stderr=subprocess.DEVNULL); "
        "print(code, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)"
    )
    out = subprocess.run([sys.executable, "-c", probe, *args], capture_output=True, text=True, check=True).stdout
    code, kilobytes = out.split()
    return int(code), int(kilobytes) / 1024


@pytest.mark.slow
def test_no_bomb_takes_more_than_600_mb(home, tmp_path, capsys):
    """Each bomb (and the largest packs the caps let through to parsing) is refused in a fresh `spokenbench
    unpack` process whose peak memory stays far below MEMORY_LIMIT_MB."""
    project_dir, parts = home
    spokenbench = str(Path(sys.executable).with_name("spokenbench"))
    baseline_code, baseline = _peak_rss_mb([spokenbench, "info", str(project_dir)])
    assert baseline_code == 0
    figures = {}
    for variant in [v for v in VARIANTS if v.cls == "bomb"]:
        bad = variant.make(parts, tmp_path / f"{variant.id.split(':')[1]}.sbpack")
        code, peak = _peak_rss_mb([spokenbench, "unpack", str(project_dir), str(bad)])
        figures[variant.id] = (bad.stat().st_size, peak)
        assert code == 2, variant.id
        assert peak < MEMORY_LIMIT_MB, f"{variant.id}: {peak:.0f} MB"
        bad.unlink()
    with capsys.disabled():
        print(f"\npack bombs, peak RSS of `spokenbench unpack` (baseline `info`: {baseline:.0f} MB):")
        for name, (size, peak) in figures.items():
            print(f"  {name}: pack {size / 2**20:.2f} MB -> peak {peak:.0f} MB")


def test_pack_corpus_summary(capsys):
    classes = Counter(v.cls for v in VARIANTS)
    assert len(VARIANTS) >= 250 and set(classes) >= {
        "zip",
        "file",
        "json",
        "manifest",
        "clip",
        "rating",
        "tamper",
        "bomb",
    }
    ran = sum(t["cases"] for t in TALLY.values())
    with capsys.disabled():
        print(
            f"\npack corpus: {len(VARIANTS)} cases ({', '.join(f'{c} {n}' for c, n in sorted(classes.items()))}); "
            f"ran {ran}: {sum(t['clear'] for t in TALLY.values())} clear refusals at home, "
            f"{sum(t['internal'] for t in TALLY.values())} internal errors, "
            f"{sum(t['changed'] for t in TALLY.values())} data changed"
        )


@pytest.mark.slow
def test_pack_records_its_key_only_when_the_file_is_written(home, tmp_path, cli):
    """`pack` keeps the pack's key, annotator, queue and clips in the project in the step that makes the file;
    a `pack` that fails (here: a clip's audio is gone) changes nothing, not even the project id."""
    project_dir, parts = home
    copy = Path(shutil.copytree(project_dir, tmp_path / "project"))
    made = cli("pack", copy, "--queue", parts.manifest["queue"]["name"], "--annotator", "cleo", "--out", tmp_path / "c.sbpack", "--json")  # fmt: skip
    assert made.code == 0, made.err
    with Project.open(copy) as project:
        record = json.loads(project.conn.execute("SELECT value FROM project_meta WHERE key = ?", (f"pack:{made.json()['pack_id']}",)).fetchone()[0])  # fmt: skip
        key = bytes.fromhex(project.conn.execute("SELECT value FROM project_meta WHERE key = ?", (CLIP_ID_KEY,)).fetchone()[0])  # fmt: skip
    home_ids = sorted(permute_clip_id(key, c["id"], inverse=True) for c in parts.manifest["clips"])
    assert record["annotator"] == "cleo" and record["clips"] == home_ids  # the project's ids, not the keyed ones
    assert record["key"] != parts.manifest["signing_key"]  # a key per pack
    for audio in (copy / "audio").rglob("*.wav"):
        audio.unlink()
    with Project.open(copy) as project, project.transaction() as conn:
        conn.execute("DELETE FROM project_meta WHERE key = 'project_id'")  # as in a project that never packed
    before = project_snapshot(copy)
    failed = cli("pack", copy, "--queue", parts.manifest["queue"]["name"], "--annotator", "dan", "--out", tmp_path / "d.sbpack")  # fmt: skip
    assert failed.code == 2 and "audio is missing" in failed.err
    assert project_snapshot(copy) == before and not (tmp_path / "d.sbpack").exists()


@pytest.mark.slow
def test_the_annotators_save_writes_only_what_unpack_accepts(home, tmp_path):
    """A note longer than a pack may carry is refused when saving, naming it, and the pack file is unchanged."""
    _, parts = home
    pack = write_pack(parts, tmp_path / "ana.sbpack")
    with open_pack(pack) as project:
        rating_id = project.conn.execute("SELECT max(id) FROM ratings WHERE undone_at IS NULL").fetchone()[0]
        note_rating(project, rating_id, "n" * 50_001)
    before = pack.read_bytes()
    with pytest.raises(SpokenBenchError, match="'note' must be text of at most 50,000"):
        save_pack_ratings(pack)
    assert pack.read_bytes() == before
