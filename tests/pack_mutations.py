"""Bad annotation packs, generated from a valid one: every member and every field of the manifest and of the
ratings mutated systematically (removed, null, wrong type, huge, out of range, foreign), the zip structure
damaged (encryption flag, unknown or corrupt compression, duplicate or unknown members, lying sizes), pack
bombs, and tampering (another annotator, clips outside the queue, another key, edits without re-signing).

A variant is data: `make(parts, out)` writes the bad pack, `must_name` is what the refusal must mention,
`home_only` marks tampering only the home project can see (the annotator's app has no record to compare with).
Fields come from the valid pack itself, so a field added to the format is mutated without a new test."""

from __future__ import annotations

import copy
import json
import os
import shutil
import struct
import warnings
import zipfile
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from support import tone, write_jsonl

from spokenbench.core.audio.io import encode_wav
from spokenbench.core.cli.main import main as cli_main
from spokenbench.core.importers import ImportOptions, import_files
from spokenbench.core.qc import store
from spokenbench.core.qc.pack_folders import open_pack, pack_folder, save_pack_ratings
from spokenbench.core.qc.packs import MANIFEST_NAME, RATINGS_NAME, SIGNATURE_NAME, ratings_signature
from spokenbench.core.qc.queues import MAX_RATING_SECONDS, rate_clip
from spokenbench.core.qc.rating_session import SynchronousRatingSession
from spokenbench.core.store import Project
from spokenbench.core.store.database import utc_now


@dataclass
class PackParts:
    """A valid pack taken apart: its members in order, its manifest and ratings decoded, and an extra clip id of
    the home project that is not in the pack's queue."""

    members: list[tuple[str, bytes]]
    manifest: dict
    ratings: list[dict]
    outside_clip_id: int

    @classmethod
    def of(cls, path: Path, outside_clip_id: int) -> PackParts:
        with zipfile.ZipFile(path) as archive:
            members = [(info.filename, archive.read(info.filename)) for info in archive.infolist()]
        data = dict(members)
        ratings = [json.loads(line) for line in data[RATINGS_NAME].decode().splitlines() if line.strip()]
        return cls(members, json.loads(data[MANIFEST_NAME]), ratings, outside_clip_id)

    @property
    def audio_names(self) -> list[str]:
        return [name for name, _ in self.members if name.startswith("audio/")]


@dataclass
class Variant:
    id: str  # "<class>:<what>"
    make: Callable[[PackParts, Path], Path]
    must_name: str | tuple[str, ...]  # the refusal names this (or one of these)
    home_only: bool = False
    away_only: bool = False  # only the annotator's app reads it (audio): `unpack` at home never does
    heavy: bool = False  # builds or reads tens of MB: slow tests only
    cls: str = field(init=False)

    def __post_init__(self):
        self.cls = self.id.split(":", 1)[0]

    def named_in(self, message: str) -> bool:
        names = (self.must_name,) if isinstance(self.must_name, str) else self.must_name
        return any(name in message for name in names)


# ------------------------------------------------------------------------------------------------ the valid pack

QUEUE = "qc-pack"
ITEMS = [
    {
        "id": f"q{n}",
        "language": "en",
        "subject": "misc",
        "question": f"What is {n} plus two?",
        "options": [str(n + 2), str(n + 3), str(n + 4), str(n + 5)],
        "answer": "A",
    }
    for n in range(1, 4)
]


def build_rated_pack(root: Path) -> tuple[Path, Path, int]:
    """A project of three items with two clips each (real WAV audio), a queue of four of them packed for 'ana',
    rated in the opened pack (three ratings, the last undone) and written back; 'bob' rated at home."""
    project_dir = root / "project"
    with Project.create(project_dir) as project:
        import_files(project, [write_jsonl(root / "items.jsonl", ITEMS)], "mcq", ImportOptions(source="packs"))
        clip_ids = []
        for number, (item_id,) in enumerate(project.conn.execute("SELECT id FROM items ORDER BY id").fetchall()):
            for part_number, part in enumerate(("question", "option_A")):
                audio = encode_wav(tone(200 + 40 * number + 7 * part_number, 0.2, 0.3, 16_000), 16_000)
                sha = project.audio.put_bytes(audio, "wav")
                with project.transaction() as conn:
                    clip_ids.append(
                        conn.execute(
                            "INSERT INTO clips(item_id, part, text, language, accent, voice, backend, cache_key, "
                            "sha256, audio_format, duration_s, sample_rate, status, created_at) "
                            "VALUES (?, ?, ?, 'en', 'american', 'v1', 'test', ?, ?, 'wav', 0.2, 16000, 'ok', ?)",
                            (item_id, part, f"text {number} {part}", f"key-{item_id}-{part}", sha, utc_now()),
                        ).lastrowid
                    )
        with project.transaction() as conn:
            rows = [(clip_id, "en", "american", None, None) for clip_id in clip_ids[:4]]
            store.insert_queue(conn, QUEUE, "unscreened", 0, 4, "{}", utc_now(), rows)
        rate_clip(project, clip_ids[0], "bob", "incorrect", queue=QUEUE)
    pack = root / "away" / "ana.sbpack"
    pack.parent.mkdir(parents=True, exist_ok=True)
    assert cli_main(["pack", str(project_dir), "--queue", QUEUE, "--annotator", "ana", "--out", str(pack)]) == 0
    with open_pack(pack) as pack_project:
        session = SynchronousRatingSession.open(pack_project, QUEUE, "ana")
        for key in ("1", "3", "2", "Ctrl+Z"):
            session.press(key)
    assert save_pack_ratings(pack) == 3
    shutil.rmtree(pack_folder(pack))
    return project_dir, pack, clip_ids[-1]


# ------------------------------------------------------------------------------------------------ writers


def write_pack(
    parts: PackParts,
    out: Path,
    manifest=None,
    ratings=None,
    *,
    sign: bool = True,
    key: str | None = None,
    drop: tuple[str, ...] = (),
    extra: tuple[tuple[str | zipfile.ZipInfo, bytes], ...] = (),
    replace: dict[str, bytes] | None = None,
) -> Path:
    """The pack with `manifest` (a dict, or raw text) and `ratings` (a list of rows, or raw text) in place of its
    own, re-signed with the pack's key (or `key`) as anyone holding the pack could — unless `sign` is False."""
    manifest = parts.manifest if manifest is None else manifest
    ratings = parts.ratings if ratings is None else ratings
    manifest_bytes = manifest if isinstance(manifest, bytes) else _text(manifest, indent=1)
    if isinstance(ratings, bytes):
        ratings_bytes = ratings
    elif isinstance(ratings, str):
        ratings_bytes = ratings.encode()
    else:
        ratings_bytes = "".join(_text(row).decode() + "\n" for row in ratings).encode()
    original = dict(parts.members)
    signature = original.get(SIGNATURE_NAME, b"")
    if sign:
        m = manifest if isinstance(manifest, dict) else {}
        pack_id = m.get("pack_id") if isinstance(m.get("pack_id"), str) else parts.manifest["pack_id"]
        annotator = m.get("annotator") if isinstance(m.get("annotator"), str) else parts.manifest["annotator"]
        signing_key = key or parts.manifest.get("signing_key") or "00" * 32  # a format-1 pack has none
        signature = ratings_signature(signing_key, pack_id, annotator, ratings_bytes).encode()
    contents = {**original, MANIFEST_NAME: manifest_bytes, RATINGS_NAME: ratings_bytes, SIGNATURE_NAME: signature}
    contents.update(replace or {})
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, _ in parts.members:
            if name not in drop:
                stored = zipfile.ZIP_STORED if name.startswith("audio/") else zipfile.ZIP_DEFLATED
                archive.writestr(name, contents[name], compress_type=stored)
        for name, data in extra:
            archive.writestr(name, data)
    return out


def _text(value, indent=None) -> bytes:
    return value.encode() if isinstance(value, str) else json.dumps(value, ensure_ascii=False, indent=indent).encode()


def patch_member_header(path: Path, name: str | list[str], **fields) -> Path:
    """Overwrite fields of members' local and central headers in place (flag, method, crc, sizes): what a crafted
    zip says about a member, whatever its bytes are."""
    names = {name} if isinstance(name, str) else set(name)
    data = bytearray(path.read_bytes())
    offsets = {"flag": (8, 6, "<H"), "method": (10, 8, "<H"), "crc": (16, 14, "<L"), "csize": (20, 18, "<L")}
    offsets["size"] = (24, 22, "<L")
    _, _, _, _, entries, _, position = _end_record(data)
    for _ in range(entries):
        name_length, extra_length, comment_length = struct.unpack("<HHH", data[position + 28 : position + 34])
        if data[position + 46 : position + 46 + name_length].decode() in names:
            local = struct.unpack("<L", data[position + 42 : position + 46])[0]
            for key, value in fields.items():
                central_at, local_at, form = offsets[key]
                struct.pack_into(form, data, position + central_at, value)
                struct.pack_into(form, data, local + local_at, value)
        position += 46 + name_length + extra_length + comment_length
    path.write_bytes(bytes(data))
    return path


def _end_record(data: bytes) -> tuple:
    at = data.rfind(b"PK\x05\x06")
    return (at, *struct.unpack("<HHHHLL", data[at + 4 : at + 20]))


def patch_end_record(path: Path, entries: int | None = None, directory_size: int | None = None) -> Path:
    data = bytearray(path.read_bytes())
    at = data.rfind(b"PK\x05\x06")
    if entries is not None:
        struct.pack_into("<HH", data, at + 8, entries, entries)
    if directory_size is not None:
        struct.pack_into("<L", data, at + 12, directory_size)
    path.write_bytes(bytes(data))
    return path


# ------------------------------------------------------------------------------------------------ values

HUGE_INT = 2**70
DIGITS_5000 = "7" * 5000


def wrong_values(required: bool) -> Iterator[tuple[str, object]]:
    """Values no field of a pack may hold (plus null where the field is required)."""
    yield "2^70", HUGE_INT
    yield "list", ["x"]
    yield "object", {"x": 1}
    yield "bool", True
    yield "huge-text", "x" * 200_001
    if required:
        yield "null", None


def with_field(row: dict, key: str, value) -> dict:
    changed = copy.deepcopy(row)
    changed[key] = value
    return changed


def without_field(row: dict, key: str) -> dict:
    changed = copy.deepcopy(row)
    del changed[key]
    return changed


# Fields that may be null in a valid pack (the project's columns that allow NULL); every other field is required.
NULLABLE_CLIP_FIELDS = {
    "queue_accent", "wer_bin", "error_rate", "item_id", "accent", "voice", "speaker_gender", "model", "duration_s",
    "sample_rate", "item_source", "item_source_id", "item_language", "item_subject", "item_question",
    "item_created_at",
}  # fmt: skip
NULLABLE_RATING_FIELDS = {"note", "undone_at", "undone_by", "seconds"}
ITEM_FIELDS = {"item_source", "item_source_id", "item_language", "item_subject", "item_question", "item_created_at"}


# ------------------------------------------------------------------------------------------------ variants


def pack_variants() -> Iterator[Variant]:
    yield from _structure_variants()
    yield from _json_variants()
    yield from _manifest_field_variants()
    yield from _rating_field_variants()
    yield from _tamper_variants()
    yield from _bomb_variants()


def _structure_variants() -> Iterator[Variant]:
    def encrypted(p, out):
        return patch_member_header(write_pack(p, out), MANIFEST_NAME, flag=1)

    def method(number):
        return lambda p, out: patch_member_header(write_pack(p, out), MANIFEST_NAME, method=number)

    def corrupt_deflate(p, out):
        write_pack(p, out)
        data = bytearray(out.read_bytes())
        with zipfile.ZipFile(out) as archive:
            info = archive.getinfo(MANIFEST_NAME)
        start = info.header_offset + 30 + len(MANIFEST_NAME)
        data[start : start + 16] = b"\xff" * 16  # an invalid block type at the stream's start
        out.write_bytes(bytes(data))
        return out

    def bad_crc(p, out):
        return patch_member_header(write_pack(p, out), RATINGS_NAME, crc=12345)

    def truncated(p, out):
        data = write_pack(p, out).read_bytes()
        out.write_bytes(data[: len(data) // 2])
        return out

    def raw(content):
        def make(p, out):
            out.write_bytes(content)
            return out

        return make

    def duplicate(p, out):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # zipfile's "Duplicate name": the point of this pack
            return write_pack(p, out, extra=((MANIFEST_NAME, dict(p.members)[MANIFEST_NAME]),))

    def unknown_member(name):
        return lambda p, out: write_pack(p, out, extra=((name, b"#!/bin/sh\necho hi\n"),))

    def dropped(name):
        return lambda p, out: write_pack(p, out, drop=(name,))

    def many_entries(p, out):
        return patch_end_record(write_pack(p, out), entries=60_000)

    def big_index(p, out):
        return patch_end_record(write_pack(p, out), directory_size=64 * 2**20)

    def directory(p, out):
        out.mkdir()
        return out

    def fifo(p, out):
        os.mkfifo(out)
        return out

    def dev_zero(p, out):
        out.symlink_to("/dev/zero")
        return out

    yield Variant("zip:encrypted-flag", encrypted, "encrypted")
    yield Variant("zip:method-99", method(99), "compression method 99")
    yield Variant("zip:method-bzip2", method(zipfile.ZIP_BZIP2), "compression method 12")
    yield Variant("zip:method-lzma", method(zipfile.ZIP_LZMA), "compression method 14")
    yield Variant("zip:corrupt-deflate", corrupt_deflate, MANIFEST_NAME)
    yield Variant("zip:bad-crc", bad_crc, RATINGS_NAME)
    yield Variant("zip:truncated", truncated, "damaged")
    yield Variant("zip:not-a-zip", raw(b"hello, not a zip"), "not a zip")
    yield Variant("zip:empty-file", raw(b""), "not a zip")
    yield Variant("zip:duplicate-member", duplicate, "appears twice")
    yield Variant("zip:unknown-member", unknown_member("run.sh"), "run.sh")
    yield Variant("zip:path-traversal", unknown_member("../../evil.py"), "evil.py")
    yield Variant("zip:unlisted-audio", unknown_member("audio/" + "ab" * 32 + ".wav"), "not named by the manifest")
    yield Variant("zip:no-manifest", dropped(MANIFEST_NAME), MANIFEST_NAME)
    yield Variant("zip:no-ratings", dropped(RATINGS_NAME), RATINGS_NAME)
    yield Variant("zip:no-signature", dropped(SIGNATURE_NAME), SIGNATURE_NAME)
    yield Variant("zip:no-audio", lambda p, out: write_pack(p, out, drop=(p.audio_names[0],)), "audio")
    yield Variant("zip:60000-entries", many_entries, "60,000 files")
    yield Variant("zip:64MB-index", big_index, "index")
    yield Variant("file:directory", directory, "not a regular file")
    yield Variant("file:fifo", fifo, "not a regular file")
    yield Variant("file:dev-zero-link", dev_zero, "not a regular file")
    yield Variant(
        "zip:audio-not-matching-hash",
        lambda p, out: write_pack(p, out, replace={p.audio_names[0]: b"RIFF not the audio"}),
        "does not match its hash",
        away_only=True,
    )


def _json_variants() -> Iterator[Variant]:
    deep = "[" * 100_000 + "]" * 100_000
    deep_line = "[" * 30_000 + "]" * 30_000  # within a rating line's length cap: refused for its depth

    def manifest_text(transform):
        def make(p, out):
            text = json.dumps(p.manifest, ensure_ascii=False)
            return write_pack(p, out, manifest=transform(text).encode())

        return make

    def ratings_text(transform):
        def make(p, out):
            lines = [json.dumps(row) for row in p.ratings]
            return write_pack(p, out, ratings=transform(lines))

        return make

    version = '"format_version": 2'
    yield Variant("json:manifest-5000-digit-int", manifest_text(lambda t: t.replace(version, f'"format_version": {DIGITS_5000}')), "5,000 digits")  # fmt: skip
    yield Variant("json:manifest-100000-deep", manifest_text(lambda t: t[:-1] + f', "x": {deep}}}'), "nested")
    yield Variant("json:manifest-nan", manifest_text(lambda t: t.replace(version, '"format_version": NaN')), "NaN")
    yield Variant("json:manifest-1e999", manifest_text(lambda t: t.replace(version, '"format_version": 1e999')), "too large")  # fmt: skip
    yield Variant("json:manifest-not-json", manifest_text(lambda t: t[:-2]), "not valid JSON")
    yield Variant("json:manifest-not-utf8", lambda p, out: write_pack(p, out, manifest=b'{"format": "\xff\xfe"}'), "UTF-8")  # fmt: skip
    yield Variant("json:manifest-array", manifest_text(lambda t: f"[{t}]"), "not a SpokenBench annotation pack")
    yield Variant("json:ratings-5000-digit-int", ratings_text(lambda ls: "\n".join([ls[0].replace('"clip_id": ', f'"clip_id": {DIGITS_5000}, "x": '), *ls[1:]])), "5,000 digits")  # fmt: skip
    yield Variant("json:ratings-100000-deep", ratings_text(lambda ls: "\n".join([deep_line, *ls])), "nested")
    yield Variant("json:ratings-not-json", ratings_text(lambda ls: "\n".join([ls[0][:-3], *ls[1:]])), "line 1")
    yield Variant("json:ratings-not-utf8", ratings_text(lambda ls: b"\xff\xfe\n"), "UTF-8")
    yield Variant("json:ratings-array-line", ratings_text(lambda ls: "\n".join(["[1, 2]", *ls])), "line 1")
    yield Variant("json:ratings-nested-object", ratings_text(lambda ls: "\n".join([ls[0][:-1] + ', "x": {}}', *ls[1:]])), "line 1")  # fmt: skip


def _manifest_field_variants() -> Iterator[Variant]:
    """Every field of the manifest, of its queue, of its first clip and of its audio table, broken each way."""
    top_keys = [
        "format", "format_version", "pack_id", "project_id", "project_name", "queue", "annotator", "created_at",
        "clips", "clip_ids", "audio", "signing_key",
    ]  # fmt: skip
    queue_keys = ["name", "strategy", "seed", "per_bin", "parameters_json", "created_at"]
    clip_keys = [
        "position", "queue_language", "queue_accent", "wer_bin", "error_rate", "id", "item_id", "part", "text",
        "language", "accent", "voice", "speaker_gender", "backend", "model", "cache_key", "sha256", "audio_format",
        "duration_s", "sample_rate", "created_at", "item_source", "item_source_id", "item_language",
        "item_subject", "item_question", "item_created_at",
    ]  # fmt: skip

    def top(change):
        return lambda p, out: write_pack(p, out, manifest=change(p.manifest))

    def queue(change):
        return lambda p, out: write_pack(p, out, manifest=with_field(p.manifest, "queue", change(p.manifest["queue"])))

    def clip(change, all_of_item=False):
        def make(p, out):
            manifest = copy.deepcopy(p.manifest)
            manifest["clips"][0] = change(manifest["clips"][0])
            return write_pack(p, out, manifest=manifest)

        return make

    for key in top_keys:
        # a pack without clip_ids names clips by the project's ids and its ratings carry no seconds
        missing_names = ("clip_ids", "seconds") if key == "clip_ids" else key
        yield Variant(f"manifest:{key}-missing", top(lambda m, k=key: without_field(m, k)), missing_names)
        for label, value in wrong_values(required=True):
            yield Variant(f"manifest:{key}-{label}", top(lambda m, k=key, v=value: with_field(m, k, v)), key)
    yield Variant("manifest:unknown-field", top(lambda m: with_field(m, "run_on_open", "rm -rf ~")), "run_on_open")
    yield Variant("manifest:format-version-3", top(lambda m: with_field(m, "format_version", 3)), "format_version")
    yield Variant("manifest:pack-id-not-uuid", top(lambda m: with_field(m, "pack_id", "../../x")), "pack_id")
    yield Variant("manifest:no-clips", top(lambda m: with_field(m, "clips", [])), "clips")
    for key in queue_keys:
        yield Variant(f"queue:{key}-missing", queue(lambda q, k=key: without_field(q, k)), key)
        for label, value in wrong_values(required=True):
            yield Variant(f"queue:{key}-{label}", queue(lambda q, k=key, v=value: with_field(q, k, v)), key)
    yield Variant(
        "queue:unknown-strategy", queue(lambda q: with_field(q, "strategy", "evil")), ("inconsistent", "was edited")
    )
    for key in clip_keys:
        yield Variant(f"clip:{key}-missing", clip(lambda c, k=key: without_field(c, k)), key)
        for label, value in wrong_values(required=key not in NULLABLE_CLIP_FIELDS):
            if key in ITEM_FIELDS and label == "null":
                continue
            yield Variant(f"clip:{key}-{label}", clip(lambda c, k=key, v=value: with_field(c, k, v)), key)
    yield Variant("clip:id-zero", clip(lambda c: with_field(c, "id", 0)), "'id'")
    yield Variant("clip:id-negative", clip(lambda c: with_field(c, "id", -3)), "'id'")
    yield Variant("clip:id-float", clip(lambda c: with_field(c, "id", 1.5)), "'id'")
    yield Variant("clip:id-beyond-keyed-range", clip(lambda c: with_field(c, "id", 2**62)), "'id'")
    yield Variant("clip:unknown-field", clip(lambda c: with_field(c, "is_control", True)), "is_control")

    def duplicate_clip(p, out):
        manifest = copy.deepcopy(p.manifest)
        manifest["clips"][1] = {**manifest["clips"][0], "position": manifest["clips"][1]["position"]}
        return write_pack(p, out, manifest=manifest)

    def same_item_differently(p, out):
        manifest = copy.deepcopy(p.manifest)
        second = manifest["clips"][1]
        second["item_id"] = manifest["clips"][0]["item_id"]
        second["item_question"] = "another question"
        return write_pack(p, out, manifest=manifest)

    def audio_name(name):
        def make(p, out):
            manifest = copy.deepcopy(p.manifest)
            sha = next(iter(manifest["audio"]))
            manifest["audio"][sha] = name
            return write_pack(p, out, manifest=manifest)

        return make

    yield Variant("clip:duplicate-identity", duplicate_clip, "repeats clip id")
    yield Variant("clip:item-described-twice", same_item_differently, "item")
    yield Variant("audio:path-traversal", audio_name("../../../etc/passwd"), "audio file")
    yield Variant("audio:other-hash", audio_name("audio/" + "0" * 64 + ".wav"), "audio")
    yield Variant("audio:not-text", audio_name(17), "audio")


def _rating_field_variants() -> Iterator[Variant]:
    keys = ["origin_uuid", "clip_id", "annotator", "rating", "note", "created_at", "undone_at", "undone_by", "seconds"]

    def first(change, sign=True):
        def make(p, out):
            ratings = copy.deepcopy(p.ratings)
            ratings[0] = change(ratings[0], p)
            return write_pack(p, out, ratings=ratings, sign=sign)

        return make

    for key in keys:
        yield Variant(f"rating:{key}-missing", first(lambda r, p, k=key: without_field(r, k)), key)
        for label, value in wrong_values(required=key not in NULLABLE_RATING_FIELDS):
            must = "line 1" if label == "huge-text" else key  # the line is longer than any rating's may be
            yield Variant(f"rating:{key}-{label}", first(lambda r, p, k=key, v=value: with_field(r, k, v)), must)
    semantic = {
        "another-annotator": (lambda r, p: with_field(r, "annotator", "bob"), "made for 'ana'"),
        "clip-outside-pack": (lambda r, p: with_field(r, "clip_id", p.outside_clip_id), "not a clip in this pack"),
        "clip-2^70": (lambda r, p: with_field(r, "clip_id", HUGE_INT), "not a clip in this pack"),
        "clip-as-text": (lambda r, p: with_field(r, "clip_id", str(r["clip_id"])), "not a clip in this pack"),
        "uuid-not-canonical": (lambda r, p: with_field(r, "origin_uuid", "x"), "origin_uuid"),
        "uuid-uppercase": (lambda r, p: with_field(r, "origin_uuid", r["origin_uuid"].upper()), "origin_uuid"),
        "rating-unknown": (lambda r, p: with_field(r, "rating", "great"), "great"),
        "note-number": (lambda r, p: with_field(r, "note", 5), "note"),
        "note-too-long": (lambda r, p: with_field(r, "note", "n" * 50_001), "note"),
        "created-not-a-time": (lambda r, p: with_field(r, "created_at", "yesterday"), "created_at"),
        "created-no-offset": (lambda r, p: with_field(r, "created_at", "2026-01-01T10:00:00"), "created_at"),
        "created-number": (lambda r, p: with_field(r, "created_at", 1700000000), "created_at"),
        "undone-number": (lambda r, p: {**r, "undone_at": 5, "undone_by": r["annotator"]}, "undone_at"),
        "undone-list": (lambda r, p: {**r, "undone_at": ["x"], "undone_by": r["annotator"]}, "undone_at"),
        "undone-before-created": (
            lambda r, p: {**r, "undone_at": "2000-01-01T00:00:00+00:00", "undone_by": r["annotator"]},
            "earlier",
        ),
        "undone-by-other": (lambda r, p: {**r, "undone_at": r["created_at"], "undone_by": "bob"}, "undone_by"),
        "undone-by-without-time": (lambda r, p: {**r, "undone_at": None, "undone_by": r["annotator"]}, "undone_by"),
        "undone-by-number": (lambda r, p: {**r, "undone_at": r["created_at"], "undone_by": 3}, "undone_by"),
        "unknown-field": (lambda r, p: with_field(r, "queue_id", 1), "queue_id"),
        "seconds-negative": (lambda r, p: with_field(r, "seconds", -1), "seconds"),
        "seconds-above-cap": (lambda r, p: with_field(r, "seconds", MAX_RATING_SECONDS + 1), "seconds"),
        "seconds-as-text": (lambda r, p: with_field(r, "seconds", "3.5"), "seconds"),
    }
    for label, (change, must) in semantic.items():
        yield Variant(f"rating:{label}", first(change), must)

    def duplicate_uuid(p, out):
        ratings = copy.deepcopy(p.ratings)
        ratings[1]["origin_uuid"] = ratings[0]["origin_uuid"]
        return write_pack(p, out, ratings=ratings)

    yield Variant("rating:duplicate-uuid", duplicate_uuid, "appears twice")


def _tamper_variants() -> Iterator[Variant]:
    """Edits by someone holding the pack (re-signed with its key) or not (signature left as it was)."""

    def unsigned_edit(change):
        def make(p, out):
            ratings = copy.deepcopy(p.ratings)
            ratings[0] = change(ratings[0])
            return write_pack(p, out, ratings=ratings, sign=False)

        return make

    yield Variant("tamper:verdict-changed-unsigned", unsigned_edit(lambda r: with_field(r, "rating", "incorrect" if r["rating"] != "incorrect" else "correct")), "signature")  # fmt: skip
    yield Variant("tamper:note-changed-unsigned", unsigned_edit(lambda r: with_field(r, "note", "edited")), "signature")
    yield Variant("tamper:rating-added-unsigned", lambda p, out: write_pack(p, out, ratings=[*p.ratings, {**p.ratings[0], "origin_uuid": "0" * 8 + "-0000-4000-8000-" + "0" * 12}], sign=False), "signature")  # fmt: skip
    yield Variant("tamper:rating-removed-unsigned", lambda p, out: write_pack(p, out, ratings=p.ratings[1:], sign=False), "signature")  # fmt: skip
    yield Variant("tamper:signature-garbage", lambda p, out: write_pack(p, out, replace={SIGNATURE_NAME: b"0" * 64}), "signature")  # fmt: skip

    def as_annotator(name):
        def make(p, out):
            manifest = with_field(p.manifest, "annotator", name)
            ratings = [{**r, "annotator": name, "undone_by": name if r["undone_by"] else None} for r in p.ratings]
            return write_pack(p, out, manifest=manifest, ratings=ratings)

        return make

    def new_key(p, out):
        key = "ab" * 32
        return write_pack(p, out, manifest=with_field(p.manifest, "signing_key", key), key=key)

    def new_pack_id(p, out):
        return write_pack(p, out, manifest=with_field(p.manifest, "pack_id", "11111111-2222-4333-8444-555555555555"))

    def other_project(p, out):
        return write_pack(p, out, manifest=with_field(p.manifest, "project_id", "11111111-2222-4333-8444-555555555555"))

    def extra_clip(p, out):
        manifest = copy.deepcopy(p.manifest)
        manifest["clips"][0]["id"] = p.outside_clip_id  # the pack now claims a clip outside its queue
        ratings = [{**r, "clip_id": p.outside_clip_id} for r in p.ratings]
        return write_pack(p, out, manifest=manifest, ratings=ratings)

    def unsigned_legacy(p, out):
        manifest = with_field(without_field(p.manifest, "signing_key"), "format_version", 1)
        return write_pack(p, out, manifest=manifest, sign=False, drop=(SIGNATURE_NAME,))

    def clip_text_edited(p, out):
        manifest = copy.deepcopy(p.manifest)
        manifest["clips"][0]["text"] = "a text the annotator never heard"
        return write_pack(p, out, manifest=manifest)

    def queue_renamed(p, out):
        return write_pack(p, out, manifest=with_field(p.manifest, "queue", {**p.manifest["queue"], "name": "other"}))

    yield Variant("tamper:clip-text-edited", clip_text_edited, "manifest.json was edited", home_only=True)
    yield Variant("tamper:queue-renamed", queue_renamed, "made for queue", home_only=True)
    yield Variant("tamper:another-annotator-resigned", as_annotator("bob"), "made for 'ana'", home_only=True)
    yield Variant("tamper:another-key-resigned", new_key, "signing key", home_only=True)
    yield Variant("tamper:unknown-pack-id", new_pack_id, "never made pack", home_only=True)
    yield Variant("tamper:another-project", other_project, "another project", home_only=True)
    yield Variant("tamper:clip-outside-queue", extra_clip, "clips differ", home_only=True)
    yield Variant("tamper:unsigned-format-1", unsigned_legacy, "unsigned", home_only=True)


def _bomb_variants() -> Iterator[Variant]:
    """Packs that would take far more memory or disk than their size: all refused from what they declare, what
    they expand to, or what they hold, before more than a block of them is read."""

    def padded_manifest(size, stored=False):
        def make(p, out):
            text = json.dumps(p.manifest)
            padding = " " * (size - len(text))
            manifest = (text[:-1] + padding + "}").encode()
            write_pack(p, out, manifest=manifest)
            if stored:
                _restore_stored(out, MANIFEST_NAME, manifest, p)
            return out

        return make

    def container_bomb(p, out):
        text = json.dumps(p.manifest)
        body = ",".join(["[]"] * 4_000_000)
        manifest = (text[:-1] + f', "x": [{body}]}}').encode()
        write_pack(p, out, manifest=manifest)
        return _restore_stored(out, MANIFEST_NAME, manifest, p)

    def big_audio(p, out):
        return write_pack(p, out, extra=(), replace={p.audio_names[0]: b"\0" * (65 * 2**20)})

    def lying_size(p, out):
        """The deflate stream expands to 100 MB of zeros while the headers declare the manifest's true size."""
        write_pack(p, out)
        bomb = zlib.compressobj(9, zlib.DEFLATED, -15)
        stream = bomb.compress(b"\0" * (100 * 2**20)) + bomb.flush()
        return _replace_member_data(out, MANIFEST_NAME, stream)

    def declared_total(p, out):
        extra = tuple((f"audio/{n:064x}.wav", b"x") for n in range(60))
        write_pack(p, out, extra=extra)
        names = [name for name, _ in extra]  # each within the audio cap, together far beyond the total
        return patch_member_header(out, names, size=60 * 2**20, csize=60 * 2**20)

    def many_ratings(p, out):
        line = json.dumps(p.ratings[0])
        return write_pack(p, out, ratings="\n".join([line] * 100_002), sign=False)

    def long_text_manifest(p, out):
        """The largest manifest the size cap lets through to parsing: one 15 MB text field, stored."""
        manifest = json.dumps(with_field(p.manifest, "project_name", "x" * (15 * 2**20))).encode()
        write_pack(p, out, manifest=manifest)
        return _restore_stored(out, MANIFEST_NAME, manifest, p)

    def full_ratings(p, out):
        """The most ratings a pack may carry (21 MB), signed, all parsed: the last one names an unknown verdict."""
        template = p.ratings[0]
        rows = [{**template, "origin_uuid": f"{n:08x}-0000-4000-8000-{n:012x}"} for n in range(100_000)]
        rows[-1]["rating"] = "great"
        return write_pack(p, out, ratings=rows)

    def huge_manifest(p, out):
        """1.9 GB of JSON (the manifest padded with spaces) in a ~2 MB pack: the deflate ratio's ceiling."""
        text = json.dumps(p.manifest)
        block = b" " * 2**20
        write_pack(p, out, drop=(MANIFEST_NAME,))
        with zipfile.ZipFile(out, "a", compression=zipfile.ZIP_DEFLATED) as archive:
            with archive.open(MANIFEST_NAME, "w") as member:
                member.write(text[:-1].encode())
                for _ in range(1900):
                    member.write(block)
                member.write(b"}")
        return out

    yield Variant("bomb:manifest-1.9GB-in-2MB", huge_manifest, "declares", heavy=True)
    yield Variant("bomb:manifest-15MB-text-field", long_text_manifest, "project_name", heavy=True)
    yield Variant("bomb:100000-ratings-parsed", full_ratings, "line 100000", heavy=True)
    yield Variant("bomb:manifest-64MB-of-spaces", padded_manifest(64 * 2**20), "declares", heavy=True)
    yield Variant("bomb:manifest-8MB-ratio", padded_manifest(8 * 2**20), "expands", heavy=True)
    yield Variant("bomb:manifest-4M-containers", container_bomb, "lists and objects", heavy=True)
    yield Variant("bomb:audio-65MB-of-zeros", big_audio, "declares", heavy=True)
    yield Variant("bomb:lying-size-100MB-stream", lying_size, MANIFEST_NAME, heavy=True)
    yield Variant("bomb:declared-total", declared_total, "add up to", heavy=False)
    yield Variant("bomb:100002-ratings", many_ratings, "ratings", heavy=True)


def _restore_stored(out: Path, name: str, data: bytes, parts: PackParts) -> Path:
    """Rewrite `out` with member `name` stored (not deflated): a large member within the ratio cap."""
    with zipfile.ZipFile(out) as archive:
        members = [(info, archive.read(info.filename)) for info in archive.infolist()]
    with zipfile.ZipFile(out, "w") as archive:
        for info, content in members:
            compress = zipfile.ZIP_STORED if info.filename == name else info.compress_type
            archive.writestr(info.filename, data if info.filename == name else content, compress_type=compress)
    return out


def _replace_member_data(out: Path, name: str, stream: bytes) -> Path:
    """Put the raw deflate `stream` in place of member `name`'s compressed bytes, its headers unchanged but for the
    compressed size (a crafted zip's data need not agree with what it declares)."""
    with zipfile.ZipFile(out) as archive:
        infos = archive.infolist()
    data = out.read_bytes()
    target = next(i for i in infos if i.filename == name)
    start = target.header_offset + 30 + len(target.filename.encode()) + len(target.extra)
    rebuilt = data[:start] + stream + data[start + target.compress_size :]
    shift = len(stream) - target.compress_size
    out.write_bytes(rebuilt)
    # headers after the member moved: rewrite the zip from the central directory with corrected offsets
    array = bytearray(rebuilt)
    at, disk, cd_disk, entries, total, size, central = _end_record(array)
    central += shift
    struct.pack_into("<L", array, at + 16, central)
    position = central
    for _ in range(total):
        name_length, extra_length, comment_length = struct.unpack("<HHH", array[position + 28 : position + 34])
        member = array[position + 46 : position + 46 + name_length].decode()
        offset = struct.unpack("<L", array[position + 42 : position + 46])[0]
        if offset > target.header_offset:
            struct.pack_into("<L", array, position + 42, offset + shift)
        if member == name:
            struct.pack_into("<L", array, position + 20, len(stream))
        position += 46 + name_length + extra_length + comment_length
    struct.pack_into("<L", array, target.header_offset + 18, len(stream))
    out.write_bytes(bytes(array))
    return out
