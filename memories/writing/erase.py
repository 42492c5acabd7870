"""Erasing one user's memories (part of memories.erasure.user_erase, which owns
every other store)."""

from __future__ import annotations

from django.db.models import Q

from memories.bulk import insert_objects
from memories.models import (
    HistoryEvent,
    MemoryHistory,
    MemoryItem,
    MemorySource,
    MemoryVector,
    Tenant,
)


def user_forget(*, tenant: Tenant, user_id: str, actor: str, reason: str = "erasure request",
                dry_run: bool = False, agent_id: str | None = None) -> dict[str, int]:
    """Erase one user's memories with their vectors (chunk texts) and sources;
    scrub the content of their history rows and add one ERASE row per erased
    memory. Counts only what still held content, so a second call reports
    zeros. Part of memories.erasure.user_erase, which owns every other store
    (traits and reflection register theirs); call that, not this. With
    agent_id, only the memories that agent saved (every version) go."""
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
        "history_scrubbed": with_content.count(),
    }
    if dry_run:
        return counts
    with_content.update(old_text=None, new_text=None, old_data=None, new_data=None, reason="")
    insert_objects(MemoryHistory, [
        MemoryHistory(memory_id=i, tenant=tenant, user_id=user_id, event=HistoryEvent.ERASE, actor=actor,
                      reason=reason) for i in ids
    ])
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
