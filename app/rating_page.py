"""The Rating page: rating queues (with this annotator's progress, queue creation, and what is missing when
nothing is transcribed) and the keyboard-first rating session over `core.qc.rating_session`.

Threads: the session is opened, and every step that may read a clip (a save's answer, ←/→) runs, on the read
pool (`QueryOp`), where the clip is also decoded and its waveform computed; ratings, notes and undos go
through the project's writer (`WriteOp`). A new clip's rating is saved ahead: the next clip is read and shown while
the writer commits it (a busy disk's fsync: 0.5 s at p90), "Saving…" until it is in, then "Saved"; the writer's
answers are applied between steps, and a rating that failed brings its clip back. While a step or a blocking write
(a re-rating, a note, an undo) is in flight, keys are ignored, and the session ignores a second rating of a clip
whose rating is in flight, so a double press never rates twice. Up to SAVED_AHEAD_LIMIT new clips' ratings are in
flight at once (a quick rater on a busy disk); undo and browsing wait for all of them. The UI thread only draws and
plays."""

from __future__ import annotations

import getpass
import time
from collections import OrderedDict, deque
from collections.abc import Callable
from dataclasses import replace

import shiboken6
from PySide6.QtCore import Qt, QTimer
from PySide6.QtWidgets import QInputDialog, QStackedWidget, QVBoxLayout, QWidget

from spokenbench.app.audio import NO_AUDIO_BANNER, NO_DEVICE_FLASH, chosen_output, not_answering_line, page_player
from spokenbench.app.operations import (
    JobOp,
    ProjectSession,
    QueryOp,
    WriteOp,
    explained_error,
    replace_dialog,
    show_error,
)
from spokenbench.core.asr.backends import asr_availability, screening_requirements
from spokenbench.core.asr.screening import ensure_screening, screening_needs_update
from spokenbench.core.asr.store import transcript_count
from spokenbench.core.asr.transcribe import transcribe_missing
from spokenbench.core.audio.playback import STALL_S
from spokenbench.core.foundation.errors import SpokenBenchError
from spokenbench.core.jobs.host import JobCall, job_call
from spokenbench.core.qc.queues import QueueClip, create_queue, list_queues
from spokenbench.core.qc.rating_session import (
    ASK_NOTE,
    DONE,
    ERROR,
    HELP,
    IGNORED,
    PLAY,
    REDRAW,
    SAVE,
    SAVE_AHEAD,
    SHOW,
    SPECTROGRAM,
    SPEED,
    Outcome,
    RatingSession,
    keymap_action,
)
from spokenbench.core.qc.sampling import SampleResult, load_clip_records, stratified_sample
from spokenbench.core.qc.store import clip_voices
from spokenbench.core.store import Project
from spokenbench.widgets.fonts import languages_without_font, missing_font_advice
from spokenbench.widgets.queue_dialog import QueueDialog
from spokenbench.widgets.rating_view import ACTION_LABELS, QueueListView, RatingView, keys_text
from spokenbench.widgets.screen_reader import spoken
from spokenbench.widgets.text_size import text_scale
from spokenbench.widgets.waveform import ClipAudio, prepare_clip, spectrogram_image

QUEUE_TABLES = frozenset({"ratings", "rating_queues", "rating_queue_clips", "transcripts", "clip_screening"})
STEP_ACTIONS = frozenset({"previous", "next"})  # actions that may read a clip: run off the UI thread
SPECTROGRAM_RESIZE_MS = 150  # a resize this long settled before the spectrogram is drawn again for the new size
VIEW_ACTIONS = frozenset({"toggle_spectrogram"})  # change only what is drawn: taken also while a save is in flight
# held while ratings are in flight and done once they are in (`_waits_for_saves`): undo and browsing act on committed
# ratings; a re-rating waits as undo does; a new clip's rating waits only while SAVED_AHEAD_LIMIT are in flight
AFTER_SAVES = frozenset({"undo", "previous", "next", "rate_correct", "rate_acceptable", "rate_incorrect"})
# new clips' ratings in flight at once: a quick rater's keys (one each 0.3 s) are taken while a busy disk's commits
# take 0.1-0.5 s each, and a lock that never comes (a stopped process holding it) leaves at most this many clips to
# rate again, each brought back as its rating fails (after the writer's lock wait, 15 s, each)
SAVED_AHEAD_LIMIT = 4
HELD_BLOCKS = AFTER_SAVES | {"note"}  # ignored while an action waits in `after_saves`
RENDER_CACHE = 64  # rendered clips kept (per clip and speed)
# the next clip, read before its rating's commit is in, waits this long for it: on an idle disk the commit comes
# first (a few ms) and a screen reader says "Correct saved" with the clip every time, not "saving" half the time
SAVED_GRACE_MS = 25
PLAYHEAD_MS = 30  # how often the playhead reads the player's position while a clip plays


def no_audio_banner(message: str, has_transcripts: bool, in_pack: bool) -> str:
    """The no-audio banner for the queue opened: it points to the transcripts (T) only when there are some."""
    if has_transcripts or NO_AUDIO_BANNER not in message:
        return message
    why = "an annotation pack carries no transcripts" if in_pack else "this queue's clips have no transcripts yet"
    return message.replace(
        NO_AUDIO_BANNER,
        f"No audio output device: clips cannot be played here. You can still rate by reading the text each clip "
        f"should say ({why}).",
    )


def ready_asr_systems() -> list[str]:
    """The ASR systems this machine can run now without more information (a key is set)."""
    return [e["asr"] for e in asr_availability() if e["ready"] and "MODEL" not in e["asr"]]


def read_queue_overview(project: Project, configured_asr: list[str] | None) -> dict:
    """Queues, and — when the project has no transcripts — what screening needs and which ASR could run."""
    conn = project.conn
    overview = {"queues": list_queues(conn), "needs": None, "asr": []}
    if transcript_count(conn) == 0:
        overview["needs"] = screening_requirements()
        overview["asr"] = list(configured_asr) if configured_asr is not None else ready_asr_systems()
    return overview


def queue_options(project: Project) -> tuple[dict[str, list[str]], bool] | None:
    """The values the queue dialog's filters offer, and whether any clip is screened; None when the screening
    is stale (transcripts or settings changed since it was computed) and must be brought up to date first."""
    if screening_needs_update(project.conn):
        return None
    records = load_clip_records(project.conn)
    voices = clip_voices(project.conn)
    values = {
        "language": {r.language for r in records},
        "accent": {r.accent for r in records},
        "voice": {voices.get(r.clip_id) for r in records},
        "part": {r.part for r in records},
    }
    options = {name: sorted(v for v in found if v) for name, found in values.items()}
    return options, any(r.wer_bin is not None for r in records)


def sample_preview(project: Project, spec: dict) -> SampleResult:
    """The sample a queue spec asks for (see widgets/queue_dialog.py), without storing it."""
    records = load_clip_records(project.conn)
    filters = spec.get("filters") or {}
    if filters:
        voices = clip_voices(project.conn)
        fields = {
            "language": lambda r: r.language,
            "accent": lambda r: r.accent,
            "voice": lambda r: voices.get(r.clip_id),
            "part": lambda r: r.part,
        }
        records = [r for r in records if all(fields[name](r) == value for name, value in filters.items())]
    if spec["mode"] == "unscreened":
        records = [replace(r, wer_bin=None, error_rate=None) for r in records]
    if not records:
        wanted = ", ".join(f"{k} {v}" for k, v in filters.items())
        raise SpokenBenchError(f"no synthesized clip matches {wanted or 'this choice'}")
    result = stratified_sample(records, spec["per_bin"], spec["seed"])
    return replace(result, unscreened_asked=spec["mode"] == "unscreened")


def store_queue(project: Project, spec: dict, result: SampleResult) -> tuple[int, bool]:
    """Store a previewed sample as a queue, with how it was drawn."""
    if not spec["name"]:
        raise SpokenBenchError("a rating queue needs a name")
    parameters = {
        "per_bin": spec["per_bin"],
        "seed": spec["seed"],
        "strategy": result.strategy,
        "mode": spec["mode"],
        "filters": spec.get("filters") or {},
        "strata": [s.as_dict() for s in result.strata],
        "note": result.note,
    }
    return create_queue(
        project, spec["name"], result, spec["seed"], spec["per_bin"], parameters, controls=spec.get("controls", 0)
    )


def transcribe_with(specs: list[str]) -> JobCall:
    """The Transcribe job: every clip not yet transcribed by each of `specs`, in a job process (decoding and
    scoring many clips is Python work, and a local model's would compete with the UI)."""
    return job_call(transcribe_missing, specs)


class RatingPage(QWidget):
    """Queues and the rating session for the window's annotator. Works standalone: `set_session` is all it
    needs (the window, when given, may offer `annotator` and `asr_systems`)."""

    def __init__(self, window=None):
        super().__init__()
        self.window_ = window
        self.session: ProjectSession | None = None
        self.rating: RatingSession | None = None
        self.busy = False  # a step or a blocking write is in flight: keys are ignored
        # what waits for the step in flight, applied in order after it: the writer's answers to ratings saved ahead
        # and a note typed meanwhile; (what failed, if a rating did; apply)
        self.answers: deque[tuple[str | None, Callable[[], None]]] = deque()
        # an action pressed while ratings were saved ahead, with the clip shown then: done once they are in (a fifth
        # rating: once one is)
        self.after_saves: tuple[str, int | None] | None = None
        # the next clip, read and waiting up to SAVED_GRACE_MS for its rating's commit before it is drawn
        self.held_step: tuple[RatingSession, Outcome] | None = None
        self.ignored_keys = 0
        self.saves = 0  # writes the writer acknowledged (ratings, notes, undos) in this page's life
        self.queues: list[dict] = []
        self.note_dialog: QInputDialog | None = None  # the last of each kind, deleted before the next (replace_dialog)
        self.queue_dialog: QueueDialog | None = None
        self.asr_for_transcription: list[str] = []
        self.clip_audio: ClipAudio | None = None
        self._renders: OrderedDict[tuple[int, float], ClipAudio] = OrderedDict()
        self.shown_at: float | None = None  # perf_counter when the last clip was drawn
        self.play_requested_at: float | None = None
        self.player, self.audio_message = page_player(window)
        self.audio_ok = self.player is not None
        self.play_request = 0  # the player's number for this page's last play
        self.playback_problem_shown = ""  # the status line last given for a failed play (cleared once sound is back)
        self.playback_problem_said = False  # a screen reader was told of the sound's failure (again once it is back)
        self._said_unanswered = 0  # the last play said not taken up by the player (a sound server not answering)
        self.said_next = ""  # what a screen reader says before the next clip shown: the rating saved, the queue opened
        self.said_saving: int | None = None  # the clip whose rating `said_next` says is saving
        self.playhead_timer = QTimer(self)
        self.playhead_timer.setInterval(PLAYHEAD_MS)
        self.playhead_timer.timeout.connect(self._follow_playback)
        # the spectrogram is drawn for the waveform's size: drawn again once a resize has settled (a window dragged,
        # a label that wraps onto another line), the stretched one shown meanwhile
        self.spectrogram_resize_timer = QTimer(self)
        self.spectrogram_resize_timer.setSingleShot(True)
        self.spectrogram_resize_timer.setInterval(SPECTROGRAM_RESIZE_MS)
        self.spectrogram_resize_timer.timeout.connect(self._fit_spectrogram)

        self.queue_list = QueueListView()
        self.view = RatingView()
        self.view.set_banner(None if self.audio_ok else self.audio_message)
        self.stack = QStackedWidget()
        self.stack.addWidget(self.queue_list)
        self.stack.addWidget(self.view)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.stack)
        self.queue_list.start_requested.connect(self.open_queue)
        self.queue_list.create_requested.connect(self.create_queue)
        self.queue_list.transcribe_requested.connect(self.start_transcription)
        self.view.key_pressed.connect(self.press_key)
        self.view.action_clicked.connect(self.do_action)
        self.view.back_requested.connect(self.show_queues)
        self.view.waveform.resized.connect(self.spectrogram_resize_timer.start)

    # -- who and where -------------------------------------------------------------------------------------

    @property
    def annotator(self) -> str:
        name = getattr(self.window_, "annotator", None)
        return name or getpass.getuser() or "annotator"

    def set_session(self, session: ProjectSession | None) -> None:
        if self.session is not None and shiboken6.isValid(self.session):  # the window may have deleted it already
            self.session.changes.changed.disconnect(self._project_changed)
        self.session = session
        self.rating = None
        self.busy = False
        self._drop_answers()
        self.after_saves = self.held_step = None
        self._renders.clear()
        self.show_queues()
        if session is not None:
            session.changes.changed.connect(self._project_changed)

    def take_focus(self) -> None:
        """The window shows this page (Ctrl+3, the sidebar, the tour closing): the keys go to the open session,
        else to the queue list."""
        shown = self.view if self.stack.currentWidget() is self.view else self.queue_list.table
        shown.setFocus(Qt.FocusReason.OtherFocusReason)

    def _project_changed(self, tables: set[str]) -> None:
        if tables & QUEUE_TABLES and self.stack.currentWidget() is self.queue_list:
            self.refresh_queues()

    # -- queues ------------------------------------------------------------------------------------------

    def show_queues(self) -> None:
        self._stop_playback()
        self.stack.setCurrentWidget(self.queue_list)
        self.queue_list.table.setFocus()  # ↑/↓ choose a queue, Enter starts it
        self.refresh_queues()

    def showEvent(self, event) -> None:
        super().showEvent(event)
        if self.stack.currentWidget() is self.queue_list:
            self.queue_list.table.setFocus()

    def refresh_queues(self) -> QueryOp | None:
        if self.session is None:
            self.queue_list.set_queues([], self.annotator)
            return None
        configured = getattr(self.window_, "asr_systems", None)
        return (
            QueryOp(
                self.session,
                lambda project, progress: read_queue_overview(project, configured),
                label="Reading rating queues",
                parent=self,
                supersede="rating-queues",
            )
            .success(self._show_queue_overview)
            .run()
        )

    def _show_queue_overview(self, overview: dict) -> None:
        self.queues = overview["queues"]
        self.queue_list.set_queues(self.queues, self.annotator)
        self.asr_for_transcription = overview["asr"]
        if overview["asr"]:
            label, enabled = f"Transcribe with {', '.join(overview['asr'])}", True
        else:
            label, enabled = (
                "Transcribe: configure an ASR system first (set OPENAI_API_KEY or GEMINI_API_KEY, or add a key in "
                "Settings)",
                False,
            )
        self.queue_list.set_screening_needs(overview["needs"], label, enabled)

    def create_queue(self) -> QueueDialog | None:
        """The Create queue dialog: its options are read, and each preview computed, on the read pool; the queue
        stored is exactly the sample previewed."""
        if self.session is None:
            return None
        replace_dialog(self.queue_dialog)
        dialog = QueueDialog(self)
        self.queue_dialog = dialog
        previews: dict[str, tuple[dict, SampleResult]] = {}

        def preview(spec: dict) -> None:
            QueryOp(
                self.session,
                lambda project, progress: sample_preview(project, spec),
                label="Sampling a rating queue",
                parent=dialog,
                supersede="queue-preview",
            ).success(lambda result: (previews.update(last=(spec, result)), dialog.set_preview(spec, result))).failure(
                lambda error: dialog.show_message(str(error))
            ).run()

        def create(spec: dict) -> None:
            shown, result = previews["last"]
            operation = (
                WriteOp(
                    self.session,
                    lambda project: store_queue(project, {**shown, "name": spec["name"]}, result),
                    changes={"rating_queues", "rating_queue_clips", "clips", "control_clips"},
                    label=f"Creating rating queue {spec['name']}",
                    parent=self,
                )
                .success(lambda _created: (dialog.accept(), self.refresh_queues()))
                .failure(lambda error: dialog.show_message(str(error)))
            )
            dialog.operations.append(operation.run())  # its callbacks reach the dialog (replace_dialog)

        dialog.preview_requested.connect(preview)
        dialog.create_requested.connect(create)
        self._read_queue_options(dialog)
        dialog.open()
        return dialog

    def _read_queue_options(self, dialog: QueueDialog, screened_now: bool = False) -> None:
        """The dialog's options from up-to-date screening: a stale screening (new transcripts) is recomputed
        first, as a job, so the strata previewed are the ones `queue create` would draw from."""

        def shown(found) -> None:
            if found is not None:
                dialog.set_options(*found)
            elif screened_now:  # still stale right after screening: say so rather than loop
                dialog.show_message("The screening could not be brought up to date; see the jobs panel.")
            else:
                self._update_screening(dialog)

        QueryOp(self.session, lambda project, progress: queue_options(project), label="Reading clips", parent=dialog)\
            .success(shown).run()  # fmt: skip

    def _update_screening(self, dialog: QueueDialog) -> JobOp:
        dialog.show_message("Updating the screening with the latest transcripts…")
        return (
            JobOp(
                self.session,
                job_call(ensure_screening),  # WER over every transcript: CPU-bound, so in a job process
                kind="screen",
                changes={"clip_screening"},
                label="Updating the WER screening",
                parent=dialog,
                error_title="Cannot update the screening",
            )
            .success(lambda _screened: (dialog.show_message(""), self._read_queue_options(dialog, screened_now=True)))
            .run()
        )

    def start_transcription(self) -> JobOp | None:
        if self.session is None or not self.asr_for_transcription:
            return None
        specs = list(self.asr_for_transcription)
        return JobOp(
            self.session,
            transcribe_with(specs),
            kind="transcribe",
            changes={"transcripts"},
            label=f"Transcribing with {', '.join(specs)}",
            parent=self,
            error_title="Cannot transcribe",
        ).run()

    # -- the session -------------------------------------------------------------------------------------

    def open_queue(self, name: str) -> QueryOp | None:
        """Open the queue for this annotator on the read pool (it reads the queue and the first clip). A rating of
        the last session still in flight is waited for (a write after it on the writer), so the queue reads it."""
        if self.session is None:
            return None
        self.busy = True
        if self.rating is not None and self.rating.saving:  # a step of the session left is dropped (supersede)
            self.held_step = None
            WriteOp(self.session, lambda project: None, changes=(), waits_only=True,
                    label="Waiting for the last rating", parent=self, supersede="rating-step")\
                .success(lambda _none: self._open_queue_now(name)).failure(self._step_failed).run()  # fmt: skip
            return None
        return self._open_queue_now(name)

    def _open_queue_now(self, name: str) -> QueryOp:
        annotator = self.annotator

        def read(project: Project, progress) -> tuple[RatingSession, Outcome]:
            session = RatingSession.open(project, name, annotator, audio_loader=self._loader(project))
            return session, session.first

        return (
            QueryOp(self.session, read, label=f"Opening rating queue {name}", parent=self, supersede="rating-step")
            .success(lambda opened: self._opened(*opened))
            .failure(self._step_failed, dialog=True)
            .run()
        )

    def _loader(self, project: Project) -> Callable[[QueueClip], bytes]:
        """Reads a clip and decodes it at once (on the worker that called it): a damaged clip is skipped by the
        session, and the picture is ready when the clip is shown."""
        store = project.audio

        def load(clip: QueueClip) -> bytes:
            data = store.read_bytes(clip.sha256, clip.audio_format)
            self._remember(clip.clip_id, prepare_clip(data, f"clip {clip.clip_id} ({clip.item} {clip.part})"))
            return data

        return load

    def _remember(self, clip_id: int, rendered: ClipAudio) -> None:
        self._renders[(clip_id, rendered.speed)] = rendered
        self._renders.move_to_end((clip_id, rendered.speed))
        while len(self._renders) > RENDER_CACHE:
            self._renders.popitem(last=False)

    def _opened(self, session: RatingSession, first: Outcome) -> None:
        self.busy = False
        self.rating = session
        self._drop_answers()
        self.after_saves = self.held_step = None
        self.view.set_keymap(session.keymap)
        banners, no_audio = [], ""
        if missing := languages_without_font(session.languages):  # first: reading the text is the fallback below
            banners.append(missing_font_advice(missing))
        if not self.audio_ok:
            packs = getattr(self.window_, "packs", None)
            in_pack = getattr(packs, "pack", None) is not None
            no_audio = no_audio_banner(self.audio_message, session.has_transcripts, in_pack)
            banners.append(no_audio)
        self.view.set_banner("\n".join(banners) or None)
        progress = session.progress  # said with the first clip; a screen reader has no use for the font advice
        self.said_next = spoken(no_audio, f"Queue {session.queue}, {progress.done} of {progress.total} rated")
        self.stack.setCurrentWidget(self.view)
        self.handle(first)  # drawn and said before the focus comes, so a screen reader reads it on the focus
        self.view.setFocus()

    def use_keymap(self, keymap: dict[str, tuple[str, ...]]) -> None:
        """Keys remapped in Settings take effect in the open session at once (new sessions read them anyway)."""
        if self.rating is not None:
            self.rating.use_keymap(keymap)
            self.view.set_keymap(self.rating.keymap)

    def press_key(self, name: str) -> None:
        if self.rating is None:
            return
        action = keymap_action(self.rating.keymap, name)
        if action is None:
            return
        self.do_action(action)

    def do_action(self, action: str) -> None:
        """One action of the key map (or a button). Ignored while a step or a blocking write is in flight; held in
        `after_saves` while a rating is saved ahead when it needs that rating in (AFTER_SAVES)."""
        if self.rating is None:
            return
        session = self.rating
        current = session.current
        shown = current.clip_id if current is not None else None
        if (
            (self.busy and action not in VIEW_ACTIONS)
            or (self.after_saves and action in HELD_BLOCKS)  # the held one goes first; a note would find another clip
            or (action.startswith("rate_") and shown is not None and session.is_saving(shown))  # a double press
        ):
            self.ignored_keys += 1
            return
        if action in AFTER_SAVES and self._waits_for_saves(action):  # an "oops" undo, a quick rating, is not lost
            self.after_saves = (action, shown)
            self.view.status_label.setText(f"{self._saving_text()} then {ACTION_LABELS[action].lower()}")
            return
        if action in STEP_ACTIONS:
            self._step(session.next_clip if action == "next" else session.previous_clip)
            return
        outcome = session.perform(action)
        if outcome.action == SAVE and action.startswith("rate_"):
            self.said_next = f"{ACTION_LABELS[action]} saved"
        elif outcome.action == SAVE_AHEAD:  # said with the next clip: "saved" only if it is in by then
            self.said_next, self.said_saving = f"{ACTION_LABELS[action]} saving", shown
        self.handle(outcome)

    def _waits_for_saves(self, action: str) -> bool:
        """Whether `action` must wait for ratings in flight: undo, browsing and re-ratings for all of them, a new
        clip's rating only for a place among the SAVED_AHEAD_LIMIT."""
        session = self.rating
        if not session.saving:
            return False
        if action.startswith("rate_") and session.rates_ahead:
            return session.saving >= SAVED_AHEAD_LIMIT
        return True

    def _saving_text(self) -> str:
        """The line while ratings are in flight: how many, when more than one."""
        count = self.rating.saving if self.rating is not None else 0
        return "Saving…" if count <= 1 else f"Saving… ({count} ratings)"

    def _show_saving(self) -> None:
        """The line follows the count of ratings in flight (not over an action held for them)."""
        saving = self.rating is not None and self.rating.saving
        if saving and self.after_saves is None and self.view.status_label.text().startswith("Saving…"):
            self.view.status_label.setText(self._saving_text())

    @property
    def idle(self) -> bool:
        """Nothing in flight: no step, no write, no answer waiting (tests and scripts wait for this)."""
        saving = self.rating is not None and self.rating.saving
        return not self.busy and not self.answers and not saving and self.after_saves is None

    def handle(self, outcome: Outcome) -> None:
        """Do what the session asks."""
        session = self.rating
        if session is None:
            return
        action = outcome.action
        if action == SAVE:
            self._save(session, outcome)
        elif action == SAVE_AHEAD:
            self._save_ahead(session, outcome)
        elif action in (SHOW, DONE):
            self._show_current()
            if outcome.reason:  # what an undo took back, instead of the save's plain "Saved"
                self.view.status_label.setText(outcome.reason)
            self.view.speak(outcome.reason or self.said_next, with_context=True)
            self.said_next = ""
        elif action == PLAY:
            self._play_current(asked=True)
        elif action == SPEED:
            self._render_speed()
            self.view.speak(f"Speed {session.speed:.1f} times")
        elif action == ASK_NOTE:
            self._ask_note()
        elif action == HELP:
            self.view.toggle_help()
        elif action == SPECTROGRAM:
            self.toggle_spectrogram()
            self.view.speak("Spectrogram shown" if self.view.waveform.show_spectrogram else "Waveform shown")
        elif action == REDRAW:
            self.view.show_state(session.current, session.speed)
            self.view.show_progress(session.progress)
            noted = outcome.reason or self.said_next  # a note's outcome, said as its dialog closes: with the clip
            self.view.speak(noted or self.view.transcripts_said(), with_context=bool(noted))
            self.said_next = ""
        elif action == ERROR:
            self.said_next = ""
            self.view.show_status(f"Not saved: {outcome.reason}")
        elif action == IGNORED:
            self.view.show_status(outcome.reason)

    def _save(self, session: RatingSession, outcome: Outcome) -> None:
        self.busy = True
        self.view.status_label.setText("Saving…")
        (
            WriteOp(self.session, outcome.write, changes={"ratings"}, label="Saving rating", parent=self)
            .success(lambda result: self._saved(session, result))
            .failure(lambda error: self._save_failed(session, error), dialog=False)
            .run()
        )

    def _save_ahead(self, session: RatingSession, outcome: Outcome) -> None:
        """A new clip's rating: the writer commits it while the next clip is read and shown."""
        clip_id, label = outcome.clip_id, self.said_next.removesuffix(" saving")
        self.view.status_label.setText(self._saving_text())

        def committed(rating_id: int) -> None:
            self.saves += 1
            if self.said_saving == clip_id and self.said_next == f"{label} saving":  # the next clip is not drawn yet
                self.said_next = f"{label} saved"
            self._answer(session, lambda: session.rating_saved(clip_id, rating_id))
            if clip_id == self.said_saving:  # the commit the next clip waits for (not an earlier one's)
                self._draw_held_step()

        def not_saved(error: BaseException) -> None:
            explained = explained_error(error, self.session.path if self.session else None) or str(error)
            what = f"Your rating of clip {clip_id} in queue {session.queue} was not saved: {explained}"
            self._answer(session, lambda: self._rating_failed(session, clip_id, explained), failed=what)
            self._draw_held_step()

        (
            WriteOp(self.session, outcome.write, changes={"ratings"}, label="Saving rating", parent=self)
            .success(committed)
            .failure(not_saved, dialog=False)
            .run()
        )
        self._step(session.next_after_rating, after_save_ahead=True)

    def _answer(self, session: RatingSession, apply: Callable[[], None], failed: str | None = None) -> None:
        """Another queue opens only once the writer is done with this one's ratings (`open_queue`), and a closed
        project's failed write says so in a dialog of its own (`WriteOp` abandoned): an answer for a session no
        longer open has nothing left to do."""
        if session is self.rating:
            self.answers.append((failed, apply))
            self._apply_answers()

    def _drop_answers(self) -> None:
        """The session is left with answers not applied: a failure among them is still told, in a dialog (its clip
        is offered again when the queue is next opened)."""
        lost = [failed for failed, _apply in self.answers if failed]
        self.answers.clear()
        if lost:
            show_error(self, SpokenBenchError("\n\n".join(lost) + ".\n\nOpen the queue again to rate it."), "Not saved")

    def _apply_answers(self) -> None:
        """The writer's answers change the session, which a step uses on the read pool: applied between steps,
        in order. "Saved" once every rating saved ahead is in."""
        applied = bool(self.answers)
        while self.answers and not self.busy:
            _failed, apply = self.answers.popleft()
            apply()
        session = self.rating
        if self.busy or session is None:
            return
        if not session.saving and self.view.status_label.text().startswith("Saving…"):
            self.view.status_label.setText("Saved")
        self._show_saving()
        if applied:
            self.view.show_progress(session.progress)  # the session's tallies count what is in
        if self.after_saves is not None and not self._waits_for_saves(self.after_saves[0]):
            (action, clip_id), self.after_saves = self.after_saves, None
            current = session.current
            if (current.clip_id if current else None) == clip_id:  # else a failed rating's clip came back
                self.do_action(action)

    def _rating_failed(self, session: RatingSession, clip_id: int, reason: str) -> None:
        """Back to the clip whose rating was not stored (its audio is read again: a step). A key held for the ratings
        in flight is not done (the clip it was pressed on is no longer shown), and the line says so."""
        self.said_next = ""
        held, self.after_saves = self.after_saves, None
        if held is not None:
            reason = f"{reason}; {ACTION_LABELS[held[0]]}, pressed meanwhile, was not done"
        current = session.current

        def back() -> Outcome:
            return session.rating_failed(clip_id, SpokenBenchError(reason))

        if current is not None and current.clip_id == clip_id:  # still shown (the next one could not be read)
            self.handle(back())
        else:
            self._step(back)

    def _saved(self, session: RatingSession, result) -> None:
        self.saves += 1
        self._step(lambda: session.saved(result), from_save=True)

    def _save_failed(self, session: RatingSession, error: BaseException) -> None:
        self.busy = False
        if session is self.rating:
            # the machine's problem (a write lock another process keeps, a full disk) in words the rater can act on
            explained = explained_error(error, self.session.path if self.session else None)
            self.handle(session.failed(SpokenBenchError(explained) if explained else error))
        self._apply_answers()

    def _step(self, step: Callable[[], Outcome], from_save: bool = False, after_save_ahead: bool = False) -> None:
        """Run a session step that may read the next clip on the read pool; draw its outcome when it returns."""
        session = self.rating
        self.busy = True

        def run(project: Project, progress) -> Outcome:
            session._load_audio = self._loader(project)  # this worker's own project and audio store
            return step()

        (
            QueryOp(self.session, run, label="Next clip", parent=self, supersede="rating-step")
            .success(lambda outcome: self._stepped(session, outcome, after_save_ahead))
            .failure(self._step_failed, dialog=not after_save_ahead)  # the save's own failure, if any, says why
            .run()
        )
        if from_save:
            self.view.status_label.setText("Saved")

    def _stepped(self, session: RatingSession, outcome: Outcome, after_save_ahead: bool = False) -> None:
        if after_save_ahead and session is self.rating and session.saving and not self.answers:
            self.held_step = (session, outcome)  # keys stay ignored: the clip is not drawn yet
            QTimer.singleShot(SAVED_GRACE_MS, self, self._draw_held_step)
            return
        self.busy = False
        if session is self.rating and not any(failed for failed, _apply in self.answers):  # else it comes back
            self.handle(outcome)
        self._apply_answers()

    def _draw_held_step(self) -> None:
        if self.held_step is not None:
            session, outcome = self.held_step
            self.held_step = None
            self._stepped(session, outcome)

    def _step_failed(self, error: BaseException) -> None:
        self.busy = False
        self.said_next = ""
        self.view.show_status(f"Failed: {error}")
        self._apply_answers()

    # -- drawing and playing ------------------------------------------------------------------------------

    def _show_current(self) -> None:
        session = self.rating
        clip = session.current
        self.view.show_progress(session.progress)  # first: a finished queue's line says it
        self.view.show_clip(clip, session.queue, session.speed)
        self.view.show_skipped(session.skipped)
        if clip is None:
            self.clip_audio = None
            self._stop_playback()
        else:
            self.clip_audio = self._renders.get((clip.clip_id, session.speed)) or self._renders.get((clip.clip_id, 1.0))
            self.view.waveform.set_clip(self.clip_audio, "" if self.clip_audio else "waveform unavailable")
            if self.view.waveform.show_spectrogram:
                self._compute_spectrogram()
            if self.clip_audio is not None and self.clip_audio.speed != session.speed:
                self._render_speed()
            else:
                self._play_current()
        self.shown_at = time.perf_counter()

    def _play_current(self, asked: bool = False) -> None:
        """Post the clip to the player (it never blocks); without a device, a key that asked for sound says so."""
        if self.clip_audio is None:
            return
        self.play_requested_at = time.perf_counter()
        if self.player is None:
            if asked:
                self.view.show_status(f"{NO_DEVICE_FLASH} (rating still works)")
            return
        clip = self.rating.current if self.rating else None
        what = f"clip {clip.clip_id}" if clip else "clip"
        self.play_request = self.player.play(self.clip_audio.playback, what, chosen_output(self.window_))
        self.playhead_timer.start()

    def _stop_playback(self) -> None:
        self.playhead_timer.stop()
        if self.player is not None:
            self.player.stop()

    def _follow_playback(self) -> None:
        """The playhead from the player's published state (polled: the playback thread never calls into Qt)."""
        state = self.player.state if self.player is not None else None
        if state is None or state.request > self.play_request:  # another page's clip replaced ours
            self.playhead_timer.stop()
            return
        stuck = self.player.unanswered_s() > STALL_S  # held by a sound server that does not answer
        if stuck and (state.request < self.play_request or state.playing):
            if self._said_unanswered != self.play_request:  # said once a play
                self._said_unanswered = self.play_request
                clip = self.rating.current if self.rating else None
                line = not_answering_line(f"clip {clip.clip_id}" if clip else "")
                self.playback_problem_shown = f"{line}. Rating still works; the clip plays once the server answers."
                self._show_playback_problem(self.playback_problem_shown)
                note_playback = getattr(self.window_, "note_playback", None)
                if note_playback is not None:  # the status bar's audio label says it too
                    note_playback(replace(state, error=line, output_failed=True, playing=False))
            return
        if state.request < self.play_request:  # ours has not started yet
            return
        if state.error:
            self._show_playback_problem(self._playback_problem_text(state))
        elif state.duration_s > 0:
            self.view.waveform.set_playhead(state.position_s / state.duration_s)
        if state.playing:
            self.playback_problem_said = False
        if state.playing and self.view.status_label.text() == self.playback_problem_shown:
            self.view.status_label.clear()  # the sound is back: the earlier failure no longer holds
        note_playback = getattr(self.window_, "note_playback", None)
        if note_playback is not None and (state.error or state.playing):
            note_playback(state)
        if not state.playing:
            self.playhead_timer.stop()

    def _show_playback_problem(self, text: str) -> None:
        """Shown for each clip the failure stops, said once until the sound is back: said with every clip, it cut
        off each clip's line."""
        self.view.status_label.setText(text)
        if not self.playback_problem_said:
            self.playback_problem_said = True
            self.view.speak(text)

    def _playback_problem_text(self, state) -> str:
        """The player's error, with what the annotator can do when the sound output (not the clip) failed."""
        text = state.error
        if state.output_failed:
            keys = keys_text(self.view.keymap.get("replay", ()))
            again = f"{keys} plays the clip again" if keys else "Replay plays the clip again"
            text = f"{text}. Rating still works; {again} once the headphones or sound server are back."
        self.playback_problem_shown = text
        return text

    def hideEvent(self, event) -> None:
        """Leaving the page (another page, the window closing) silences its clip."""
        self._stop_playback()
        super().hideEvent(event)

    def _render_speed(self) -> None:
        """Render the clip at the session's speed on the read pool (cached per clip and speed), then play it."""
        session, clip = self.rating, self.rating.current if self.rating else None
        if clip is None:
            return
        speed = session.speed
        self.view.show_state(clip, speed)
        cached = self._renders.get((clip.clip_id, speed))
        if cached is not None:
            self._speed_ready(clip.clip_id, cached)
            return
        audio = clip.audio

        def render(project: Project, progress) -> ClipAudio:
            return prepare_clip(audio, f"clip {clip.clip_id}", speed)

        QueryOp(self.session, render, label="Rendering speed", parent=self, supersede="rating-speed").success(
            lambda rendered: self._speed_ready(clip.clip_id, rendered)
        ).run()

    def _speed_ready(self, clip_id: int, rendered: ClipAudio) -> None:
        self._remember(clip_id, rendered)
        current = self.rating.current if self.rating else None
        if current is None or current.clip_id != clip_id or rendered.speed != self.rating.speed:
            return
        original = self._renders.get((clip_id, 1.0))
        self.clip_audio = ClipAudio(
            original.peaks if original else rendered.peaks,
            rendered.duration_s,
            rendered.playback,
            rendered.speed,
            self.view.waveform._spectrogram,
        )
        self._play_current()

    def toggle_spectrogram(self) -> None:
        """Switch the clip's picture between the waveform and the spectrogram (computed on first need)."""
        waveform = self.view.waveform
        waveform.show_spectrogram = not waveform.show_spectrogram
        waveform.update()
        if waveform.show_spectrogram and not waveform.has_spectrogram:
            self._compute_spectrogram()

    def _fit_spectrogram(self) -> None:
        """Draw the shown spectrogram again for the waveform's size, if it was drawn for another."""
        waveform = self.view.waveform
        if waveform.show_spectrogram and waveform.has_spectrogram and not waveform.spectrogram_fits:
            self._compute_spectrogram()

    def _compute_spectrogram(self) -> None:
        clip = self.rating.current if self.rating else None
        if clip is None:
            return
        audio = clip.audio
        waveform = self.view.waveform
        size, ratio = (waveform.width(), waveform.height()), waveform.devicePixelRatioF()  # as it is shown
        scale = text_scale()

        def compute(project: Project, progress):
            from spokenbench.core.audio.io import decode_audio

            decoded = decode_audio(audio, f"clip {clip.clip_id}")
            return spectrogram_image(decoded.samples, decoded.rate, size, ratio, scale)

        def show(image) -> None:
            current = self.rating.current if self.rating else None
            if current is not None and current.clip_id == clip.clip_id:
                self.view.waveform.set_spectrogram(image)
                if not self.view.waveform.spectrogram_fits:  # resized while it was computed
                    self.spectrogram_resize_timer.start()

        QueryOp(self.session, compute, label="Spectrogram", parent=self, supersede="rating-spectrogram").success(
            show
        ).run()

    def _ask_note(self) -> None:
        replace_dialog(self.note_dialog)
        dialog = QInputDialog(self)
        dialog.setWindowTitle("Note")
        dialog.setLabelText("A note on this clip (saved with its rating):")
        current = self.rating.current
        dialog.setTextValue(current.note or "" if current else "")
        session, clip_id = self.rating, current.clip_id if current else None
        dialog.textValueSelected.connect(lambda text: self._noted(session, clip_id, text))
        self.note_dialog = dialog
        dialog.open()

    def _noted(self, session: RatingSession, clip_id: int | None, text: str) -> None:
        if session is self.rating and self.busy:  # a failed rating's clip on its way back: the note waits for it
            self._answer(session, lambda: self._noted(session, clip_id, text))
        elif session is self.rating:
            outcome = session.note(text, clip_id)
            if outcome.action == SAVE:
                self.said_next = "Note saved"
            self.handle(outcome)
