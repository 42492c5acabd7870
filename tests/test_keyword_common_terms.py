"""A term in more than half the user's memories (a speaker's name in every turn) scores the memories the
other terms select but selects none itself, once the user has COMMON_TERM_MIN_DOCUMENTS memories; alone in
a query it still selects; in a small scope every term selects."""

from __future__ import annotations

import pytest

from memories.search import SearchQuery, memory_search
from memories.search.keyword import COMMON_TERM_MIN_DOCUMENTS, COMMON_TERM_SHARE
from memories.writing import MemorySpec, memory_create_batch

TURNS = ["John: we went hiking up the ridge on Sunday", "John: the bakery on the corner closed down",
         "John: my car broke down on the motorway", "John: I started learning the cello",
         "John: the garden is full of tomatoes", "Maria: I adopted a grey cat from the shelter",
         "John: my sister moved to Leeds", "John: work has been quiet this week"]
# John's other turns: the user's memories number COMMON_TERM_MIN_DOCUMENTS, most of them John's.
FILLER = [f"John: day {i} of the diary, nothing much happened" for i in range(COMMON_TERM_MIN_DOCUMENTS)]


@pytest.fixture
def johns_turns(tenant_a):
    memory_create_batch(tenant=tenant_a, actor="test", specs=[MemorySpec(user_id="pair", text=t)
                                                              for t in TURNS + FILLER])
    return tenant_a


def _keyword(tenant, query: str) -> list[str]:
    found = memory_search(tenant=tenant, query=SearchQuery(query=query, user_id="pair", mode="keyword", limit=10))
    return [r.memory.text for r in found]


@pytest.mark.django_db
def test_a_common_term_does_not_select_memories_but_still_scores_them(johns_turns):
    memories = TURNS + FILLER
    assert sum("john" in t.lower() for t in memories) > COMMON_TERM_SHARE * len(memories)
    # Before: every John turn came back, ranked by the tiny weight of "john".
    assert _keyword(johns_turns, "what happened to John's car?") == ["John: my car broke down on the motorway"]


@pytest.mark.django_db
def test_a_rare_term_selects_whoever_says_it(johns_turns):
    assert _keyword(johns_turns, "Maria's cat") == ["Maria: I adopted a grey cat from the shelter"]


@pytest.mark.django_db
def test_a_query_of_common_terms_alone_still_finds_them(johns_turns):
    assert len(_keyword(johns_turns, "John")) == 10  # the limit


@pytest.mark.django_db
def test_in_a_small_scope_every_term_selects(tenant_a):
    memory_create_batch(tenant=tenant_a, actor="test", specs=[MemorySpec(user_id="pair", text=t) for t in TURNS])
    found = memory_search(tenant=tenant_a, query=SearchQuery(query="what happened to John's car?", user_id="pair",
                                                             mode="keyword", limit=10))
    assert found[0].memory.text == "John: my car broke down on the motorway" and len(found) == 7
