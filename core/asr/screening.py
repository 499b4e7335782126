"""ASR screening (BiasInEar Section 2.2): every clip's transcripts are scored against the text it was
synthesized from, the minimum over the ASR systems is kept, and clips fall into the WER intervals 0,
(0, 0.2], (0.2, 0.6] and > 0.6. Results are stored per clip (clip_screening) with the settings and the state
of the transcripts they were computed from, so sampling reuses them while they are current.

Likely ASR hallucinations (core/asr/hallucination.py) are set aside: a clip is scored on its other transcripts,
and a clip whose every transcript is one is reported in Table 2's extra row HALLUCINATION_LABEL instead of a WER
interval (its score is still stored, so sampling can queue it for a listen)."""

from __future__ import annotations

import contextlib
import gc
import json
from collections import Counter, defaultdict
from dataclasses import dataclass, field

from spokenbench.core.asr import store
from spokenbench.core.asr.scoring import WER_BINS, ClipScore, Scorer
from spokenbench.core.foundation.forking import ForkedCallFailed, call_in_fork, fork_is_safe
from spokenbench.core.foundation.progress import Progress, no_progress
from spokenbench.core.foundation.table_layout import TABLE2_LAYOUTS, language_sort_key, percent, table_language
from spokenbench.core.store import Project
from spokenbench.core.store.database import utc_now
from spokenbench.core.store.meta import delete_meta, read_meta, write_meta

DEFAULT_MIN_ASR = 2
META_KEY = "qc_screening"
TABLE2_COLUMNS = ["wer_interval_order", "wer_interval", "language", "n_samples", "pct_of_language"]
HALLUCINATION_LABEL = "likely ASR hallucination"  # Table 2's row after the four intervals (order 5)


@dataclass(frozen=True)
class ScreeningSettings:
    min_asr: int = DEFAULT_MIN_ASR  # transcripts a clip needs to be screened (BiasInEar used two systems)
    metrics: tuple[tuple[str, str], ...] = ()  # per-language metric overrides, e.g. (("ko", "cer"),)
    hallucinations: bool = True  # set likely ASR hallucinations aside (False: the paper's plain minimum)

    def as_dict(self) -> dict:
        return {"min_asr": self.min_asr, "metrics": dict(self.metrics), "hallucinations": self.hallucinations}


@dataclass
class ScreeningResult:
    settings: ScreeningSettings
    scores: dict[int, ClipScore]  # clip id → score
    languages: dict[int, str]  # clip id → language, for every clip considered
    too_few_transcripts: dict[int, int] = field(default_factory=dict)  # clip id → transcripts it has (< min_asr)
    unscorable: list[int] = field(default_factory=list)  # references that normalize to nothing
    transcript_state: tuple = ()
    metric_by_language: dict[str, str] = field(default_factory=dict)

    @property
    def screened(self) -> int:
        return len(self.scores)

    @property
    def clips(self) -> int:
        return len(self.languages)

    @property
    def hallucinated(self) -> dict[int, str]:
        """clip id → why, for the clips whose every transcript is a likely hallucination."""
        return {
            clip_id: "; ".join(f"{asr}: {why}" for asr, why in score.hallucinations)
            for clip_id, score in self.scores.items()
            if score.hallucinations and score.likely_hallucination  # the field first: most clips have none
        }

    def table2(self, layout: str = "default") -> list[dict]:
        paper = _paper_layout(layout)
        return table2_rows(
            (self.languages[clip_id], HALLUCINATION_BIN if score.likely_hallucination and not paper else score.bin)
            for clip_id, score in self.scores.items()
        )

    def summary(self) -> dict:
        not_screened = Counter(self.languages[c] for c in self.too_few_transcripts)
        overall = defaultdict(lambda: [0, 0])
        hallucinated: Counter = Counter()
        set_aside = 0
        for clip_id, score in self.scores.items():
            set_aside += len(score.hallucinations)
            if score.likely_hallucination:
                hallucinated[self.languages[clip_id]] += 1
                continue  # its error rate says nothing about the speech
            entry = overall[self.languages[clip_id]]
            entry[0] += score.errors
            entry[1] += score.units
        return {
            "clips": self.clips,
            "screened": self.screened,
            "min_asr": self.settings.min_asr,
            "metric_by_language": self.metric_by_language,
            "not_screened_too_few_transcripts": dict(sorted(not_screened.items())),
            "unscorable": len(self.unscorable),
            "likely_asr_hallucination": dict(sorted(hallucinated.items())),
            "hallucinated_transcripts_set_aside": set_aside,
            # corpus error rate: total edits over total reference units, not a mean of per-clip rates (the clips
            # with only hallucinated transcripts left out)
            "corpus_error_rate": {lang: round(e / u, 4) if u else None for lang, (e, u) in sorted(overall.items())},
        }


HALLUCINATION_BIN = len(WER_BINS)  # the bucket's index after the four intervals


def table2_rows(language_bins) -> list[dict]:
    """Table 2's layout from (language, interval index) pairs: one row per (interval, language) with the count
    and the percentage of the language's screened clips. Index HALLUCINATION_BIN is the likely-hallucination
    bucket: its rows follow the intervals when any clip is in it, and its clips count in the percentages'
    denominator, so a language's rows still add up to 100 %."""
    counts: Counter = Counter()
    totals: Counter = Counter()
    for language, index in language_bins:
        counts[(index, language)] += 1
        totals[language] += 1
    labels = list(WER_BINS)
    if any(index == HALLUCINATION_BIN for index, _ in counts):
        labels.append(HALLUCINATION_LABEL)
    rows = []
    for index, label in enumerate(labels):
        for language in sorted(totals, key=language_sort_key):
            n = counts[(index, language)]
            rows.append(
                {
                    "wer_interval_order": index + 1,
                    "wer_interval": label,
                    "language": table_language(language),
                    "n_samples": n,
                    "pct_of_language": percent(n, totals[language]),
                }
            )
    return rows


def _paper_layout(layout: str) -> bool:
    if layout not in TABLE2_LAYOUTS:
        raise ValueError(f"unknown Table 2 layout {layout!r}; choose one of {', '.join(TABLE2_LAYOUTS)}")
    return layout == "paper"


def stored_table2(conn, layout: str = "default") -> list[dict]:
    hallucinated = _stored_hallucinations(conn)
    if not hallucinated or _paper_layout(layout):
        return table2_rows(store.screened_language_bins(conn))
    return table2_rows(
        (language, HALLUCINATION_BIN if clip_id in hallucinated else index)
        for clip_id, language, index in store.screened_clip_bins(conn)
    )


def _stored_hallucinations(conn) -> dict[int, str]:
    value = read_meta(conn, META_KEY)
    if value is None:
        return {}
    return {int(clip_id): why for clip_id, why in json.loads(value).get("hallucinated", {}).items()}


def stored_hallucinations(conn) -> list[dict]:
    """The clips of the stored screening whose every transcript is a likely hallucination, with why."""
    hallucinated = _stored_hallucinations(conn)
    return [{"clip_id": clip_id, "why": why} for clip_id, why in sorted(hallucinated.items())]


@contextlib.contextmanager
def _automatic_collection_paused():
    """Screening allocates a few hundred thousand small acyclic objects (texts, counts, scores); the cyclic
    collector's automatic passes over them cost about as much as the scoring itself (bench_qc: 44,800 clips).
    Pause it for the loop when it is on — the app already runs collection itself between Qt events, so there it
    is off and stays off — and switch it back on after."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def compute_screening(
    conn, settings: ScreeningSettings | None = None, progress: Progress | None = None, parallel: bool | None = None
) -> ScreeningResult:
    """Score every good item clip that has transcripts (instruction tokens are not screened). `parallel`: half
    of the clips in a forked process (None: when there are enough and `fork_is_safe`; the result is the same)."""
    with _automatic_collection_paused():
        return _compute_screening(conn, settings, progress, parallel)


_NOT_SCORED = object()
# Below this many clips a second process costs more than it saves (a fork and the result's trip back: ~10 ms).
FORK_FROM_CLIPS = 4000
# The share of the clips this process scores when a forked one scores the rest: the child also pickles its
# part's scores and this process unpickles them, so this process takes a little more (bench_qc: 44,800 clips).
PARENT_SHARE = 0.5


def _compute_screening(
    conn, settings: ScreeningSettings | None, progress: Progress | None, parallel: bool | None = None
) -> ScreeningResult:
    settings = settings or ScreeningSettings()
    progress = progress or no_progress()
    clips = store.screenable_clips(conn)
    no_speech: dict[int, dict[str, float]] = defaultdict(dict)
    if settings.hallucinations:
        for (clip_id, asr), probability in store.no_speech_probabilities(conn).items():
            no_speech[clip_id][asr] = probability
    transcripts: dict[int, list[tuple[str, str]]] = defaultdict(list)
    for clip_id, asr, text in store.transcripts_in_clip_order(conn):
        if clip_id in clips:
            transcripts[clip_id].append((asr, text))
    result = ScreeningResult(
        settings,
        {},
        {clip_id: language for clip_id, (language, _) in clips.items()},
        transcript_state=store.transcript_state(conn),
    )
    scoring = _ClipScoring(settings, clips, transcripts, no_speech)
    clip_ids = list(transcripts)
    total = len(clip_ids)
    if parallel is None:
        parallel = total >= FORK_FROM_CLIPS and fork_is_safe()
    if parallel and total > 1:
        split = max(1, int(total * PARENT_SHARE))
        with call_in_fork(scoring.score_for_parent, clip_ids[split:]) as child_part:
            scoring.score(clip_ids[:split], result, progress, total)
            try:
                child_scores = child_part(progress.check_cancelled)
            except ForkedCallFailed:
                child_scores = None
        if child_scores is None:  # the fork failed: its part here, the same way
            scoring.score(clip_ids[split:], result, progress, total, done_before=split)
        else:
            _add_part(result, child_scores)
    else:
        scoring.score(clip_ids, result, progress, total)
    for clip_id in clips:
        if clip_id not in transcripts:
            result.too_few_transcripts[clip_id] = 0
    result.metric_by_language = {
        lang: scoring.scorer.metric_for(lang) for lang in sorted(set(result.languages.values()), key=language_sort_key)
    }
    progress.report(total, total, "screened")
    return result


class _ClipScoring:
    """Scores clips by id, in this process or a forked one: a clip's score is the minimum over its transcripts
    (score_clip), its likely hallucinations set aside."""

    def __init__(self, settings: ScreeningSettings, clips: dict, transcripts: dict, no_speech: dict):
        self.scorer = Scorer(dict(settings.metrics))
        self.min_asr, self.hallucinations = settings.min_asr, settings.hallucinations
        self.clips, self.transcripts, self.no_speech = clips, transcripts, no_speech

    def score(
        self, clip_ids: list[int], result: ScreeningResult, progress: Progress, total: int, done_before: int = 0
    ) -> None:
        """Score `clip_ids` into `result` (scores, unscorable, too few transcripts), in their order."""
        clips, transcripts, scorer = self.clips, self.transcripts, self.scorer
        scores, min_asr, hallucinations = result.scores, self.min_asr, self.hallucinations
        # A sentence is synthesized in many voices and often transcribed alike: clips with the same text and the
        # same transcripts share one (immutable) score, the hallucination check, which depends on the clip, after.
        same_clip_scores: dict[tuple, ClipScore | None] = {}
        for done, clip_id in enumerate(clip_ids, start=done_before + 1):
            heard = transcripts[clip_id]
            language, reference = clips[clip_id]
            if len(heard) < min_asr:
                result.too_few_transcripts[clip_id] = len(heard)
            else:
                key = (language, reference, *heard)
                score = same_clip_scores.get(key, _NOT_SCORED)
                if score is _NOT_SCORED:
                    score = same_clip_scores[key] = scorer.score_clip(language, reference, heard)
                if score is None:
                    result.unscorable.append(clip_id)
                else:
                    if hallucinations and score.errors and score.bin == 3:  # above 0.6
                        score = scorer.set_aside_hallucinations(
                            score, language, reference, heard, self.no_speech.get(clip_id)
                        )
                    scores[clip_id] = score
            if done % 2000 == 0:
                progress.check_cancelled()
                progress.report(done, total, "scoring transcripts")

    def score_for_parent(self, clip_ids: list[int]) -> tuple:
        """`score` in a forked process, its result as plain tuples (a named tuple pickles through a Python call
        per object, a plain one in C): clip ids, each clip's index into the distinct scores, the distinct scores,
        then the unscorable clips and those with too few transcripts."""
        part = ScreeningResult(ScreeningSettings(), {}, {})
        self.score(clip_ids, part, no_progress(), len(clip_ids))
        index_of: dict[int, int] = {}
        distinct, indexes = [], []
        for score in part.scores.values():
            index = index_of.get(id(score))
            if index is None:
                index = index_of[id(score)] = len(distinct)
                distinct.append(tuple(score))
            indexes.append(index)
        return list(part.scores), indexes, distinct, part.unscorable, part.too_few_transcripts


def _add_part(result: ScreeningResult, part: tuple) -> None:
    """A forked process's part (`_ClipScoring.score_for_parent`) added to `result`, after this process's own."""
    clip_ids, indexes, distinct, unscorable, too_few = part
    new = tuple.__new__
    scores = [new(ClipScore, fields) for fields in distinct]  # ClipScore(*fields) without its Python __new__
    result.scores.update(zip(clip_ids, [scores[i] for i in indexes]))
    result.unscorable += unscorable
    result.too_few_transcripts.update(too_few)


def store_screening(project: Project, result: ScreeningResult) -> None:
    """Replace the stored per-clip scores with `result` in one transaction."""
    now = utc_now()
    columns: dict[int, tuple] = {}  # by score object: clips that share a score share its columns
    for s in result.scores.values():
        if id(s) not in columns:
            columns[id(s)] = (s.metric, s.errors, s.units, s.rate, s.bin, s.best_asr, s.asr_count, s.cer, now)
    rows = [(clip_id, *columns[id(s)]) for clip_id, s in result.scores.items()]
    meta = json.dumps(
        {
            "settings": result.settings.as_dict(),
            "transcripts": list(result.transcript_state),
            "screened": result.screened,
            "hallucinated": {str(clip_id): why for clip_id, why in result.hallucinated.items()},
            "computed_at": now,
        }
    )
    with project.transaction() as conn:
        store.replace_screening_scores(conn, rows)
        write_meta(conn, META_KEY, meta)


def stored_screening_settings(conn) -> ScreeningSettings | None:
    value = read_meta(conn, META_KEY)
    if value is None:
        return None
    settings = json.loads(value)["settings"]
    return ScreeningSettings(
        settings["min_asr"], tuple(sorted(settings["metrics"].items())), settings.get("hallucinations", True)
    )


def screening_is_current(conn, settings: ScreeningSettings) -> bool:
    value = read_meta(conn, META_KEY)
    if value is None:
        return False
    meta = json.loads(value)
    return meta["settings"] == settings.as_dict() and tuple(meta["transcripts"]) == store.transcript_state(conn)


def screen_project(
    project: Project,
    settings: ScreeningSettings | None = None,
    progress: Progress | None = None,
    parallel: bool | None = None,
) -> ScreeningResult:
    """Compute and store the screening of every clip with transcripts (`parallel`: see compute_screening)."""
    with _automatic_collection_paused():
        result = compute_screening(project.conn, settings, progress, parallel)
        store_screening(project, result)
    return result


def screening_needs_update(conn, settings: ScreeningSettings | None = None) -> bool:
    """Whether `ensure_screening` has work to do (a read: screens check it before starting a write job)."""
    settings = settings or stored_screening_settings(conn) or ScreeningSettings()
    if store.transcript_count(conn) == 0:
        return bool(store.screened_clip_count(conn))
    return not screening_is_current(conn, settings)


def ensure_screening(
    project: Project, settings: ScreeningSettings | None = None, progress: Progress | None = None
) -> int:
    """Recompute the stored screening when transcripts or settings changed since it was made. Returns the
    number of screened clips."""
    settings = settings or stored_screening_settings(project.conn) or ScreeningSettings()
    if store.transcript_count(project.conn) == 0:
        if store.screened_clip_count(project.conn):
            with project.transaction() as conn:  # transcripts were removed: old scores no longer hold
                store.delete_screening_scores(conn)
                delete_meta(conn, META_KEY)
        return 0
    if not screening_is_current(project.conn, settings):
        screen_project(project, settings, progress)
    return store.screened_clip_count(project.conn)


def worst_clips(conn, limit: int = 20) -> list[dict]:
    """The clips with the highest error, with the best transcript, for a look by ear; a clip in Table 2's
    hallucination row says why (`likely_asr_hallucination`, else None)."""
    hallucinated = _stored_hallucinations(conn)
    return [
        row | {"error_rate": round(row["error_rate"], 4), "likely_asr_hallucination": hallucinated.get(row["clip_id"])}
        for row in store.highest_error_clips(conn, limit)
    ]
