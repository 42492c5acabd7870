"""What the writer does to the people a memory names: a memory forgotten takes the edges it said with it
(Sheila's move to York is gone from her page when the user asks to forget it), and a reviewer's merge or
split of two entities moves the memories about them, each a versioned change with its history."""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence

from django.db.models import Q

from memories.models import HistoryEvent, MemoryItem, PersonEdge, PersonHistory, Tenant
from memories.writing.core import apply_change


def people_forget_said(tenant: Tenant, user_id: str, memory_ids: Sequence[uuid.UUID]) -> int:
    """Delete the edges these memories said, and empty the words of the history rows that recorded them
    (events, actors and times stay). Returns how many edges went."""
    edges = list(PersonEdge.objects.filter(tenant=tenant, user_id=user_id, memory_id__in=memory_ids)
                 .values_list("id", flat=True))
    if not edges:
        return 0
    said = Q()
    for edge_id in edges:
        said |= Q(new_data__edge=str(edge_id)) | Q(old_data__edge=str(edge_id))
    PersonHistory.objects.filter(said, tenant=tenant, user_id=user_id).update(old_data=None, new_data=None,
                                                                             reason="")
    return PersonEdge.objects.filter(id__in=edges).delete()[0]


def memories_about_move(tenant: Tenant, user_id: str, memory_ids: Iterable[uuid.UUID | str],
                        from_ids: set[uuid.UUID], to_id: uuid.UUID, *, actor: str, reason: str) -> int:
    """The memories about (subject or object) one of `from_ids` now name `to_id`: one versioned change each
    (a merge of two entities that were one person, or the split that undoes it). The caller holds the
    user's write lock. Returns how many changed."""
    changed = 0
    for memory in MemoryItem.objects.select_for_update().filter(tenant=tenant, user_id=user_id, id__in=list(
            memory_ids)).order_by("id"):
        def move(item: MemoryItem) -> None:
            if item.subject_entity_id in from_ids:
                item.subject_entity_id = to_id
            if item.object_entity_id in from_ids:
                item.object_entity_id = to_id
        apply_change(memory, move, actor=actor, event=HistoryEvent.UPDATE, reason=reason,
                     fields=["subject_entity", "object_entity"])
        changed += 1
    return changed
