"""Take the README's screenshots of the desktop app on the offline demo project, under a real X server:

    xvfb-run -a -s "-screen 0 1400x900x24" python docs/screenshots/capture.py [--only NAME ...]

Each screen is driven as a user would (pages from the sidebar, keys on the rating screen) and grabbed from the
window itself, so what is kept is what a user sees. Writes docs/screenshots/<name>.png."""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

from PySide6.QtCore import QSettings, Qt
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication

from spokenbench.app.audio import playback_problem, recording_problem
from spokenbench.app.main_window import MainWindow
from spokenbench.app.qt_refcounts import collect_garbage_at_safe_points
from spokenbench.app.settings_dialog import ANNOTATOR_KEY
from spokenbench.core.demo import build_demo
from spokenbench.core.qc.packs import create_pack
from spokenbench.core.qc.queues import queue_clips, rate_clip
from spokenbench.core.recording.speakers import add_speaker, give_consent
from spokenbench.core.store import opened

OUT = Path(__file__).resolve().parent


def wait_until(app, condition, timeout_s: float = 20.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError("the screen did not get ready")
        app.processEvents()
        time.sleep(0.01)


def settle(app, seconds: float = 0.6) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        app.processEvents()
        time.sleep(0.01)


def grab(widget, name: str) -> None:
    path = OUT / f"{name}.png"
    widget.grab().save(str(path))
    print(f"wrote {path.relative_to(OUT.parent.parent)}")


def add_two_annotators(path: Path) -> None:
    """Ratings from two annotators, disagreeing on some clips, so agreement and disagreements have content."""
    with opened(path) as project:
        clips = queue_clips(project.conn, "demo-qc")[:10]
        for n, clip in enumerate(clips):
            rate_clip(project, clip.clip_id, "alice", "correct" if n % 3 else "acceptable")
            rate_clip(project, clip.clip_id, "bob", "correct" if n % 4 else "incorrect")


def capture_batches(app, window, tmp: Path) -> None:
    """Text runs (the demo assembles no audio). Two provider batches submitted from the Evaluate page to the loopback batch stub of the tests (the
    official SDKs talk to it as to the providers; no key, no network), the Gemini one finished and collected,
    the OpenAI one running, and a batch file exported for vLLM; then a Gemini run prepared as a batch."""
    import dataclasses

    sys.path.insert(0, str(OUT.parent.parent / "tests" / "core" / "evaluation"))
    from batch_stub import BatchStub

    from spokenbench.core.evaluation import launcher

    os.environ.setdefault("OPENAI_API_KEY", "sk-screenshot-0123456789abcdef")
    os.environ.setdefault("GEMINI_API_KEY", "AIzaScreenshotKey0123456789abcdefghij")
    stub = BatchStub().__enter__()
    real = launcher.settings_from_form

    def to_stub(form):
        settings = real(form)
        if settings.model.startswith("openai:"):
            return dataclasses.replace(settings, base_url=stub.openai_url)
        if settings.model.startswith("gemini:"):
            return dataclasses.replace(settings, base_url=stub.gemini_url)
        return settings

    launcher.settings_from_form = to_stub
    window.resize(1380, 880)
    window.show_page("evaluate")
    evaluate = window.page_widgets["evaluate"]
    view = evaluate.view
    controller = window.jobs.batches
    settle(app, 1.0)

    def prepare(model: str, way: str, limit: str) -> None:
        view.select_model(model)
        view.mode_box.setCurrentIndex(view.mode_box.findData("text"))
        view.limit_edit.setText(limit)
        view.formEdited.emit()
        view.set_run_way(way)
        evaluate.prepare()
        wait_until(app, lambda: evaluate.prepared is not None or "Cannot" in view.plan_text.toPlainText(), 60)
        if evaluate.prepared is None:
            raise RuntimeError(view.plan_text.toPlainText())

    def launched() -> None:
        view.start_button.click()
        wait_until(app, lambda: evaluate.last_batch is not None and not evaluate.last_batch.is_running, 120)
        if evaluate.last_batch.status != "succeeded":
            raise RuntimeError(f"{evaluate.last_batch.label}: {evaluate.last_batch.error}")

    prepare("gemini:gemini-2.5-flash", "batch", "12")
    launched()
    for _ in range(4):  # PENDING → RUNNING → SUCCEEDED, then collected by the panel itself
        wait_until(app, lambda: controller.last_read is not None and not controller.last_read.is_running)
        controller.refresh(remote=True)
        settle(app, 0.3)
    wait_until(app, lambda: any(entry["state"] == "collected" for entry in controller.entries), timeout_s=60)
    prepare("openai:gpt-audio-mini", "batch", "20")
    launched()
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
    launched()
    wait_until(app, lambda: len(controller.entries) == 3 and not controller.last_read.is_running, timeout_s=60)
    prepare("gemini:gemini-2.5-flash-lite", "batch", "")
    window.jobs_dock.show()
    window.resizeDocks([window.jobs_dock], [280], Qt.Orientation.Vertical)
    settle(app, 1.5)
    grab(window, "studio-batches")
    window.jobs_dock.hide()
    launcher.settings_from_form = real
    stub.__exit__(None, None, None)
    window.resize(1300, 820)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--only", nargs="*", help="screens to take (default: all)")
    args = parser.parse_args()
    wanted = set(args.only or [])

    def want(name: str) -> bool:
        return not wanted or name in wanted

    app = QApplication.instance() or QApplication(sys.argv[:1])
    collect_garbage_at_safe_points(app)
    tmp = Path(tempfile.mkdtemp(prefix="sb-shots-"))
    settings = QSettings(str(tmp / "settings.ini"), QSettings.Format.IniFormat)
    settings.setValue(ANNOTATOR_KEY, "ana")
    demo = tmp / "demo-project"
    build_demo(demo)
    add_two_annotators(demo)
    with opened(demo) as project:  # a consented speaker for the Speakers page
        add_speaker(project, "Mina", "ko", "seoul", "woman")
        give_consent(project, "Mina", "I agree to be recorded for voice cloning in this study.", "coordinator")

    window = MainWindow(audio_message=playback_problem(), recording_message=recording_problem(), settings=settings)
    window.resize(1300, 820)
    window.show()
    settle(app)
    if want("studio-welcome"):
        grab(window, "studio-welcome")

    with_project = window.open_project(demo)
    wait_until(app, lambda: with_project.status == "succeeded" and window.items_panel.model.rowCount() > 0)
    settle(app, 1.0)
    if want("studio-items-browser"):
        window.items_panel.select_item(window.items_panel.model.row_at(3)[0])
        settle(app, 1.0)
        grab(window, "studio-items-browser")
    if want("studio-rewrite-review"):
        window.show_page("rewrites")
        settle(app, 1.5)
        grab(window, "studio-rewrite-review")
    if want("studio-qc-dashboard") or want("studio-qc-clip"):
        window.show_page("qc")
        settle(app, 2.0)
        page = window.page_widgets["qc"]
        tabs = page.view.tabs
        for index in range(tabs.count()):
            if "agree" in tabs.tabText(index).lower() and "dis" not in tabs.tabText(index).lower():
                tabs.setCurrentIndex(index)
        settle(app, 0.5)
        if want("studio-qc-dashboard"):
            grab(window, "studio-qc-dashboard")
        if want("studio-qc-clip"):
            with opened(demo) as project:
                first = queue_clips(project.conn, "demo-qc")[0].clip_id
            page.clip_requested.emit(first)
            settle(app, 1.5)
            grab(window, "studio-qc-clip")
    if want("studio-rating"):
        window.show_page("rating")
        rating = window.page_widgets["rating"]
        settle(app, 1.0)
        rating.open_queue("demo-qc")
        wait_until(app, lambda: rating.rating is not None and not rating.busy)
        settle(app, 0.8)
        QTest.keyClick(rating.view, Qt.Key.Key_1)
        wait_until(app, lambda: not rating.busy)
        settle(app, 0.8)
        grab(window, "studio-rating")
    if want("studio-speakers"):
        window.show_page("speakers")
        speakers = window.page_widgets["speakers"]
        settle(app, 1.0)
        speakers.select_speaker("Mina")
        settle(app, 1.5)
        grab(window, "studio-speakers")
    if want("studio-evaluate"):
        window.show_page("evaluate")
        evaluate = window.page_widgets["evaluate"]
        settle(app, 1.0)
        evaluate.view.select_model("simulated:order-sensitive")
        evaluate.view.formEdited.emit()
        evaluate.prepare()
        wait_until(app, lambda: evaluate.prepared is not None)
        settle(app, 1.0)
        grab(window, "studio-evaluate")
    if want("studio-results") or want("studio-results-published"):
        window.show_page("results")
        results = window.page_widgets["results"]
        wait_until(app, lambda: getattr(results, "panels", None) is not None, timeout_s=60)
        settle(app, 1.5)
        results.show_panel("accuracy_by_level")
        settle(app, 1.0)
        if want("studio-results"):
            grab(window, "studio-results")
        if want("studio-results-published"):
            results.show_panel("gold_position")
            results.view.published_toggle.setChecked(True)
            settle(app, 1.5)
            grab(window, "studio-results-published")
            results.view.published_toggle.setChecked(False)
    if want("studio-gender"):  # the gender-probe panel with its detail (issue 12 item 7)
        window.show_page("results")
        results = window.page_widgets["results"]
        wait_until(app, lambda: getattr(results, "panels", None) is not None, timeout_s=60)
        window.resize(1380, 880)
        results.show_panel("gender_probe")
        wait_until(app, lambda: results.gender_panel.view is not None, timeout_s=60)
        settle(app, 1.5)
        gender = results.gender_panel
        gender.choose_setting("binary_option")
        gender.tabs.setCurrentIndex(1)
        gender.question_table.selectRow(0)
        gender.listen_button.click()  # the most disagreeing question, heard in the male, female, neutralized voices
        wait_until(app, lambda: gender.versions is not None, timeout_s=30)
        settle(app, 1.0)
        grab(window, "studio-gender")
        window.resize(1300, 820)
    if want("studio-tour") or want("studio-tour-gender"):  # the guided tour (issue 15 item 2) on two of its steps
        from spokenbench.core.tour import step_index

        window.show_page("results")
        results = window.page_widgets["results"]
        wait_until(app, lambda: getattr(results, "panels", None) is not None, timeout_s=60)
        window.resize(1380, 880)
        tour = window.tour
        if want("studio-tour"):
            tour.start(step_index("language-accent-gender"))
            settle(app, 2.0)
            grab(window, "studio-tour")
        if want("studio-tour-gender"):
            tour.start(step_index("gender-probes"))
            wait_until(app, lambda: results.gender_panel.view is not None, timeout_s=60)
            settle(app, 2.0)
            grab(window, "studio-tour-gender")
        tour.highlight.point_at(None)
        tour.dock.hide()
        results.view.published_on.clear()
        results.view.published_toggle.setChecked(False)
        window.resize(1300, 820)
    if want("studio-settings"):
        dialog = window.open_settings()
        wait_until(app, lambda: dialog.keymap_loaded)
        settle(app, 0.8)
        grab(dialog, "studio-settings")
        dialog.reject()
    if want("studio-jobs"):
        window.jobs_dock.show()
        settle(app, 1.0)
        grab(window, "studio-jobs")
        window.jobs_dock.hide()

    if want("studio-batches"):  # large runs (issue 14 item 3): batch choices, the jobs panel's batch jobs
        capture_batches(app, window, tmp)

    if want("studio-pack"):
        away = tmp / "away"
        away.mkdir()
        with opened(demo) as project:
            pack = create_pack(project, "demo-qc", "carla", away / "carla.sbpack").path
        opening = window.open_pack_file(pack)
        wait_until(app, lambda: opening.status == "succeeded")
        rating = window.page_widgets["rating"]
        wait_until(app, lambda: rating.rating is not None and not rating.busy)
        for key in (Qt.Key.Key_1, Qt.Key.Key_2):
            QTest.keyClick(rating.view, key)
            wait_until(app, lambda: not rating.busy)
        wait_until(app, lambda: not window.packs.dirty and "saved into the pack" in window.pack_label.text())
        settle(app, 3.0)  # the save's own uuid assignment is reported as a change once more
        grab(window, "studio-pack")

    window.shutdown()
    shutil.rmtree(tmp, ignore_errors=True)
    os._exit(0)  # skip Qt's teardown: the pictures are written


if __name__ == "__main__":
    main()
