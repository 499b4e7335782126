"""Edit counts stored with each transcript (issue 28, round 5): screening from them stores byte-identical
clip_screening rows and the same results as screening from the texts, on the pinned corpus (every language, empty
transcripts, unscorable clips, one to three systems, repeated-word hallucinations) and the stored Whisper
hallucinations with their no-speech probabilities, under every setting; counts that are missing, stale (another
normalizer version, an edited clip text or language, a replaced transcript, any of them while screening ran) or
implausible are counted again from the texts, never used, and stored back."""

import json
import sqlite3

import pytest
from qc_support import add_transcript
from test_normalize_fuzz_pinned import normalized_digest
from test_screening_hallucinations import CASES
from test_screening_pinned import PINNED_ROWS, corpus, digest, insert_clip

from spokenbench.core.asr import normalize, screening, store
from spokenbench.core.asr.screening import ScreeningSettings, compute_screening, screen_project, stored_table2
from spokenbench.core.asr.store import store_no_speech, store_transcripts
from spokenbench.core.foundation.errors import Cancelled
from spokenbench.core.foundation.progress import Progress
from spokenbench.core.store.database import utc_now

# NORMALIZER_VERSION → the fuzzed corpus's digest (test_normalize_fuzz_pinned.py) under that version's rules. A rule
# change moves the digest: bump normalize.NORMALIZER_VERSION and add the new digest here, or screening would keep
# using counts the old rules made.
FUZZED_DIGEST_OF_VERSION = {
    1: "00b6ad51ab76a4572acc3b723e8e1488ae48dac930f778662337372e8ae48490",
    2: "ec79398cb2d47ebc5470b5e3878bfdf46d1dff359816879effc440b2d0c01c7c",
}

VERSION = normalize.NORMALIZER_VERSION  # the counts_version stored with counts made now
ROWS = (
    "SELECT clip_id, metric, errors, reference_units, error_rate, wer_bin, best_asr, asr_count, cer "
    "FROM clip_screening ORDER BY clip_id"
)
SETTINGS = [
    ScreeningSettings(),
    ScreeningSettings(hallucinations=False),
    ScreeningSettings(min_asr=1, metrics=(("en", "cer"), ("ko", "cer"))),
    ScreeningSettings(min_asr=3, metrics=(("ja", "wer"), ("zh", "wer"))),
]


@pytest.mark.slow
def test_a_forgotten_normalizer_version_bump_is_caught():
    assert normalized_digest() == FUZZED_DIGEST_OF_VERSION[normalize.NORMALIZER_VERSION], (
        "a normalization rule changed: bump NORMALIZER_VERSION in core/asr/normalize.py and pin the new digest"
    )


def _corpus_project(project, with_counts: bool) -> None:
    """The pinned corpus, then one clip per stored Whisper hallucination (alone, or beside a good transcript),
    its transcripts stored as the ASR job stores them (`with_counts`) or by raw SQL as before migration 16."""
    now = utc_now()
    clips = corpus()
    for n, case in enumerate(CASES):
        others = [] if n % 2 else [case["reference"].lower()]
        clips.append((2000 + n, case["language"], case["reference"], [case["transcript"], *others]))
    with project.transaction() as conn:
        for clip_id, language, reference, _ in clips:
            insert_clip(conn, clip_id, language, reference, now)
        for i, asr in enumerate(("asr-a", "asr-b", "asr-c")):
            rows = [(clip_id, None, heard[i]) for clip_id, _, _, heard in clips if len(heard) > i]
            if with_counts:
                store_transcripts(conn, asr, rows)
            else:
                conn.executemany(
                    "INSERT INTO transcripts(clip_id, asr, text, created_at) VALUES (?, ?, ?, ?)",
                    [(clip_id, asr, text, now) for clip_id, _, text in rows],
                )
        for n, case in enumerate(CASES):
            store_no_speech(conn, "asr-a", [2000 + n], case["no_speech_prob"])


def _everything(project, result) -> list:
    rows = [list(row) for row in project.conn.execute(ROWS)]
    return [
        rows,
        result.summary(),
        result.table2(),
        stored_table2(project.conn),
        result.hallucinated,
        result.unscorable,
        list(result.too_few_transcripts.items()),
        list(result.languages.items()),
        [(clip_id, score[:6], score.hallucinations) for clip_id, score in result.scores.items()],
    ]


@pytest.fixture
def texts_read(monkeypatch) -> list[list[int]]:
    """The clip ids whose transcripts each screening read as texts."""
    calls = []
    original = store.transcripts_of_clips

    def spy(conn, clip_ids):
        calls.append(list(clip_ids))
        return original(conn, clip_ids)

    monkeypatch.setattr(store, "transcripts_of_clips", spy)
    return calls


def _pinned_corpus_only(project) -> list[list]:
    """The stored rows of the pinned corpus's clips (the hallucination clips, ids ≥ 2000, left out)."""
    return [list(row) for row in project.conn.execute(ROWS) if row[0] < 2000]


@pytest.mark.slow
def test_stored_counts_give_the_pinned_rows_and_read_only_the_texts_hallucinations_need(project, texts_read):
    _corpus_project(project, with_counts=True)
    assert project.conn.execute("SELECT count(*) FROM transcripts WHERE counts_version IS NULL").fetchone()[0] == 0
    result = screen_project(project)
    assert digest(_pinned_corpus_only(project)) == PINNED_ROWS
    # only clips above 0.6 are read as texts (their hallucinations are looked for), none of them below
    (read,) = texts_read
    scores = {clip_id: score for clip_id, score in result.scores.items()}
    assert read and all(scores[clip_id].bin == 3 for clip_id in read)
    assert len(read) < len(scores) / 4
    assert any(score.hallucinations for score in scores.values())


@pytest.mark.slow
@pytest.mark.parametrize("settings", SETTINGS, ids=["default", "no-hallucinations", "min1-cer", "min3-wer"])
def test_screening_from_counts_equals_screening_from_texts(tmp_path, settings):
    from spokenbench.core.store import Project

    outcomes = []
    for name, with_counts, rescore in (("counts", True, False), ("texts", False, True)):
        project = Project.create(tmp_path / name)
        _corpus_project(project, with_counts)
        result = screen_project(project, settings, rescore=rescore)
        outcomes.append(json.loads(json.dumps(_everything(project, result))))
        outcomes.append(json.loads(json.dumps(_everything(project, compute_screening(project.conn, settings)))))
        project.close()
    assert outcomes[0] == outcomes[1] == outcomes[2] == outcomes[3]


@pytest.mark.slow
def test_an_old_project_is_screened_from_texts_as_before_and_its_counts_stored_back(project, texts_read):
    _corpus_project(project, with_counts=False)
    result = screen_project(project)
    rows = _pinned_corpus_only(project)
    assert digest(rows) == PINNED_ROWS
    before = _everything(project, result)
    uncounted = project.conn.execute(
        "SELECT count(*) FROM transcripts t WHERE counts_version IS NULL AND (SELECT count(*) FROM transcripts o "
        "WHERE o.clip_id = t.clip_id) >= 2"
    ).fetchone()[0]
    assert uncounted == 0  # every transcript of a screened clip now carries its counts
    again = screen_project(project)
    assert _everything(project, again) == before
    (read,) = texts_read  # the first read every text in one pass; the second only what hallucination checks need
    assert len(read) < len(again.scores) / 4


def _pinned_result_digest(project, result) -> str:
    pinned = [result.summary(), result.table2(), stored_table2(project.conn), result.hallucinated, result.unscorable]
    return digest(json.loads(json.dumps(pinned)))


@pytest.mark.slow
@pytest.mark.parametrize(
    "tampering",
    [
        "UPDATE transcripts SET word_errors = -3 WHERE id % 7 = 0",
        "UPDATE transcripts SET character_errors = 'many' WHERE id % 5 = 0",
        "UPDATE transcripts SET words = 1000000000000 WHERE id % 3 = 0",
        "UPDATE transcripts SET word_errors = 2.5 WHERE id % 4 = 0",
        "UPDATE transcripts SET characters = characters + 1 WHERE asr = 'asr-b'",  # its clip's others disagree
        "UPDATE transcripts SET words = characters + 1 WHERE id % 6 = 0",
        "UPDATE transcripts SET word_errors = NULL, counts_version = NULL WHERE id % 3 = 1",
        "UPDATE transcripts SET counts_version = 0 WHERE id % 2 = 1",
    ],
)
def test_implausible_or_stale_counts_are_counted_again_never_used(project, tampering):
    _corpus_project(project, with_counts=True)
    project.conn.execute(tampering)
    project.conn.commit()
    result = screen_project(project)
    assert digest(_pinned_corpus_only(project)) == PINNED_ROWS
    counts = (  # of the screened clips' transcripts: a clip with one transcript is not scored, nor are its counts
        "SELECT id, counts_version, word_errors, words, character_errors, characters FROM transcripts t "
        "WHERE (SELECT count(*) FROM transcripts o WHERE o.clip_id = t.clip_id) >= 2 ORDER BY id"
    )
    repaired = project.conn.execute(counts).fetchall()
    fresh = screen_project(project, rescore=True)  # every count made again from the texts
    assert [tuple(row) for row in project.conn.execute(counts)] == [tuple(row) for row in repaired]
    assert _pinned_result_digest(project, result) == _pinned_result_digest(project, fresh)


def _screened_with_exact_transcripts(project, clip: int) -> int:
    """`clip` heard exactly by ASR systems a and b, screened once (its counts stored): returns the clip."""
    for asr in ("a", "b"):
        with project.transaction() as conn:
            store_transcripts(conn, asr, [(clip, None, "Which holiday is in November")])
    assert screen_project(project).scores[clip].errors == 0
    return clip


def test_a_clip_edited_after_its_transcripts_is_scored_against_its_new_text(qc_project, screened_clips):
    clip = _screened_with_exact_transcripts(qc_project, screened_clips["en_q"])
    counts = "SELECT counts_version, word_errors, words FROM transcripts WHERE clip_id = ? ORDER BY asr"
    with qc_project.transaction() as conn:  # the clip's text changed since: its stored counts no longer hold
        conn.execute("UPDATE clips SET text = 'Which holiday is in late November?' WHERE id = ?", (clip,))
    assert [tuple(row) for row in qc_project.conn.execute(counts, (clip,))] == [(None, 0, 5)] * 2
    score = screen_project(qc_project).scores[clip]
    assert (score.errors, score.units) == (1, 6)
    assert [tuple(row) for row in qc_project.conn.execute(counts, (clip,))] == [(VERSION, 1, 6)] * 2
    with qc_project.transaction() as conn:  # its language too
        conn.execute("UPDATE clips SET language = 'en-GB' WHERE id = ?", (clip,))
    assert [tuple(row) for row in qc_project.conn.execute(counts, (clip,))] == [(None, 1, 6)] * 2


def test_a_transcript_text_changed_by_a_script_is_scored_from_its_new_text(qc_project, screened_clips):
    """A colleague's script editing transcripts with SQL, not store_transcripts: the old counts are forgotten."""
    clip = _screened_with_exact_transcripts(qc_project, screened_clips["en_q"])
    with qc_project.transaction() as conn:
        conn.execute("UPDATE transcripts SET text = 'Which day is it' WHERE clip_id = ?", (clip,))
    counts = "SELECT counts_version FROM transcripts WHERE clip_id = ? ORDER BY asr"
    assert [row[0] for row in qc_project.conn.execute(counts, (clip,))] == [None, None]
    score = screen_project(qc_project).scores[clip]
    assert (score.errors, score.units) == (3, 5)
    with qc_project.transaction() as conn:  # store_transcripts writes a new text with its own counts: kept
        store_transcripts(conn, "a", [(clip, None, "Which holiday is November")])
    assert [row[0] for row in qc_project.conn.execute(counts, (clip,))] == [VERSION, VERSION]


def _edit_the_clip(conn, clip: int) -> None:
    conn.execute("UPDATE clips SET text = 'Which holiday?' WHERE id = ?", (clip,))


def _replace_a_transcript(conn, clip: int) -> None:
    store_transcripts(conn, "a", [(clip, None, "Which holiday is in November")])


@pytest.mark.parametrize(
    "change, counts",
    [
        (_edit_the_clip, [("a", None, None), ("b", None, None)]),  # both counted against the old text: none kept
        (
            _replace_a_transcript,
            [("a", VERSION, 0), ("b", VERSION, 3)],
        ),  # "a" keeps the counts stored with its new text
    ],
    ids=["the clip edited", "a transcript replaced"],
)
def test_a_change_while_screening_ran_gets_no_counts_made_before_it(
    qc_project, screened_clips, monkeypatch, change, counts
):
    clip = screened_clips["en_q"]
    for asr in ("a", "b"):
        add_transcript(qc_project, clip, asr, "Which holiday")
    original = screening._store

    def changed_first(project, *args):  # another process changes it between screening's read and its write
        with project.transaction() as conn:
            change(conn, clip)
        original(project, *args)

    monkeypatch.setattr(screening, "_store", changed_first)
    screen_project(qc_project)
    stored = "SELECT asr, counts_version, word_errors FROM transcripts WHERE clip_id = ? ORDER BY asr"
    assert [tuple(row) for row in qc_project.conn.execute(stored, (clip,))] == counts
    monkeypatch.undo()
    screen_project(qc_project)  # the next screening counts what is left
    assert {row[1] for row in qc_project.conn.execute(stored, (clip,))} == {normalize.NORMALIZER_VERSION}


def test_a_replaced_transcript_gets_its_own_counts_and_counts_change_nothing_screens_watch(qc_project, screened_clips):
    clip = screened_clips["en_q"]
    with qc_project.transaction() as conn:
        store_transcripts(conn, "a", [(clip, "m1", "Which holiday")])
        store_transcripts(conn, "a", [(clip, "m2", "Which holiday is in November")])
    counts = "SELECT word_errors, words, counts_version FROM transcripts WHERE clip_id = ?"
    assert tuple(qc_project.conn.execute(counts, (clip,)).fetchone()) == (0, 5, normalize.NORMALIZER_VERSION)
    watched = "SELECT version FROM change_counters WHERE name = 'transcripts'"
    version = qc_project.conn.execute(watched).fetchone()[0]
    with qc_project.transaction() as conn:
        conn.execute("UPDATE transcripts SET counts_version = NULL")
        store.store_transcript_counts(conn, [])
    assert qc_project.conn.execute(watched).fetchone()[0] == version
    with qc_project.transaction() as conn:
        conn.execute("UPDATE transcripts SET text = 'Which'")
    assert qc_project.conn.execute(watched).fetchone()[0] == version + 1


def test_cli_screen_rescore_gives_the_same_table_and_stores_the_counts_again(cli, qc_project, screened_clips):
    c = screened_clips
    for asr, text in (("a", "Which holiday"), ("b", "Which holiday is in November")):
        with qc_project.transaction() as conn:
            store_transcripts(conn, asr, [(c["en_q"], None, text)])
    first = cli("screen", qc_project.path, "--json").json()
    with qc_project.transaction() as conn:  # counts that look current but are not: only --rescore can tell
        conn.execute("UPDATE transcripts SET word_errors = 1")
    assert cli("screen", qc_project.path, "--json").json() != first
    rescored = cli("screen", qc_project.path, "--json", "--rescore")
    assert rescored.code == 0 and rescored.json() == first
    assert cli("screen", qc_project.path, "--json").json() == first


def test_a_cancel_while_screening_stores_nothing(qc_project):
    from qc_support import add_clip, add_transcript, item_id

    item = item_id(qc_project, "q1", "en")
    for n in range(6):
        clip = add_clip(qc_project, item, "question", f"the text number {n}", "en", voice=f"v{n}")
        add_transcript(qc_project, clip, "asr-a", "the text")
        add_transcript(qc_project, clip, "asr-b", f"the text number {n}")
    progress = Progress()
    progress.cancel()
    with pytest.raises(Cancelled):
        screen_project(qc_project, progress=progress)
    assert qc_project.conn.execute("SELECT count(*) FROM clip_screening").fetchone()[0] == 0
    assert (
        qc_project.conn.execute("SELECT count(*) FROM transcripts WHERE counts_version IS NOT NULL").fetchone()[0] == 0
    )


def test_more_asr_systems_than_sql_takes_are_scored_from_texts(qc_project, screened_clips, monkeypatch):
    monkeypatch.setattr(screening, "MOST_ASR_SYSTEMS_FROM_COUNTS", 2)
    clip = screened_clips["en_q"]
    for asr, text in (("a", "Which holiday"), ("b", "Which holiday is in November"), ("c", "Which")):
        with qc_project.transaction() as conn:
            store_transcripts(conn, asr, [(clip, None, text)])
    score = screen_project(qc_project).scores[clip]
    assert (score.errors, score.best_asr, score.asr_count) == (0, "b", 3)


def test_imported_transcripts_are_stored_with_their_counts(cli, qc_project, screened_clips, tmp_path):
    from support import write_csv

    rows = [
        {"clip_id": screened_clips["en_q"], "text": "Which holiday is in"},
        {"clip_id": screened_clips["zh_q"], "text": "硫酸的摩尔质量约为多"},
        {"clip_id": screened_clips["ko_q"], "text": ""},
    ]
    imported = cli("import-transcripts", qc_project.path, write_csv(tmp_path / "t.csv", rows, ["clip_id", "text"]),
                   "--asr", "x")  # fmt: skip
    assert imported.code == 0, imported.err
    stored = qc_project.conn.execute(
        "SELECT clip_id, counts_version, word_errors, words, character_errors, characters FROM transcripts"
    )
    assert {row[0]: tuple(row[1:]) for row in stored} == {
        screened_clips["en_q"]: (VERSION, 1, 5, 8, 24),  # "November" missing: one word, eight characters
        screened_clips["zh_q"]: (VERSION, 1, 11, 1, 11),  # Chinese counts characters as its words
        screened_clips["ko_q"]: (VERSION, 5, 5, 13, 13),  # silence: every unit missing
    }


def test_a_clip_deleted_while_screening_ran_loses_its_score_and_foreign_keys_come_back(
    qc_project, screened_clips, monkeypatch
):
    for clip in (screened_clips["en_q"], screened_clips["en_a"]):
        with qc_project.transaction() as conn:
            for asr in ("a", "b"):
                store_transcripts(conn, asr, [(clip, None, "Which holiday")])
    original = screening._store

    def deleted_first(project, *args):  # another process deletes a clip between screening's read and its write
        with project.transaction() as conn:
            conn.execute("DELETE FROM clips WHERE id = ?", (screened_clips["en_a"],))
        original(project, *args)

    monkeypatch.setattr(screening, "_store", deleted_first)
    screen_project(qc_project)
    stored = [row[0] for row in qc_project.conn.execute("SELECT clip_id FROM clip_screening")]
    assert stored == [screened_clips["en_q"]]
    assert qc_project.conn.execute("PRAGMA foreign_keys").fetchone()[0] == 1

    def failing(conn, rows):
        raise sqlite3.OperationalError("disk I/O error")

    monkeypatch.setattr(store, "replace_screening_scores", failing)
    with pytest.raises(sqlite3.OperationalError):
        screen_project(qc_project)
    assert qc_project.conn.execute("PRAGMA foreign_keys").fetchone()[0] == 1
    assert [row[0] for row in qc_project.conn.execute("SELECT clip_id FROM clip_screening")] == stored
