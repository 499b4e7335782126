"""A pack made from a queue with hidden control clips cannot be told apart from one without by reading it: the
same manifest structure and member names, no field a control fills differently, clip ids that do not betray
which clips are newest, and merging the pack's ratings (with the seconds each took) back onto the project's own
clip ids."""

import json
import re
import zipfile

import pytest
from support import mark_demo_gold

from spokenbench.core.qc.controls import control_clips
from spokenbench.core.qc.pack_folders import open_pack, save_pack_ratings
from spokenbench.core.qc.packs import create_pack, unpack
from spokenbench.core.qc.queues import queue_clips, sample_for_rating
from spokenbench.core.qc.rating_session import SynchronousRatingSession
from spokenbench.core.store import opened

MEMBER = re.compile(r"^(manifest\.json|ratings\.jsonl|ratings\.sig|audio/[0-9a-f]{64}\.flac)$")


def read(pack):
    with zipfile.ZipFile(pack) as archive:
        return archive.namelist(), json.loads(archive.read("manifest.json")), archive.read("manifest.json")


def shape(value):
    """The structure of a JSON value: keys and value types, not the values."""
    if isinstance(value, dict):
        return {key: shape(item) for key, item in value.items()}
    if isinstance(value, list):
        return sorted({json.dumps(shape(item), sort_keys=True) for item in value})
    return type(value).__name__


@pytest.mark.slow
def test_a_pack_with_controls_reads_like_one_without(demo_copy, tmp_path):
    with opened(demo_copy) as project:
        mark_demo_gold(project)
        sample_for_rating(project, "with", per_bin=8, seed=0, controls=10)
        sample_for_rating(project, "without", per_bin=8, seed=0)
        known = control_clips(project.conn)
        with_clips = [clip.clip_id for clip in queue_clips(project.conn, "with")]
        created = {row[0] for row in project.conn.execute("SELECT created_at FROM clips WHERE id NOT IN "
                                                           "(SELECT clip_id FROM control_clips)")}  # fmt: skip
        packs = {
            name: create_pack(project, name, "ana", tmp_path / f"{name}.sbpack").path for name in ("with", "without")
        }
    assert sum(clip in known for clip in with_clips) == 10
    (names_with, manifest_with, raw_with), (names_without, manifest_without, raw_without) = map(read, packs.values())
    # the same structure: manifest keys, queue settings, each clip's fields and their types, member names
    assert shape({k: v for k, v in manifest_with.items() if k not in ("clips", "audio")}) == shape(
        {k: v for k, v in manifest_without.items() if k not in ("clips", "audio")}
    )
    assert all(
        name == f"audio/{sha}.flac" for m in (manifest_with, manifest_without) for sha, name in m["audio"].items()
    )
    assert shape(manifest_with["clips"]) == shape(manifest_without["clips"])
    assert manifest_with["queue"]["parameters_json"] == manifest_without["queue"]["parameters_json"] == "{}"
    assert all(MEMBER.match(name) for name in names_with + names_without)
    assert len(names_with) == len(manifest_with["audio"]) + 3  # one audio file per clip's audio, nothing else
    assert b"control" not in raw_with.lower() and b"gold" not in raw_with.lower()
    # no field a control fills in a way of its own
    clips = manifest_with["clips"]
    is_control = [clip_id in known for clip_id in with_clips]
    ordinary = [clip for clip, control in zip(clips, is_control) if not control]
    controls = [clip for clip, control in zip(clips, is_control) if control]
    assert all(re.fullmatch(r"[0-9a-f]{64}", clip["cache_key"]) for clip in clips)
    assert {clip["created_at"] for clip in controls} <= created  # as old as the clips they were made from
    assert {clip["wer_bin"] for clip in controls} <= {clip["wer_bin"] for clip in ordinary}
    assert {clip["audio_format"] for clip in controls} == {clip["audio_format"] for clip in ordinary}
    texts = [(clip["item_id"], clip["part"]) for clip in clips]
    assert all(texts.count((c["item_id"], c["part"])) == 1 for c in controls)  # no control repeats a text
    ids = sorted(clip["id"] for clip in clips)
    ranks = [ids.index(clip["id"]) for clip in controls]
    assert not min(ranks) >= len(clips) - 10  # keyed ids: the controls are not simply the newest (highest) ids
    assert {clip["id"] for clip in clips}.isdisjoint(with_clips)
    positions = [index for index, control in enumerate(is_control) if control]
    assert positions[-1] - positions[0] > len(clips) // 2  # spread through the queue, not bunched

    # rated in the pack and merged back: the ratings land on the project's own clip ids, controls included
    with open_pack(packs["with"]) as pack_project:
        session = SynchronousRatingSession.open(pack_project, "with", "ana")
        for _ in clips:
            session.press("1")
    save_pack_ratings(packs["with"])
    with opened(demo_copy) as project:
        report = unpack(project, packs["with"])
        rated = dict(project.conn.execute("SELECT clip_id, seconds FROM ratings WHERE annotator = 'ana'").fetchall())
    assert report.added == len(clips) and set(rated) == set(with_clips)
    assert all(seconds is not None and seconds >= 0 for seconds in rated.values())  # the time each took came home
