"""ASR screening (BiasInEar Section 2.2): every clip's transcripts are scored against the text it was
synthesized from, the minimum over the ASR systems is kept, and clips fall into the WER intervals 0,
(0, 0.2], (0.2, 0.6] and > 0.6. Results are stored per clip (clip_screening) with the settings and the state
of the transcripts they were computed from, so sampling reuses them while they are current.

Likely ASR hallucinations (core/asr/hallucination.py) are set aside: a clip is scored on its other transcripts,
and a clip whose every transcript is one is reported in Table 2's extra row HALLUCINATION_LABEL instead of a WER
interval (its score is still stored, so sampling can queue it for a listen)."""

from __future__ import annotations

import contextlib
import json
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from spokenbench.core.asr import store
from spokenbench.core.asr.scoring import WER_BINS, ClipScore, Scorer, wer_bin
from spokenbench.core.foundation.child_process import ChildCallFailed, call_in_child, child_start_method
from spokenbench.core.foundation.collection import automatic_collection_paused
from spokenbench.core.foundation.processes import a_core_is_free
from spokenbench.core.foundation.progress import Progress, no_progress
from spokenbench.core.foundation.table_layout import TABLE2_LAYOUTS, language_sort_key, percent, table_language
from spokenbench.core.store import Project
from spokenbench.core.store.database import connect, database_file, read_snapshot, utc_now
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


def compute_screening(
    conn, settings: ScreeningSettings | None = None, progress: Progress | None = None, parallel: bool | None = None
) -> ScreeningResult:
    """Score every good item clip that has transcripts (instruction tokens are not screened). `parallel`: part
    of the clips in a second process (None: when there are enough, a core is idle and one can be started; the
    result is the same)."""
    with automatic_collection_paused():
        return _screen(conn, settings, progress, parallel)


_NOT_SCORED = object()
# Below this many transcripts a second process costs more than it saves: a fork, a connection and the result's
# trip back take ~20 ms, a spawned interpreter ~0.1 s more (bench_qc scores 89,600 in ~1 s of CPU).
TWO_CORES_FROM_TRANSCRIPTS = {"fork": 8000, "spawn": 30000}
_CHILD_PART, _OWN_PART = 1, 0  # store.screenable_clips' parts


def _screen(
    conn,
    settings: ScreeningSettings | None,
    progress: Progress | None,
    parallel: bool | None,
    store_in: Project | None = None,
) -> ScreeningResult:
    """compute_screening, and with `store_in` also store_screening."""
    settings = settings or ScreeningSettings()
    progress = progress or no_progress()
    now = utc_now()
    method = child_start_method() if parallel or (parallel is None and a_core_is_free()) else None
    if parallel is None:
        parallel = method is not None and store.transcript_count(conn) >= TWO_CORES_FROM_TRANSCRIPTS[method]
    if parallel and method and not conn.in_transaction and (database := database_file(conn)):
        try:
            return _screen_on_two_cores(conn, database, settings, progress, now, store_in, method)
        except _TwoCoresFailed:
            pass  # a write came between the two processes' reads, or the child failed: all of it here, again
    clips, transcripts, no_speech = _read_inputs(conn, settings)
    result = ScreeningResult(
        settings,
        {},
        {clip_id: language for clip_id, (language, _) in clips.items()},
        transcript_state=store.transcript_state(conn),
    )
    scoring = _ClipScoring(settings, clips, transcripts, no_speech)
    scoring.score(result, progress)
    result.too_few_transcripts.update(scoring.without_transcripts())
    _add_metrics(result, scoring.scorer)
    if store_in is not None:
        _store(store_in, result, _score_rows(result.scores.items(), now), now)
    progress.report(len(transcripts), len(transcripts), "screened")
    return result


def _read_inputs(conn, settings: ScreeningSettings, part: int | None = None) -> tuple[dict, dict, dict]:
    """(clip id → (language, text), clip id → (ASR system, transcript, ASR system, transcript, …) by system, clip
    id → {ASR system → no-speech probability}) of every screenable clip, or of one `part` of them
    (store.screenable_clips). A clip's transcripts are one flat tuple: (language, text) + it is the clip's key in
    scoring, built without a list or a pair per transcript."""
    clips = store.screenable_clips(conn, part)
    no_speech: dict[int, dict[str, float]] = defaultdict(dict)
    if settings.hallucinations:
        for (clip_id, asr), probability in store.no_speech_probabilities(conn).items():
            no_speech[clip_id][asr] = probability
    transcripts: dict[int, tuple[str, ...]] = {}
    rows = store.transcripts_in_clip_order(conn) if part is None else store.screenable_transcripts(conn, part)
    last_clip, heard = None, ()
    for clip_id, asr, text in rows:  # by clip: each clip's transcripts are consecutive
        if clip_id == last_clip:
            heard += (asr, text)
        else:
            if last_clip in clips:
                transcripts[last_clip] = heard
            last_clip, heard = clip_id, (asr, text)
    if last_clip in clips:
        transcripts[last_clip] = heard
    return clips, transcripts, no_speech


class _TwoCoresFailed(Exception):
    """The child's part gave no result, or it was read from other data than this process's part."""


def _screen_on_two_cores(
    conn,
    database: str,
    settings: ScreeningSettings,
    progress: Progress,
    now: str,
    store_in: Project | None,
    method: str,
) -> ScreeningResult:
    """The clips in two parts (store.screenable_clips), each read and scored by its own process: the child
    (forked or spawned, `method`) opens the database itself, so nothing big is shared or sent but its scores.
    Both note the change counters of what they read; if they differ (a write in between) or the child fails,
    _TwoCoresFailed. With `store_in`, this process stores its part's scores while the child may still score its
    own."""
    with call_in_child(method, _score_part_in_child, database, settings, now) as child_part:
        with read_snapshot(conn):
            version = store.screening_inputs_version(conn)
            clips, transcripts, no_speech = _read_inputs(conn, settings, _OWN_PART)
        own = ScreeningResult(settings, {}, {})
        scoring = _ClipScoring(settings, clips, transcripts, no_speech)
        scoring.score(own, progress)
        result = ScreeningResult(settings, {}, {})

        def the_rest() -> list[tuple]:
            """Both parts merged into `result`; the child's rows to store."""
            try:
                child_version, rows, child, zeros = _decoded_part(child_part(progress.check_cancelled))
            except ChildCallFailed as error:
                raise _TwoCoresFailed from error
            if child_version != version:
                raise _TwoCoresFailed("the two parts were read from different data")
            result.transcript_state = child.transcript_state  # read by the child: one query less on this side
            languages = {clip_id: language for clip_id, (language, _) in clips.items()} | child.languages
            result.languages.update((clip_id, languages[clip_id]) for clip_id in sorted(languages))
            _merge_in_clip_order(result, own, child, [scoring.without_transcripts(), zeros])
            return rows

        if store_in is None:
            the_rest()
        else:
            own_rows = _score_rows(own.scores.items(), now)

            def all_rows() -> Iterator[tuple]:  # one executemany: this part's rows while the child scores
                yield from own_rows
                yield from the_rest()

            _store(store_in, result, all_rows(), now)
    _add_metrics(result, scoring.scorer)
    with_transcripts = len(result.languages) - sum(1 for n in result.too_few_transcripts.values() if n == 0)
    progress.report(with_transcripts, with_transcripts, "screened")
    return result


def _score_part_in_child(database: str, settings: ScreeningSettings, now: str) -> tuple:
    """The child's part read on a connection of its own and scored, as plain tuples (a named tuple pickles
    through a Python call per object, a plain one in C): the change counters it read, the rows to store, each
    clip's index into the distinct scores, the distinct scores, the unscorable clips, the clips with too few
    transcripts, those with none, the transcripts' state and its clips' languages. The state and the languages
    are read here, not in the parent, whose own part and every row's insert are the longer path (bench_qc
    --phases' timeline); the equal change counters say both processes read the same data."""
    with contextlib.closing(connect(Path(database), read_only=True)) as conn, read_snapshot(conn):
        version = store.screening_inputs_version(conn)
        state = store.transcript_state(conn)
        clips, transcripts, no_speech = _read_inputs(conn, settings, _CHILD_PART)
    scoring = _ClipScoring(settings, clips, transcripts, no_speech)
    part = ScreeningResult(settings, {}, {})
    scoring.score(part, no_progress())
    index_of: dict[int, int] = {}
    distinct, indexes = [], []
    for score in part.scores.values():
        index = index_of.get(id(score))
        if index is None:
            index = index_of[id(score)] = len(distinct)
            distinct.append(tuple(score))
        indexes.append(index)
    rows = _score_rows(part.scores.items(), now)
    languages = {clip_id: language for clip_id, (language, _) in clips.items()}
    zeros = scoring.without_transcripts()
    return version, rows, indexes, distinct, part.unscorable, part.too_few_transcripts, zeros, state, languages


def _decoded_part(part: tuple) -> tuple[tuple, list[tuple], ScreeningResult, dict[int, int]]:
    """The child's part (`_score_part_in_child`): its counters, its rows, a result of its own (with its clips'
    languages and the transcripts' state), its clips without transcripts."""
    version, rows, indexes, distinct, unscorable, too_few, zeros, state, languages = part
    new = tuple.__new__
    scores = [new(ClipScore, fields) for fields in distinct]  # ClipScore(*fields) without its Python __new__
    decoded = ScreeningResult(
        ScreeningSettings(),
        dict(zip([row[0] for row in rows], [scores[i] for i in indexes])),
        languages,
        transcript_state=state,
    )
    decoded.unscorable, decoded.too_few_transcripts = unscorable, too_few
    return version, rows, decoded, zeros


def _merge_in_clip_order(
    result: ScreeningResult, own: ScreeningResult, child: ScreeningResult, zeros: list[dict[int, int]]
) -> None:
    """Both parts added to `result` in the order one process scoring every clip gives: scores and unscorable
    clips by clip id, then the clips with too few transcripts by id, and after them those with none, by id."""
    scores = own.scores | child.scores
    result.scores.update((clip_id, scores[clip_id]) for clip_id in sorted(scores))
    result.unscorable += sorted(own.unscorable + child.unscorable)
    result.too_few_transcripts.update(sorted((own.too_few_transcripts | child.too_few_transcripts).items()))
    result.too_few_transcripts.update(sorted((zeros[0] | zeros[1]).items()))


def _add_metrics(result: ScreeningResult, scorer: Scorer) -> None:
    result.metric_by_language = {
        lang: scorer.metric_for(lang) for lang in sorted(set(result.languages.values()), key=language_sort_key)
    }


class _ClipScoring:
    """Scores clips, in this process or the second one: a clip's score is the minimum over its transcripts
    (score_clip), its likely hallucinations set aside."""

    def __init__(self, settings: ScreeningSettings, clips: dict, transcripts: dict, no_speech: dict):
        self.scorer = Scorer(dict(settings.metrics))
        self.min_asr, self.hallucinations = settings.min_asr, settings.hallucinations
        self.clips, self.transcripts, self.no_speech = clips, transcripts, no_speech

    def without_transcripts(self) -> dict[int, int]:
        return {clip_id: 0 for clip_id in self.clips if clip_id not in self.transcripts}

    def score(self, result: ScreeningResult, progress: Progress) -> None:
        """Score the clips with transcripts into `result` (scores, unscorable, too few transcripts), by id."""
        clips, scorer, min_fields = self.clips, self.scorer, 2 * self.min_asr
        scores, unscorable, too_few = result.scores, result.unscorable, result.too_few_transcripts
        no_speech, hallucinations = self.no_speech, self.hallucinations
        total = len(self.transcripts)
        # A sentence is synthesized in many voices and often transcribed alike: clips with the same text and the
        # same transcripts share one (immutable) score, and whether it is checked for hallucinations (a check
        # that depends on the clip, so made after).
        same_clip_scores: dict[tuple, tuple[ClipScore | None, bool]] = {}
        for done, (clip_id, heard) in enumerate(self.transcripts.items(), start=1):
            if len(heard) < min_fields:
                too_few[clip_id] = len(heard) // 2
            else:
                clip = clips[clip_id]
                key = clip + heard
                found = same_clip_scores.get(key)
                if found is None:
                    language, reference = clip
                    score = scorer.score_clip(language, reference, list(zip(heard[::2], heard[1::2])))
                    # only a clip above 0.6 (bin 3) can have its transcripts set aside
                    check = hallucinations and score is not None and score.errors and 5 * score.errors > 3 * score.units
                    found = same_clip_scores[key] = (score, check)
                score, check = found
                if score is None:
                    unscorable.append(clip_id)
                else:
                    if check:
                        language, reference = clip
                        score = scorer.set_aside_hallucinations(
                            score, language, reference, list(zip(heard[::2], heard[1::2])), no_speech.get(clip_id)
                        )
                    scores[clip_id] = score
            if done % 2000 == 0:
                progress.check_cancelled()
                progress.report(done, total, "scoring transcripts")


def _score_rows(scores: Iterable[tuple[int, ClipScore]], now: str) -> list[tuple]:
    """clip_screening's rows of (clip id, score) pairs, screened at `now`."""
    columns: dict[int, tuple] = {}  # by score object: clips that share a score share its columns
    for _, s in scores:
        if id(s) not in columns:
            metric, errors, units, best_asr, asr_count, cer = s[:6]
            rate = errors / units if units else float("inf")  # ClipScore.rate and .bin without two property calls
            columns[id(s)] = (metric, errors, units, rate, wer_bin(errors, units), best_asr, asr_count, cer, now)
    return [(clip_id, *columns[id(s)]) for clip_id, s in scores]


def store_screening(project: Project, result: ScreeningResult) -> None:
    """Replace the stored per-clip scores with `result` in one transaction."""
    now = utc_now()
    _store(project, result, _score_rows(result.scores.items(), now), now)


def _store(project: Project, result: ScreeningResult, rows: Iterable[tuple], now: str) -> None:
    """The scores' `rows` and the screening's settings and state in one transaction. `rows` may complete
    `result` as they are read (the child's part's), so the meta is made after them."""
    with project.transaction() as conn:
        store.replace_screening_scores(conn, rows)
        meta = {
            "settings": result.settings.as_dict(),
            "transcripts": list(result.transcript_state),
            "screened": result.screened,
            "hallucinated": {str(clip_id): why for clip_id, why in result.hallucinated.items()},
            "computed_at": now,
        }
        write_meta(conn, META_KEY, json.dumps(meta))


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
    with automatic_collection_paused():
        return _screen(project.conn, settings, progress, parallel, store_in=project)


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
