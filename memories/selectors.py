"""Reads that are not search: one memory, a user's list, a memory's history."""

from __future__ import annotations

import uuid

from django.db.models import QuerySet

from memories.errors import MemoryNotFound
from memories.models import ConversationJob, MemoryHistory, MemoryItem, Tenant


def memory_list(*, tenant: Tenant) -> QuerySet[MemoryItem]:
    return MemoryItem.objects.filter(tenant=tenant)


def memory_get(*, tenant: Tenant, memory_id: uuid.UUID | str) -> MemoryItem:
    """A tenant's memory; another tenant's id is indistinguishable from a missing one."""
    try:
        return MemoryItem.objects.get(tenant=tenant, id=memory_id)
    except (MemoryItem.DoesNotExist, ValueError):
        raise MemoryNotFound(f"memory {memory_id} not found") from None


def memory_lineage_ids(memory: MemoryItem) -> list[uuid.UUID]:
    """The memory and every earlier version or merged original that led to it."""
    seen = {memory.id}
    frontier = [memory.id]
    while frontier:
        earlier = list(
            MemoryItem.objects.filter(tenant_id=memory.tenant_id, superseded_by_id__in=frontier)
            .exclude(id__in=seen)
            .values_list("id", flat=True)
        )
        seen.update(earlier)
        frontier = earlier
    return list(seen)


def memory_history(*, tenant: Tenant, memory_id: uuid.UUID | str) -> QuerySet[MemoryHistory]:
    memory = memory_get(tenant=tenant, memory_id=memory_id)
    return MemoryHistory.objects.filter(tenant=tenant, memory_id__in=memory_lineage_ids(memory)).order_by(
        "created_at", "id"
    )


def job_get(*, tenant: Tenant, job_id: uuid.UUID | str) -> ConversationJob:
    try:
        return ConversationJob.objects.get(tenant=tenant, id=job_id)
    except (ConversationJob.DoesNotExist, ValueError):
        raise MemoryNotFound(f"job {job_id} not found") from None
