"""Changing a memory: update, supersede, invalidate, merge, archive and restore,
expiry, and the trait and review plumbing kept beside the row (notes, the
optimistic confidence step, approvals). Every in-place change goes through
core.apply_change."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime
from typing import Any, cast

from django.db import transaction
from django.db.models import F
from django.utils import timezone

from memories import vocabulary, withdrawals
from memories.bulk import insert_objects
from memories.errors import InvalidOperation, MemoryNotFound, VersionConflict
from memories.excerpts import FORGOTTEN_TURN
from memories.models import (
    CURRENT_STATUSES,
    EmbeddingState,
    HistoryEvent,
    MemoryHistory,
    MemoryItem,
    MemorySource,
    MemoryStatus,
    MemoryType,
    MemoryVector,
    Tenant,
)
from memories.text import content_hash
from memories.writing.core import (
    MemorySpec,
    WriteResult,
    apply_change,
    apply_change_unless_same,
    check_version,
    copy_sources,
    current_with_text,
    enqueue_embedding_after_commit,
    insert_memories,
    lock_memory,
    memories_write_lock,
    new_item,
    record_history,
    refuse_sensitive,
    search_document,
    snapshot_of,
    sync_vector_status,
    users_write_lock,
    validate_spec,
)
from memories.writing.erase import HISTORY_HAS_CONTENT
from memories.writing.people import people_forget_said

# --------------------------------------------------------------------------- change


UNCHANGED = object()  # memory_update: leave this field as it is


def memory_update(
    *,
    tenant: Tenant,
    memory_id: uuid.UUID | str,
    actor: str,
    text: str | None = None,
    importance: float | None = None,
    tags: list[str] | None = None,
    data: dict[str, Any] | None = None,
    expires_at: datetime | None | object = UNCHANGED,
    expected_version: int | None = None,
    reason: str = "",
) -> WriteResult:
    """Change a memory. A new text supersedes it (a new row, version + 1);
    other fields change in place with version + 1. Stale versions conflict.
    expires_at: a moment, None to never expire, UNCHANGED to keep it."""
    with transaction.atomic():
        memory = lock_memory(tenant, memory_id)
        check_version(memory, expected_version)
        if memory_is_forgotten(memory):
            raise InvalidOperation(f"memory {memory.id} was forgotten at the user's request: it cannot be edited "
                                   "back", field="memory_id")
        if text is not None and content_hash(text) != memory.content_hash and memory.memory_type == MemoryType.TRAIT:
            return WriteResult("UPDATE", _retext_trait_locked(memory, text, actor=actor, reason=reason),
                               reason="trait text changed in place: the trait keeps its evidence")
        if text is not None and content_hash(text) != memory.content_hash:
            new = _supersede_locked(memory, new_text=text, actor=actor, reason=reason,
                                    importance=importance, tags=tags, data=data,
                                    expires_at=memory.expires_at if expires_at is UNCHANGED else expires_at)
            return WriteResult("UPDATE", new, reason="text changed: new version")
        def change(row: MemoryItem) -> None:
            if importance is not None:
                row.importance = importance
            if tags is not None:
                row.tags = list(dict.fromkeys(tags))
            if data is not None:
                row.data = data
            if expires_at is not UNCHANGED:
                row.expires_at = expires_at  # type: ignore[assignment]

        if apply_change_unless_same(memory, change, actor=actor, event=HistoryEvent.UPDATE, reason=reason,
                                    fields=["importance", "tags", "data", "expires_at"]) is None:
            return WriteResult("NOOP", memory, reason="nothing changed")
        return WriteResult("UPDATE", memory)


def _retext_trait_locked(memory: MemoryItem, text: str, *, actor: str, reason: str) -> MemoryItem:
    """A trait's row is its identity (evidence and stage hang on it), so its
    text changes in place, with the old and new text in the history."""
    validate_spec(MemorySpec(user_id=memory.user_id, text=text))
    if current_with_text(memory.tenant_id, memory.user_id, content_hash(text), exclude_id=memory.id):
        raise VersionConflict("another current memory of this user already has this text",
                              current_version=memory.version)
    def change(row: MemoryItem) -> None:
        row.text, row.content_hash, row.embedding_state = text, content_hash(text), EmbeddingState.PENDING

    apply_change(memory, change, actor=actor, event=HistoryEvent.UPDATE, old_text=memory.text, new_text=text,
                 reason=reason or "trait text edited", fields=["text", "content_hash", "embedding_state"],
                 record_data=False)
    MemoryItem.objects.filter(id=memory.id).update(search_vector=search_document(text))
    MemoryVector.objects.filter(item_id=memory.id).delete()
    enqueue_embedding_after_commit([memory.id])
    return memory



def memory_supersede(
    *,
    tenant: Tenant,
    memory_id: uuid.UUID | str,
    new_text: str,
    actor: str,
    reason: str = "",
    expected_version: int | None = None,
    job_id: str = "",
    subject: uuid.UUID | None | object = UNCHANGED,
) -> MemoryItem:
    """Replace a memory's text with a new version; the old row is expired, never overwritten. `subject`:
    whom the new words are about, when the caller read it (UNCHANGED: the old version's)."""
    with transaction.atomic():
        memory = lock_memory(tenant, memory_id)
        check_version(memory, expected_version)
        return _supersede_locked(memory, new_text=new_text, actor=actor, reason=reason, job_id=job_id,
                                 subject=subject)


def _supersede_locked(
    memory: MemoryItem,
    *,
    new_text: str,
    actor: str,
    reason: str = "",
    importance: float | None = None,
    tags: list[str] | None = None,
    data: dict[str, Any] | None = None,
    job_id: str = "",
    event: str = HistoryEvent.SUPERSEDE,
    expires_at: datetime | None | object = UNCHANGED,
    subject: uuid.UUID | None | object = UNCHANGED,
) -> MemoryItem:
    """The new version of a locked memory, with its history; `expires_at`: the new version's expiry
    (UNCHANGED keeps the old one's), written with it so the ADD row records it; `subject`: whom the new
    words are about (UNCHANGED: the old version's)."""
    now = timezone.now()
    clash = current_with_text(memory.tenant_id, memory.user_id, content_hash(new_text), exclude_id=memory.id)
    if clash:
        raise VersionConflict(f"memory {clash.id} of this user already has this text",
                              current_version=memory.version)
    validate_spec(MemorySpec(user_id=memory.user_id, text=new_text, tags=tags or [], data=data or {}))
    spec = MemorySpec(
        user_id=memory.user_id, text=new_text, memory_type=memory.memory_type,
        importance=memory.importance if importance is None else importance, confidence=memory.confidence,
        tags=list(memory.tags) if tags is None else tags, data=memory.data if data is None else data,
        agent_id=memory.agent_id, session_id=memory.session_id, group_id=memory.group_id,
        valid_at=memory.valid_at, status=memory.status,
        subject_entity_id=memory.subject_entity_id if subject is UNCHANGED else cast(uuid.UUID | None, subject),
        object_entity_id=memory.object_entity_id if subject is UNCHANGED else None,
    )
    memory.expired_at = now
    memory.updated_at = now
    memory.save(update_fields=["expired_at", "updated_at"])
    new = new_item(memory.tenant, spec, now, version=memory.version + 1,
                   expires_at=memory.expires_at if expires_at is UNCHANGED else expires_at)
    insert_memories([new])
    memory.superseded_by = new
    memory.save(update_fields=["superseded_by"])
    copy_sources([memory], new)
    MemoryHistory.objects.bulk_create([
        record_history(memory, event, actor=actor, old_text=memory.text, new_text=new_text,
                       reason=reason or f"superseded by {new.id}", job_id=job_id),
        record_history(new, HistoryEvent.ADD, actor=actor, old_text=memory.text, new_text=new_text,
                       new_data=snapshot_of(new), reason=f"new version of {memory.id}", job_id=job_id),
    ])
    enqueue_embedding_after_commit([new.id])
    withdrawals.announce(tenant_id=memory.tenant_id, user_id=memory.user_id, memory_ids=[memory.id],
                         cause="superseded", replaced_by={str(memory.id): str(new.id)})
    return new


def memory_invalidate(
    *, tenant: Tenant, memory_id: uuid.UUID | str, invalid_at: datetime, actor: str, reason: str, job_id: str = "",
    contradicted_by: MemoryItem | None = None,
) -> MemoryItem:
    """A contradicted fact stops holding at `invalid_at` (world time) and stops
    being current now (system time). It is kept for as_of queries, never deleted.
    `contradicted_by`: the memory that says otherwise, when it is already saved
    (what the fact supported is re-evaluated against it)."""
    with transaction.atomic():
        memory = lock_memory(tenant, memory_id)
        check_version(memory, None)
        now = timezone.now()

        def change(row: MemoryItem) -> None:
            row.invalid_at, row.expired_at = invalid_at, now

        history = apply_change(memory, change, actor=actor, event=HistoryEvent.INVALIDATE, old_text=memory.text,
                               reason=reason, job_id=job_id, now=now, fields=["invalid_at", "expired_at"])
        if contradicted_by is not None:  # the memory page links the fact to what replaced it
            history.new_data = {**(history.new_data or {}), "contradicted_by": str(contradicted_by.id)}
            history.save(update_fields=["new_data"])
        withdrawals.announce(tenant_id=memory.tenant_id, user_id=memory.user_id, memory_ids=[memory.id],
                             cause="invalidated",
                             replaced_by={str(memory.id): str(contradicted_by.id)} if contradicted_by else {})
        return memory


def merged_text_default(texts: Sequence[str]) -> str:
    """The merged text when none is given: the distinct texts, in order, as one."""
    parts = list(dict.fromkeys(" ".join(t.split()).rstrip(".;") for t in texts))
    return "; ".join(parts) + "."


def merged_text_of(memories: Sequence[MemoryItem]) -> str:
    """What merging these memories says when no one writes it: their texts in the order they happened
    (merged_text_default). The admin's merge form offers it; memory_merge uses it when given no text."""
    by_time = sorted(memories, key=lambda m: (m.valid_at or m.created_at, str(m.id)))
    return merged_text_default([m.text for m in by_time])


def _lock_for_merge(tenant: Tenant, ids: list[str], expected_versions: dict[str, int]) -> list[MemoryItem]:
    """The memories to merge, locked: all found, one user's, each at the version the caller saw."""
    memories_write_lock(tenant, ids)
    memories = list(MemoryItem.objects.select_for_update().filter(tenant=tenant, id__in=ids).order_by("id"))
    if len(memories) != len(ids):
        raise MemoryNotFound("one or more memories to merge were not found")
    if len({m.user_id for m in memories}) > 1:
        raise InvalidOperation("memories of different users cannot be merged", field="memory_ids")
    for memory in memories:
        check_version(memory, expected_versions.get(str(memory.id)))
    return memories


def _merged_item(tenant: Tenant, memories: list[MemoryItem], merged_text: str | None, now: datetime) -> MemoryItem:
    """The merged memory (not saved): the text given or the originals' in time order, the union of their
    tags and data, the highest importance and confidence, the earliest world time, the next version."""
    if merged_text is None:  # the halves passed the gate one by one; together they may say more
        merged_text = merged_text_of(memories)
        texts = [m.text for m in memories]
        for said in (merged_text, " ".join(texts), " ".join(reversed(texts))):  # a number split over two
            refuse_sensitive(field="text", text=said)
    first = memories[0]
    data: dict[str, Any] = {}
    for m in memories:
        data = {**m.data, **data}
    spec = MemorySpec(
        user_id=first.user_id, text=merged_text, memory_type=first.memory_type,
        importance=max(m.importance for m in memories), confidence=max(m.confidence for m in memories),
        tags=list(dict.fromkeys(t for m in memories for t in m.tags)), data=data, agent_id=first.agent_id,
        group_id=first.group_id, valid_at=min((m.valid_at for m in memories if m.valid_at), default=now),
    )
    validate_spec(spec)
    # It expires only when every original would have: one that never expires keeps its words.
    expiries = [m.expires_at for m in memories]
    return new_item(tenant, spec, now, version=max(m.version for m in memories) + 1,
                    expires_at=None if None in expiries else max(e for e in expiries if e))


def memory_merge(
    *, tenant: Tenant, memory_ids: Sequence[uuid.UUID | str], merged_text: str | None, actor: str, reason: str = "",
    expected_versions: dict[str, int] | None = None,
) -> MemoryItem:
    """Merge memories of one user into one new memory; the originals are superseded by it.
    expected_versions (id -> version) makes a stale view a conflict, as for an update."""
    ids = list(dict.fromkeys(map(str, memory_ids)))
    if len(ids) < 2:
        raise InvalidOperation("select at least two memories to merge", field="memory_ids")
    unknown = set(expected_versions or {}) - set(ids)
    if unknown:
        raise InvalidOperation(f"expected_versions names memories not being merged: {sorted(unknown)}",
                               field="expected_versions")
    with transaction.atomic():
        memories = _lock_for_merge(tenant, ids, expected_versions or {})
        now = timezone.now()
        first = memories[0]
        for m in memories:
            m.expired_at = now
            m.updated_at = now
        MemoryItem.objects.bulk_update(memories, ["expired_at", "updated_at"])
        merged = _merged_item(tenant, memories, merged_text, now)
        merged_text = merged.text
        clash = current_with_text(tenant.id, first.user_id, merged.content_hash)
        if clash:
            raise VersionConflict(f"memory {clash.id} of this user already has the merged text")
        insert_memories([merged])
        for m in memories:
            m.superseded_by = merged
        MemoryItem.objects.bulk_update(memories, ["superseded_by"])
        copy_sources(memories, merged)
        merged_ids = ", ".join(str(m.id) for m in memories)
        MemoryHistory.objects.bulk_create(
            [record_history(m, HistoryEvent.MERGE, actor=actor, old_text=m.text, new_text=merged_text,
                            reason=reason or f"merged into {merged.id}") for m in memories]
            + [record_history(merged, HistoryEvent.MERGE, actor=actor, new_text=merged_text,
                              new_data=snapshot_of(merged), reason=reason or f"merged from {merged_ids}")]
        )
        enqueue_embedding_after_commit([merged.id])
        withdrawals.announce(tenant_id=tenant.id, user_id=first.user_id, memory_ids=[m.id for m in memories],
                             cause="superseded", replaced_by={str(m.id): str(merged.id) for m in memories})
        return merged


def memory_set_status(
    *, tenant: Tenant, memory_id: uuid.UUID | str, status: str, actor: str, reason: str = "",
    expected_version: int | None = None,
) -> WriteResult:
    """Archive (soft delete), restore, approve or reject a memory, as a history event."""
    events: dict[str, str] = {
        MemoryStatus.ARCHIVED: HistoryEvent.DELETE,
        MemoryStatus.ACTIVE: HistoryEvent.RESTORE,
        MemoryStatus.REJECTED: HistoryEvent.REJECT,
    }
    with transaction.atomic():
        memory = lock_memory(tenant, memory_id)
        if expected_version is not None and expected_version != memory.version:
            raise VersionConflict(f"expected version {expected_version}, memory is at version {memory.version}",
                                  current_version=memory.version)
        if memory.status == status:
            return WriteResult("NOOP", memory, reason=f"already {status}")
        if memory_is_forgotten(memory):
            raise InvalidOperation(f"memory {memory.id} was forgotten at the user's request: its words are gone "
                                   "and it cannot be restored", field="status")
        if status in CURRENT_STATUSES and memory.expired_at is None:
            clash = current_with_text(tenant.id, memory.user_id, memory.content_hash, exclude_id=memory.id)
            if clash:
                raise VersionConflict(f"memory {clash.id} with the same text is already current")
        approving = memory.status == MemoryStatus.PENDING and status == MemoryStatus.ACTIVE
        event = HistoryEvent.APPROVE if approving else events[status]
        was_current = memory.status in CURRENT_STATUSES
        now = timezone.now()

        def change(row: MemoryItem) -> None:
            row.status, row.archived_at = status, now if status == MemoryStatus.ARCHIVED else None

        apply_change(memory, change, actor=actor, event=event, reason=reason, now=now,
                     fields=["status", "archived_at"])
        sync_vector_status([memory])
        if status not in CURRENT_STATUSES and was_current:
            withdrawals.announce(tenant_id=tenant.id, user_id=memory.user_id, memory_ids=[memory.id],
                                 cause="forgotten")
        return WriteResult("DELETE" if status == MemoryStatus.ARCHIVED else "UPDATE", memory)


def memories_archive_expired(*, now: datetime | None = None, limit: int = 500) -> int:
    """Archive memories past their expires_at (search already skips them), each
    with a DELETE history row saying so; returns how many. One transaction per user, its write lock
    first; rows locked by a writer are left for the next run."""
    now = now or timezone.now()
    owners = (MemoryItem.objects.filter(vocabulary.is_expired(now)).order_by("expires_at")
              .values_list("tenant_id", "user_id")[:limit])
    archived = 0
    for tenant_id, user_id in dict.fromkeys(owners):
        archived += _archive_expired_of(tenant_id, user_id, now, limit - archived)
        if archived >= limit:
            break
    return archived


def _archive_expired_of(tenant_id: int, user_id: str, now: datetime, limit: int) -> int:
    with transaction.atomic():
        users_write_lock(tenant_id, [user_id])
        expired = list(MemoryItem.objects.select_for_update(skip_locked=True)
                       .filter(vocabulary.is_expired(now), tenant_id=tenant_id, user_id=user_id)
                       .order_by("expires_at")[:limit])
        history = []
        for memory in expired:
            moment = memory.expires_at.isoformat() if memory.expires_at else ""

            def change(row: MemoryItem) -> None:
                row.status, row.archived_at = MemoryStatus.ARCHIVED, now

            row = apply_change(memory, change, actor="expiry", event=HistoryEvent.DELETE, now=now,
                               reason=f"expired at {moment}", fields=["status", "archived_at"], save=False)
            history.append(row)
        MemoryItem.objects.bulk_update(expired, ["status", "version", "updated_at", "archived_at"])
        sync_vector_status(expired)
        insert_objects(MemoryHistory, history)
    return len(expired)


def memory_note(*, memory: MemoryItem, event: str, actor: str, reason: str, old_data: dict[str, Any] | None = None,
                new_data: dict[str, Any] | None = None, save: bool = True) -> MemoryHistory:
    """A history row that is no version step of its own: a trait's stage step taken with the confidence
    change that carried the version, the stage beside a dissolution's archive. Every other change to a
    memory is a versioned change (apply_change, or apply_change_beside for what is kept beside the row)."""
    row = record_history(memory, event, actor=actor, old_data=old_data, new_data=new_data, reason=reason)
    if save:
        row.save()
    return row


def memory_compare_and_set_confidence(*, memory: MemoryItem, confidence: float, actor: str, reason: str,
                                      now: datetime) -> bool:
    """Optimistic lock for trait evidence: set confidence and bump the version
    only if the memory is still at the version the caller read; a history row
    records the step. False when another writer got there first."""
    new_confidence = min(max(confidence, 0.0), 1.0)
    bumped = MemoryItem.objects.filter(id=memory.id, version=memory.version).update(
        version=F("version") + 1, updated_at=now, confidence=new_confidence)
    if bumped:
        record_history(memory, HistoryEvent.UPDATE, actor=actor, reason=reason,
                       old_data={"confidence": round(memory.confidence, 4), "version": memory.version},
                       new_data={"confidence": round(new_confidence, 4), "version": memory.version + 1}).save()
    return bool(bumped)


def memory_record_approval(*, memory: MemoryItem, actor: str, reason: str, edited: bool, session_id: str,
                           message_indices: list[int], job_id: str, note: dict[str, Any] | None = None) -> None:
    """The APPROVE event of a reviewed candidate (and its source, if the
    memory has none). An edit is recorded as who and when, never the words
    the reviewer removed; `note`: what the reviewer decided about sensitive
    data (kept as written and why, or redacted)."""
    if session_id and not memory.sources.exists():
        MemorySource.objects.create(item=memory, session_id=session_id, message_indices=message_indices,
                                    job_id=job_id)
    record_history(memory, HistoryEvent.APPROVE, actor=actor, new_text=memory.text, reason=reason, job_id=job_id,
                   new_data={"edited_by_reviewer": edited, **(note or {})}).save()


FORGOTTEN_REASON = "forgotten at the user's request"


def memory_is_forgotten(memory: MemoryItem) -> bool:
    """A memory the user asked to forget: archived with its words gone; it is never restored or edited."""
    return memory.status == MemoryStatus.ARCHIVED and memory.text == FORGOTTEN_TURN


def memory_forget(*, tenant: Tenant, memory_id: uuid.UUID | str, actor: str) -> MemoryItem:
    """What a user asked to forget leaves nothing readable: the memory is archived with its text, data and
    tags replaced by FORGOTTEN_TURN, its vectors go, every history row of it and of the versions it
    superseded keeps its event, actor and time but loses its words (as erasure scrubs them), and one
    DELETE row without content says why. It can never be restored (memory_set_status, memory_update
    refuse it). Earlier versions in its chain are emptied the same way."""
    with transaction.atomic():
        memory = lock_memory(tenant, memory_id)
        if memory_is_forgotten(memory):
            return memory
        chain, frontier = [memory], [memory.id]
        while frontier:  # the versions it superseded said the same thing in earlier words
            earlier = list(MemoryItem.objects.select_for_update().filter(tenant=tenant, superseded_by__in=frontier)
                           .exclude(id__in=[m.id for m in chain]))
            chain.extend(earlier)
            frontier = [m.id for m in earlier]
        was_current = memory.status in CURRENT_STATUSES and memory.expired_at is None
        ids = [m.id for m in chain]
        MemoryHistory.objects.filter(tenant=tenant, memory_id__in=ids).filter(HISTORY_HAS_CONTENT).update(
            old_text=None, new_text=None, old_data=None, new_data=None, reason="")
        for said in {m.text for m in chain if len(m.text) >= 8 and m.text != FORGOTTEN_TURN}:
            # other memories' rows quote it too ("contradicted by: ..."): those reasons go
            MemoryHistory.objects.filter(tenant=tenant, user_id=memory.user_id, reason__contains=said).update(
                reason=FORGOTTEN_TURN)
        MemoryVector.objects.filter(item_id__in=ids).delete()
        people_forget_said(tenant, memory.user_id, ids)
        now = timezone.now()
        rows = []
        for row in chain:
            def change(item: MemoryItem, current: bool = row.id == memory.id) -> None:
                item.text, item.data, item.tags = FORGOTTEN_TURN, {}, []
                item.content_hash = content_hash(FORGOTTEN_TURN)
                item.embedding_state = EmbeddingState.DONE  # nothing to embed: the marker is never searched
                item.status = MemoryStatus.ARCHIVED
                item.archived_at = item.archived_at if item.archived_at and not current else now

            rows.append(apply_change(row, change, actor=actor, event=HistoryEvent.DELETE, reason=FORGOTTEN_REASON,
                                     now=now, record_data=False, save=False, fields=[]))
        MemoryItem.objects.bulk_update(chain, ["text", "data", "tags", "content_hash", "embedding_state", "status",
                                               "archived_at", "version", "updated_at"])
        MemoryItem.objects.filter(id__in=ids).update(search_vector=None)
        insert_objects(MemoryHistory, rows)
        if was_current:
            withdrawals.announce(tenant_id=tenant.id, user_id=memory.user_id, memory_ids=[memory.id],
                                 cause="forgotten")
        return memory
