"""Settings: the annotator's name (stored with QSettings, recorded with every rating and review), the audio
output device, this annotator's rating keys (stored in the open project, per annotator), and API keys kept in
the OS keyring — never shown once stored, only "set" or "not set". "Test key" sends one tiny request (list
models) in a BackgroundOp: through the google-genai SDK for Gemini, an authenticated GET /models for the
OpenAI-compatible providers (OpenAI, NVIDIA, Mistral)."""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.request

from PySide6.QtCore import QSettings, QSize, Signal
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QFrame,
    QGridLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QScrollArea,
    QVBoxLayout,
    QWidget,
)

from spokenbench.app.app_settings import AppSettings
from spokenbench.app.operations import BackgroundOp, OperationRunner, ProjectSession, QueryOp, WriteOp
from spokenbench.core.foundation.credentials import KEYRING_SERVICE, PROVIDER_VARIABLES, api_key
from spokenbench.core.foundation.errors import SpokenBenchError
from spokenbench.core.qc.rating_session import keymap_for, save_keymap, validate_keymap
from spokenbench.widgets.elided import ElidedComboBox
from spokenbench.widgets.keymap_editor import KeymapEditor
from spokenbench.widgets.screen import fitting_size
from spokenbench.widgets.screen_reader import no_tab_stop
from spokenbench.widgets.tones import set_toned_sheet

ANNOTATOR_KEY = "annotator/name"
AUDIO_OUTPUT_KEY = "audio/output_device"
RECENT_KEY = "projects/recent"
WINDOW_GEOMETRY_KEY = "window/geometry"  # [x, y, width, height] of the normal (not maximized) window
WINDOW_MAXIMIZED_KEY = "window/maximized"
WINDOW_PAGE_KEY = "window/page"  # the sidebar page shown last, restored when the last project is reopened
# where "Test key" asks: the providers' OpenAI-compatible endpoints (resources/models.json has the same)
TEST_BASE_URLS = {
    "gemini": "https://generativelanguage.googleapis.com",
    "openai": "https://api.openai.com/v1",
    "nvidia": "https://integrate.api.nvidia.com/v1",
    "mistral": "https://api.mistral.ai/v1",
}
TEST_TIMEOUT_S = 10.0


def app_settings() -> QSettings:
    return QSettings("SpokenBench", "SpokenBench Studio")


def annotator_name(settings: AppSettings) -> str:
    return str(settings.value(ANNOTATOR_KEY, "") or "").strip()


def audio_outputs() -> list[tuple[str, str]] | None:
    """(name, label) of every audio output PortAudio sees; empty without PortAudio or devices. The name is what
    Settings stores and the player opens. None while the start's sound check has not answered: listing them then
    would wait for a sound server that may never answer."""
    from spokenbench.app.audio import sound_check
    from spokenbench.core.audio.playback import output_devices

    if not sound_check().answered_at_start():
        return None
    return [(device.name, device.name) for device in output_devices()]


def key_is_set(variable: str) -> bool:
    """Whether a key is available (environment or keyring); reads the keyring, so call it off the UI thread."""
    if os.environ.get(variable, "").strip():
        return True
    try:
        import keyring

        return bool(keyring.get_password(KEYRING_SERVICE, variable))
    except Exception:  # no usable keyring backend: treated as not set
        return False


def store_key(variable: str, value: str) -> None:
    try:
        import keyring

        keyring.set_password(KEYRING_SERVICE, variable, value)
    except Exception as error:
        raise SpokenBenchError(f"the OS keyring refused to store {variable}: {error}") from error


def test_key(provider: str, base_url: str, key: str | None = None) -> str:
    """One tiny authenticated request (GET /models). Returns what it found; raises SpokenBenchError when the key
    is rejected or the service cannot be reached. Runs off the UI thread."""
    key = key or api_key(provider)
    if provider == "gemini":
        return _test_gemini_key(base_url, key)
    request = urllib.request.Request(
        base_url.rstrip("/") + "/models", headers={"Authorization": f"Bearer {key}", "Accept": "application/json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=TEST_TIMEOUT_S) as response:
            body = json.loads(response.read() or b"{}")
    except urllib.error.HTTPError as error:
        if error.code in (401, 403):
            raise SpokenBenchError(f"{provider}: the key was rejected (HTTP {error.code})") from None
        raise SpokenBenchError(f"{provider}: HTTP {error.code} from {base_url}") from None
    except (urllib.error.URLError, TimeoutError, OSError) as error:
        raise SpokenBenchError(f"{provider}: cannot reach {base_url} ({error})") from None
    models = body.get("data") if isinstance(body, dict) else None
    return f"{provider}: key accepted" + (f" ({len(models)} models)" if isinstance(models, list) else "")


def _test_gemini_key(base_url: str, key: str) -> str:
    """List one page of models through the SDK (GET /v1beta/models): a rejected key is a 400 or 403 there."""
    from google import genai
    from google.genai import errors, types

    options = types.HttpOptions(base_url=base_url, timeout=int(TEST_TIMEOUT_S * 1000))
    client = genai.Client(api_key=key, http_options=options)
    try:
        pager = client.models.list(config={"page_size": 5})
        count = len(list(pager.page))
    except errors.APIError as error:
        if error.code in (400, 401, 403):
            raise SpokenBenchError(f"gemini: the key was rejected (HTTP {error.code}: {error.message})") from None
        raise SpokenBenchError(f"gemini: HTTP {error.code} from {base_url}") from None
    except Exception as error:  # transport errors (httpx) and timeouts
        raise SpokenBenchError(f"gemini: cannot reach {base_url} ({type(error).__name__})") from None
    return f"gemini: key accepted ({count} models on the first page)"


class SettingsDialog(QDialog):
    keymap_saved = Signal(object)  # the annotator's new key map (action -> keys), once it is committed

    def __init__(
        self,
        settings: AppSettings,
        runner: OperationRunner,
        parent: QWidget | None = None,
        test_base_urls: dict[str, str] | None = None,
        session: ProjectSession | None = None,
        annotator: str | None = None,
    ):
        super().__init__(parent)
        self.setWindowTitle("Settings")
        self.settings = settings
        self.runner = runner
        self.session = session
        self.keymap_annotator = annotator or annotator_name(settings)
        self.test_base_urls = {**TEST_BASE_URLS, **(test_base_urls or {})}
        self.operations: list = []

        self.annotator_edit = QLineEdit(annotator_name(settings))
        self.annotator_edit.setPlaceholderText("your name, recorded with every rating and review")
        self.device_box = ElidedComboBox()
        outputs = audio_outputs()
        stored_output = str(settings.value(AUDIO_OUTPUT_KEY, "") or "")
        if outputs is None:  # the sound server has not answered: the choice kept, the others listed once it does
            self.device_box.addItem("System default", "")
            if stored_output:
                self.device_box.addItem(stored_output, stored_output)
                self.device_box.setCurrentIndex(1)
            self.device_box.setToolTip("The sound server has not answered yet: its outputs are listed once it does.")
        elif outputs:
            self.device_box.addItem("System default", "")
            for device_id, description in outputs:
                self.device_box.addItem(description, device_id)
            chosen = self.device_box.findData(settings.value(AUDIO_OUTPUT_KEY, ""))
            self.device_box.setCurrentIndex(max(0, chosen))
        else:
            self.device_box.addItem("No audio output device found")
            self.device_box.setEnabled(False)
        you = QGroupBox("You and your audio")
        form = QFormLayout(you)
        form.addRow("Annotator name:", self.annotator_edit)
        form.addRow("Audio output:", self.device_box)

        keys = QGroupBox("API keys (stored in the OS keyring, never in a project)")
        grid = QGridLayout(keys)
        self.key_status: dict[str, QLabel] = {}
        self.key_edits: dict[str, QLineEdit] = {}
        self.test_buttons: dict[str, QPushButton] = {}
        self.test_results: dict[str, QLabel] = {}
        for row, (provider, variable) in enumerate(PROVIDER_VARIABLES.items()):
            status = QLabel("…")
            edit = QLineEdit()
            edit.setEchoMode(QLineEdit.EchoMode.Password)
            edit.setPlaceholderText("paste a new key")
            save = QPushButton("Save key")
            save.clicked.connect(lambda _=False, p=provider: self.save_key(p))
            test = QPushButton("Test key")
            test.clicked.connect(lambda _=False, p=provider: self.test_key(p))
            if provider not in self.test_base_urls:
                test.setEnabled(False)
                test.setToolTip("Testing is implemented for the OpenAI-compatible providers only, for now.")
            result = QLabel()
            result.setWordWrap(True)
            grid.addWidget(QLabel(f"<b>{provider}</b> <small>{variable}</small>"), row * 2, 0)
            grid.addWidget(status, row * 2, 1)
            grid.addWidget(edit, row * 2, 2)
            grid.addWidget(save, row * 2, 3)
            grid.addWidget(test, row * 2, 4)
            grid.addWidget(result, row * 2 + 1, 1, 1, 4)
            self.key_status[provider], self.key_edits[provider] = status, edit
            self.test_buttons[provider], self.test_results[provider] = test, result
        grid.setColumnStretch(2, 1)

        rating_keys = self._rating_keys_box()

        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Save | QDialogButtonBox.StandardButton.Cancel)
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        body = QWidget()  # scrolls on a short screen; Save and Cancel stay in view
        body_layout = QVBoxLayout(body)
        body_layout.setContentsMargins(0, 0, 0, 0)
        body_layout.addWidget(you)
        body_layout.addWidget(rating_keys)
        body_layout.addWidget(keys)
        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QFrame.Shape.NoFrame)
        scroll.setWidget(body)
        no_tab_stop(scroll)  # the keys start in the name field, not on the scroll area
        scroll.setMinimumHeight(min(body.sizeHint().height(), 360))
        layout = QVBoxLayout(self)
        layout.addWidget(scroll, 1)
        layout.addWidget(buttons)
        wanted = QSize(760, body.sizeHint().height() + buttons.sizeHint().height() + 30)
        self.resize(fitting_size(self, wanted, margin=60))  # a title bar and a panel on a 720-pixel screen
        self.refresh_key_status()
        self.load_keymap()

    # -- rating keys -----------------------------------------------------------------------------------
    def _rating_keys_box(self) -> QGroupBox:
        box = QGroupBox("Rating keys")
        self.keymap_editor = KeymapEditor()
        self.keymap_editor.setMinimumHeight(200)
        self.keymap_error = QLabel()
        self.keymap_error.setWordWrap(True)
        set_toned_sheet(self.keymap_error, "color: $error")
        self.keymap_loaded = False
        restore = QPushButton("Restore defaults")
        restore.clicked.connect(self.keymap_editor.restore_defaults)
        column = QVBoxLayout(box)
        if self.session is None or not self.keymap_annotator:
            why = "open a project" if self.session is None else "set your annotator name above and reopen Settings"
            column.addWidget(QLabel(f"Keys are stored per annotator in each project: {why} to change them."))
            self.keymap_editor.setEnabled(False)
            restore.setEnabled(False)
        else:
            column.addWidget(
                QLabel(f"For <b>{self.keymap_annotator}</b> in this project. Several keys: separate with commas.")
            )
        column.addWidget(self.keymap_editor)
        row = QHBoxLayout()
        row.addWidget(self.keymap_error, 1)
        row.addWidget(restore)
        column.addLayout(row)
        return box

    def load_keymap(self) -> QueryOp | None:
        if self.session is None or not self.keymap_annotator:
            return None
        annotator = self.keymap_annotator
        operation = (
            QueryOp(
                self.session,
                lambda project, progress: keymap_for(project.conn, annotator),
                label="Reading the rating keys",
                parent=self,
                supersede="settings-keymap",
            )
            .success(self._show_keymap)
            .failure(lambda error: self.keymap_error.setText(str(error)))
        )
        self.operations.append(operation)
        return operation.run()

    def _show_keymap(self, keymap: dict) -> None:
        self.keymap_editor.set_keymap(keymap)
        self.keymap_loaded = True

    def save_keymap(self) -> bool:
        """Validate the edited keys here (a mistake keeps the dialog open and says what is wrong), then commit
        them through the writer. False when they are invalid."""
        if not self.keymap_loaded or self.session is None:
            return True
        edited = self.keymap_editor.keymap()
        try:
            validate_keymap(edited)
        except SpokenBenchError as error:
            self.keymap_error.setText(str(error))
            return False
        annotator = self.keymap_annotator
        owner = self.parent() or self
        operation = (
            WriteOp(
                self.session,
                lambda project: save_keymap(project, annotator, edited),
                changes=set(),
                label="Saving the rating keys",
                parent=owner,
                error_title="Cannot save the rating keys",
            )
            .success(self.keymap_saved.emit)
            .run()
        )
        self.operations.append(operation)
        return True

    # -- keys ----------------------------------------------------------------------------------------
    def refresh_key_status(self):
        operation = BackgroundOp(
            self.runner,
            lambda progress: {p: key_is_set(v) for p, v in PROVIDER_VARIABLES.items()},
            label="Reading API key status",
            parent=self,
            supersede="settings-key-status",
        ).success(self._show_key_status)
        self.operations.append(operation)
        return operation.run()

    def _show_key_status(self, status: dict[str, bool]) -> None:
        for provider, is_set in status.items():
            self.key_status[provider].setText("set" if is_set else "not set")

    def save_key(self, provider: str):
        value = self.key_edits[provider].text().strip()
        if not value:
            self.test_results[provider].setText("Paste a key first.")
            return None
        self.key_edits[provider].clear()  # the key leaves the screen at once
        variable = PROVIDER_VARIABLES[provider]
        operation = (
            BackgroundOp(
                self.runner,
                lambda progress: store_key(variable, value),
                label=f"Storing the {provider} key",
                parent=self,
                error_title="Cannot store the key",
            )
            .success(lambda _r: (self.test_results[provider].setText("Key stored."), self.refresh_key_status()))
            .run()
        )
        self.operations.append(operation)
        return operation

    def test_key(self, provider: str):
        result = self.test_results[provider]
        if provider not in self.test_base_urls:
            result.setText(f"Testing a {provider} key is not implemented yet (only OpenAI-compatible providers).")
            return None
        typed = self.key_edits[provider].text().strip() or None
        base_url = self.test_base_urls[provider]
        result.setText("Testing…")
        self.test_buttons[provider].setEnabled(False)
        operation = (
            BackgroundOp(
                self.runner,
                lambda progress: test_key(provider, base_url, typed),
                label=f"Testing the {provider} key",
                parent=self,
            )
            .success(result.setText)
            .failure(lambda error: result.setText(f"Failed: {error}"))
        )
        operation.finished.connect(lambda: self.test_buttons[provider].setEnabled(True))
        self.operations.append(operation)
        return operation.run()

    # -- saving --------------------------------------------------------------------------------------
    def accept(self) -> None:
        if not self.save_keymap():
            return
        self.settings.setValue(ANNOTATOR_KEY, self.annotator_edit.text().strip())
        if self.device_box.isEnabled():
            self.settings.setValue(AUDIO_OUTPUT_KEY, self.device_box.currentData())
        super().accept()
