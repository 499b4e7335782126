"""Stratified sampling of clips for human rating, as BiasInEar Appendix B.4 describes it:

1. Strata: each language × each non-zero WER interval ((0, 0.2], (0.2, 0.6], > 0.6); N clips per stratum
   (the paper: 40). Without ASR screening the stratum is the language alone (accent and subject still apply).
2. Within a stratum all accents are pooled and each accent gets a quota proportional to its clip count,
   rounded by the largest-remainder (Hamilton) method; ties go to the larger count, then the accent name.
3. One clip per question–answer pair (item) in the stratum: an accent's candidates are, per item, its
   question clip when there is one (a random voice's), otherwise a random option clip — and only items no
   accent of the stratum has taken yet (accents with fewer clips choose first).
4. Those candidates are taken in a subject-wise round-robin — subjects in a seeded random order, one clip
   from each in turn, in a seeded random order within each subject — until the accent's quota is met.
5. When an accent runs out of unused items before its quota, the remainder is filled from its remaining
   clips (question rows first, again round-robin over subjects), so every quota is met exactly. A stratum
   smaller than N is taken whole.

Every random choice comes from a generator seeded by (seed, language, interval, accent), so a sample is
reproducible and one stratum's draw does not depend on another's. The queue order is shuffled (seeded) so a
rater cannot tell a clip's interval from its position."""

from __future__ import annotations

import random
from collections import defaultdict
from dataclasses import dataclass, field

from spokenbench.core.asr.scoring import NONZERO_BINS, bin_label
from spokenbench.core.foundation.table_layout import language_sort_key
from spokenbench.core.qc.store import sampleable_clips

DEFAULT_PER_BIN = 40
NO_SUBJECT = ""
NO_ACCENT = ""


@dataclass(frozen=True)
class ClipRecord:
    clip_id: int
    language: str
    accent: str | None
    item_id: int
    part: str
    subject: str | None
    wer_bin: int | None = None
    error_rate: float | None = None


@dataclass
class StratumReport:
    language: str
    wer_bin: int | None
    pool: int
    wanted: int
    quotas: dict[str, int]
    selected: int = 0
    unique_items: int = 0
    subjects: int = 0
    filled: int = 0  # clips taken beyond one per item, because an accent ran out of unused items

    def as_dict(self) -> dict:
        return {
            "language": self.language,
            "wer_interval": bin_label(self.wer_bin),
            "pool": self.pool,
            "wanted": self.wanted,
            "quotas": self.quotas,
            "selected": self.selected,
            "unique_items": self.unique_items,
            "subjects": self.subjects,
            "filled_from_pool": self.filled,
        }


@dataclass
class SampleResult:
    strategy: str  # 'wer-bins' or 'unscreened'
    selected: list[ClipRecord]  # in queue order
    strata: list[StratumReport] = field(default_factory=list)
    left_out_unscreened: int = 0  # clips without a screening score when others had one
    unscreened_asked: bool = False  # WER intervals left aside by choice, not for want of screening

    @property
    def note(self) -> str:
        if self.strategy == "unscreened" and self.unscreened_asked:
            return "sampled by language, accent and subject only, as asked (WER intervals ignored)"
        if self.strategy == "unscreened":
            return (
                "no ASR screening yet: sampled by language, accent and subject only (no WER intervals); transcribe "
                "the clips (Transcribe on the Rating page, or `spokenbench transcribe`) to stratify by WER"
            )
        if self.left_out_unscreened:
            return f"{self.left_out_unscreened} clips without a screening score were left out of the WER strata"
        return ""


def largest_remainder(total: int, counts: dict[str, int]) -> dict[str, int]:
    """Split `total` in proportion to `counts` (Hamilton's method): everyone gets the floor of their exact share,
    the seats left go to the largest remainders (ties: larger count, then name). Never more than a count."""
    pool = sum(counts.values())
    if pool <= total:
        return dict(counts)
    quotas, remainders = {}, []
    for name, count in counts.items():
        whole, remainder = divmod(total * count, pool)
        quotas[name] = whole
        remainders.append((-remainder, -count, name))
    for _, _, name in sorted(remainders)[: total - sum(quotas.values())]:
        quotas[name] += 1
    return quotas


def _rng(seed: int, *parts) -> random.Random:
    return random.Random(":".join(str(p) for p in (seed, *parts)))  # str seeds hash with SHA-512: stable


def one_per_item(records: list[ClipRecord], rng: random.Random) -> tuple[list[ClipRecord], list[ClipRecord]]:
    """One clip per item, the question row preferred; returns (chosen, the rest)."""
    by_item: dict[int, list[ClipRecord]] = defaultdict(list)
    for record in sorted(records, key=lambda r: r.clip_id):
        by_item[record.item_id].append(record)
    chosen = []
    for item_id in sorted(by_item):
        clips = by_item[item_id]
        questions = [c for c in clips if c.part == "question"]
        chosen.append(rng.choice(questions or clips))
    taken = {c.clip_id for c in chosen}
    return chosen, [r for r in sorted(records, key=lambda r: r.clip_id) if r.clip_id not in taken]


def subject_round_robin(
    records: list[ClipRecord], quota: int, rng: random.Random, questions_first: bool = False
) -> list[ClipRecord]:
    """Up to `quota` records, one subject at a time in a seeded random subject order, cycling until full."""
    groups: dict[str, list[ClipRecord]] = defaultdict(list)
    for record in sorted(records, key=lambda r: r.clip_id):
        groups[record.subject or NO_SUBJECT].append(record)
    for members in groups.values():
        rng.shuffle(members)
        if questions_first:
            members.sort(key=lambda r: r.part != "question")  # stable: shuffled order kept within each kind
    order = sorted(groups)
    rng.shuffle(order)
    picked: list[ClipRecord] = []
    while len(picked) < quota and any(groups[s] for s in order):
        for subject in order:
            if groups[subject] and len(picked) < quota:
                picked.append(groups[subject].pop(0))
    return picked


def sample_stratum(
    records: list[ClipRecord], wanted: int, seed: int, language: str, wer_bin: int | None
) -> tuple[list[ClipRecord], StratumReport]:
    by_accent: dict[str, list[ClipRecord]] = defaultdict(list)
    for record in records:
        by_accent[record.accent or NO_ACCENT].append(record)
    quotas = largest_remainder(wanted, {accent: len(members) for accent, members in sorted(by_accent.items())})
    report = StratumReport(language, wer_bin, len(records), wanted, quotas)
    selected: list[ClipRecord] = []
    used_items: set[int] = set()
    # scarcer accents choose first, so the one-clip-per-item rule costs the big accents, which have spare items
    for accent in sorted(by_accent, key=lambda a: (len(by_accent[a]), a)):
        rng = _rng(seed, language, bin_label(wer_bin), accent)
        candidates, rest = one_per_item(by_accent[accent], rng)
        fresh = [c for c in candidates if c.item_id not in used_items]
        picked = subject_round_robin(fresh, quotas[accent], rng)
        shortfall = quotas[accent] - len(picked)
        if shortfall > 0:
            taken = {c.clip_id for c in picked}
            pool = [c for c in candidates if c.clip_id not in taken] + rest
            fill = subject_round_robin(pool, shortfall, rng, questions_first=True)
            report.filled += len(fill)
            picked += fill
        used_items.update(c.item_id for c in picked)
        selected += picked
    report.selected = len(selected)
    report.unique_items = len({r.item_id for r in selected})
    report.subjects = len({r.subject or NO_SUBJECT for r in selected})
    return selected, report


def stratified_sample(records: list[ClipRecord], per_bin: int = DEFAULT_PER_BIN, seed: int = 0) -> SampleResult:
    """The Appendix B.4 sample from `records` (see the module docstring)."""
    if per_bin < 1:
        raise ValueError("per_bin must be at least 1")
    screened = [r for r in records if r.wer_bin is not None]
    if screened:
        result = SampleResult("wer-bins", [], left_out_unscreened=len(records) - len(screened))
        strata = defaultdict(list)
        for record in screened:
            if record.wer_bin in NONZERO_BINS:
                strata[(record.language, record.wer_bin)].append(record)
        keys = [
            (language, b)
            for language in sorted({r.language for r in screened}, key=language_sort_key)
            for b in NONZERO_BINS
        ]
    else:
        result = SampleResult("unscreened", [])
        strata = defaultdict(list)
        for record in records:
            strata[(record.language, None)].append(record)
        keys = sorted(strata, key=lambda k: language_sort_key(k[0]))
    chosen: list[ClipRecord] = []
    for language, wer_bin in keys:
        selected, report = sample_stratum(strata.get((language, wer_bin), []), per_bin, seed, language, wer_bin)
        chosen += selected
        result.strata.append(report)
    _rng(seed, "queue-order").shuffle(chosen)
    result.selected = chosen
    return result


def load_clip_records(conn) -> list[ClipRecord]:
    """Every good item clip with its item's subject and, where screened, its WER interval."""
    return [ClipRecord(*row) for row in sampleable_clips(conn)]
