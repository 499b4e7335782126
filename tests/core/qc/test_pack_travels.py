"""A pack file that travels without its folder: copied alone to another machine, rated there, and brought back
beside the folder it was first rated in. The folder then lacks the ratings made elsewhere; opening the pack and
every save take them in, so the file to send back never loses one (before, the next save wrote the old folder's
ratings alone over them). And a pack found where it cannot be rated (read-only) is copied to a folder of the
annotator's first, an earlier copy there reused with its ratings, never overwritten."""

import os
import shutil
import sqlite3
import threading
import time
from pathlib import Path

import pytest

from spokenbench.core.foundation.errors import SpokenBenchError
from spokenbench.core.foundation.progress import Cancelled, Progress
from spokenbench.core.qc.pack_folders import (
    PackCopy,
    PackFolderNotWritable,
    copy_pack_to,
    open_pack,
    pack_folder,
    save_pack_ratings,
)
from spokenbench.core.qc.packs import read_pack
from spokenbench.core.qc.queues import queue_clips, rate_clip
from spokenbench.core.qc.rating_session import SynchronousRatingSession
from spokenbench.core.store import opened
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


@pytest.fixture
def first_rating_taken_home(demo_copy, tmp_path, cli):
    """One rating made at work and saved; the file alone copied home (work's folder stays)."""
    work, home = tmp_path / "work" / "ana.sbpack", tmp_path / "home" / "ana.sbpack"
    work.parent.mkdir()
    home.parent.mkdir()
    assert cli("pack", demo_copy, "--queue", QUEUE, "--annotator", "ana", "--out", work).code == 0
    rate(work, ["1"])
    save_pack_ratings(work)
    shutil.copy(work, home)
    return work, home


def test_a_save_beside_the_old_folder_keeps_the_ratings_made_elsewhere(travelled):
    work, home = travelled
    assert len(folder_ratings(work)) == 2  # the old folder, not opened since: it lacks home's three
    assert save_pack_ratings(work) == 5
    carried = {(r["origin_uuid"], r["rating"], bool(r["undone_at"])) for r in read_pack(work).ratings}
    assert carried == {(r["origin_uuid"], r["rating"], bool(r["undone_at"])) for r in read_pack(home).ratings}
    assert len(folder_ratings(work)) == 2  # a save writes the file only: the folder takes them in when opened


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


def test_an_undo_and_a_note_made_elsewhere_on_a_rating_both_have_reach_the_file_and_the_folder(travelled):
    from spokenbench.core.qc.queues import note_rating

    work, home = travelled
    rate(home, ["Ctrl+Z", "Ctrl+Z", "Ctrl+Z"])  # home takes back its own two, then work's second rating
    with open_pack(home) as project:
        note_rating(project, 1, "the speaker swallows the last word")  # a note on work's first rating, at home
    save_pack_ratings(home)
    shutil.copy(home, work)
    work_uuids = [r["origin_uuid"] for r in read_pack(work).ratings[:2]]
    save_pack_ratings(work)
    carried = {r["origin_uuid"]: r for r in read_pack(work).ratings}
    assert carried[work_uuids[1]]["undone_at"] and not carried[work_uuids[0]]["undone_at"]
    assert carried[work_uuids[0]]["note"] == "the speaker swallows the last word"
    rate(work, [])  # opened: the folder takes them in too
    with sqlite3.connect(pack_folder(work) / "project.sqlite") as conn:
        rows = dict(conn.execute("SELECT origin_uuid, undone_at IS NOT NULL FROM ratings").fetchall())
        note = conn.execute("SELECT note FROM ratings WHERE origin_uuid = ?", (work_uuids[0],)).fetchone()[0]
    assert rows[work_uuids[1]] == 1 and rows[work_uuids[0]] == 0
    assert note == "the speaker swallows the last word"


def test_a_clip_rated_on_both_machines_counts_the_later_rating(first_rating_taken_home):
    """Both machines resume at the same first unrated clip. Rated at home first (incorrect), then at work
    (correct), the work rating is the newer: it counts in the folder, its undo takes it back, and the file lists
    the two in the order they were made. Before, the rating taken in from the file got the higher id and counted."""
    work, home = first_rating_taken_home
    rate(home, ["3"])  # clip 2, at home
    save_pack_ratings(home)
    time.sleep(0.01)
    rate(work, ["2"])  # clip 2 again, at work, later
    shutil.copy(home, work)
    assert [r["rating"] for r in read_pack(work).ratings] == ["correct", "incorrect"]
    save_pack_ratings(work)
    assert [r["rating"] for r in read_pack(work).ratings] == ["correct", "incorrect", "acceptable"]
    with open_pack(work) as project:
        session = SynchronousRatingSession.open(project, QUEUE, "ana")
        assert session.progress.done == 2
        session.perform("previous")
        assert session.current.position == 2 and session.current.rating == "acceptable"
        session.press("Ctrl+Z")  # takes back the annotator's last rating: work's, not the one taken in
    assert [r["rating"] for r in read_pack(work).ratings if not r["undone_at"]] == [
        "correct",
        "incorrect",
        "acceptable",
    ]
    save_pack_ratings(work)
    live = [r["rating"] for r in read_pack(work).ratings if not r["undone_at"]]
    assert live == ["correct", "incorrect"]


def test_a_file_whose_rating_names_another_than_the_folders_is_refused_and_nothing_changes(travelled, tmp_path):
    work, _home = travelled
    parts = PackParts.of(work, outside_clip_id=-1)
    rows = [dict(row) for row in parts.ratings]
    rows[0]["rating"] = "incorrect" if rows[0]["rating"] != "incorrect" else "correct"  # same uuid, another verdict
    write_pack(parts, tmp_path / "edited.sbpack", ratings=rows)
    shutil.copy(tmp_path / "edited.sbpack", work)
    before, file_before = folder_ratings(work), work.read_bytes()
    with pytest.raises(
        SpokenBenchError, match=r"names another rating in the pack file than in its folder.*nothing saved"
    ):
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


# ------------------------------------------------------------------ a pack where it cannot be rated: copied first


@pytest.fixture
def packed(demo_copy, tmp_path, cli):
    pack = tmp_path / "stick" / "ana.sbpack"
    pack.parent.mkdir()
    assert cli("pack", demo_copy, "--queue", QUEUE, "--annotator", "ana", "--out", pack).code == 0
    return pack


@pytest.fixture
def documents(tmp_path):
    folder = tmp_path / "Documents"
    folder.mkdir()
    return folder


def test_a_read_only_pack_is_copied_whole_and_the_copy_is_rated(packed, documents):
    from support import read_only_copy

    reports = []
    with read_only_copy(packed) as original:
        with pytest.raises(PackFolderNotWritable) as raised:
            open_pack(original)
        assert raised.value.pack_path == original and raised.value.reason
        copying = Progress(lambda done, total, message: reports.append((done, total, message.split()[0])))
        copy = copy_pack_to(original, documents, copying)
        assert copy == PackCopy(documents / "ana.sbpack", earlier=False)
        assert copy.path.read_bytes() == original.read_bytes()
    copied = [report[:2] for report in reports if report[2] == "copying"]
    assert copied and copied[-1] == (packed.stat().st_size, packed.stat().st_size)
    assert reports[-1][2] == "unpacking"  # then its folder made, so that it opens at once
    assert sorted(p.name for p in documents.iterdir()) == ["ana.sbpack", "ana.sbpack.d"]  # no temp file left
    rate(copy.path, ["1"])
    assert save_pack_ratings(copy.path) == 1


def test_an_earlier_copy_is_reused_with_its_ratings_and_takes_in_the_originals(packed, documents, tmp_path):
    first = copy_pack_to(packed, documents).path
    rate(first, ["1", "3"])
    save_pack_ratings(first)
    rated_copy = first.read_bytes()
    elsewhere = tmp_path / "elsewhere" / "ana.sbpack"  # the original rated on another machine meanwhile
    elsewhere.parent.mkdir()
    shutil.copy(packed, elsewhere)
    rate(elsewhere, ["2"])
    save_pack_ratings(elsewhere)
    shutil.copy(elsewhere, packed)
    again = copy_pack_to(packed, documents)
    assert again == PackCopy(first, earlier=True)
    assert first.read_bytes() == rated_copy  # never copied over
    assert len(folder_ratings(first)) == 3  # its two and the original's one
    assert save_pack_ratings(first) == 3


def test_a_file_of_that_name_that_is_not_this_pack_is_left_alone(packed, documents, demo_copy, cli):
    (documents / "ana.sbpack").write_bytes(b"a letter, not a pack")
    other = documents / "ana (2).sbpack"
    assert cli("pack", demo_copy, "--queue", QUEUE, "--annotator", "bo", "--out", other).code == 0  # another pack
    copy = copy_pack_to(packed, documents)
    assert copy == PackCopy(documents / "ana (3).sbpack", earlier=False)
    assert (documents / "ana.sbpack").read_bytes() == b"a letter, not a pack"
    assert read_pack(other).manifest["annotator"] == "bo"
    assert read_pack(copy.path).pack_id == read_pack(packed).pack_id


def test_a_copy_stopped_midway_leaves_nothing(packed, documents, monkeypatch):
    from spokenbench.core.qc import pack_folders

    monkeypatch.setattr(pack_folders, "COPY_BLOCK_BYTES", 64 * 1024)
    stop = threading.Event()
    with pytest.raises(Cancelled):
        copy_pack_to(packed, documents, Progress(lambda done, total, _m: stop.set(), stop))
    assert list(documents.iterdir()) == []


def test_a_folder_that_cannot_be_written_either_or_the_packs_own_is_said(packed, documents):
    from support import read_only_copy

    with read_only_copy(documents) as read_only:
        with pytest.raises(
            SpokenBenchError, match=r"ana\.sbpack \([\d.]+ MB\) could not be copied to .*choose another"
        ):
            copy_pack_to(packed, read_only)
    with pytest.raises(SpokenBenchError, match="is where ana.sbpack is: choose another folder"):
        copy_pack_to(packed, packed.parent)
    with pytest.raises(SpokenBenchError, match="is not a folder"):
        copy_pack_to(packed, documents / "missing")


def test_a_pack_and_its_folder_on_a_read_only_stick_still_open_when_the_folder_lacks_nothing(travelled):
    """Taking in writes only what the folder lacks: a stick set read-only after the last opening still opens; one
    whose folder lacks ratings the file carries is a pack to copy first."""
    from support import read_only_copy

    work, _home = travelled
    with read_only_copy(work.parent) as stick:
        with pytest.raises(PackFolderNotWritable, match="carries ratings its folder, ana.sbpack.d, lacks"):
            open_pack(stick / work.name)
    rate(work, [])  # opened: the folder now holds every rating the file carries
    with read_only_copy(work.parent) as stick:
        with open_pack(stick / work.name) as project:
            assert project.conn.execute("SELECT COUNT(*) FROM ratings").fetchone()[0] == 5


@pytest.mark.parametrize("how", ["renamed", "rewritten in place"])
def test_a_pack_file_brought_back_while_a_save_writes_it_keeps_its_ratings(demo_copy, tmp_path, cli, monkeypatch, how):
    """The app left open at work saves into the pack (it rewrites the whole zip: ~18 s on a USB 2 stick) while
    the annotator copies the file rated at home over it. Before, the save then put back what it had read: the
    home ratings were gone from the file and from the folder."""
    from spokenbench.core.qc import pack_folders

    monkeypatch.setattr(pack_folders, "SYNC_BYTES", 256 * 1024)
    work, home = tmp_path / "work" / "ana.sbpack", tmp_path / "home" / "ana.sbpack"
    work.parent.mkdir()
    home.parent.mkdir()
    assert cli("pack", demo_copy, "--queue", QUEUE, "--annotator", "ana", "--out", work).code == 0
    rate(work, ["1", "3"])
    save_pack_ratings(work)
    shutil.copy(work, home)
    rate(home, ["2", "1", "3"])
    save_pack_ratings(home)
    rate(work, ["2"])  # one more at work, not yet in the file
    copied = []

    def bring_back(done, total, _message):
        if not copied:
            copied.append(done)
            if how == "renamed":  # a file manager's copy through a temp file
                shutil.copy(home, work.with_name("incoming"))
                os.replace(work.with_name("incoming"), work)
            else:  # cp over the file
                shutil.copyfile(home, work)

    assert save_pack_ratings(work, Progress(bring_back)) == 6
    assert copied and len(read_pack(work).ratings) == 6


def test_a_copy_of_a_read_only_pack_carries_its_folders_ratings_too_once(travelled, documents):
    """A stick rated on, then set read-only: its folder holds a rating never saved into the file (no uuid yet),
    and the file carries the home ratings the folder lacks. The copy has all six, and copying again adds none."""
    from support import read_only_copy

    work, _home = travelled
    with opened(pack_folder(work)) as project:  # one more at work, into the folder, never saved into the file
        rate_clip(project, queue_clips(project.conn, QUEUE)[-1].clip_id, "ana", "incorrect", queue=QUEUE)
    with read_only_copy(work.parent) as stick:
        with pytest.raises(PackFolderNotWritable):
            open_pack(stick / work.name)
        first = copy_pack_to(stick / work.name, documents)
        again = copy_pack_to(stick / work.name, documents)
    assert again == PackCopy(first.path, earlier=True)
    assert len(folder_ratings(first.path)) == 6
    assert save_pack_ratings(first.path) == 6
    save_pack_ratings(work)  # the stick writable again and saved: its rating gets the uuid the copy gave it
    assert {r["origin_uuid"] for r in read_pack(work).ratings} == {
        r["origin_uuid"] for r in read_pack(first.path).ratings
    }


def test_a_rating_made_after_taking_in_another_stays_after_it_whatever_the_clocks_say(first_rating_taken_home):
    """Home's clock is behind: it takes in work's rating of clip 1, then rates clip 1 again. The file
    lists the two in that order, and the re-rating counts at work too, though its time reads earlier."""
    work, home = first_rating_taken_home
    rate(home, ["Left", "3"])  # back to clip 1, rated again
    save_pack_ratings(home)
    parts = PackParts.of(home, outside_clip_id=-1)
    rows = [dict(row) for row in parts.ratings]
    assert [row["rating"] for row in rows] == ["correct", "incorrect"] and rows[0]["clip_id"] == rows[1]["clip_id"]
    rows[1]["created_at"] = "2000-01-01T00:00:00.000+00:00"  # home's clock far behind
    write_pack(parts, work, ratings=rows)  # brought back over work's
    with open_pack(work) as project:
        session = SynchronousRatingSession.open(project, QUEUE, "ana")
        while session.current.position != 1:
            session.perform("previous")
        assert session.current.rating == "incorrect"
    assert [r["rating"] for r in read_pack(work).ratings] == ["correct", "incorrect"]


def test_ratings_stored_again_in_order_take_new_ids_so_an_old_one_names_no_other_rating(travelled):
    """Work's folder rates one more after home's ratings were made; taking them in stores that one again after
    them, under an id above every old one: a session still holding its old id finds no rating there, not one of
    home's (the note written by id lands nowhere)."""
    work, _home = travelled
    with opened(pack_folder(work)) as project:
        late = rate_clip(project, queue_clips(project.conn, QUEUE)[-1].clip_id, "ana", "incorrect", queue=QUEUE)
        top = project.conn.execute("SELECT max(id) FROM ratings").fetchone()[0]
    assert late == top == 3
    rate(work, [])  # opened: home's three go in before it
    with opened(pack_folder(work)) as project:
        ids = [row[0] for row in project.conn.execute("SELECT id FROM ratings ORDER BY id")]
    assert ids[:2] == [1, 2] and min(ids[2:]) > top and late not in ids


def folder_note(pack, origin_uuid):
    with sqlite3.connect(pack_folder(pack) / "project.sqlite") as conn:
        return conn.execute("SELECT note FROM ratings WHERE origin_uuid = ?", (origin_uuid,)).fetchone()[0]


def noted_then_taken_home(pack, home_folder):
    """The pack's first rating noted "noisy" and saved, then the file alone copied to `home_folder`."""
    from spokenbench.core.qc.queues import note_rating

    with open_pack(pack) as project:
        note_rating(project, 1, "noisy")
    save_pack_ratings(pack)
    home_folder.mkdir()
    return Path(shutil.copy(pack, home_folder / pack.name))


def test_a_note_cleared_here_stays_cleared_and_one_changed_elsewhere_arrives(packed, tmp_path):
    """A note saved, then cleared at work: the next save and the next opening leave it cleared (the file's old
    note does not come back). The same note changed at home: work takes the change."""
    from spokenbench.core.qc.queues import note_rating

    rate(packed, ["1"])
    with open_pack(packed) as project:
        note_rating(project, 1, "noisy")
    save_pack_ratings(packed)
    (rating,) = read_pack(packed).ratings
    assert rating["note"] == "noisy"
    with open_pack(packed) as project:
        note_rating(project, 1, None)
    save_pack_ratings(packed)
    assert read_pack(packed).ratings[0]["note"] is None
    rate(packed, [])  # opened again
    assert folder_note(packed, rating["origin_uuid"]) is None

    home = noted_then_taken_home(packed, tmp_path / "home")
    with open_pack(home) as project:
        note_rating(project, 1, "noisy, and clipped at the end")
    save_pack_ratings(home)
    shutil.copy(home, packed)
    save_pack_ratings(packed)
    assert read_pack(packed).ratings[0]["note"] == "noisy, and clipped at the end"
    rate(packed, [])
    assert folder_note(packed, rating["origin_uuid"]) == "noisy, and clipped at the end"


def test_a_copy_onto_a_full_disk_is_said_and_leaves_nothing(packed, tmp_path):
    """Documents on a disk with 1 MB free: the 3 MB pack does not fit. The message names the pack, its size and
    the folder; no temp file or half copy is left, and the original is untouched."""
    import contextlib

    from support import entered_or_skipped, tmpfs

    before = packed.read_bytes()
    with contextlib.ExitStack() as stack:
        small = entered_or_skipped(stack, tmpfs(tmp_path / "small", "1m"))
        with pytest.raises(SpokenBenchError, match=r"ana\.sbpack \([\d.]+ MB\) could not be copied to .*No space"):
            copy_pack_to(packed, small)
        assert list(small.iterdir()) == []
    assert packed.read_bytes() == before


def test_a_note_changed_on_both_machines_keeps_the_folders_at_every_later_save(packed, tmp_path):
    from spokenbench.core.qc.queues import note_rating

    rate(packed, ["1"])
    home = noted_then_taken_home(packed, tmp_path / "home")
    with open_pack(home) as project:
        note_rating(project, 1, "noisy at home")
    rate(home, ["2"])  # and one more rating, so that the opening at work has something to take in
    save_pack_ratings(home)
    with open_pack(packed) as project:
        note_rating(project, 1, "noisy at work")
    shutil.copy(home, packed)
    rating = read_pack(packed).ratings[0]
    rate(packed, [])  # opened: both changed, the folder's kept
    assert folder_note(packed, rating["origin_uuid"]) == "noisy at work"
    save_pack_ratings(packed)
    save_pack_ratings(packed)
    assert read_pack(packed).ratings[0]["note"] == "noisy at work"
    rate(packed, [])
    assert folder_note(packed, rating["origin_uuid"]) == "noisy at work"
