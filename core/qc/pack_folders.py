"""Rating a pack where it was sent: `open_pack` unpacks it once into a small real project beside it (`A.sbpack.d/`)
for the rating screen and `RatingSession`, `save_pack_ratings` writes the ratings made there back into the file,
and `copy_pack_to` copies a pack found where it cannot be rated (read-only) to a folder of the annotator's. The
file may travel without its folder (rated on another machine, brought back): every save writes the folder's ratings
with those only the file carries, and opening takes those into the folder (`merged_ratings`,
`take_in_file_ratings`). The pack itself — its format, checks and caps, and merging it back home — is `packs`."""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import hashlib
import json
import os
import shutil
import sqlite3
import uuid
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from spokenbench.core.foundation import file_system
from spokenbench.core.foundation.errors import InputError, SpokenBenchError
from spokenbench.core.foundation.progress import Progress, no_progress
from spokenbench.core.foundation.safe_files import open_regular_file
from spokenbench.core.foundation.tables import current_umask
from spokenbench.core.qc import store
from spokenbench.core.qc.packs import (
    MAX_PACK_BYTES,
    PACK_ID_KEY,
    PACK_SUFFIX,
    RATINGS_NAME,
    SIGNATURE_NAME,
    Pack,
    member_blocks,
    open_archive,
    parse_ratings,
    rating_fields,
    ratings_signature,
    read_pack,
    write_zip_atomically,
)
from spokenbench.core.store import Project
from spokenbench.core.store.meta import read_meta, write_meta
from spokenbench.core.store.project import DATABASE_NAME

SYNC_BYTES, SAVE_LOCK_FILE = 4 * 2**20, ".pack-save.lock"  # a save syncs each 4 MiB; its lock in the pack's folder


class PackFolderNotWritable(SpokenBenchError):
    """The pack lies where its folder cannot be made (a read-only stick, a mounted image, a share without write
    rights): it must be copied somewhere writable first (`copy_pack_to`)."""

    def __init__(self, message: str, pack_path: Path, reason: str):
        super().__init__(message)
        self.pack_path, self.reason = pack_path, reason


COPY_BLOCK_BYTES, MAX_COPY_NAMES = 4 * 2**20, 100
COPY_REFUSALS = frozenset({errno.EROFS, errno.EACCES, errno.EPERM, errno.ENOSPC, errno.EDQUOT})


@dataclass(frozen=True)
class PackCopy:
    path: Path  # the copy to open
    earlier: bool  # an earlier copy of the same pack, reused (it may hold ratings)


def copy_pack_to(pack_path: str | Path, folder: str | Path, progress: Progress | None = None) -> PackCopy:
    """Where to rate a pack found where it cannot be rated: a copy in `folder` (the annotator's Documents), for
    `open_pack`. An earlier copy of the same pack there (the same pack id) is reused, never overwritten: it may
    hold ratings. A file of that name that is another pack or no pack is left alone: the copy is named
    "NAME (2).sbpack". The copy appears whole or not at all (`progress` hears its bytes; a cancel leaves nothing),
    its folder made at once, and it takes in the ratings the original carries and those of the original's own
    folder (rated on the stick before it went read-only) that it lacks."""
    progress, original = progress or no_progress(), read_pack(pack_path)
    folder = Path(folder)
    if not folder.is_dir():
        raise SpokenBenchError(f"{folder} is not a folder: choose a folder to copy {original.path.name} into")
    carried = dataclasses.replace(original, ratings=_ratings_with_its_folders(original))
    stem = original.path.name.removesuffix(PACK_SUFFIX)
    for number in range(1, MAX_COPY_NAMES + 1):
        target = folder / (original.path.name if number == 1 else f"{stem} ({number}){PACK_SUFFIX}")
        if not os.path.lexists(target):
            _copy_file(original.path, target, progress)
            if not _same_pack(target, original.pack_id):
                target.unlink()
                raise SpokenBenchError(f"{original.path} changed while it was copied; try again")
            earlier = False
        elif _same_pack(target, original.pack_id):
            if target.resolve() == original.path.resolve():
                raise SpokenBenchError(f"{folder} is where {original.path.name} is: choose another folder")
            earlier = True
        else:
            continue
        with open_pack(target, progress) as project:  # its folder made now if it had none, its file's ratings in
            take_in_file_ratings(project, carried, where=f"{original.path} (copied to {target})")
        return PackCopy(target, earlier)
    raise SpokenBenchError(f"{folder} already holds {MAX_COPY_NAMES} files named like {original.path.name}")


def _ratings_with_its_folders(pack: Pack) -> list[dict]:
    """The pack file's ratings with those of its own folder, where one is beside it (only read: it may be on a
    read-only stick), merged (`merged_ratings`): ratings made there that never reached the file. One never saved
    has no uuid yet: it is given the one its folder will give it (`rating_uuid`)."""
    folder = pack_folder(pack.path)
    if not (folder / DATABASE_NAME).is_file():
        return pack.ratings
    try:
        with Project.open(folder) as project:
            if read_meta(project.conn, PACK_ID_KEY) != pack.pack_id:
                return pack.ratings
            annotator = pack.manifest["annotator"]
            here = [r for r in store.all_ratings_with_origin(project.conn) if r["annotator"] == annotator]
    except (SpokenBenchError, sqlite3.Error, OSError):
        return pack.ratings  # a damaged folder: the file's ratings alone
    made = rating_uuid(pack.pack_id)
    for rating in here:
        if rating["origin_uuid"] is None:
            rating["origin_uuid"] = made(rating)
    return merged_ratings(here, pack.ratings, str(pack.path))


def rating_uuid(pack_id: str) -> Callable[[dict], str]:
    """The uuid a rating of this pack's folder is given when it first leaves it (a save, a take-in, a copy of a
    read-only pack): made from the pack, the row and what was rated when, so each way gives it the same one and a
    rating copied off a read-only stick, then saved on the stick later, is one rating at home, not two."""
    return lambda row: str(
        uuid.uuid5(uuid.NAMESPACE_URL, f"{pack_id}/{row['id']}/{row['clip_id']}/{row['created_at']}")
    )


def _same_pack(path: Path, pack_id: str) -> bool:
    if path.is_symlink() or not path.is_file():
        return False
    try:
        return read_pack(path).pack_id == pack_id
    except (SpokenBenchError, OSError):
        return False


def _copy_file(source: Path, target: Path, progress: Progress) -> None:
    """Copy `source` into a new file `target` through a temp file (never over a file that appeared meanwhile)."""
    try:
        handle = open_regular_file(source, MAX_PACK_BYTES)
    except InputError as error:
        raise SpokenBenchError(f"{error}; a pack is a .sbpack file") from None
    with handle:
        total = os.fstat(handle.fileno()).st_size

        def write(out) -> None:
            copied = 0
            while block := handle.read(COPY_BLOCK_BYTES):
                progress.check_cancelled()
                out.write(block)
                copied += len(block)
                progress.report(copied, total, f"copying {source.name} to {target.parent}")

        def still_free() -> None:
            if os.path.lexists(target):
                raise SpokenBenchError(f"{target} appeared while {source.name} was copied; try again")

        try:
            file_system.replace_atomically(target, write, 0o666 & ~current_umask(), before_replace=still_free)
        except OSError as error:
            if error.errno not in COPY_REFUSALS:
                raise
            raise SpokenBenchError(
                f"{source.name} ({total / 2**20:,.1f} MB) could not be copied to {target.parent}: "
                f"{error.strerror or error}; choose another folder"
            ) from None


def pack_folder(pack_path: str | Path) -> Path:
    """Where `open_pack` keeps the pack's project: `A.sbpack.d/` next to `A.sbpack`."""
    pack_path = Path(pack_path)
    return pack_path.with_name(pack_path.name + ".d")


def open_pack(
    pack_path: str | Path, progress: Progress | None = None, told: Callable[[TakenIn], None] | None = None
) -> Project:
    """The pack as a real project (created next to it on first open, reused after), holding just the queue, its
    clips and audio, and the ratings made in it: the same screens rate it as any project. A first opening copies
    every clip (~20 s for 112 MB on a USB 2 stick): `progress` hears the bytes, and a cancel leaves no folder.
    Reopened, the folder takes in what the file carries and it lacks (`take_in_file_ratings`; `told` hears it)."""
    pack, progress = read_pack(pack_path), progress or no_progress()
    folder = pack_folder(pack.path)
    if folder.exists():
        project = Project.open(folder)
        found = read_meta(project.conn, PACK_ID_KEY)
        if found != pack.pack_id:
            project.close()
            raise SpokenBenchError(
                f"{folder} belongs to another pack ({found or 'none'}); move it away to open {pack.path}"
            )
        try:
            taken = take_in_file_ratings(project, pack)
            if told is not None:
                told(taken)
        except BaseException:
            project.close()
            raise
        return project
    try:
        temp = file_system.make_temp_folder(folder)
    except OSError as error:
        if error.errno not in (errno.EROFS, errno.EACCES, errno.EPERM):
            raise
        raise PackFolderNotWritable(
            f"{pack.path} is in a folder that cannot be written ({error.strerror or error}): a pack is rated in a "
            f"folder made beside it, {folder.name}, and its ratings are saved into the pack file. Copy "
            f"{pack.path.name} to a folder of yours (Documents, the desktop) and open it there",
            pack.path,
            error.strerror or str(error),
        ) from None
    os.rmdir(temp)
    try:
        with Project.create(temp) as project:
            _fill_pack_project(project, pack, progress)
    except BaseException:
        shutil.rmtree(temp, ignore_errors=True)  # a damaged pack leaves no half-made folder behind
        raise
    os.replace(temp, folder)  # the folder appears complete or not at all
    return Project.open(folder)


@dataclass(frozen=True)
class TakenIn:
    """What `take_in_file_ratings` brought into a pack's folder from its file."""

    added: int = 0  # ratings the folder lacked
    updated: int = 0  # ratings it had, given the undo or the note the file's copy has


IDENTITY_FIELDS = ("clip_id", "annotator", "rating", "created_at")  # never change once a rating is made


def merged_ratings(
    here: list[dict], carried: list[dict], where: str, synced: dict[str, str] | None = None
) -> list[dict]:
    """The folder's ratings (`here`, in id order) and those of the file (`carried`) as one history: the file's that
    the folder lacks merged in by the time each was made, so that of a clip rated on both machines the later
    rating counts, as the newest does everywhere. Each side keeps its own order, and a rating the file lists after
    one both sides have stays after it whatever the clocks say (a machine whose clock is behind re-rating a clip
    after taking in the other's rating). A rating on both sides gets the undo the file's copy has, and its note
    where only the file's changed since the two last agreed (`synced`, `_with_what_only_the_file_has`). A uuid
    naming another rating on each side is refused."""
    theirs = {rating["origin_uuid"]: rating for rating in carried}
    position = {rating["origin_uuid"]: i for i, rating in enumerate(here) if rating["origin_uuid"]}
    ours = []
    for rating in here:
        other = theirs.get(rating["origin_uuid"]) if rating["origin_uuid"] else None
        if other is not None and any(other[key] != rating[key] for key in IDENTITY_FIELDS):
            raise SpokenBenchError(
                f"{where}: rating {rating['origin_uuid']} names another rating in the pack file than in its "
                f"folder (clip {rating['clip_id']}); nothing saved. Move one of them away"
            )
        ours.append(_with_what_only_the_file_has(rating, other, synced or {}) if other is not None else rating)
    extra, after = [], []  # the file's ratings the folder lacks, each with the place in `ours` it must follow
    last_shared = -1
    for rating in carried:
        if rating["origin_uuid"] in position:
            last_shared = max(last_shared, position[rating["origin_uuid"]])
        else:
            extra.append(rating)
            after.append(last_shared)
    merged, i, j = [], 0, 0
    while i < len(ours) and j < len(extra):
        if i > after[j] and extra[j]["created_at"] < ours[i]["created_at"]:
            merged.append(extra[j])
            j += 1
        else:
            merged.append(ours[i])
            i += 1
    return merged + ours[i:] + extra[j:]


def _with_what_only_the_file_has(rating: dict, other: dict, synced: dict[str, str]) -> dict:
    """A rating of the folder, undone where the file's copy is, and with the file's note where the folder's is
    still the one the two last agreed on (`synced`: the hash of each note as last saved into the file or taken in
    from it; none where there was no note): a note written, changed or cleared on one machine only reaches the
    other, and one changed on both keeps the folder's."""
    taken = dict(rating)
    if other.get("undone_at") and not rating.get("undone_at"):
        taken["undone_at"], taken["undone_by"] = other["undone_at"], other.get("undone_by")
    agreed = synced.get(rating["origin_uuid"])
    if note_hash(rating.get("note")) == agreed and note_hash(other.get("note")) != agreed:
        taken["note"] = other.get("note")
    return taken


SYNCED_NOTES_KEY = "pack_synced_notes"  # project_meta: {uuid: note hash} as the folder and its file last agreed


def note_hash(note: str | None) -> str | None:
    return None if not note else hashlib.sha256(note.encode("utf-8")).hexdigest()[:16]


def synced_notes(conn: sqlite3.Connection) -> dict[str, str]:
    """The notes the folder and its file last agreed on (`SYNCED_NOTES_KEY`); empty when never recorded (a folder
    from before: then a note the folder lacks is taken from the file, and the folder's wins otherwise)."""
    try:
        recorded = json.loads(read_meta(conn, SYNCED_NOTES_KEY) or "{}")
    except ValueError:
        return {}
    return recorded if isinstance(recorded, dict) else {}


def agreed_notes(folder: list[dict], file: list[dict], before: dict[str, str]) -> dict[str, str]:
    """What the folder and its file agree on of each note (`SYNCED_NOTES_KEY`): the note both hold, else what they
    agreed on before (a note the folder kept over the file's, both changed; one a save took from the file and the
    folder has not taken in yet)."""
    in_folder = {rating["origin_uuid"]: rating.get("note") for rating in folder}
    in_file = {rating["origin_uuid"]: rating.get("note") for rating in file}
    agreed = {}
    for origin in in_folder.keys() | in_file.keys():
        if origin in in_folder and origin in in_file and in_folder[origin] == in_file[origin]:
            if in_folder[origin]:
                agreed[origin] = note_hash(in_folder[origin])
        elif origin in before:
            agreed[origin] = before[origin]
    return agreed


def record_agreed_notes(conn: sqlite3.Connection, folder: list[dict], file: list[dict], before: dict[str, str]) -> None:
    write_meta(conn, SYNCED_NOTES_KEY, json.dumps(agreed_notes(folder, file, before), sort_keys=True))


def take_in_file_ratings(project: Project, pack: Pack, where: str | None = None) -> TakenIn:
    """Bring into the pack's folder what its file carries and the folder lacks — ratings made elsewhere (the file
    copied home alone, rated there, brought back beside this folder), undos and notes — in one transaction, in
    the order of `merged_ratings`: the folder's ratings made after the first one taken in are stored again after
    it, under new ids above every old one (a uuid is what identifies a rating; an id a rating session elsewhere
    still holds then names no rating, never another one). Nothing is written when the folder lacks nothing; a
    folder that cannot be written then is `PackFolderNotWritable`. `where` names the file in messages."""
    where = where or str(pack.path)
    if (
        not pack.ratings
        or _merged_if_changed(project.conn, store.all_ratings_with_origin(project.conn), pack, where) is None
    ):
        return TakenIn()
    if project.read_only:
        raise PackFolderNotWritable(
            f"{pack.path} carries ratings its folder, {pack_folder(pack.path).name}, lacks, and that folder cannot "
            "be written: copy the pack to a folder of yours (Documents, the desktop) and open it there",
            pack.path,
            "its folder is read-only",
        )
    with project.transaction() as conn:
        store.assign_origin_uuids(conn, rating_uuid(pack.pack_id))
        here = store.all_ratings_with_origin(conn)
        merged = _merged_if_changed(conn, here, pack, where) or here
        start = next(
            (i for i, (a, b) in enumerate(zip(here, merged)) if a["origin_uuid"] != b["origin_uuid"]),
            min(len(here), len(merged)),
        )
        for before, after in zip(here[:start], merged[:start], strict=True):
            if before != after:
                store.update_rating_note_and_undo(conn, before["id"], after)
        top = store.delete_ratings_from(conn, here[start]["id"]) if start < len(here) else None
        queue_id = store.queue_id_by_name(conn, pack.manifest["queue"]["name"])
        for number, rating in enumerate(merged[start:], start=1):  # new ids above every old one
            store.insert_merged_rating(conn, rating, queue_id, None if top is None else top + number)
        record_agreed_notes(conn, merged, pack.ratings, synced_notes(conn))
    before = {rating["origin_uuid"]: _kept(rating) for rating in here}
    added = sum(1 for rating in merged if rating["origin_uuid"] not in before)
    updated = sum(1 for r in merged if r["origin_uuid"] in before and _kept(r) != before[r["origin_uuid"]])
    return TakenIn(added, updated)


RATING_KEYS = ("origin_uuid", *IDENTITY_FIELDS, "note", "undone_at", "undone_by", "seconds")


def _kept(rating: dict) -> tuple:
    """What a rating says, whatever row it is stored in."""
    return tuple(rating.get(key) for key in RATING_KEYS)


def _merged_if_changed(conn: sqlite3.Connection, here: list[dict], pack: Pack, where: str) -> list[dict] | None:
    merged = merged_ratings(here, pack.ratings, where, synced_notes(conn))
    return None if [_kept(r) for r in merged] == [_kept(r) for r in here] else merged


def _fill_pack_project(project: Project, pack: Pack, progress: Progress) -> None:
    """Stream each audio member to disk (checked against its hash), then insert the queue, clips and ratings."""
    with open_archive(pack.path) as (archive, members):
        total, done = sum(members[name].file_size for name in pack.manifest["audio"].values()), 0
        for sha256, name in pack.manifest["audio"].items():
            progress.check_cancelled()
            stored = project.audio.put_stream(member_blocks(pack.path, archive, members[name]), name.rsplit(".", 1)[1])
            if stored != sha256:
                raise SpokenBenchError(f"{pack.path} is damaged: audio {name} does not match its hash")
            done += members[name].file_size
            progress.report(done, total, f"unpacking {pack.path.name}")
    try:
        with project.transaction() as conn:
            store.insert_pack_contents(conn, pack.manifest["queue"], pack.manifest["clips"])
            queue_id = store.queue_id_by_name(conn, pack.manifest["queue"]["name"])
            for rating in pack.ratings:  # a pack written back earlier carries its ratings along
                store.insert_merged_rating(conn, rating, queue_id)
            record_agreed_notes(conn, pack.ratings, pack.ratings, {})
            write_meta(conn, PACK_ID_KEY, pack.pack_id)
            write_meta(conn, "pack_annotator", pack.manifest["annotator"])
            write_meta(conn, "pack_project_id", pack.manifest["project_id"])
    except sqlite3.IntegrityError as error:  # e.g. two clips of one item part and recipe, an unknown strategy
        raise SpokenBenchError(f"{pack.path}: the manifest's clips or queue are inconsistent ({error})") from None


def save_pack_ratings(pack_path: str | Path, progress: Progress | None = None) -> int:
    """Write every rating made in the pack's folder (undone ones too, with their uuids) into the pack file,
    replacing its ratings.jsonl and signing them with the pack's key; returns how many ratings the pack now
    carries. The whole zip is rewritten, audio too (~18 s for 112 MB on a USB 2 stick): `progress` hears the
    bytes on the disk, and a cancel leaves the pack as it was. One save of a pack at a time across processes
    (the app, `pack-ratings`, a script), each reading the ratings under the lock: the last has the latest."""
    progress, folder = progress or no_progress(), pack_folder(Path(pack_path))
    if not folder.is_dir():
        raise SpokenBenchError(f"{folder} does not exist: open the pack first (nothing was rated in it)")
    with file_system.folder_lock(folder, progress, SAVE_LOCK_FILE):
        file_system.remove_left_behind_temp_files(Path(pack_path))
        for _attempt in range(SAVE_ATTEMPTS):
            try:
                return _save_pack_ratings(Path(pack_path), folder, progress)
            except _PackReplaced:
                continue  # read again: it may carry ratings made elsewhere
    raise SpokenBenchError(
        f"{pack_path} was replaced {SAVE_ATTEMPTS} times while ratings were saved into it (another program is "
        f"writing it?); every rating is kept in {folder.name}: save again once it is done"
    )


SAVE_ATTEMPTS = 3


class _PackReplaced(Exception):
    """The pack file was replaced (a copy of it brought back from another machine) while a save read or wrote it."""


def _file_identity(path: Path) -> tuple[int, ...]:
    status = os.stat(path)  # not the inode: vfat and exFAT give a file a new one once it leaves the inode cache
    return status.st_size, status.st_mtime_ns, status.st_ctime_ns


def _save_pack_ratings(pack_path: Path, folder: Path, progress: Progress) -> int:
    """One save; `_PackReplaced` when the file is replaced meanwhile, which the new file would otherwise replace
    with what it read before: the ratings the newer copy carries that the folder lacks would be gone."""
    try:
        identity = _file_identity(pack_path)
    except FileNotFoundError:
        raise SpokenBenchError(f"{pack_path}: no such pack file") from None
    pack = read_pack(pack_path)
    if _file_identity(pack_path) != identity:
        raise _PackReplaced
    annotator = pack.manifest["annotator"]
    with Project.open(folder) as project:
        if read_meta(project.conn, PACK_ID_KEY) != pack.pack_id:
            raise SpokenBenchError(f"{folder} belongs to another pack than {pack.path}")
        with project.transaction() as conn:
            store.assign_origin_uuids(conn, rating_uuid(pack.pack_id))
        # the file may have been rated elsewhere since the folder was opened: it keeps what it carries
        here, synced = store.all_ratings_with_origin(project.conn), synced_notes(project.conn)
        ratings = merged_ratings(here, pack.ratings, str(pack.path), synced)
    others = sorted({rating["annotator"] for rating in ratings} - {annotator})
    if others:
        raise SpokenBenchError(
            f"{folder} holds ratings by {', '.join(others)[:200]}; a pack carries only its annotator's ({annotator})"
        )
    fields = rating_fields(pack.manifest)
    data = "".join(
        json.dumps({key: rating[key] for key in fields}, ensure_ascii=False) + "\n" for rating in ratings
    ).encode("utf-8")
    clip_ids = {clip["id"] for clip in pack.manifest["clips"]}
    parse_ratings(pack.path, data, annotator, clip_ids, fields)  # write only what `unpack` accepts (a long note)
    signature = ratings_signature(pack.manifest["signing_key"], pack.pack_id, annotator, data) if pack.signed else None
    if pack.ratings_bytes == data and pack.signature == signature:
        _record_saved_notes(folder, ratings, here, synced)
        return len(ratings)  # the file already says exactly this: no rewrite

    def copy_with_new_ratings(archive: zipfile.ZipFile, sync) -> None:
        with open_archive(pack.path) as (source, members):
            total, copied, synced = sum(info.file_size for info in members.values()), 0, 0
            for name, info in members.items():
                if name in (RATINGS_NAME, SIGNATURE_NAME):
                    continue
                copy = zipfile.ZipInfo(name, date_time=info.date_time)
                copy.compress_type, copy.external_attr = info.compress_type, info.external_attr
                with archive.open(copy, "w") as target:
                    for block in member_blocks(pack.path, source, info):
                        progress.check_cancelled()
                        target.write(block)
                        copied += len(block)
                        if copied - synced >= SYNC_BYTES:  # progress counts bytes on the disk, not in a cache
                            sync()
                            synced = copied
                            progress.report(copied, total, f"saving ratings into {pack.path.name}")
        archive.writestr(RATINGS_NAME, data)
        if signature is not None:
            archive.writestr(SIGNATURE_NAME, signature)

    def unchanged() -> None:
        if _file_identity(pack.path) != identity:
            raise _PackReplaced

    try:
        write_zip_atomically(pack.path, copy_with_new_ratings, before_replace=unchanged)
    except SpokenBenchError:  # the copy read a file rewritten in place under it
        if _file_identity(pack.path) != identity:
            raise _PackReplaced from None
        raise
    _record_saved_notes(folder, ratings, here, synced)
    return len(ratings)


def _record_saved_notes(folder: Path, saved: list[dict], here: list[dict], synced: dict[str, str]) -> None:
    """Recorded after the file is saved; left unrecorded (the folder locked), the next save keeps the folder's
    notes where both differ."""
    with contextlib.suppress(SpokenBenchError, sqlite3.Error, OSError), Project.open(folder) as project:
        with project.transaction() as conn:
            record_agreed_notes(conn, here, saved, synced)
