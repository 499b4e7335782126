"""The Rewrites page: the review queue of flagged and hand-written parts, wired to core. Reads run as QueryOps;
every decision and undo is its own WriteOp, saved at once with the annotator's name from Settings."""

from __future__ import annotations

import dataclasses

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QHBoxLayout, QLabel, QPushButton, QVBoxLayout, QWidget

from spokenbench.app.operations import ProjectSession, QueryOp, WriteOp
from spokenbench.core.rewriting import store as rewriting_store
from spokenbench.core.rewriting.flagging import (
    FlaggedRewrite,
    flagged_rewrites,
    item_parts_of,
    original_text,
    review_rewrite,
    undo_last_review,
)
from spokenbench.core.store import Project
from spokenbench.core.store.rewrites import latest_rewrites
from spokenbench.widgets.rewrite_review import RewriteReviewView

REVIEW_TABLES = frozenset({"rewrites", "rewrite_reviews", "rewrite_outcomes", "items"})
DECIDED_STATUS = {"accept": "accepted", "reject": "rejected", "edit": "edited"}


def review_queue(project: Project) -> list[FlaggedRewrite]:
    """Every part that was ever flagged (its newest flagged version) with where its review stands now, then the
    parts of items the LLM rewriting gave up on ('manual' until written by hand). Decided parts stay in the
    queue so progress reads "decided / total" and a decision can be looked at again."""
    conn = project.conn
    newest_flagged: dict[tuple[int, str], FlaggedRewrite] = {}
    for entry in flagged_rewrites(conn, pending_only=False):  # by version: the last one per part wins
        newest_flagged[(entry.item_id, entry.part)] = entry
    queue = []
    latest_by_item: dict[int, dict] = {}
    for (item_id, part), entry in newest_flagged.items():
        latest = latest_by_item.setdefault(item_id, latest_rewrites(conn, item_id)).get(part)
        if latest is None or latest["id"] == entry.rewrite_id:
            queue.append(entry)
        else:  # decided since: the text now read aloud (an edit's, not the flagged LLM text) and its status
            queue.append(dataclasses.replace(entry, status=latest["status"], rewrite=latest["text"]))
    for manual in rewriting_store.manual_rewrite_items(conn):
        existing = latest_rewrites(conn, manual["item_id"])
        for part in item_parts_of(conn, manual["item_id"]):
            written = existing.get(part)
            if written is not None and written["origin"] != "manual":
                continue  # rewritten since by other means
            queue.append(
                FlaggedRewrite(
                    -1 if written is None else written["id"],
                    manual["item_id"],
                    manual["source_id"],
                    manual["language"],
                    part,
                    original_text(conn, manual["item_id"], part),
                    "" if written is None else written["text"],
                    "",
                    "manual" if written is None else written["status"],
                )
            )
    return queue


class RewritePage(QWidget):
    def __init__(self, window):
        super().__init__()
        self.window = window
        self.session: ProjectSession | None = None
        self.view = RewriteReviewView()
        self.view.decision_requested.connect(self._decide)
        self.view.undo_requested.connect(self.undo)
        self.reviewer_label = QLabel()
        reload_button = QPushButton("Reload queue")
        reload_button.clicked.connect(self.reload)
        bar = QHBoxLayout()
        bar.addWidget(self.reviewer_label, 1)
        bar.addWidget(reload_button)
        layout = QVBoxLayout(self)
        layout.addLayout(bar)
        layout.addWidget(self.view, 1)
        self.last_read = None  # the newest queue load and the newest decision or undo, for tests and status
        self.said_after_reload = ""  # an undo's message: said with the part once the queue is read again (its text)
        self.last_write = None

    def set_session(self, session: ProjectSession | None) -> None:
        self.session = session
        self.said_after_reload = ""
        self.view.set_entries([], keep_position=False)
        if session is not None:
            session.changes.changed.connect(self._changed)
            self.reload()

    def showEvent(self, event) -> None:
        super().showEvent(event)
        name = self.window.annotator_name()
        self.reviewer_label.setText(
            f"Reviewing as <b>{name}</b>" if name else "Set your name in <b>Settings</b> (Ctrl+,) before reviewing."
        )

    def take_focus(self) -> None:
        """Shown by the window (not while the user walks the sidebar with the arrows): the keys to the review."""
        self.view.setFocus(Qt.FocusReason.OtherFocusReason)

    def _changed(self, tables: set[str]) -> None:
        if tables & REVIEW_TABLES:
            self.reload()

    def reload(self):
        if self.session is None:
            return None
        self.last_read = (
            QueryOp(
                self.session,
                lambda project, progress: review_queue(project),
                label="Loading the review queue",
                parent=self,
                supersede="rewrite-queue",
            )
            .success(self._loaded)
            .run()
        )
        return self.last_read

    def _loaded(self, entries) -> None:
        said, self.said_after_reload = self.said_after_reload, ""
        self.view.set_entries(entries, said=said)

    def _reviewer(self) -> str | None:
        name = self.window.annotator_name()
        if not name:
            self.view.set_message(
                "Set your annotator name in Settings (Ctrl+,): every decision records who made it.", with_part=True
            )
        return name or None

    def _decide(self, index: int, decision: str, text: str | None) -> None:
        entry = self.view.entries[index]
        reviewer = self._reviewer()
        if reviewer is None or self.session is None:
            self.view.mark(index, entry.status)
            return
        item_id, part = entry.item_id, entry.part
        self.last_write = (
            WriteOp(
                self.session,
                lambda project: review_rewrite(project, item_id, part, decision, reviewer, text=text),
                changes={"rewrites", "rewrite_reviews"},
                label=f"Saving review of {entry.source_id} {part}",
                parent=self,
                error_title="Cannot save the review",
            )
            .success(lambda _result: self._saved(index, decision, text))
            .failure(lambda error: self.view.mark(index, entry.status), dialog=True)
            .run()
        )

    def _saved(self, index: int, decision: str, text: str | None) -> None:
        self.view.mark(index, DECIDED_STATUS[decision], text)
        entry = self.view.entries[index]
        self.view.set_message(f"Saved: {entry.source_id} {entry.part} {DECIDED_STATUS[decision]}.", with_part=True)

    def undo(self):
        reviewer = self._reviewer()
        if reviewer is None or self.session is None:
            return None
        self.last_write = (
            WriteOp(
                self.session,
                lambda project: undo_last_review(project, reviewer),
                changes={"rewrites", "rewrite_checks"},
                label="Undoing the last review",
                parent=self,
                error_title="Cannot undo the review",
            )
            .success(self._undone)
            .run()
        )
        return self.last_write

    def _undone(self, undone) -> None:
        if undone is None:
            self.view.set_message("Nothing of yours left to undo.")
            return
        self.view.reopen(undone.item_id, undone.part)
        # the reopened part's text is the one read again after the undo's change (a reload follows every undo)
        self.said_after_reload = f"Undid your {undone.decision} of item {undone.item_id} {undone.part}."
        self.view.set_message(self.said_after_reload, said=False)
