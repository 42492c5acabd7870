"""The writer's core: what a write is given (MemorySpec) and answers (WriteResult),
the rules every saved memory obeys, and the one versioned change (apply_change)
every other module of the writer uses."""

from __future__ import annotations

import json
import logging
import threading
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.contrib.postgres.search import SearchVector
from django.core.exceptions import ValidationError
from django.db import connection, transaction
from django.db.models import QuerySet, Value
from django.utils import timezone

from memories import vocabulary
from memories.bulk import Computed, insert_objects
from memories.errors import InvalidOperation, VersionConflict, get_or_not_found
from memories.identity import ID_FIELDS, normalize_identifier
from memories.models import (
    EmbeddingState,
    MemoryHistory,
    MemoryItem,
    MemorySource,
    MemoryStatus,
    MemoryVector,
    Tenant,
)
from memories.queue import enqueue
from memories.sensitive import IDENTIFYING, sensitive_kinds_in
from memories.text import content_hash, index_document

logger = logging.getLogger(__name__)


@dataclass
class MemorySpec:
    """What a client asks to remember; validated by the API before it gets here."""

    user_id: str
    text: str
    memory_type: str = "fact"
    importance: float = 0.5
    confidence: float = 1.0
    tags: list[str] = field(default_factory=list)
    data: dict[str, Any] = field(default_factory=dict)
    agent_id: str = ""
    session_id: str = ""
    group_id: str = ""
    valid_at: datetime | None = None
    expires_at: datetime | None = None  # None: the type's default TTL (MEMORY_TTL_DAYS_BY_TYPE), else never
    status: str = MemoryStatus.ACTIVE
    source_session_id: str = ""
    source_message_indices: list[int] = field(default_factory=list)
    subject_entity_id: uuid.UUID | None = None  # whom it is about (memories.people): None, the user's by default
    object_entity_id: uuid.UUID | None = None
    emotion: dict[str, Any] | None = None  # {valence, arousal, label} (memories.emotion), when read


@dataclass
class WriteResult:
    operation: str  # ADD | NOOP | UPDATE | DELETE
    memory: MemoryItem
    reason: str = ""


# --------------------------------------------------------------------------- helpers


def record_history(
    memory: MemoryItem,
    event: str,
    *,
    actor: str,
    old_text: str | None = None,
    new_text: str | None = None,
    old_data: dict[str, Any] | None = None,
    new_data: dict[str, Any] | None = None,
    reason: str = "",
    job_id: str = "",
) -> MemoryHistory:
    return MemoryHistory(
        memory_id=memory.id,
        tenant_id=memory.tenant_id,
        user_id=memory.user_id,
        event=event,
        memory_type=memory.memory_type,
        old_text=old_text,
        new_text=new_text,
        old_data=old_data,
        new_data=new_data,
        actor=actor,
        reason=reason,
        job_id=job_id,
    )


def snapshot_of(memory: MemoryItem) -> dict[str, Any]:
    """The non-text fields a history row records as old/new data."""
    return {
        "memory_type": memory.memory_type,
        "importance": memory.importance,
        "confidence": memory.confidence,
        "tags": list(memory.tags),
        "data": memory.data,
        "status": memory.status,
        "valid_at": memory.valid_at.isoformat() if memory.valid_at else None,
        "invalid_at": memory.invalid_at.isoformat() if memory.invalid_at else None,
        "expires_at": memory.expires_at.isoformat() if memory.expires_at else None,
        "version": memory.version,
        "subject_entity_id": str(memory.subject_entity_id) if memory.subject_entity_id else None,
        "object_entity_id": str(memory.object_entity_id) if memory.object_entity_id else None,
    }


def _changes(before: dict[str, Any], after: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """What a change did, not two full copies: the fields that differ (and,
    inside `data`, only the keys that differ; a removed key is in old only)."""
    old: dict[str, Any] = {}
    new: dict[str, Any] = {}
    for name in before.keys() | after.keys():
        if before.get(name) == after.get(name):
            continue
        if name == "data" and isinstance(before.get(name), dict) and isinstance(after.get(name), dict):
            was, now = before[name], after[name]
            old["data"] = {k: was[k] for k in was if k not in now or now[k] != was[k]}
            new["data"] = {k: now[k] for k in now if k not in was or was[k] != now[k]}
            continue
        old[name], new[name] = before.get(name), after.get(name)
    return old, new


def search_document(text: str) -> SearchVector:
    """The full-text vector of a text, computed by the INSERT itself: Python
    segments (jieba for Chinese), Postgres builds the tsvector."""
    return SearchVector(Value(index_document(text)), config="simple")


# The full-text column as inserts compute it: the same document as search_document.
INDEXED_TEXT = Computed("to_tsvector('simple', {})", "text",
                        lambda item: index_document(item.text))  # type: ignore[attr-defined]


_embedded_here = threading.local()  # this thread's memories whose vectors their own transaction wrote
_EMBEDDED_HERE_MAX = 10_000  # a bound on what rolled-back transactions leave in it


def _embedded_in_transaction() -> set[str]:
    ids: set[str] | None = getattr(_embedded_here, "ids", None)
    if ids is None:
        ids = _embedded_here.ids = set()
    return ids


def memories_embedded_in_transaction(item_ids: Iterable[uuid.UUID | str]) -> None:
    """The surrounding transaction wrote these memories' vectors itself (the text was embedded already,
    to deduplicate it: vectors.vectors_store_known): the embedding their save queued is not sent."""
    ids = _embedded_in_transaction()
    if len(ids) > _EMBEDDED_HERE_MAX:
        ids.clear()
    ids.update(str(i) for i in item_ids)


def enqueue_embedding_after_commit(item_ids: Iterable[uuid.UUID]) -> None:
    """Embed after commit. More than EMBEDDING_INLINE_MAX_ITEMS at once (a batch, an import) never embed
    inside the request: a worker, or with no broker the in-process background pool. Whatever a crash
    or a broker outage leaves `pending` is picked up by the embed-pending sweep (a beat job). Memories
    whose vectors the same transaction wrote (memories_embedded_in_transaction) are left out."""
    ids = [str(i) for i in item_ids]
    if not ids:
        return
    background = len(ids) > settings.EMBEDDING_INLINE_MAX_ITEMS

    def send() -> None:
        embedded = _embedded_in_transaction()
        wanted = [i for i in ids if i not in embedded]
        embedded.difference_update(ids)
        if wanted:
            enqueue(vocabulary.TASK_EMBED_MEMORIES, wanted, swallow_broker_errors=True, background=background,
                    on_commit=False)

    transaction.on_commit(send)


def sync_vector_status(items: Iterable[MemoryItem]) -> None:
    for item in items:
        MemoryVector.objects.filter(item_id=item.id).update(status=item.status, memory_type=item.memory_type)


def current_memories(tenant_id: int, user_id: str) -> QuerySet[MemoryItem]:
    """A user's current memories (not replaced, active or pending): what a new
    text is deduplicated against, and what the unique hash index covers."""
    return MemoryItem.objects.filter(vocabulary.is_current(), tenant_id=tenant_id, user_id=user_id)


def current_with_text(tenant_id: int, user_id: str, digest: str, *,
                      exclude_id: uuid.UUID | str | None = None) -> MemoryItem | None:
    queryset = current_memories(tenant_id, user_id).filter(content_hash=digest)
    found: MemoryItem | None = (queryset.exclude(id=exclude_id) if exclude_id else queryset).first()
    return found


def copy_sources(originals: Iterable[MemoryItem], to: MemoryItem) -> None:
    """A new version or merge keeps the provenance of what it replaces."""
    MemorySource.objects.bulk_create(
        MemorySource(item=to, session_id=s.session_id, message_indices=s.message_indices, job_id=s.job_id)
        for s in MemorySource.objects.filter(item__in=list(originals))
    )


class LockOrderViolation(RuntimeError):
    """A transaction asked for a user's write lock after it had already written or locked rows: two such
    transactions can each hold what the other waits for (issue 51's deadlocks). A programming error, raised
    only with WRITE_LOCK_ORDER_CHECK (the test suite): the fix is to take the lock first."""


def write_lock_key(tenant_id: int, user_id: str) -> str:
    """The advisory lock's name for one user's writes; the keyword-statistics trigger builds the same
    ('ingest:' || tenant_id || ':' || user_id), so a writer that holds it never waits inside the trigger."""
    return f"ingest:{tenant_id}:{user_id}"


def writers_lock(owners: Iterable[tuple[int, str]]) -> None:
    """The write locks of (tenant id, user id) pairs across tenants (a sweep that writes many users' rows),
    in the one order: tenant, then user id in code-point order."""
    by_tenant: dict[int, set[str]] = {}
    for tenant_id, user_id in owners:
        by_tenant.setdefault(tenant_id, set()).add(user_id)
    for tenant_id in sorted(by_tenant):
        users_write_lock(tenant_id, by_tenant[tenant_id])


def users_write_lock(tenant_id: int, user_ids: Iterable[str]) -> None:
    """Serialise writes for these users until the transaction ends, taking their locks in one order
    (code-point order of the user ids, the order the trigger uses too) and before any row lock: a job
    for A and B and a job for B and A queue behind each other instead of deadlocking. Ingestion holds
    them while it decides and applies a job (parallel jobs cannot add the same memory twice), erasure
    while it erases (a job never writes between), every other writer for its one change. Taking a lock
    already held is free (PostgreSQL counts it again)."""
    keys = [write_lock_key(tenant_id, user_id) for user_id in sorted(set(user_ids))]
    if not keys:
        return
    with connection.cursor() as cursor:
        if settings.WRITE_LOCK_ORDER_CHECK:
            _check_lock_order(cursor, keys)
        for key in keys:
            cursor.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", [key])


def user_write_lock(tenant_id: int, user_id: str) -> None:
    """One user's write lock (users_write_lock)."""
    users_write_lock(tenant_id, [user_id])


LOCKS_HELD_SQL = """
SELECT k.key,
       EXISTS (SELECT 1 FROM pg_locks l
                WHERE l.pid = pg_backend_pid() AND l.locktype = 'advisory' AND l.objsubid = 1
                  AND l.classid = ((k.h >> 32) & 4294967295)::oid AND l.objid = (k.h & 4294967295)::oid) AS held,
       EXISTS (SELECT 1 FROM pg_locks l
                WHERE l.pid = pg_backend_pid() AND l.locktype = 'transactionid') AS wrote
  FROM (SELECT key, hashtextextended(key, 0) AS h FROM unnest(%s::text[]) AS key) AS k
"""


def _check_lock_order(cursor: Any, keys: list[str]) -> None:
    """WRITE_LOCK_ORDER_CHECK: refuse a new user lock once the transaction holds a transaction id (it has
    written or locked a row): the lock must come first. Locks already held pass."""
    if connection.atomic_blocks and getattr(connection.atomic_blocks[0], "_from_testcase", False):
        return  # inside a test's wrapping transaction, which wrote its fixtures: no other writer runs there
    cursor.execute(LOCKS_HELD_SQL, [keys])
    late = [key for key, held, wrote in cursor.fetchall() if wrote and not held]
    if late:
        raise LockOrderViolation(f"write lock {', '.join(late)} asked for after this transaction wrote or "
                                 "locked rows: take users' write locks first (writing.users_write_lock)")


def owners_write_lock(rows: QuerySet[Any]) -> None:
    """The write locks of the users who own these rows (memories, traits' memories, review candidates: any
    row with tenant_id and user_id), read without locking and taken before the rows are locked; an owner
    never changes. A malformed id in the filter locks nothing: the lookup after this says not found."""
    try:
        owners = set(rows.values_list("tenant_id", "user_id"))
    except (ValueError, TypeError, ValidationError):
        return
    writers_lock(owners)


def memories_write_lock(tenant: Tenant, memory_ids: Iterable[uuid.UUID | str]) -> None:
    """The write locks of the users who own these memories (owners_write_lock)."""
    owners_write_lock(MemoryItem.objects.filter(tenant=tenant, id__in=list(memory_ids)))


def lock_memory(tenant: Tenant, memory_id: uuid.UUID | str) -> MemoryItem:
    """One memory locked for a change, its user's write lock taken first."""
    memories_write_lock(tenant, [memory_id])
    locked: MemoryItem = get_or_not_found(MemoryItem.objects.select_for_update().filter(tenant=tenant), "memory",
                                          id=memory_id)
    return locked


def check_version(memory: MemoryItem, expected_version: int | None) -> None:
    if memory.expired_at is not None:
        raise VersionConflict(
            f"memory {memory.id} is no longer current",
            current_version=memory.version,
            superseded_by=str(memory.superseded_by_id) if memory.superseded_by_id else None,
        )
    if expected_version is not None and expected_version != memory.version:
        raise VersionConflict(
            f"expected version {expected_version}, memory is at version {memory.version}",
            current_version=memory.version,
        )


def _max_length(field_name: str) -> int:
    field = MemoryItem._meta.get_field(field_name)
    return int(getattr(field, "max_length", 0) or 0)


def refuse_sensitive_identifiers(ids: dict[str, str]) -> None:
    """An id is no place for an e-mail address, a phone number or a card: ids are shown, logged and kept
    beyond the review gate's reach, so one carrying what the detector finds is refused, naming the field
    (a pseudonymous id works). Checked where ids are written: memories, review candidates, jobs."""
    identifying = [kind for kind in settings.SENSITIVE_DETECTORS if kind in IDENTIFYING]
    for name, value in ids.items():
        kinds = sensitive_kinds_in(value, identifying) if value else []
        if kinds:
            raise InvalidOperation(f"{name} carries sensitive data ({', '.join(kinds)}): use an id that names "
                                   "no one (a pseudonymous id)", field=name)


def refuse_sensitive(*, field: str, text: str) -> None:
    """A door with no review queue behind it (a merge's text, given or made of the halves; the admin's
    edit) refuses sensitive text: InvalidOperation naming the field and the kinds, so nothing of it is
    stored."""
    kinds = sensitive_kinds_in(text, settings.SENSITIVE_DETECTORS)
    if kinds:
        raise InvalidOperation(f"{field} carries sensitive data ({', '.join(kinds)}): take it out, or save it "
                               "through a door that holds it for review", field=field)


def validate_spec(spec: MemorySpec) -> None:
    """The rules every saved memory obeys, whoever calls (API, admin, import,
    extraction): PostgreSQL refuses NUL characters in text and JSON, so they
    are refused here as bad input rather than surfacing as a database error."""
    if not spec.user_id or "\x00" in spec.user_id:
        raise InvalidOperation("user_id must be a non-empty string without NUL characters", field="user_id")
    for name in ID_FIELDS:
        setattr(spec, name, normalize_identifier(getattr(spec, name), field=name))
    refuse_sensitive_identifiers({name: getattr(spec, name) for name in ID_FIELDS})
    if not spec.text or not spec.text.strip() or "\x00" in spec.text:
        raise InvalidOperation("text must be non-empty and contain no NUL characters", field="text")
    if len(spec.text) > settings.MEMORY_MAX_TEXT_CHARS:
        raise InvalidOperation(f"text is longer than {settings.MEMORY_MAX_TEXT_CHARS} characters", field="text")
    for name in ("user_id", "agent_id", "session_id", "group_id"):
        limit = _max_length(name)
        if len(getattr(spec, name)) > limit:
            raise InvalidOperation(f"{name} is longer than {limit} characters", field=name)
    if any("\x00" in tag for tag in spec.tags):
        raise InvalidOperation("tags must not contain NUL characters", field="tags")
    tag_limit = int(MemoryItem._meta.get_field("tags").base_field.max_length or 0)
    if any(len(tag) > tag_limit for tag in spec.tags):
        raise InvalidOperation(f"each tag must be at most {tag_limit} characters", field="tags")
    try:
        encoded = json.dumps(spec.data, allow_nan=False)
    except (TypeError, ValueError):
        raise InvalidOperation("data must be JSON without NaN or Infinity", field="data") from None
    if "\\u0000" in encoded:
        raise InvalidOperation("data must not contain NUL characters", field="data")
    if not 0 <= spec.importance <= 1 or not 0 <= spec.confidence <= 1:
        raise InvalidOperation("importance and confidence must be between 0 and 1", field="importance")


def default_expiry(memory_type: str, now: datetime) -> datetime | None:
    """When a memory of this type saved now expires by default (MEMORY_TTL_DAYS_BY_TYPE), or None."""
    days = settings.MEMORY_TTL_DAYS_BY_TYPE.get(memory_type)
    return now + timedelta(days=days) if days else None


def new_item(tenant: Tenant, spec: MemorySpec, now: datetime, **overrides: Any) -> MemoryItem:
    values = dict(
        id=uuid.uuid4(),
        tenant=tenant,
        user_id=spec.user_id,
        agent_id=spec.agent_id,
        session_id=spec.session_id,
        group_id=spec.group_id,
        memory_type=spec.memory_type,
        text=spec.text,
        data=spec.data,
        importance=spec.importance,
        confidence=spec.confidence,
        tags=list(dict.fromkeys(spec.tags)),
        content_hash=content_hash(spec.text),
        status=spec.status,
        archived_at=now if spec.status == MemoryStatus.ARCHIVED else None,
        valid_at=spec.valid_at or now,
        expires_at=spec.expires_at or default_expiry(spec.memory_type, now),
        created_at=now,
        updated_at=now,
        embedding_state=EmbeddingState.PENDING,
        subject_entity_id=spec.subject_entity_id,
        object_entity_id=spec.object_entity_id,
        emotion=spec.emotion,
    )
    values.update(overrides)
    return MemoryItem(**values)


def insert_memories(items: Sequence[MemoryItem]) -> None:
    """The one way new memory rows are written (batches, new versions, merges):
    the full-text column is computed by the INSERT from each text's document."""
    insert_objects(MemoryItem, items, {"search_vector": INDEXED_TEXT})


def apply_change(memory: MemoryItem, change: Callable[[MemoryItem], object], *, actor: str, event: str,
                 fields: Sequence[str], reason: str = "", old_text: str | None = None, new_text: str | None = None,
                 job_id: str = "", now: datetime | None = None, record_data: bool = True,
                 save: bool = True) -> MemoryHistory:
    """The versioned change, written once: snapshot -> change -> version + 1 -> save -> history.

    `change` edits the locked row in place; `fields` are what it may touch. The history row carries the
    fields that differ (record_data=False when they would only repeat the text, as an episode's turns do).
    save=False leaves the row and its history unsaved for a caller that writes a batch of them
    (bulk_update + one insert).
    """
    before = snapshot_of(memory)
    change(memory)
    return _record_change(memory, before, actor=actor, event=event, fields=fields, reason=reason,
                          old_text=old_text, new_text=new_text, job_id=job_id, now=now, record_data=record_data,
                          save=save)


def apply_change_unless_same(memory: MemoryItem, change: Callable[[MemoryItem], object], *, actor: str,
                             event: str, fields: Sequence[str], reason: str = "") -> MemoryHistory | None:
    """apply_change, or nothing at all (None) when the change leaves every recorded field as it was."""
    before = snapshot_of(memory)
    change(memory)
    if snapshot_of(memory) == before:
        return None
    return _record_change(memory, before, actor=actor, event=event, fields=fields, reason=reason)


def apply_change_beside(memory: MemoryItem, *, actor: str, event: str, reason: str,
                        old_data: dict[str, Any] | None = None,
                        new_data: dict[str, Any] | None = None) -> MemoryHistory:
    """A change kept beside the memory row (a trait's stage, its pin, where its support went) is a change of
    the memory all the same: the one versioned change (version + 1 and one history row, in one save), the
    row carrying what changed beside the memory as well as the version it made. `memory` is locked."""
    row = apply_change(memory, lambda _: None, actor=actor, event=event, fields=[], reason=reason, save=False)
    row.old_data = {**(old_data or {}), **(row.old_data or {})}
    row.new_data = {**(new_data or {}), **(row.new_data or {})}
    memory.save(update_fields=["version", "updated_at"])
    row.save()
    return row


def _record_change(memory: MemoryItem, before: dict[str, Any], *, actor: str, event: str, fields: Sequence[str],
                   reason: str = "", old_text: str | None = None, new_text: str | None = None, job_id: str = "",
                   now: datetime | None = None, record_data: bool = True, save: bool = True) -> MemoryHistory:
    memory.version += 1
    memory.updated_at = now or timezone.now()
    # Every versioned change's row says which version it made, even when its fields would only repeat the text.
    old, new = (_changes(before, snapshot_of(memory)) if record_data
                else ({"version": before["version"]}, {"version": memory.version}))
    row = record_history(memory, event, actor=actor, old_text=old_text, new_text=new_text, old_data=old or None,
                         new_data=new or None, reason=reason, job_id=job_id)
    if save:
        memory.save(update_fields=[*dict.fromkeys([*fields, "version", "updated_at"])])
        row.save()
    return row
