"""One applier: a deduplication decision (dedupe.decide) becomes writes through
the writer, or a review candidate.

Conversation jobs (REST, Mem0's add, MCP's add_memory with messages) and
`infer` saves (REST and MCP) all come here, so the review gate is the same at
every door: a statement that is unsure, sensitive or contradicts what an
operator approved waits for a person, and a key whose changes to
operator-approved memories go through review (permissions.change_needs_review)
cannot supersede or forget one directly, whatever door it uses.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from django.db import transaction
from django.utils import timezone

from memories.dedupe import DELETE, INVALIDATE, NOOP, UPDATE, Decision
from memories.governance import (
    review_candidate_create,
    review_hold,
    save_hold,
    sensitive_across_turns,
    was_approved_by_operator,
)
from memories.models import Candidate, CandidateOperation, ConversationJob, MemoryItem, Tenant
from memories.people.reading import About, PeopleReader
from memories.permissions import change_needs_review
from memories.search import profile_display_name
from memories.writing import (
    MemorySpec,
    memory_create,
    memory_create_batch,
    memory_forget,
    memory_invalidate,
    memory_supersede,
    users_write_lock,
)

AppliedOperation = Literal["ADD", "NOOP", "UPDATE", "DELETE", "REVIEW"]


@dataclass(frozen=True)
class Submitter:
    """Who asked: the actor the history names, the key's role (the gate), and what a review candidate
    records (the key, its job, the turns the statement came from)."""

    actor: str
    role: str
    api_key_id: int | None = None
    job: ConversationJob | None = None
    source_messages: tuple[int, ...] = ()
    split_sensitive: tuple[str, ...] = ()  # kinds split over the source turns and the speaker's next or last
    people: PeopleReader | None = None  # whom statements are about (a job's reader has heard its turns)


@dataclass
class Applied:
    """What a decision did. `memory`: the memory written, matched or forgotten; `invalidated`: the memory
    a contradiction ended; `candidate`: the review row when a person must decide."""

    operation: AppliedOperation
    memory: MemoryItem | None = None
    invalidated: MemoryItem | None = None
    candidate: Candidate | None = None
    reason: str = ""
    superseded: MemoryItem | None = field(default=None)
    forgotten: list[MemoryItem] = field(default_factory=list)  # DELETE: every memory it archived


def _protected(tenant: Tenant, target: MemoryItem | None, role: str) -> bool:
    """An operator approved the target, the tenant protects approved memories, and this key's changes to
    them go through review."""
    return target is not None and change_needs_review(
        role=role, approved_by_operator=was_approved_by_operator(target),
        tenant_protects_approved=tenant.protect_approved)


def apply_decision(*, tenant: Tenant, decision: Decision, target: MemoryItem | None, spec: MemorySpec,
                   confidence: float, submitter: Submitter, also: Sequence[MemoryItem] = ()) -> Applied:
    """Apply one decision for one user's statement (the caller holds the user's write lock). `also`: the
    other memories a DELETE reaches (a forget request removes every fact that says it)."""
    if decision.operation == NOOP:
        return Applied("NOOP", target, reason=decision.reason)
    if decision.unclear:
        return _hold_unclear(tenant, decision, target, spec, submitter, also)
    protected = _protected(tenant, target, submitter.role)
    if decision.operation == DELETE:
        assert target is not None
        if protected:
            held = _hold(tenant, CandidateOperation.ARCHIVE, target, spec, ["changes_approved"],
                         "the user asked to forget a memory an operator approved", submitter, text=target.text)
            return Applied("REVIEW", target, candidate=held, reason=held.reason_detail)
        forgotten = [target, *(m for m in also if not _protected(tenant, m, submitter.role))]
        for memory in forgotten:  # archived with its words gone: nothing of it stays readable or restorable
            memory_forget(tenant=tenant, memory_id=memory.id, actor=submitter.actor)
        return Applied("DELETE", target, reason=decision.reason, forgotten=forgotten)

    operation = {INVALIDATE: CandidateOperation.INVALIDATE, UPDATE: CandidateOperation.UPDATE}.get(
        decision.operation, CandidateOperation.ADD)
    hold = review_hold(text=spec.text, confidence=confidence, tags=spec.tags, data=spec.data,
                       contradicted=target if decision.operation == INVALIDATE else None,
                       split_kinds=submitter.split_sensitive)
    reasons, details = list(hold.reasons), [hold.detail] if hold.detail else []
    if decision.operation in (UPDATE, INVALIDATE) and protected and "contradicts_approved" not in reasons:
        reasons.append("changes_approved")
        details.append(f"changes approved memory {target.id}")  # type: ignore[union-attr]
    if reasons:
        held = _hold(tenant, operation, target, spec, reasons, "; ".join(details), submitter)
        return Applied("REVIEW", target, candidate=held, reason=held.reason_detail)

    reader = submitter.people or people_reader(tenant, spec.user_id, submitter.actor)
    about = _about(reader, spec)
    if decision.operation == UPDATE:
        assert target is not None
        memory = memory_supersede(tenant=tenant, memory_id=target.id, new_text=spec.text, actor=submitter.actor,
                                  reason=decision.reason, job_id=_job_id(submitter), subject=about.subject.id)
        reader.said(memory, about)
        return Applied("UPDATE", memory, superseded=target, reason=f"supersedes {target.id}: {decision.reason}")
    result = memory_create(tenant=tenant, spec=spec, actor=submitter.actor, job_id=_job_id(submitter),
                           count_for_reflection=submitter.job is None)
    if result.operation == "ADD":
        reader.said(result.memory, about)
    if decision.operation == INVALIDATE and target is not None:
        for ended in [target, *(m for m in also if not _protected(tenant, m, submitter.role))]:
            memory_invalidate(tenant=tenant, memory_id=ended.id, invalid_at=spec.valid_at or timezone.now(),
                              actor=submitter.actor, reason=f"contradicted by: {spec.text}",
                              job_id=_job_id(submitter), contradicted_by=result.memory)
        return Applied(result.operation, result.memory, invalidated=target,  # type: ignore[arg-type]
                       reason=f"{decision.reason}; replaces {target.id}")
    return Applied(result.operation, result.memory,  # type: ignore[arg-type]
                   reason=decision.reason if result.operation == "ADD" else result.reason)


def apply_saves(*, tenant: Tenant, specs: Sequence[MemorySpec], submitter: Submitter,
                turns: bool = False) -> list[Applied]:
    """Saves as given (REST save and batch, Mem0's add with infer=false, MCP's add_memory): no
    deduplication decision, but the same gate as every other door, so a text the sensitive-data screen
    flags waits for a person (REVIEW) instead of becoming an active memory. `turns`: the specs are a
    conversation's turns (Mem0's verbatim add), also read two at a time, so a number split over two of them
    is held. The rest are written in one transaction (ADD, or NOOP / UPDATE of the same text); the answer
    keeps the order of `specs`."""
    split = sensitive_across_turns([spec.text for spec in specs]) if turns else {}
    holds = [save_hold(spec, split.get(index, ())) for index, spec in enumerate(specs)]
    passed = [spec for spec, hold in zip(specs, holds, strict=True) if not hold.held]
    # The people the saves name, and the saves, under the users' write locks (their emotion is read after the
    # commit, beside their embedding: tasks.embed_memories).
    with transaction.atomic():
        users_write_lock(tenant.id, {spec.user_id for spec in passed})
        readers: dict[str, PeopleReader] = {}
        for user_id in {spec.user_id for spec in passed}:
            readers[user_id] = people_reader(tenant, user_id, submitter.actor)
        abouts = [_about(readers[spec.user_id], spec) for spec in passed]
        results = memory_create_batch(tenant=tenant, specs=passed, actor=submitter.actor,
                                      job_id=_job_id(submitter)) if passed else []
        for spec, about, result in zip(passed, abouts, results, strict=True):
            if result.operation == "ADD":
                readers[spec.user_id].said(result.memory, about)
    written = iter(results)
    applied: list[Applied] = []
    for spec, hold in zip(specs, holds, strict=True):
        if hold.held:
            held = _hold(tenant, CandidateOperation.ADD, None, spec, hold.reasons, hold.detail, submitter)
            applied.append(Applied("REVIEW", candidate=held, reason=held.reason_detail))
        else:
            result = next(written)
            applied.append(Applied(result.operation, result.memory, reason=result.reason))  # type: ignore[arg-type]
    return applied


def _hold_unclear(tenant: Tenant, decision: Decision, target: MemoryItem | None, spec: MemorySpec,
                  submitter: Submitter, candidates: Sequence[MemoryItem]) -> Applied:
    """An update or forget request whose target is not clear: a person picks, the candidates named
    (the closest one is the candidate's target; approving applies the change to it)."""
    forget = decision.operation == DELETE
    named = "; ".join(f"{memory.id}: {memory.text}" for memory in candidates)
    detail = f"{decision.reason} candidates: {named}"
    operation = CandidateOperation.ARCHIVE if forget else CandidateOperation.INVALIDATE
    held = _hold(tenant, operation, target, spec, ["unclear_target"], detail, submitter,
                 text=target.text if forget and target is not None else None)
    return Applied("REVIEW", target, candidate=held, reason=held.reason_detail)


def people_reader(tenant: Tenant, user_id: str, actor: str, **fields: Any) -> PeopleReader:
    """A reader of whom one user's statements are about, with the name the user gave (their profile's)."""
    return PeopleReader(tenant, user_id, given_name=profile_display_name(tenant.id, user_id) or "", actor=actor,
                        **fields)


def _about(reader: PeopleReader, spec: MemorySpec) -> About:
    """Whom the spec is about, written into it (subject and object entity) before it is saved."""
    about = reader.about(spec.text, tags=spec.tags, sources=spec.source_message_indices)
    spec.subject_entity_id, spec.object_entity_id = about.subject.id, about.obj.id if about.obj else None
    return about


def _job_id(submitter: Submitter) -> str:
    return str(submitter.job.id) if submitter.job is not None else ""


def _hold(tenant: Tenant, operation: str, target: MemoryItem | None, spec: MemorySpec, reasons: list[str],
          detail: str, submitter: Submitter, *, text: str | None = None) -> Candidate:
    job = submitter.job
    return review_candidate_create(
        tenant=tenant, user_id=spec.user_id, operation=operation, spec=spec, target=target, reasons=reasons,
        detail=detail, api_key_id=submitter.api_key_id, job=job, source_messages=list(submitter.source_messages),
        text=text)
