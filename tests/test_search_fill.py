"""A /context search loads only what its block can show: the character fill and the candidate pool
(pure functions), and a block that still fills its budget with long and with short lines."""

from __future__ import annotations

import random

import pytest

from memories.context import ContextRequest, build_context
from memories.search import CharacterFill, SearchQuery, memory_search
from memories.search.scoring import filling, search_pool
from memories.writing import MemorySpec, memory_create_batch


def _entries(count: int) -> list[tuple[float, str, dict]]:
    return [(1.0 - i / 100, f"m{i}", {}) for i in range(count)]


@pytest.mark.parametrize("lengths, fill, kept", [
    ([100] * 10, CharacterFill(budget=300), 3),            # stops with the line that fills the budget
    ([100] * 10, CharacterFill(budget=301), 4),
    ([100] * 10, CharacterFill(budget=300, per_line=50), 2),
    ([20] * 100, CharacterFill(budget=600, per_line=16), 17),  # short (Chinese) lines: many more
    ([5000, 100], CharacterFill(budget=300, line_max=160), 2),  # an episode counts as its excerpt
    ([5000, 100], CharacterFill(budget=300), 1),
    ([100] * 3, CharacterFill(budget=10_000), 3),           # never more than there are
    ([], CharacterFill(budget=100), 0),
])
def test_the_fill_keeps_the_best_until_their_lines_fill_the_budget(lengths, fill, kept):
    entries = _entries(len(lengths))
    chars = {entry[1]: length for entry, length in zip(entries, lengths, strict=True)}
    assert filling(entries, chars, fill) == entries[:kept]


@pytest.mark.parametrize("limit, pool", [(1, 50), (10, 50), (20, 60), (30, 90), (40, 100), (124, 184)])
def test_each_side_retrieves_three_times_a_short_list_and_a_margin_beyond_a_long_one(limit, pool):
    assert search_pool(limit) == pool


WORDS = ("harbour lighthouse bakery museum station library market orchard bridge castle meadow quarry chapel pier "
         "garden tea scones map postcards cheese kite apples novel gloves honey walked cycled sailed painted cooked "
         "bought borrowed mended planted visited morning evening winter summer rain snow neighbours cousin sister "
         "teacher doctor river valley forest mountain island village").split()



def _long_line(i: int) -> str:
    """About 110 characters of words no other line repeats in the same order: lines that do not collapse."""
    rng = random.Random(i)
    return "The user " + " ".join(rng.sample(WORDS, 16))


@pytest.mark.django_db
def test_a_long_line_search_loads_only_what_fills_the_block_and_the_block_is_full(tenant_a):
    """(Short Chinese lines: test_who_the_user_is.test_a_chinese_block_fills_its_budget_as_an_english_one_does.)"""
    memory_create_batch(tenant=tenant_a, actor="test", specs=[
        MemorySpec(user_id="filler", text=_long_line(i)) for i in range(150)])
    query = "the user walked to the harbour with tea"
    found = memory_search(tenant=tenant_a, query=SearchQuery(query=query, user_id="filler", limit=124,
                                                             fill=CharacterFill(budget=3000, per_line=16)))
    lengths = [len(r.memory.text) + 16 for r in found]
    assert sum(lengths[:-1]) < 3000 <= sum(lengths)  # the line that fills the budget is the last loaded
    block = build_context(tenant=tenant_a, request=ContextRequest(query=query, user_id="filler", max_chars=2000))
    assert 2000 * 0.9 <= len(block.text) <= 2000
