"""Closeness in meaning between what is said and what is stored, the user's name left out: how an update
or a forget request finds its target (read_by_meaning), and which facts of one turn are one matter
(said_with). Moved out of ingestion.py, which the people of issue 53 pushed past its bound."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from memories.dedupe import TWIN_CLOSENESS, Neighbour
from memories.extraction import UNKNOWN_SPEAKER
from memories.extraction.intent import meaning_vectors, read_slots
from memories.models import MemoryItem, MemorySource, MemoryType, Tenant
from memories.vocabulary import Tag
from memories.writing import current_memories


def without_names(text: str, names: Sequence[str]) -> str:
    """A memory's text without whose it is: every memory of a user starts with their name, and in the
    encoder's space that shared name made all of them look alike (Chinese ones most)."""
    for name in sorted({n for n in names if n}, key=len, reverse=True):
        text = text.replace(f"{name}'s ", "").replace(f"{name}的", "").replace(name, "")
    return text.strip(" ,，")


def read_by_meaning(text: str, neighbours: list[Neighbour], *, names: Sequence[str] = ()) -> list[Neighbour]:
    """The neighbours with their closeness to `text` in the multilingual encoder's space and what each
    is about (the intent model's slot), the speaker's name left out of both: how an update or forget
    request finds its target whatever the words or language either was said in."""
    if not neighbours:
        return neighbours
    texts = [without_names(t, names) for t in (text, *(n.text for n in neighbours))]
    vectors = meaning_vectors(texts)
    slots = read_slots(texts[1:])
    mutual = vectors[1:] @ vectors[1:].T
    return [replace(n, meaning=float(np.dot(vectors[0], vectors[i + 1])), slot=slots[i],
                    twins=frozenset(m.id for j, m in enumerate(neighbours)
                                    if j != i and mutual[i, j] >= TWIN_CLOSENESS))
            for i, n in enumerate(neighbours)]



# A fact kept from the same turn as a forgotten one goes with it when it is at least this close in meaning:
# "我之前借了点网贷还没还完，每个月要还两千" is one matter said in two clauses; "I'm allergic to peanuts and I
# live in Porto" is two (USE cosine 0.2-0.3 between such unrelated clauses).
SIBLING_CLOSENESS = 0.45


def said_with(tenant: Tenant, user_id: str, memory: MemoryItem) -> list[MemoryItem]:
    """The user's other current facts kept from the same turn as `memory` and about the same matter:
    a compound turn became several memories, and forgetting one part forgets the matter."""
    sources = list(MemorySource.objects.filter(item=memory).exclude(job_id="").values_list("job_id",
                                                                                            "message_indices"))
    if not sources:
        return []
    same_turn = MemorySource.objects.none()
    for job_id, indices in sources:
        same_turn = same_turn | MemorySource.objects.filter(job_id=job_id, message_indices__overlap=indices or [-1])
    ids = set(same_turn.exclude(item=memory).values_list("item_id", flat=True))
    candidates = list(current_memories(tenant.id, user_id).exclude(memory_type=MemoryType.TRAIT).exclude(
        tags__contains=[Tag.EPISODE]).filter(id__in=ids))
    if not candidates:
        return []
    names = (memory.text.split(" ")[0], *UNKNOWN_SPEAKER.values())
    vectors = meaning_vectors([without_names(t, names) for t in (memory.text, *(m.text for m in candidates))])
    return [m for i, m in enumerate(candidates) if float(np.dot(vectors[0], vectors[i + 1])) >= SIBLING_CLOSENESS]
