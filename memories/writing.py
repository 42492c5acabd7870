"""Every rule about changing a memory: save, update, supersede, invalidate,
merge, archive, restore, forget.

Each public function is one transaction and writes its MemoryHistory rows in
it; embedding is enqueued only after commit. Views, admin actions, tasks and
commands call these and nothing else to change a memory.
"""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from django.apps import apps
from django.contrib.postgres.search import SearchVector
from django.db import IntegrityError, connection, transaction
from django.db.models import F, Q, Value
from django.utils import timezone

from memories import vocabulary, withdrawals
from memories.bulk import Computed, insert_objects
from memories.errors import InvalidOperation, MemoryNotFound, VersionConflict, get_or_not_found
from memories.identity import ID_FIELDS, normalize_identifier
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
from memories.queue import enqueue
from memories.quota import quota_check
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
    data: dict = field(default_factory=dict)
    agent_id: str = ""
    session_id: str = ""
    group_id: str = ""
    valid_at: datetime | None = None
    expires_at: datetime | None = None  # None: the type's default TTL (MEMORY_TTL_DAYS_BY_TYPE), else never
    status: str = MemoryStatus.ACTIVE
    source_session_id: str = ""
    source_message_indices: list[int] = field(default_factory=list)


@dataclass
class WriteResult:
    operation: str  # ADD | NOOP | UPDATE | DELETE
    memory: MemoryItem
    reason: str = ""


# --------------------------------------------------------------------------- helpers


def _history(
    memory: MemoryItem,
    event: str,
    *,
    actor: str,
    old_text: str | None = None,
    new_text: str | None = None,
    old_data: dict | None = None,
    new_data: dict | None = None,
    reason: str = "",
    job_id: str = "",
) -> MemoryHistory:
    return MemoryHistory(
        memory_id=memory.id,
        tenant_id=memory.tenant_id,
        user_id=memory.user_id,
        event=event,
        old_text=old_text,
        new_text=new_text,
        old_data=old_data,
        new_data=new_data,
        actor=actor,
        reason=reason,
        job_id=job_id,
    )


def _snapshot(memory: MemoryItem) -> dict:
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
    }


def _changes(before: dict, after: dict) -> tuple[dict, dict]:
    """What a change did, not two full copies: the fields that differ (and,
    inside `data`, only the keys that differ; a removed key is in old only)."""
    old: dict = {}
    new: dict = {}
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


def _enqueue_embedding(item_ids: Iterable[uuid.UUID]) -> None:
    ids = [str(i) for i in item_ids]
    if ids:  # broker down: the rows stay 'pending' for the backfill
        enqueue(vocabulary.TASK_EMBED_MEMORIES, ids, swallow_broker_errors=True)


def _sync_vector_status(items: Iterable[MemoryItem]) -> None:
    for item in items:
        MemoryVector.objects.filter(item_id=item.id).update(status=item.status, memory_type=item.memory_type)


def current_memories(tenant_id: int, user_id: str):
    """A user's current memories (not replaced, active or pending): what a new
    text is deduplicated against, and what the unique hash index covers."""
    return MemoryItem.objects.filter(vocabulary.is_current(), tenant_id=tenant_id, user_id=user_id)


def _current_with_text(tenant_id: int, user_id: str, digest: str, *, exclude_id=None) -> MemoryItem | None:
    queryset = current_memories(tenant_id, user_id).filter(content_hash=digest)
    return (queryset.exclude(id=exclude_id) if exclude_id else queryset).first()


def _copy_sources(originals: Iterable[MemoryItem], to: MemoryItem) -> None:
    """A new version or merge keeps the provenance of what it replaces."""
    MemorySource.objects.bulk_create(
        MemorySource(item=to, session_id=s.session_id, message_indices=s.message_indices, job_id=s.job_id)
        for s in MemorySource.objects.filter(item__in=list(originals))
    )


def user_write_lock(tenant_id: int, user_id: str) -> None:
    """Serialise writes for one user until the transaction ends: ingestion
    holds it while it decides and applies a job (parallel jobs cannot add the
    same memory twice), erasure while it erases (a job never writes between)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", [f"ingest:{tenant_id}:{user_id}"])


def _lock_memory(tenant: Tenant, memory_id: uuid.UUID | str) -> MemoryItem:
    return get_or_not_found(MemoryItem.objects.select_for_update().filter(tenant=tenant), "memory", id=memory_id)


def _check_version(memory: MemoryItem, expected_version: int | None) -> None:
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


def validate_spec(spec: MemorySpec) -> None:
    """The rules every saved memory obeys, whoever calls (API, admin, import,
    extraction): PostgreSQL refuses NUL characters in text and JSON, so they
    are refused here as bad input rather than surfacing as a database error."""
    from django.conf import settings

    if not spec.user_id or "\x00" in spec.user_id:
        raise InvalidOperation("user_id must be a non-empty string without NUL characters", field="user_id")
    for name in ID_FIELDS:
        setattr(spec, name, normalize_identifier(getattr(spec, name), field=name))
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
    from django.conf import settings

    days = settings.MEMORY_TTL_DAYS_BY_TYPE.get(memory_type)
    return now + timedelta(days=days) if days else None


def _new_item(tenant: Tenant, spec: MemorySpec, now: datetime, **overrides) -> MemoryItem:
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
    )
    values.update(overrides)
    return MemoryItem(**values)


def _insert_memories(items: Sequence[MemoryItem]) -> None:
    """The one way new memory rows are written (batches, new versions, merges):
    the full-text column is computed by the INSERT from each text's document."""
    insert_objects(MemoryItem, items, {"search_vector": INDEXED_TEXT})


# --------------------------------------------------------------------------- create


def memory_create(*, tenant: Tenant, spec: MemorySpec, actor: str, job_id: str = "",
                  count_for_reflection: bool = True) -> WriteResult:
    """Save one memory; the same text for the same user again is a NOOP."""
    return memory_create_batch(tenant=tenant, specs=[spec], actor=actor, job_id=job_id,
                               count_for_reflection=count_for_reflection)[0]


def memory_create_batch(
    *, tenant: Tenant, specs: Sequence[MemorySpec], actor: str, job_id: str = "", enqueue_embedding: bool = True,
    count_for_reflection: bool = True,
) -> list[WriteResult]:
    """Save many memories in one transaction, deduplicated by content hash.

    An existing current memory with the same text is a NOOP, or an UPDATE when
    the request brings tags or data keys it lacks. A concurrent writer of the
    same text makes the unique index fire; the batch is then retried and sees
    the other's row. Bulk loaders pass enqueue_embedding=False and embed in
    their own batches (the rows stay embedding_state=pending until then).

    New memories count toward their users' importance trigger for reflection
    (after commit); ingestion passes count_for_reflection=False and asks once per job.
    """
    for attempt in range(3):
        try:
            with transaction.atomic():
                results = _create_batch(tenant, specs, actor, job_id, enqueue_embedding)
                added = sorted({r.memory.user_id for r in results if r.operation == "ADD"})
                if count_for_reflection and added:
                    reflection_nudge(tenant.id, added)
                return results
        except IntegrityError as exc:
            if "memory_unique_current_hash" not in str(exc) or attempt == 2:
                raise
            logger.info("concurrent save of the same text; retrying batch")
    raise AssertionError("unreachable")


def _create_batch(tenant: Tenant, specs: Sequence[MemorySpec], actor: str, job_id: str,
                  enqueue_embedding: bool) -> list[WriteResult]:
    for spec in specs:
        validate_spec(spec)
    now = timezone.now()
    hashes = [content_hash(spec.text) for spec in specs]
    existing: dict[tuple[str, str, bool], MemoryItem] = {}
    if specs:
        pairs = sorted({(spec.user_id, digest) for spec, digest in zip(specs, hashes, strict=True)})
        # (user_id, content_hash) pairs probe the unique index row by row; two
        # separate IN lists could not use it (measured 120 ms -> a few ms per 1,000).
        rows = MemoryItem.objects.raw(
            f"""SELECT m.* FROM memory_items m
               JOIN unnest(%s::varchar[], %s::varchar[]) AS p(user_id, content_hash)
                 ON m.user_id = p.user_id AND m.content_hash = p.content_hash
               WHERE m.tenant_id = %s AND {vocabulary.sql_not_replaced("m")}
                 AND {vocabulary.sql_status_in([*CURRENT_STATUSES, MemoryStatus.ARCHIVED])}
               ORDER BY m.id FOR UPDATE OF m""",
            [[p[0] for p in pairs], [p[1] for p in pairs], tenant.id],
        )
        for row in rows:
            existing[(row.user_id, row.content_hash, row.status == MemoryStatus.ARCHIVED)] = row

    results: list[WriteResult] = []
    new_items: list[MemoryItem] = []
    new_sources: list[MemorySource] = []
    history: list[MemoryHistory] = []
    updated: dict[uuid.UUID, MemoryItem] = {}

    for spec, digest in zip(specs, hashes, strict=True):
        # An active save matches current active/pending rows (an archived text may be saved again);
        # an archived one (imports) matches any current row, so re-imports stay NOOPs.
        archived = spec.status == MemoryStatus.ARCHIVED
        current = existing.get((spec.user_id, digest, False)) or (
            existing.get((spec.user_id, digest, True)) if archived else None)
        if current is None:
            # A microsecond apart: a batch keeps the order it was sent in (search.neighbours reads it).
            item = _new_item(tenant, spec, now + timedelta(microseconds=len(new_items)))
            existing[(spec.user_id, digest, archived)] = item
            new_items.append(item)
            history.append(_history(item, HistoryEvent.ADD, actor=actor, new_text=item.text,
                                    new_data=_snapshot(item), job_id=job_id))
            if spec.source_session_id or spec.source_message_indices:
                new_sources.append(MemorySource(item=item, session_id=spec.source_session_id,
                                                message_indices=spec.source_message_indices, job_id=job_id))
            results.append(WriteResult("ADD", item))
            continue
        new_tags = [t for t in spec.tags if t not in current.tags]
        new_data = {k: v for k, v in spec.data.items() if k not in current.data}
        if not new_tags and not new_data:
            results.append(WriteResult("NOOP", current, reason="same content as an existing memory"))
            continue
        before = _snapshot(current)
        current.tags = list(current.tags) + new_tags
        current.data = {**current.data, **new_data}
        current.importance = max(current.importance, spec.importance)
        if current.id not in {i.id for i in new_items}:
            current.version += 1
            current.updated_at = now
            updated[current.id] = current
            old, new = _changes(before, _snapshot(current))
            history.append(_history(current, HistoryEvent.UPDATE, actor=actor, old_data=old, new_data=new,
                                    reason="same text with new tags or data", job_id=job_id))
        results.append(WriteResult("UPDATE", current, reason="same text with new tags or data"))

    quota_check(tenant, memories=len(new_items),
                size=sum(len(i.text.encode()) + len(json.dumps(i.data, ensure_ascii=False)) for i in new_items))
    _insert_memories(new_items)
    if updated:
        MemoryItem.objects.bulk_update(list(updated.values()), ["tags", "data", "importance", "version", "updated_at"])
    MemorySource.objects.bulk_create(new_sources, batch_size=1000)
    insert_objects(MemoryHistory, history)
    if enqueue_embedding:
        _enqueue_embedding(item.id for item in new_items)
    return results


def reflection_nudge(tenant_id: int, user_ids: Sequence[str]) -> None:
    """Ask reflection (by task name: it builds on memories) whether these users' new
    memories now weigh enough for a cycle. After commit; a broker fault never fails a save."""
    enqueue(vocabulary.TASK_REFLECT_IF_IMPORTANT, tenant_id, list(user_ids), swallow_broker_errors=True)


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
    data: dict | None = None,
    expires_at: datetime | None | object = UNCHANGED,
    expected_version: int | None = None,
    reason: str = "",
) -> WriteResult:
    """Change a memory. A new text supersedes it (a new row, version + 1);
    other fields change in place with version + 1. Stale versions conflict.
    expires_at: a moment, None to never expire, UNCHANGED to keep it."""
    with transaction.atomic():
        memory = _lock_memory(tenant, memory_id)
        _check_version(memory, expected_version)
        if text is not None and content_hash(text) != memory.content_hash and memory.memory_type == MemoryType.TRAIT:
            return WriteResult("UPDATE", _retext_trait_locked(memory, text, actor=actor, reason=reason),
                               reason="trait text changed in place: the trait keeps its evidence")
        if text is not None and content_hash(text) != memory.content_hash:
            new = _supersede_locked(memory, new_text=text, actor=actor, reason=reason,
                                    importance=importance, tags=tags, data=data)
            if expires_at is not UNCHANGED and expires_at != new.expires_at:
                MemoryItem.objects.filter(id=new.id).update(expires_at=expires_at)
                new.expires_at = expires_at  # type: ignore[assignment]
            return WriteResult("UPDATE", new, reason="text changed: new version")
        before = _snapshot(memory)
        if importance is not None:
            memory.importance = importance
        if tags is not None:
            memory.tags = list(dict.fromkeys(tags))
        if data is not None:
            memory.data = data
        if expires_at is not UNCHANGED:
            memory.expires_at = expires_at  # type: ignore[assignment]
        if _snapshot(memory) == before:
            return WriteResult("NOOP", memory, reason="nothing changed")
        memory.version += 1
        memory.updated_at = timezone.now()
        memory.save(update_fields=["importance", "tags", "data", "expires_at", "version", "updated_at"])
        old_fields, new_fields = _changes(before, _snapshot(memory))
        _history(memory, HistoryEvent.UPDATE, actor=actor, old_data=old_fields, new_data=new_fields,
                 reason=reason).save()
        return WriteResult("UPDATE", memory)


def _retext_trait_locked(memory: MemoryItem, text: str, *, actor: str, reason: str) -> MemoryItem:
    """A trait's row is its identity (evidence and stage hang on it), so its
    text changes in place, with the old and new text in the history."""
    validate_spec(MemorySpec(user_id=memory.user_id, text=text))
    if _current_with_text(memory.tenant_id, memory.user_id, content_hash(text), exclude_id=memory.id):
        raise VersionConflict("another current memory of this user already has this text",
                              current_version=memory.version)
    old_text = memory.text
    memory.text, memory.content_hash = text, content_hash(text)
    memory.version += 1
    memory.updated_at = timezone.now()
    memory.embedding_state = EmbeddingState.PENDING
    memory.save(update_fields=["text", "content_hash", "version", "updated_at", "embedding_state"])
    MemoryItem.objects.filter(id=memory.id).update(search_vector=search_document(text))
    MemoryVector.objects.filter(item_id=memory.id).delete()
    _history(memory, HistoryEvent.UPDATE, actor=actor, old_text=old_text, new_text=text,
             reason=reason or "trait text edited").save()
    _enqueue_embedding([memory.id])
    return memory


EPISODE_TAG = "episode"  # an episode memory: a session's original turns (seed 002's MemUnit)


def episode_lines(turns: Sequence[dict]) -> str:
    """One line per turn: "[2023-05-08 13:56] Caroline: I went to a support group yesterday"."""
    return "\n".join(f"[{t.get('at', '')[:16].replace('T', ' ')}] {t['speaker']}: {' '.join(t['text'].split())}"
                      for t in turns)


def _episode_groups(turns: Sequence[dict], room: int, max_chars: int) -> list[list[dict]]:
    """Split turns into groups whose lines fit: the first into `room` (what the current
    episode has left), the others into max_chars each; a turn is never split."""
    groups: list[list[dict]] = [[]]
    left = room
    for turn in turns:
        size = len(episode_lines([turn])) + 1
        if size > left and (groups[-1] or left < max_chars):  # a fresh part takes even an oversized turn
            groups.append([])
            left = max_chars
        groups[-1].append(turn)
        left -= size
    return groups


def episode_append(*, tenant: Tenant, user_id: str, session_id: str, turns: Sequence[dict], actor: str,
                   job_id: str = "", agent_id: str = "", group_id: str = "", max_chars: int = 2000,
                   narrative: str | None = None) -> list[MemoryItem]:
    """Keep a speaker's original turns of a session as episodic memories (seed 002's MemUnit):
    appended to the session's current episode (text, full text, data.turns; a history UPDATE
    with the added lines; re-embedded) while it stays under max_chars, then in new parts.
    Call under the user's write lock (ingestion holds it). A narrative (with an LLM) is added
    to the last episode touched, as a "Summary:" line and in data.narratives."""
    from django.conf import settings

    longest = settings.MEMORY_MAX_TEXT_CHARS - 200  # a title and one very long turn still fit a memory
    turns = [{**t, "text": t["text"][:longest]} for t in turns]
    episode = (MemoryItem.objects.select_for_update()
               .filter(vocabulary.is_current(), tenant=tenant, user_id=user_id, session_id=session_id,
                       memory_type=MemoryType.EPISODIC, tags__contains=[EPISODE_TAG])
               .order_by("-created_at").first())
    room = max_chars - len(episode.text) if episode is not None else 0
    touched: list[MemoryItem] = []
    for index, group in enumerate(_episode_groups(turns, room, max_chars)):
        if not group:
            continue
        lines = episode_lines(group)
        indices = [int(t["index"]) for t in group if "index" in t]
        if index == 0 and episode is not None:
            episode.text = f"{episode.text}\n{lines}"
            episode.content_hash = content_hash(episode.text)
            episode.data = {**episode.data, "turns": [*episode.data.get("turns", []), *group]}
            episode.version += 1
            episode.updated_at = timezone.now()
            episode.embedding_state = EmbeddingState.PENDING
            episode.save(update_fields=["text", "content_hash", "data", "version", "updated_at", "embedding_state"])
            MemoryItem.objects.filter(id=episode.id).update(search_vector=search_document(episode.text))
            MemorySource.objects.create(item=episode, session_id=session_id, message_indices=indices, job_id=job_id)
            _history(episode, HistoryEvent.UPDATE, actor=actor, new_text=lines, job_id=job_id,
                     reason=f"episode grew by {len(group)} turn(s)").save()
            _enqueue_embedding([episode.id])
            touched.append(episode)
            continue
        part = 1 + MemoryItem.objects.filter(tenant=tenant, user_id=user_id, session_id=session_id,
                                             tags__contains=[EPISODE_TAG], expired_at__isnull=True).count()
        day = str(group[0].get("at", ""))[:10]
        title = f"Conversation {session_id}" + (f", {day}" if day else "") + (f" (part {part})" if part > 1 else "")
        spec = MemorySpec(user_id=user_id, text=f"{title}\n{lines}", memory_type=MemoryType.EPISODIC,
                          importance=0.3, confidence=1.0, tags=[EPISODE_TAG],
                          data={"session_id": session_id, "part": part, "turns": list(group)}, agent_id=agent_id,
                          session_id=session_id, group_id=group_id, source_session_id=session_id,
                          source_message_indices=indices)
        touched.append(_create_batch(tenant, [spec], actor, job_id, True)[0].memory)
    summary = f"Summary: {' '.join((narrative or '').split())[:500]}"
    if narrative and touched and len(touched[-1].text) + len(summary) < settings.MEMORY_MAX_TEXT_CHARS:
        last = touched[-1]
        last.text = f"{last.text}\n{summary}"
        last.content_hash = content_hash(last.text)
        last.data = {**last.data, "narratives": [*last.data.get("narratives", []), summary[9:]]}
        last.save(update_fields=["text", "content_hash", "data"])
        MemoryItem.objects.filter(id=last.id).update(search_vector=search_document(last.text))
        _history(last, HistoryEvent.UPDATE, actor=actor, new_text=summary, job_id=job_id,
                 reason="episode narrative").save()
    return touched


def memory_supersede(
    *,
    tenant: Tenant,
    memory_id: uuid.UUID | str,
    new_text: str,
    actor: str,
    reason: str = "",
    expected_version: int | None = None,
    job_id: str = "",
) -> MemoryItem:
    """Replace a memory's text with a new version; the old row is expired, never overwritten."""
    with transaction.atomic():
        memory = _lock_memory(tenant, memory_id)
        _check_version(memory, expected_version)
        return _supersede_locked(memory, new_text=new_text, actor=actor, reason=reason, job_id=job_id)


def _supersede_locked(
    memory: MemoryItem,
    *,
    new_text: str,
    actor: str,
    reason: str = "",
    importance: float | None = None,
    tags: list[str] | None = None,
    data: dict | None = None,
    job_id: str = "",
    event: str = HistoryEvent.SUPERSEDE,
) -> MemoryItem:
    now = timezone.now()
    clash = _current_with_text(memory.tenant_id, memory.user_id, content_hash(new_text), exclude_id=memory.id)
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
    )
    memory.expired_at = now
    memory.updated_at = now
    memory.save(update_fields=["expired_at", "updated_at"])
    new = _new_item(memory.tenant, spec, now, version=memory.version + 1, expires_at=memory.expires_at)
    _insert_memories([new])
    memory.superseded_by = new
    memory.save(update_fields=["superseded_by"])
    _copy_sources([memory], new)
    MemoryHistory.objects.bulk_create([
        _history(memory, event, actor=actor, old_text=memory.text, new_text=new_text,
                 reason=reason or f"superseded by {new.id}", job_id=job_id),
        _history(new, HistoryEvent.ADD, actor=actor, old_text=memory.text, new_text=new_text,
                 new_data=_snapshot(new), reason=f"new version of {memory.id}", job_id=job_id),
    ])
    _enqueue_embedding([new.id])
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
        memory = _lock_memory(tenant, memory_id)
        _check_version(memory, None)
        before = _snapshot(memory)
        now = timezone.now()
        memory.invalid_at = invalid_at
        memory.expired_at = now
        memory.updated_at = now
        memory.save(update_fields=["invalid_at", "expired_at", "updated_at"])
        old, new = _changes(before, _snapshot(memory))
        _history(memory, HistoryEvent.INVALIDATE, actor=actor, old_text=memory.text, old_data=old, new_data=new,
                 reason=reason, job_id=job_id).save()
        withdrawals.announce(tenant_id=memory.tenant_id, user_id=memory.user_id, memory_ids=[memory.id],
                             cause="invalidated",
                             replaced_by={str(memory.id): str(contradicted_by.id)} if contradicted_by else {})
        return memory


def merged_text_default(texts: Sequence[str]) -> str:
    """The merged text when none is given: the distinct texts, in order, as one."""
    parts = list(dict.fromkeys(" ".join(t.split()).rstrip(".;") for t in texts))
    return "; ".join(parts) + "."


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
        memories = list(MemoryItem.objects.select_for_update().filter(tenant=tenant, id__in=ids).order_by("id"))
        if len(memories) != len(ids):
            raise MemoryNotFound("one or more memories to merge were not found")
        if len({m.user_id for m in memories}) > 1:
            raise InvalidOperation("memories of different users cannot be merged", field="memory_ids")
        for memory in memories:
            _check_version(memory, (expected_versions or {}).get(str(memory.id)))
        if merged_text is None:
            by_time = sorted(memories, key=lambda m: (m.valid_at or m.created_at, str(m.id)))
            merged_text = merged_text_default([m.text for m in by_time])
        now = timezone.now()
        first = memories[0]
        tags = list(dict.fromkeys(t for m in memories for t in m.tags))
        data: dict = {}
        for m in memories:
            data = {**m.data, **data}
        for m in memories:
            m.expired_at = now
            m.updated_at = now
        MemoryItem.objects.bulk_update(memories, ["expired_at", "updated_at"])
        spec = MemorySpec(
            user_id=first.user_id, text=merged_text, memory_type=first.memory_type,
            importance=max(m.importance for m in memories), confidence=max(m.confidence for m in memories),
            tags=tags, data=data, agent_id=first.agent_id, group_id=first.group_id,
            valid_at=min((m.valid_at for m in memories if m.valid_at), default=now),
        )
        validate_spec(spec)
        # It expires only when every original would have: one that never expires keeps its words.
        expiries = [m.expires_at for m in memories]
        merged = _new_item(tenant, spec, now, version=max(m.version for m in memories) + 1,
                           expires_at=None if None in expiries else max(e for e in expiries if e))
        clash = _current_with_text(tenant.id, first.user_id, merged.content_hash)
        if clash:
            raise VersionConflict(f"memory {clash.id} of this user already has the merged text")
        _insert_memories([merged])
        for m in memories:
            m.superseded_by = merged
        MemoryItem.objects.bulk_update(memories, ["superseded_by"])
        _copy_sources(memories, merged)
        merged_ids = ", ".join(str(m.id) for m in memories)
        MemoryHistory.objects.bulk_create(
            [_history(m, HistoryEvent.MERGE, actor=actor, old_text=m.text, new_text=merged_text,
                      reason=reason or f"merged into {merged.id}") for m in memories]
            + [_history(merged, HistoryEvent.MERGE, actor=actor, new_text=merged_text, new_data=_snapshot(merged),
                        reason=reason or f"merged from {merged_ids}")]
        )
        _enqueue_embedding([merged.id])
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
        memory = _lock_memory(tenant, memory_id)
        if expected_version is not None and expected_version != memory.version:
            raise VersionConflict(f"expected version {expected_version}, memory is at version {memory.version}",
                                  current_version=memory.version)
        if memory.status == status:
            return WriteResult("NOOP", memory, reason=f"already {status}")
        if status in CURRENT_STATUSES and memory.expired_at is None:
            clash = _current_with_text(tenant.id, memory.user_id, memory.content_hash, exclude_id=memory.id)
            if clash:
                raise VersionConflict(f"memory {clash.id} with the same text is already current")
        approving = memory.status == MemoryStatus.PENDING and status == MemoryStatus.ACTIVE
        event = HistoryEvent.APPROVE if approving else events[status]
        before = _snapshot(memory)
        memory.status = status
        memory.version += 1
        memory.updated_at = timezone.now()
        memory.archived_at = memory.updated_at if status == MemoryStatus.ARCHIVED else None
        memory.save(update_fields=["status", "version", "updated_at", "archived_at"])
        _sync_vector_status([memory])
        old, new = _changes(before, _snapshot(memory))
        _history(memory, event, actor=actor, old_data=old, new_data=new, reason=reason).save()
        if status not in CURRENT_STATUSES and before["status"] in CURRENT_STATUSES:
            withdrawals.announce(tenant_id=tenant.id, user_id=memory.user_id, memory_ids=[memory.id],
                                 cause="forgotten")
        return WriteResult("DELETE" if status == MemoryStatus.ARCHIVED else "UPDATE", memory)


def memories_archive_expired(*, now: datetime | None = None, limit: int = 500) -> int:
    """Archive memories past their expires_at (search already skips them), each
    with a DELETE history row saying so; returns how many. Rows locked by a
    writer are left for the next run."""
    now = now or timezone.now()
    with transaction.atomic():
        expired = list(MemoryItem.objects.select_for_update(skip_locked=True)
                       .filter(vocabulary.is_expired(now)).order_by("expires_at")[:limit])
        history = []
        for memory in expired:
            before = _snapshot(memory)
            memory.status = MemoryStatus.ARCHIVED
            memory.version += 1
            memory.updated_at = memory.archived_at = now
            old, new = _changes(before, _snapshot(memory))
            moment = memory.expires_at.isoformat() if memory.expires_at else ""
            history.append(_history(memory, HistoryEvent.DELETE, actor="expiry", old_data=old, new_data=new,
                                    reason=f"expired at {moment}"))
        MemoryItem.objects.bulk_update(expired, ["status", "version", "updated_at", "archived_at"])
        _sync_vector_status(expired)
        insert_objects(MemoryHistory, history)
    return len(expired)


def memory_refresh_content_hash(*, memory_id: uuid.UUID | str) -> bool:
    """Recompute a memory's dedupe hash from its text after the hash rule
    changed. A derived column, so no history row: the content is unchanged."""
    memory = MemoryItem.objects.filter(id=memory_id).only("id", "text", "content_hash").first()
    digest = content_hash(memory.text) if memory is not None else None
    if memory is None or digest == memory.content_hash:
        return False
    return bool(MemoryItem.objects.filter(id=memory.id).update(content_hash=digest))


# --------------------------------------------------------------------------- derived columns
# Columns computed from the content (embedding state, full-text document, read
# counts, provenance backfills): they change without a history row because the
# memory's content does not; they change here all the same.


def memory_set_embedding_state(*, memory_ids: Sequence[uuid.UUID | str], state: str, error: str = "") -> int:
    """done / failed / pending, as the embedding pipeline moves a memory along."""
    return MemoryItem.objects.filter(id__in=list(memory_ids)).update(embedding_state=state,
                                                                     embedding_error=error[:2000])


def memory_refresh_search_vectors(*, memory_ids: Sequence[uuid.UUID | str]) -> int:
    """Recompute the full-text document of memories that lack it (or whose rule changed)."""
    changed = 0
    for memory in MemoryItem.objects.filter(id__in=list(memory_ids)).only("id", "text"):
        changed += MemoryItem.objects.filter(id=memory.id).update(search_vector=search_document(memory.text))
    return changed


def memory_add_session_sources(*, memory_ids: Sequence[uuid.UUID | str]) -> int:
    """A source row for memories that name a session but have none (rows from before sources existed)."""
    return len(MemorySource.objects.bulk_create(
        MemorySource(item_id=m.id, session_id=m.session_id)
        for m in MemoryItem.objects.filter(id__in=list(memory_ids)).only("id", "session_id")))


def memory_add_reads(*, counts: dict[str, tuple[int, float]]) -> int:
    """Add buffered read counts (memory id -> (reads, last read as epoch seconds))
    in one UPDATE; memories erased meanwhile are skipped."""
    ids = list(counts)
    with connection.cursor() as cursor:
        cursor.execute(
            """UPDATE memory_items m
               SET access_count = m.access_count + u.n,
                   last_accessed_at = GREATEST(coalesce(m.last_accessed_at, u.at), u.at)
               FROM unnest(%s::uuid[], %s::int[], %s::timestamptz[]) AS u(id, n, at)
               WHERE m.id = u.id""",
            [ids, [counts[i][0] for i in ids], [datetime.fromtimestamp(counts[i][1], tz=UTC) for i in ids]],
        )
        return cursor.rowcount


def memory_note(*, memory: MemoryItem, event: str, actor: str, reason: str, old_data: dict | None = None,
                new_data: dict | None = None, save: bool = True) -> MemoryHistory:
    """A history row for a change kept beside the memory row (a trait's stage,
    pin): the audit trail's one entry point outside the functions above."""
    row = _history(memory, event, actor=actor, old_data=old_data, new_data=new_data, reason=reason)
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
        _history(memory, HistoryEvent.UPDATE, actor=actor, reason=reason,
                 old_data={"confidence": round(memory.confidence, 4), "version": memory.version},
                 new_data={"confidence": round(new_confidence, 4), "version": memory.version + 1}).save()
    return bool(bumped)


def memory_bump_version(*, memory_id: uuid.UUID | str) -> None:
    """A change kept beside the memory row (a trait's stage) makes a new version of it."""
    MemoryItem.objects.filter(id=memory_id).update(version=F("version") + 1, updated_at=timezone.now())


def memory_record_approval(*, memory: MemoryItem, actor: str, reason: str, edited: bool, session_id: str,
                           message_indices: list[int], job_id: str) -> None:
    """The APPROVE event of a reviewed candidate (and its source, if the
    memory has none). An edit is recorded as who and when, never the words
    the reviewer removed."""
    if session_id and not memory.sources.exists():
        MemorySource.objects.create(item=memory, session_id=session_id, message_indices=message_indices,
                                    job_id=job_id)
    _history(memory, HistoryEvent.APPROVE, actor=actor, new_text=memory.text, reason=reason, job_id=job_id,
             new_data={"edited_by_reviewer": edited}).save()


def user_forget(*, tenant: Tenant, user_id: str, actor: str, reason: str = "erasure request",
                dry_run: bool = False, agent_id: str | None = None) -> dict[str, int]:
    """Erase one user's memories with their vectors (chunk texts), sources,
    traits and evidence; scrub the content of their history rows and add one
    ERASE row per erased memory. Counts only what still held content, so a
    second call reports zeros. Part of memories.erasure.user_erase, which
    owns every other store; call that, not this. With agent_id, only the
    memories that agent saved (every version) go; the user's traits stay and
    lose the evidence those memories gave."""
    # By label, not import: traits build on memories, never the other way round.
    Trait, TraitEvidence = apps.get_model("traits", "Trait"), apps.get_model("traits", "TraitEvidence")
    items = MemoryItem.objects.filter(tenant=tenant, user_id=user_id)
    if agent_id is not None:
        items = items.filter(agent_id=agent_id)
    ids = list(items.values_list("id", flat=True))
    with_content = (MemoryHistory.objects.filter(tenant=tenant, user_id=user_id)
                    .exclude(event=HistoryEvent.ERASE).filter(HISTORY_HAS_CONTENT))
    if agent_id is not None:
        with_content = with_content.filter(memory_id__in=ids)
    counts = {
        "memories": len(ids),
        "vectors": MemoryVector.objects.filter(item__in=items).count(),
        "sources": MemorySource.objects.filter(item__in=items).count(),
        "traits": Trait.objects.filter(memory__in=items).count(),
        "trait_evidence": TraitEvidence.objects.filter(Q(memory__in=items) | Q(trait__memory__in=items)).count(),
        "history_scrubbed": with_content.count(),
    }
    if dry_run:
        return counts
    if agent_id is not None:  # the user's traits stay: what they stood on is withdrawn
        withdrawals.announce(tenant_id=tenant.id, user_id=user_id, memory_ids=ids, cause="erased")
    with_content.update(old_text=None, new_text=None, old_data=None, new_data=None, reason="")
    insert_objects(MemoryHistory, [
        MemoryHistory(memory_id=i, tenant=tenant, user_id=user_id, event=HistoryEvent.ERASE, actor=actor,
                      reason=reason) for i in ids
    ])
    TraitEvidence.objects.filter(Q(memory__in=items) | Q(trait__memory__in=items)).delete()
    Trait.objects.filter(parent__memory__in=items).update(parent=None)
    Trait.objects.filter(memory__in=items).delete()
    MemoryItem.objects.filter(superseded_by__in=items).update(superseded_by=None)
    # Vectors and sources first, as plain DELETEs: left to the cascade, Django
    # loads every one of them into Python before deleting it.
    MemoryVector.objects.filter(item__in=items).delete()
    MemorySource.objects.filter(item__in=items).delete()
    items.delete()
    return counts


# A history row that still carries words: what erasure scrubs (named once, counted and updated alike).
HISTORY_HAS_CONTENT = (Q(old_text__isnull=False) | Q(new_text__isnull=False) | Q(old_data__isnull=False)
                       | Q(new_data__isnull=False) | ~Q(reason=""))
