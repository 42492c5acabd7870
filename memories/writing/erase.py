"""Erasing one user's memories (part of memories.erasure.user_erase, which owns
every other store)."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

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


@dataclass(frozen=True)
class ErasureScope:
    """Which part of a user an erasure reaches: all of it, one agent's part (`agent_id`: what that
    agent saved or sent), or what one API key saved (`api_key_id`, with `memory_ids` its memories:
    a key that may not erase the whole user erases its own part and proposes the rest)."""

    agent_id: str | None = None
    api_key_id: int | None = None
    memory_ids: Collection[str] | None = None

    @property
    def whole_user(self) -> bool:
        return self.agent_id is None and self.api_key_id is None

    def memories(self) -> Q:
        """The memory rows in scope (MemoryItem)."""
        scope = Q()
        if self.agent_id is not None:
            scope &= Q(agent_id=self.agent_id)
        if self.memory_ids is not None:
            scope &= Q(id__in=list(self.memory_ids))
        return scope

    def submitted(self) -> Q:
        """Candidates and conversation jobs in scope (both carry agent_id and api_key_id)."""
        scope = Q()
        if self.agent_id is not None:
            scope &= Q(agent_id=self.agent_id)
        if self.api_key_id is not None:
            scope &= Q(api_key_id=self.api_key_id)
        return scope


WHOLE_USER = ErasureScope()


def user_forget(*, tenant: Tenant, user_id: str, actor: str, reason: str = "erasure request",
                dry_run: bool = False, scope: ErasureScope = WHOLE_USER) -> dict[str, int]:
    """Erase one user's memories with their vectors (chunk texts) and sources;
    scrub the content of their history rows and add one ERASE row per erased
    memory. Counts only what still held content, so a second call reports
    zeros. Part of memories.erasure.user_erase, which owns every other store
    (traits and reflection register theirs); call that, not this. With
    a narrower scope, only the memories in it (every version) go."""
    items = MemoryItem.objects.filter(scope.memories(), tenant=tenant, user_id=user_id)
    types = dict(items.values_list("id", "memory_type"))
    ids = list(types)
    with_content = (MemoryHistory.objects.filter(tenant=tenant, user_id=user_id)
                    .exclude(event=HistoryEvent.ERASE).filter(HISTORY_HAS_CONTENT))
    if not scope.whole_user:
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
                      memory_type=types[i], reason=reason) for i in ids
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
