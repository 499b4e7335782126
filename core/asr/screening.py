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
from collections.abc import Iterable
from dataclasses import dataclass, field

from spokenbench.core.asr import store
from spokenbench.core.asr.scoring import WER_BINS, ClipScore, Scorer, reports_both, wer_bin
from spokenbench.core.asr.store import LENGTHS_PACKED
from spokenbench.core.foundation.collection import automatic_collection_paused
from spokenbench.core.foundation.progress import Progress, no_progress
from spokenbench.core.foundation.table_layout import TABLE2_LAYOUTS, language_sort_key, percent, table_language
from spokenbench.core.store import Project
from spokenbench.core.store.database import read_snapshot, utc_now
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
    conn, settings: ScreeningSettings | None = None, progress: Progress | None = None, rescore: bool = False
) -> ScreeningResult:
    """Score every good item clip that has transcripts (instruction tokens are not screened); nothing is
    written. `rescore`: every clip from its texts, not from stored counts (the result is the same)."""
    with automatic_collection_paused():
        return _screen(conn, settings, progress, rescore=rescore)


def _screen(
    conn,
    settings: ScreeningSettings | None,
    progress: Progress | None,
    store_in: Project | None = None,
    rescore: bool = False,
) -> ScreeningResult:
    """compute_screening, and with `store_in` also store_screening. A clip whose transcripts all carry current
    counts (stored with them, core/asr/store.py) is scored from them, gathered in SQL; the others, and the clips
    whose likely hallucinations must be looked for (their texts are needed), are scored from their texts as
    before (_ClipScoring), all of them with `rescore`. With `store_in`, the counts made from texts are stored
    back in the scores' transaction, so the next screening gathers them."""
    settings = settings or ScreeningSettings()
    progress = progress or no_progress()
    now = utc_now()
    with contextlib.nullcontext() if conn.in_transaction else read_snapshot(conn):
        languages = store.screenable_languages(conn)
        result = ScreeningResult(settings, {}, languages, transcript_state=store.transcript_state(conn))
        scorer = Scorer(dict(settings.metrics))
        names = sorted(store.asr_systems_with_transcripts(conn))  # by name, as score_clip breaks a tie
        # each name is a parameter twice: past SQLite's limit (someone else's project), every clip from its texts
        if rescore or len(names) > MOST_ASR_SYSTEMS_FROM_COUNTS or not store.counted_transcripts_exist(conn):
            rows: list[tuple] = []  # an old project's first screening, or --rescore: every clip from its texts
            clips = store.screenable_clips(conn)
            transcripts, stale = _read_texts(conn, clips, None)
            with_transcripts, reserved = transcripts, None
        else:
            from_counts = _FromCounts(settings, scorer, languages, names)
            rows = from_counts.score(store.clip_count_summaries(conn, names), result, now)
            clips = store.clip_references(conn, from_counts.from_texts)  # the texts only of the clips that need them
            transcripts, stale = _read_texts(conn, clips, from_counts.from_texts, from_counts.recount)
            with_transcripts, reserved = from_counts.with_transcripts, from_counts.from_texts
        no_speech = _no_speech(conn) if settings.hallucinations and transcripts else {}
    progress.check_cancelled()
    scoring = _ClipScoring(settings, clips, transcripts, no_speech, scorer)
    from_texts = ScreeningResult(settings, {}, {})
    scoring.score(from_texts, progress)
    zeros = {clip_id: 0 for clip_id in languages if clip_id not in with_transcripts}
    _merge_in_clip_order(result, from_texts, reserved, zeros)
    _add_metrics(result, scorer)
    if store_in is not None:
        counts = scorer.transcript_counts(stale)
        rows += _score_rows(from_texts.scores.items(), now)
        _store(store_in, result, rows, now, counts)
    progress.report(len(result.languages), len(result.languages), "screened")
    return result


MOST_ASR_SYSTEMS_FROM_COUNTS = 1000


class _FromCounts:
    """Scores clips from their transcripts' stored counts (store.clip_count_summaries): the same minimum, tie rule
    and bins as Scorer.score_clip, without a text. Clips it cannot score that way are left in `from_texts`."""

    def __init__(self, settings: ScreeningSettings, scorer: Scorer, languages: dict[int, str], names: list[str]):
        self.settings, self.scorer, self.languages, self.names = settings, scorer, languages, names
        self.from_texts: list[int] = []  # by id
        self.recount: set[int] = set()  # those of them whose counts are to be made again and stored
        self.with_transcripts: set[int] = set()

    def score(self, summaries: Iterable[tuple], result: ScreeningResult, now: str) -> list[tuple]:
        """The clips scored from counts into `result` (scores, too few transcripts, unscorable), by id; returns
        their clip_screening rows, screened at `now`."""
        languages, names, n = self.languages, self.names, len(self.names)
        min_asr, hallucinations = self.settings.min_asr, self.settings.hallucinations
        scores, unscorable, too_few = result.scores, result.unscorable, result.too_few_transcripts
        from_texts, with_transcripts = self.from_texts, self.with_transcripts
        by_language: dict[str, tuple[str, bool]] = {}
        rows = []
        new = tuple.__new__
        for clip_id, count, current, word_key, character_key, lengths, lengths_high, cer in summaries:
            language = languages.get(clip_id)
            if language is None:  # not screened (an instruction token, a control, a failed clip)
                continue
            with_transcripts.add(clip_id)
            if count < min_asr:
                too_few[clip_id] = count
                continue
            if current != count or lengths != lengths_high:
                from_texts.append(clip_id)
                scores[clip_id] = None  # its place, in clip order, for its score from texts
                self.recount.add(clip_id)
                continue
            found = by_language.get(language)
            if found is None:
                metric = self.scorer.metric_for(language)
                found = by_language[language] = (metric, reports_both(language))
            metric, both = found
            words, characters = divmod(lengths, LENGTHS_PACKED)
            if metric == "wer":
                errors, rank = divmod(word_key, n)
                units = words
            else:
                errors, rank = divmod(character_key, n)
                units = characters
            if not units:
                unscorable.append(clip_id)
                continue
            if errors and 5 * errors > 3 * units and hallucinations:  # above 0.6: its texts are looked at
                from_texts.append(clip_id)
                scores[clip_id] = None  # its place, in clip order, for its score from texts
                continue
            if not (both and characters):
                cer = None
            best_asr = names[rank]
            scores[clip_id] = new(ClipScore, (metric, errors, units, best_asr, count, cer, (), ()))
            rows.append(
                (clip_id, metric, errors, units, errors / units, wer_bin(errors, units), best_asr, count, cer, now)
            )
        return rows


def _read_texts(
    conn, clips: dict, clip_ids: list[int] | None, recount: set[int] = frozenset()
) -> tuple[dict[int, tuple[str, ...]], list[tuple[int, str, str, str]]]:
    """The transcripts of `clip_ids` (None: of every clip in `clips`) as _ClipScoring takes them (clip id → (ASR
    system, text, ASR system, text, …) by system), and the (transcript id, clip language, clip text, text) of
    those whose counts are to be stored: with `clip_ids` None every one, else those of the clips to `recount` and
    any other whose stored counts are not current."""
    transcripts: dict[int, tuple[str, ...]] = {}
    stale = []
    if clip_ids is not None and not clip_ids:
        return transcripts, stale
    every = clip_ids is None
    rows = store.every_transcript_in_clip_order(conn) if every else store.transcripts_of_clips(conn, clip_ids)
    last_clip, heard = None, ()
    for transcript_id, clip_id, asr, text, current in rows:
        clip = clips.get(clip_id)
        if clip is None:  # not screened
            continue
        if every or not current or clip_id in recount:
            stale.append((transcript_id, clip[0], clip[1], text))
        if clip_id == last_clip:
            heard += (asr, text)
        else:
            if last_clip is not None:
                transcripts[last_clip] = heard
            last_clip, heard = clip_id, (asr, text)
    if last_clip is not None:
        transcripts[last_clip] = heard
    return transcripts, stale


def _no_speech(conn) -> dict[int, dict[str, float]]:
    found: dict[int, dict[str, float]] = defaultdict(dict)
    for (clip_id, asr), probability in store.no_speech_probabilities(conn).items():
        found[clip_id][asr] = probability
    return found


def _merge_in_clip_order(
    result: ScreeningResult, from_texts: ScreeningResult, reserved: list[int] | None, zeros: dict[int, int]
) -> None:
    """The clips scored from texts added to `result` in the order one pass over every clip gives: scores and
    unscorable clips by clip id, then the clips with too few transcripts by id, and after them those with none.
    `reserved`: the clips whose places in result.scores wait for their scores from texts (None: result has no
    scores yet, and from_texts' are in clip order)."""
    if reserved is None:
        result.scores.update(from_texts.scores)
    else:
        for clip_id in reserved:
            score = from_texts.scores.get(clip_id)
            if score is None:  # its reference normalizes to nothing: unscorable
                del result.scores[clip_id]
            else:
                result.scores[clip_id] = score
    if from_texts.unscorable:
        result.unscorable[:] = sorted(result.unscorable + from_texts.unscorable)
    result.too_few_transcripts.update(from_texts.too_few_transcripts)  # by id (none: _FromCounts kept them)
    result.too_few_transcripts.update(zeros)


def _add_metrics(result: ScreeningResult, scorer: Scorer) -> None:
    result.metric_by_language = {
        lang: scorer.metric_for(lang) for lang in sorted(set(result.languages.values()), key=language_sort_key)
    }


class _ClipScoring:
    """Scores clips from their texts: a clip's score is the minimum over its transcripts (score_clip), its
    likely hallucinations set aside."""

    def __init__(self, settings: ScreeningSettings, clips: dict, transcripts: dict, no_speech: dict, scorer: Scorer):
        self.scorer = scorer
        self.min_asr, self.hallucinations = settings.min_asr, settings.hallucinations
        self.clips, self.transcripts, self.no_speech = clips, transcripts, no_speech

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


def _store(project: Project, result: ScreeningResult, rows: Iterable[tuple], now: str, counts: list = ()) -> None:
    """The scores' `rows`, the screening's settings and state, and the transcript `counts` made from texts
    (store.store_transcript_counts) in one transaction."""
    with store.foreign_keys_unchecked(project.conn), project.transaction() as conn:
        store.replace_screening_scores(conn, rows)
        store.store_transcript_counts(conn, counts)
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
    project: Project, settings: ScreeningSettings | None = None, progress: Progress | None = None, rescore: bool = False
) -> ScreeningResult:
    """Compute and store the screening of every clip with transcripts (`rescore`: see compute_screening; the
    counts are then stored again too)."""
    with automatic_collection_paused():
        return _screen(project.conn, settings, progress, store_in=project, rescore=rescore)


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
