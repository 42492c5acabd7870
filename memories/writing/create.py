"""Creating memories: one or a batch, deduplicated by content hash. A batch is a
lookup (existing rows, locked), a pure plan (what each spec becomes) and the
write."""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Literal

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from memories import vocabulary
from memories.bulk import insert_objects
from memories.models import (
    CURRENT_STATUSES,
    HistoryEvent,
    MemoryHistory,
    MemoryItem,
    MemorySource,
    MemoryStatus,
    Tenant,
)
from memories.queue import coalesced_taken, enqueue_coalesced
from memories.quota import quota_check
from memories.text import content_hash
from memories.writing.core import (
    MemorySpec,
    WriteResult,
    apply_change,
    enqueue_embedding_after_commit,
    insert_memories,
    new_item,
    record_history,
    snapshot_of,
    users_write_lock,
    validate_spec,
)

logger = logging.getLogger(__name__)

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
                users_write_lock(tenant.id, {spec.user_id for spec in specs})
                results = create_batch_locked(tenant, specs, actor, job_id, enqueue_embedding)
                added = sorted({r.memory.user_id for r in results if r.operation == "ADD"})
                if count_for_reflection and added:
                    reflection_nudge(tenant.id, added)
                return results
        except IntegrityError as exc:
            if "memory_unique_current_hash" not in str(exc) or attempt == 2:
                raise
            logger.info("concurrent save of the same text; retrying batch")
    raise AssertionError("unreachable")


BatchKey = tuple[str, str, bool]  # (user id, content hash, archived): what a batch deduplicates on


@dataclass(frozen=True)
class SpecKey:
    """What the plan needs of one spec."""

    user_id: str
    digest: str
    archived: bool
    tags: tuple[str, ...] = ()
    data_keys: tuple[str, ...] = ()


@dataclass(frozen=True)
class Stored:
    """What the plan needs of a stored row the batch may match."""

    tags: tuple[str, ...] = ()
    data_keys: tuple[str, ...] = ()


@dataclass(frozen=True)
class Planned:
    """What one spec of a batch becomes: ADD, NOOP, or UPDATE (the same text with new tags or data keys)
    of a stored row (`stored`) or of an earlier spec of this batch (`earlier`)."""

    operation: Literal["ADD", "NOOP", "UPDATE"]
    stored: BatchKey | None = None
    earlier: int | None = None
    new_tags: tuple[str, ...] = ()
    new_data_keys: tuple[str, ...] = ()


def plan_batch(specs: Sequence[SpecKey], stored: Mapping[BatchKey, Stored]) -> list[Planned]:
    """The batch's decisions, as a pure function (tests/test_create_memory.py has the table).

    An active save matches a current row of the same text (an archived text may be saved again); an
    archived one (imports) also matches an archived row, so re-imports stay NOOPs. A spec whose text an
    earlier spec of the batch adds matches that one. A match that brings no new tag or data key is a NOOP.
    """
    known: dict[BatchKey, tuple[int | None, list[str], set[str]]] = {
        key: (None, list(row.tags), set(row.data_keys)) for key, row in stored.items()}
    plans: list[Planned] = []
    for index, spec in enumerate(specs):
        active, archived = (spec.user_id, spec.digest, False), (spec.user_id, spec.digest, True)
        hit = active if active in known else (archived if spec.archived and archived in known else None)
        if hit is None:
            known[archived if spec.archived else active] = (index, list(spec.tags), set(spec.data_keys))
            plans.append(Planned("ADD"))
            continue
        earlier, tags, keys = known[hit]
        target = {"stored": None if earlier is not None else hit, "earlier": earlier}
        new_tags = tuple(dict.fromkeys(t for t in spec.tags if t not in tags))
        new_keys = tuple(k for k in spec.data_keys if k not in keys)
        if not new_tags and not new_keys:
            plans.append(Planned("NOOP", **target))  # type: ignore[arg-type]
            continue
        tags.extend(new_tags)
        keys.update(new_keys)
        plans.append(Planned("UPDATE", new_tags=new_tags, new_data_keys=new_keys, **target))  # type: ignore[arg-type]
    return plans


def _stored_rows(tenant: Tenant, specs: Sequence[SpecKey]) -> dict[BatchKey, MemoryItem]:
    """The lookup: the stored rows a batch may match, locked until the transaction ends."""
    if not specs:
        return {}
    pairs = sorted({(spec.user_id, spec.digest) for spec in specs})
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
    return {(row.user_id, row.content_hash, row.status == MemoryStatus.ARCHIVED): row for row in rows}


def create_batch_locked(tenant: Tenant, specs: Sequence[MemorySpec], actor: str, job_id: str,
                        enqueue_embedding: bool) -> list[WriteResult]:
    """Lookup -> plan -> write."""
    for spec in specs:
        validate_spec(spec)
    keys = [SpecKey(spec.user_id, content_hash(spec.text), spec.status == MemoryStatus.ARCHIVED, tuple(spec.tags),
                    tuple(spec.data)) for spec in specs]
    stored = _stored_rows(tenant, keys)
    plans = plan_batch(keys, {key: Stored(tuple(row.tags), tuple(row.data)) for key, row in stored.items()})
    return _write_batch(tenant, specs, plans, stored, actor=actor, job_id=job_id,
                        enqueue_embedding=enqueue_embedding)


def _write_batch(tenant: Tenant, specs: Sequence[MemorySpec], plans: Sequence[Planned],
                 stored: dict[BatchKey, MemoryItem], *, actor: str, job_id: str,
                 enqueue_embedding: bool) -> list[WriteResult]:
    """The plan, written: new rows, their sources and ADD history; tags and data merged into the rows
    matched, each stored one changed once through apply_change (save=False, one bulk write)."""
    now = timezone.now()
    results: list[WriteResult] = []
    added: dict[int, MemoryItem] = {}
    new_sources: list[MemorySource] = []
    history: list[MemoryHistory] = []
    updated: dict[uuid.UUID, MemoryItem] = {}
    for index, (spec, plan) in enumerate(zip(specs, plans, strict=True)):
        if plan.operation == "ADD":
            # A microsecond apart: a batch keeps the order it was sent in (search.neighbours reads it).
            item = added[index] = new_item(tenant, spec, now + timedelta(microseconds=len(added)))
            history.append(record_history(item, HistoryEvent.ADD, actor=actor, new_text=item.text,
                                          new_data=snapshot_of(item), job_id=job_id))
            if spec.source_session_id or spec.source_message_indices:
                new_sources.append(MemorySource(item=item, session_id=spec.source_session_id,
                                                message_indices=spec.source_message_indices, job_id=job_id))
            results.append(WriteResult("ADD", item))
            continue
        current = added[plan.earlier] if plan.earlier is not None else stored[plan.stored]  # type: ignore[index]
        if plan.operation == "NOOP":
            results.append(WriteResult("NOOP", current, reason="same content as an existing memory"))
            continue

        def merge(row: MemoryItem, spec: MemorySpec = spec, plan: Planned = plan) -> None:
            row.tags = list(row.tags) + list(plan.new_tags)
            row.data = {**row.data, **{k: spec.data[k] for k in plan.new_data_keys}}
            row.importance = max(row.importance, spec.importance)

        if plan.earlier is not None:
            merge(current)  # not written yet: no version, no history of its own
        else:
            row = apply_change(current, merge, actor=actor, event=HistoryEvent.UPDATE, now=now, job_id=job_id,
                               reason="same text with new tags or data", fields=(), save=False)
            history.append(row)
            updated[current.id] = current
        results.append(WriteResult("UPDATE", current, reason="same text with new tags or data"))

    new_items = list(added.values())
    quota_check(tenant, memories=len(new_items),
                size=sum(len(i.text.encode()) + len(json.dumps(i.data, ensure_ascii=False)) for i in new_items))
    insert_memories(new_items)
    if updated:
        MemoryItem.objects.bulk_update(list(updated.values()), ["tags", "data", "importance", "version", "updated_at"])
    MemorySource.objects.bulk_create(new_sources, batch_size=1000)
    insert_objects(MemoryHistory, history)
    if enqueue_embedding:
        enqueue_embedding_after_commit(item.id for item in new_items)
    return results


def reflection_nudge(tenant_id: int, user_ids: Sequence[str], *, on_commit: bool = True) -> None:
    """Ask reflection (by task name: it builds on memories) whether these users' new memories now weigh
    enough for a cycle: after the surrounding commit, or at once (`on_commit=False`: a conversation job
    asks after its own transaction). A broker fault never fails a save or a job that is already kept. With a
    broker, a tenant's nudges within REFLECTION_NUDGE_WINDOW seconds send one task (queue.enqueue_coalesced)."""
    enqueue_coalesced(vocabulary.TASK_REFLECT_IF_IMPORTANT, tenant_id, list(user_ids), on_commit=on_commit,
                      window=settings.REFLECTION_NUDGE_WINDOW)


def reflection_nudge_taken(tenant_id: int, user_ids: Sequence[str]) -> list[str]:
    """Reflection's importance trigger, starting: these users and every user nudged since its task was sent
    (queue.coalesced_taken); the next nudge sends a task again."""
    return coalesced_taken(vocabulary.TASK_REFLECT_IF_IMPORTANT, tenant_id, list(user_ids))
