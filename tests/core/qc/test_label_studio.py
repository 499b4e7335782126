"""Label Studio both ways: a rating queue exported as Label Studio tasks (audio beside them, the labeling
config), an annotated export in Label Studio's JSON format (written here by hand, as its export serializer
writes it) imported as ratings under the annotators' emails, once; foreign or malformed tasks refused with
exit 2 and nothing stored."""

import json
import xml.etree.ElementTree as ET

import pytest
from qc_support import add_clip, item_id, tone_wav

from spokenbench.core.qc.queues import sample_for_rating

QUEUE = "q"


@pytest.fixture
def queued(qc_project):
    for source, frequency in (("q1", 220), ("q2", 330), ("q3", 440)):
        add_clip(
            qc_project, item_id(qc_project, source, "en"), "question", f"{source} question", "en",
            audio=tone_wav(frequency),
        )  # fmt: skip
    sample_for_rating(qc_project, QUEUE, per_bin=3, seed=0)
    return qc_project


@pytest.fixture
def exported(cli, queued, tmp_path):
    out = tmp_path / "ls" / "tasks.json"
    result = cli("export", queued.path, "--what", "label-studio", "--queue", QUEUE, "--out", out, "--json")
    assert result.code == 0, result.err
    return out


def annotation(annotation_id, choice, note=None, user=None, cancelled=False, when="2025-06-02T10:11:12.345678Z"):
    """One annotation as Label Studio's JSON export writes it (completed_by as its export serializer does)."""
    result = [
        {"id": f"r{annotation_id}", "from_name": "rating", "to_name": "audio", "type": "choices",
         "origin": "manual", "value": {"choices": [choice]}},
    ]  # fmt: skip
    if note is not None:
        result.append(
            {"id": f"n{annotation_id}", "from_name": "note", "to_name": "audio", "type": "textarea",
             "origin": "manual", "value": {"text": [note]}}
        )  # fmt: skip
    return {
        "id": annotation_id,
        "completed_by": user if user is not None else {"id": 3, "email": "ana@example.org", "first_name": "Ana",
                                                       "last_name": ""},
        "result": result,
        "was_cancelled": cancelled,
        "ground_truth": False,
        "created_at": when,
        "updated_at": when,
        "lead_time": 4.2,
        "task": annotation_id,
    }  # fmt: skip


def annotated_export(tasks_file, annotations_per_task):
    """What Label Studio exports after the tasks in `tasks_file` were imported and annotated."""
    tasks = json.loads(tasks_file.read_text(encoding="utf-8"))
    out = []
    for number, (task, annotations) in enumerate(zip(tasks, annotations_per_task, strict=True), start=1):
        out.append(
            {"id": number, "data": task["data"], "annotations": annotations, "predictions": [], "project": 7,
             "created_at": "2025-06-02T09:00:00.000000Z", "updated_at": "2025-06-02T10:11:12.345678Z",
             "inner_id": number, "total_annotations": len(annotations), "cancelled_annotations": 0}
        )  # fmt: skip
    return out


def stored(project):
    rows = project.conn.execute("SELECT clip_id, annotator, rating, note, undone_at FROM ratings ORDER BY id")
    return [tuple(row) for row in rows]


def test_export_writes_tasks_audio_and_the_labeling_config(exported, queued):
    tasks = json.loads(exported.read_text(encoding="utf-8"))
    assert len(tasks) == 3
    clip_ids = {row[0] for row in queued.conn.execute("SELECT clip_id FROM rating_queue_clips")}
    assert {task["data"]["clip_id"] for task in tasks} == clip_ids
    for task in tasks:
        data = task["data"]
        assert data["audio"].startswith("/data/local-files/?d=tasks-audio/")
        audio = exported.parent / data["audio"].split("?d=", 1)[1]
        assert audio.read_bytes()[:4] == b"RIFF"  # the clip's own audio, copied beside the tasks
        assert data["text"].endswith("question") and data["queue"] == QUEUE and len(data["sha256"]) == 64
    config = ET.parse(exported.parent / "tasks.label-config.xml").getroot()
    assert config.find("Audio").attrib == {"name": "audio", "value": "$audio"}
    choices = config.find("Choices")
    assert (choices.get("name"), choices.get("toName")) == ("rating", "audio")
    assert [c.get("value") for c in choices.findall("Choice")] == ["Correct", "Acceptable", "Incorrect"]
    assert (config.find("TextArea").get("name"), config.find("TextArea").get("toName")) == ("note", "audio")


def test_annotated_export_comes_back_as_ratings_once(cli, exported, queued, tmp_path):
    ls_export = annotated_export(
        exported,
        [
            [annotation(1, "Correct"), annotation(4, "Incorrect", note="says 'q two'", user=9)],
            [annotation(2, "Acceptable", note="slight click")],
            [annotation(3, "Correct", cancelled=True)],  # skipped in Label Studio: no verdict
        ],
    )
    file = tmp_path / "project-7-at-2025-06-02.json"
    file.write_text(json.dumps(ls_export), encoding="utf-8")

    result = cli("import-ratings", queued.path, file, "--json")
    assert result.code == 0, result.err
    assert result.json() | {"annotators": None} == {
        "tasks": 3, "added": 3, "already_imported": 0, "skipped": 1, "annotators": None
    }  # fmt: skip
    clips = [task["data"]["clip_id"] for task in ls_export]
    assert stored(queued) == [
        (clips[0], "ana@example.org", "correct", None, None),
        (clips[0], "label-studio user 9", "incorrect", "says 'q two'", None),
        (clips[1], "ana@example.org", "acceptable", "slight click", None),
    ]

    again = cli("import-ratings", queued.path, file, "--json")
    assert again.code == 0 and again.json()["added"] == 0 and again.json()["already_imported"] == 3
    assert len(stored(queued)) == 3

    # the annotator changed her mind in Label Studio: the new verdict is added as the newest rating
    ls_export[0]["annotations"][0] = annotation(1, "Acceptable", when="2025-06-03T08:00:00.000000Z")
    file.write_text(json.dumps(ls_export), encoding="utf-8")
    changed = cli("import-ratings", queued.path, file, "--json").json()
    assert (changed["added"], changed["already_imported"]) == (1, 2)
    assert stored(queued)[-1] == (clips[0], "ana@example.org", "acceptable", None, None)


def test_a_task_of_another_project_is_refused_and_nothing_stored(cli, exported, queued, tmp_path):
    ls_export = annotated_export(exported, [[annotation(1, "Correct")], [annotation(2, "Correct")], []])
    ls_export[1]["data"]["project_id"] = "0b7a4d3e-0000-4000-8000-000000000000"
    file = tmp_path / "foreign.json"
    file.write_text(json.dumps(ls_export), encoding="utf-8")
    result = cli("import-ratings", queued.path, file)
    assert result.code == 2
    assert "task 2: is not a clip exported from this project" in result.err and "Traceback" not in result.err
    assert stored(queued) == []


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda t: t["data"].update(clip_id=99_999), "data.clip_id 99999 is not a clip of this project"),
        (lambda t: t["data"].update(sha256="0" * 64), "data.sha256 is not the audio of clip"),
        (lambda t: t["annotations"][0]["result"][0]["value"].update(choices=["Great"]), "the rating must be one of"),
        (
            lambda t: t["annotations"][0]["result"][0].update(from_name="mood"),
            "unexpected result 'choices' from 'mood'",
        ),
        (lambda t: t["annotations"][0].update(completed_by="ana"), "'completed_by' must be a user id"),
        (lambda t: t["annotations"][0].update(updated_at="yesterday"), "must be an ISO-8601 time"),
        (lambda t: t["annotations"][0].update(result=[]), "has no rating"),
        (lambda t: t.update(annotations={"a": 1}), "'annotations' must be a list"),
    ],
)
def test_malformed_fields_are_named(cli, exported, queued, tmp_path, change, message):
    ls_export = annotated_export(exported, [[annotation(1, "Correct")], [], []])
    change(ls_export[0])
    file = tmp_path / "bad.json"
    file.write_text(json.dumps(ls_export), encoding="utf-8")
    result = cli("import-ratings", queued.path, file)
    assert result.code == 2, result.err
    assert "task 1" in result.err and message in result.err
    assert stored(queued) == []


def test_files_that_are_not_exports_are_refused(cli, queued, tmp_path):
    not_list = tmp_path / "object.json"
    not_list.write_text('{"tasks": []}', encoding="utf-8")
    result = cli("import-ratings", queued.path, not_list)
    assert result.code == 2 and "is not a Label Studio JSON export" in result.err
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 50 + "]" * 50, encoding="utf-8")
    result = cli("import-ratings", queued.path, deep)
    assert result.code == 2 and "nested more than" in result.err
    assert cli("import-ratings", queued.path, tmp_path / "missing.json").code == 2


def test_export_options_are_checked(cli, queued, tmp_path):
    no_queue = cli("export", queued.path, "--what", "label-studio", "--out", tmp_path / "t.json")
    assert no_queue.code == 2 and "needs --queue" in no_queue.err
    not_json = cli("export", queued.path, "--what", "label-studio", "--queue", QUEUE, "--out", tmp_path / "t.csv")
    assert not_json.code == 2 and ".json" in not_json.err
    stray = cli("export", queued.path, "--what", "items", "--queue", QUEUE, "--out", tmp_path / "t.csv")
    assert stray.code == 2 and "--what label-studio only" in stray.err


@pytest.mark.slow
def test_the_demo_queue_round_trips(cli, demo_copy, tmp_path):
    out = tmp_path / "ls" / "demo.json"
    assert cli("export", demo_copy, "--what", "label-studio", "--queue", "demo-qc", "--out", out).code == 0
    tasks = json.loads(out.read_text(encoding="utf-8"))
    ls_export = annotated_export(out, [[annotation(n, "Correct")] for n in range(1, len(tasks) + 1)])
    file = tmp_path / "export.json"
    file.write_text(json.dumps(ls_export), encoding="utf-8")
    result = cli("import-ratings", demo_copy, file, "--json")
    assert result.code == 0, result.err
    assert result.json()["added"] == len(tasks)
    assert cli("import-ratings", demo_copy, file, "--json").json()["added"] == 0
