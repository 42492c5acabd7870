"""A reviewer's corrections of what the service got wrong (issue 56): reinstate a memory that was wrongly
invalidated, superseded or archived (alone, or retiring the wrong replacement with it), change whom a memory
is about, split a memory that joined two facts into two. Each is a versioned change with actor and reason;
what may be done is decided by pure functions (table-tested in tests/test_review_corrections.py)."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import NamedTuple

from django.db import transaction
from django.utils import timezone

from memories import withdrawals
from memories.errors import InvalidOperation, VersionConflict
from memories.models import CURRENT_STATUSES, HistoryEvent, MemoryHistory, MemoryItem, MemoryStatus, Tenant
from memories.models.people import Person, PersonStatus
from memories.text import content_hash
from memories.writing.change import memory_is_forgotten
from memories.writing.core import (
    MemorySpec,
    apply_change,
    check_version,
    copy_sources,
    current_with_text,
    enqueue_embedding_after_commit,
    insert_memories,
    lock_memory,
    new_item,
    record_history,
    refuse_sensitive,
    snapshot_of,
    sync_vector_status,
    validate_spec,
)

# How a reviewer reinstates: the memory alone (what replaced it holds too), or the memory and the wrong
# replacement retired (archived) with it.
ALONE = "alone"
RETIRE_REPLACEMENT = "retire_replacement"
REINSTATE_CHOICES = (ALONE, RETIRE_REPLACEMENT)
# What a memory's standing (selectors.memory_standing) is when a reviewer may bring it back.
RETIRED_STATES = ("invalidated", "superseded", "archived", "expired")
FORGOTTEN_REFUSAL = "it was forgotten at the user's request: its words are gone and it cannot be restored"


def reinstate_refusal(*, state: str, forgotten: bool, choice: str, replacement_state: str | None) -> str:
    """Why this memory cannot be reinstated this way ("" when it can), as a pure decision. `state`: its
    standing; `replacement_state`: the standing of the memory that retired it (None when none did)."""
    if forgotten:
        return FORGOTTEN_REFUSAL
    if state == "current":
        return "it is already current"
    if state not in RETIRED_STATES:
        return f"it is {state} in review: decide it in the review queue"
    if choice not in REINSTATE_CHOICES:
        return f"choose {ALONE!r} or {RETIRE_REPLACEMENT!r}"
    if choice == RETIRE_REPLACEMENT and replacement_state is None:
        return "no memory retired it: reinstate it alone"
    if choice == RETIRE_REPLACEMENT and replacement_state != "current":
        return f"the memory that retired it is {replacement_state} already: reinstate it alone"
    return ""


# Why a selected memory was not reinstated, worded to take a count (text.bulk_summary): by what
# reinstate_refusal said.
NOT_REINSTATED: dict[str, tuple[str, str]] = {
    FORGOTTEN_REFUSAL: ("was forgotten at the user's request and cannot be restored",
                        "were forgotten at the user's request and cannot be restored"),
    "it is already current": ("was current already", "were current already"),
    "in review": ("waits in review or was rejected: decide it in the review queue",
                  "wait in review or were rejected: decide them in the review queue"),
    "same text": ("says what a current memory says (restore one of them only)",
                  "say what current memories say (restore one of each only)"),
}


def not_reinstated_phrase(refusal: str) -> tuple[str, str]:
    """The counted phrasing of one refusal (reinstate_refusal's words, or a conflict's), pure."""
    if FORGOTTEN_REFUSAL in refusal:
        return NOT_REINSTATED[FORGOTTEN_REFUSAL]
    if "already current" in refusal and "same text" not in refusal:
        return NOT_REINSTATED["it is already current"]
    if "review" in refusal:
        return NOT_REINSTATED["in review"]
    if "same text" in refusal:
        return NOT_REINSTATED["same text"]
    return (f"was refused ({refusal})", f"were refused ({refusal})")


class Reinstated(NamedTuple):
    memory: MemoryItem
    retired: MemoryItem | None  # the replacement archived with it, when the reviewer chose so


def _standing(memory: MemoryItem) -> tuple[str, uuid.UUID | None]:
    """The memory's standing and the memory that retired it (the writer's own reading of
    selectors.memory_standing: the selectors sit above the writer)."""
    if memory.superseded_by_id:
        return "superseded", memory.superseded_by_id
    if memory.invalid_at is not None:
        row = (MemoryHistory.objects.filter(memory_id=memory.id, event=HistoryEvent.INVALIDATE)
               .order_by("-created_at").values_list("new_data", flat=True).first())
        replaced = (row or {}).get("contradicted_by")
        return "invalidated", uuid.UUID(replaced) if replaced else None
    if memory.status == MemoryStatus.ARCHIVED:
        return "archived", None
    if memory.status in (MemoryStatus.REJECTED, MemoryStatus.PENDING):
        return str(memory.status), None
    return ("expired", None) if memory.expired_at is not None else ("current", None)


def memory_reinstate(*, tenant: Tenant, memory_id: uuid.UUID | str, choice: str, actor: str, reason: str,
                     expected_version: int | None = None) -> Reinstated:
    """Bring back a memory that was wrongly invalidated, superseded or archived: it is current and active
    again (one RESTORE version with actor and reason). RETIRE_REPLACEMENT archives the memory that retired it
    in the same transaction (a DELETE version saying why). Refused (InvalidOperation, field "choice" or
    "status") as reinstate_refusal says; a current memory with the same words is a VersionConflict."""
    reason = reason.strip() or "reinstated by a reviewer"
    with transaction.atomic():
        memory = lock_memory(tenant, memory_id)
        if expected_version is not None and expected_version != memory.version:  # a retired row is no longer
            raise VersionConflict(f"expected version {expected_version}, memory is at version {memory.version}",
                                  current_version=memory.version)  # current: check_version would refuse it
        state, replaced_by = _standing(memory)
        replacement = (MemoryItem.objects.select_for_update().filter(tenant=tenant, id=replaced_by).first()
                       if replaced_by else None)
        refusal = reinstate_refusal(state=state, forgotten=memory_is_forgotten(memory), choice=choice,
                                    replacement_state=_standing(replacement)[0] if replacement else None)
        if refusal:
            raise InvalidOperation(f"memory {memory.id} cannot be reinstated: {refusal}",
                                   field="choice" if "choose" in refusal or "alone" in refusal else "status")
        retiring = replacement if choice == RETIRE_REPLACEMENT else None
        clash = current_with_text(tenant.id, memory.user_id, memory.content_hash, exclude_id=memory.id)
        if clash and (retiring is None or clash.id != retiring.id):
            raise VersionConflict(f"memory {clash.id} with the same text is already current")
        now = timezone.now()
        if retiring is not None:  # first: its words may be the reinstated memory's (the unique hash index)
            _retire(retiring, actor=actor, reason=f"wrongly replaced {memory.id}, retired by a reviewer: {reason}")

        def bring_back(row: MemoryItem) -> None:
            row.status, row.archived_at = MemoryStatus.ACTIVE, None
            row.invalid_at = row.expired_at = None
            row.superseded_by = None

        apply_change(memory, bring_back, actor=actor, event=HistoryEvent.RESTORE, reason=reason, now=now,
                     fields=["status", "archived_at", "invalid_at", "expired_at", "superseded_by"])
        sync_vector_status([memory])
        enqueue_embedding_after_commit([memory.id])  # a no-op when its vectors are there
        return Reinstated(memory, retiring)


def _retire(memory: MemoryItem, *, actor: str, reason: str) -> None:
    was_current = memory.status in CURRENT_STATUSES and memory.expired_at is None

    def archive(row: MemoryItem) -> None:
        row.status, row.archived_at = MemoryStatus.ARCHIVED, timezone.now()

    apply_change(memory, archive, actor=actor, event=HistoryEvent.DELETE, reason=reason,
                 fields=["status", "archived_at"])
    sync_vector_status([memory])
    if was_current:
        withdrawals.announce(tenant_id=memory.tenant_id, user_id=memory.user_id, memory_ids=[memory.id],
                             cause="forgotten")


# --------------------------------------------------------------------------- whom a memory is about


def subject_refusal(*, current: bool, person_found: bool, person_active: bool, same: bool) -> str:
    """Why a memory's subject cannot be set to this entity ("" when it can), as a pure decision."""
    if not current:
        return "only a current memory's subject is changed: reinstate it first"
    if not person_found:
        return "no such person among this user's people"
    if not person_active:
        return "that entry was merged into another: choose the one it was merged into"
    if same:
        return "the memory is already about them"
    return ""


def memory_set_subject(*, tenant: Tenant, memory_id: uuid.UUID | str, person_id: uuid.UUID | str, actor: str,
                       reason: str, expected_version: int | None = None) -> MemoryItem:
    """Say whom a memory is about (its subject entity: one of its user's people, docs/people.md), as one
    UPDATE version with actor and reason. An object naming the new subject is cleared (a fact about Ana is
    not "Ana -> Ana")."""
    with transaction.atomic():
        memory = lock_memory(tenant, memory_id)
        if memory.expired_at is None:  # a retired one is refused below, in words
            check_version(memory, expected_version)
        try:
            person = Person.objects.filter(tenant=tenant, user_id=memory.user_id, id=person_id).first()
        except (ValueError, TypeError):  # not an id at all: no such person
            person = None
        refusal = subject_refusal(current=memory.expired_at is None and memory.status in CURRENT_STATUSES,
                                  person_found=person is not None,
                                  person_active=person is not None and person.status == PersonStatus.ACTIVE,
                                  same=person is not None and memory.subject_entity_id == person.id)
        if refusal or person is None:
            raise InvalidOperation(refusal, field="person_id")

        def about(row: MemoryItem) -> None:
            row.subject_entity_id = person.id
            if row.object_entity_id == person.id:
                row.object_entity_id = None

        apply_change(memory, about, actor=actor, event=HistoryEvent.UPDATE,
                     reason=reason.strip() or f"about {person.name or person.relation_word or person.id} "
                                              "(a reviewer's correction)",
                     fields=["subject_entity", "object_entity"])
        return memory


# --------------------------------------------------------------------------- splitting one memory in two


def split_refusal(*, original: str, parts: Sequence[str]) -> str:
    """Why these texts cannot replace the memory ("" when they can), as a pure decision: two or more
    parts, none empty, no two the same, and not the memory's own words again."""
    cleaned = [p.strip() for p in parts]
    if len(cleaned) < 2:
        return "give at least two texts"
    if any(not p for p in cleaned):
        return "a part is empty"
    if len({content_hash(p) for p in cleaned}) < len(cleaned):
        return "two parts say the same"
    if content_hash(original) in {content_hash(p) for p in cleaned}:
        return "a part repeats the whole memory: split it into what it joined"
    return ""


def memory_split(*, tenant: Tenant, memory_id: uuid.UUID | str, parts: Sequence[str], actor: str, reason: str,
                 expected_version: int | None = None) -> list[MemoryItem]:
    """A memory that joined two facts becomes two memories: the original is superseded (its history says
    "split into" both), each part is a new memory with its sources, subject, type and importance, and an
    ADD row saying what it was split from. Each part passes the sensitive-data gate as an edit does."""
    texts = [p.strip() for p in parts]
    with transaction.atomic():
        memory = lock_memory(tenant, memory_id)
        if memory.expired_at is not None or memory.status not in CURRENT_STATUSES:
            raise InvalidOperation("only a current memory is split: reinstate it first", field="memory_id")
        check_version(memory, expected_version)
        refusal = split_refusal(original=memory.text, parts=texts)
        if refusal:
            raise InvalidOperation(refusal, field="parts")
        now = timezone.now()
        items = []
        for text in texts:
            refuse_sensitive(field="parts", text=text)
            clash = current_with_text(tenant.id, memory.user_id, content_hash(text), exclude_id=memory.id)
            if clash:
                raise VersionConflict(f"memory {clash.id} of this user already says {text!r}")
            spec = MemorySpec(user_id=memory.user_id, text=text, memory_type=memory.memory_type,
                              importance=memory.importance, confidence=memory.confidence, tags=list(memory.tags),
                              agent_id=memory.agent_id, session_id=memory.session_id, group_id=memory.group_id,
                              valid_at=memory.valid_at, status=memory.status,
                              subject_entity_id=memory.subject_entity_id, object_entity_id=memory.object_entity_id,
                              emotion=memory.emotion)
            validate_spec(spec)
            items.append(new_item(tenant, spec, now, version=1, expires_at=memory.expires_at))
        said = reason.strip() or "split by a reviewer"
        memory.expired_at = memory.updated_at = now
        memory.save(update_fields=["expired_at", "updated_at"])
        insert_memories(items)
        memory.superseded_by = items[0]
        memory.save(update_fields=["superseded_by"])
        for item in items:
            copy_sources([memory], item)
        MemoryHistory.objects.bulk_create([
            record_history(memory, HistoryEvent.SUPERSEDE, actor=actor, old_text=memory.text,
                           new_data={"split_into": [str(i.id) for i in items]},
                           reason=f"split into {', '.join(str(i.id) for i in items)}: {said}"),
            *(record_history(item, HistoryEvent.ADD, actor=actor, old_text=memory.text, new_text=item.text,
                             new_data={**snapshot_of(item), "split_from": str(memory.id)},
                             reason=f"split from {memory.id}: {said}")
              for item in items)])
        enqueue_embedding_after_commit([i.id for i in items])
        withdrawals.announce(tenant_id=tenant.id, user_id=memory.user_id, memory_ids=[memory.id],
                             cause="superseded", replaced_by={str(memory.id): str(items[0].id)})
        return items
