"""Take the README's screenshots of the desktop app on the offline demo project, under a real X server:

    xvfb-run -a -s "-screen 0 1400x900x24" python docs/screenshots/capture.py [--only NAME ...]
    xvfb-run -a -s "-screen 0 1280x720x24" python docs/screenshots/capture.py --size 1280x720 [--only NAME ...]

(the Korean and Chinese text needs CJK fonts: Debian `apt-get install fonts-nanum fonts-wqy-microhei`)

Each screen is driven as a user would (pages from the sidebar, the rating screen's actions, the recorder fed by
the project's fake input stream) and grabbed from the window itself at 1400×900 (or --size, a laptop's 1280×720:
then written as <name>-1280x720.png), so what is kept is what a user sees; the tour shots have the published layer
on. Every shot waits for the state it shows (a clip drawn, a take checked, a pack saved), not for a fixed time.
The demo is left as built (its two demo annotators' ratings, the 53-clip queue demo-qc) until the last shots,
which start runs: so the sidebar's counts are the same in every shot before them. Writes docs/screenshots/<name>.png
and prints any table cell whose text does not fit its column."""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from PySide6.QtCore import QSettings, Qt
from PySide6.QtWidgets import QApplication, QSplitter, QTableWidget

from spokenbench.app.audio import playback_problem, recording_problem
from spokenbench.app.main_window import MainWindow
from spokenbench.app.qt_refcounts import collect_garbage_at_safe_points
from spokenbench.app.settings_dialog import ANNOTATOR_KEY
from spokenbench.core.audio.io import decode_audio
from spokenbench.core.demo.project import build_demo
from spokenbench.core.qc.demo import DEMO_QUEUE_PER_LANGUAGE
from spokenbench.core.qc.packs import create_pack
from spokenbench.core.qc.ratings import rating_results
from spokenbench.core.recording.recorder import InputDevice, fake_stream_factory
from spokenbench.core.recording.speakers import add_speaker, give_consent
from spokenbench.core.store import opened
from spokenbench.core.store.summary import item_detail
from spokenbench.widgets.metric_panels import BackgroundCanvas

OUT = Path(__file__).resolve().parent
WIDTH, HEIGHT = 1400, 900  # every window shot (--size changes it); the Xvfb screen is this size
SUFFIX = ""  # added to each file name at another size than 1400×900
QUEUE = "demo-qc"
SPEAKER = "Mina"


def wait_until(app, condition, timeout_s: float = 30.0, what: str = "the screen") -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what} did not get ready in {timeout_s:.0f} s")
        app.processEvents()
        time.sleep(0.01)


def wait_steady(app, condition, hold_s: float, timeout_s: float = 30.0, what: str = "the screen") -> None:
    """Wait until `condition` has held for `hold_s` without a break (a state something may still leave)."""
    deadline = time.monotonic() + timeout_s
    since = None
    while True:
        if condition():
            since = since or time.monotonic()
            if time.monotonic() - since >= hold_s:
                return
        else:
            since = None
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what} did not stay ready for {hold_s} s")
        app.processEvents()
        time.sleep(0.01)


def settle(app, seconds: float = 0.3) -> None:
    """Let queued paints and layouts run (after the state wanted is reached, never instead of waiting for it)."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        app.processEvents()
        time.sleep(0.01)


def cut_cells(table: QTableWidget) -> list[str]:
    """Cells of the visible part of `table` whose text is wider than their column (drawn elided)."""
    metrics, cut = table.fontMetrics(), []
    viewport = table.viewport().rect()
    for row in range(table.rowCount()):
        if not table.visualRect(table.model().index(row, 0)).intersects(viewport):
            continue
        for column in range(table.columnCount()):
            item = table.item(row, column)
            if item is None or not item.text() or table.isColumnHidden(column):
                continue
            if metrics.horizontalAdvance(item.text()) + 6 > table.columnWidth(column):  # the delegate's margins
                header = table.horizontalHeaderItem(column)
                cut.append(f"row {row + 1}, {header.text() if header else column}: {item.text()[:60]!r}")
    return cut


def grab(widget, name: str, tables: tuple[QTableWidget, ...] = ()) -> None:
    if widget.isWindow() and widget.inherits("QMainWindow") and (widget.width(), widget.height()) != (WIDTH, HEIGHT):
        raise RuntimeError(f"{name}: the window is {widget.width()}×{widget.height()}, not {WIDTH}×{HEIGHT}")
    path = OUT / f"{name}{SUFFIX}.png"
    for canvas in widget.findChildren(BackgroundCanvas):  # figures drawn off the UI thread: shown whole
        canvas.finish()
    widget.grab().save(str(path))
    print(f"wrote {path.relative_to(OUT.parent.parent)}")
    for table in tables:
        for cell in cut_cells(table):
            print(f"  {name}: text cut in {table.objectName() or type(table).__name__} {cell}")


def open_page(window, key: str):
    """The page `key`, shown; an error saying why when it could not be loaded (it is a placeholder then)."""
    window.show_page(key)
    wait_until(QApplication.instance(), lambda: not window.page_opening(key), 60, f"the {key} page's module")
    shown = window.page_widgets[key]
    if type(shown).__name__ == "PlaceholderPage":
        raise RuntimeError(f"the {key} page did not load: {shown.message.text()}")
    return shown


def keep_size(app, window) -> None:
    """Back to 1400×900 after something widened the window (the tour's dock adds its width, up to the screen's)."""
    window.resize(WIDTH, HEIGHT)
    minimum = window.minimumSizeHint()
    if minimum.width() > WIDTH or minimum.height() > HEIGHT:
        print(f"  the window cannot be {WIDTH}×{HEIGHT}: its minimum is {minimum.width()}×{minimum.height()}")
    wait_until(app, lambda: (window.width(), window.height()) == (WIDTH, HEIGHT), 5, "the window's size")


def show_jobs_dock(app, window, height: int) -> None:
    """The jobs panel open at `height`, or as tall as the window's 900 px allow beside the page's minimum."""
    dock = window.jobs_dock
    dock.show()
    window.resizeDocks([dock], [height], Qt.Orientation.Vertical)
    settle(app, 0.2)
    if window.height() > HEIGHT:
        tallest = max(window.page_widgets.items(), key=lambda kv: kv[1].minimumSizeHint().height())
        print(
            f"  with the jobs panel at {height} px the window is {window.height()} px tall; the tallest page "
            f"minimum: {tallest[0]} ({tallest[1].minimumSizeHint().height()} px)"
        )
        window.resizeDocks([dock], [max(120, dock.height() - (window.height() - HEIGHT))], Qt.Orientation.Vertical)
    keep_size(app, window)


def roomy_item_detail(window) -> None:
    """The item list shorter and the item's question narrower, so the detail tabs get the room."""
    panel = window.items_panel
    outer = panel.findChild(QSplitter, options=Qt.FindChildOption.FindDirectChildrenOnly)
    outer.setSizes([300, 520])
    inner = panel.detail.findChild(QSplitter, options=Qt.FindChildOption.FindDirectChildrenOnly)
    inner.setSizes([300, 2000])


def clip_line_length(clip: dict) -> int:
    return sum(len(t["asr"]) + len(t["text"]) + 3 for t in clip["transcripts"])


def demo_choices(path: Path) -> dict:
    """What the shots show, chosen from the demo's data rather than by position: the item whose clips' transcript
    lines are shortest (they fit the Clips tab), a disagreement of the two demo annotators on a clip with
    transcripts and a WER, and a question clip in the speaker's language to stand for the speaker's voice."""
    with opened(path) as project:
        conn = project.conn
        item_ids = [row[0] for row in conn.execute("SELECT id FROM items ORDER BY id")]
        details = {item_id: item_detail(conn, item_id) for item_id in item_ids}
        transcribed = {
            item_id: detail
            for item_id, detail in details.items()
            if detail["clips"] and all(c["transcripts"] and c["error_rate"] is not None for c in detail["clips"])
        }
        browsed = min(transcribed, key=lambda i: max(clip_line_length(c) for c in transcribed[i]["clips"]))
        clips = {c["id"]: c for detail in transcribed.values() for c in detail["clips"]}
        disagreed = [d["clip_id"] for d in rating_results(conn, QUEUE)["disagreements"] if d["clip_id"] in clips]
        if not disagreed:
            raise RuntimeError("the demo has no disagreement on a transcribed clip")
        disagreed.sort(key=lambda clip_id: clip_line_length(clips[clip_id]))
        voice_item, sha, fmt = conn.execute(
            "SELECT c.item_id, c.sha256, c.audio_format FROM clips c JOIN items i ON i.id = c.item_id WHERE c.part = 'question' "
            "AND c.language = 'ko' AND c.sha256 IS NOT NULL ORDER BY c.item_id, c.id LIMIT 1"
        ).fetchone()
        voice = decode_audio(project.audio.read_bytes(sha, fmt), "the speaker's voice")
    return {"browsed_item": browsed, "disagreed_clip": disagreed[0], "voice": voice, "voice_item": voice_item}


@contextlib.contextmanager
def batch_stub():
    """The loopback batch stub of the tests (the official SDKs talk to it as to the providers; no key, no
    network), with the Evaluate page's preset models sent to it."""
    import dataclasses

    sys.path.insert(0, str(OUT.parent.parent / "tests" / "core" / "evaluation"))
    from batch_stub import BatchStub

    from spokenbench.core.evaluation import launcher

    os.environ.setdefault("OPENAI_API_KEY", "sk-screenshot-0123456789abcdef")
    os.environ.setdefault("GEMINI_API_KEY", "AIzaScreenshotKey0123456789abcdefghij")
    real = launcher.settings_from_form

    def to_stub(form):
        settings = real(form)
        if settings.model.startswith("openai:"):
            return dataclasses.replace(settings, base_url=stub.openai_url)
        if settings.model.startswith("gemini:"):
            return dataclasses.replace(settings, base_url=stub.gemini_url)
        return settings

    with BatchStub() as stub:
        launcher.settings_from_form = to_stub
        try:
            yield stub
        finally:
            launcher.settings_from_form = real


def prepare_run(app, evaluate, model: str, way: str, limit: str) -> None:
    """The Evaluate page's form filled for a text run of `model` (the demo assembles no audio), then prepared."""
    view = evaluate.view
    view.select_model(model)
    view.mode_box.setCurrentIndex(view.mode_box.findData("text"))
    view.limit_edit.setText(limit)
    view.formEdited.emit()
    view.set_run_way(way)
    evaluate.prepare()
    wait_until(app, lambda: evaluate.prepared is not None or "Cannot" in view.plan_text.toPlainText(), 60)
    if evaluate.prepared is None:
        raise RuntimeError(view.plan_text.toPlainText())


def launch_batch(app, evaluate) -> None:
    """Start (the prepared batch submit or batch file) and wait until it has ended well."""
    evaluate.view.start_button.click()
    wait_until(app, lambda: evaluate.last_batch is not None and not evaluate.last_batch.is_running, 120)
    if evaluate.last_batch.status != "succeeded":
        raise RuntimeError(f"{evaluate.last_batch.label}: {evaluate.last_batch.error}")


def capture_batches(app, window, tmp: Path) -> None:
    """Two provider batches submitted from the Evaluate page to the batch stub, the Gemini one finished and
    collected, the OpenAI one running, and a batch file exported for vLLM; then a Gemini run prepared as a batch."""
    evaluate = open_page(window, "evaluate")
    view = evaluate.view
    controller = window.jobs.batches
    settle(app, 1.0)
    with batch_stub():
        prepare_run(app, evaluate, "gemini:gemini-2.5-flash", "batch", "12")
        launch_batch(app, evaluate)
        for _ in range(4):  # PENDING → RUNNING → SUCCEEDED, then collected by the panel itself
            wait_until(app, lambda: controller.last_read is not None and not controller.last_read.is_running)
            controller.refresh(remote=True)
            settle(app, 0.3)
        wait_until(app, lambda: any(entry["state"] == "collected" for entry in controller.entries), timeout_s=60)
        prepare_run(app, evaluate, "openai:gpt-audio-mini", "batch", "20")
        launch_batch(app, evaluate)
        settle(app, 1.0)
        view.select_model("custom")
        view.mode_box.setCurrentIndex(view.mode_box.findData("text"))
        view.custom_url.setText("http://127.0.0.1:8000/v1")
        view.custom_model.setText("google/gemma-3n-E4B-it")
        view.custom_key.setText("")
        view.limit_edit.setText("")
        view.formEdited.emit()
        view.set_run_way("file")
        evaluate.prepare()
        wait_until(app, lambda: evaluate.prepared is not None, timeout_s=60)
        view.ask_batch_file_path = lambda suggested: str(tmp / "gemma-3n-requests.jsonl")
        launch_batch(app, evaluate)
        wait_until(app, lambda: len(controller.entries) == 3 and not controller.last_read.is_running, timeout_s=60)
        prepare_run(app, evaluate, "gemini:gemini-2.5-flash-lite", "batch", "")
        show_jobs_dock(app, window, 280)
        settle(app, 0.5)  # the dock's new height painted
        grab(window, "studio-batches")
        window.jobs_dock.hide()


def capture_batch_not_sent(app, window) -> None:
    """A submit that raced a collect (issue 28, round 16): run A's batch of 6 is submitted from the page; run B,
    the same plan, finds all 6 waiting in it, and while B's submit holds the run, `spokenbench batches --collect`
    (a real process) stores A's batch, 2 of whose requests the provider failed. The page then shows B's summary:
    4 filled from the cache, 2 neither sent nor waiting. B's submit runs here, not in the page's job process,
    only so that the collect can be started at the racing point (the hook of tests/core/evaluation/
    test_collect_fills.py); its real summary is then shown by the page's own handler."""
    import dataclasses
    import subprocess

    from spokenbench.core.evaluation import batches, launcher

    evaluate = open_page(window, "evaluate")
    window.jobs.batches.auto_collect = False  # the collect comes from the other process, at the racing point
    settle(app, 1.0)
    with batch_stub() as stub:
        prepare_run(app, evaluate, "openai:gpt-audio-mini", "batch", "6")
        launch_batch(app, evaluate)
        first = evaluate.last_batch.result.run_id
        with stub.state.lock:
            keys = [key for batch in stub.state.batches.values() for key, _body in batch["lines"]]
        stub.state.fail_keys = set(keys[:2])
        stub.state.instant = True  # finished when the collect asks
        drop_held, collects = batches._drop_held, []

        def drop_held_then_collect(*args):
            kept = drop_held(*args)
            if not collects:
                command = ["spokenbench", "batches", str(window.project_path), "--collect", "--json"]
                collects.append(subprocess.run(command, capture_output=True, text=True, timeout=120))
            return kept

        batches._drop_held = drop_held_then_collect
        try:
            with opened(window.project_path) as project:
                settings = launcher.settings_for_run(project.conn, first)
                again = dataclasses.replace(settings, run_id=None, name="the same plan again")
                submission = batches.submit_batches_for_settings(project, again, "openai")
        finally:
            batches._drop_held = drop_held
        if not submission.not_sent:
            raise RuntimeError(f"the race was not met: {collects} {submission}")
        evaluate._batch_submitted(submission)
        evaluate.view.plan_text.setFocus()
        settle(app, 0.5)
        grab(window, "studio-batch-not-sent")


def capture_rating(app, window, want) -> None:
    """The Rating page (issue 11): the queue list, the Create-queue dialog's WER-interval strata, the session on
    its first clip, the key help, and a clip with a WER above 0 with its transcripts (T) over the spectrogram.
    Nothing is rated: the sidebar keeps the demo's counts. Actions go by name, whatever keys they are mapped to."""
    rating = open_page(window, "rating")
    queues = rating.queue_list
    wait_until(app, lambda: queues.table.rowCount() > 0 and queues.selected_queue() == QUEUE, what="the queue list")
    if want("studio-rating-queues"):
        settle(app)
        grab(window, "studio-rating-queues", (queues.table,))
    if want("studio-rating-create-queue"):
        dialog = rating.create_queue()
        wait_until(app, lambda: dialog.filter_boxes["language"].count() > 1, what="the queue options")
        dialog.name_edit.setText("qc-round-2")
        dialog.per_bin.setValue(DEMO_QUEUE_PER_LANGUAGE)  # as demo-qc was drawn, with another seed
        dialog.seed.setValue(1)
        dialog.request_preview()
        wait_until(app, lambda: dialog.strata.rowCount() > 0 and dialog.create_button.isEnabled(), what="the strata")
        needed = dialog.strata.verticalHeader().length() + dialog.strata.horizontalHeader().height()
        dialog.resize(900, dialog.height() + max(0, needed + 4 - dialog.strata.viewport().height()))
        settle(app)
        grab(dialog, "studio-rating-create-queue", (dialog.strata,))
        dialog.reject()
    rating.open_queue(QUEUE)
    view = rating.view

    def clip_drawn() -> bool:
        return rating.rating is not None and rating.idle and rating.clip_audio is not None

    try:
        wait_until(app, clip_drawn, 60, "the first clip")
    except TimeoutError:
        print(
            f"  rating: session {rating.rating}, busy {rating.busy}, audio {rating.clip_audio}, "
            f"status {view.status_label.text()!r}, page {rating.stack.currentWidget() is view}"
        )
        raise
    if want("studio-rating"):
        settle(app)
        grab(window, "studio-rating")
    if want("studio-rating-help"):
        rating.do_action("help")
        wait_until(app, view.help_overlay.isVisible, what="the key help")
        settle(app)
        grab(window, "studio-rating-help")
        rating.do_action("help")
        wait_until(app, lambda: not view.help_overlay.isVisible(), what="the key help closing")
    if want("studio-rating-spectrogram"):
        for _ in range(30):  # forward (nothing rated) to a clip the two systems heard with errors
            current = rating.rating.current
            if current.transcripts and current.wer:
                break
            rating.do_action("next")
            wait_until(app, lambda c=current: clip_drawn() and rating.rating.current.clip_id != c.clip_id)
        else:
            raise RuntimeError("no clip with transcripts and a WER above 0 in the first 30 of the queue")
        rating.do_action("toggle_transcripts")
        rating.do_action("toggle_spectrogram")
        wait_until(
            app,
            lambda: (
                view.transcripts_label.isVisible() and view.waveform.show_spectrogram and view.waveform.has_spectrogram
            ),
            what="the transcripts and the spectrogram",
        )
        settle(app)
        grab(window, "studio-rating-spectrogram")
        rating.do_action("toggle_transcripts")
        rating.do_action("toggle_spectrogram")
    rating.show_queues()


def capture_speakers(app, window, choices: dict) -> None:
    """A consented speaker with one take recorded through the project's fake input stream (the demo's own Korean
    question clip as the voice, framed by silence) and its quality checks."""
    speakers = open_page(window, "speakers")
    wait_until(app, lambda: speakers.recording_problem != "Looking for input devices…", what="the device search")
    voice = choices["voice"]
    silence = np.zeros(int(0.4 * voice.rate), dtype=np.float32)
    signal = np.concatenate([silence, np.asarray(voice.samples, dtype=np.float32).reshape(-1), silence])
    microphone = InputDevice(None, "Fake microphone", 1, voice.rate, True)
    speakers.device_lister = lambda: [microphone]
    speakers.stream_factory = fake_stream_factory(signal, then_silence=False, noise_dbfs=-75)
    speakers.find_devices()
    wait_until(app, lambda: bool(speakers.devices) and speakers.recording_problem is None, what="the fake microphone")
    speakers.select_speaker(SPEAKER)
    wait_until(app, lambda: speakers.speaker is not None and bool(speakers.prompts), what="the speaker's script")
    if speakers.prompt.item_id != choices["voice_item"]:
        print(
            f"  studio-speakers: the voice is item {choices['voice_item']}'s, the prompt item {speakers.prompt.item_id}'s"
        )
    table = speakers.list_view.table  # the speaker list wide enough for all its columns
    splitter = speakers.findChild(QSplitter, options=Qt.FindChildOption.FindDirectChildrenOnly)
    splitter.setSizes([table.horizontalHeader().length() + 2 * table.frameWidth() + 2, WIDTH])
    speakers.do_action("record")
    wait_until(
        app,
        lambda: speakers.state == "recording" and speakers.recorder.blocks * speakers.recorder.blocksize >= len(signal),
        what="the take",
    )
    speakers.do_action("record")
    wait_until(app, lambda: speakers.state == "idle" and len(speakers.takes) == 1, what="the checked take")
    settle(app)
    grab(window, "studio-speakers", (table,))


def capture_evaluate(app, window, want) -> None:
    """A simulated run going (its rate and time left) with a second run queued behind it, after a short run that
    finished; then the jobs panel with them. The simulated listener answers thousands of requests a second, so
    its answers are paced with SPOKENBENCH_SIMULATED_DELAY_S (a pause before each answer, in the run's job
    process): the rate and time left shown are then those of a steady listener."""
    from spokenbench.core.evaluation.simulated import ANSWER_DELAY_ENV

    evaluate = open_page(window, "evaluate")
    view = evaluate.view
    wait_until(app, lambda: evaluate.last_read is not None and not evaluate.last_read.is_running, what="the runs")

    def prepare(model: str, mode: str, limit: str) -> int:
        view.select_model(model)
        view.mode_box.setCurrentIndex(view.mode_box.findData(mode))
        view.limit_edit.setText(limit)
        view.set_run_way("online")
        view.formEdited.emit()
        evaluate.prepare()
        wait_until(app, lambda: evaluate.prepared is not None or "Cannot" in view.plan_text.toPlainText(), 60)
        if evaluate.prepared is None:
            raise RuntimeError(view.plan_text.toPlainText())
        return evaluate.prepared.request_count

    prepare("simulated:steady", "text", "12")
    view.start_button.click()
    wait_until(app, lambda: evaluate.current is None and len(evaluate.finished_ops) == 1, 60, "the short run")
    os.environ[ANSWER_DELAY_ENV] = "0.1"  # a tenth of a second per answer, in the run's job process
    total = prepare("simulated:order-sensitive", "audio", "")
    if total < 400:
        raise RuntimeError(f"the paced run has only {total} requests")
    view.start_button.click()
    wait_until(app, lambda: evaluate.current is not None and evaluate.current.run_id is not None, 60, "the paced run")
    running = evaluate.current.run_id
    del os.environ[ANSWER_DELAY_ENV]  # the paced run's process has it; the queued run answers at once
    prepare("simulated:accent-sensitive", "text", "24")
    view.start_button.click()  # "Add to queue"
    wait_until(app, lambda: len(evaluate.queue) == 1, what="the queued run")
    table = view.runs_table

    def running_row() -> int | None:
        rows = (r for r in range(table.rowCount()) if table.item(r, 0) and table.item(r, 0).text() == str(running))
        return next(rows, None)

    wait_until(app, lambda: running_row() is not None, 30, "the paced run in the runs table")
    table.selectRow(running_row())  # its progress bar below the list

    def going() -> bool:
        line = next((x for x in view.lines if x.run_id == running), None)
        return line is not None and line.live and "ETA" in line.progress and line.done >= 60

    wait_until(app, going, 60, "the paced run's rate")
    settle(app)
    if want("studio-evaluate"):
        grab(window, "studio-evaluate", (table,))
    if want("studio-jobs"):
        show_jobs_dock(app, window, 460)
        wait_until(app, lambda: len(window.jobs_panel.cards) > 1, what="the jobs panel")
        settle(app)
        grab(window, "studio-jobs")
        window.jobs_dock.hide()
    evaluate.remove_queued(0)
    evaluate.cancel_run(running)
    wait_until(app, lambda: evaluate.current is None, 60, "the paced run's cancellation")


def capture_pack(app, window, demo: Path, tmp: Path) -> None:
    """An annotation pack opened and rated offline; grabbed once its ratings are saved into the file and no
    other save is pending (saving one reports a change once more, which saves again)."""
    from spokenbench.app.pack_mode import SAVE_DELAY_MS

    away = tmp / "away"
    away.mkdir()
    with opened(demo) as project:
        pack = create_pack(project, QUEUE, "carla", away / "carla.sbpack").path
    opening = window.open_pack_file(pack)
    wait_until(app, lambda: opening.status == "succeeded", 60, "the pack")
    wait_until(app, lambda: not window.page_opening("rating"), 60, "the rating page's module")
    rating = window.page_widgets["rating"]
    wait_until(app, lambda: rating.rating is not None and rating.idle and rating.clip_audio is not None)
    for action in ("rate_correct", "rate_acceptable"):
        rating.do_action(action)
        wait_until(app, lambda: rating.idle and rating.clip_audio is not None)
    packs = window.packs

    def saved() -> bool:
        return (
            packs.saving is None
            and not packs.dirty
            and packs.last_saved == 2
            and "saved into the pack" in window.pack_label.text()
        )

    wait_steady(app, saved, hold_s=SAVE_DELAY_MS / 1000 + 1.0, timeout_s=60, what="the pack's saved state")
    grab(window, "studio-pack")


def rate_control_check(project_dir: Path) -> None:
    """Issue 24's demo check (as tests/support.py's rate_control_demo): twelve WER-0 question clips marked gold, a
    queue 'controls-demo' with 10 hidden controls, rated all Correct in 1 s by 'careless' and with every control
    right in 4-9 s by 'attentive'."""
    from spokenbench.core.qc.controls import control_clips, mark_gold
    from spokenbench.core.qc.queues import RatingRow, queue_clips, rate_clips, sample_for_rating

    with opened(project_dir) as project:
        gold = [row[0] for row in project.conn.execute(
            "SELECT c.id FROM clips c JOIN clip_screening s ON s.clip_id = c.id WHERE s.wer_bin = 0 "
            "AND c.part = 'question' AND c.duration_s >= 1 ORDER BY c.id LIMIT 12")]  # fmt: skip
        mark_gold(project, gold, "coordinator")
        sample_for_rating(project, "controls-demo", per_bin=8, seed=0, controls=10)
        queue = [clip.clip_id for clip in queue_clips(project.conn, "controls-demo")]
        known = control_clips(project.conn)
        rate_clips(project, "controls-demo", "careless", [RatingRow(c, "correct", None, 1) for c in queue])
        attentive = [
            RatingRow(
                c, known[c].expected if c in known else "acceptable" if n % 5 == 0 else "correct", None, 4 + n % 6
            )
            for n, c in enumerate(queue, start=1)
        ]
        rate_clips(project, "controls-demo", "attentive", attentive)


def capture_annotators(app, window, project_dir: Path) -> None:
    """The QC page's Annotators tab on the demo check: whom to talk to, and why."""
    rate_control_check(project_dir)
    reopened = window.open_project(project_dir)
    wait_until(app, lambda: reopened.status == "succeeded" and window.items_panel.model.rowCount() > 0, 60)
    page = open_page(window, "qc")
    wait_until(app, lambda: page.data is not None and "flagged" in page.view.summary.text(), 60, "the QC tables")
    tabs = page.view.tabs
    tabs.setCurrentWidget(page.view.sections["annotators"])
    settle(app)
    grab(window, "studio-qc-annotators", (page.view.sections["annotators"].table,))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--only", nargs="*", help="screens to take (default: all)")
    parser.add_argument("--size", default="1400x900", help="window size WIDTHxHEIGHT (default 1400x900)")
    args = parser.parse_args()
    global WIDTH, HEIGHT, SUFFIX
    WIDTH, HEIGHT = (int(n) for n in args.size.lower().split("x"))
    SUFFIX = "" if (WIDTH, HEIGHT) == (1400, 900) else f"-{WIDTH}x{HEIGHT}"
    wanted = set(args.only or [])

    def want(*names: str) -> bool:
        return not wanted or bool(wanted & set(names))

    app = QApplication.instance() or QApplication(sys.argv[:1])
    collect_garbage_at_safe_points(app)
    tmp = Path(tempfile.mkdtemp(prefix="sb-shots-"))
    settings = QSettings(str(tmp / "settings.ini"), QSettings.Format.IniFormat)
    settings.setValue(ANNOTATOR_KEY, "ana")
    demo = tmp / "demo-project"
    build_demo(demo)
    with opened(demo) as project:  # a consented speaker for the Speakers page
        add_speaker(project, SPEAKER, "ko", "seoul", "woman")
        give_consent(project, SPEAKER, "I agree to be recorded for voice cloning in this study.", "coordinator")
    choices = demo_choices(demo)
    copies = [tmp / f"copy-{n}" / demo.name for n in (1, 2, 3)]  # the demo as built, for the shots after runs
    for copy in copies:
        shutil.copytree(demo, copy)

    def new_window(project: Path | None = None) -> MainWindow:
        window = MainWindow(audio_message=playback_problem(), recording_message=recording_problem(), settings=settings)
        window.resize(WIDTH, HEIGHT)
        window.show()
        wait_until(app, lambda: window.isVisible() and (window.width(), window.height()) == (WIDTH, HEIGHT))
        settle(app, 0.3)  # mapped: only then can it take the keyboard
        window.activateWindow()  # the keyboard here (no window manager gives it), so the focus ring shows
        wait_until(app, lambda: QApplication.activeWindow() is window, 10, "the window's activation")
        if project is not None:
            opening = window.open_project(project)
            wait_until(app, lambda: opening.status == "succeeded" and window.items_panel.model.rowCount() > 0, 60)
            wait_until(app, lambda: window.sidebar.text_of("rating") != "Rating", what="the sidebar's counts")
        return window

    window = new_window()
    settle(app)
    if want("studio-welcome"):
        grab(window, "studio-welcome")

    with_project = window.open_project(demo)
    wait_until(app, lambda: with_project.status == "succeeded" and window.items_panel.model.rowCount() > 0, 60)
    wait_until(app, lambda: window.sidebar.text_of("rating") != "Rating", what="the sidebar's counts")
    detail = window.items_panel.detail
    roomy_item_detail(window)
    if want("studio-items-browser"):
        item_id = choices["browsed_item"]
        window.items_panel.select_item(item_id)
        wait_until(app, lambda: bool(detail.clip_ids) and detail.tabs.tabText(1) != "Clips", what="the item's clips")
        detail.tabs.setCurrentWidget(detail.clips)
        window.items_panel.table.scrollTo(window.items_panel.table.currentIndex())
        settle(app)
        grab(window, "studio-items-browser", (detail.clips,))
    if want("studio-rewrite-review"):
        window.show_page("rewrites")
        page = window.rewrite_page
        wait_until(app, lambda: page.last_read is not None and not page.last_read.is_running, what="the rewrites")
        settle(app)
        grab(window, "studio-rewrite-review")
    if want("studio-qc-dashboard", "studio-qc-disagreements", "studio-qc-clip"):
        page = open_page(window, "qc")
        wait_until(app, lambda: getattr(page, "data", None) is not None, 60, "the QC tables")
        tabs = page.view.tabs
        for index in range(tabs.count()):
            if tabs.tabText(index).lower().startswith("agreement"):
                tabs.setCurrentIndex(index)
        settle(app)
        if want("studio-qc-dashboard"):
            grab(window, "studio-qc-dashboard")
        if want("studio-qc-disagreements"):  # every column, the notes last, on screen (long cells elided)
            section = page.view.sections["rating_disagreements"]
            tabs.setCurrentWidget(section)
            section.table.setFocus()
            section.table.selectRow(0)
            settle(app)
            grab(window, "studio-qc-disagreements", (section.table,))
            tabs.setCurrentIndex(
                next(i for i in range(tabs.count()) if tabs.tabText(i).lower().startswith("agreement"))
            )
        if want("studio-qc-clip"):  # a disagreement opened: the Items page with its clip selected
            clip_id = choices["disagreed_clip"]
            page.clip_requested.emit(clip_id)

            def focused() -> bool:
                return (
                    window.current_page_key() == "items"
                    and clip_id in detail.clip_ids
                    and detail.clips.currentRow() == detail.clip_ids.index(clip_id)
                )

            wait_until(app, focused, what="the disagreed clip")
            settle(app)
            grab(window, "studio-qc-clip", (detail.clips,))
    if want("studio-results", "studio-results-published"):
        results = open_page(window, "results")
        wait_until(app, lambda: getattr(results, "panels", None) is not None, 60, "the results")
        results.show_panel("accuracy_by_level")
        settle(app)
        if want("studio-results"):
            grab(window, "studio-results")
        if want("studio-results-published"):
            results.show_panel("gold_position")
            results.view.published_toggle.setChecked(True)
            settle(app)
            grab(window, "studio-results-published")
            results.view.published_toggle.setChecked(False)
    if want("studio-results-updating"):  # a run ended: the figures shown stay, marked stale, while new ones compute
        from spokenbench.core.evaluation.store import mark_run

        results = open_page(window, "results")
        wait_until(app, lambda: getattr(results, "panels", None) is not None, 60, "the results")
        results.show_panel("accuracy_by_level")
        before = results.panels
        with opened(window.project_path) as project, project.transaction() as conn:
            mark_run(conn, 2, "finished")  # as a run's own process ends it
        wait_until(app, lambda: "Updating…" in results.answering_note.text(), 10, "the stale note")
        grab(window, "studio-results-updating")
        wait_until(app, lambda: results.panels is not before, 120, "the new figures")
    if want("studio-results-waiting"):  # a job storing answers: the page waits for it instead of recomputing
        from spokenbench.core.evaluation.store import mark_run
        from spokenbench.core.jobs.registry import tracked_job

        results = open_page(window, "results")
        wait_until(app, lambda: getattr(results, "panels", None) is not None, 60, "the results")
        results.show_panel("accuracy_by_level")
        with tracked_job(window.project_path, "evaluate", "a run from the command line"):
            wait_until(app, results._answering, 10, "the live job")
            with opened(window.project_path) as project, project.transaction() as conn:
                mark_run(conn, 2, "finished")  # a change the page would recompute for
            wait_until(app, lambda: results.waiting_for_job, 10, "the waiting note")
            settle(app)
            grab(window, "studio-results-waiting")
        wait_until(app, lambda: not results.waiting_for_job, 10, "the job's end")
    if want("studio-gender"):  # the gender-probe panel with its detail (issue 12 item 7)
        results = open_page(window, "results")
        wait_until(app, lambda: getattr(results, "panels", None) is not None, 60, "the results")
        results.show_panel("gender_probe")
        wait_until(app, lambda: results.gender_panel.view is not None, 60, "the gender panel")
        gender = results.gender_panel
        gender.choose_setting("binary_option")
        gender.show_tab(1)
        gender.question_table.selectRow(0)
        gender.listen_button.click()  # the most disagreeing question, heard in the male, female, neutralized voices
        wait_until(app, lambda: gender.versions is not None, 30, "the question's versions")
        settle(app)
        grab(window, "studio-gender")
    if want("studio-tour", "studio-tour-gender"):  # the guided tour (issue 15 item 2) on two of its steps
        from spokenbench.core.demo.tour import step_index

        results = open_page(window, "results")
        wait_until(app, lambda: getattr(results, "panels", None) is not None, 60, "the results")
        tour = window.tour
        if want("studio-tour"):
            tour.start(step_index("language-accent-gender"))
            keep_size(app, window)
            settle(app, 1.0)
            grab(window, "studio-tour")
        if want("studio-tour-gender"):
            tour.start(step_index("gender-probes"))
            results.view.published_toggle.setChecked(True)  # the tallest state: the paper's numbers beside
            keep_size(app, window)
            wait_until(app, lambda: results.gender_panel.view is not None, 60, "the gender panel")
            settle(app, 1.0)
            grab(window, "studio-tour-gender")
        tour.highlight.point_at(None)
        tour.dock.hide()
        results.view.published_on.clear()
        results.view.published_toggle.setChecked(False)
    if want("studio-settings"):
        dialog = window.open_settings()
        wait_until(app, lambda: dialog.keymap_loaded, what="the settings")
        settle(app)
        grab(dialog, "studio-settings")
        dialog.reject()

    if want(
        "studio-rating-queues",
        "studio-rating-create-queue",
        "studio-rating",
        "studio-rating-help",
        "studio-rating-spectrogram",
    ):
        capture_rating(app, window, want)
    # The shots below start runs, and show the jobs panel: in a new window on a copy of the demo as built, since
    # the pages loaded so far (Results: 763 px) leave the jobs panel no room in 900 px.
    window.shutdown()
    window.hide()
    window = new_window(copies[0])
    if want("studio-batches"):  # large runs (issue 14 item 3): batch choices, the jobs panel's batch jobs
        capture_batches(app, window, tmp)
    if "studio-batch-not-sent" in wanted:  # only when named: its runs would change the shots after it
        capture_batch_not_sent(app, window)
    if want("studio-evaluate", "studio-jobs"):
        capture_evaluate(app, window, want)
    if want("studio-speakers"):  # on the other copy: the sidebar's counts as in the shots before the runs
        reopened = window.open_project(copies[1])
        wait_until(app, lambda: reopened.status == "succeeded" and window.items_panel.model.rowCount() > 0, 60)
        wait_until(app, lambda: window.sidebar.text_of("results") != "Results", what="the sidebar's counts")
        capture_speakers(app, window, choices)
    if want("studio-qc-annotators"):  # on the third copy: the demo check adds a queue and two annotators
        capture_annotators(app, window, copies[2])
    if want("studio-pack"):  # last: the pack replaces the project in the window
        capture_pack(app, window, demo, tmp)

    window.shutdown()
    shutil.rmtree(tmp, ignore_errors=True)
    os._exit(0)  # skip Qt's teardown: the pictures are written


if __name__ == "__main__":
    main()
