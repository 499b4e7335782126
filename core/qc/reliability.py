"""How far each annotator's ratings can be trusted (docs/qc.md, "Annotator reliability"): accuracy on the hidden
control clips with a Wilson 95 % interval, agreement with the majority of the other annotators on shared clips
(and Cohen's κ per pair, from core/qc/ratings.py), the Correct / Acceptable / Incorrect distribution against the
pool's, the median seconds per clip, and the same per block of 20 positions in the annotator's session (fatigue,
drift). An annotator is flagged, with the reasons, when control accuracy or agreement falls below the
coordinator's thresholds (or, when set, the median seconds). Each annotator's newest live rating per clip counts."""

from __future__ import annotations

import statistics
from collections import Counter, defaultdict
from dataclasses import asdict, dataclass

from spokenbench.core.foundation.errors import SpokenBenchError
from spokenbench.core.qc.queues import RATINGS
from spokenbench.core.qc.ratings import agreement, consensus
from spokenbench.core.qc.store import ratings_for_reliability

BLOCK = 20  # positions per block of the fatigue / drift view


@dataclass(frozen=True)
class Thresholds:
    """The coordinator's bars: below them an annotator is flagged. A bar is applied only once there is enough to
    judge by (min_controls controls rated, min_shared clips shared with others)."""

    min_control_accuracy: float = 0.8
    min_agreement: float = 0.6
    min_median_seconds: float | None = None  # off unless set
    min_controls: int = 5
    min_shared: int = 5

    def __post_init__(self):
        for name in ("min_control_accuracy", "min_agreement"):
            if not 0 <= getattr(self, name) <= 1:
                raise SpokenBenchError(f"{name.replace('_', '-')} must be between 0 and 1, not {getattr(self, name)}")
        if self.min_median_seconds is not None and not 0 <= self.min_median_seconds <= 86_400:
            raise SpokenBenchError(f"min-median-seconds must be between 0 and 86,400, not {self.min_median_seconds}")
        if self.min_controls < 1 or self.min_shared < 1:
            raise SpokenBenchError("min-controls and min-shared must be at least 1")

    def as_dict(self) -> dict:
        return asdict(self)


def wilson_interval(successes: int, n: int) -> list[float] | None:
    """The Wilson score 95 % interval of a proportion (scipy's, the same bounds as statsmodels' to 1e-15; scipy
    is already a dependency, so statsmodels stays a test one), None without observations."""
    if n == 0:
        return None
    from scipy.stats import binomtest  # imported when needed: scipy.stats costs ~0.8 s CPU

    interval = binomtest(successes, n).proportion_ci(confidence_level=0.95, method="wilson")
    return [round(float(interval.low), 4), round(float(interval.high), 4)]


def _median(values: list[float]) -> float | None:
    return round(statistics.median(values), 2) if values else None


def _distribution(ratings: list[str]) -> dict[str, float]:
    counts = Counter(ratings)
    return {r: round(counts[r] / len(ratings), 4) if ratings else 0.0 for r in RATINGS}


def annotator_reliability(conn, queue: str | None = None, thresholds: Thresholds | None = None) -> dict:
    """{"thresholds", "pool_distribution", "annotators": [...]}: one entry per annotator, most-flagged first is
    left to the reader; entries are sorted by name."""
    thresholds = thresholds or Thresholds()
    rows = ratings_for_reliability(conn, queue)
    ordinary = [r for r in rows if r["control_kind"] is None]
    by_clip: dict[int, dict[str, str]] = defaultdict(dict)
    for row in ordinary:
        by_clip[row["clip_id"]][row["annotator"]] = row["rating"]
    by_annotator: dict[str, list[dict]] = defaultdict(list)
    for row in rows:
        by_annotator[row["annotator"]].append(row)  # in the order made: the session's positions
    entries = [_one_annotator(name, made, by_clip, thresholds) for name, made in sorted(by_annotator.items())]
    pool = _distribution([r["rating"] for r in ordinary])
    rows_by_clip: dict[int, list[dict]] = defaultdict(list)
    for row in ordinary:
        rows_by_clip[row["clip_id"]].append(row)
    pairs = agreement(rows_by_clip)["pairs"]  # Cohen's κ per pair, as section 5 of docs/qc.md computes it
    for entry in entries:
        entry["distribution_vs_pool"] = {r: round(entry["distribution"][r] - pool[r], 4) for r in RATINGS}
        entry["cohen_kappa_with"] = {
            next(other for other in pair["annotators"] if other != entry["annotator"]): pair["cohen_kappa"]
            for pair in pairs
            if entry["annotator"] in pair["annotators"]
        }
    return {"thresholds": thresholds.as_dict(), "pool_distribution": pool, "pairs": pairs, "annotators": entries}


def _one_annotator(name: str, made: list[dict], by_clip: dict, thresholds: Thresholds) -> dict:
    controls = [r for r in made if r["control_kind"] is not None]
    ordinary = [r for r in made if r["control_kind"] is None]
    right = sum(r["rating"] == r["control_expected"] for r in controls)
    accuracy = round(right / len(controls), 4) if controls else None
    agreed = shared = 0
    for row in ordinary:
        others = [rating for annotator, rating in by_clip[row["clip_id"]].items() if annotator != name]
        if others:
            shared += 1
            agreed += row["rating"] == consensus(others)
    agreement = round(agreed / shared, 4) if shared else None
    seconds = [r["seconds"] for r in made if r["seconds"] is not None]
    median_seconds = _median(seconds)
    by_kind: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for row in controls:
        by_kind[row["control_kind"]][0] += row["rating"] == row["control_expected"]
        by_kind[row["control_kind"]][1] += 1
    reasons = []
    if accuracy is not None and len(controls) >= thresholds.min_controls and accuracy < thresholds.min_control_accuracy:
        reasons.append(
            f"control accuracy {accuracy:.0%} ({right} of {len(controls)}) is below {thresholds.min_control_accuracy:.0%}"
            + _missed(controls)
        )
    if agreement is not None and shared >= thresholds.min_shared and agreement < thresholds.min_agreement:
        reasons.append(
            f"agrees with the other annotators' majority on {agreement:.0%} of {shared} shared clips, below "
            f"{thresholds.min_agreement:.0%}"
        )
    if (
        thresholds.min_median_seconds is not None
        and median_seconds is not None
        and median_seconds < thresholds.min_median_seconds
    ):
        reasons.append(f"median {median_seconds:g} s per clip is below {thresholds.min_median_seconds:g} s")
    notes = []
    if not controls:
        notes.append("no control clips rated")
    elif len(controls) < thresholds.min_controls:
        notes.append(f"only {len(controls)} control clips rated: too few to judge accuracy")
    return {
        "annotator": name,
        "ratings": len(ordinary),
        "controls_rated": len(controls),
        "control_accuracy": accuracy,
        "control_ci": wilson_interval(right, len(controls)),
        "controls_by_kind": {kind: {"right": n_right, "rated": n} for kind, (n_right, n) in sorted(by_kind.items())},
        "agreement_with_majority": agreement,
        "shared_clips": shared,
        "median_seconds": median_seconds,
        "distribution": _distribution([r["rating"] for r in ordinary]),
        "blocks": _blocks(made),
        "flagged": bool(reasons),
        "reasons": reasons,
        "notes": notes,
    }


def _missed(controls: list[dict]) -> str:
    """Which kinds of control were missed, in words: what the coordinator talks about with the annotator."""
    missed = Counter(r["control_kind"] for r in controls if r["rating"] != r["control_expected"])
    if not missed:
        return ""
    return "; missed " + ", ".join(f"{n} {kind}" for kind, n in sorted(missed.items()))


def _blocks(made: list[dict]) -> list[dict]:
    """Control accuracy and median seconds per block of BLOCK positions of the session (fatigue, drift)."""
    blocks = []
    for start in range(0, len(made), BLOCK):
        chunk = made[start : start + BLOCK]
        controls = [r for r in chunk if r["control_kind"] is not None]
        right = sum(r["rating"] == r["control_expected"] for r in controls)
        blocks.append(
            {
                "positions": f"{start + 1}–{start + len(chunk)}",
                "ratings": len(chunk),
                "controls_rated": len(controls),
                "control_accuracy": round(right / len(controls), 4) if controls else None,
                "median_seconds": _median([r["seconds"] for r in chunk if r["seconds"] is not None]),
            }
        )
    return blocks
