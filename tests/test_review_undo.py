"""Undoing a review decision: who may, for how long, and what the memory's history says."""

from datetime import timedelta

import pytest
from django.utils import timezone

from memories import governance
from memories.errors import InvalidOperation
from memories.models import Candidate, CandidateOperation, CandidateStatus, MemoryHistory, MemoryItem

NOW = timezone.now()


@pytest.mark.parametrize(("status", "operation", "resolved_by", "age", "refused"), [
    ("rejected", "ADD", "admin:rita", 10, ""),
    ("approved", "ADD", "admin:rita", 10, ""),
    ("approved", "ARCHIVE", "admin:rita", 10, ""),
    ("approved", "UPDATE", "admin:rita", 10, "corrected on the memory itself"),
    ("approved", "ERASE", "admin:rita", 10, "corrected on the memory itself"),
    ("approved", "ADD", "admin:sam", 10, "only the reviewer who decided"),
    ("approved", "ADD", "admin:rita", 500, "for 120 seconds only"),
    ("pending", "ADD", "", 0, "still waiting"),
])
def test_undo_refusal(status, operation, resolved_by, age, refused):
    candidate = Candidate(status=status, operation=operation, resolved_by=resolved_by,
                          resolved_at=NOW - timedelta(seconds=age) if status != "pending" else None)
    answer = governance.undo_refusal(candidate=candidate, actor="admin:rita", now=NOW, window_seconds=120)
    assert (refused in answer) if refused else answer == ""


def test_undoing_an_approval_archives_what_it_added_with_history(api, tenant_a):
    held = api.post("memories", {"user_id": "ola", "text": "Ola's email is ola@example.com."}).json()["candidate"]
    approved = governance.candidate_approve(tenant=tenant_a, candidate_id=held["id"], actor="admin:rita",
                                            edited_text="Ola has an email address.")
    memory_id = approved.result_memory_id
    undone = governance.candidate_undo(tenant=tenant_a, candidate_id=held["id"], actor="admin:rita")
    assert undone.status == CandidateStatus.PENDING and undone.result_memory_id is None
    assert MemoryItem.objects.get(id=memory_id).status == "archived"
    last = MemoryHistory.objects.filter(memory_id=memory_id).order_by("created_at").last()
    assert last.event == "DELETE" and last.actor == "admin:rita" and "undone" in last.reason
    # Back in the queue: it can be decided again, differently.
    governance.candidate_reject(tenant=tenant_a, candidate_id=held["id"], actor="admin:rita", reason="dupe")
    assert Candidate.objects.get(id=held["id"]).status == CandidateStatus.REJECTED
    with pytest.raises(InvalidOperation):
        governance.candidate_undo(tenant=tenant_a, candidate_id=held["id"], actor="admin:sam")


def test_undoing_an_approved_archive_restores_the_memory(api, tenant_a):
    memory = api.remember("pia", "Pia grows tomatoes.")
    target = MemoryItem.objects.get(id=memory["id"])
    row = governance.review_candidate_create(tenant=tenant_a, user_id="pia", operation=CandidateOperation.ARCHIVE,
                                             spec=None, target=target, reasons=["changes_approved"], detail="",
                                             api_key_id=None)
    governance.candidate_approve(tenant=tenant_a, candidate_id=row.id, actor="admin:rita")
    assert MemoryItem.objects.get(id=memory["id"]).status == "archived"
    governance.candidate_undo(tenant=tenant_a, candidate_id=row.id, actor="admin:rita")
    assert MemoryItem.objects.get(id=memory["id"]).status == "active"
    assert MemoryHistory.objects.filter(memory_id=memory["id"], event="RESTORE", actor="admin:rita").exists()


def test_an_erasure_after_the_decision_keeps_the_candidate_closed(api, tenant_a):
    """Issue 43: a reviewer's rejection, then the user's erasure, then the reviewer's undo put the
    erased user's candidate back in the queue. What an erasure closed stays closed."""
    from memories import erasure

    held = api.post("memories", {"user_id": "ida", "text": "Ida's email is ida@example.com."}).json()["candidate"]
    governance.candidate_reject(tenant=tenant_a, candidate_id=held["id"], actor="admin:rita", reason="no")
    erasure.user_erase(tenant=tenant_a, user_id="ida", actor="admin:olga")
    with pytest.raises(InvalidOperation, match="erased or forgotten"):
        governance.candidate_undo(tenant=tenant_a, candidate_id=held["id"], actor="admin:rita")
    assert Candidate.objects.get(id=held["id"]).status == CandidateStatus.REJECTED
    # Another user's erasure does not close this reviewer's other decisions.
    other = api.post("memories", {"user_id": "jon", "text": "Jon's email is jon@example.com."}).json()["candidate"]
    governance.candidate_reject(tenant=tenant_a, candidate_id=other["id"], actor="admin:rita", reason="no")
    erasure.user_erase(tenant=tenant_a, user_id="kim", actor="admin:olga")
    assert governance.candidate_undo(tenant=tenant_a, candidate_id=other["id"], actor="admin:rita").status == \
        CandidateStatus.PENDING
