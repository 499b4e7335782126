"""The Speakers page: real speakers for voice cloning and accent samples (BiasInEar Section 5.1). The speaker list
(add a speaker, record their consent, withdraw it); for the chosen speaker, the script (the project's questions in
their language, or a reading list) read prompt by prompt with the keyboard — R records and stops, Backspace
retakes (while recording: throws the take away and starts again), Space plays the take, ←/→ move between
prompts, L checks the level (before a take: 3 s of speech heard and judged, nothing kept; during one: its last
3 s, said) — each take's quality checks shown as soon as it stops; and "Create cloned voice" from the best
passing take, which then speaks a test sentence.

Threads: the recorder's stream delivers blocks on the audio thread, which puts each block's level on a bounded
deque; a 25 ms QTimer drains it for the meter (about 40 updates a second). Starting and stopping the stream,
checking and encoding a take run in BackgroundOps; reads are QueryOps; consent, takes and withdrawals go through
the writer (WriteOp); cloning is a JobOp. The UI thread never waits on audio or disk. Without PortAudio or an
input device the page says what to install; the speaker list and consent still work."""

from __future__ import annotations

import collections
import dataclasses
import getpass
import math
import threading
import time
from pathlib import Path

import shiboken6
from PySide6.QtCore import QEvent, Qt, QTimer, Signal
from PySide6.QtWidgets import QApplication, QFileDialog, QHBoxLayout, QMessageBox, QSplitter, QWidget

from spokenbench.app.audio import NO_DEVICE_FLASH, NOT_ANSWERING, chosen_output, page_player, show_recording_status
from spokenbench.app.operations import BackgroundOp, JobOp, ProjectSession, QueryOp, WriteOp, replace_dialog
from spokenbench.core.audio.io import encode_wav
from spokenbench.core.audio.playback import STALL_S
from spokenbench.core.recording.cloning import ClonedVoice, create_cloned_voice
from spokenbench.core.recording.prompts import Prompt, project_prompts, read_reading_list, reading_list_prompts
from spokenbench.core.recording.quality import (
    DIGITAL_SILENCE_S,
    INPUT_LOST,
    MUTED_INPUT,
    VoiceOnset,
    full_scale_dbfs,
    level_verdict,
)
from spokenbench.core.recording.recorder import (
    INPUT_STALL_S,
    InputDevice,
    InputState,
    Level,
    Recorder,
    input_devices,
    recording_availability,
    wait_for_closing_streams,
)
from spokenbench.core.recording.speakers import (
    Speaker,
    add_speaker,
    consent_text_for,
    get_speaker,
    give_consent,
    list_speakers,
    withdraw_consent,
)
from spokenbench.core.recording.spool import ClaimedTake, LeftTake, TakeSpool, prompt_as_it_is_now, takes_to_offer
from spokenbench.core.recording.takes import (
    PreparedTake,
    Take,
    best_take,
    latest_takes,
    prepare_take,
    read_take_audio,
    save_recorded_take,
    script_progress,
    speaker_takes,
)
from spokenbench.core.store import Project
from spokenbench.core.store.items import item_languages
from spokenbench.widgets.recording_view import AddSpeakerDialog, ConsentDialog, RecorderView, SpeakerListView
from spokenbench.widgets.screen_reader import spoken
from spokenbench.widgets.tones import set_toned_sheet, tone
from spokenbench.widgets.waveform import ClipAudio, prepare_clip

SPEAKER_TABLES = frozenset({"speakers", "consents", "recordings", "cloned_voices"})
RECORDING_TEXT = "● Recording {seconds:.1f} s — R stops, Backspace starts again"
# Until the input's first sound has come, the take has not begun: an input waking up (a suspended USB microphone,
# a Bluetooth headset changing profile, PulseAudio's idle null sink) loses what is said meanwhile, whether it sends
# nothing or exact zeros (InputState.WAITING).
WAITING_TEXT = "Starting the microphone… read once ● Recording shows"
STOPPED_TEXT = "● Input stopped at {seconds:.1f} s — R stops, Backspace starts again"
# An input that sends exact zeros between words (NoiseTorch's gate, some noise filters) is heard only once the speaker
# speaks: ● Recording shows after DIGITAL_SILENCE_S, with this said.
NOISE_FILTER = (
    "A noise filter that silences the pauses sends zeros too: if that is it, read on (a voice clone is better made "
    "without one)."
)
# what a screen reader says as the input's state changes while recording (WAITING is said as R is pressed)
STATE_SAID = {
    InputState.SOUND: "Recording",
    InputState.SILENT: "Recording",
    InputState.STALLED: "Input stopped",
}
STARTING_SAID = "Starting the microphone"  # short: a screen reader heard by the microphone is recorded
# L: a level check before a take is LEVEL_CHECK_S of the input's sound, judged (`quality.level_verdict`) and not
# kept; during a take, L says the level of its last LEVEL_WINDOW_S. A take that reaches full scale says TOO_LOUD_SAID
# once: a speaker who cannot see the meter turn red can stop and read it again.
LEVEL_CHECK_S = 3.0
LEVEL_WINDOW_S = 3.0
# The check's seconds count from the voice (`quality.VoiceOnset`): a microphone that hears at once would spend them
# on the silence before the speaker begins (a screen reader heard through a loudspeaker is a voice: headphones).
# Without a voice in LEVEL_VOICE_WAIT_S of sound, what was heard is said (no voice, nothing, muted).
LEVEL_VOICE_WAIT_S = 8.0
LEVEL_CHECK_SAID = "Level check: speak as you will read"
LEVEL_WAITING_TEXT = "Level check: starting the microphone…"
LEVEL_LISTENING_TEXT = "Level check: speak as you will read…{left} — L ends it now"
TOO_LOUD_SAID = "Too loud: clipping"
CHECK_THE_INPUT = "check that the microphone is connected and on, or choose another input"
SERVER_SILENT = (
    "the sound input did not answer (the sound server may be hung); restart it (systemctl --user restart pulseaudio, "
    "or pipewire pipewire-pulse) or choose another input"
)
METER_INTERVAL_MS = 25  # 40 Hz: the meter shows the loudest block since the last tick


def read_speaker_state(project: Project, name: str, reading_list: list[Prompt] | None) -> tuple:
    """(speaker, prompts, takes) for the recorder panel, read on the pool."""
    speaker = get_speaker(project.conn, name)
    prompts = reading_list if reading_list is not None else project_prompts(project.conn, speaker.language)
    return speaker, prompts, speaker_takes(project.conn, speaker.id)


def verdict_said(checks) -> str:
    """A take's checks as a screen reader says them once it stops: each failure with its reason, since the table
    of checks is not read."""
    failures = [check for check in checks if not check.passed]
    if not failures:
        return "Passed every check"
    reasons = "; ".join(f"{check.name.replace('_', ' ')}: {check.reason}" for check in failures)
    return f"Failed {len(failures)} of {len(checks)} checks: {reasons}. Backspace records it again"


def input_name(recorder: Recorder) -> str:
    """The input a take comes from, for a sentence: 'the input "USB mic"' or 'the default input'."""
    return f'the input "{recorder.device_name}"' if recorder.device_name else "the default input"


CLOSE_WATCH_MS = 500
HELD_STOP = (
    "The sound input did not answer its stop (the sound server may be hung): the next recording starts once it answers"
)


def _input_lost(recorder: Recorder) -> bool:
    """Whether the input stopped for good during the take (not a pause it came back from)."""
    lost = recorder.input_break
    return lost is not None and lost.seconds is None


def _abort_in_background(recorder: Recorder, name: str) -> None:
    """Throw a take away off the UI thread: a sound server that does not answer holds its stream's stop (the
    window froze and Ctrl+Q never ended the app, measured with PulseAudio stopped). Marked thrown away at once,
    so an exit before the thread has run still removes its spool."""
    recorder.discarding = True
    threading.Thread(target=_abort_quietly, args=(recorder,), name=name, daemon=True).start()


def _abort_quietly(recorder: Recorder) -> None:
    try:
        recorder.abort()
    except Exception:  # noqa: BLE001 - a stream already gone
        pass


class SpeakersPage(QWidget):
    """Works standalone: `set_session` is all it needs. `stream_factory` and `device_lister` replace sounddevice
    (tests, benchmarks); `clone_backend_factory` replaces the cloning backend (a stub offline voice).
    `take_settled(saved)`: a take stopped with R (or `keep_take`) was saved, or was not kept — what a window
    closing waits for (`take_in_hand`)."""

    take_settled = Signal(bool)

    stream_factory = None  # None: sounddevice.InputStream
    device_lister = staticmethod(input_devices)
    clone_backend_factory = None  # None: get_backend("clone", …)

    def __init__(self, window=None):
        super().__init__()
        self.window_ = window
        self.session: ProjectSession | None = None
        self.speakers: list[Speaker] = []
        self.speaker: Speaker | None = None
        self.add_dialog: AddSpeakerDialog | None = None  # the last of each kind, deleted before the next
        self.withdraw_box: QMessageBox | None = None
        self.left_take_box: QMessageBox | None = None  # the last 'Keep a take cut short?'
        self.left_to_ask: list[tuple[LeftTake, str | None]] = []  # takes cut short still to be asked about
        self.wanted_speaker: str | None = None  # the speaker being read (selected, not shown yet)
        self.prompts: list[Prompt] = []
        self.prompt_index = 0
        self.takes: list[Take] = []
        self.reading_list: list[Prompt] | None = None
        self.devices: list[InputDevice] = []
        self.recording_problem: str | None = "Looking for input devices…"
        self.recorder: Recorder | None = None
        self.stop_held = False  # the take being saved was kept without its stream's stop (a hung sound server)
        self.recording_since = 0.0  # when the stream started (time.monotonic())
        self.state = "idle"  # idle, starting, recording, stopping, saving; listening: a level check (L)
        self.heard_levels: collections.deque[Level] = collections.deque()  # the take's or check's blocks (`_listen`)
        self.voice = VoiceOnset()  # when the level check first heard a voice
        self.too_loud_said = False  # TOO_LOUD_SAID, once per take
        self.level_line: str | None = None  # the last level check's verdict, on the line until a take begins
        self.input_shown: str | None = None  # the InputState shown while recording
        self.input_warning: str | None = None  # the status line said about the input, cleared when it recovers
        self.input_warned: str | None = None  # the InputState that line is about
        self.unstarted_line: str | None = None  # the line said when R came before ● Recording, until it shows
        self.look_again = False  # the take being saved lost its input: scan the devices once it is saved
        self.prepared: PreparedTake | None = None  # the take just stopped, until saved
        self.verdict_said = ""  # its checks, as a screen reader said them
        self.recorder_wanted = False  # the page took the keys before its speaker was read: the recorder gets them
        self.reload_said: tuple[str, str] | None = None  # (speaker, line) said once that speaker is read again
        self.take_audio: dict[int, ClipAudio] = {}  # take id -> rendered audio for playback
        self.shown_audio: ClipAudio | None = None
        self.last_clone: ClonedVoice | None = None
        self.last_scan: BackgroundOp | None = None  # the newest device scan (tests)
        self.refused: str | None = None  # why the last record key was refused
        self.play_requested_at: float | None = None
        self.meter_updates: list[float] = []  # perf_counter of each meter update (benchmark)
        self.player, self.audio_message = page_player(window)
        self.audio_ok = self.player is not None

        self.list_view = SpeakerListView()
        self.view = RecorderView()
        self.splitter = splitter = QSplitter(Qt.Orientation.Horizontal)
        splitter.addWidget(self.list_view)
        splitter.addWidget(self.view)
        splitter.setStretchFactor(1, 2)
        splitter.setSizes([440, 760])
        self.list_width_by_hand = False  # the person dragged the splitter: their width is kept
        splitter.splitterMoved.connect(lambda *_: setattr(self, "list_width_by_hand", True))
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(splitter)
        self.meter_timer = QTimer(self, interval=METER_INTERVAL_MS)
        self.meter_timer.timeout.connect(self._poll_levels)
        self.held_watch = QTimer(self, singleShot=True, interval=int(STALL_S * 1000))  # a start held
        self.held_watch.timeout.connect(self._still_held)
        self.close_watch = QTimer(self, interval=CLOSE_WATCH_MS)  # a held stop's stream, until it has closed
        self.close_watch.timeout.connect(self._closed_yet)

        self.list_view.selected.connect(self.select_speaker)
        self.list_view.table.activated.connect(lambda _index: self.view.setFocus())  # Enter: the recorder's keys
        self.list_view.add_requested.connect(self.open_add_dialog)
        self.list_view.consent_requested.connect(self.open_consent_dialog)
        self.list_view.withdraw_requested.connect(self.confirm_withdrawal)
        self.view.action_requested.connect(self.do_action)
        self.view.reading_list_requested.connect(self.choose_reading_list)
        self.view.project_prompts_requested.connect(lambda: self.use_reading_list(None))
        self.view.clone_requested.connect(self.create_clone)
        self.view.rescan_requested.connect(self.rescan)
        # another input chosen: a check of the one before would be said as this one's (a take keeps its input)
        self.view.device_chosen.connect(lambda _index: self._end_level_check(report=False, said_end=True))
        self._show_speaker()

    # -- session -----------------------------------------------------------------------------------------

    @property
    def annotator(self) -> str:
        return getattr(self.window_, "annotator", None) or getpass.getuser() or "recorder"

    def set_session(self, session: ProjectSession | None) -> None:
        if self.session is not None and shiboken6.isValid(self.session):
            self.session.changes.changed.disconnect(self._project_changed)
        self._abort_recording()
        self.session = session
        self.speakers, self.speaker, self.takes, self.prompts = [], None, [], []
        self.wanted_speaker = None
        self.recorder_wanted, self.reload_said = False, None
        self.left_to_ask = []  # the closed project's takes cut short are its own: asked at its next opening
        if self.left_take_box is not None and shiboken6.isValid(self.left_take_box):
            self.left_take_box.done(0)
        self.take_audio.clear()
        self._show_speaker()
        if session is None:
            self.list_view.set_speakers([])
            return
        session.changes.changed.connect(self._project_changed)
        self.refresh_speakers()
        self.find_devices()
        self.offer_left_takes()

    def _project_changed(self, tables: set[str]) -> None:
        if tables & SPEAKER_TABLES:
            self.refresh_speakers()

    def refresh_speakers(self) -> QueryOp | None:
        if self.session is None:
            return None
        return (
            QueryOp(
                self.session,
                lambda project, progress: list_speakers(project.conn),
                label="Reading speakers",
                parent=self,
                supersede="speakers",
            )
            .success(self._show_speakers)
            .run()
        )

    def _show_speakers(self, speakers: list[Speaker]) -> None:
        self.speakers = speakers
        shown = self.speaker
        if shown is not None:  # the speaker on screen, with fresh consent and counts
            self.speaker = next((s for s in speakers if s.id == shown.id), None)
            self.list_view.set_buttons(self.speaker)
            if self.state == "idle":
                self._show_speaker()
        self.list_view.set_speakers(speakers, self.wanted_speaker or (shown.name if shown else None))
        self._share_width()

    def _share_width(self) -> None:
        """The speakers list as wide as its columns need, as far as the recorder can spare it (keeping what its
        buttons and prompt need): on a laptop's screen the fixed 440 pixels pushed 'Prompts done' and 'Cloned'
        off the list. A width the person dragged the splitter to is kept."""
        total = sum(self.splitter.sizes())
        if self.list_width_by_hand or total <= 0:
            return
        spare = total - self.view.minimumSizeHint().width()
        width = max(min(self.list_view.fitted.wanted_width(), spare), 0)
        if width != self.splitter.sizes()[0]:
            self.splitter.setSizes([width, total - width])

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        self._share_width()  # the splitter shared the new width by its stretch factors

    # -- devices -----------------------------------------------------------------------------------------

    def rescan(self) -> BackgroundOp | None:
        """Rescan devices (its click, Space on it, Alt+D): the scan, and what it found said by the recorder, which
        takes the keys from anywhere on the page (on the input's box, R would choose a device)."""
        self._end_level_check(report=False)
        if self.state != "idle":
            self.view.set_status("Stop recording first (R)")
            return None
        focused = QApplication.focusWidget()
        if focused is not None and self.isAncestorOf(focused) and not self.view.hasFocus():
            self.view.setFocus(Qt.FocusReason.OtherFocusReason)
        return self.find_devices(asked=True)

    def find_devices(self, asked: bool = False) -> BackgroundOp | None:
        """Ask PortAudio for the input devices off the UI thread (again each time: when the project opens, when the
        page is shown, on Rescan devices); without it, say what to install. Not while a take is being recorded.
        `asked`: by Rescan devices, so what was found is said."""
        if self.session is None or self.state != "idle":
            return None
        lister = self.device_lister
        if self.view.rescan_button.hasFocus():  # disabled, it would pass the focus on, said as if chosen
            self.view.setFocus(Qt.FocusReason.OtherFocusReason)
        if asked:
            self.view.say("Looking for input devices")
        self.view.rescan_button.setEnabled(False)
        operation = BackgroundOp(
            self.session.runner,
            lambda progress: recording_availability(lister),
            label="Finding input devices",
            parent=self,
            supersede="input-devices",
            sound_device=True,
        )
        operation.success(lambda found: self._show_devices(*found, asked=asked))
        operation.finished.connect(lambda: self.view.rescan_button.setEnabled(True))
        self.last_scan = operation.run()
        return self.last_scan

    def _show_devices(self, devices: list[InputDevice], problem: str | None, asked: bool = False) -> None:
        """`asked`: by Rescan devices; the recorder says the inputs found and the one recorded from, or why there
        are none (the keys stay with the recorder, where R records: on the input's box R would choose a device)."""
        chosen, before = self.device, self.recording_problem
        self.devices, self.recording_problem = devices, problem
        self.view.set_devices([d.label for d in devices], chosen.label if chosen else None)
        self.view.set_banner(problem)
        self.view.set_recording_enabled(problem is None)
        if problem is not None and (problem != before or asked):  # a microphone pulled: said, not only shown
            self.view.say(problem)
        elif asked:
            found = f"{len(devices)} input{'s' if len(devices) != 1 else ''} found"
            self.view.say(spoken(found, f"Recording from {self.view.device_box.currentText()}"))
        show_recording_status(self.window_, problem)  # the status bar says what this page found

    def showEvent(self, event) -> None:
        super().showEvent(event)
        self._share_width()
        self.find_devices()  # a microphone connected since the last look is listed

    @property
    def device(self) -> InputDevice | None:
        index = self.view.device_box.currentIndex()
        return self.devices[index] if 0 <= index < len(self.devices) else None

    # -- speakers and consent ----------------------------------------------------------------------------

    def select_speaker(self, name: str) -> QueryOp | None:
        if self.session is None or (self.speaker is not None and self.speaker.name == name and self.prompts):
            return None
        self._end_level_check(report=False)
        if self.state != "idle":
            self.view.set_status("Stop recording before changing speaker")
            if self.speaker is not None:
                self.list_view.select(self.speaker.name)
            return None
        reading_list = self.reading_list
        self.wanted_speaker = name
        return (
            QueryOp(
                self.session,
                lambda project, progress: read_speaker_state(project, name, reading_list),
                label=f"Reading speaker {name}",
                parent=self,
                supersede="speaker-state",
            )
            .success(lambda state: self._speaker_loaded(*state))
            .run()
        )

    def _speaker_loaded(self, speaker: Speaker, prompts: list[Prompt], takes: list[Take]) -> None:
        # read as a take began (↓ Enter R): the take, and what it is saved as, stay the speaker's it was begun for (a
        # level check is no one's)
        if self.state not in ("idle", "listening") and self.speaker is not None:
            self.list_view.select(self.speaker.name)
            return
        changed = self.speaker is None or self.speaker.id != speaker.id
        self.speaker, self.prompts, self.takes = speaker, prompts, takes
        if changed:
            self.prompt_index = self._first_unfinished()
            self.take_audio.clear()
        self.prompt_index = min(self.prompt_index, max(0, len(prompts) - 1))
        self.list_view.set_buttons(speaker)
        self._show_speaker()
        given, self.recorder_wanted = self.recorder_wanted, False
        waiting, self.reload_said = self.reload_said, None
        said = waiting[1] if waiting is not None and waiting[0] == speaker.name else ""
        focused = QApplication.focusWidget()
        if self.view.hasFocus():  # a new script, or consent given: where the recorder is now is said
            self.view.say(said, with_context=True)
        elif self.isVisible() and (focused is None or self.isAncestorOf(focused)):  # never from another page
            if given or said or focused is not self.list_view.table:  # not while the list is walked
                self.view.setFocus()
                self.view.say(said, with_context=True)

    def take_focus(self) -> None:
        """The page's keys (Ctrl+5, the sidebar's Enter): the recorder once a speaker is shown, so R records at once;
        else the speaker list."""
        if self.speaker is not None and self.view.hasFocus():  # Ctrl+5 on the recorder: where it is, said again
            self.view.say("", with_context=True)
        elif self.speaker is not None:
            self.view.setFocus(Qt.FocusReason.OtherFocusReason)
        else:  # the recorder takes them from the list once its speaker is read (`_speaker_loaded`)
            self.list_view.table.setFocus(Qt.FocusReason.OtherFocusReason)
            self.recorder_wanted = self.session is not None

    def _first_unfinished(self) -> int:
        latest = latest_takes(self.takes)
        return next((i for i, p in enumerate(self.prompts) if not (p.key in latest and latest[p.key].passed)), 0)

    def open_add_dialog(self) -> AddSpeakerDialog | None:
        if self.session is None:
            return None
        replace_dialog(self.add_dialog)
        dialog = AddSpeakerDialog(self)
        self.add_dialog = dialog
        QueryOp(
            self.session,
            lambda project, progress: item_languages(project.conn),
            label="Reading languages",
            parent=dialog,
        ).success(dialog.add_languages).run()

        def submit(values: dict) -> None:
            operation = (
                WriteOp(
                    self.session,
                    lambda project: add_speaker(
                        project, values["name"], values["language"], values["accent"], values["gender"], values["notes"]
                    ),
                    changes={"speakers"},
                    label=f"Adding speaker {values['name']}",
                    parent=self,
                )
                .success(lambda speaker: (dialog.accept(), self._added(speaker)))
                .failure(lambda error: dialog.show_error(str(error)))
            )
            dialog.operations.append(operation.run())  # its callbacks reach the dialog (replace_dialog)

        dialog.submitted.connect(submit)
        dialog.open()
        return dialog

    def _added(self, speaker: Speaker) -> None:
        self.speaker, self.wanted_speaker = None, speaker.name
        self.list_view.set_speakers([*self.speakers, speaker], speaker.name)

    def open_consent_dialog(self) -> ConsentDialog | None:
        speaker = self.speaker
        if self.session is None or speaker is None:
            return None
        dialog = ConsentDialog(speaker.name, consent_text_for(speaker.name), self.annotator, self)
        self.consent_dialog = dialog

        def agree(text: str, by: str) -> None:
            WriteOp(
                self.session,
                lambda project: give_consent(project, speaker.id, text, by),
                changes={"consents"},
                label=f"Recording the consent of {speaker.name}",
                parent=self,
            ).success(lambda consent: (dialog.accept(), self._consented(speaker.name))).failure(
                lambda error: dialog.show_error(str(error))
            ).run()

        dialog.agreed.connect(agree)
        dialog.open()
        return dialog

    def _consented(self, name: str) -> None:
        line = f"Consent of {name} recorded: press R to record"
        self.view.set_status(line, said="")
        self.refused = None
        self._reload_speaker(said=line)

    # -- takes cut short -----------------------------------------------------------------------------------

    def offer_left_takes(self) -> QueryOp | None:
        """Takes a process that ended left in the project's spool — the app killed, crashed or cut off by a power
        cut in the middle of a take (core/recording/spool.py): each offered in turn, to keep or discard."""
        if self.session is None:
            return None
        folder = self.session.path

        def read(project, progress) -> list[tuple[LeftTake, str | None]]:
            names = {speaker.id: speaker.name for speaker in list_speakers(project.conn)}
            return [(left, names.get(left.speaker_id)) for left in takes_to_offer(folder)]

        return (
            QueryOp(self.session, read, label="Looking for takes cut short", parent=self, supersede="left-takes")
            .success(self._ask_left_takes)
            .run()
        )

    def _ask_left_takes(self, found: list[tuple[LeftTake, str | None]]) -> None:
        self.left_to_ask = list(found)
        self._ask_next_left_take()

    def _ask_next_left_take(self) -> QMessageBox | None:
        if not self.left_to_ask or self.session is None:
            return None
        left, name = self.left_to_ask.pop(0)
        replace_dialog(self.left_take_box)
        if left.problem is not None:
            text = (
                f"A take left in {left.pcm_path.parent} by a recording cut short cannot be read back: "
                f"{left.pcm_path.name}: {left.problem}.\n\nRemove it?"
            )
        else:
            who = name or f"speaker {left.speaker_id} (no longer in the project)"
            text = (
                f"A take was cut short when SpokenBench Studio stopped in the middle of it (a crash, a kill or a power "
                f"cut): {left.seconds:.0f} s of {left.prompt.label or left.prompt.key}, read by {who}, begun "
                f"{left.started}.\n\nKeep it (it is checked and saved as a new take, as R does), or discard it?"
            )
        box = QMessageBox(
            QMessageBox.Icon.Question, "Keep a take cut short?", text, QMessageBox.StandardButton.NoButton, self
        )
        box.setTextFormat(Qt.TextFormat.PlainText)
        keep = None if left.problem else box.addButton("&Keep the take", QMessageBox.ButtonRole.AcceptRole)
        discard = box.addButton("&Remove it" if left.problem else "&Discard it", QMessageBox.ButtonRole.DestructiveRole)
        later = box.addButton("&Later", QMessageBox.ButtonRole.RejectRole)  # asked again at the next opening
        box.setDefaultButton(keep or later)
        box.setEscapeButton(later)
        session = self.session
        box.buttonClicked.connect(lambda button: self._left_take_answered(session, left, button, keep, discard))
        self.left_take_box = box
        box.open()
        return box

    def _left_take_answered(self, session: ProjectSession, left: LeftTake, button, keep, discard) -> None:
        if session is not self.session:  # another project since: this take is the other project's
            return
        if button is keep:
            self.recover_left_take(left)
        elif button is discard:
            BackgroundOp(session.runner, lambda progress: ClaimedTake(left).remove(), label="Discarding a take cut short", parent=self)\
                .success(lambda _none: self._ask_next_left_take()).failure(lambda _error: self._ask_next_left_take(), dialog=True).run()  # fmt: skip
        else:
            self.left_to_ask = []  # Later: the rest are asked at the next opening too

    def recover_left_take(self, left: LeftTake) -> BackgroundOp | None:
        """Read the take back, check it as R does, save it as the prompt's newest take; its spool goes once saved
        (or once its speaker's consent is found gone: nothing of the voice stays)."""
        session = self.session
        if session is None:
            return None

        def check(progress) -> tuple[ClaimedTake, PreparedTake]:
            claimed = ClaimedTake(left)
            try:
                return claimed, prepare_take(claimed.samples(), left.rate, left.prompt, left.device)
            except BaseException:
                claimed.release()
                raise

        def save(claimed: ClaimedTake, prepared: PreparedTake) -> None:
            def release(remove: bool) -> None:
                claimed.remove() if remove else claimed.release()

            def store(project) -> Take:  # an item deleted since: the take keeps its prompt's text, unlinked
                now = dataclasses.replace(prepared, prompt=prompt_as_it_is_now(project.conn, prepared.prompt))
                return save_recorded_take(project, left.speaker_id, now, release)

            WriteOp(session, store, changes={"recordings"}, label="Saving a take cut short", parent=self)\
                .success(lambda take: self._left_take_saved(left, take)).failure(lambda _error: self._ask_next_left_take(), dialog=True).run()  # fmt: skip

        return (
            BackgroundOp(session.runner, check, label="Checking a take cut short", parent=self)
            .success(lambda result: save(*result))
            .failure(lambda _error: self._ask_next_left_take(), dialog=True)
            .run()
        )

    def _left_take_saved(self, left: LeftTake, take: Take) -> None:
        verdict = "passed every check" if take.passed else "failed a check: record that prompt again"
        line = (
            f"The take cut short was kept: take {take.take} of {left.prompt.label or left.prompt.key} "
            f"({take.duration_s:.1f} s), {verdict}"
        )
        reading = self.speaker is not None and self.speaker.id == left.speaker_id and self.state == "idle"
        self.view.set_status(line, said="" if reading else None)  # said with the speaker read again, or now
        if reading:
            self._reload_speaker(said=line)  # its takes and progress, read again
        self._ask_next_left_take()

    def _reload_speaker(self, said: str = "") -> None:
        """Read the speaker again; `said` is said with where the recorder is once read (said before, the reading's
        line cut it off)."""
        if self.speaker is not None:
            self.reload_said = (self.speaker.name, said) if said else None
            name, self.speaker = self.speaker.name, None
            self.select_speaker(name)

    def confirm_withdrawal(self) -> QMessageBox | None:
        speaker = self.speaker
        if speaker is None or not speaker.consent_in_force:
            return None
        replace_dialog(self.withdraw_box)
        box = QMessageBox(
            QMessageBox.Icon.Warning,
            "Withdraw consent",
            f"Withdraw the consent of {speaker.name}? Their {speaker.takes} take{'' if speaker.takes == 1 else 's'}, "
            "every voice cloned from them and the "
            "clips and inputs made with it are deleted. This cannot be undone.",
            QMessageBox.StandardButton.NoButton,
            self,
        )
        withdraw = box.addButton("Withdraw and delete", QMessageBox.ButtonRole.DestructiveRole)  # no letter: W is
        # what opened it (Alt+W), and a message box presses a button by its letter alone
        cancel = box.addButton(QMessageBox.StandardButton.Cancel)
        box.setDefaultButton(cancel)  # Enter, or Enter twice from the list, deletes nothing
        box.setEscapeButton(cancel)
        box.buttonClicked.connect(lambda button: self.withdraw(speaker.name) if button is withdraw else None)
        self.withdraw_box = box
        box.open()
        return box

    def withdraw(self, name: str) -> WriteOp | None:
        if self.session is None:
            return None
        self._abort_recording()
        return (
            WriteOp(
                self.session,
                lambda project: withdraw_consent(project, name),
                changes={"consents", "recordings", "cloned_voices", "clips", "assembled_inputs"},
                label=f"Withdrawing the consent of {name}",
                parent=self,
            )
            .success(self._withdrawn)
            .run()
        )

    def _withdrawn(self, report) -> None:
        self.take_audio.clear()
        line = (
            f"Consent of {report.speaker} withdrawn: {report.recordings_deleted} takes, {report.cloned_voices_deleted} "
            f"cloned voices and {report.files_deleted} audio files deleted"
        )
        self.view.set_status(line, said="")
        self._reload_speaker(said=line)

    # -- the script --------------------------------------------------------------------------------------

    def choose_reading_list(self) -> None:
        path, _ = QFileDialog.getOpenFileName(
            self, "Reading list (one prompt per line)", "", "Text (*.txt);;All files (*)"
        )
        if path:
            self.load_reading_list(path)

    def load_reading_list(self, path: str | Path) -> BackgroundOp | None:
        if self.session is None:
            return None
        return (
            BackgroundOp(
                self.session.runner,
                lambda progress: read_reading_list(path),
                label="Reading the reading list",
                parent=self,
            )
            .success(self.use_reading_list)
            .run()
        )

    def use_reading_text(self, text: str) -> None:
        self.use_reading_list(reading_list_prompts(text))

    def use_reading_list(self, prompts: list[Prompt] | None) -> None:
        """Read `prompts` from now on (None: the project's questions in the speaker's language)."""
        self._end_level_check(report=False)
        if self.state != "idle":
            return
        self.reading_list = prompts
        self.prompt_index = 0
        self._reload_speaker()

    # -- keys --------------------------------------------------------------------------------------------

    def do_action(self, action: str) -> None:
        if action == "level":
            self.check_level()
            return
        if self.state == "listening":  # R or Backspace records once the check's stream has closed; the rest act now
            if action in ("record", "retake") and self.take_refused is None:
                self._close_then_record("Level check ended", "Ending the level check")
                return
            self._end_level_check(report=False)  # said by what the key does next (a refused R: why)
        if action == "record":
            self.stop_recording() if self.state == "recording" else self.start_recording()
        elif action == "retake":
            self.retake()
        elif action == "play":
            self.play_take()
        elif action in ("previous", "next"):
            self.move(-1 if action == "previous" else 1)

    def move(self, step: int) -> None:
        if self.state != "idle":
            self.view.set_status("Stop recording first (R)")
            return
        if not self.prompts:
            self.view.say(self.view.position_label.text())
            return
        index = max(0, min(len(self.prompts) - 1, self.prompt_index + step))
        if index == self.prompt_index:  # said, or the key would seem lost
            self.view.say("This is the first prompt" if step < 0 else "This is the last prompt")
            return
        self.prompt_index = index
        self.prepared = None
        self._show_speaker()
        self.view.say("", with_context=True)  # the prompt reached, its text and its take

    @property
    def prompt(self) -> Prompt | None:
        return self.prompts[self.prompt_index] if 0 <= self.prompt_index < len(self.prompts) else None

    @property
    def current_take(self) -> Take | None:
        prompt = self.prompt
        return latest_takes(self.takes).get(prompt.key) if prompt else None

    # -- recording ---------------------------------------------------------------------------------------

    def _refuse(self, reason: str) -> None:
        self.refused = reason
        self.view.set_status(reason)

    @property
    def take_refused(self) -> str | None:
        """Why R would record nothing now (no speaker, no consent, no input, no prompt), or None."""
        speaker = self.speaker
        if self.session is None or speaker is None:
            return "Choose or add a speaker first"
        if not speaker.consent_in_force:
            return f"Recording refused: {speaker.name} has not given consent (or withdrew it). Use Consent… first."
        if self.recording_problem is not None:
            return f"Recording is not available here: {self.recording_problem}"
        if self.prompt is None:
            return "Nothing to read: load a reading list, or add items in the speaker's language"
        return None

    def start_recording(self, said_first: str = "") -> BackgroundOp | None:
        """R: the take begins once the input hears. `said_first`: said before "Starting the microphone", which
        would cut it off said alone (Backspace's "Take thrown away")."""
        if self.state != "idle":
            return None
        refused = self.take_refused
        if refused is not None:
            self._refuse(refused)
            return None
        speaker = self.speaker
        self.refused = None
        if self.player is not None:  # a take still playing would be recorded into the next, from a speaker
            self.player.stop()
        recorder = Recorder(self.device, stream_factory=self.stream_factory)
        self.recorder = recorder
        folder, prompt = self.session.path, self.prompt

        def spool_opener(rate: int) -> TakeSpool:  # on the start's thread: the take kept on disk as it comes
            return TakeSpool(folder, speaker.id, prompt, rate, recorder.device_name)

        self.state = "starting"
        self.prepared = None
        if self.level_line is not None and self.view.status_label.text() == self.level_line:
            self.view.set_status("", said="")  # the take's level is its own: a red meter under "too quiet" misled
        self.view.state_label.setText("Starting…")
        self.view.say(spoken(said_first, STARTING_SAID))
        self.held_watch.start()  # a start the sound server holds is said after STALL_S
        self.view.show_checks(None)
        return (
            BackgroundOp(
                self.session.runner,
                lambda progress: recorder.start(spool_opener),
                label="Starting the recording",
                parent=self,
                sound_device=True,
            )
            .success(lambda _none: self._started(recorder))
            .failure(lambda error: self._start_failed(recorder, error), dialog=True)
            .run()
        )

    def _still_held(self) -> None:
        """A start held by a sound server that does not answer: said, rather than "Starting…" for good. (A stop
        is never held: the take is kept without it, `Recorder.stop`.)"""
        if self.state != "starting":
            return
        self.view.set_status(
            "The recording has not started: the sound input does not answer (the sound server may be hung). "
            "It starts once the server answers; reading on now would not be recorded."
        )
        show_recording_status(self.window_, NOT_ANSWERING)  # the status bar's label says it too

    def _answered(self) -> None:
        """The sound input answered a start or a stop: the status bar no longer says it does not."""
        self.held_watch.stop()
        if getattr(self.window_, "recording_message", None) == NOT_ANSWERING:
            show_recording_status(self.window_, None)

    def _closed_yet(self) -> None:
        """A held stop's stream has closed (the sound server answered): the status bar no longer says it does not,
        nor the line under the buttons."""
        if not wait_for_closing_streams(0.0):
            return
        self.close_watch.stop()
        if self.state == "idle":  # a start held since is another take's to say
            self._answered()
        if HELD_STOP in self.view.status_label.text():
            self.view.set_status(self.view.status_label.text().replace(f". {HELD_STOP}", ""), said="")

    def _started(self, recorder: Recorder) -> None:
        if recorder is not self.recorder or self.state != "starting":
            return
        self._answered()
        self.state = "recording"
        self.recording_since = time.monotonic()
        if recorder.spool_problem is not None:  # a read-only or full project folder: said, the take goes on
            self.view.set_status(f"Recording, but {recorder.spool_problem}", said="")  # said with "Recording"
        self._clear_input()
        self._listen(recorder, LEVEL_WINDOW_S)
        self.too_loud_said = False
        self._show_input(recorder)
        self.meter_timer.start()

    @property
    def heartbeat_state(self) -> str:
        """The recorder's state for the app's heartbeat file (real-device tests): the input's while recording;
        when idle, "scanning" while the input devices are looked for, and "unavailable" while recording cannot work
        here (R is refused: before the first scan has answered, or without an input)."""
        if self.state == "recording" and self.input_shown:
            return f"recording-{self.input_shown}"
        if self.state == "idle" and not self.view.rescan_button.isEnabled():
            return "scanning"
        return "unavailable" if self.state == "idle" and self.recording_problem is not None else self.state

    def _show_input(self, recorder: Recorder, too_loud: bool = False) -> None:
        """Say what the input is doing: ● Recording only once it hears, or has sent DIGITAL_SILENCE_S of zeros
        (`Recorder.take_begun`; the take's clock is the sound received, so it stops when the input stops), and a
        line when it is silent, stopped or never started — written again as its seconds change only while it is
        still the line shown. A screen reader says the change (Recording, Input stopped) and a new line."""
        now = time.monotonic()
        last = recorder.last_block_at
        state = recorder.input_state(now)
        name = input_name(recorder)
        warning = None
        if state == InputState.WAITING:
            text, sheet = WAITING_TEXT, "font-weight:bold;"
            if now - self.recording_since >= STALL_S:
                warning = (
                    f"No sound has come from {name} in the {now - self.recording_since:.0f} s since the recording "
                    f"started: {CHECK_THE_INPUT} (Backspace starts again)."
                )
        elif state == InputState.STALLED:
            text, sheet = STOPPED_TEXT.format(seconds=recorder.recorded_s), "font-weight:bold; color: $error"
            self.view.meter.reset()  # nothing is coming in: the meter must not hold the last level
            waited = max(INPUT_STALL_S, now - (last or now))  # the snapshot input_state judged by
            warning = (
                f"No sound has come from {name} for {waited:.0f} s: {INPUT_LOST}. What you read since is not "
                "recorded; press R to stop (the take fails its input check), check the input, then record it again."
            )
        else:
            text, sheet = RECORDING_TEXT.format(seconds=recorder.recorded_s), "font-weight:bold; color: $error"
            if state == InputState.SILENT:
                warning = (
                    f"{name[0].upper()}{name[1:]} sends no sound at all (every sample is exactly zero): it is probably "
                    f"{MUTED_INPUT}."
                )
                if recorder.heard_at is None:  # zeros since R: a noise filter's pause looks the same
                    warning += f" {NOISE_FILTER}"
        self.view.state_label.setText(text)
        shown_as = STATE_SAID.get(state, "")
        said = [shown_as] if shown_as != STATE_SAID.get(self.input_shown, "") else []  # a change, not its seconds
        if said and shown_as == "Recording" and recorder.spool_problem is not None:
            said.append(f"But {recorder.spool_problem}")
        if too_loud:
            said.append(TOO_LOUD_SAID)
        if state != InputState.WAITING and self.unstarted_line == self.view.status_label.text():
            self.view.set_status("")  # its advice is followed: ● Recording shows
        if state != self.input_shown:  # a style sheet is parsed again each time it is set: only on a change
            set_toned_sheet(self.view.state_label, sheet)
        ours = self.input_warning is not None and self.view.status_label.text() == self.input_warning
        if warning is None:
            if ours:
                self.view.set_status("")
            self.input_warning = self.input_warned = None
        elif ours or state != self.input_warned:  # a new problem, or ours still shown: never over another line
            if state != self.input_warned:
                said.append(warning)  # said once, not again as its seconds count
            self.view.set_status(warning, said="")
            self.input_warning, self.input_warned = warning, state
        self.input_shown = state
        self.view.say(spoken(*said))  # one line: a second would cut the first off

    def _clear_input(self) -> None:
        """The take is over (stopped, started again, thrown away): its input's line goes with it."""
        if self.input_warning is not None and self.view.status_label.text() == self.input_warning:
            self.view.set_status("")
        self.input_shown = self.input_warning = self.input_warned = None

    def _start_failed(self, recorder: Recorder, error: BaseException) -> None:
        if recorder is self.recorder:
            checking = self.state == "listening"
            self.recorder, self.state = None, "idle"
            self.meter_timer.stop()  # a level check's runs from its start
            self._show_idle_line()
            self.view.set_status(f"Could not start {'the level check' if checking else 'recording'}: {error}")

    def _poll_levels(self) -> None:
        recorder = self.recorder
        if recorder is None:
            return
        levels = recorder.drain_levels()
        if levels:
            self.view.meter.set_level(max(lv.rms_dbfs for lv in levels), max(lv.peak_dbfs for lv in levels))
            self.meter_updates.append(time.perf_counter())
        if self.state == "listening" and recorder.heard_at is not None:  # the room and the voice: from the first sound
            for level in levels:
                if level.at >= recorder.heard_at:
                    self.voice.feed(level.rms_dbfs, level.at)
        self.heard_levels.extend(levels)
        if self.state == "recording":
            too_loud = not self.too_loud_said and any(lv.peak_dbfs >= full_scale_dbfs() for lv in levels)
            self.too_loud_said |= too_loud
            self._show_input(recorder, too_loud)
        elif self.state == "listening":
            self._level_check_progress(recorder)

    def stop_recording(self, then_record: bool = False) -> BackgroundOp | None:
        """Stop the stream, check and encode the take off the UI thread; show the checks; save it."""
        recorder, prompt, speaker, session = self.recorder, self.prompt, self.speaker, self.session
        if self.state != "recording" or recorder is None or prompt is None or speaker is None:
            return None
        if not recorder.take_begun:  # the input hears nothing yet: there is no take to check or keep
            self._discard_unstarted(recorder)
            return None
        self.state = "stopping"
        self.meter_timer.stop()
        self._poll_levels()
        self._clear_input()
        self.view.meter.reset()  # nothing is coming in now: the meter must not hold the last level
        self.view.state_label.setText("Checking the take…")
        set_toned_sheet(self.view.state_label, "font-weight:bold;")

        def finish(progress) -> tuple[PreparedTake, ClipAudio]:
            samples = recorder.stop()
            prepared = prepare_take(
                samples, recorder.rate, prompt, recorder.device_name, input_break=recorder.input_break
            )
            wav = encode_wav(prepared.analysis.trimmed if len(prepared.analysis.trimmed) else samples, recorder.rate)
            return prepared, prepare_clip(wav, f"take of {prompt.label}")

        operation = (
            BackgroundOp(self.session.runner, finish, label="Checking the take", parent=self, sound_device=True)
            .success(
                lambda result: self._checked(
                    speaker,
                    *result,
                    input_lost=_input_lost(recorder),
                    stop_held=recorder.stop_held,
                    session=session,
                    release_spool=recorder.release_spool,
                )
            )
            .failure(self._stop_failed, dialog=True)
        )
        operation.finished.connect(
            lambda: self._take_dropped(
                self.recorder is recorder and self.state == "stopping",
                "its check was cancelled",
                recorder.release_spool,
            )
        )
        return operation.run()

    def _take_dropped(self, still_ours: bool, why: str, release_spool) -> None:
        """A take's check or save that ended with neither outcome (cancelled in the jobs panel): the page goes back
        to idle and says so, the take's spool is removed (the cancel said so), and a closing that waits for the
        take goes on. Before, the page kept "Checking the take…" for good, and a quit waiting for it never ended."""
        if not still_ours:  # its success or failure has moved the page on
            return
        threading.Thread(target=release_spool, args=(True,), name="spool-remove", daemon=True).start()
        self.recorder, self.prepared, self.state = None, None, "idle"
        self.view.state_label.setText("")
        self.view.set_status(f"The take was not kept: {why}")
        self.take_settled.emit(False)

    def _discard_unstarted(self, recorder: Recorder) -> None:
        """R before ● Recording (the input's first block, or its first sound): nothing is kept, said on the status
        line (no dialog: the speaker only has to wait for ● Recording). The stream is closed on a thread of its own,
        as a take thrown away with its page is: a sound server that does not answer holds that call, and the page
        must not wait for it."""
        self.recorder, self.state = None, "idle"
        self.meter_timer.stop()
        self._clear_input()
        _abort_in_background(recorder, "recording-discard")
        self._show_take()
        self.unstarted_line = (
            f"Nothing was recorded: no sound had come from {input_name(recorder)} when R was pressed. Read once "
            "● Recording shows."
        )
        self.view.set_status(self.unstarted_line)

    def _stop_failed(self, error: BaseException) -> None:
        """The take could not be checked: its spool stays, and it is offered back at the next opening."""
        if self.recorder is not None:
            self.recorder.release_spool(remove=False)  # closes its file: nothing waits on the disk
        self.recorder, self.state = None, "idle"
        self.view.state_label.setText("")
        self.view.set_status(f"The take was not kept: {error}")
        self.take_settled.emit(False)

    def _checked(
        self,
        speaker: Speaker,
        prepared: PreparedTake,
        audio: ClipAudio,
        input_lost: bool = False,
        stop_held: bool = False,
        session: ProjectSession | None = None,
        release_spool=lambda remove: None,
    ) -> None:
        """The checks are shown at once; the take is saved meanwhile. `input_lost`: the input stopped for good
        during the take, so the devices are looked for again once it is saved (the banner and the status bar).
        `stop_held`: the sound server did not answer the stream's stop, so the take was kept without it; said
        once it is saved. A take checked while its project was closed is not saved into the project opened since
        (its speaker is not that project's): its spool stays in its own project, offered at its next opening.
        `release_spool(remove)`: the take's spool, let go once the take is saved."""
        if session is not None and session is not self.session:
            release_spool(False)  # closes its file: nothing waits on the disk
            self.take_settled.emit(False)
            return
        self.recorder = None
        self.look_again = input_lost
        self.stop_held = stop_held
        self.prepared = prepared
        self.shown_audio = audio
        self.view.waveform.set_clip(audio, "")
        analysis = prepared.analysis
        verdict = (
            "Take passed every check"
            if analysis.passed
            else f"Take failed {len(analysis.failures())} check(s): press Backspace to record it again"
        )
        self.view.state_label.setText(verdict)
        self.verdict_said = verdict_said(analysis.checks)
        self.view.say(self.verdict_said)
        self._show_verdict_tone(analysis.passed)
        self.view.show_checks([c.as_dict() for c in analysis.checks])
        self.state = "saving"
        saving = WriteOp(self.session, lambda project: save_recorded_take(project, speaker.id, prepared, release_spool), changes={"recordings"}, label="Saving the take", parent=self)\
            .success(lambda take: self._saved(speaker, take, audio)).failure(self._save_failed, dialog=True)  # fmt: skip
        saving.finished.connect(
            lambda: self._take_dropped(
                self.prepared is prepared and self.state == "saving", "its save was cancelled", release_spool
            )
        )
        saving.run()

    def _saved(self, speaker: Speaker, take: Take, audio: ClipAudio) -> None:
        self.state = "idle"
        self.prepared = None
        self._look_again_if_lost()
        self.take_settled.emit(True)
        if self.speaker is None or self.speaker.id != speaker.id:
            return
        self.takes.append(take)
        self.take_audio[take.id] = audio
        saved = f"Take {take.take} saved ({take.duration_s:.1f} s, {take.audio_format.upper()})"
        if self.stop_held:  # the status bar says it too, until the stream has closed
            saved += f". {HELD_STOP}"
            show_recording_status(self.window_, NOT_ANSWERING)
            self.close_watch.start()
        self.view.set_status(saved, said=spoken(saved, self.verdict_said))  # the verdict again: this cuts it off
        self._show_progress()
        self._show_clone_state()

    def _save_failed(self, error: BaseException) -> None:
        self.state = "idle"
        self._look_again_if_lost()
        self.view.set_status(f"The take was not saved: {error}")
        self.take_settled.emit(False)

    @property
    def take_in_hand(self) -> str | None:
        """What a closing window or project would lose: "recording" (● Recording shows: the input hears, or has
        sent the muted wait's zeros), "finishing" (stopped, being checked and saved), or None."""
        if self.state == "recording" and self.recorder is not None and self.recorder.take_begun:
            return "recording"
        return "finishing" if self.state in ("stopping", "saving") else None

    @property
    def take_described(self) -> str:
        """The take in hand in words, for the question asked before closing: its length, prompt and speaker."""
        recorder, prompt, speaker = self.recorder, self.prompt, self.speaker
        seconds = f"{recorder.recorded_s:.0f} s so far, of " if recorder is not None else ""
        where = f"prompt {self.prompt_index + 1} of {len(self.prompts)}" if prompt is not None else "a prompt"
        return f"{seconds}{where}" + (f", read by {speaker.name}" if speaker is not None else "")

    def keep_take(self) -> bool:
        """Stop the take being recorded and save it, as R does; whether a take is on its way to being saved
        (`take_settled` follows)."""
        if self.take_in_hand == "recording":
            self.stop_recording()
        return self.take_in_hand == "finishing"

    def discard_take(self) -> None:
        """Throw the take being recorded away (Quit's "Discard the take")."""
        if self.state == "recording":
            self._abort_recording()
            self.view.set_status("The take was discarded")

    def _look_again_if_lost(self) -> None:
        """After a take whose input stopped for good: the devices are scanned again, so the page's banner and the
        status bar say whether it is still there (a pulled microphone, a sound server gone: "No audio input
        device"), rather than "Audio: ready" until the page is shown again."""
        if self.look_again:
            self.look_again = False
            self.find_devices()

    def retake(self) -> None:
        """While recording: throw the take away and start again. Otherwise: record this prompt again (the newest
        take of a prompt is the one that counts)."""
        if self.state == "recording" and self.recorder is not None:
            self._close_then_record("Take thrown away", "Discarding the take")
            return
        if self.state == "idle":
            self.start_recording()

    def _close_then_record(self, said_first: str, label: str) -> None:
        """Throw the stream in hand away (a take, or a level check), then record: once it has closed, as an input
        that takes one stream at a time (an ALSA device opened directly) would refuse the next."""
        recorder, self.recorder = self.recorder, None
        self.meter_timer.stop()
        self.view.meter.reset()
        self._clear_input()
        self.state = "starting"
        self.view.state_label.setText("Starting…")
        session = self.session
        closing = BackgroundOp(
            self.session.runner, lambda progress: recorder.abort(), label=label, parent=self, sound_device=True
        )
        closing.success(lambda _none: self._record_again(session, said_first)).run()

    def _record_again(self, session: ProjectSession | None, said_first: str) -> None:
        """Backspace's discarded take (or R's level check) is closed: record, unless the page moved on meanwhile
        (another project, a take started since)."""
        if self.session is session and self.state == "starting" and self.recorder is None:
            self.state = "idle"
            if self.start_recording(said_first=said_first) is None:  # refused meanwhile (consent withdrawn): why
                self._show_idle_line()

    def _abort_recording(self) -> None:
        recorder, self.recorder = self.recorder, None
        self.meter_timer.stop()
        self._clear_input()
        if recorder is not None:
            self.view.state_label.setText("")
        self.state = "idle"
        if recorder is not None:  # a page or session closing: the take is thrown away (one still starting too)
            _abort_in_background(recorder, "recording-abort")

    # -- the level -------------------------------------------------------------------------------------

    def check_level(self) -> BackgroundOp | None:
        """L. Before a take: a level check — the input's level judged once the voice has been heard for
        LEVEL_CHECK_S, and said; nothing is kept, so it needs no speaker's consent. L again ends it at once. During a
        take: the level of its last LEVEL_WINDOW_S, said."""
        if self.state == "recording":
            self._say_take_level()
            return None
        if self.state == "listening":  # before the voice: nothing to judge, and no fault
            self._end_level_check(report=self.voice.at is not None, said_end=True)
            return None
        if self.state != "idle":
            self.view.say("No level check now: the take is starting or being saved")
            return None
        if self.session is None:
            return None
        if self.recording_problem is not None:
            self._refuse(f"Recording is not available here: {self.recording_problem}")
            return None
        if self.player is not None:  # a take playing from a loudspeaker would be judged as the voice
            self.player.stop()
        recorder = Recorder(self.device, stream_factory=self.stream_factory)
        self.recorder, self.state, self.voice = recorder, "listening", VoiceOnset()
        self._listen(recorder, DIGITAL_SILENCE_S + LEVEL_VOICE_WAIT_S + LEVEL_CHECK_S)
        self.view.state_label.setText(LEVEL_WAITING_TEXT)
        set_toned_sheet(self.view.state_label, "font-weight:bold;")
        self.view.set_status("", said=LEVEL_CHECK_SAID)
        self.recording_since = time.monotonic()
        self.meter_timer.start()  # from now: a start the sound server holds ends the check as an input never heard
        return (
            BackgroundOp(
                self.session.runner,
                lambda progress: recorder.start(),  # no spool: a check is never kept
                label="Starting the level check",
                parent=self,
                sound_device=True,
            )
            .failure(lambda error: self._start_failed(recorder, error), dialog=True)
            .run()
        )

    def _listen(self, recorder: Recorder, seconds: float) -> None:
        """Keep the levels of the recorder's last `seconds` of blocks (with a second to spare), at its rate: a
        check's room before the voice would be dropped at 96 kHz by a bound sized for 48."""
        blocks = math.ceil((seconds + 1.0) * recorder.rate / recorder.blocksize)
        self.heard_levels = collections.deque(maxlen=blocks)

    def _level_check_progress(self, recorder: Recorder) -> None:
        """The check's line as the input wakes and the voice is heard; its end LEVEL_CHECK_S after the voice came,
        or when it never came (LEVEL_VOICE_WAIT_S of sound), or the input sends nothing (never woke within STALL_S
        more, or stopped)."""
        now = time.monotonic()
        state = recorder.input_state(now)
        if state == InputState.STALLED:
            self._end_level_check(report=True, why=f"{input_name(recorder)} stopped sending sound ({INPUT_LOST})")
        elif state == InputState.WAITING:
            if now - self.recording_since >= STALL_S + LEVEL_CHECK_S:
                self._end_level_check(report=True)
        elif self.voice.at is None:
            if recorder.recorded_s >= LEVEL_VOICE_WAIT_S:
                self._end_level_check(report=True)  # what was heard: no voice, nothing, or muted
            else:
                self.view.state_label.setText(LEVEL_LISTENING_TEXT.format(left=""))
        elif now - self.voice.at >= LEVEL_CHECK_S:
            self._end_level_check(report=True)
        else:
            left = max(1, math.ceil(LEVEL_CHECK_S - (now - self.voice.at)))  # 3, 2, 1: whole seconds still to come
            self.view.state_label.setText(LEVEL_LISTENING_TEXT.format(left=f" {left} s"))

    def _end_level_check(self, report: bool, why: str | None = None, said_end: bool = False) -> None:
        """End a level check (none: nothing happens): its stream closed on a thread of its own; with `report`, its
        verdict shown and said (`why`, when the input failed it); without, "Level check ended" shown, and said
        with `said_end` (L's end; another key says what it did instead)."""
        recorder = self.recorder
        if self.state != "listening" or recorder is None:
            return
        self.recorder, self.state = None, "idle"
        self.meter_timer.stop()
        self.heard_levels.extend(recorder.drain_levels())
        answered = recorder.first_block_at is not None or recorder.stream_open  # read before the close clears it
        _abort_in_background(recorder, "level-check-end")
        self.view.meter.reset()
        self._show_idle_line()
        if not report:
            self.view.set_status("Level check ended", said=None if said_end else "")
            return
        if why is None and recorder.take_begun:
            heard = [lv for lv in self.heard_levels if recorder.heard_at is None or lv.at >= recorder.heard_at]
            voice = [lv for lv in heard if lv.at >= self.voice.at] if self.voice.at is not None else heard
            # the room from every block heard; the voice's peak from the voice on (L's own click is no voice)
            verdict = level_verdict(
                [lv.rms_dbfs for lv in heard], [lv.peak_dbfs for lv in voice], voice_heard=self.voice.at is not None
            )
            words = verdict.words if verdict.band == "good" else f"{verdict.words}. L checks again"
        else:
            if why is None:
                why = f"no sound came from {input_name(recorder)}; {CHECK_THE_INPUT}" if answered else SERVER_SILENT
            words = f"Level not checked: {why}. L checks again"
        self.level_line = words
        self.view.set_status(words)

    def _show_idle_line(self) -> None:
        """The line above the take once nothing is recorded: the prompt's take, or nothing without a speaker."""
        self._show_take()
        if self.speaker is None:
            self.view.state_label.setText("")

    def _say_take_level(self) -> None:
        """L during a take: the level of its last seconds, said (the line under the buttons keeps the input's)."""
        recorder = self.recorder
        if recorder is None or not recorder.take_begun:
            self.view.say("The take has not begun: read once ● Recording shows")
            return
        since = max(time.monotonic() - LEVEL_WINDOW_S, recorder.heard_at or 0.0)
        recent = [lv for lv in self.heard_levels if lv.at >= since]
        if not recent:
            self.view.say(f"No sound has come from {input_name(recorder)} in the last {LEVEL_WINDOW_S:.0f} seconds")
            return
        within = f"in the last {LEVEL_WINDOW_S:.0f} seconds"
        self.view.say(level_verdict([lv.rms_dbfs for lv in recent], [lv.peak_dbfs for lv in recent], within).words)

    # -- playback ----------------------------------------------------------------------------------------

    def play_take(self) -> None:
        if self.state in ("starting", "recording"):  # played now, a loudspeaker's sound would be in the take
            self.view.set_status("Stop recording first (R)")
            return
        take = self.current_take
        if self.prepared is not None and self.shown_audio is not None:
            self._play(self.shown_audio)
        elif take is not None and take.id in self.take_audio:
            self._play(self.take_audio[take.id])
        elif take is not None and self.session is not None:

            def read(project: Project, progress) -> ClipAudio:
                from spokenbench.core.audio.io import decode_audio

                decoded = decode_audio(read_take_audio(project, take), f"take {take.id}")
                return prepare_clip(encode_wav(decoded.samples, decoded.rate), f"take {take.id}")

            QueryOp(self.session, read, label="Reading the take", parent=self, supersede="take-audio").success(
                lambda audio: (self.take_audio.__setitem__(take.id, audio), self._show_take(), self._play(audio))
            ).run()
        else:
            self.view.set_status("No take of this prompt yet: press R to record")

    def _play(self, audio: ClipAudio) -> None:
        self.play_requested_at = time.perf_counter()
        if self.player is None:  # say so beside what the status says (e.g. a cloned voice is ready), not instead
            current = self.view.status_label.text()
            if NO_DEVICE_FLASH not in current:
                self.view.set_status(f"{current} · {NO_DEVICE_FLASH}" if current else NO_DEVICE_FLASH, NO_DEVICE_FLASH)
            else:
                self.view.say(NO_DEVICE_FLASH)  # said again: the key would seem lost
            return
        request = self.player.play(audio.playback, "the take", chosen_output(self.window_))  # posts; never waits
        follow_play = getattr(self.window_, "follow_play", None)
        if follow_play is not None:  # a failure of the sound output is said in the status bar
            follow_play(request, "the take")

    # -- cloning -----------------------------------------------------------------------------------------

    def create_clone(self) -> JobOp | None:
        speaker = self.speaker
        if self.session is None or speaker is None:
            return None
        factory = self.clone_backend_factory
        self.view.set_status(f"Cloning the voice of {speaker.name} (loading the model can take a while)…")
        return (
            JobOp(
                self.session,
                lambda project, progress: create_cloned_voice(
                    project, speaker.name, backend_factory=factory, progress=progress
                ),
                kind="clone",
                changes={"cloned_voices"},
                label=f"Cloning the voice of {speaker.name}",
                parent=self,
                error_title="Cannot create the cloned voice",
            )
            .success(self._cloned)
            .failure(lambda error: self.view.set_status(f"No cloned voice: {error}"), dialog=True)
            .run()
        )

    def _cloned(self, voice: ClonedVoice) -> None:
        self.last_clone = voice
        self.view.set_status(
            f"Cloned voice of {voice.speaker} ready (from take {voice.take_id}); playing: “{voice.test_text}”"
        )
        BackgroundOp(self.session.runner, lambda progress: prepare_clip(voice.test_audio, "cloned voice test"), label="Preparing the test sentence", parent=self)\
            .success(self._play).run()  # fmt: skip

    # -- drawing -----------------------------------------------------------------------------------------

    def _show_speaker(self) -> None:
        view, speaker = self.view, self.speaker
        if speaker is None:
            view.speaker_label.setText("<b>Choose or add a speaker</b>")
            view.set_prompt(0, 0, "", "")
            view.progress_label.setText("")
            view.show_checks(None)
            self._show_clone_state()
            return
        view.speaker_label.setText(self._speaker_line(speaker))
        prompt = self.prompt
        view.set_prompt(
            self.prompt_index + 1, len(self.prompts), prompt.text if prompt else "", prompt.label if prompt else ""
        )
        self._show_clone_state()
        self._show_take()
        self._show_progress()

    def _show_verdict_tone(self, passed: bool) -> None:
        set_toned_sheet(self.view.state_label, f"font-weight:bold; color: ${'success' if passed else 'error'}")

    @staticmethod
    def _speaker_line(speaker) -> str:
        consent = (
            "consent given"
            if speaker.consent_in_force
            else f"<span style='color:{tone('error')}'>no consent: recording refused</span>"
        )
        return f"<b>{speaker.name}</b> · {speaker.language or '—'} · {speaker.accent or '—'} · {consent}"

    def changeEvent(self, event) -> None:
        """The desktop switched between light and dark while the app ran: the consent line takes the new tone."""
        super().changeEvent(event)
        if event.type() == QEvent.Type.PaletteChange and self.speaker is not None:
            self.view.speaker_label.setText(self._speaker_line(self.speaker))

    def _show_clone_state(self) -> None:
        """Create cloned voice needs consent and a take that passed every check."""
        speaker = self.speaker
        if speaker is None:
            self.view.set_clone_state(False, "Choose a speaker first")
        elif not speaker.consent_in_force:
            self.view.set_clone_state(False, f"{speaker.name} has not given consent (or withdrew it)")
        elif best_take(self.takes) is None:
            self.view.set_clone_state(
                False, f"Needs a take of {speaker.name} that passed every quality check: record one first"
            )
        else:
            self.view.set_clone_state(
                True, f"Clone {speaker.name}'s voice from their best passing take, then play a test sentence"
            )

    def _show_take(self) -> None:
        take = self.current_take
        if self.state != "idle":
            return
        if take is None:
            self.view.state_label.setText("Not recorded yet: press R and read the prompt")
            set_toned_sheet(self.view.state_label, "font-weight:bold;")
            self.view.show_checks(None)
            self.view.waveform.set_clip(None, "no take yet")
            return
        verdict = "passed every check" if take.passed else "failed a check: Backspace records it again"
        self.view.state_label.setText(f"Take {take.take}: {verdict}")
        self._show_verdict_tone(take.passed)
        self.view.show_checks(take.checks)
        audio = self.take_audio.get(take.id)
        self.view.waveform.set_clip(audio, "" if audio else "Space plays the take")

    def _show_progress(self) -> None:
        if self.speaker is None:
            return
        self.view.progress_label.setText(script_progress(self.prompts, self.takes).text)

    def hideEvent(self, event) -> None:
        """Leaving the page silences the take it played, ends a level check (its microphone would hear another
        page's clips, its verdict said where nobody reads it), and its keys wait for it no more."""
        self.recorder_wanted = False
        self._end_level_check(report=False)
        if self.player is not None:
            self.player.stop()
        super().hideEvent(event)

    def closeEvent(self, event) -> None:
        self._abort_recording()
        super().closeEvent(event)
