"""Rating a queue in Label Studio, the labeling tool many QC teams already run, and bringing its ratings home.

Out (`export_label_studio`): `OUT.json`, a list of Label Studio tasks, one per clip of the queue, each `data` with
the clip's audio URL (`audio`), what it should say (`text`) and its ids (`clip_id`, `item`, `queue`,
`project_id`, `sha256`, language, voice, part); the clips' audio copied into `OUT-audio/`, one file per distinct
clip; and `OUT.label-config.xml`, the labeling interface (an Audio tag `audio`, Choices `rating` with
Correct/Acceptable/Incorrect, a TextArea `note`). Audio URLs default to Label Studio's own local-file serving
(`/data/local-files/?d=OUT-audio/...`, with LABEL_STUDIO_LOCAL_FILES_DOCUMENT_ROOT the folder of OUT);
`audio_url` gives another prefix, e.g. a plain file server's. docs/qc.md, "Label Studio", has the steps.

In (`import_label_studio`): Label Studio's JSON export — the tasks with their `annotations`, each with
`completed_by` (a user id, or an object with id and email, as its export serializer writes) and `result` items of
type `choices` (from `rating`) and `textarea` (from `note`). Formats checked: the task format documented in
Label Studio's docs/source/includes/task_format.md (develop, 2025; `completed_by` a user id) and the export
serializer in label_studio/data_export/serializers.py (`completed_by` with id, email, first_name, last_name),
i.e. Label Studio 1.x exports. The file is data from others: read bounded, every field checked, and a task that
is not one of this project's clips (another project's id, an unknown clip, audio other than the clip's) refuses
the whole file. Ratings are stored through the ratings store as merged ratings with a uuid derived from the
annotation and its content, so importing the same export again adds nothing, and an annotation changed in
Label Studio since adds its new verdict as the newest rating (the older one is kept, as every rating is).
Annotators are stored by email (or `label-studio user N` when the export gives only the id)."""

from __future__ import annotations

import datetime as _dt
import json
import os
import tempfile
import uuid
from dataclasses import dataclass
from pathlib import Path
from xml.sax.saxutils import quoteattr

from spokenbench.core.foundation.bounded_json import JsonBoundError, loads_bounded
from spokenbench.core.foundation.errors import InputError, InputProblem, Problems, SpokenBenchError
from spokenbench.core.foundation.safe_files import MiB, read_regular_file
from spokenbench.core.foundation.tables import current_umask
from spokenbench.core.qc import store
from spokenbench.core.qc.packs import PROJECT_ID_KEY, ensure_project_id
from spokenbench.core.qc.queues import MAX_NOTE_CHARS, RATINGS, _queue_id
from spokenbench.core.store import Project
from spokenbench.core.store.meta import read_meta

LOCAL_FILES_PREFIX = "/data/local-files/?d="  # Label Studio's local file serving (LOCAL_FILES_SERVING_ENABLED)
RATING_TAG, NOTE_TAG, AUDIO_TAG = "rating", "note", "audio"
CHOICES = {rating.capitalize(): rating for rating in RATINGS}  # Correct/Acceptable/Incorrect -> stored rating

# Bounds on an export file (docs/reliability.md, "Text and size limits"): 20,000 clips × a few annotations is ~30 MB.
MAX_EXPORT_BYTES = 256 * MiB
MAX_JSON_DEPTH = 10  # tasks > task > annotations > annotation > result > item > value > choices: 8 levels
MAX_CONTAINERS = 5_000_000
MAX_NAME_CHARS = 1_000
# A fixed namespace: the same annotation (same task, annotation, annotator, verdict, note, time) gets the same
# uuid on every import, which the ratings table keeps unique.
_ORIGIN_NAMESPACE = uuid.UUID("6f1c9f0e-5a53-4d38-9d2f-1f5d0c4c7a1b")

LABEL_CONFIG = f"""<View>
  <Header value="Does the clip say the text below, clearly?"/>
  <Text name="text" value="$text"/>
  <Audio name="{AUDIO_TAG}" value="$audio"/>
  <Choices name="{RATING_TAG}" toName="{AUDIO_TAG}" choice="single" required="true">
    <Choice value="Correct"/>
    <Choice value="Acceptable"/>
    <Choice value="Incorrect"/>
  </Choices>
  <TextArea name="{NOTE_TAG}" toName="{AUDIO_TAG}" placeholder="What is wrong (optional)" rows="2" maxSubmissions="1"/>
</View>
"""


@dataclass(frozen=True)
class LabelStudioExport:
    tasks_file: Path
    config_file: Path
    audio_dir: Path
    tasks: int
    audio_files: int


@dataclass
class LabelStudioImport:
    tasks: int = 0
    added: int = 0
    already_imported: int = 0
    skipped: int = 0  # annotations cancelled (skipped) in Label Studio: no verdict
    annotators: tuple[str, ...] = ()


def companion_paths(out: Path) -> tuple[Path, Path]:
    """(labeling config, audio folder) written beside the tasks file `out`."""
    return out.with_name(f"{out.stem}.label-config.xml"), out.with_name(f"{out.stem}-audio")


def export_label_studio(
    project: Project, queue: str, out: str | Path, audio_url: str = LOCAL_FILES_PREFIX
) -> LabelStudioExport:
    """Write the queue's clips as Label Studio tasks to `out` (.json), their audio and the labeling config beside
    it. Every file is written whole (temp file, then rename); running it again replaces them."""
    out = Path(out)
    if out.suffix.lower() != ".json":
        raise SpokenBenchError(f"--out {out}: Label Studio tasks are a .json file")
    config_file, audio_dir = companion_paths(out)
    project_id = ensure_project_id(project)
    clips = store.pack_clip_rows(project.conn, _queue_id(project.conn, queue))
    if not clips:
        raise SpokenBenchError(f"rating queue '{queue}' has no clips to export")
    for clip in clips:
        if not project.audio.has(clip["sha256"], clip["audio_format"]):
            raise SpokenBenchError(f"clip {clip['id']}'s audio is missing from the project; run `spokenbench check`")
    audio_dir.mkdir(parents=True, exist_ok=True)
    tasks, copied = [], set()
    for clip in clips:
        name = f"{clip['sha256']}.{clip['audio_format']}"
        if name not in copied:
            target = audio_dir / name
            if not target.is_file() or target.stat().st_size == 0:
                _write_atomically(target, project.audio.read_bytes(clip["sha256"], clip["audio_format"]))
            copied.add(name)
        tasks.append(
            {
                "data": {
                    AUDIO_TAG: f"{audio_url}{audio_dir.name}/{name}",
                    "text": clip["text"],
                    "clip_id": clip["id"],
                    "item": clip["item_source_id"],
                    "language": clip["language"],
                    "voice": clip["voice"],
                    "part": clip["part"],
                    "queue": queue,
                    "project_id": project_id,
                    "sha256": clip["sha256"],
                }
            }
        )
    _write_atomically(config_file, LABEL_CONFIG.encode("utf-8"))
    _write_atomically(out, json.dumps(tasks, ensure_ascii=False, indent=1).encode("utf-8"))
    return LabelStudioExport(out, config_file, audio_dir, len(tasks), len(copied))


def label_config_names() -> str:
    """The tag names the import expects, for messages."""
    return f"Choices {quoteattr(RATING_TAG)}, TextArea {quoteattr(NOTE_TAG)}"


def _write_atomically(path: Path, data: bytes) -> None:
    try:
        fd, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".part")
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
            os.chmod(temp, 0o666 & ~current_umask())
            os.replace(temp, path)
        except BaseException:
            Path(temp).unlink(missing_ok=True)
            raise
    except OSError as error:
        raise SpokenBenchError(f"{path}: cannot write the file ({error.strerror or error})") from None


def import_label_studio(project: Project, path: str | Path) -> LabelStudioImport:
    """Store the ratings of a Label Studio JSON export of tasks this project exported; all or nothing."""
    path = Path(path)
    name = str(path)
    try:
        raw = read_regular_file(path, MAX_EXPORT_BYTES)
    except FileNotFoundError:
        raise InputError(InputProblem(name, "file not found")) from None
    try:
        tasks = loads_bounded(
            raw.decode("utf-8-sig"), max_chars=MAX_EXPORT_BYTES, max_depth=MAX_JSON_DEPTH, max_containers=MAX_CONTAINERS
        )
    except UnicodeDecodeError as error:
        raise InputError(InputProblem(name, f"is not UTF-8 text (byte {error.start})")) from None
    except JsonBoundError as error:
        raise InputError(InputProblem(name, str(error))) from None
    if not isinstance(tasks, list):
        raise InputError(InputProblem(name, "is not a Label Studio JSON export (a list of tasks)"))
    home_id = read_meta(project.conn, PROJECT_ID_KEY)
    problems = Problems()
    ratings: list[dict] = []
    report = LabelStudioImport(tasks=len(tasks))
    with project.transaction() as conn:
        clip_rows = {clip_id: (sha,) for clip_id, sha in store.clip_audio_hashes(conn).items() if sha}
        for number, task in enumerate(tasks, start=1):
            where = f"task {number}"
            try:
                ratings.extend(_task_ratings(conn, task, where, home_id, clip_rows, report))
            except _Refused as refused:
                problems.append(InputProblem(name, f"{where}: {refused}"))
        if problems:
            raise InputError(problems)
        for rating in ratings:
            if store.rating_by_origin(conn, rating["origin_uuid"]) is not None:
                report.already_imported += 1
                continue
            store.insert_merged_rating(conn, rating, rating.pop("queue_id"))
            report.added += 1
    report.annotators = tuple(sorted({r["annotator"] for r in ratings}))
    return report


class _Refused(Exception):
    """One field of the export is wrong; the message names it."""


def _task_ratings(conn, task, where: str, home_id, clip_rows: dict, report: LabelStudioImport) -> list[dict]:
    if not isinstance(task, dict):
        raise _Refused("is not a task object")
    data = task.get("data")
    if not isinstance(data, dict):
        raise _Refused("has no 'data' object")
    if home_id is None or data.get("project_id") != home_id:
        raise _Refused(
            f"is not a clip exported from this project (its data.project_id is {_shown(data.get('project_id'))}); "
            "nothing imported"
        )
    clip_id = data.get("clip_id")
    if isinstance(clip_id, bool) or not isinstance(clip_id, int) or clip_id not in clip_rows:
        raise _Refused(f"data.clip_id {_shown(clip_id)} is not a clip of this project")
    if data.get("sha256") != clip_rows[clip_id][0]:
        raise _Refused(f"data.sha256 is not the audio of clip {clip_id} (the clip was re-made since the export?)")
    queue = data.get("queue")
    if not isinstance(queue, str) or not queue or len(queue) > MAX_NAME_CHARS:
        raise _Refused(f"data.queue must be the rating queue's name, not {_shown(queue)}")
    queue_id = store.queue_id_by_name(conn, queue)
    if queue_id is not None and not store.queue_has_clip(conn, queue_id, clip_id):
        raise _Refused(f"clip {clip_id} is not in rating queue '{queue}'")
    annotations = task.get("annotations", [])
    if not isinstance(annotations, list):
        raise _Refused("'annotations' must be a list")
    task_id = task.get("id")
    if task_id is not None and (isinstance(task_id, bool) or not isinstance(task_id, int | str)):
        raise _Refused(f"'id' must be a number or text, not {_shown(task_id)}")
    ratings = []
    for position, annotation in enumerate(annotations, start=1):
        rating = _annotation_rating(annotation, f"annotation {position}", clip_id, task_id, home_id)
        if rating is None:
            report.skipped += 1
            continue
        ratings.append({**rating, "queue_id": queue_id})
    return ratings


def _annotation_rating(annotation, where: str, clip_id: int, task_id, project_id: str) -> dict | None:
    if not isinstance(annotation, dict):
        raise _Refused(f"{where} is not an object")
    cancelled = annotation.get("was_cancelled", False)
    if not isinstance(cancelled, bool):
        raise _Refused(f"{where}: 'was_cancelled' must be true or false")
    annotator = _annotator(annotation.get("completed_by"), where)
    result = annotation.get("result")
    if not isinstance(result, list):
        raise _Refused(f"{where}: 'result' must be a list")
    choice, note = None, None
    for index, item in enumerate(result, start=1):
        item_where = f"{where}, result {index}"
        if not isinstance(item, dict) or not isinstance(item.get("value"), dict):
            raise _Refused(f"{item_where} is not a result object with a 'value'")
        kind, tag, value = item.get("type"), item.get("from_name"), item["value"]
        if kind == "choices" and tag == RATING_TAG:
            chosen = value.get("choices")
            if not isinstance(chosen, list) or len(chosen) != 1 or chosen[0] not in CHOICES or choice is not None:
                raise _Refused(f"{item_where}: the rating must be one of {', '.join(CHOICES)}, not {_shown(chosen)}")
            choice = CHOICES[chosen[0]]
        elif kind == "textarea" and tag == NOTE_TAG:
            texts = value.get("text")
            if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts) or note is not None:
                raise _Refused(f"{item_where}: the note must be a list of texts, not {_shown(texts)}")
            note = "\n".join(t.strip() for t in texts if t.strip()) or None
            if note is not None and (len(note) > MAX_NOTE_CHARS or any(ord(c) < 32 and c not in "\t\n" for c in note)):
                raise _Refused(f"{item_where}: the note has control characters or more than {MAX_NOTE_CHARS:,}")
        else:
            raise _Refused(
                f"{item_where}: unexpected result {_shown(kind)} from {_shown(tag)} (this project's labeling config "
                f"has {label_config_names()})"
            )
    if cancelled:
        return None
    if choice is None:
        raise _Refused(f"{where} has no rating (a 'choices' result from '{RATING_TAG}')")
    created_at = _timestamp(annotation.get("updated_at") or annotation.get("created_at"), where)
    identity = [project_id, task_id, annotation.get("id"), clip_id, annotator, choice, note, created_at]
    origin = uuid.uuid5(_ORIGIN_NAMESPACE, json.dumps(identity, ensure_ascii=False, default=str))
    return {
        "origin_uuid": str(origin),
        "clip_id": clip_id,
        "annotator": annotator,
        "rating": choice,
        "note": note,
        "created_at": created_at,
        "undone_at": None,
        "undone_by": None,
    }


def _annotator(completed_by, where: str) -> str:
    """The name ratings are stored under: the email when the export gives one, else 'label-studio user N'."""
    if isinstance(completed_by, dict):
        email = completed_by.get("email")
        if isinstance(email, str) and email.strip():
            name = email.strip()
            if len(name) > MAX_NAME_CHARS or any(ord(c) < 32 for c in name):
                raise _Refused(f"{where}: completed_by.email is not a usable name")
            return name
        completed_by = completed_by.get("id")
    if isinstance(completed_by, bool) or not isinstance(completed_by, int) or completed_by < 0:
        raise _Refused(
            f"{where}: 'completed_by' must be a user id or an object with an email, not {_shown(completed_by)}"
        )
    return f"label-studio user {completed_by}"


def _timestamp(value, where: str) -> str:
    """Label Studio's time ('2021-03-09T22:16:08.728378Z') as the project writes times (UTC, milliseconds)."""
    try:
        if not isinstance(value, str) or len(value) > 40:
            raise ValueError
        moment = _dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=_dt.UTC)  # Label Studio writes UTC
    except ValueError:
        raise _Refused(f"{where}: 'updated_at'/'created_at' must be an ISO-8601 time, not {_shown(value)}") from None
    return moment.astimezone(_dt.UTC).isoformat(timespec="milliseconds")


def _shown(value) -> str:
    text = repr(value)
    return text if len(text) <= 60 else f"{text[:57]}..."


__all__ = ["LABEL_CONFIG", "LabelStudioExport", "LabelStudioImport", "export_label_studio", "import_label_studio"]
