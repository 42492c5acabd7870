"""One applier for every decision: conversation jobs, `infer` saves (REST and MCP) and Mem0's add hold
the same statements for review and protect operator-approved memories the same way."""

from __future__ import annotations

import pytest

from memories.applier import Submitter, apply_decision
from memories.dedupe import ADD, DELETE, INVALIDATE, NOOP, UPDATE, Decision
from memories.models import Candidate, KeyRole, MemoryItem
from memories.writing import MemorySpec, memory_create, memory_record_approval
from tests.conftest import converse


def _approved(tenant, text="Alice lives in Lisbon.", **fields):
    memory = memory_create(tenant=tenant, spec=MemorySpec(user_id="alice", text=text, **fields), actor="t").memory
    memory_record_approval(memory=memory, actor="admin:op", reason="checked", edited=False, session_id="",
                           message_indices=[], job_id="")
    return memory


def test_an_agent_keys_infer_save_against_an_approved_memory_becomes_a_candidate(api, tenant_a):
    approved = _approved(tenant_a, data={"key": "city", "value": "Lisbon"})
    answer = api.post("memories", {"user_id": "alice", "text": "Alice lives in Porto.", "infer": True,
                                   "data": {"key": "city", "value": "Porto"}})
    assert answer.status_code == 202, answer.content
    body = answer.json()
    assert body["operation"] == "REVIEW" and "approved" in body["reason"]
    candidate = Candidate.objects.get(id=body["candidate"]["id"])
    assert candidate.operation == "INVALIDATE" and candidate.target_id == approved.id
    assert candidate.api_key_id is not None  # who submitted it: that key may not approve it
    approved.refresh_from_db()
    assert approved.expired_at is None and approved.invalid_at is None  # nothing changed before review


def test_an_infer_save_with_sensitive_data_waits_like_a_conversations(api):
    answer = api.post("memories", {"user_id": "alice", "text": "Alice's e-mail is alice@example.com.",
                                   "infer": True})
    assert answer.status_code == 202 and "sensitive" in answer.json()["reason"]
    job = converse(api, ["My e-mail is alice@example.com."])
    assert [op["operation"] for op in job["operations"]] == ["REVIEW"]
    assert not MemoryItem.objects.filter(text__contains="alice@example.com").exclude(tags__contains=["episode"])


@pytest.mark.parametrize("operation, role, expected, reason", [
    (UPDATE, KeyRole.AGENT, "REVIEW", "changes_approved"),
    (UPDATE, KeyRole.REVIEWER, "UPDATE", None),
    (INVALIDATE, KeyRole.AGENT, "REVIEW", "contradicts_approved"),
    (INVALIDATE, KeyRole.REVIEWER, "REVIEW", "contradicts_approved"),  # the gate holds it for anyone
    (DELETE, KeyRole.AGENT, "REVIEW", "changes_approved"),
    (DELETE, KeyRole.REVIEWER, "DELETE", None),
    (NOOP, KeyRole.AGENT, "NOOP", None),
    (ADD, KeyRole.AGENT, "ADD", None),
])
def test_the_applier_protects_approved_memories_at_every_door(tenant_a, operation, role, expected, reason):
    approved = _approved(tenant_a)
    spec = MemorySpec(user_id="alice", text="Alice lives in Porto now.")
    applied = apply_decision(tenant=tenant_a, decision=Decision(operation, str(approved.id), reason="test"),
                             target=approved, spec=spec, confidence=0.9,
                             submitter=Submitter(actor="api:key-1", role=role))
    assert applied.operation == expected
    if reason:
        assert reason in applied.candidate.reasons
        assert MemoryItem.objects.get(id=approved.id).expired_at is None


def test_an_unapproved_memory_is_changed_directly(tenant_a):
    plain = memory_create(tenant=tenant_a, spec=MemorySpec(user_id="alice", text="Alice lives in Lisbon."),
                          actor="t").memory
    applied = apply_decision(tenant=tenant_a, decision=Decision(UPDATE, str(plain.id), reason="refines"),
                             target=plain, spec=MemorySpec(user_id="alice", text="Alice lives in Lisbon, Alfama."),
                             confidence=0.9, submitter=Submitter(actor="api:key-1", role=KeyRole.AGENT))
    assert applied.operation == "UPDATE" and applied.superseded == plain and applied.memory.version == 2
