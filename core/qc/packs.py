"""Annotation packs: a rating queue carried to an annotator on another machine as one zip file, and the ratings
made there merged back — instead of sharing the project's SQLite over a network drive (which SQLite's locking
does not survive).

Round trip (docs/qc.md, "Annotation packs"):

1. `create_pack(project, queue, annotator, out)` writes `A.sbpack`: `manifest.json` (format, the project's
   stable id, queue, annotator, the queue's clips in order with their texts), `audio/<sha256>.<ext>` for those
   clips, and an empty `ratings.jsonl`. Nothing else of the project goes in: no keys, no other tables.
2. `open_pack(A.sbpack)` unpacks it once into a small real project next to it (`A.sbpack.d/`, same clip ids),
   so the rating screen and `RatingSession` work on it unchanged; reopening reuses the folder and its ratings.
3. `save_pack_ratings(A.sbpack)` gives each rating of the folder a uuid (once) and writes them all, undone ones
   included, into the pack's `ratings.jsonl`. The annotator sends the pack back.
4. `unpack(project, A.sbpack)` merges those ratings: a uuid already merged adds nothing (a rating undone since
   is marked undone at home), a pack from another project is refused, and clips the same annotator rated
   differently at home are reported as conflicts (both rows kept; the newest row counts, as always).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import re
import secrets
import shutil
import tempfile
import uuid
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

from spokenbench.core.errors import SpokenBenchError
from spokenbench.core.qc import store
from spokenbench.core.qc.queues import MAX_RATING_SECONDS, RATINGS, _queue_id
from spokenbench.core.store import Project
from spokenbench.core.store.database import utc_now
from spokenbench.core.store.meta import read_meta, write_meta
from spokenbench.core.tables import current_umask

PACK_FORMAT = "spokenbench-annotation-pack"
PACK_FORMAT_VERSION = 1
PACK_SUFFIX = ".sbpack"
MANIFEST_NAME = "manifest.json"
RATINGS_NAME = "ratings.jsonl"
PROJECT_ID_KEY = "project_id"
PACK_ID_KEY = "pack_id"  # in a pack folder's project_meta: which pack it was opened from
_AUDIO_NAME = re.compile(r"^audio/([0-9a-f]{64})\.([A-Za-z0-9]{1,8})$")
_RATING_FIELDS = (
    "origin_uuid", "clip_id", "annotator", "rating", "note", "created_at", "undone_at", "undone_by", "seconds",
)  # fmt: skip


@dataclass(frozen=True)
class PackSummary:
    path: Path
    pack_id: str
    project_id: str
    queue: str
    annotator: str
    clips: int
    audio_files: int


@dataclass(frozen=True)
class Pack:
    """A pack as read and checked: its manifest and the ratings it carries."""

    path: Path
    manifest: dict
    ratings: list[dict]

    @property
    def pack_id(self) -> str:
        return self.manifest["pack_id"]


@dataclass(frozen=True)
class RatingConflict:
    clip_id: int
    annotator: str
    pack_rating: str
    project_rating: str
    project_rated_at: str

    def as_dict(self) -> dict:
        return dict(self.__dict__)


@dataclass
class MergeReport:
    pack_id: str
    queue: str
    added: int = 0
    already_merged: int = 0
    newly_undone: int = 0
    conflicts: list[RatingConflict] = field(default_factory=list)

    def as_dict(self) -> dict:
        data = dict(self.__dict__)
        data["conflicts"] = [conflict.as_dict() for conflict in self.conflicts]
        return data


# --------------------------------------------------------------------------------------------------
# Project identity


def ensure_project_id(project: Project) -> str:
    """The project's stable id, created (uuid4) on first use: what a pack names as its home."""
    with project.transaction() as conn:
        project_id = read_meta(conn, PROJECT_ID_KEY)
        if project_id is None:
            project_id = str(uuid.uuid4())
            write_meta(conn, PROJECT_ID_KEY, project_id)
    return project_id


# --------------------------------------------------------------------------------------------------
# Clip ids in a pack: a keyed permutation of the project's (issue 24)
#
# A pack names clips by ids no reader can order by age: hidden control clips are made when their queue is, so
# their project ids are the newest. Each id is sent through a 62-bit Feistel permutation keyed by a secret kept in
# the project (never in a pack); merging maps the pack's ids back. Packs made before carry the project's ids
# (no "clip_ids" in the manifest) and merge as they are.

CLIP_ID_KEY = "pack_clip_id_key"  # project_meta: the permutation's key
KEYED_CLIP_IDS = "keyed"  # manifest["clip_ids"] of packs whose ids are permuted
_HALF_BITS = 31
_HALF = (1 << _HALF_BITS) - 1


def _clip_id_key(project: Project, create: bool) -> bytes | None:
    key = read_meta(project.conn, CLIP_ID_KEY)
    if key is None and create:
        with project.transaction() as conn:
            key = read_meta(conn, CLIP_ID_KEY)
            if key is None:
                key = secrets.token_hex(32)
                write_meta(conn, CLIP_ID_KEY, key)
    return None if key is None else bytes.fromhex(key)


def _round(key: bytes, number: int, half: int) -> int:
    digest = hmac.new(key, f"{number}:{half}".encode(), hashlib.sha256).digest()
    return int.from_bytes(digest[:4], "big") & _HALF


def permute_clip_id(key: bytes, clip_id: int, inverse: bool = False) -> int:
    """A project clip id ↔ its id in packs (a bijection on [0, 2^62))."""
    if not 0 <= clip_id < 1 << (2 * _HALF_BITS):
        raise SpokenBenchError(f"clip id {clip_id} is outside what a pack can name")
    left, right = clip_id >> _HALF_BITS, clip_id & _HALF
    for number in reversed(range(4)) if inverse else range(4):
        if inverse:
            left, right = right ^ _round(key, number, left), left
        else:
            left, right = right, left ^ _round(key, number, right)
    return (left << _HALF_BITS) | right


def _with_home_clip_ids(project: Project, pack: Pack) -> Pack:
    """The pack with its clip ids mapped back to the project's (a pack with keyed ids from a project without the
    key is not this project's)."""
    if pack.manifest.get("clip_ids") != KEYED_CLIP_IDS:
        return pack
    key = _clip_id_key(project, create=False)
    if key is None:
        raise SpokenBenchError(f"{pack.path} names clips by a key this project does not have; nothing merged")
    home = {clip["id"]: permute_clip_id(key, clip["id"], inverse=True) for clip in pack.manifest["clips"]}
    manifest = pack.manifest | {"clips": [clip | {"id": home[clip["id"]]} for clip in pack.manifest["clips"]]}
    ratings = [rating | {"clip_id": home[rating["clip_id"]]} for rating in pack.ratings]
    return Pack(pack.path, manifest, ratings)


# --------------------------------------------------------------------------------------------------
# Writing a pack


def create_pack(project: Project, queue: str, annotator: str, out: str | Path) -> PackSummary:
    """Write queue `queue` for `annotator` to the zip `out` (a new file; an existing one is never overwritten,
    it may hold ratings). The file appears whole or not at all."""
    annotator = (annotator or "").strip()
    if not annotator:
        raise SpokenBenchError("a pack needs the annotator's name (--annotator)")
    out = Path(out)
    if out.exists():
        raise SpokenBenchError(f"{out} already exists; choose another --out (an existing pack may hold ratings)")
    project_id = ensure_project_id(project)
    conn = project.conn
    queue_id = _queue_id(conn, queue)
    queue_settings = store.queue_row(conn, queue_id)
    clips = store.pack_clip_rows(conn, queue_id)
    if not clips:
        raise SpokenBenchError(f"rating queue '{queue}' has no clips to pack")
    id_key = _clip_id_key(project, create=True)
    clips = [clip | {"id": permute_clip_id(id_key, clip["id"])} for clip in clips]
    audio: dict[str, str] = {}
    for clip in clips:
        if not project.audio.has(clip["sha256"], clip["audio_format"]):
            raise SpokenBenchError(
                f"clip {clip['id']}'s audio is missing from the project; run `spokenbench check` first"
            )
        audio[clip["sha256"]] = f"audio/{clip['sha256']}.{clip['audio_format']}"
    manifest = {
        "format": PACK_FORMAT,
        "format_version": PACK_FORMAT_VERSION,
        "pack_id": str(uuid.uuid4()),
        "project_id": project_id,
        "project_name": project.path.name,
        "queue": queue_settings,
        "annotator": annotator,
        "created_at": utc_now(),
        "clips": clips,
        "clip_ids": KEYED_CLIP_IDS,
        "audio": audio,
    }
    out.parent.mkdir(parents=True, exist_ok=True)

    def write(archive: zipfile.ZipFile) -> None:
        archive.writestr(MANIFEST_NAME, json.dumps(manifest, ensure_ascii=False, indent=1))
        for sha256, name in audio.items():
            extension = name.rsplit(".", 1)[1]
            archive.writestr(name, project.audio.read_bytes(sha256, extension), compress_type=zipfile.ZIP_STORED)
        archive.writestr(RATINGS_NAME, "")

    _write_zip_atomically(out, write)
    return PackSummary(out, manifest["pack_id"], project_id, queue, annotator, len(clips), len(audio))


def _write_zip_atomically(path: Path, fill) -> None:
    """Write a zip through a temp file renamed into place, with the permissions of a plain `open` (the umask's)
    or, when replacing a pack, the ones it had — not the temp file's 0600."""
    mode = path.stat().st_mode & 0o777 if path.exists() else 0o666 & ~current_umask()
    fd, temp_name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".part")
    try:
        with os.fdopen(fd, "wb") as handle:
            with zipfile.ZipFile(handle, "w", compression=zipfile.ZIP_DEFLATED) as archive:
                fill(archive)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temp_name, mode)
        os.replace(temp_name, path)
    except BaseException:
        if os.path.exists(temp_name):
            os.unlink(temp_name)
        raise


# --------------------------------------------------------------------------------------------------
# Reading and checking a pack


def read_pack(path: str | Path) -> Pack:
    """Open and check a pack (manifest, ratings); anything damaged or foreign is a SpokenBenchError naming it."""
    path = Path(path)
    if not path.is_file():
        raise SpokenBenchError(f"{path}: no such pack file")
    try:
        with zipfile.ZipFile(path) as archive:
            names = set(archive.namelist())
            if MANIFEST_NAME not in names:
                raise SpokenBenchError(f"{path} is not a SpokenBench annotation pack: {MANIFEST_NAME} is missing")
            manifest = json.loads(archive.read(MANIFEST_NAME).decode("utf-8"))
            ratings_text = archive.read(RATINGS_NAME).decode("utf-8") if RATINGS_NAME in names else None
    except SpokenBenchError:
        raise
    except (zipfile.BadZipFile, EOFError, OSError, KeyError, zipfile.LargeZipFile) as error:
        raise SpokenBenchError(f"{path} is damaged or not a SpokenBench annotation pack: {error}") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise SpokenBenchError(f"{path}: {MANIFEST_NAME} is damaged: {error}") from None
    _check_manifest(path, manifest)
    if ratings_text is None:
        raise SpokenBenchError(f"{path} is damaged: {RATINGS_NAME} is missing")
    return Pack(path, manifest, _parse_ratings(path, ratings_text, manifest))


def _check_manifest(path: Path, manifest) -> None:
    if not isinstance(manifest, dict) or manifest.get("format") != PACK_FORMAT:
        raise SpokenBenchError(f"{path} is not a SpokenBench annotation pack (its manifest names no pack format)")
    version = manifest.get("format_version")
    if version != PACK_FORMAT_VERSION:
        raise SpokenBenchError(
            f"{path} is pack format {version!r}; this version reads format {PACK_FORMAT_VERSION} (update SpokenBench)"
        )
    for key in ("pack_id", "project_id", "annotator", "created_at"):
        if not isinstance(manifest.get(key), str) or not manifest[key]:
            raise SpokenBenchError(f"{path}: the manifest's '{key}' is missing or not text")
    if not isinstance(manifest.get("queue"), dict) or not isinstance(manifest["queue"].get("name"), str):
        raise SpokenBenchError(f"{path}: the manifest names no rating queue")
    if manifest.get("clip_ids", KEYED_CLIP_IDS) != KEYED_CLIP_IDS:
        raise SpokenBenchError(f"{path}: the manifest's clip_ids is not one this version reads")
    clips, audio = manifest.get("clips"), manifest.get("audio")
    if not isinstance(clips, list) or not clips or not isinstance(audio, dict):
        raise SpokenBenchError(f"{path}: the manifest lists no clips")
    for clip in clips:
        if not isinstance(clip, dict) or not isinstance(clip.get("id"), int) or clip.get("sha256") not in audio:
            raise SpokenBenchError(f"{path}: the manifest lists a clip without an id or audio")
    for sha256, name in audio.items():
        match = _AUDIO_NAME.match(name) if isinstance(name, str) else None
        if match is None or match.group(1) != sha256:
            raise SpokenBenchError(f"{path}: the manifest names an audio file it should not ({name!r})")


def _parse_ratings(path: Path, text: str, manifest: dict) -> list[dict]:
    clip_ids = {clip["id"] for clip in manifest["clips"]}
    ratings, seen = [], set()
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{path}: {RATINGS_NAME} line {number}"
        try:
            row = json.loads(line)
        except json.JSONDecodeError as error:
            raise SpokenBenchError(f"{where} is damaged: {error}") from None
        if not isinstance(row, dict):
            raise SpokenBenchError(f"{where} is not a rating")
        rating = {key: row.get(key) for key in _RATING_FIELDS}
        if not isinstance(rating["origin_uuid"], str) or rating["origin_uuid"] in seen:
            raise SpokenBenchError(f"{where}: a rating without a uuid of its own")
        if rating["clip_id"] not in clip_ids:
            raise SpokenBenchError(f"{where}: clip {rating['clip_id']!r} is not in this pack")
        if rating["rating"] not in RATINGS:
            raise SpokenBenchError(f"{where}: rating {rating['rating']!r} is not one of {', '.join(RATINGS)}")
        for key in ("annotator", "created_at"):
            if not isinstance(rating[key], str) or not rating[key].strip():
                raise SpokenBenchError(f"{where}: '{key}' is missing")
        seconds = rating["seconds"]  # the time the rating took (absent in packs written before it was kept)
        if seconds is not None and (
            isinstance(seconds, bool) or not isinstance(seconds, int | float) or not 0 <= seconds <= MAX_RATING_SECONDS
        ):
            raise SpokenBenchError(f"{where}: 'seconds' must be a number from 0 to {MAX_RATING_SECONDS:,.0f}")
        seen.add(rating["origin_uuid"])
        ratings.append(rating)
    return ratings


# --------------------------------------------------------------------------------------------------
# Rating offline: the pack as a small project


def pack_folder(pack_path: str | Path) -> Path:
    """Where `open_pack` keeps the pack's project: `A.sbpack.d/` next to `A.sbpack`."""
    pack_path = Path(pack_path)
    return pack_path.with_name(pack_path.name + ".d")


def open_pack(pack_path: str | Path) -> Project:
    """The pack as a real project (created next to it on first open, reused after), holding just the queue, its
    clips and audio, and the ratings made in it: the same screens rate it as any project."""
    pack = read_pack(pack_path)
    folder = pack_folder(pack.path)
    if folder.exists():
        project = Project.open(folder)
        found = read_meta(project.conn, PACK_ID_KEY)
        if found != pack.pack_id:
            project.close()
            raise SpokenBenchError(
                f"{folder} belongs to another pack ({found or 'none'}); move it away to open {pack.path}"
            )
        return project
    temp = Path(tempfile.mkdtemp(dir=folder.parent, prefix=f".{folder.name}."))
    os.rmdir(temp)
    try:
        with Project.create(temp) as project:
            _fill_pack_project(project, pack)
    except BaseException:
        shutil.rmtree(temp, ignore_errors=True)  # a damaged pack leaves no half-made folder behind
        raise
    os.replace(temp, folder)  # the folder appears complete or not at all
    return Project.open(folder)


def _fill_pack_project(project: Project, pack: Pack) -> None:
    with zipfile.ZipFile(pack.path) as archive:
        for sha256, name in pack.manifest["audio"].items():
            try:
                data = archive.read(name)
            except (KeyError, zipfile.BadZipFile, EOFError, OSError) as error:
                raise SpokenBenchError(f"{pack.path} is damaged: audio {name} cannot be read ({error})") from None
            if hashlib.sha256(data).hexdigest() != sha256:
                raise SpokenBenchError(f"{pack.path} is damaged: audio {name} does not match its hash")
            project.audio.put_bytes(data, name.rsplit(".", 1)[1])
    with project.transaction() as conn:
        store.insert_pack_contents(conn, pack.manifest["queue"], pack.manifest["clips"])
        queue_id = store.queue_id_by_name(conn, pack.manifest["queue"]["name"])
        for rating in pack.ratings:  # a pack written back earlier carries its ratings along
            store.insert_merged_rating(conn, rating, queue_id)
        write_meta(conn, PACK_ID_KEY, pack.pack_id)
        write_meta(conn, "pack_annotator", pack.manifest["annotator"])
        write_meta(conn, "pack_project_id", pack.manifest["project_id"])


def save_pack_ratings(pack_path: str | Path) -> int:
    """Write every rating made in the pack's folder (undone ones too, with their uuids) into the pack file,
    replacing its ratings.jsonl; returns how many ratings the pack now carries."""
    pack = read_pack(pack_path)
    folder = pack_folder(pack.path)
    if not folder.exists():
        raise SpokenBenchError(f"{folder} does not exist: open the pack first (nothing was rated in it)")
    with Project.open(folder) as project:
        if read_meta(project.conn, PACK_ID_KEY) != pack.pack_id:
            raise SpokenBenchError(f"{folder} belongs to another pack than {pack.path}")
        with project.transaction() as conn:
            store.assign_origin_uuids(conn, lambda: str(uuid.uuid4()))
        ratings = store.all_ratings_with_origin(project.conn)
    lines = "".join(
        json.dumps({key: rating[key] for key in _RATING_FIELDS}, ensure_ascii=False) + "\n" for rating in ratings
    )

    if _stored_ratings_text(pack.path) == lines:
        return len(ratings)  # the file already says exactly this: no rewrite

    def copy_with_new_ratings(archive: zipfile.ZipFile) -> None:
        with zipfile.ZipFile(pack.path) as source:
            for info in source.infolist():
                if info.filename != RATINGS_NAME:
                    archive.writestr(info, source.read(info.filename))
        archive.writestr(RATINGS_NAME, lines)

    _write_zip_atomically(pack.path, copy_with_new_ratings)
    return len(ratings)


def _stored_ratings_text(path: Path) -> str | None:
    try:
        with zipfile.ZipFile(path) as archive:
            return archive.read(RATINGS_NAME).decode("utf-8")
    except (KeyError, zipfile.BadZipFile, OSError, UnicodeDecodeError):
        return None


# --------------------------------------------------------------------------------------------------
# Merging a pack's ratings back


def unpack(project: Project, pack_path: str | Path) -> MergeReport:
    """Merge a pack's ratings into the project it was made from, in one transaction (all or nothing)."""
    pack = read_pack(pack_path)
    manifest = pack.manifest
    home_id = read_meta(project.conn, PROJECT_ID_KEY)
    if home_id != manifest["project_id"]:
        raise SpokenBenchError(
            f"{pack.path} was made from another project ({manifest.get('project_name', '?')}, id "
            f"{manifest['project_id']}), not this one ({home_id or 'no id: it never made a pack'}); nothing merged"
        )
    pack = _with_home_clip_ids(project, pack)
    manifest = pack.manifest
    report = MergeReport(pack.pack_id, manifest["queue"]["name"])
    pack_uuids = {rating["origin_uuid"] for rating in pack.ratings}
    with project.transaction() as conn:
        missing = {clip["id"] for clip in manifest["clips"]} - store.clip_ids_present(
            conn, (c["id"] for c in manifest["clips"])
        )
        if missing:
            raise SpokenBenchError(
                f"{pack.path} names clips this project no longer has ({sorted(missing)[:5]}); nothing merged"
            )
        queue_id = store.queue_id_by_name(conn, report.queue)  # None if the queue was dropped since: ratings stay
        for rating in pack.ratings:
            earlier = store.rating_by_origin(conn, rating["origin_uuid"])
            if earlier is None:
                store.insert_merged_rating(conn, rating, queue_id)
                report.added += 1
            else:
                report.already_merged += 1
                if rating["undone_at"] and earlier["undone_at"] is None:
                    store.mark_rating_undone(
                        conn, earlier["id"], rating["undone_at"], rating["undone_by"] or rating["annotator"]
                    )
                    report.newly_undone += 1
        report.conflicts = _conflicts(conn, pack, pack_uuids)
    return report


def _conflicts(conn, pack: Pack, pack_uuids: set[str]) -> list[RatingConflict]:
    """Clips whose newest live pack rating differs from a live rating the same annotator made at home."""
    newest_in_pack: dict[tuple[int, str], dict] = {}
    for rating in pack.ratings:
        key = (rating["clip_id"], rating["annotator"])
        if rating["undone_at"]:
            continue
        newest_in_pack[key] = rating  # ratings.jsonl is in the order they were made
    conflicts = []
    for (clip_id, annotator), rating in sorted(newest_in_pack.items()):
        home = store.live_home_rating_of(conn, clip_id, annotator, sorted(pack_uuids))
        if home is not None and home["rating"] != rating["rating"]:
            conflicts.append(RatingConflict(clip_id, annotator, rating["rating"], home["rating"], home["created_at"]))
    return conflicts
