"""Screening in context: an item's question and options, as synthesized in one voice, joined into one clip (half
a second of silence between parts), transcribed once, and the transcript split back into one per part by aligning
it with the parts' joined reference texts. A one-word option clip alone gives Whisper almost nothing to go on (it
then invents "Thank you for watching."); after its question it is heard as speech in context. BiasInEar screens
"each clip" with two ASR systems without saying whether short options were heard alone, so this is an option:
name an ASR system with the suffix `+context` (`--asr local:tiny.en+context`) and its transcripts are stored
under that name, as one more system beside the clip-by-clip one, whose minimum screening then takes.

Splitting: the joined transcript and the joined reference are normalized for the language (the reference part by
part, so part boundaries are exact), aligned by a minimal edit script (rapidfuzz), and every transcript unit goes
to the part of the reference unit it is aligned with; units inserted at a boundary go to the part before it (a
trailing invention lands on the last option, where the hallucination check sees it)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from rapidfuzz.distance import Levenshtein

from spokenbench.core.asr.normalize import normalize, primary_metric

CONTEXT_SUFFIX = "+context"
CONTEXT_RATE = 16_000
GAP_S = 0.5
PART_ORDER = ("question",)  # then the options in letter order


@dataclass(frozen=True)
class ContextPart:
    clip_id: int
    part: str
    text: str
    sha256: str
    audio_format: str


def part_sort_key(part: str) -> tuple[int, str]:
    return (0, part) if part in PART_ORDER else (1, part)


def context_groups(rows) -> list[list[dict]]:
    """Group clip rows (dicts with id, item_id, part, language, accent, voice, backend, model, prompt, speaker_id,
    neutralization) into items as one voice spoke them: one clip per part, parts in reading order. A part
    synthesized twice in the same voice starts a second group."""
    groups: dict[tuple, list[list[dict]]] = {}
    for row in sorted(rows, key=lambda r: r["id"]):
        if row.get("item_id") is None:
            continue
        key = tuple(
            row.get(k)
            for k in (
                "item_id",
                "language",
                "accent",
                "voice",
                "backend",
                "model",
                "prompt",
                "speaker_id",
                "neutralization",
            )
        )
        rounds = groups.setdefault(key, [])
        for group in rounds:
            if all(member["part"] != row["part"] for member in group):
                group.append(row)
                break
        else:
            rounds.append([row])
    return [sorted(group, key=lambda r: part_sort_key(r["part"])) for rounds in groups.values() for group in rounds]


def join_audio(clips: list[tuple[np.ndarray, int]], gap_s: float = GAP_S) -> np.ndarray:
    """Mono clips (samples, rate) resampled to 16 kHz and joined with `gap_s` of silence between them."""
    from spokenbench.core.audio.dsp import resample

    gap = np.zeros(int(round(gap_s * CONTEXT_RATE)), dtype=np.float32)
    pieces = []
    for index, (samples, rate) in enumerate(clips):
        if index:
            pieces.append(gap)
        mono = samples if samples.ndim == 1 else samples.mean(axis=1)
        pieces.append(np.asarray(resample(mono, rate, CONTEXT_RATE), dtype=np.float32))
    return np.concatenate(pieces) if pieces else gap[:0]


def split_transcript(texts: list[str], transcript: str, language: str) -> list[str]:
    """The part of `transcript` (of the parts `texts` read one after another) that belongs to each part."""
    by_characters = primary_metric(language) == "cer"
    units = [list(_units(normalize(text, language), by_characters)) for text in texts]
    heard = list(_units(normalize(transcript, language), by_characters))
    if not any(units):
        return ["" for _ in texts]
    if by_characters:
        owners = _owners([u for part in units for u in part], [i for i, part in enumerate(units) for _ in part], heard)
        pieces = [[] for _ in texts]
        for unit, owner in zip(heard, owners):
            pieces[owner].append(unit)
        return ["".join(piece) for piece in pieces]
    # Words: aligned by their characters, so a word the ASR split or joined ("hino maru" / "hinomaru") still
    # lands in its part; each word goes to the part most of its characters align with.
    reference, owner = [], []
    for index, words in enumerate(units):
        for word in words:
            if reference:
                reference.append(" ")
                owner.append(owner[-1])
            reference += list(word)
            owner += [index] * len(word)
    heard_text = " ".join(heard)
    char_owners = _owners(reference, owner, list(heard_text))
    pieces, position = [[] for _ in texts], 0
    for word in heard:
        votes = char_owners[position : position + len(word)]
        pieces[max(sorted(set(votes)), key=votes.count)].append(word)
        position += len(word) + 1
    return [" ".join(piece) for piece in pieces]


def _units(normalized, by_characters: bool):
    return normalized.characters if by_characters else normalized.words


def _owners(reference: list[str], owner: list[int], hypothesis: list[str]) -> list[int]:
    """For each hypothesis unit, the owner of the reference unit a minimal edit script aligns it with; an inserted
    unit takes the owner of the reference unit before it."""
    found = [0] * len(hypothesis)
    for tag, i1, i2, j1, j2 in Levenshtein.opcodes(reference, hypothesis):
        if tag == "delete":
            continue
        for offset in range(j2 - j1):
            if tag == "insert":
                found[j1 + offset] = owner[i1 - 1] if i1 > 0 else owner[0]
            else:  # equal and replace blocks have equal lengths
                found[j1 + offset] = owner[min(i1 + offset, i2 - 1)]
    return found
