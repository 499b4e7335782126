"""Benchmark (run by hand, prints its figures; not part of the test run): ASR screening of 44,800 clips with two
transcripts each — normalization, error counts, minimum, binning, storing — and stratified sampling from them.
Targets: screening ≤ 10 s, sampling ≤ 1 s (issue 5); screening ≤ 2 s (issue 13, item 7).

Screening is timed side by side in one run, alternating, with the edit counts of jiwer's full alignment (as
before issue 13) and of rapidfuzz's Levenshtein distance (now); the two must give identical scores.

    /work/venv/bin/python tests/benchmarks/bench_qc.py [--clips 44800] [--exact-share 0.7] [--repeats 3]
"""

import argparse
import contextlib
import gc
import hashlib
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

import jiwer

from spokenbench.core.asr import scoring, screening
from spokenbench.core.asr.normalize import BOTH_METRIC_LANGUAGES, base_language
from spokenbench.core.asr.screening import screen_project
from spokenbench.core.qc.queues import sample_for_rating
from spokenbench.core.store import Project
from spokenbench.core.store.database import utc_now

WORDS = (
    "the which of is what a an acid mass molar sulfuric holiday november gas plants take in cell energy light "
    "chemical process called water heated degrees celsius kelvin rise speed ball dropped rest seconds meters"
).split()
HAN = "的一是在不了有和人这中大为上个国我以要他时来用们生到作地于出就分对成会可主发年动同工也能下过子说产种面而方后多定行学法所民得经十三之进着等部度家电力里如水化高自二理起小物现实加量都两体制机当使点从业本去把性好应开它合还因由其些然前外天政四日那社义事平形相全表间样与关各重新线内数正心反你明看原又么利比或但质气第向道命此变条只没结解问意建月公无系军很情者最立代想已通并提直题党程展五果料象员革位入常文总次品式活设及管特件长求老头基资边流路级少图山统接知较将组见计别她手角期根论运农指几九区强放决西被干做必战先回则任取据处理府研质"
HANGUL = [chr(c) for c in range(0xAC00, 0xAC00 + 2000, 7)]
ACCENTS = {"en": ("american", "british", "indian"), "zh": ("beijing", "northeastern"), "ko": ("seoul", "jeolla")}
SUBJECTS = [f"subject_{n}" for n in range(57)]


def sentence(language: str, rng: random.Random) -> str:
    if language == "en":
        words = [rng.choice(WORDS) for _ in range(rng.randint(6, 18))]
        if rng.random() < 0.3:
            words.insert(rng.randrange(len(words)), str(rng.randint(2, 2000)))
        return " ".join(words).capitalize() + "?"
    if language == "zh":
        text = "".join(rng.choice(HAN) for _ in range(rng.randint(8, 30)))
        return text + (f"{rng.randint(2, 99)}米" if rng.random() < 0.3 else "") + "？"
    return (
        " ".join("".join(rng.choice(HANGUL) for _ in range(rng.randint(1, 4))) for _ in range(rng.randint(3, 9))) + "?"
    )


def heard(text: str, language: str, rng: random.Random, exact_share: float = 0.7) -> str:
    """A transcript: usually exact (case and punctuation may differ), sometimes with a few errors."""
    roll = rng.random()
    if roll < exact_share:
        return text.lower().rstrip("?？") if language == "en" else text.rstrip("?？")
    tokens = text.split() if language != "zh" else list(text)
    for _ in range(1 if roll < exact_share + (1 - exact_share) * 2 / 3 else rng.randint(2, 6)):
        if tokens:
            tokens[rng.randrange(len(tokens))] = rng.choice(
                WORDS if language == "en" else HAN if language == "zh" else HANGUL
            )
    return (" " if language != "zh" else "").join(tokens)


def build(path: Path, clip_count: int, seed: int = 0, exact_share: float = 0.7) -> Project:
    rng = random.Random(seed)
    project = Project.create(path)
    now = utc_now()
    with project.transaction() as conn:
        item_ids = {}
        for language in ("en", "zh", "ko"):
            for n in range(400):
                cursor = conn.execute(
                    "INSERT INTO items(source, source_id, language, subject, question, answer, created_at) VALUES ('bench', ?, ?, ?, 'q', 'A', ?)",
                    (f"b{n}", language, SUBJECTS[n % len(SUBJECTS)], now),
                )
                item_ids[(language, n)] = cursor.lastrowid
        texts = {key: [sentence(key[0], rng) for _ in range(5)] for key in item_ids}
        clips, transcripts = [], []
        for clip_id in range(1, clip_count + 1):
            language = ("en", "zh", "ko")[clip_id % 3]
            n = rng.randrange(400)
            part_index = rng.randrange(5)
            text = texts[(language, n)][part_index]
            part = "question" if part_index == 0 else f"option_{'ABCD'[part_index - 1]}"
            accent = rng.choice(ACCENTS[language])
            key = hashlib.sha256(f"{clip_id}".encode()).hexdigest()
            clips.append(
                (clip_id, item_ids[(language, n)], part, text, language, accent, f"v{clip_id % 2}", key, key, now)
            )
            transcripts.append((clip_id, "asr-a", heard(text, language, rng, exact_share), now))
            transcripts.append((clip_id, "asr-b", heard(text, language, rng, exact_share), now))
        conn.executemany(
            "INSERT INTO clips(id, item_id, part, text, language, accent, voice, backend, cache_key, sha256, audio_format, "
            "status, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, 'bench', ?, ?, 'flac', 'ok', ?)",
            clips,
        )
        conn.executemany("INSERT INTO transcripts(clip_id, asr, text, created_at) VALUES (?, ?, ?, ?)", transcripts)
    return project


_JIWER_WORDS = jiwer.ReduceToListOfListOfWords()
_JIWER_CHARACTERS = jiwer.ReduceToListOfListOfChars()


def jiwer_count_errors(reference, hypothesis, metric: str) -> scoring.ErrorCount:
    """scoring.count_errors as it was before issue 13: jiwer's full alignment, its operations counted."""
    if metric == "wer":
        if not reference.words:
            return scoring.ErrorCount(len(hypothesis.words), 0)
        if not hypothesis.words:
            return scoring.ErrorCount(len(reference.words), len(reference.words))
        out = jiwer.process_words(" ".join(reference.words), " ".join(hypothesis.words), _JIWER_WORDS, _JIWER_WORDS)
    else:
        if not reference.characters:
            return scoring.ErrorCount(len(hypothesis.characters), 0)
        if not hypothesis.characters:
            return scoring.ErrorCount(len(reference.characters), len(reference.characters))
        out = jiwer.process_characters(
            reference.characters, hypothesis.characters, _JIWER_CHARACTERS, _JIWER_CHARACTERS
        )
    return scoring.ErrorCount(
        out.substitutions + out.deletions + out.insertions, out.hits + out.substitutions + out.deletions
    )


class ScorerBefore(scoring.Scorer):
    """The Scorer as it was before issue 13: jiwer's counts, each pair looked up by its normalized texts, the
    language's metric resolved for every clip."""

    def count(self, reference, hypothesis, metric):
        key = (metric, reference, hypothesis)
        found = self._counts.get(key)
        if found is None:
            found = self._counts[key] = jiwer_count_errors(reference, hypothesis, metric)
        return found

    def score_clip(self, language, reference, transcripts):
        metric = self.metric_for(language)
        ref = self.normalized(reference, language)
        if not (ref.words if metric == "wer" else ref.characters):
            return None
        scored = []
        for asr, text in transcripts:
            hyp = self.normalized(text, language)
            scored.append((self.count(ref, hyp, metric), asr, hyp))
        best, best_asr, _ = min(scored, key=lambda entry: (entry[0].errors, entry[1]))
        cer = None
        if base_language(language) in BOTH_METRIC_LANGUAGES and ref.characters:
            cer = min(self.count(ref, hyp, "cer").rate for _, _, hyp in scored)
        return scoring.ClipScore(
            metric,
            best.errors,
            best.units,
            best_asr,
            len(scored),
            cer,
            tuple((asr, count.rate) for count, asr, _ in scored),
        )


def timed_screening(project, scorer_class, before: bool):
    """Screen (score, bin, store) with `scorer_class` as screening's Scorer — and, before, with the cyclic
    collector running as it did then; returns (seconds, result)."""
    current, paused = screening.Scorer, screening._automatic_collection_paused
    screening.Scorer = scorer_class
    if before:
        screening._automatic_collection_paused = contextlib.nullcontext
    try:
        gc.collect()
        started = time.perf_counter()
        result = screen_project(project)
        return time.perf_counter() - started, result
    finally:
        screening.Scorer, screening._automatic_collection_paused = current, paused


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--clips", type=int, default=44_800)
    parser.add_argument(
        "--exact-share",
        type=float,
        default=0.7,
        help="share of transcripts that match their text exactly (0 = every pair scored afresh, the worst case)",
    )
    parser.add_argument("--repeats", type=int, default=3, help="timed passes of each implementation, alternating")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as folder:
        started = time.perf_counter()
        project = build(Path(folder) / "bench", args.clips, exact_share=args.exact_share)
        print(
            f"built {args.clips} clips with 2 transcripts each in {time.perf_counter() - started:.1f} s (setup, not timed)"
        )
        times = {"jiwer (before)": [], "rapidfuzz (now)": []}
        results = {}
        for _ in range(args.repeats):
            for name, count in (("jiwer (before)", ScorerBefore), ("rapidfuzz (now)", scoring.Scorer)):
                seconds, results[name] = timed_screening(project, count, count is ScorerBefore)
                times[name].append(seconds)
        before, result = results["jiwer (before)"], results["rapidfuzz (now)"]
        assert before.scores == result.scores, "rapidfuzz's counts must equal jiwer's"
        median = {name: statistics.median(values) for name, values in times.items()}
        screening_s = median["rapidfuzz (now)"]
        print(
            f"screening: {result.screened} clips, {2 * result.screened} transcripts scored, binned and stored "
            f"(median of {args.repeats} passes each, alternating; identical scores):"
        )
        for name, seconds in median.items():
            print(f"  {name:<16} {seconds:.2f} s   (passes: {', '.join(f'{t:.2f}' for t in times[name])})")
        print(
            f"  jiwer / rapidfuzz: {median['jiwer (before)'] / screening_s:.2f}x; "
            "target ≤ 2 s (issue 13), ≤ 10 s (issue 5)"
        )
        for row in result.table2():
            print(
                f"  {row['wer_interval']:>10} {row['language']:<8} {row['n_samples']:>6} {row['pct_of_language']:>6.2f}%"
            )
        started = time.perf_counter()
        outcome = sample_for_rating(project, "bench", per_bin=40, seed=0)
        sampling_s = time.perf_counter() - started
        print(
            f"sampling: {len(outcome.result.selected)} clips in {len(outcome.result.strata)} strata in {sampling_s:.2f} s "
            "(target ≤ 1 s; includes the screening freshness check and storing the queue)"
        )
        project.close()
    return 0 if screening_s <= 2 and sampling_s <= 1 else 1


if __name__ == "__main__":
    sys.exit(main())
