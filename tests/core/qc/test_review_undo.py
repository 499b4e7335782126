"""Undoing a review decision appends a new flagged version; nothing is deleted."""

import pytest
from demo_copies import linked_copy

from spokenbench.core.rewriting.flagging import flagged_rewrites, review_rewrite, undo_last_review
from spokenbench.core.rewriting.report import rewrite_qc
from spokenbench.core.store import opened


@pytest.mark.slow
def test_undo_walks_back_through_a_reviewers_decisions_keeping_history(built_demo, tmp_path):
    path = linked_copy(built_demo, tmp_path / "p")
    with opened(path) as project:
        conn = project.conn
        first, second, third = flagged_rewrites(conn)[:3]
        reviews_before = conn.execute("SELECT count(*) FROM rewrite_reviews").fetchone()[0]
        review_rewrite(project, first.item_id, first.part, "accept", "ana")
        review_rewrite(project, second.item_id, second.part, "edit", "ana", text="corrected")
        review_rewrite(project, third.item_id, third.part, "accept", "bo")  # not ana's to undo
        assert len(flagged_rewrites(conn)) == 7

        undone = undo_last_review(project, "ana")
        assert (undone.item_id, undone.part, undone.decision) == (second.item_id, second.part, "edit")
        again = {(f.item_id, f.part): f for f in flagged_rewrites(conn)}
        assert again[(second.item_id, second.part)].rewrite == second.rewrite  # the flagged text is back
        assert undo_last_review(project, "ana").decision == "accept"
        assert undo_last_review(project, "ana") is None
        assert len(flagged_rewrites(conn)) == 9
        assert conn.execute("SELECT count(*) FROM rewrite_reviews").fetchone()[0] == reviews_before + 3
        assert conn.execute("SELECT status FROM rewrites WHERE id = ?", (first.rewrite_id,)).fetchone()[0] == "accepted"
        awaiting = sum(row["awaiting_review"] for row in rewrite_qc(conn)["by_language"].values())
        assert awaiting == 9
