"""Annotation packs: a rating queue carried to an annotator on another machine as one zip file, and the ratings
made there merged back — instead of sharing the project's SQLite over a network drive (which SQLite's locking
does not survive).

Round trip (docs/qc.md, "Annotation packs"):

1. `create_pack(project, queue, annotator, out)` writes `A.sbpack`: `manifest.json` (format, the project's
   stable id, queue, annotator, the queue's clips in order with their texts, named by keyed ids, and the pack's
   signing key), `audio/<sha256>.<ext>` for those clips, an empty `ratings.jsonl` and its signature
   `ratings.sig`. Nothing else of the project goes in: no API keys, no sampling details, no other tables. The
   project records the pack (its key, annotator, queue, the project's ids of its clips and the manifest's sha256)
   in `project_meta` under `pack:<pack id>`.
2. `pack_folders.open_pack(A.sbpack)` unpacks it once into a small real project next to it (`A.sbpack.d/`,
   keyed clip ids) for the rating screen and `RatingSession`; reopening reuses the folder and its ratings, and
   takes in the ratings the file carries that the folder lacks (the file rated elsewhere).
3. `pack_folders.save_pack_ratings(A.sbpack)` gives each rating of the folder a uuid (once), takes in the file's
   own again, writes them all, undone ones included, into the pack's `ratings.jsonl`, signed (HMAC-SHA256, the
   pack's key). The annotator sends it back.
4. `unpack(project, A.sbpack)` merges those ratings: only a pack this project made, only ratings by its annotator
   for its clips (keyed ids mapped back first), signed with the key the project kept (an edited pack is refused);
   a uuid already merged adds nothing (one undone since is marked undone at home); clips the same annotator rated
   differently at home are conflicts (both rows kept; the newest counts).

A pack is data from another machine: every read is bounded (the file, each member's declared and actual size,
the compression ratio, the total, JSON depth, containers and numbers) and every field is checked before anything
is written — docs/reliability.md, "Packs", gives the caps and what the signature protects against."""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as _dt
import hashlib
import hmac
import json
import os
import re
import secrets
import struct
import uuid
import zipfile
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from spokenbench.core.foundation import file_system
from spokenbench.core.foundation.bounded_json import JsonBoundError, loads_bounded
from spokenbench.core.foundation.errors import InputError, SpokenBenchError
from spokenbench.core.foundation.safe_files import check_output_file, open_regular_file
from spokenbench.core.foundation.tables import current_umask
from spokenbench.core.qc import store
from spokenbench.core.qc.queues import MAX_RATING_SECONDS, RATINGS, _queue_id
from spokenbench.core.store import Project
from spokenbench.core.store.database import utc_now
from spokenbench.core.store.meta import read_meta, write_meta

PACK_FORMAT = "spokenbench-annotation-pack"
PACK_FORMAT_VERSION = 2  # 2: ratings signed (ratings.sig); 1: unsigned, merged only with accept_unsigned
LEGACY_FORMAT_VERSION = 1
PACK_SUFFIX = ".sbpack"
MANIFEST_NAME = "manifest.json"
RATINGS_NAME = "ratings.jsonl"
SIGNATURE_NAME = "ratings.sig"
PROJECT_ID_KEY = "project_id"
PACK_ID_KEY = "pack_id"  # in a pack folder's project_meta: which pack it was opened from
PACK_RECORD_PREFIX = "pack:"  # in the home project's project_meta: each pack it made (key, annotator, clips)
_SIGNATURE_DOMAIN = b"spokenbench-pack-ratings/2\n"

# Caps on what a pack may hold (docs/reliability.md, "Packs"): a crafted pack is refused before it costs more.
MAX_PACK_BYTES = 3 * 2**30  # the .sbpack file (a queue of 20,000 one-minute WAV clips is ~2.3 GB)
MAX_CENTRAL_DIRECTORY_BYTES = 4 * 2**20  # the zip's index, read whole by zipfile (20,003 names need ~2.5 MB)
MAX_CLIPS = 20_000
MAX_MEMBERS = MAX_CLIPS + 3  # manifest, ratings, signature and one audio file per clip
MAX_MANIFEST_BYTES = 16 * 2**20  # ~1 KB per clip: 16x what 20,000 clips need at most
MAX_RATINGS_BYTES = 32 * 2**20  # 100,000 ratings of ~250 bytes, with room for notes
MAX_RATINGS = 100_000  # five ratings (with undos) per clip of the largest pack
MAX_RATING_LINE_CHARS = 64 * 2**10
MAX_SIGNATURE_BYTES = 128
MAX_AUDIO_BYTES = 64 * 2**20  # one clip (~11 min of 48 kHz stereo 16-bit WAV); streamed to disk, never held
MAX_TOTAL_BYTES = 3 * 2**30  # all members uncompressed, as declared (and checked while reading)
MAX_RATIO = 200  # uncompressed / compressed size of a member larger than RATIO_FLOOR_BYTES
RATIO_FLOOR_BYTES = 2**20
MAX_JSON_DEPTH = 8  # the manifest is 3 levels deep; a rating line 1 (2 allowed, so a field's check names it)
MAX_TEXT_CHARS = 100_000  # any text field of the manifest (an item's question, a clip's text)
MAX_NAME_CHARS = 1_000  # the annotator's and the queue's names
MAX_NOTE_CHARS = 50_000  # a rating's note (its line stays within MAX_RATING_LINE_CHARS)
_READ_BLOCK = 2**20

_AUDIO_NAME = re.compile(r"^audio/([0-9a-f]{64})\.([A-Za-z0-9]{1,8})$")
_SHA256 = re.compile(r"^[0-9a-f]{64}$")
_UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
_EXTENSION = re.compile(r"^[A-Za-z0-9]{1,8}$")
_LEGACY_RATING_FIELDS = (
    "origin_uuid", "clip_id", "annotator", "rating", "note", "created_at", "undone_at", "undone_by",
)  # fmt: skip
# A rating of a pack with keyed clip ids (manifest "clip_ids": "keyed") also carries the seconds it took (or null);
# a pack made before either (no "clip_ids") carries exactly the legacy fields.
_RATING_FIELDS = (*_LEGACY_RATING_FIELDS, "seconds")
_MANIFEST_FIELDS = {
    "format", "format_version", "pack_id", "project_id", "project_name", "queue", "annotator", "created_at",
    "clips", "audio",
}  # fmt: skip
_OPTIONAL_MANIFEST_FIELDS = {"clip_ids"}  # absent in packs made before keyed clip ids (their ids are the project's)
_QUEUE_FIELDS = {
    "name": "name", "strategy": "text", "seed": "int", "per_bin": "int", "parameters_json": "text",
    "created_at": "text",
}  # fmt: skip
# Every field a packed clip carries (store.pack_clip_rows) and what it must be; a field not listed is refused.
_CLIP_FIELDS = {
    "position": "int", "queue_language": "text", "queue_accent": "opt_text", "wer_bin": "opt_int",
    "error_rate": "opt_number", "id": "id", "item_id": "opt_id", "part": "text", "text": "text",
    "language": "text", "accent": "opt_text", "voice": "opt_text", "speaker_gender": "gender",
    "backend": "text", "model": "opt_text", "cache_key": "text", "sha256": "sha256", "audio_format": "extension",
    "duration_s": "opt_number", "sample_rate": "opt_int", "created_at": "text", "item_source": "opt_text",
    "item_source_id": "opt_text", "item_language": "opt_text", "item_subject": "opt_text",
    "item_question": "opt_text", "item_created_at": "opt_text",
}  # fmt: skip
_ITEM_FIELDS = ("item_source", "item_source_id", "item_language", "item_subject", "item_question", "item_created_at")
_MAX_SQLITE_INT = 2**63 - 1


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
    """A pack as read and checked: its manifest, the ratings it carries (and their bytes as stored) and their
    signature (None in an unsigned format-1 pack)."""

    path: Path
    manifest: dict
    ratings: list[dict]
    ratings_bytes: bytes = b""
    signature: str | None = None
    manifest_sha256: str = ""  # of manifest.json's bytes: the home project recorded it when it made the pack

    @property
    def pack_id(self) -> str:
        return self.manifest["pack_id"]

    @property
    def signed(self) -> bool:
        return self.manifest["format_version"] >= 2


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
    signed: bool = True  # False: an unsigned format-1 pack merged with accept_unsigned

    def as_dict(self) -> dict:
        data = dict(self.__dict__)
        data["conflicts"] = [conflict.as_dict() for conflict in self.conflicts]
        return data


# --------------------------------------------------------------------------------------------------
# Project identity and the record of each pack made


def ensure_project_id(project: Project, new_id: str | None = None) -> str:
    """The project's stable id, created (uuid4, or `new_id`) on first use: what a pack names as its home."""
    with project.transaction() as conn:
        project_id = read_meta(conn, PROJECT_ID_KEY)
        if project_id is None:
            project_id = new_id or str(uuid.uuid4())
            write_meta(conn, PROJECT_ID_KEY, project_id)
    return project_id


def _pack_record(project: Project, pack_id: str) -> dict | None:
    """What the project recorded when it made pack `pack_id` (its key, annotator, queue, clip ids), or None."""
    text = read_meta(project.conn, PACK_RECORD_PREFIX + pack_id)
    if text is None:
        return None
    try:
        record = json.loads(text)
        if not isinstance(record, dict) or not {"key", "annotator", "queue", "clips", "manifest_sha256"} <= set(record):
            raise ValueError("fields missing")
    except ValueError as error:
        raise SpokenBenchError(f"{project.path}: the record of pack {pack_id} is damaged ({error})") from None
    return record


def ratings_signature(key_hex: str, pack_id: str, annotator: str, ratings_bytes: bytes) -> str:
    """HMAC-SHA256, with the pack's key, over the pack's id, its annotator and the exact bytes of ratings.jsonl."""
    message = _SIGNATURE_DOMAIN + json.dumps([pack_id, annotator]).encode() + b"\n" + ratings_bytes
    return hmac.new(bytes.fromhex(key_hex), message, hashlib.sha256).hexdigest()


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
_KEYED_ID_LIMIT = 1 << (2 * _HALF_BITS)


def _clip_id_key(project: Project) -> bytes | None:
    """The project's permutation key, or None before its first pack (`create_pack` stores one with the pack's
    record, so a failed `pack` leaves the project as it was)."""
    key = read_meta(project.conn, CLIP_ID_KEY)
    try:
        return None if key is None else bytes.fromhex(key)
    except ValueError:
        raise SpokenBenchError(f"{project.path}: the project's {CLIP_ID_KEY} is damaged (not hex)") from None


def _round(key: bytes, number: int, half: int) -> int:
    digest = hmac.new(key, f"{number}:{half}".encode(), hashlib.sha256).digest()
    return int.from_bytes(digest[:4], "big") & _HALF


def permute_clip_id(key: bytes, clip_id: int, inverse: bool = False) -> int:
    """A project clip id ↔ its id in packs (a bijection on [0, 2^62))."""
    if not 0 <= clip_id < _KEYED_ID_LIMIT:
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
    key = _clip_id_key(project)
    if key is None:
        raise SpokenBenchError(f"{pack.path} names clips by a key this project does not have; nothing merged")
    home = {clip["id"]: permute_clip_id(key, clip["id"], inverse=True) for clip in pack.manifest["clips"]}
    manifest = pack.manifest | {"clips": [clip | {"id": home[clip["id"]]} for clip in pack.manifest["clips"]]}
    ratings = [rating | {"clip_id": home[rating["clip_id"]]} for rating in pack.ratings]
    return dataclasses.replace(pack, manifest=manifest, ratings=ratings)  # bytes, signature and hash as read


# --------------------------------------------------------------------------------------------------
# Writing a pack


def create_pack(project: Project, queue: str, annotator: str, out: str | Path) -> PackSummary:
    """Write queue `queue` for `annotator` to the zip `out` (a new file; an existing one is never overwritten,
    it may hold ratings). The file appears whole or not at all, and the project records the pack (its signing key,
    annotator and clips) in the same step: a failed `pack` leaves the project as it was."""
    annotator = (annotator or "").strip()
    if not annotator:
        raise SpokenBenchError("a pack needs the annotator's name (--annotator)")
    if len(annotator) > MAX_NAME_CHARS:
        raise SpokenBenchError(f"--annotator is {len(annotator):,} characters long (at most {MAX_NAME_CHARS:,})")
    out = Path(out)
    check_output_file(out)  # its folder exists (never created), it is not a folder
    if out.exists():
        raise SpokenBenchError(f"{out} already exists; choose another --out (an existing pack may hold ratings)")
    conn = project.conn
    project_id = read_meta(conn, PROJECT_ID_KEY) or str(uuid.uuid4())
    queue_id = _queue_id(conn, queue)
    queue_settings = store.queue_row(conn, queue_id)
    clips = store.pack_clip_rows(conn, queue_id)
    if not clips:
        raise SpokenBenchError(f"rating queue '{queue}' has no clips to pack")
    if len(clips) > MAX_CLIPS:
        raise SpokenBenchError(f"rating queue '{queue}' has {len(clips):,} clips; a pack holds at most {MAX_CLIPS:,}")
    audio: dict[str, str] = {}
    for clip in clips:
        if not project.audio.has(clip["sha256"], clip["audio_format"]):
            raise SpokenBenchError(
                f"clip {clip['id']}'s audio is missing from the project; run `spokenbench check` first"
            )
        audio[clip["sha256"]] = f"audio/{clip['sha256']}.{clip['audio_format']}"
    home_clip_ids = sorted(clip["id"] for clip in clips)
    id_key_hex = read_meta(conn, CLIP_ID_KEY) or secrets.token_hex(32)  # stored with the record, below
    id_key = bytes.fromhex(id_key_hex)
    clips = [clip | {"id": permute_clip_id(id_key, clip["id"])} for clip in clips]
    key = secrets.token_hex(32)
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
        "signing_key": key,
    }
    manifest_bytes = json.dumps(manifest, ensure_ascii=False, indent=1).encode("utf-8")
    record = {
        "key": key,
        "annotator": annotator,
        "queue": queue_settings["name"],
        "clips": home_clip_ids,  # the project's ids (the manifest's keyed ones map back to exactly these)
        "manifest_sha256": hashlib.sha256(manifest_bytes).hexdigest(),
        "created_at": manifest["created_at"],
    }

    def write(archive: zipfile.ZipFile, _sync) -> None:
        archive.writestr(MANIFEST_NAME, manifest_bytes)
        for sha256, name in audio.items():
            extension = name.rsplit(".", 1)[1]
            archive.writestr(name, project.audio.read_bytes(sha256, extension), compress_type=zipfile.ZIP_STORED)
        archive.writestr(RATINGS_NAME, "")
        archive.writestr(SIGNATURE_NAME, ratings_signature(key, manifest["pack_id"], annotator, b""))

    def record_pack() -> None:
        with project.transaction() as conn:
            if read_meta(conn, PROJECT_ID_KEY) is None:
                write_meta(conn, PROJECT_ID_KEY, project_id)
            stored_key = read_meta(conn, CLIP_ID_KEY)
            if stored_key is None:
                write_meta(conn, CLIP_ID_KEY, id_key_hex)
            elif stored_key != id_key_hex:  # another `pack` made the project's first key meanwhile
                raise SpokenBenchError("another pack was made from this project at the same time; run `pack` again")
            write_meta(conn, PACK_RECORD_PREFIX + manifest["pack_id"], json.dumps(record))

    write_zip_atomically(out, write, before_replace=record_pack)
    return PackSummary(out, manifest["pack_id"], project_id, queue, annotator, len(clips), len(audio))


def write_zip_atomically(path: Path, fill, before_replace=None) -> None:
    """Write a zip through a temp file renamed into place (`replace_atomically`), with the umask's permissions or
    those of the pack it replaces. `fill(archive, sync)`: `sync()` puts what is written so far on the disk."""
    mode = path.stat().st_mode & 0o777 if path.exists() else 0o666 & ~current_umask()

    def write(handle) -> None:
        def sync() -> None:
            handle.flush()
            os.fdatasync(handle.fileno())

        with zipfile.ZipFile(handle, "w", compression=zipfile.ZIP_DEFLATED) as archive:
            fill(archive, sync)

    file_system.replace_atomically(path, write, mode, before_replace)


# --------------------------------------------------------------------------------------------------
# Reading and checking a pack: bounded reads first, then every field


def read_pack(path: str | Path) -> Pack:
    """Open and check a pack (its zip structure, manifest, ratings and, in a signed pack, their signature with the
    pack's own key); anything damaged, oversized, edited or foreign is a SpokenBenchError naming the pack and
    the member or field at fault. Audio is not read here (`open_pack` streams it)."""
    path = Path(path)
    with open_archive(path) as (archive, members):
        manifest_bytes = _read_member(path, archive, members[MANIFEST_NAME], MAX_MANIFEST_BYTES)
        manifest = _parse_json(path, MANIFEST_NAME, manifest_bytes, MAX_MANIFEST_BYTES, MAX_CLIPS + 16)
        _check_manifest(path, manifest)
        _check_audio_members(path, manifest, members)
        ratings_bytes = _read_member(path, archive, members[RATINGS_NAME], MAX_RATINGS_BYTES)
        signature = None
        if manifest["format_version"] >= 2:
            if SIGNATURE_NAME not in members:
                raise SpokenBenchError(f"{path}: {SIGNATURE_NAME} is missing (the pack was edited or damaged)")
            raw = _read_member(path, archive, members[SIGNATURE_NAME], MAX_SIGNATURE_BYTES)
            signature = raw.decode("ascii", errors="replace").strip()
        elif SIGNATURE_NAME in members:
            raise SpokenBenchError(f"{path}: a format-1 pack cannot carry {SIGNATURE_NAME}")
    unparsed = Pack(path, manifest, [], ratings_bytes, signature, hashlib.sha256(manifest_bytes).hexdigest())
    if unparsed.signed:  # before parsing: ratings edited without the key cost no more than their hash
        _check_signature(unparsed, manifest["signing_key"])
    clip_ids = {clip["id"] for clip in manifest["clips"]}
    ratings = parse_ratings(path, ratings_bytes, manifest["annotator"], clip_ids, rating_fields(manifest))
    return dataclasses.replace(unparsed, ratings=ratings)


def _check_signature(pack: Pack, key_hex: str) -> None:
    expected = ratings_signature(key_hex, pack.pack_id, pack.manifest["annotator"], pack.ratings_bytes)
    if not hmac.compare_digest(expected, pack.signature or ""):
        raise SpokenBenchError(
            f"{pack.path}: {RATINGS_NAME} does not match its signature ({SIGNATURE_NAME}): the ratings were edited "
            "outside SpokenBench or damaged; nothing merged"
        )


@contextlib.contextmanager
def open_archive(path: Path) -> Iterator[tuple[zipfile.ZipFile, dict[str, zipfile.ZipInfo]]]:
    """The pack's zip, after checking that it is a regular file within MAX_PACK_BYTES whose index is small and
    whose members are all a pack's, within their caps, neither encrypted nor compressed by anything but deflate."""
    try:  # checked on the open file (core/foundation/safe_files.py): nothing can be swapped in between, a FIFO never waits
        handle = open_regular_file(path, MAX_PACK_BYTES)
    except FileNotFoundError:
        raise SpokenBenchError(f"{path}: no such pack file") from None
    except InputError as error:
        raise SpokenBenchError(f"{error}; a pack is a .sbpack file") from None
    with handle:
        size = os.fstat(handle.fileno()).st_size
        try:  # only opening is converted here: an error of the caller's (a full disk while copying) stays its own
            _check_end_record(path, handle, size)
            archive = zipfile.ZipFile(handle)
        except (zipfile.BadZipFile, EOFError, OSError, ValueError, struct.error) as error:
            raise SpokenBenchError(f"{path} is damaged or not a SpokenBench annotation pack: {error}") from None
        with archive:
            yield archive, _check_members(path, archive)


def _check_end_record(path: Path, handle, size: int) -> None:
    """Read the zip's end record ourselves, so an index zipfile would read whole is refused first: at most
    MAX_MEMBERS entries and MAX_CENTRAL_DIRECTORY_BYTES, and no ZIP64 (packs stay below 4 GB)."""
    tail_size = min(size, 22 + 65_535)
    handle.seek(size - tail_size)
    tail = handle.read(tail_size)
    at = tail.rfind(b"PK\x05\x06")
    if at < 0 or len(tail) - at < 22:
        raise SpokenBenchError(f"{path} is damaged or not a SpokenBench annotation pack: not a zip file")
    entries, directory_size, directory_offset = struct.unpack("<HLL", tail[at + 10 : at + 20])
    end_offset = size - tail_size + at
    handle.seek(max(end_offset - 20, 0))
    zip64 = end_offset >= 20 and handle.read(4) == b"PK\x06\x07"
    if zip64 or entries == 0xFFFF or 0xFFFFFFFF in (directory_size, directory_offset):
        raise SpokenBenchError(f"{path}: the zip uses ZIP64 records, which a pack never needs")
    if entries > MAX_MEMBERS:
        raise SpokenBenchError(f"{path}: the zip lists {entries:,} files; a pack holds at most {MAX_MEMBERS:,}")
    if directory_size > MAX_CENTRAL_DIRECTORY_BYTES:
        raise SpokenBenchError(
            f"{path}: the zip's index is {directory_size:,} bytes (at most {MAX_CENTRAL_DIRECTORY_BYTES:,})"
        )


def _member_cap(name: str) -> int:
    return {
        MANIFEST_NAME: MAX_MANIFEST_BYTES,
        RATINGS_NAME: MAX_RATINGS_BYTES,
        SIGNATURE_NAME: MAX_SIGNATURE_BYTES,
    }.get(name, MAX_AUDIO_BYTES)


def _check_members(path: Path, archive: zipfile.ZipFile) -> dict[str, zipfile.ZipInfo]:
    infos = archive.infolist()
    if len(infos) > MAX_MEMBERS:
        raise SpokenBenchError(f"{path}: the zip holds {len(infos):,} files; a pack holds at most {MAX_MEMBERS:,}")
    members: dict[str, zipfile.ZipInfo] = {}
    total = 0
    for info in infos:
        name = info.filename
        where = f"{path}: member {name[:120]!r}"
        if name in members:
            raise SpokenBenchError(f"{where} appears twice in the zip")
        if name not in (MANIFEST_NAME, RATINGS_NAME, SIGNATURE_NAME) and not _AUDIO_NAME.match(name):
            raise SpokenBenchError(f"{where} is not part of an annotation pack")
        if info.flag_bits & 0x1:
            raise SpokenBenchError(f"{where} is encrypted; packs are never encrypted")
        if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
            raise SpokenBenchError(
                f"{where} uses compression method {info.compress_type}; packs use only stored (0) or deflate (8)"
            )
        cap = _member_cap(name)
        if info.file_size > cap:
            raise SpokenBenchError(f"{where} declares {info.file_size:,} bytes (at most {cap:,})")
        if info.file_size > RATIO_FLOOR_BYTES and info.file_size > MAX_RATIO * max(info.compress_size, 1):
            raise SpokenBenchError(
                f"{where} expands {info.file_size / max(info.compress_size, 1):,.0f} times (at most {MAX_RATIO}): "
                "a zip bomb, not a pack"
            )
        total += info.file_size
        members[name] = info
    if total > MAX_TOTAL_BYTES:
        raise SpokenBenchError(f"{path}: its files add up to {total:,} bytes (at most {MAX_TOTAL_BYTES:,})")
    for required in (MANIFEST_NAME, RATINGS_NAME):
        if required not in members:
            raise SpokenBenchError(f"{path} is not a complete SpokenBench annotation pack: {required} is missing")
    return members


def member_blocks(path: Path, archive: zipfile.ZipFile, info: zipfile.ZipInfo) -> Iterator[bytes]:
    """A member's bytes a block at a time, never more than it declared (already checked against its cap);
    a corrupt stream or a wrong checksum is a SpokenBenchError naming the member."""
    read = 0
    try:
        with archive.open(info) as stream:
            while block := stream.read(_READ_BLOCK):
                read += len(block)
                if read > info.file_size:
                    raise SpokenBenchError(
                        f"{path}: {info.filename} holds more than the {info.file_size:,} bytes it declares"
                    )
                yield block
    except SpokenBenchError:
        raise
    except (zipfile.BadZipFile, zlib.error, EOFError, OSError, RuntimeError, NotImplementedError, ValueError) as error:
        raise SpokenBenchError(f"{path} is damaged: {info.filename} cannot be read ({error})") from None
    if read != info.file_size:
        raise SpokenBenchError(f"{path} is damaged: {info.filename} holds {read:,} of {info.file_size:,} bytes")


def _read_member(path: Path, archive: zipfile.ZipFile, info: zipfile.ZipInfo, cap: int) -> bytes:
    if info.file_size > cap:  # _check_members refused it already; kept next to the read it bounds
        raise SpokenBenchError(f"{path}: {info.filename} declares {info.file_size:,} bytes (at most {cap:,})")
    return b"".join(member_blocks(path, archive, info))


def _parse_json(path: Path, name: str, data: bytes, cap: int, max_containers: int):
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise SpokenBenchError(f"{path}: {name} is not UTF-8 text (byte {error.start})") from None
    try:
        return loads_bounded(text, max_chars=cap, max_depth=MAX_JSON_DEPTH, max_containers=max_containers)
    except JsonBoundError as error:
        raise SpokenBenchError(f"{path}: {name} {error}") from None


def _check_manifest(path: Path, manifest) -> None:
    if not isinstance(manifest, dict) or manifest.get("format") != PACK_FORMAT:
        raise SpokenBenchError(f"{path} is not a SpokenBench annotation pack (its manifest names no pack format)")
    version = manifest.get("format_version")
    if type(version) is not int or version not in (LEGACY_FORMAT_VERSION, PACK_FORMAT_VERSION):
        raise SpokenBenchError(
            f"{path}: the manifest's format_version is {str(version)[:40]!r}; this version reads packs of format "
            f"{LEGACY_FORMAT_VERSION} and {PACK_FORMAT_VERSION} (update SpokenBench)"
        )
    allowed = _MANIFEST_FIELDS | _OPTIONAL_MANIFEST_FIELDS | ({"signing_key"} if version >= 2 else set())
    unknown = sorted(set(manifest) - allowed)
    if unknown:
        raise SpokenBenchError(f"{path}: the manifest holds fields a pack never has: {', '.join(unknown)[:200]}")
    where = f"{path}: the manifest"
    for key in ("pack_id", "project_id"):
        _check_value(where, key, manifest.get(key), "uuid")
    _check_value(where, "annotator", manifest.get("annotator"), "name")
    _check_value(where, "project_name", manifest.get("project_name"), "text")
    _check_value(where, "created_at", manifest.get("created_at"), "text")
    if version >= 2:
        _check_value(where, "signing_key", manifest.get("signing_key"), "sha256")
    if "clip_ids" in manifest and manifest["clip_ids"] != KEYED_CLIP_IDS:
        value = manifest["clip_ids"]
        shown = repr(value) if len(repr(value)) <= 60 else type(value).__name__
        raise SpokenBenchError(f"{where}: 'clip_ids' must be {KEYED_CLIP_IDS!r} (or absent), not {shown}")
    queue = manifest.get("queue")
    if not isinstance(queue, dict):
        raise SpokenBenchError(f"{where} names no rating queue")
    _check_fields(f"{where}'s queue", queue, _QUEUE_FIELDS)
    clips, audio = manifest.get("clips"), manifest.get("audio")
    if not isinstance(clips, list) or not clips:
        raise SpokenBenchError(f"{where} lists no clips ('clips')")
    if not isinstance(audio, dict):
        raise SpokenBenchError(f"{where} has no table of audio files ('audio')")
    if len(clips) > MAX_CLIPS or len(audio) > MAX_CLIPS:
        raise SpokenBenchError(f"{where} lists {max(len(clips), len(audio)):,} clips (at most {MAX_CLIPS:,})")
    _check_clips(path, clips, audio, keyed=manifest.get("clip_ids") == KEYED_CLIP_IDS)


def _check_clips(path: Path, clips: list, audio: dict, keyed: bool) -> None:
    ids: set[int] = set()
    positions: set[int] = set()
    items: dict[int, tuple] = {}
    for number, clip in enumerate(clips, start=1):
        where = f"{path}: the manifest's clip #{number}"
        if not isinstance(clip, dict):
            raise SpokenBenchError(f"{where} is not a clip (an object in 'clips')")
        _check_fields(where, clip, _CLIP_FIELDS)
        if keyed and clip["id"] >= _KEYED_ID_LIMIT:
            raise SpokenBenchError(f"{where}: 'id' {clip['id']} is beyond a keyed clip id's range (below 2^62)")
        if clip["id"] in ids:
            raise SpokenBenchError(f"{where} repeats clip id {clip['id']}: each clip appears once in a pack")
        if clip["position"] in positions:
            raise SpokenBenchError(f"{where} repeats queue position {clip['position']}")
        ids.add(clip["id"])
        positions.add(clip["position"])
        if audio.get(clip["sha256"]) != f"audio/{clip['sha256']}.{clip['audio_format']}":
            raise SpokenBenchError(f"{where} (id {clip['id']}) has no audio file in the manifest's 'audio'")
        if clip["item_id"] is not None:
            item = tuple(clip[key] for key in _ITEM_FIELDS)
            if items.setdefault(clip["item_id"], item) != item:
                raise SpokenBenchError(f"{where} describes item {clip['item_id']} differently from an earlier clip")
            for key in ("item_source", "item_source_id", "item_language", "item_question", "item_created_at"):
                _check_value(where, key, clip[key], "text")
    used = {clip["sha256"] for clip in clips}
    for sha256, name in audio.items():
        match = _AUDIO_NAME.match(name) if isinstance(name, str) else None
        if match is None or match.group(1) != sha256 or sha256 not in used:
            raise SpokenBenchError(f"{path}: the manifest names an audio file it should not ({str(name)[:120]!r})")


def _check_audio_members(path: Path, manifest: dict, members: dict[str, zipfile.ZipInfo]) -> None:
    """The zip holds exactly the audio files the manifest names, none empty."""
    listed = set(manifest["audio"].values())
    present = {name for name in members if name.startswith("audio/")}
    for name in sorted(present - listed)[:1]:
        raise SpokenBenchError(f"{path}: member {name!r} is not named by the manifest")
    for name in sorted(listed - present)[:1]:
        raise SpokenBenchError(f"{path} is damaged: audio {name} is missing")
    for name in sorted(listed):
        if members[name].file_size == 0:
            raise SpokenBenchError(f"{path} is damaged: audio {name} is empty")


def _check_fields(where: str, row: dict, kinds: dict[str, str]) -> None:
    unknown = sorted(set(row) - set(kinds))
    if unknown:
        raise SpokenBenchError(f"{where} holds fields a pack never has: {', '.join(map(str, unknown))[:200]}")
    for key, kind in kinds.items():
        if key not in row:
            raise SpokenBenchError(f"{where} lacks '{key}'")
        _check_value(where, key, row[key], kind)


def _check_value(where: str, key: str, value, kind: str) -> None:
    """Refuse `value` unless it is of `kind`, naming the field and what it must be."""
    optional = kind.startswith("opt_")
    if optional and value is None:
        return
    base = kind.removeprefix("opt_")
    if base in ("int", "id"):
        low = 1 if base == "id" else -_MAX_SQLITE_INT
        ok = type(value) is int and low <= value <= _MAX_SQLITE_INT
        need = "a positive integer below 2^63" if base == "id" else "an integer within ±2^63"
    elif base == "number":
        ok = type(value) in (int, float) and abs(value) <= 1e15
        need = "a number"
    elif base in ("text", "name"):
        limit = MAX_TEXT_CHARS if base == "text" else MAX_NAME_CHARS
        ok = isinstance(value, str) and (optional or bool(value.strip())) and len(value) <= limit
        need = f"{'' if optional else 'non-empty '}text of at most {limit:,} characters"
    elif base == "uuid":
        ok = isinstance(value, str) and bool(_UUID.match(value))
        need = "a uuid"
    elif base == "sha256":
        ok = isinstance(value, str) and bool(_SHA256.match(value))
        need = "64 lowercase hex digits"
    elif base == "extension":
        ok = isinstance(value, str) and bool(_EXTENSION.match(value))
        need = "a file extension"
    elif base == "gender":
        ok = value in (None, "male", "female")
        need = "male, female or null"
    else:  # pragma: no cover - a kind above is misspelt
        raise AssertionError(kind)
    if not ok:
        shown = repr(value) if len(repr(value)) <= 60 else f"{type(value).__name__} of {len(repr(value)):,} characters"
        raise SpokenBenchError(f"{where}: '{key}' must be {need}{' or null' if optional else ''}, not {shown}")


def _timestamp(where: str, key: str, value) -> _dt.datetime:
    """An ISO-8601 time with its UTC offset, as SpokenBench writes them."""
    try:
        if not isinstance(value, str) or len(value) > 40:
            raise ValueError
        moment = _dt.datetime.fromisoformat(value)
        if moment.tzinfo is None:
            raise ValueError
    except ValueError:
        shown = repr(value) if len(repr(value)) <= 60 else type(value).__name__
        raise SpokenBenchError(f"{where}: '{key}' must be an ISO-8601 time with its UTC offset, not {shown}") from None
    return moment


def rating_fields(manifest: dict) -> tuple[str, ...]:
    """The fields each rating of this pack has: with keyed clip ids, the seconds it took too."""
    return _RATING_FIELDS if manifest.get("clip_ids") == KEYED_CLIP_IDS else _LEGACY_RATING_FIELDS


def parse_ratings(
    path: Path, data: bytes, annotator: str, clip_ids: set[int], fields: tuple[str, ...] = _RATING_FIELDS
) -> list[dict]:
    """Every line of ratings.jsonl as a rating by `annotator` of one of `clip_ids` with exactly `fields`, every
    field checked; each rating returned has all of _RATING_FIELDS (seconds None when the pack has none)."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise SpokenBenchError(f"{path}: {RATINGS_NAME} is not UTF-8 text (byte {error.start})") from None
    lines = text.split("\n")
    if len(lines) > MAX_RATINGS + 1:
        raise SpokenBenchError(f"{path}: {RATINGS_NAME} holds {len(lines):,} lines (at most {MAX_RATINGS:,} ratings)")
    ratings, seen = [], set()
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        where = f"{path}: {RATINGS_NAME} line {number}"
        try:
            row = loads_bounded(line, max_chars=MAX_RATING_LINE_CHARS, max_depth=2, max_containers=9)
        except JsonBoundError as error:
            raise SpokenBenchError(f"{where} {error}") from None
        if not isinstance(row, dict):
            raise SpokenBenchError(f"{where} is not a rating")
        if set(row) != set(fields):
            odd = sorted(set(row) ^ set(fields))
            why = "; only a pack with keyed clip ids ('clip_ids') carries 'seconds'" if odd == ["seconds"] else ""
            raise SpokenBenchError(
                f"{where}: a rating has exactly the fields {', '.join(fields)} ({', '.join(odd)[:200]}){why}"
            )
        _check_rating(where, row, annotator, clip_ids)
        if row["origin_uuid"] in seen:
            raise SpokenBenchError(f"{where}: uuid {row['origin_uuid']} appears twice")
        seen.add(row["origin_uuid"])
        ratings.append({key: row.get(key) for key in _RATING_FIELDS})  # seconds None in a legacy pack
    return ratings


def _check_rating(where: str, row: dict, annotator: str, clip_ids: set[int]) -> None:
    _check_value(where, "origin_uuid", row["origin_uuid"], "uuid")
    if type(row["clip_id"]) is not int or row["clip_id"] not in clip_ids:
        shown = repr(row["clip_id"])[:60]
        raise SpokenBenchError(f"{where}: 'clip_id' {shown} is not a clip in this pack")
    if row["annotator"] != annotator:
        shown = repr(row["annotator"])[:60]
        raise SpokenBenchError(f"{where}: 'annotator' is {shown}, but the pack was made for '{annotator}'")
    if row["rating"] not in RATINGS:
        raise SpokenBenchError(f"{where}: rating {repr(row['rating'])[:60]} is not one of {', '.join(RATINGS)}")
    note = row["note"]
    if note is not None and (not isinstance(note, str) or len(note) > MAX_NOTE_CHARS):
        shown = repr(note) if len(repr(note)) <= 60 else type(note).__name__
        raise SpokenBenchError(
            f"{where}: 'note' must be text of at most {MAX_NOTE_CHARS:,} characters or null, not {shown}"
        )
    seconds = row.get("seconds")  # the time the rating took (null when unknown; absent in a legacy pack)
    if seconds is not None and (type(seconds) not in (int, float) or not 0 <= seconds <= MAX_RATING_SECONDS):
        shown = repr(seconds) if len(repr(seconds)) <= 60 else type(seconds).__name__
        raise SpokenBenchError(
            f"{where}: 'seconds' must be a number from 0 to {MAX_RATING_SECONDS:,.0f} or null, not {shown}"
        )
    created = _timestamp(where, "created_at", row["created_at"])
    if row["undone_at"] is None:
        if row["undone_by"] is not None:
            raise SpokenBenchError(f"{where}: 'undone_by' is set but 'undone_at' is not")
        return
    if _timestamp(where, "undone_at", row["undone_at"]) < created:
        raise SpokenBenchError(f"{where}: 'undone_at' is earlier than 'created_at'")
    if row["undone_by"] != annotator:
        shown = repr(row["undone_by"])[:60]
        raise SpokenBenchError(f"{where}: 'undone_by' is {shown}; in a pack only '{annotator}' undoes ratings")


# --------------------------------------------------------------------------------------------------
# Merging a pack's ratings back


def unpack(project: Project, pack_path: str | Path, accept_unsigned: bool = False) -> MergeReport:
    """Merge a pack's ratings into the project it was made from, in one transaction (all or nothing). A signed
    pack must match the record the project kept when it made it (annotator, clips, key) and carry ratings signed
    with that key; an unsigned (format-1) pack is merged only with `accept_unsigned`."""
    pack = read_pack(pack_path)
    manifest = pack.manifest
    home_id = read_meta(project.conn, PROJECT_ID_KEY)
    if home_id != manifest["project_id"]:
        raise SpokenBenchError(
            f"{pack.path} was made from another project ({str(manifest.get('project_name', '?'))[:80]}, id "
            f"{manifest['project_id']}), not this one ({home_id or 'no id: it never made a pack'}); nothing merged"
        )
    if not pack.signed and not accept_unsigned:
        raise SpokenBenchError(
            f"{pack.path} is an unsigned pack (format {LEGACY_FORMAT_VERSION}, made before SpokenBench signed "
            "packs): its ratings could have been edited by anyone. Nothing merged; to merge it anyway, check where "
            "it came from and run `spokenbench unpack` with --accept-unsigned"
        )
    pack = _with_home_clip_ids(project, pack)  # keyed ids back to the project's, before any check of clips
    manifest = pack.manifest
    if pack.signed:
        _check_against_record(project, pack)
    report = MergeReport(pack.pack_id, manifest["queue"]["name"], signed=pack.signed)
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
                continue
            if any(earlier[key] != rating[key] for key in ("clip_id", "annotator", "rating", "created_at")):
                raise SpokenBenchError(
                    f"{pack.path}: rating {rating['origin_uuid']} names another rating already in the project "
                    f"(clip {earlier['clip_id']} by {earlier['annotator']}); nothing merged"
                )
            report.already_merged += 1
            if rating["undone_at"] and earlier["undone_at"] is None:
                store.mark_rating_undone(conn, earlier["id"], rating["undone_at"], rating["undone_by"])
                report.newly_undone += 1
        report.conflicts = _conflicts(conn, pack, pack_uuids)
    return report


def _check_against_record(project: Project, pack: Pack) -> None:
    """The pack is one this project made, for the same annotator and clips, with the key it kept; its ratings
    are signed with that key (not only with the key the pack carries). `pack` has its clip ids mapped back to the
    project's (`_with_home_clip_ids`), which the record lists: a keyed id edited in the pack maps to another clip,
    and the manifest's sha256 pins every byte as packed."""
    record = _pack_record(project, pack.pack_id)
    if record is None:
        raise SpokenBenchError(
            f"{pack.path}: this project never made pack {pack.pack_id} (no record of it); nothing merged"
        )
    manifest = pack.manifest
    if manifest["annotator"] != record["annotator"]:
        raise SpokenBenchError(
            f"{pack.path}: the pack was made for '{record['annotator']}' but its manifest now names "
            f"'{manifest['annotator']}': it was edited; nothing merged"
        )
    if sorted(clip["id"] for clip in manifest["clips"]) != record["clips"]:
        raise SpokenBenchError(
            f"{pack.path}: its clips differ from the ones packed for {record['annotator']}: it was edited; "
            "nothing merged"
        )
    if manifest["queue"]["name"] != record["queue"]:
        raise SpokenBenchError(
            f"{pack.path}: the pack was made for queue '{record['queue']}', its manifest now names another: it was "
            "edited; nothing merged"
        )
    if not hmac.compare_digest(manifest["signing_key"], record["key"]):
        raise SpokenBenchError(f"{pack.path}: its signing key is not the one this pack was made with; nothing merged")
    if pack.manifest_sha256 != record["manifest_sha256"]:
        raise SpokenBenchError(f"{pack.path}: its {MANIFEST_NAME} was edited since the pack was made; nothing merged")
    _check_signature(pack, record["key"])


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
