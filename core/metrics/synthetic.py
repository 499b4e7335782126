"""Synthetic responses tables shaped like the papers' data, for demos, tests and the benchmark.

`biasinear_like` builds BiasInEar's design: every question under 28 configurations (language × accent ×
gender × option order) per model, with answers that depend on the question, the model, the language and a
position preference, so that every metric has something to measure."""

from __future__ import annotations

import numpy as np
import pandas as pd

ACCENTS = {
    "english": ["american", "british", "indian"],
    "chinese": ["beijing", "northeastern"],
    "korean": ["seoul", "jeolla"],
}
ORDERS = {"original": "ABCD", "reversed": "DCBA"}


def biasinear_like(
    n_questions: int = 400, n_models: int = 9, seed: int = 0, failure_rate: float = 0.01
) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    configs = [
        (lang, acc, gender, order)
        for lang, accents in ACCENTS.items()
        for acc in accents
        for gender in ("female", "male")
        for order in ORDERS
    ]
    n_cfg = len(configs)
    q = np.repeat(np.arange(n_questions), n_cfg)
    cfg = np.tile(np.arange(n_cfg), n_questions)
    gold = rng.integers(0, 4, n_questions)
    difficulty = rng.normal(0, 1, n_questions)
    distractor = (gold + rng.integers(1, 4, n_questions)) % 4
    lang_penalty = {"english": 0.0, "chinese": 0.6, "korean": 0.8}
    cfg_lang = np.array([lang_penalty[c[0]] for c in configs])
    cfg_reversed = np.array([c[3] == "reversed" for c in configs])
    cfg_male = np.array([c[2] == "male" for c in configs])
    frames = []
    for m in range(n_models):
        skill = 1.5 - 0.25 * m
        position_bias = rng.dirichlet(np.full(4, 3.0))
        logit = skill - difficulty[q] - cfg_lang[cfg] - 0.3 * cfg_reversed[cfg] - 0.05 * cfg_male[cfg]
        correct = rng.random(len(q)) < 1 / (1 + np.exp(-logit))
        # wrong answers: the question's favourite distractor, or a presented position the model likes
        presented_pick = rng.choice(4, size=len(q), p=position_bias)
        original_pick = np.where(cfg_reversed[cfg], 3 - presented_pick, presented_pick)
        wrong = np.where(rng.random(len(q)) < 0.5, distractor[q], original_pick)
        wrong = np.where(wrong == gold[q], (gold[q] + 1 + rng.integers(0, 3, len(q))) % 4, wrong)
        chosen = np.where(correct, gold[q], wrong)
        presented = np.where(cfg_reversed[cfg], 3 - chosen, chosen)
        letters = np.array(list("ABCD"), dtype=object)[presented]
        letters[rng.random(len(q)) < failure_rate] = ""
        frames.append(
            pd.DataFrame(
                {
                    "question_id": np.char.add("q", np.char.zfill(q.astype(str), 4)),
                    "model": f"model_{m + 1}",
                    "answer": np.array(list("ABCD"), dtype=object)[gold[q]],
                    "prediction": letters,
                    "option_order": np.array([ORDERS[c[3]] for c in configs], dtype=object)[cfg],
                    "cultural_label": np.where(q % 3 == 0, "CS", "CA"),
                    "subject": np.array(["history", "physics", "law", "medicine"], dtype=object)[q % 4],
                    "language": np.array([c[0] for c in configs], dtype=object)[cfg],
                    "accent": np.array([c[1] for c in configs], dtype=object)[cfg],
                    "gender": np.array([c[2] for c in configs], dtype=object)[cfg],
                    "order": np.array([c[3] for c in configs], dtype=object)[cfg],
                }
            )
        )
    frame = pd.concat(frames, ignore_index=True)
    return frame.astype("str")


def gender_probe_like(
    n_questions: int = 120, models=("speech_a", "speech_b"), backbone: str | None = "text_a", seed: int = 0
) -> pd.DataFrame:
    """Questions in three categories answered by 4 male and 4 female voices, plus a text backbone that
    answers each question once. Options carry an orientation (M/F/N/X) and are shuffled per row."""
    rng = np.random.default_rng(seed)
    categories = np.array(["independent", "stereotypical", "dependent"], dtype=object)
    category = categories[np.arange(n_questions) % 3]
    speakers = [("m1", "M"), ("m2", "M"), ("m3", "M"), ("m4", "M"), ("f1", "F"), ("f2", "F"), ("f3", "F"), ("f4", "F")]
    rows = []
    for qi in range(n_questions):
        cat = category[qi]
        base = "XX" if cat == "independent" else "MF"
        neutral = qi % 2 == 0 and cat != "independent"
        orientation = base + ("N" if neutral else "")
        for model_index, model in enumerate(models):
            male_pref = 0.5 + 0.2 * (model_index + 1) * (cat == "stereotypical")
            for speaker, voice in speakers:
                order = "".join(rng.permutation(list("ABC"[: len(orientation)])))
                presented_orientation = "".join(orientation[ord(c) - 65] for c in order)
                r = rng.random()
                if r < 0.05:
                    pick = ""
                else:
                    target_p = male_pref if voice == "M" else 1 - male_pref + 0.1 * (cat == "dependent")
                    original = 0 if rng.random() < target_p else 1
                    if neutral and rng.random() < 0.15:
                        original = 2
                    pick = chr(65 + order.index(chr(65 + original)))
                rows.append((f"g{qi:03d}", model, cat, voice, speaker, pick, presented_orientation, order))
        if backbone:
            original = 0 if rng.random() < 0.6 else 1
            order = "ABC"[: len(orientation)]
            rows.append((f"g{qi:03d}", backbone, cat, "", "", chr(65 + original), orientation, order))
    return pd.DataFrame(
        rows,
        columns=[
            "question_id",
            "model",
            "category",
            "voice_gender",
            "speaker",
            "prediction",
            "option_orientation",
            "option_order",
        ],
    ).astype("str")
