"""The rating screen's state machine, without Qt: the screen draws `current`, feeds key names to `press` and runs
the writes it is handed. showing → the next clip (or finished); reviewing while ← / → browse clips already rated.
The session never writes itself: an action that changes the project returns a `PendingWrite` (a function of a
`Project` that commits in its own short transaction), which the app runs on its writer thread;
`SynchronousRatingSession` runs them at once, for the CLI and tests.

A new clip's rating is saved ahead (`SAVE_AHEAD`): the next clip is shown without waiting for the commit, which
takes a busy disk's fsync (0.5 s at p90, up to 1.1 s, while another program writes gigabytes; 5 ms idle). The app
answers `rating_saved` or `rating_failed`; a failed rating brings its clip back, with its note. The rating key is
ignored on a clip whose rating is in flight, so a double press never rates twice, and undo, browsing and notes on
rated clips wait for the saves in flight. Other writes (a re-rating, a note, an undo) go through `SAVE`: nothing
moves until `saved(result)` or `failed(error)`.

Each session belongs to one annotator and one queue: it sees only that annotator's ratings and resumes at the
first clip in queue order they have no live rating for."""

from __future__ import annotations

import dataclasses
import json
import sqlite3
import time
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from spokenbench.core.asr.normalize import error_rate_name
from spokenbench.core.foundation.environment_errors import why_unreachable
from spokenbench.core.foundation.errors import SpokenBenchError
from spokenbench.core.qc import store
from spokenbench.core.qc.queues import (
    MAX_RATING_SECONDS,
    RATINGS,
    QueueClip,
    note_rating,
    queue_clips,
    rate_clip,
    undo_last_rating,
)
from spokenbench.core.store import Project
from spokenbench.core.store.meta import delete_meta, read_meta, write_meta

PendingWrite = Callable[[Project], Any]

# States
SHOWING, SAVING, REVIEWING, FINISHED = "showing", "saving", "reviewing", "finished"

# What the view does next (Outcome.action)
SHOW = "show"  # draw `current` and play it
SAVE = "save"  # run `write` on the writer, then call saved(result) or failed(error)
PLAY = "play"  # play the current clip again, at `speed`
SPEED = "speed"  # apply the new `speed`
ASK_NOTE = "ask_note"  # ask for a note's text, then call note(text)
HELP = "help"  # show the key map overlay
REDRAW = "redraw"  # something shown changed (a note, the transcripts toggle); same clip
SPECTROGRAM = "spectrogram"  # switch the clip's picture between waveform and spectrogram (the view holds which)
IGNORED = "ignored"  # nothing happened; `reason` says why
ERROR = "error"  # the write failed and nothing changed; `reason` is the message
SAVE_AHEAD = "save_ahead"  # run `write`, answer rating_saved/rating_failed(clip_id); meanwhile next_after_rating
DONE = "finished"  # every clip is rated (or skipped)

SPEED_MIN, SPEED_MAX, SPEED_STEP = 0.5, 2.0, 0.1

# One table: action → the keys that trigger it (Qt-style names). Shown on the buttons and in the help overlay.
DEFAULT_KEYMAP: dict[str, tuple[str, ...]] = {
    "rate_correct": ("1",),
    "rate_acceptable": ("2",),
    "rate_incorrect": ("3",),
    "replay": ("Space", "R"),
    "note": ("N",),
    "undo": ("Ctrl+Z",),
    "previous": ("Left",),
    "next": ("Right",),
    "help": ("?",),
    "slower": ("[",),
    "faster": ("]",),
    "toggle_transcripts": ("T",),
    "toggle_spectrogram": ("S",),
}
REQUIRED_ACTIONS = ("rate_correct", "rate_acceptable", "rate_incorrect")  # a rater must be able to rate
KEYMAP_META_PREFIX = "rating_keymap:"
_MODIFIERS = {"ctrl": "Ctrl", "control": "Ctrl", "shift": "Shift", "alt": "Alt", "meta": "Meta", "cmd": "Meta"}


@dataclass(frozen=True)
class Outcome:
    action: str
    write: PendingWrite | None = None
    reason: str = ""
    clip_id: int | None = None  # SAVE_AHEAD: the clip whose rating `write` stores


@dataclass(frozen=True)
class ClipView:
    """What the screen draws for one clip. Transcripts and WER are there but hidden unless the rater asks, so
    they do not anchor the judgement."""

    position: int
    total: int
    clip_id: int
    text: str  # what should be heard
    item: str
    language: str
    accent: str | None
    voice: str | None
    part: str
    audio: bytes
    audio_format: str
    rating: str | None  # this annotator's live rating of the clip (when reviewing)
    note: str | None
    transcripts: tuple[tuple[str, str], ...]
    wer: float | None
    transcripts_visible: bool
    error_metric: str = "WER"  # how `wer` is labelled: 'CER' for Chinese, Japanese … (error_rate_name)


@dataclass(frozen=True)
class SkippedClip:
    clip_id: int
    position: int
    reason: str


@dataclass(frozen=True)
class RatingProgress:
    done: int  # queue clips this annotator has a live rating for
    total: int
    skipped: int
    session_counts: dict[str, int]  # ratings given in this session and still live, by rating
    saving: int = 0  # ratings saved ahead and not in yet: counted in `done`, not yet in `session_counts`


# --------------------------------------------------------------------------------------------------
# Key map


def normalize_key(key: str) -> str:
    """'ctrl+z' and 'Ctrl+Z' are one key: modifiers capitalized, a single letter upper-cased."""
    if not isinstance(key, str) or not key.strip():
        raise SpokenBenchError(f"a key must be a non-empty name such as '1', 'Space' or 'Ctrl+Z', not {key!r}")
    key = key.strip()
    if key == "+":
        return key
    *modifiers, last = key.split("+")
    named = []
    for modifier in modifiers:
        if modifier.strip().lower() not in _MODIFIERS:
            raise SpokenBenchError(f"unknown modifier '{modifier}' in key '{key}' (use Ctrl, Shift, Alt or Meta)")
        named.append(_MODIFIERS[modifier.strip().lower()])
    last = last.strip()
    last = last.upper() if len(last) == 1 else last[:1].upper() + last[1:]
    return "+".join([*named, last])


def keymap_action(keymap: Mapping[str, tuple[str, ...]], key: str) -> str | None:
    """The action `key` triggers in `keymap` ('ctrl+z' and 'Ctrl+Z' alike); None for a key it does not bind or
    a name that is no key."""
    try:
        key = normalize_key(key)
    except SpokenBenchError:
        return None
    return next((action for action, keys in keymap.items() if key in keys), None)


def validate_keymap(overrides: Mapping[str, Any]) -> dict[str, tuple[str, ...]]:
    """The default map with `overrides` (action → list of keys) applied, or a SpokenBenchError naming the unknown
    action, the key bound twice or the rating left without a key."""
    if not isinstance(overrides, Mapping):
        raise SpokenBenchError("a key map is an object of action → list of keys")
    merged = dict(DEFAULT_KEYMAP)
    for action, keys in overrides.items():
        if action not in DEFAULT_KEYMAP:
            raise SpokenBenchError(f"unknown action '{action}' in the key map; actions: {', '.join(DEFAULT_KEYMAP)}")
        if isinstance(keys, str):
            keys = [keys]
        if not isinstance(keys, list | tuple):
            raise SpokenBenchError(f"the keys of '{action}' must be a list of key names")
        merged[action] = tuple(normalize_key(key) for key in keys)
    owner: dict[str, str] = {}
    for action, keys in merged.items():
        for key in keys:
            if key in owner:
                raise SpokenBenchError(f"key '{key}' is bound twice: to '{owner[key]}' and to '{action}'")
            owner[key] = action
    for action in REQUIRED_ACTIONS:
        if not merged[action]:
            raise SpokenBenchError(f"'{action}' needs a key")
    return merged


def keymap_for(conn: sqlite3.Connection, annotator: str) -> dict[str, tuple[str, ...]]:
    """This annotator's key map: the defaults with their stored overrides."""
    stored = read_meta(conn, KEYMAP_META_PREFIX + _annotator(annotator))
    if stored is None:
        return dict(DEFAULT_KEYMAP)
    try:
        overrides = json.loads(stored)
    except (ValueError, RecursionError) as error:
        raise SpokenBenchError(
            f"the stored key map of '{annotator}' is not valid JSON ({error}); save it again"
        ) from None
    return validate_keymap(_stored_keys_first(overrides))


def _stored_keys_first(overrides: Any) -> Any:
    """A map stored before an action joined the table may hold that action's default key (S was free before
    the spectrogram toggle had it): the annotator's choice keeps the key and the newer action starts without
    it, so an old map still opens; the Settings editor shows the action keyless, to be given a key there."""
    if not isinstance(overrides, Mapping):
        return overrides  # validate_keymap says what is wrong
    taken = set()
    for keys in overrides.values():
        for key in [keys] if isinstance(keys, str) else keys if isinstance(keys, list | tuple) else ():
            try:
                taken.add(normalize_key(key))
            except SpokenBenchError:
                pass  # validate_keymap names it
    unstored = {
        action: [key for key in keys if key not in taken]
        for action, keys in DEFAULT_KEYMAP.items()
        if action not in overrides
    }
    return {**unstored, **overrides}


def save_keymap(project: Project, annotator: str, overrides: Mapping[str, Any]) -> dict[str, tuple[str, ...]]:
    """Validate and store an annotator's overrides (only what differs is stored, so later default keys still
    reach them); returns the resulting map."""
    merged = validate_keymap(overrides)
    changed = {action: list(keys) for action, keys in merged.items() if keys != DEFAULT_KEYMAP[action]}
    with project.transaction() as conn:
        key = KEYMAP_META_PREFIX + _annotator(annotator)
        if changed:
            write_meta(conn, key, json.dumps(changed, ensure_ascii=False, sort_keys=True))
        else:
            delete_meta(conn, key)
    return merged


class ProjectUnreachable(SpokenBenchError):
    """A clip could not be read because the whole project cannot be reached (its drive pulled out, its share
    disconnected): no clip's fault, so none is skipped; the session stays where it is."""


def _annotator(annotator: str) -> str:
    annotator = (annotator or "").strip()
    if not annotator:
        raise SpokenBenchError("a rating session needs the annotator's name")
    return annotator


# --------------------------------------------------------------------------------------------------
# The session


class RatingSession:
    """One annotator rating one queue. Build it with `open` (reads only); drive it with `press` or the action
    methods; each returns an Outcome telling the view what to do."""

    def __init__(
        self,
        queue: str,
        annotator: str,
        clips: list[QueueClip],
        rated: dict[int, tuple[int, str, str | None]],
        transcripts: dict[int, list[tuple[str, str]]],
        audio_loader: Callable[[QueueClip], bytes],
        keymap: Mapping[str, tuple[str, ...]] | None = None,
        clock: Callable[[], float] = time.monotonic,
        project_path: Path | None = None,
    ):
        self.queue = queue
        self.project_path = project_path  # where a clip that cannot be read tells a damaged file from a pulled drive
        self.annotator = _annotator(annotator)
        self._clips = clips
        self._rated = dict(rated)  # clip id → (rating id or None while saving, rating, note): live ratings
        self._saving: dict[int, tuple[str, str | None]] = {}  # clip id → (rating, note) of a rating saved ahead
        self._held_notes: dict[int, str] = {}  # clip id → a note typed for it and not stored, held again on return
        self._transcripts = transcripts
        self._load_audio = audio_loader
        self.use_keymap(keymap or DEFAULT_KEYMAP)
        self.state = SHOWING
        self.speed = 1.0
        self.show_transcripts = False
        self.skipped: list[SkippedClip] = []
        self._skipped_ids: set[int] = set()
        self._index: int | None = None
        self._audio = b""
        self._held_note: str | None = None
        self._pending: tuple[str, Callable[[Any], Outcome]] | None = None
        self._session_ratings: dict[int, str] = {}  # rating id → rating, for this session's counts
        self._clock = clock
        self._shown_at: float | None = None  # when the current clip was shown: a rating stores the seconds since
        self._replaced: dict[int, tuple[int, str]] = {}  # a re-rating's id → the session rating it replaced
        self.first = self._advance()  # the outcome of opening: show the resume clip, or finished

    @classmethod
    def open(
        cls,
        project: Project,
        queue: str,
        annotator: str,
        audio_loader: Callable[[QueueClip], bytes] | None = None,
        **kwargs,
    ) -> RatingSession:
        """Read the queue, this annotator's live ratings, the transcripts and key map; audio is read from the
        project unless `audio_loader` says otherwise."""
        conn = project.conn
        annotator = _annotator(annotator)
        clips = queue_clips(conn, queue)
        queue_id = store.queue_id_by_name(conn, queue)
        loader = audio_loader or (lambda clip: project.audio.read_bytes(clip.sha256, clip.audio_format))
        return cls(
            queue,
            annotator,
            clips,
            store.live_ratings_by(conn, annotator),
            store.queue_transcripts(conn, queue_id),
            loader,
            keymap_for(conn, annotator),
            **kwargs,
            project_path=project.path,
        )

    # ---------------------------------------------------------------- what the view draws

    @property
    def current(self) -> ClipView | None:
        if self._index is None:
            return None
        clip = self._clips[self._index]
        rated = self._rated.get(clip.clip_id)
        return ClipView(
            position=self._index + 1,
            total=len(self._clips),
            clip_id=clip.clip_id,
            text=clip.text,
            item=clip.item,
            language=clip.language,
            accent=clip.accent,
            voice=clip.voice,
            part=clip.part,
            audio=self._audio,
            audio_format=clip.audio_format,
            rating=rated[1] if rated else None,
            note=rated[2] if rated else self._held_note,
            transcripts=tuple(self._transcripts.get(clip.clip_id, ())),
            wer=clip.error_rate,
            transcripts_visible=self.show_transcripts,
            error_metric=error_rate_name(clip.language, clip.metric),
        )

    @property
    def progress(self) -> RatingProgress:
        done = sum(1 for clip in self._clips if clip.clip_id in self._rated)
        counts = Counter(self._session_ratings.values())
        counted = {r: counts[r] for r in RATINGS}
        return RatingProgress(done, len(self._clips), len(self.skipped), counted, len(self._saving))

    @property
    def languages(self) -> set[str]:
        """The languages of the queue's clips (what the screen must be able to draw)."""
        return {clip.language for clip in self._clips}

    @property
    def has_transcripts(self) -> bool:
        """Whether any clip of the queue has a transcript to show (an annotation pack carries none)."""
        return any(self._transcripts.values())

    def use_keymap(self, keymap: Mapping[str, tuple[str, ...]]) -> None:
        """Take a key map (a validated one: `keymap_for`, `save_keymap`), also while the session is open."""
        self.keymap = dict(keymap)
        self._action_of_key = {key: action for action, keys in self.keymap.items() for key in keys}

    def keys_for(self, action: str) -> tuple[str, ...]:
        """The keys shown on an action's button and in the help overlay."""
        return self.keymap.get(action, ())

    # ---------------------------------------------------------------- input

    def press(self, key: str) -> Outcome:
        """Map a key name to its action; an unbound key is ignored."""
        try:
            action = self._action_of_key.get(normalize_key(key))
        except SpokenBenchError:
            action = None
        if action is None:
            return Outcome(IGNORED, reason=f"key '{key}' is not bound")
        return self.perform(action)

    def perform(self, action: str) -> Outcome:
        """One action of the key map, by name (a key or a button): also an action left without a key."""
        if action not in DEFAULT_KEYMAP:
            raise SpokenBenchError(f"unknown action '{action}'; actions: {', '.join(DEFAULT_KEYMAP)}")
        if action.startswith("rate_"):
            return self.rate(action.removeprefix("rate_"))
        if action == "note":
            return Outcome(ASK_NOTE) if self._index is not None else Outcome(IGNORED, reason="no clip to note")
        if action == "help":
            return Outcome(HELP)
        return getattr(self, {"next": "next_clip", "previous": "previous_clip"}.get(action, action))()

    def rate(self, rating: str) -> Outcome:
        """Rate the clip shown (re-rating it when reviewing); after the save, the first unrated clip follows."""
        if rating not in RATINGS:
            raise SpokenBenchError(f"rating must be one of {', '.join(RATINGS)}, not '{rating}'")
        if blocked := self._blocked():
            return blocked
        clip = self._clips[self._index]
        if clip.clip_id in self._saving:  # a double press: the next clip is on its way
            return Outcome(IGNORED, reason="saving")
        earlier = self._rated.get(clip.clip_id)
        if earlier is not None and self._saving:  # a re-rating waits, as undo does, for the saves in flight
            return Outcome(IGNORED, reason="saving")
        note = self._held_note if earlier is None else earlier[2]
        queue, annotator = self.queue, self.annotator
        seconds = None if self._shown_at is None else min(max(self._clock() - self._shown_at, 0.0), MAX_RATING_SECONDS)

        def write(project: Project) -> int:
            return rate_clip(project, clip.clip_id, annotator, rating, note, queue=queue, seconds=seconds)

        def apply(rating_id: int) -> Outcome:
            self._rated[clip.clip_id] = (rating_id, rating, note)
            if earlier is not None and earlier[0] in self._session_ratings:  # a re-rating replaces, not adds
                self._replaced[rating_id] = (earlier[0], self._session_ratings.pop(earlier[0]))
            self._session_ratings[rating_id] = rating
            self._held_note = None
            return self._advance()

        if self.rates_ahead:
            return self._save_ahead(clip.clip_id, rating, note, write)
        return self._submit(write, apply)

    def note(self, text: str, clip_id: int | None = None) -> Outcome:
        """A note on the clip shown: stored on its rating when it has one, else kept for the rating to come.
        `clip_id`: the clip it was typed for; when a failed rating brought another clip back meanwhile, the note
        is held for that clip, for when it is shown again."""
        text = (text or "").strip() or None
        shown = None if self._index is None else self._clips[self._index].clip_id
        if clip_id is not None and clip_id != shown and clip_id not in self._rated:
            self._keep_held_notes({clip_id: text})
            return Outcome(REDRAW, reason=f"the note is kept for clip {clip_id}, shown again once this one is rated")
        if blocked := self._blocked():
            return blocked
        clip = self._clips[self._index]
        rated = self._rated.get(clip.clip_id)
        if clip.clip_id in self._saving:
            return Outcome(IGNORED, reason="saving")
        if rated is None:
            self._held_note = text
            return Outcome(REDRAW, reason="the note is saved with the rating")
        rating_id = rated[0]

        def apply(_result: Any) -> Outcome:
            self._rated[clip.clip_id] = (rating_id, rated[1], text)
            return Outcome(REDRAW)

        return self._submit(lambda project: note_rating(project, rating_id, text), apply)

    def undo(self) -> Outcome:
        """Take back this annotator's last live rating in the queue (kept, marked undone); its clip is offered
        again."""
        if self._writes_in_flight:
            return Outcome(IGNORED, reason="saving")
        queue, annotator = self.queue, self.annotator

        def apply(undone) -> Outcome:
            if undone is None:
                return Outcome(IGNORED, reason="nothing to undo")
            said = self._undo_message(undone)
            self._session_ratings.pop(undone.rating_id, None)
            if undone.rating_id in self._replaced:  # the session rating it replaced counts again
                replaced_id, replaced_rating = self._replaced.pop(undone.rating_id)
                self._session_ratings[replaced_id] = replaced_rating
            if undone.restored is None:
                self._rated.pop(undone.clip_id, None)
            else:
                self._rated[undone.clip_id] = undone.restored
            index = next((i for i, c in enumerate(self._clips) if c.clip_id == undone.clip_id), None)
            if undone.restored is None and index is not None and self._enter(index, SHOWING):
                return Outcome(SHOW, reason=said)
            return dataclasses.replace(self._advance(), reason=said)

        return self._submit(lambda project: undo_last_rating(project, annotator, queue), apply)

    def _undo_message(self, undone) -> str:
        """What an undo took back, in the rater's terms: 'Undid rating 3 (incorrect) of clip 12 (item q7 question)'."""
        clip = next((c for c in self._clips if c.clip_id == undone.clip_id), None)
        where = f"clip {undone.clip_id}" + (f" ({clip.item} {clip.part})" if clip else "")
        live = self._rated.get(undone.clip_id)
        if live is None or live[0] != undone.rating_id:
            return f"Undid a rating of {where}"
        keys = self.keys_for(f"rate_{live[1]}")
        named = f"{keys[0]} ({live[1]})" if keys else live[1]
        restored = f"; {undone.restored[1]} counts again" if undone.restored else ""
        return f"Undid rating {named} of {where}{restored}"

    def previous_clip(self) -> Outcome:
        """Browse back to the closest rated clip before the one shown."""
        if self._writes_in_flight:
            return Outcome(IGNORED, reason="saving")
        before = len(self._clips) if self._index is None else self._index

        def back() -> Outcome:
            for index in reversed(self._rated_indices()):
                if index < before and self._enter(index, REVIEWING):
                    return Outcome(SHOW)
            return Outcome(IGNORED, reason="no rated clip before this one")

        return self._in_place(back)

    def next_clip(self) -> Outcome:
        """Browse forward through rated clips; past the last one, back to the first unrated clip."""
        if self._writes_in_flight:
            return Outcome(IGNORED, reason="saving")
        if self.state == SHOWING and self._is_rated(self._index):  # the next clip could not be read after a rating
            return self._in_place(self._advance)
        if self.state != REVIEWING:
            return Outcome(IGNORED, reason="this is the newest clip")

        def forward() -> Outcome:
            for index in self._rated_indices():
                if index > self._index and self._enter(index, REVIEWING):
                    return Outcome(SHOW)
            return self._advance()

        return self._in_place(forward)

    def replay(self) -> Outcome:
        if self.state == SAVING or self._index is None:
            return Outcome(IGNORED, reason="saving" if self.state == SAVING else "no clip to play")
        return Outcome(PLAY)

    def slower(self) -> Outcome:
        return self._set_speed(self.speed - SPEED_STEP)

    def faster(self) -> Outcome:
        return self._set_speed(self.speed + SPEED_STEP)

    def toggle_transcripts(self) -> Outcome:
        self.show_transcripts = not self.show_transcripts
        return Outcome(REDRAW)

    def toggle_spectrogram(self) -> Outcome:
        """A view toggle, allowed while a save is in flight: the view switches its picture."""
        return Outcome(SPECTROGRAM)

    # ---------------------------------------------------------------- the write's answer

    @property
    def saving(self) -> int:
        """Ratings saved ahead and not yet answered."""
        return len(self._saving)

    def is_saving(self, clip_id: int) -> bool:
        return clip_id in self._saving

    @property
    def rates_ahead(self) -> bool:
        """A rating now would be saved ahead (SAVE_AHEAD): the clip shown is new to this annotator."""
        return self.state == SHOWING and self._index is not None and self._clips[self._index].clip_id not in self._rated

    def next_after_rating(self) -> Outcome:
        """After SAVE_AHEAD: the first clip in queue order not rated (the rating in flight counts as rated)."""
        return self._in_place(self._advance)

    def rating_saved(self, clip_id: int, rating_id: int) -> None:
        """A rating saved ahead committed: it counts, and undo and notes can reach it."""
        rating, note = self._saving.pop(clip_id)
        self._rated[clip_id] = (rating_id, rating, note)
        self._session_ratings[rating_id] = rating

    def rating_failed(self, clip_id: int, error: BaseException) -> Outcome:
        """A rating saved ahead failed and stored nothing: its clip is unrated again and is shown again (the first
        unrated clip in queue order), with its note held, and `reason` says why."""
        _rating, note = self._saving.pop(clip_id)
        self._rated.pop(clip_id, None)
        shown = None if self._index is None else self._clips[self._index].clip_id
        if shown == clip_id:  # still shown: the next clip had not been asked for
            self._held_note = note
        else:
            self._keep_held_notes({clip_id: note, shown: self._held_note})  # a note typed for the clip shown too
        outcome = self._in_place(self._advance)  # unreadable: the clip shown stays; this one is offered after it
        if shown != clip_id and self._index is not None and self._clips[self._index].clip_id == shown:
            self._held_notes.pop(shown, None)  # still shown (an earlier failed rating's clip): its note stays held
        return dataclasses.replace(outcome, reason=f"Not saved: {error}")

    def saved(self, result: Any = None) -> Outcome:
        """The pending write committed; move on (or stay, for a write that does not change the clip)."""
        if self._pending is None:
            raise SpokenBenchError("saved() without a pending write")
        self.state, apply = self._pending
        self._pending = None
        return self._in_place(lambda: apply(result))

    def failed(self, error: BaseException) -> Outcome:
        """The pending write failed and changed nothing: back to where the rater was, with the reason."""
        if self._pending is None:
            raise SpokenBenchError("failed() without a pending write")
        self.state, _ = self._pending
        self._pending = None
        return Outcome(ERROR, reason=str(error))

    # ---------------------------------------------------------------- internals

    def _submit(self, write: PendingWrite, apply: Callable[[Any], Outcome]) -> Outcome:
        self._pending = (self.state, apply)
        self.state = SAVING
        return Outcome(SAVE, write=write)

    def _save_ahead(self, clip_id: int, rating: str, note: str | None, write: PendingWrite) -> Outcome:
        self._saving[clip_id] = (rating, note)
        self._rated[clip_id] = (None, rating, note)
        return Outcome(SAVE_AHEAD, write=write, clip_id=clip_id)

    @property
    def _writes_in_flight(self) -> bool:
        return self.state == SAVING or bool(self._saving)

    def _in_place(self, move: Callable[[], Outcome]) -> Outcome:
        """A move that reads a clip; where the project cannot be reached, nothing moves and `reason` says why."""
        try:
            return move()
        except ProjectUnreachable as error:
            return Outcome(IGNORED, reason=f"Not shown: {error}")

    def _is_rated(self, index: int | None) -> bool:
        return index is not None and self._clips[index].clip_id in self._rated

    def _keep_held_notes(self, notes: dict[int | None, str | None]) -> None:
        self._held_notes.update({clip: note for clip, note in notes.items() if clip is not None and note})

    def _blocked(self) -> Outcome | None:
        if self.state == SAVING:
            return Outcome(IGNORED, reason="saving")
        if self._index is None:
            return Outcome(IGNORED, reason="finished")
        return None

    def _set_speed(self, value: float) -> Outcome:
        value = round(value, 1)
        if value < SPEED_MIN or value > SPEED_MAX:
            return Outcome(IGNORED, reason=f"speed stays within {SPEED_MIN}×–{SPEED_MAX}×")
        self.speed = value
        return Outcome(SPEED)

    def _rated_indices(self) -> list[int]:
        return [i for i, c in enumerate(self._clips) if c.clip_id in self._rated and c.clip_id not in self._skipped_ids]

    def _enter(self, index: int, state: str) -> bool:
        """Make clip `index` current; a clip whose audio is missing or damaged is recorded as skipped instead."""
        clip = self._clips[index]
        try:
            audio = self._load_audio(clip)
        except (SpokenBenchError, OSError) as error:
            if self.project_path is not None and (why := why_unreachable(self.project_path)) is not None:
                raise ProjectUnreachable(
                    f"the project can no longer be reached ({why}): was its drive removed, or its network share "
                    "disconnected? Put it back, then try again; everything reported saved is kept"
                ) from error
            self.skipped.append(SkippedClip(clip.clip_id, index + 1, str(error)))
            self._skipped_ids.add(clip.clip_id)
            return False
        self._index, self._audio, self.state = index, audio, state
        self._shown_at = self._clock()
        if state == SHOWING:
            self._held_note = self._held_notes.pop(clip.clip_id, None)
        return True

    def _advance(self) -> Outcome:
        """Show the first clip in queue order this annotator has not rated (skipping unreadable ones)."""
        for index, clip in enumerate(self._clips):
            if clip.clip_id in self._rated or clip.clip_id in self._skipped_ids:
                continue
            if self._index == index and self.state == SHOWING:
                return Outcome(SHOW)
            if self._enter(index, SHOWING):
                return Outcome(SHOW)
        self._index, self._audio, self.state = None, b"", FINISHED
        return Outcome(DONE)


class SynchronousRatingSession(RatingSession):
    """A session that commits each write at once on its own project (the CLI, scripts, tests): an action that
    saves returns what follows the save."""

    def __init__(self, *args, writes_to: Project, **kwargs):
        self.project = writes_to
        super().__init__(*args, **kwargs)

    @classmethod
    def open(cls, project: Project, queue: str, annotator: str, audio_loader=None, **kwargs) -> RatingSession:
        return super().open(project, queue, annotator, audio_loader, writes_to=project, **kwargs)

    def _save_ahead(self, clip_id: int, rating: str, note: str | None, write: PendingWrite) -> Outcome:
        super()._save_ahead(clip_id, rating, note, write)
        try:
            rating_id = write(self.project)
        except Exception as error:
            outcome = self.rating_failed(clip_id, error)
            if not isinstance(error, SpokenBenchError):
                raise
            return outcome
        self.rating_saved(clip_id, rating_id)
        return self.next_after_rating()

    def _submit(self, write: PendingWrite, apply: Callable[[Any], Outcome]) -> Outcome:
        super()._submit(write, apply)
        try:
            result = write(self.project)
        except Exception as error:
            outcome = self.failed(error)
            if not isinstance(error, SpokenBenchError):
                raise
            return outcome
        return self.saved(result)
