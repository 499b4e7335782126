"""Stratified sampling per BiasInEar Appendix B.4: largest-remainder quotas, one clip per question–answer pair
preferring the question row, subject round-robin, shortfall filled, reproducible with a seed; named queues."""

from collections import Counter

import pytest
from qc_support import add_clip, add_transcript, item_id

from spokenbench.core.foundation.errors import SpokenBenchError
from spokenbench.core.qc.queues import list_queues, next_unrated, queue_clips, rate_clip, sample_for_rating
from spokenbench.core.qc.sampling import ClipRecord, largest_remainder, stratified_sample


@pytest.mark.parametrize(
    "total, counts, expected",
    [
        (40, {"a": 50, "b": 30, "c": 20}, {"a": 20, "b": 12, "c": 8}),  # exact shares
        (10, {"a": 7, "b": 7, "c": 6}, {"a": 4, "b": 3, "c": 3}),  # 3.5/3.5/3.0: a tie on remainder and count → name
        (5, {"x": 1, "y": 1, "z": 98}, {"x": 0, "y": 0, "z": 5}),  # 0.05/0.05/4.9: the big remainder wins
        (40, {"a": 101, "b": 99, "c": 1}, {"a": 20, "b": 20, "c": 0}),  # remainders 20/201, 141/201, 40/201
        (40, {"american": 17, "british": 5, "indian": 3}, {"american": 17, "british": 5, "indian": 3}),  # too few: all
        (7, {"a": 2, "b": 3, "c": 4}, {"a": 2, "b": 2, "c": 3}),  # 1.56/2.33/3.11 → floors 1/2/3, a's .56 wins
    ],
)
def test_largest_remainder_quotas(total, counts, expected):
    assert largest_remainder(total, counts) == expected
    assert sum(largest_remainder(total, counts).values()) == min(total, sum(counts.values()))


def records(
    language="en",
    accents=("american", "british"),
    items=30,
    subjects=5,
    voices=2,
    options=4,
    wer_bin=1,
    start_id=1,
    start_item=1,
) -> list[ClipRecord]:
    """Clips of `items` items in every accent and voice: a question row and `options` option rows each."""
    out, clip_id = [], start_id
    for accent in accents:
        for n in range(items):
            item = start_item + n
            for _voice in range(voices):
                for part in ["question"] + [f"option_{'ABCD'[k]}" for k in range(options)]:
                    out.append(
                        ClipRecord(clip_id, language, accent, item, part, f"subject_{item % subjects}", wer_bin, 0.1)
                    )
                    clip_id += 1
    return out


def ids(result) -> list[int]:
    return [r.clip_id for r in result.selected]


def test_the_same_seed_gives_the_same_sample_and_another_seed_another():
    pool = records() + records(wer_bin=2, start_id=10_000)
    assert ids(stratified_sample(pool, 10, seed=3)) == ids(stratified_sample(list(reversed(pool)), 10, seed=3))
    assert set(ids(stratified_sample(pool, 10, seed=3))) != set(ids(stratified_sample(pool, 10, seed=4)))


def test_one_clip_per_question_answer_pair_preferring_the_question_row():
    result = stratified_sample(records(items=30), 20, seed=0)
    chosen = result.selected
    assert len(chosen) == 20
    assert all(r.part == "question" for r in chosen)
    assert len({r.item_id for r in chosen}) == 20, "no item twice in a stratum, across accents too"
    [stratum] = [s for s in result.strata if s.selected]
    assert stratum.quotas == {"american": 10, "british": 10} and stratum.filled == 0
    assert Counter(r.accent for r in chosen) == {"american": 10, "british": 10}


def test_an_item_without_a_question_row_in_the_interval_contributes_an_option():
    pool = [r for r in records(items=6, accents=("american",)) if not (r.item_id <= 3 and r.part == "question")]
    chosen = stratified_sample(pool, 6, seed=1).selected
    assert len({r.item_id for r in chosen}) == 6
    assert {r.item_id for r in chosen if r.part != "question"} == {1, 2, 3}


def test_subjects_are_taken_round_robin():
    pool = [
        r for r in records(items=21, subjects=3, accents=("american",)) if not (r.item_id % 3 == 2 and r.item_id > 2)
    ]
    # subject_0 and subject_1 have 7 items each, subject_2 only one (item 2)
    counts = Counter(r.subject for r in stratified_sample(pool, 9, seed=0).selected)
    assert counts["subject_2"] == 1 and sorted([counts["subject_0"], counts["subject_1"]]) == [4, 4]
    balanced = Counter(
        r.subject for r in stratified_sample(records(items=40, subjects=4, accents=("american",)), 8, seed=5).selected
    )
    assert set(balanced.values()) == {2}


def test_accent_quotas_are_proportional_to_clip_counts():
    pool = (
        records(accents=("american",), items=30)
        + records(accents=("british",), items=15, start_id=5_000)
        + records(accents=("indian",), items=5, start_id=9_000)
    )
    result = stratified_sample(pool, 10, seed=0)
    # 300 / 150 / 50 clips → 6 / 3 / 1 of 10
    assert result.strata[0].quotas == {"american": 6, "british": 3, "indian": 1}
    assert Counter(r.accent for r in result.selected) == {"american": 6, "british": 3, "indian": 1}


def test_shortfall_is_filled_from_the_remaining_pool_question_rows_first():
    pool = records(accents=("seoul",), items=3, voices=2, language="ko")  # 3 items × 2 voices × 5 parts = 30 clips
    result = stratified_sample(pool, 8, seed=0)
    chosen = result.selected
    assert len(chosen) == 8 and result.strata[0].filled == 5
    assert Counter(r.part == "question" for r in chosen) == {True: 6, False: 2}, (
        "all six question rows before any option"
    )
    assert len({r.clip_id for r in chosen}) == 8


def test_each_language_and_nonzero_interval_is_its_own_stratum():
    pool = []
    for language_index, language in enumerate(("en", "zh", "ko")):
        for wer_bin in (0, 1, 2, 3):
            pool += records(
                language=language,
                accents=("a",),
                items=3 if wer_bin == 3 else 12,
                voices=1,
                wer_bin=wer_bin,
                start_id=100_000 * language_index + 10_000 * wer_bin + 1,
                start_item=1000 * wer_bin,
            )
    result = stratified_sample(pool, 5, seed=0)
    assert result.strategy == "wer-bins"
    assert [(s.language, s.wer_bin, s.selected) for s in result.strata] == [
        (lang, b, 5) for lang in ("en", "zh", "ko") for b in (1, 2, 3)
    ]
    assert Counter((r.language, r.wer_bin) for r in result.selected) == {
        (lang, b): 5 for lang in ("en", "zh", "ko") for b in (1, 2, 3)
    }
    assert all(r.wer_bin != 0 for r in result.selected)
    assert next(s for s in result.strata if s.wer_bin == 3).filled == 2  # three items for five clips


def test_without_screening_strata_are_languages_and_accents_and_subjects_still_apply():
    pool = [
        r.__class__(**{**r.__dict__, "wer_bin": None, "error_rate": None})
        for r in records(items=20) + records(language="zh", accents=("beijing",), start_id=50_000)
    ]
    result = stratified_sample(pool, 12, seed=0)
    assert result.strategy == "unscreened" and "no ASR screening" in result.note
    assert [(s.language, s.wer_bin, s.selected) for s in result.strata] == [("en", None, 12), ("zh", None, 12)]
    assert Counter(r.accent for r in result.selected if r.language == "en") == {"american": 6, "british": 6}
    mixed = pool + records(items=2, start_id=90_000, start_item=500)
    assert stratified_sample(mixed, 4, seed=0).left_out_unscreened == len(pool)


def _queue_project(qc_project):
    """Clips for three items × two accents × two voices in English, screened into bins by fixed transcripts."""
    clips = []
    for source_id in ("q1", "q2", "q3"):
        item = item_id(qc_project, source_id, "en")
        for accent in ("american", "british"):
            for voice in ("v1", "v2"):
                for part in ("question", "option_A", "option_B"):
                    clips.append(
                        add_clip(
                            qc_project, item, part, "alpha beta gamma delta epsilon", "en", accent=accent, voice=voice
                        )
                    )
    return clips


@pytest.mark.slow
def test_queues_are_named_reproducible_and_rerunnable(cli, qc_project):
    clips = _queue_project(qc_project)
    unscreened = sample_for_rating(qc_project, "qc0", per_bin=4, seed=0)
    assert unscreened.result.strategy == "unscreened" and unscreened.created
    for n, clip in enumerate(clips):
        heard = ["alpha beta gamma delta epsilon", "alpha beta gamma delta", "alpha beta", "zeta"][n % 4]
        add_transcript(qc_project, clip, "a", heard)
        add_transcript(qc_project, clip, "b", heard)
    result = cli("sample", qc_project.path, "--per-bin", "3", "--seed", "7", "--name", "qc1", "--json")
    assert result.code == 0, result.err
    body = result.json()
    assert body["created"] and body["strategy"] == "wer-bins" and body["clips"] == 9
    again = cli("sample", qc_project.path, "--per-bin", "3", "--seed", "7", "--name", "qc1", "--json").json()
    assert again["created"] is False, "rerunning the same sample is a no-op"
    clash = cli("sample", qc_project.path, "--per-bin", "2", "--seed", "7", "--name", "qc1")
    assert clash.code == 2 and "already exists" in clash.err
    assert cli("sample", qc_project.path, "--per-bin", "2", "--seed", "7", "--name", "qc1", "--replace").code == 0
    queue = queue_clips(qc_project.conn, "qc1")
    assert len(queue) == 6 and [c.position for c in queue] == list(range(1, 7))
    assert {c.wer_bin for c in queue} == {1, 2, 3}
    first = next_unrated(qc_project.conn, "qc1", "ana")
    rate_clip(qc_project, first.clip_id, "ana", "Correct", queue="qc1")
    assert next_unrated(qc_project.conn, "qc1", "ana").position == 2
    assert [q["rated_by"] for q in list_queues(qc_project.conn) if q["name"] == "qc1"] == [{"ana": 1}]
    with pytest.raises(SpokenBenchError, match="rating must be one of"):
        rate_clip(qc_project, first.clip_id, "ana", "great")
    outside = next(c for c in clips if c not in {q.clip_id for q in queue})
    with pytest.raises(SpokenBenchError, match="not in rating queue 'qc1'"):
        rate_clip(qc_project, outside, "ana", "correct", queue="qc1")
    with pytest.raises(SpokenBenchError, match="no rating queue named 'nope'"):
        queue_clips(qc_project.conn, "nope")
