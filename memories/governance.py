"""The governance gate: which extracted candidates a person must look at
first, and the review queue's approve / reject — used by API and admin alike."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.conf import settings
from django.db import models, transaction
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from memories import erasure, writing
from memories.errors import InvalidOperation, NotAllowed, VersionConflict, get_or_not_found
from memories.identity import ID_FIELDS
from memories.keys import key_lineage
from memories.models import (
    ApiKey,
    Candidate,
    CandidateOperation,
    CandidateStatus,
    ConversationJob,
    ErasureReceipt,
    HistoryEvent,
    MemoryHistory,
    MemoryItem,
    MemoryStatus,
    Tenant,
)
from memories.permissions import change_needs_review, key_may_erase_user, key_may_resolve_candidate
from memories.sensitive import findings_across_turns, redact, redact_turns, sensitive_kinds_in
from memories.writing import MemorySpec, refuse_sensitive

# --------------------------------------------------------------------------- sensitive content

def redact_sensitive(text: str) -> str:
    """The text with what the enabled detectors find replaced by a marker: kept words
    that never pass the review gate (an episode's raw turns) must not carry it."""
    return redact(text, settings.SENSITIVE_DETECTORS)


def sensitive_across_turns(texts: Sequence[str]) -> dict[int, list[str]]:
    """One speaker's consecutive turns -> for each turn, the kinds found only when it is read with its
    neighbour (a number split over two turns): what is extracted from such a turn waits for review."""
    return {index: sorted({f.kind for f in found})
            for index, found in findings_across_turns(texts, settings.SENSITIVE_DETECTORS).items()}


def redact_sensitive_turns(texts: Sequence[str]) -> list[str]:
    """One speaker's consecutive turns redacted, each of its own findings and of its part of a split one."""
    return redact_turns(texts, settings.SENSITIVE_DETECTORS)


def sensitive_kinds(text: str) -> list[str]:
    """Which configured detectors fire on the text (memories.sensitive: identifiers, secrets, addresses,
    dates of birth and GDPR's special categories, on its normalised view)."""
    return sensitive_kinds_in(text, settings.SENSITIVE_DETECTORS)


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


def sensitive_fields(*, text: str | None = None, tags: Sequence[str] = (),
                     data: Any = None) -> list[tuple[str, list[str]]]:
    """Each written field that carries what the detector finds, with the kinds: the text, each tag, and
    every key and value inside `data` (Mem0's metadata; numbers too: a card number may come as an integer,
    and a value is read with its key), named by path (`tags[1]`, `data.card`, `data.ids[0].ssn`)."""
    found: list[tuple[str, list[str]]] = []
    if text:
        kinds = sensitive_kinds(text)
        if kinds:
            found.append(("text", kinds))
    for index, tag in enumerate(tags):
        kinds = sensitive_kinds(tag)
        if kinds:
            found.append((f"tags[{index}]", kinds))
    found.extend(_sensitive_in_data(data, "data"))
    return found


def _sensitive_in_data(value: Any, path: str) -> list[tuple[str, list[str]]]:
    if isinstance(value, dict):
        found = []
        for key, inner in value.items():
            kinds = sensitive_kinds(str(key))
            if kinds:
                found.append((f"{path}.{key}", kinds))
            if _scalar(inner):  # read with its key: {"phone": "07700 900123"} says what the digits are
                kinds = sensitive_kinds(f"{key}: {inner}")
                if kinds:
                    found.append((f"{path}.{key}", kinds))
            else:
                found.extend(_sensitive_in_data(inner, f"{path}.{key}"))
        return found
    if isinstance(value, list):
        return [hit for index, inner in enumerate(value) for hit in _sensitive_in_data(inner, f"{path}[{index}]")]
    if _scalar(value):
        kinds = sensitive_kinds(str(value))
        return [(path, kinds)] if kinds else []
    return []


def _scalar(value: Any) -> bool:
    """A string or an integer (a card number may come as one): what the screen reads in data."""
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def _sensitive_detail(fields: list[tuple[str, list[str]]]) -> str:
    return "sensitive content: " + "; ".join(
        ", ".join(kinds) + ("" if field == "text" else f" in {field}") for field, kinds in fields)


def save_hold(spec: MemorySpec, split_kinds: Sequence[str] = ()) -> HoldDecision:
    """The gate for a save as given (the client's own words, its confidence its own): sensitive data in
    its text, tags or data (or split over it and the turn next to it: `split_kinds`) waits for a person, as
    it does at every other door."""
    return review_hold(text=spec.text, confidence=1.0, contradicted=None, tags=spec.tags, data=spec.data,
                       split_kinds=split_kinds)


def review_hold(*, text: str, confidence: float, contradicted: MemoryItem | None, tags: Sequence[str] = (),
                data: Any = None, split_kinds: Sequence[str] = ()) -> HoldDecision:
    """Hold a candidate for review when it is unsure, contradicts what an
    operator approved, or carries sensitive data (in its text, tags or data, or split over the turns it
    came from: `split_kinds`)."""
    reasons: list[str] = []
    details: list[str] = []
    if confidence < settings.MEMORY_REVIEW_CONFIDENCE:
        reasons.append("low_confidence")
        details.append(f"confidence {confidence:.2f} < {settings.MEMORY_REVIEW_CONFIDENCE:.2f}")
    if contradicted is not None and was_approved_by_operator(contradicted):
        reasons.append("contradicts_approved")
        details.append(f"contradicts approved memory {contradicted.id}")
    found = sensitive_fields(text=text, tags=tags, data=data)
    if found or split_kinds:
        reasons.append("sensitive")
        details.append(_sensitive_detail(found) if found else "sensitive content in what was said (its turns, or "
                       "split across them): " + ", ".join(split_kinds))
    return HoldDecision(reasons=reasons, detail="; ".join(details))


def change_hold(fields: dict[str, Any]) -> HoldDecision:
    """The gate for a change a client asks of a stored memory (PATCH, Mem0's update and batch update):
    a new text, tags or data carrying sensitive data wait for a person, as a new save would."""
    found = sensitive_fields(text=fields.get("text"), tags=fields.get("tags") or (), data=fields.get("data"))
    return HoldDecision(reasons=["sensitive"] if found else [], detail=_sensitive_detail(found) if found else "")


def review_candidate_create(*, tenant: Tenant, user_id: str, operation: str, spec: MemorySpec | None,
                            target: MemoryItem | None, reasons: list[str], detail: str, api_key_id: int | None,
                            job: ConversationJob | None = None, source_messages: list[int] | None = None,
                            text: str | None = None, changes: dict | None = None) -> Candidate:
    """The one constructor of review rows: a statement held by the gate (`spec`), or a change asked of
    the memory `target` (no spec: the target's own fields; `changes` are the fields asked for)."""
    base = target if spec is None else None
    if spec is not None and operation != CandidateOperation.ERASE:  # a new statement's ids, as a save's
        writing.refuse_sensitive_identifiers({name: getattr(spec, name) for name in ID_FIELDS})
    return Candidate.objects.create(
        tenant=tenant, user_id=user_id, job=job, operation=operation, target=target, api_key_id=api_key_id,
        text=text if text is not None else (spec.text if spec is not None else target.text),  # type: ignore[union-attr]
        memory_type=spec.memory_type if spec is not None else base.memory_type,  # type: ignore[union-attr]
        importance=spec.importance if spec is not None else base.importance,  # type: ignore[union-attr]
        confidence=spec.confidence if spec is not None else base.confidence,  # type: ignore[union-attr]
        tags=list(spec.tags if spec is not None else base.tags),  # type: ignore[union-attr]
        data=spec.data if spec is not None else {}, valid_at=spec.valid_at if spec is not None else None,
        reasons=reasons, reason_detail=detail, changes=changes or {}, source_messages=source_messages or [],
        session_id=(spec or base).session_id, group_id=(spec or base).group_id,  # type: ignore[union-attr]
        agent_id=(spec or base).agent_id)  # type: ignore[union-attr]


# --------------------------------------------------------------------------- review queue


def candidate_pending(*, tenant: Tenant) -> list[Candidate]:
    return list(Candidate.objects.filter(tenant=tenant, status=CandidateStatus.PENDING).order_by("created_at"))


def _candidate_owner_lock(tenant: Tenant, candidate_id: uuid.UUID | str) -> None:
    """The write lock of the candidate's user, before its row is locked: deciding it writes that user's
    memories (writing.owners_write_lock)."""
    writing.owners_write_lock(Candidate.objects.filter(tenant=tenant, id=candidate_id))


def _lock_candidate(tenant: Tenant, candidate_id: uuid.UUID | str) -> Candidate:
    _candidate_owner_lock(tenant, candidate_id)
    candidate = get_or_not_found(Candidate.objects.select_for_update().filter(tenant=tenant), "candidate",
                                 id=candidate_id)
    if candidate.status != CandidateStatus.PENDING:
        raise InvalidOperation(f"candidate is already {candidate.status}", field="status")
    return candidate


class SelfApproval(NotAllowed):
    """The key that made a candidate may not resolve it."""


def _refuse_unless_key_may_resolve(candidate: Candidate, api_key: ApiKey | None) -> None:
    """Keys resolve candidates by permissions.key_may_resolve_candidate; operators (no key) by their admin rights."""
    if api_key is not None and not key_may_resolve_candidate(role=api_key.role, key_ids=key_lineage(api_key),
                                                             submitted_by_key_id=candidate.api_key_id):
        raise SelfApproval("this key may not resolve this candidate: it (or a key it was rotated from) submitted "
                           "it, or it is not a reviewer key")


# How a reviewer approves what the sensitive-data screen flags: as written, deliberately (with the reason, e.g.
# the user asked for the number to be kept), or redacted (each finding replaced by its marker).
AS_WRITTEN, REDACTED = "as_written", "redacted"


def sensitive_approval_refusal(*, found: list[tuple[str, list[str]]], mode: str, reason: str) -> tuple[str, str]:
    """Why an approval may not store what the screen found ("" when it may), and the field to name: a pure
    decision. Nothing found, or kept as written with a reason, passes; redaction runs before this."""
    if mode not in ("", AS_WRITTEN, REDACTED):
        return f"sensitive must be {AS_WRITTEN!r} or {REDACTED!r}", "sensitive"
    if mode == AS_WRITTEN and not reason.strip():
        return "approving sensitive data as written needs the reason (recorded in the audit trail)", "reason"
    if not found or mode == AS_WRITTEN:
        return "", ""
    field, kinds = found[0]
    return (f"the {field} still carries sensitive data ({', '.join(kinds)}): edit it out, approve it redacted, "
            "approve it as written with a reason, or reject the candidate; it stays in review"), field


def _redacted_data(value: Any, key: str = "") -> Any:
    """`data` with each finding replaced by its marker; a value is read with its key, as the screen reads it."""
    if isinstance(value, dict):
        return {redact_sensitive(str(k)): _redacted_data(v, str(k)) for k, v in value.items()}
    if isinstance(value, list):
        return [_redacted_data(v) for v in value]
    if _scalar(value):
        prefix = f"{key}: " if key else ""
        redacted = redact_sensitive(prefix + str(value))
        redacted = redacted[len(prefix):] if redacted.startswith(prefix) else redact_sensitive(str(value))
        return value if redacted == str(value) else redacted
    return value


def _redact_candidate(candidate: Candidate, text: str) -> str:
    """The candidate's words with every finding replaced by its marker (text, tags, data, asked changes):
    the removed words are kept nowhere, the candidate included."""
    candidate.tags = [redact_sensitive(tag) for tag in candidate.tags]
    candidate.data = _redacted_data(candidate.data)
    candidate.changes = {key: (redact_sensitive(value) if key == "text" else
                               [redact_sensitive(t) for t in value] if key == "tags" and isinstance(value, list) else
                               _redacted_data(value) if key == "data" else value)
                         for key, value in candidate.changes.items()}
    return redact_sensitive(text)


@transaction.atomic
def candidate_approve(*, tenant: Tenant, candidate_id: uuid.UUID | str, actor: str,
                      edited_text: str | None = None, api_key: ApiKey | None = None, sensitive: str = "",
                      sensitive_reason: str = "") -> Candidate:
    """Apply exactly the proposed operation (with the reviewer's text, if
    edited). The text, tags and data to store pass the sensitive-data screen
    again: what it flags stays in review, unless the reviewer approves it
    `sensitive="redacted"` (each finding replaced by its marker) or
    `sensitive="as_written"` with `sensitive_reason` (deliberately, e.g. the
    user asked for it to be kept); both are audited on the memory's APPROVE
    row and the candidate. An edit replaces the candidate's text, so the
    removed words are kept nowhere. `api_key`: the approving key, when a key
    (not an operator) decides."""
    candidate = _lock_candidate(tenant, candidate_id)
    _refuse_unless_key_may_resolve(candidate, api_key)
    edited = (edited_text or "").strip()
    text = edited or candidate.text
    found: list[tuple[str, list[str]]] = []
    if candidate.operation not in (CandidateOperation.ARCHIVE, CandidateOperation.ERASE):
        if sensitive == REDACTED:
            text = _redact_candidate(candidate, text)
        found = sensitive_fields(text=text, tags=candidate.changes.get("tags", candidate.tags),
                                 data=candidate.changes.get("data", candidate.data))
        refusal, field = sensitive_approval_refusal(found=found, mode=sensitive, reason=sensitive_reason)
        if refusal:
            raise InvalidOperation(refusal, field=field)
    was_edited = bool(edited) and edited != candidate.text
    reason = f"approved from review ({', '.join(candidate.reasons)})" + ("; edited by the reviewer"
                                                                          if was_edited else "")
    note: dict[str, Any] = {}
    if found:  # kept as written, deliberately
        kinds = sorted({kind for _, field_kinds in found for kind in field_kinds})
        reason += f"; sensitive data kept as written ({', '.join(kinds)}): {sensitive_reason.strip()}"
        note = {"sensitive_kept_as_written": kinds, "sensitive_reason": sensitive_reason.strip()}
    elif sensitive == REDACTED and "sensitive" in candidate.reasons:
        reason += "; sensitive data redacted by the reviewer"
        note = {"sensitive_redacted": True}
    memory = _apply_candidate(tenant, candidate, text, actor, reason)
    if memory is not None:
        writing.memory_record_approval(memory=memory, actor=actor, reason=reason, edited=was_edited,
                                       session_id=candidate.session_id, message_indices=candidate.source_messages,
                                       job_id=str(candidate.job_id or ""), note=note)
        candidate.text = text
        if note:
            candidate.reason_detail = f"{candidate.reason_detail}; {reason.split('; ', 1)[-1]} by {actor}"
    else:  # an erasure: the candidate keeps no words either
        candidate.text = erasure.ERASED
    candidate.status = CandidateStatus.APPROVED
    candidate.resolved_by = actor
    candidate.resolved_at = timezone.now()
    candidate.result_memory = memory
    candidate.save(update_fields=["text", "status", "resolved_by", "resolved_at", "result_memory", "reason_detail",
                                  "tags", "data", "changes"])
    return candidate


def _apply_candidate(tenant: Tenant, candidate: Candidate, text: str, actor: str,
                     reason: str) -> MemoryItem | None:
    if candidate.operation == CandidateOperation.ERASE:  # the reviewer erases what the key could not
        erasure.user_erase(tenant=tenant, user_id=candidate.user_id, actor=actor, reason=reason,
                           agent_id=candidate.data.get("agent_id"))
        return None
    if candidate.operation == CandidateOperation.ARCHIVE and candidate.target_id:
        return writing.memory_set_status(tenant=tenant, memory_id=candidate.target_id, status=MemoryStatus.ARCHIVED,
                                         actor=actor, reason=reason).memory
    if candidate.operation == CandidateOperation.UPDATE and candidate.target_id:
        if candidate.changes:  # an agent key's change to an approved memory: exactly the fields it asked for
            fields = {k: v for k, v in candidate.changes.items() if k != "text"}
            if "expires_at" in fields:  # kept as ISO text in the candidate's JSON
                fields["expires_at"] = parse_datetime(fields["expires_at"]) if fields["expires_at"] else None
            return writing.memory_update(tenant=tenant, memory_id=candidate.target_id, actor=actor, reason=reason,
                                         text=text if "text" in candidate.changes else None, **fields).memory
        return writing.memory_supersede(tenant=tenant, memory_id=candidate.target_id, new_text=text, actor=actor,
                                        reason=reason)
    spec = MemorySpec(user_id=candidate.user_id, text=text, memory_type=candidate.memory_type,
                      importance=candidate.importance, confidence=candidate.confidence, tags=candidate.tags,
                      data=candidate.data, agent_id=candidate.agent_id, session_id=candidate.session_id,
                      group_id=candidate.group_id, valid_at=candidate.valid_at,
                      source_session_id=candidate.session_id, source_message_indices=candidate.source_messages)
    memory = writing.memory_create(tenant=tenant, spec=spec, actor=actor).memory
    if candidate.operation == CandidateOperation.INVALIDATE and candidate.target_id:
        target = writing.current_memories(tenant.id, candidate.user_id).filter(id=candidate.target_id).first()
        if target is not None:
            writing.memory_invalidate(tenant=tenant, memory_id=target.id, actor=actor,
                                      invalid_at=candidate.valid_at or timezone.now(),
                                      reason="contradicted by an approved candidate", contradicted_by=memory)
    return memory


# --------------------------------------------------------------------------- changes by clients


@dataclass
class ClientChange:
    """What a client's change did: applied (`result`) or held for review (`candidate`)."""

    result: writing.WriteResult | None = None
    candidate: Candidate | None = None


def memory_change_by_key(*, tenant: Tenant, memory_id: uuid.UUID | str, role: str, api_key_id: int, actor: str,
                         archive: bool = False, expected_version: int | None = None, **fields) -> ClientChange:
    """Update (`fields`) or archive a memory for an API key. A memory an
    operator approved is changed by an agent key only through review, when
    its tenant protects approved memories: the change becomes a candidate."""
    memory = get_or_not_found(MemoryItem.objects.filter(tenant=tenant), "memory", id=memory_id)
    hold = change_hold(fields) if not archive else HoldDecision([], "")
    reasons, details = list(hold.reasons), [hold.detail] if hold.held else []
    if change_needs_review(role=role, approved_by_operator=was_approved_by_operator(memory),
                           tenant_protects_approved=tenant.protect_approved):
        reasons.append("changes_approved")
        details.append(f"an agent key asked to {'archive' if archive else 'change'} a memory an operator approved")
    if reasons:
        return ClientChange(candidate=_change_request(
            memory, archive=archive, api_key_id=api_key_id, expected_version=expected_version, fields=fields,
            reasons=reasons, detail="; ".join(details)))
    if archive:
        return ClientChange(result=writing.memory_set_status(
            tenant=tenant, memory_id=memory_id, status=MemoryStatus.ARCHIVED, actor=actor,
            reason="deleted through the API", expected_version=expected_version))
    return ClientChange(result=writing.memory_update(tenant=tenant, memory_id=memory_id, actor=actor,
                                                     expected_version=expected_version, **fields))


def memory_merge_by_key(*, tenant: Tenant, memory_ids: list, role: str, actor: str, text: str | None = None,
                        expected_versions: dict[str, int] | None = None) -> MemoryItem:
    """Merge memories for an API key through the admin's service (writing.memory_merge),
    with its conflict rules. An agent key may not merge away a memory an operator
    approved while the tenant protects approved memories: a reviewer key may."""
    if text is not None:
        refuse_sensitive(field="text", text=text)
    approved = [str(m.id) for m in MemoryItem.objects.filter(tenant=tenant, id__in=memory_ids)
                if was_approved_by_operator(m)]
    if approved and change_needs_review(role=role, approved_by_operator=True,
                                        tenant_protects_approved=tenant.protect_approved):
        raise NotAllowed(f"memories {', '.join(approved)} were approved by an operator: only a reviewer key may "
                         "merge them (or change them one by one, through review)")
    return writing.memory_merge(tenant=tenant, memory_ids=memory_ids, merged_text=text, actor=actor,
                                reason="merged through the API", expected_versions=expected_versions)


def _change_request(memory: MemoryItem, *, archive: bool, api_key_id: int, expected_version: int | None,
                    fields: dict, reasons: list[str], detail: str) -> Candidate:
    if expected_version is not None and expected_version != memory.version:
        raise VersionConflict(f"expected version {expected_version}, memory is at version {memory.version}",
                              current_version=memory.version)
    changes = {k: v.isoformat() if isinstance(v, datetime) else v for k, v in fields.items()
               if v is not None or k == "expires_at"}
    return review_candidate_create(
        tenant=memory.tenant, user_id=memory.user_id, spec=None, target=memory, api_key_id=api_key_id,
        operation=CandidateOperation.ARCHIVE if archive else CandidateOperation.UPDATE,
        text=changes.get("text", memory.text), changes=changes, reasons=reasons, detail=detail)


@transaction.atomic
def candidate_reject(*, tenant: Tenant, candidate_id: uuid.UUID | str, actor: str, reason: str = "",
                     api_key: ApiKey | None = None) -> Candidate:
    """Reject a candidate; it stays in the queue's history for audit."""
    candidate = _lock_candidate(tenant, candidate_id)
    _refuse_unless_key_may_resolve(candidate, api_key)
    candidate.status = CandidateStatus.REJECTED
    candidate.resolved_by = actor
    candidate.resolved_at = timezone.now()
    if reason:
        candidate.reason_detail = f"{candidate.reason_detail}; rejected: {reason}".strip("; ")
    candidate.save(update_fields=["status", "resolved_by", "resolved_at", "reason_detail"])
    return candidate


# --------------------------------------------------------------------------- undoing a decision

# What an approval's undo reverses (the memory it wrote is archived, or the memory it archived restored);
# an approved change, contradiction or erasure is corrected on the memory itself, not undone.
UNDOABLE_APPROVALS = (CandidateOperation.ADD, CandidateOperation.ARCHIVE)


def undo_refusal(*, candidate: Candidate, actor: str, now: datetime, window_seconds: int,
                 erased_after: bool = False) -> str:
    """Why this decision cannot be undone now ("" when it can), as a pure decision: only its own
    reviewer, within the window, and only a rejection or an approval that added or archived a memory.
    erased_after: the user was erased, or this candidate's words forgotten, after the decision; what an
    erasure closed stays closed (issue 43: undo had put an erased user's candidate back in the queue)."""
    if candidate.status == CandidateStatus.PENDING:
        return "the candidate is still waiting for a decision"
    if erased_after:
        return "the user's data was erased or forgotten after the decision: it stays closed"
    if candidate.resolved_by != actor:
        return "only the reviewer who decided may undo the decision"
    if candidate.resolved_at is None or (now - candidate.resolved_at).total_seconds() > window_seconds:
        return f"decisions can be undone for {window_seconds} seconds only"
    if candidate.status == CandidateStatus.APPROVED and candidate.operation not in UNDOABLE_APPROVALS:
        return f"an approved {candidate.operation.lower()} is corrected on the memory itself"
    return ""


@transaction.atomic
def candidate_undo(*, tenant: Tenant, candidate_id: uuid.UUID | str, actor: str) -> Candidate:
    """Put a just-decided candidate back in the queue (REVIEW_UNDO_SECONDS). Undoing an approval goes
    through the writer with actor and reason, so the memory's history says what happened: the memory
    the approval added is archived, the memory it archived is restored."""
    _candidate_owner_lock(tenant, candidate_id)
    candidate = get_or_not_found(Candidate.objects.select_for_update().filter(tenant=tenant), "candidate",
                                 id=candidate_id)
    erased_after = candidate.resolved_at is not None and (
        candidate.text == writing.FORGOTTEN_TURN or candidate.resolved_by == "erasure"
        or ErasureReceipt.objects.filter(tenant=tenant, user_id=candidate.user_id,
                                         created_at__gte=candidate.resolved_at).exists())
    refusal = undo_refusal(candidate=candidate, actor=actor, now=timezone.now(),
                           window_seconds=settings.REVIEW_UNDO_SECONDS, erased_after=erased_after)
    if refusal:
        raise InvalidOperation(refusal, field="status")
    reason = f"{candidate.status} from review undone by the reviewer"
    if candidate.status == CandidateStatus.APPROVED:
        if candidate.operation == CandidateOperation.ADD and candidate.result_memory_id:
            writing.memory_set_status(tenant=tenant, memory_id=candidate.result_memory_id,
                                      status=MemoryStatus.ARCHIVED, actor=actor, reason=reason)
        elif candidate.operation == CandidateOperation.ARCHIVE and candidate.target_id:
            writing.memory_set_status(tenant=tenant, memory_id=candidate.target_id, status=MemoryStatus.ACTIVE,
                                      actor=actor, reason=reason)
    candidate.status = CandidateStatus.PENDING
    candidate.resolved_by = ""
    candidate.resolved_at = None
    candidate.result_memory = None
    candidate.reason_detail = candidate.reason_detail.split("; rejected: ")[0]
    candidate.save(update_fields=["status", "resolved_by", "resolved_at", "result_memory", "reason_detail"])
    return candidate


# --------------------------------------------------------------------------- erasure asked by a key


@dataclass
class ErasureAnswer:
    """What an erasure request did: `result` what was erased now (the whole scope, or only what the key
    saved), `candidate` the rest proposed for a reviewer (None when nothing is left to ask about)."""

    result: erasure.ErasureResult
    candidate: Candidate | None = None


def memories_saved_by_key(*, tenant: Tenant, user_id: str, api_key: ApiKey, agent_id: str | None) -> list[str]:
    """The user's memories this key wrote (saved through it, or extracted from conversations it sent),
    leaving out those an operator approved when the tenant protects them: what the key may erase alone."""
    job_ids = [str(i) for i in ConversationJob.objects.filter(tenant=tenant, api_key=api_key)
               .values_list("id", flat=True)]
    # Created by it (ADD: a save, a new version, an extraction of its conversation; the memory a merge
    # made, whose MERGE row has no old text); a change it made to another's memory (tags added, an
    # update, being merged away) does not make that memory its own.
    created = models.Q(event=HistoryEvent.ADD) | models.Q(event=HistoryEvent.MERGE, old_text__isnull=True)
    written = (MemoryHistory.objects.filter(created, tenant=tenant, user_id=user_id)
               .filter(models.Q(actor=f"api:key-{api_key.id}") | models.Q(job_id__in=job_ids))
               .values_list("memory_id", flat=True))
    rows = MemoryItem.objects.filter(tenant=tenant, user_id=user_id, id__in=written)
    if agent_id is not None:
        rows = rows.filter(agent_id=agent_id)
    if tenant.protect_approved:
        approved = MemoryHistory.objects.filter(tenant=tenant, user_id=user_id, event=HistoryEvent.APPROVE)
        rows = rows.exclude(id__in=approved.values_list("memory_id", flat=True))
    return [str(i) for i in rows.values_list("id", flat=True)]


def user_erase_requested(*, tenant: Tenant, user_id: str, api_key: ApiKey, actor: str,
                         agent_id: str | None = None) -> ErasureAnswer:
    """A key asks to erase a user (or an agent's part of one). A key allowed to erase
    (permissions.key_may_erase_user) erases it all at once. Any other key erases what it saved itself
    and proposes the rest: one ERASE candidate that a reviewer approves (the erasure) or rejects, so an
    agent key cannot remove through erasure what its PATCH or DELETE may only propose."""
    if key_may_erase_user(role=api_key.role, can_erase=api_key.can_erase):
        return ErasureAnswer(erasure.user_erase(tenant=tenant, user_id=user_id, actor=actor, agent_id=agent_id))
    with transaction.atomic():
        writing.user_write_lock(tenant.id, user_id)
        own = memories_saved_by_key(tenant=tenant, user_id=user_id, api_key=api_key, agent_id=agent_id)
        result = erasure.user_erase(tenant=tenant, user_id=user_id, actor=actor,
                                    reason="erasure request: what this key saved",
                                    scope=writing.ErasureScope(agent_id=agent_id, api_key_id=api_key.id,
                                                               memory_ids=own))
        left = _left_for_a_reviewer(tenant, user_id, agent_id)
        if not left:
            return ErasureAnswer(result)
        part = f"agent {agent_id}'s part of user {user_id}" if agent_id is not None else f"user {user_id}"
        text = f"Erase {part}: {what_is_left(left)} this key did not save or send, or an operator approved"
        detail = (f"a key that may not erase a whole user asked to erase {part}; its own {len(own)} memories "
                  f"are erased, {what_is_left(left)} remain until a reviewer decides")
        already = Candidate.objects.filter(tenant=tenant, user_id=user_id, operation=CandidateOperation.ERASE,
                                           status=CandidateStatus.PENDING, data__agent_id=agent_id).first()
        if already is not None:  # one proposal, saying what is left now
            already.text, already.reason_detail = text, detail
            already.save(update_fields=["text", "reason_detail"])
            return ErasureAnswer(result, already)
        candidate = review_candidate_create(
            tenant=tenant, user_id=user_id, operation=CandidateOperation.ERASE, target=None, api_key_id=api_key.id,
            spec=MemorySpec(user_id=user_id, text=text, agent_id=agent_id or "",
                            data={"agent_id": agent_id, "left": left}),
            reasons=["erase_request"], detail=detail)
        return ErasureAnswer(result, candidate)


# What an erasure by a key that may not erase the whole user leaves, by store, for the ERASE candidate.
LEFT_STORES = {"memories": "memories", "candidates": "review candidates", "jobs": "conversation jobs"}


def _left_for_a_reviewer(tenant: Tenant, user_id: str, agent_id: str | None) -> dict[str, int]:
    """What is still held about the user (or the agent's part) after a key erased its own part: the
    whole erasure's dry run, counted by store (issue 55: other keys' pending candidates, an SSN or a card,
    were left with a 200 and no ERASE candidate), the proposal to erase it aside."""
    counts = erasure.user_erase(tenant=tenant, user_id=user_id, actor="erasure", dry_run=True,
                                agent_id=agent_id).counts
    proposals = Candidate.objects.filter(tenant=tenant, user_id=user_id, operation=CandidateOperation.ERASE,
                                         status=CandidateStatus.PENDING).count() if agent_id is None else 0
    left = {store: counts.get(store, 0) - (proposals if store == "candidates" else 0) for store in LEFT_STORES}
    return {store: n for store, n in left.items() if n > 0}


def what_is_left(left: dict[str, int]) -> str:
    """Pure: `{"memories": 2, "candidates": 1}` -> "2 memories, 1 review candidates"."""
    return ", ".join(f"{n} {LEFT_STORES[store]}" for store, n in left.items())
