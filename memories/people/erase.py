"""Erasure of the people a user named: their entities, aliases, edges and the words of their history.

The whole user: every entity (the user's own too), alias and edge goes, and the history rows keep their
event, actor and time only. A narrower erasure (one agent's or one key's part): the edges the erased memories
said go, and so does every person nothing kept still names (no memory about them outside the erased part,
no edge left), with their aliases; their history loses its words.
"""

from __future__ import annotations

from django.db.models import Q

from memories.models import MemoryItem, Person, PersonAlias, PersonEdge, PersonHistory, PersonKind, Tenant
from memories.writing import ErasureScope, people_forget_said

HISTORY_WITH_WORDS = ~Q(old_data=None) | ~Q(new_data=None) | ~Q(reason="")


def people_erase(tenant: Tenant, user_id: str, dry_run: bool, scope: ErasureScope) -> dict[str, int]:
    """One erasure step (erasure.register_store), run before the memory rows go."""
    people = Person.objects.filter(tenant=tenant, user_id=user_id)
    if not scope.whole_user:
        erased = list(MemoryItem.objects.filter(scope.memories(), tenant=tenant, user_id=user_id)
                      .values_list("id", flat=True))
        kept = MemoryItem.objects.filter(tenant=tenant, user_id=user_id).exclude(id__in=erased)
        named = set(kept.values_list("subject_entity_id", flat=True)) | set(
            kept.values_list("object_entity_id", flat=True))
        edged = PersonEdge.objects.filter(tenant=tenant, user_id=user_id).exclude(memory_id__in=erased)
        named |= set(edged.values_list("source_id", flat=True)) | set(edged.values_list("target_id", flat=True))
        people = people.exclude(id__in=[i for i in named if i is not None]).exclude(kind=PersonKind.USER)
        edges = PersonEdge.objects.filter(Q(memory_id__in=erased) | Q(source__in=people) | Q(target__in=people),
                                          tenant=tenant, user_id=user_id)
    else:
        erased = []
        edges = PersonEdge.objects.filter(tenant=tenant, user_id=user_id)
    ids = list(people.values_list("id", flat=True))
    history = PersonHistory.objects.filter(tenant=tenant, user_id=user_id).filter(HISTORY_WITH_WORDS)
    if not scope.whole_user:
        history = history.filter(person_id__in=ids)
    counts = {"people": len(ids), "people_aliases": PersonAlias.objects.filter(person_id__in=ids).count(),
              "people_edges": edges.count()}
    if dry_run:
        return {**counts, "people_history": history.count()}
    if erased:
        people_forget_said(tenant, user_id, erased)
    edges.delete()
    PersonAlias.objects.filter(person_id__in=ids).delete()
    MemoryItem.objects.filter(tenant=tenant, user_id=user_id, subject_entity_id__in=ids).update(subject_entity=None)
    MemoryItem.objects.filter(tenant=tenant, user_id=user_id, object_entity_id__in=ids).update(object_entity=None)
    Person.objects.filter(id__in=ids).update(merged_into=None)
    Person.objects.filter(id__in=ids).delete()
    counts["people_history"] = history.update(old_data=None, new_data=None, reason="")
    return counts
