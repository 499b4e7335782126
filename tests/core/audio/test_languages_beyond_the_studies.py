"""A benchmark in a language the studies did not use (Arabic, Hebrew), offline from import to metrics: espeak-ng
speaks it in its 'default' accent, and that accent is a factor level the metrics group by."""

import json
import sqlite3

from support import write_jsonl

ITEMS = [
    {"id": "ar-1", "language": "ar", "subject": "geography", "question": "ما هي عاصمة فرنسا؟",
     "options": ["باريس", "ليون", "مرسيليا", "نيس"], "answer": "A"},
    {"id": "ar-2", "language": "ar", "subject": "chemistry", "question": "كم عدد ذرات الهيدروجين في جزيء الماء (H2O)؟",
     "options": ["1", "2", "3", "4"], "answer": "B"},
    {"id": "he-1", "language": "he", "subject": "geography", "question": "מהי בירת יפן?",
     "options": ["טוקיו", "אוסקה", "קיוטו", "נגויה"], "answer": "A"},
]  # fmt: skip


def test_an_arabic_and_hebrew_benchmark_is_spoken_assembled_evaluated_and_measured_by_accent(cli, tmp_path):
    project = tmp_path / "project"
    assert cli("init", project).code == 0
    assert cli("import", project, write_jsonl(tmp_path / "items.jsonl", ITEMS), "--format", "mcq").code == 0
    spoken = cli("synthesize", project, "--tts", "espeak", "--json")
    assert spoken.code == 0, spoken.err
    assert json.loads(spoken.out)["failed"] == 0 and "cannot speak" not in spoken.err
    assert cli("assemble", project).code == 0
    with sqlite3.connect(project / "project.sqlite") as conn:
        clips = set(conn.execute("SELECT DISTINCT language, accent FROM clips WHERE part NOT LIKE 'token%'"))
        conditions = [json.loads(key) for (key,) in conn.execute("SELECT condition_key FROM assembled_inputs")]
    assert clips == {("ar", "default"), ("he", "default")}
    assert {(c["language"], c["accent"]) for c in conditions} == {("ar", "default"), ("he", "default")}
    evaluated = cli(
        "evaluate", project, "--model", "simulated:accent-sensitive", "--mode", "audio", "--prompt", "standard"
    )
    assert evaluated.code == 0, evaluated.err
    responses = tmp_path / "responses.csv"
    assert cli("export", project, "--what", "responses", "--out", responses).code == 0
    measured = cli("metrics", responses, "--factors", "language,accent,gender,order", "--bootstrap", "0", "--json")
    assert measured.code == 0, measured.err  # before: "column 'accent': empty factor level" on every row, exit 2
    assert "default" in measured.out and '"accent"' in measured.out


def test_the_simulated_grid_offers_and_hears_arabic_in_its_default_accent_and_never_in_an_american_one(cli, tmp_path):
    """Without assembled audio the Evaluate page's accent levels and the simulated listener's plan come from the
    grid: 'default' for Arabic (before: no level at all), and a chosen accent an item lacks leaves the item out
    (before: the Arabic items were planned under 'american')."""
    from spokenbench.core.evaluation.launcher import condition_levels
    from spokenbench.core.evaluation.plans import PlanOptions, build_plan
    from spokenbench.core.store import opened

    project = tmp_path / "project"
    cli("init", project)
    english = {"id": "en-1", "language": "en-GB", "question": "Which city?", "options": ["a", "b"], "answer": "A"}
    assert cli("import", project, write_jsonl(tmp_path / "i.jsonl", [*ITEMS, english]), "--format", "mcq").code == 0
    with opened(project) as store:
        assert "default" in condition_levels(store.conn)["accent"]
        assert {"american", "british", "indian"} <= set(condition_levels(store.conn)["accent"])  # en-GB as en
        plan = build_plan(store.conn, PlanOptions(simulated=True, filters={"accent": ("american",)}))
    heard = {(request.condition.language, request.condition.accent) for request in plan.requests}
    assert heard == {("en-gb", "american")}
