"""Small tables for the metrics tests, written the way users write them (strings, one row per answer)."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd


def responses(rows: list[dict], **defaults) -> pd.DataFrame:
    """A responses table from dicts; missing keys take `defaults`; every cell becomes a string."""
    frame = pd.DataFrame([{**defaults, **row} for row in rows])
    return frame.fillna("").astype(str)


def crossed_design(questions, factors: dict[str, list[str]], answer_of, model="m1", gold="A") -> pd.DataFrame:
    """One row per question × combination of factor levels; `answer_of(question, levels: dict)` gives the
    presented letter ('' = parse failure)."""
    rows = []
    names = list(factors)
    for q in questions:
        for combo in itertools.product(*factors.values()):
            levels = dict(zip(names, combo))
            rows.append(
                {
                    "question_id": q,
                    "model": model,
                    "answer": gold if isinstance(gold, str) else gold(q),
                    "prediction": answer_of(q, levels),
                    **levels,
                }
            )
    return responses(rows)


def random_design(
    rng: np.random.Generator, n_questions=6, models=("m1", "m2"), failure_rate=0.05, nested=True
) -> pd.DataFrame:
    """A random BiasInEar-like table: language with nested accents, gender, order (original/reversed)."""
    accents = {"en": ["us", "uk", "in"], "zh": ["bj", "ne"]} if nested else {"en": ["us"], "zh": ["bj"]}
    rows = []
    for model in models:
        bias = rng.dirichlet(np.ones(4))
        for q in range(n_questions):
            gold = "ABCD"[q % 4]
            for lang, accs in accents.items():
                for acc in accs:
                    for gender in ("f", "m"):
                        for order, perm in (("original", "ABCD"), ("reversed", "DCBA")):
                            if rng.random() < failure_rate:
                                pred = ""
                            else:
                                pred = "ABCD"[rng.choice(4, p=bias)] if rng.random() < 0.6 else "ABCD"[perm.index(gold)]
                            rows.append(
                                {
                                    "question_id": f"q{q}",
                                    "model": model,
                                    "answer": gold,
                                    "prediction": pred,
                                    "option_order": perm,
                                    "language": lang,
                                    "accent": acc,
                                    "gender": gender,
                                    "order": order,
                                }
                            )
    return responses(rows)
