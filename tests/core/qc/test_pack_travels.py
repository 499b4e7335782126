"""A pack file that travels without its folder: copied alone to another machine, rated there, and brought back
beside the folder it was first rated in. The folder then lacks the ratings made elsewhere; opening the pack and
every save take them in, so the file to send back never loses one (before, the next save wrote the old folder's
ratings alone over them)."""

import shutil
import sqlite3

import pytest

from spokenbench.core.foundation.errors import SpokenBenchError
from spokenbench.core.qc.packs import open_pack, pack_folder, read_pack, save_pack_ratings
from spokenbench.core.qc.rating_session import SynchronousRatingSession
from tests.pack_mutations import PackParts, write_pack

QUEUE = "demo-qc"


def rate(pack, keys):
    with open_pack(pack) as project:
        session = SynchronousRatingSession.open(project, QUEUE, "ana")
        for key in keys:
            session.press(key)


def folder_ratings(pack):
    with sqlite3.connect(pack_folder(pack) / "project.sqlite") as conn:
        return conn.execute("SELECT clip_id, rating, undone_at IS NOT NULL FROM ratings ORDER BY id").fetchall()


@pytest.fixture
def travelled(demo_copy, tmp_path, cli):
    """At work: two ratings, saved. The file alone goes home, three more are made there (the last undone) and
    saved; the file comes back to work over the old one, beside work's folder of two ratings."""
    work, home = tmp_path / "work" / "ana.sbpack", tmp_path / "home" / "ana.sbpack"
    work.parent.mkdir()
    home.parent.mkdir()
    assert cli("pack", demo_copy, "--queue", QUEUE, "--annotator", "ana", "--out", work).code == 0
    rate(work, ["1", "3"])
    assert save_pack_ratings(work) == 2
    shutil.copy(work, home)
    rate(home, ["2", "1", "3", "Ctrl+Z"])
    assert save_pack_ratings(home) == 5
    shutil.copy(home, work)
    return work, home


def test_a_save_beside_the_old_folder_keeps_the_ratings_made_elsewhere(travelled):
    work, home = travelled
    assert len(folder_ratings(work)) == 2  # the old folder, not opened since: it lacks home's three
    assert save_pack_ratings(work) == 5
    carried = {(r["origin_uuid"], r["rating"], bool(r["undone_at"])) for r in read_pack(work).ratings}
    assert carried == {(r["origin_uuid"], r["rating"], bool(r["undone_at"])) for r in read_pack(home).ratings}
    assert sorted(folder_ratings(work)) == sorted(folder_ratings(home))


def test_opening_beside_the_old_folder_takes_in_the_files_ratings_and_its_undos(travelled):
    work, home = travelled
    rate(work, [])  # open only
    assert sorted(folder_ratings(work)) == sorted(folder_ratings(home))
    assert [undone for *_, undone in folder_ratings(work)].count(True) == 1
    with open_pack(work) as project:  # the session sees four clips rated and resumes at the one undone at home
        session = SynchronousRatingSession.open(project, QUEUE, "ana")
        assert session.progress.done == 4
        assert session.current.position == 5
        session.press("2")
    assert save_pack_ratings(work) == 6
    assert len(read_pack(work).ratings) == 6


def test_an_undo_made_elsewhere_reaches_the_folder(travelled):
    work, home = travelled
    rate(home, ["Ctrl+Z"])  # home undoes one more (a rating the work folder also has: the second)
    save_pack_ratings(home)
    shutil.copy(home, work)
    undone_at_home = {r["origin_uuid"] for r in read_pack(home).ratings if r["undone_at"]}
    assert len(undone_at_home) == 2
    save_pack_ratings(work)
    assert {r["origin_uuid"] for r in read_pack(work).ratings if r["undone_at"]} == undone_at_home


def test_a_file_whose_rating_names_another_than_the_folders_is_refused_and_nothing_changes(travelled, tmp_path):
    work, _home = travelled
    parts = PackParts.of(work, outside_clip_id=-1)
    rows = [dict(row) for row in parts.ratings]
    rows[0]["rating"] = "incorrect" if rows[0]["rating"] != "incorrect" else "correct"  # same uuid, another verdict
    write_pack(parts, tmp_path / "edited.sbpack", ratings=rows)
    shutil.copy(tmp_path / "edited.sbpack", work)
    before, file_before = folder_ratings(work), work.read_bytes()
    with pytest.raises(SpokenBenchError, match=r"names another rating than the one in ana\.sbpack\.d.*nothing saved"):
        save_pack_ratings(work)
    with pytest.raises(SpokenBenchError, match="names another rating"):
        open_pack(work)
    assert folder_ratings(work) == before
    assert work.read_bytes() == file_before


def test_the_cli_save_of_a_file_rated_elsewhere_says_how_many_it_carries(travelled, cli):
    work, _home = travelled
    result = cli("pack-ratings", work, "--json")
    assert result.code == 0, result.err
    assert result.json()["ratings"] == 5
