"""Annotation packs: a queue packed for one annotator, rated offline in the opened pack, merged back exactly
once; foreign and damaged packs refused with exit 2; nothing but the queue's clips leaves the project."""

import json
import shutil
import zipfile

import pytest

from spokenbench.core.foundation.errors import SpokenBenchError
from spokenbench.core.foundation.tables import current_umask
from spokenbench.core.qc.pack_folders import open_pack, pack_folder, save_pack_ratings
from spokenbench.core.qc.packs import CLIP_ID_KEY, ensure_project_id, permute_clip_id, read_pack
from spokenbench.core.qc.queues import queue_clips, rate_clip
from spokenbench.core.qc.rating_session import SynchronousRatingSession
from spokenbench.core.store import Project, opened

QUEUE = "demo-qc"


def _ratings(project_dir):
    with opened(project_dir) as project:
        rows = project.conn.execute(
            "SELECT clip_id, annotator, rating, undone_at IS NOT NULL AS undone, origin_uuid FROM ratings ORDER BY id"
        )
        return [tuple(row) for row in rows]


@pytest.fixture
def packed(demo_copy, tmp_path, cli):
    """The demo's queue packed for 'ana' (the pack file is elsewhere, as on the annotator's machine)."""
    pack = tmp_path / "away" / "ana.sbpack"
    pack.parent.mkdir()  # an output's folder must exist (issue 23)
    result = cli("pack", demo_copy, "--queue", QUEUE, "--annotator", "ana", "--out", pack, "--json")
    assert result.code == 0, result.err
    assert result.json()["clips"] > 0
    return pack


def _rate_offline(pack, keys):
    """Rate in the opened pack through the rating session, as the app's rating screen does, then write back."""
    with open_pack(pack) as project:
        session = SynchronousRatingSession.open(project, QUEUE, "ana")
        for key in keys:
            session.press(key)
    return save_pack_ratings(pack)


@pytest.mark.slow
def test_pack_rate_unpack_merges_exactly_the_ratings_made(demo_copy, packed, cli):
    before = _ratings(demo_copy)
    assert _rate_offline(packed, ["1", "3", "2", "Ctrl+Z"]) == 3  # three ratings, the last one undone
    with opened(demo_copy) as project:
        key = bytes.fromhex(
            project.conn.execute("SELECT value FROM project_meta WHERE key = ?", (CLIP_ID_KEY,)).fetchone()[0]
        )
    with opened(pack_folder(packed)) as pack_project:  # the pack names clips by keyed ids; home, by its own
        made = [
            (permute_clip_id(key, clip, inverse=True), who, rating, undone)
            for clip, who, rating, undone, _ in _ratings(pack_project.path)
        ]
    first = cli("unpack", demo_copy, packed, "--json")
    assert first.code == 0, first.err
    assert first.json()["added"] == 3 and first.json()["conflicts"] == []
    after = _ratings(demo_copy)
    assert after[: len(before)] == before
    assert [row[:4] for row in after[len(before) :]] == made
    assert sum(1 for row in after[len(before) :] if row[3]) == 1  # the undone pack rating is merged as undone
    assert all(row[4] for row in after[len(before) :])

    second = cli("unpack", demo_copy, packed, "--json")
    assert second.code == 0 and second.json()["added"] == 0 and second.json()["already_merged"] == 3
    assert _ratings(demo_copy) == after


@pytest.mark.slow
def test_reopening_a_pack_keeps_its_ratings_and_a_later_undo_reaches_home(demo_copy, packed, cli):
    _rate_offline(packed, ["1", "1"])
    assert cli("unpack", demo_copy, packed).code == 0
    assert _rate_offline(packed, ["Ctrl+Z"]) == 2  # reopened: the two ratings are still there, one now undone
    result = cli("unpack", demo_copy, packed, "--json").json()
    assert (result["added"], result["newly_undone"]) == (0, 1)
    home = [row for row in _ratings(demo_copy) if row[4]]
    assert [row[3] for row in home] == [0, 1]


@pytest.mark.slow
def test_a_rating_made_differently_at_home_is_a_conflict_and_both_are_kept(demo_copy, packed, cli):
    _rate_offline(packed, ["1"])  # correct, on the queue's first clip
    with opened(demo_copy) as project:
        first_clip = queue_clips(project.conn, QUEUE)[0].clip_id
        rate_clip(project, first_clip, "ana", "incorrect", queue=QUEUE)
    result = cli("unpack", demo_copy, packed, "--json")
    assert result.code == 0
    conflicts = result.json()["conflicts"]
    assert [(c["clip_id"], c["pack_rating"], c["project_rating"]) for c in conflicts] == [
        (first_clip, "correct", "incorrect")
    ]
    ana_rows = [row for row in _ratings(demo_copy) if row[0] == first_clip and row[1] == "ana"]
    assert [row[2] for row in ana_rows] == ["incorrect", "correct"]
    text = cli("unpack", demo_copy, packed)
    assert "1 conflict" in text.out


@pytest.mark.slow
def test_a_pack_from_another_project_is_refused(packed, tmp_path, cli):
    with Project.create(tmp_path / "other") as other:
        ensure_project_id(other)
    result = cli("unpack", tmp_path / "other", packed)
    assert result.code == 2
    assert "another project" in result.err
    assert _ratings(tmp_path / "other") == []


@pytest.mark.slow
def test_the_pack_holds_the_queue_and_its_audio_and_nothing_else(demo_copy, packed, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret-should-not-travel")
    with opened(demo_copy) as project:
        clips = queue_clips(project.conn, QUEUE)
        meta = dict(project.conn.execute("SELECT key, value FROM project_meta").fetchall())
    with zipfile.ZipFile(packed) as archive:
        names = set(archive.namelist())
        manifest = json.loads(archive.read("manifest.json"))
        everything = b"".join(archive.read(name) for name in names if not name.startswith("audio/"))
    assert names == {"manifest.json", "ratings.jsonl", "ratings.sig"} | {
        f"audio/{c.sha256}.{c.audio_format}" for c in clips
    }
    key = bytes.fromhex(meta[CLIP_ID_KEY])
    assert [clip["id"] for clip in manifest["clips"]] == [permute_clip_id(key, c.clip_id) for c in clips]
    assert meta[CLIP_ID_KEY].encode() not in everything
    assert manifest["project_id"] == meta["project_id"] and manifest["annotator"] == "ana"
    assert set(manifest) == {
        "format", "format_version", "pack_id", "project_id", "project_name", "queue", "annotator", "created_at",
        "clips", "clip_ids", "audio", "signing_key",
    }  # fmt: skip
    assert b"sk-" not in everything and b"API_KEY" not in everything
    with open_pack(packed) as pack_project:
        tables = {
            row[0]: pack_project.conn.execute(f"SELECT count(*) FROM {row[0]}").fetchone()[0]
            for row in pack_project.conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        }
    assert tables["clips"] == len(clips) and tables["rating_queues"] == 1
    assert tables["responses"] == tables["runs"] == tables["rewrites"] == tables["transcripts"] == 0


@pytest.mark.slow
@pytest.mark.parametrize("damage", ["truncated", "not_a_zip", "bad_rating_line", "no_manifest"])
def test_a_damaged_pack_is_a_clear_error(demo_copy, packed, tmp_path, cli, damage):
    broken = tmp_path / f"{damage}.sbpack"
    data = packed.read_bytes()
    if damage == "truncated":
        broken.write_bytes(data[: len(data) // 2])
    elif damage == "not_a_zip":
        broken.write_text("hello")
    else:
        with zipfile.ZipFile(packed) as source, zipfile.ZipFile(broken, "w") as target:
            for info in source.infolist():
                if damage == "no_manifest" and info.filename == "manifest.json":
                    continue
                content = source.read(info.filename)
                if damage == "bad_rating_line" and info.filename == "ratings.jsonl":
                    content = b'{"origin_uuid": "x", "clip_id": -1}\n'
                target.writestr(info, content)
    before = _ratings(demo_copy)
    result = cli("unpack", demo_copy, broken)
    assert result.code == 2
    assert str(broken) in result.err and "Traceback" not in result.err
    assert _ratings(demo_copy) == before
    with pytest.raises(SpokenBenchError):
        read_pack(broken)


@pytest.mark.slow
def test_a_pack_file_gets_the_permissions_of_a_plain_file(packed):
    expected = 0o666 & ~current_umask()
    assert packed.stat().st_mode & 0o777 == expected
    with open_pack(packed):
        pass
    save_pack_ratings(packed)
    assert packed.stat().st_mode & 0o777 == expected


@pytest.mark.slow
def test_an_existing_pack_is_never_overwritten(demo_copy, packed, cli):
    result = cli("pack", demo_copy, "--queue", QUEUE, "--annotator", "ana", "--out", packed)
    assert result.code == 2 and "already exists" in result.err


@pytest.mark.slow
def test_a_pack_written_back_carries_its_ratings_to_a_fresh_folder_and_the_cli_writes_them(packed, demo_copy, cli):
    with open_pack(packed) as project:
        session = SynchronousRatingSession.open(project, QUEUE, "ana")
        session.press("2")
    result = cli("pack-ratings", packed, "--json")
    assert result.code == 0 and result.json()["ratings"] == 1
    shutil.rmtree(pack_folder(packed))  # another machine: only the file travels
    assert _rate_offline(packed, ["3"]) == 2  # the earlier rating came along, with the same uuid
    merged = cli("unpack", demo_copy, packed, "--json").json()
    assert merged["added"] == 2 and merged["already_merged"] == 0


@pytest.mark.slow
def test_pack_ratings_without_an_opened_pack_is_a_clear_error(packed, cli):
    result = cli("pack-ratings", packed)
    assert result.code == 2 and "open the pack first" in result.err


@pytest.mark.slow
def test_a_damaged_pack_leaves_no_folder_behind(packed, tmp_path):
    broken = tmp_path / "broken.sbpack"
    with zipfile.ZipFile(packed) as source, zipfile.ZipFile(broken, "w") as target:
        for info in source.infolist():
            content = source.read(info.filename)
            target.writestr(info, b"not the audio" if info.filename.startswith("audio/") else content)
    with pytest.raises(SpokenBenchError, match="does not match its hash"):
        open_pack(broken)
    assert not pack_folder(broken).exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".broken")] == []


@pytest.mark.slow
def test_saving_unchanged_ratings_leaves_the_pack_file_untouched(packed):
    _rate_offline(packed, ["1"])
    before = packed.stat().st_mtime_ns, packed.read_bytes()
    assert save_pack_ratings(packed) == 1
    assert (packed.stat().st_mtime_ns, packed.read_bytes()) == before


def test_a_pack_in_a_folder_that_cannot_be_written_says_to_copy_it(packed):
    """A pack on a read-only stick, share or mounted image: it is rated in a folder made beside it, which
    cannot be made there. Before, the app said "…/.ana.sbpack.d.x1y2z3: Read-only file system", naming a
    temporary folder and not what to do."""
    from support import read_only_copy

    with read_only_copy(packed) as copy:
        with pytest.raises(SpokenBenchError) as raised:
            open_pack(copy)
        assert not pack_folder(copy).exists() and sorted(p.name for p in copy.parent.iterdir()) == [copy.name]
    message = str(raised.value)
    assert f"{copy} is in a folder that cannot be written" in message
    assert f"Copy {copy.name} to a folder of yours" in message and ".sbpack.d." not in message
