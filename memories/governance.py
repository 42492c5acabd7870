"""The governance gate: which extracted candidates a person must look at
first, and the review queue's approve / reject — used by API and admin alike."""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from memories.errors import InvalidOperation, get_or_not_found
from memories.models import (
    Candidate,
    CandidateOperation,
    CandidateStatus,
    HistoryEvent,
    MemoryHistory,
    MemoryItem,
    MemorySource,
    Tenant,
)
from memories.writing import MemorySpec, memory_create, memory_invalidate, memory_supersede

# --------------------------------------------------------------------------- sensitive content

_EMAIL = re.compile(r"[\w.+-]+@[\w-]+\.[\w.-]+")
_PHONE = re.compile(r"(?<!\d)(?:\+?\d{1,3}[\s.-]?)?(?:\(?\d{2,4}\)?[\s.-]?)?\d{3,4}[\s.-]?\d{4}(?!\d)")
_CARD = re.compile(r"(?<!\d)(?:\d[ -]?){13,19}(?!\d)")
_NATIONAL_ID = re.compile(r"(?<!\d)(?:\d{3}-\d{2}-\d{4}|\d{17}[\dXx])(?!\d)")  # US SSN, PRC resident ID


def _luhn_ok(number: str) -> bool:
    digits = [int(c) for c in number if c.isdigit()]
    total = 0
    for position, digit in enumerate(reversed(digits)):
        if position % 2 == 1:
            digit *= 2
            if digit > 9:
                digit -= 9
        total += digit
    return total % 10 == 0


def _has_card(text: str) -> bool:
    return any(_luhn_ok(m.group(0)) for m in _CARD.finditer(text))


DETECTORS = {
    "email": lambda text: bool(_EMAIL.search(text)),
    "phone": lambda text: bool(_PHONE.search(text)),
    "card": _has_card,
    "national_id": lambda text: bool(_NATIONAL_ID.search(text)),
}


def sensitive_kinds(text: str) -> list[str]:
    """Which configured detectors fire on the text (e-mail, phone, card, national ID)."""
    return [name for name in settings.SENSITIVE_DETECTORS if name in DETECTORS and DETECTORS[name](text)]


# --------------------------------------------------------------------------- the gate


@dataclass
class HoldDecision:
    reasons: list[str]
    detail: str

    @property
    def held(self) -> bool:
        return bool(self.reasons)


def was_approved_by_operator(memory: MemoryItem) -> bool:
    return MemoryHistory.objects.filter(memory_id=memory.id, event=HistoryEvent.APPROVE).exists()


def review_hold(*, text: str, confidence: float, contradicted: MemoryItem | None) -> HoldDecision:
    """Hold a candidate for review when it is unsure, contradicts what an
    operator approved, or carries sensitive data."""
    reasons, details = [], []
    if confidence < settings.MEMORY_REVIEW_CONFIDENCE:
        reasons.append("low_confidence")
        details.append(f"confidence {confidence:.2f} < {settings.MEMORY_REVIEW_CONFIDENCE:.2f}")
    if contradicted is not None and was_approved_by_operator(contradicted):
        reasons.append("contradicts_approved")
        details.append(f"contradicts approved memory {contradicted.id}")
    kinds = sensitive_kinds(text)
    if kinds:
        reasons.append("sensitive")
        details.append("sensitive content: " + ", ".join(kinds))
    return HoldDecision(reasons=reasons, detail="; ".join(details))


# --------------------------------------------------------------------------- review queue


def candidate_pending(*, tenant: Tenant) -> list[Candidate]:
    return list(Candidate.objects.filter(tenant=tenant, status=CandidateStatus.PENDING).order_by("created_at"))


def _lock_candidate(tenant: Tenant, candidate_id: uuid.UUID | str) -> Candidate:
    candidate = get_or_not_found(Candidate.objects.select_for_update().filter(tenant=tenant), "candidate",
                                 id=candidate_id)
    if candidate.status != CandidateStatus.PENDING:
        raise InvalidOperation(f"candidate is already {candidate.status}", field="status")
    return candidate


@transaction.atomic
def candidate_approve(*, tenant: Tenant, candidate_id: uuid.UUID | str, actor: str,
                      edited_text: str | None = None) -> Candidate:
    """Apply exactly the proposed operation (with the operator's text, if edited)."""
    candidate = _lock_candidate(tenant, candidate_id)
    text = (edited_text or "").strip() or candidate.text
    spec = MemorySpec(user_id=candidate.user_id, text=text, memory_type=candidate.memory_type,
                      importance=candidate.importance, confidence=candidate.confidence, tags=candidate.tags,
                      data=candidate.data, agent_id=candidate.agent_id, session_id=candidate.session_id,
                      group_id=candidate.group_id, valid_at=candidate.valid_at,
                      source_session_id=candidate.session_id, source_message_indices=candidate.source_messages)
    reason = f"approved from review ({', '.join(candidate.reasons)})"
    if candidate.operation == CandidateOperation.UPDATE and candidate.target_id:
        memory = memory_supersede(tenant=tenant, memory_id=candidate.target_id, new_text=text, actor=actor,
                                  reason=reason)
    else:
        if candidate.operation == CandidateOperation.INVALIDATE and candidate.target_id:
            target = MemoryItem.objects.filter(id=candidate.target_id, expired_at__isnull=True).first()
            if target is not None:
                memory_invalidate(tenant=tenant, memory_id=target.id, invalid_at=candidate.valid_at or timezone.now(),
                                  actor=actor, reason=f"contradicted by an approved candidate: {text}")
        memory = memory_create(tenant=tenant, spec=spec, actor=actor).memory
    if not memory.sources.exists() and candidate.session_id:
        MemorySource.objects.create(item=memory, session_id=candidate.session_id,
                                    message_indices=candidate.source_messages,
                                    job_id=str(candidate.job_id or ""))
    MemoryHistory.objects.create(memory_id=memory.id, tenant=tenant, user_id=memory.user_id,
                                 event=HistoryEvent.APPROVE, actor=actor, new_text=text,
                                 old_text=candidate.text if text != candidate.text else None, reason=reason,
                                 job_id=str(candidate.job_id or ""))
    candidate.status = CandidateStatus.APPROVED
    candidate.resolved_by = actor
    candidate.resolved_at = timezone.now()
    candidate.result_memory = memory
    candidate.save(update_fields=["status", "resolved_by", "resolved_at", "result_memory"])
    return candidate


@transaction.atomic
def candidate_reject(*, tenant: Tenant, candidate_id: uuid.UUID | str, actor: str, reason: str = "") -> Candidate:
    """Reject a candidate; it stays in the queue's history for audit."""
    candidate = _lock_candidate(tenant, candidate_id)
    candidate.status = CandidateStatus.REJECTED
    candidate.resolved_by = actor
    candidate.resolved_at = timezone.now()
    if reason:
        candidate.reason_detail = f"{candidate.reason_detail}; rejected: {reason}".strip("; ")
    candidate.save(update_fields=["status", "resolved_by", "resolved_at", "reason_detail"])
    return candidate
