"""Who the user is, at the head of every context block: their standing wishes about answers, then the key
facts (name, health, diet, home, work, partner, family), current versions only.

An agent that knows someone answers short when asked to be short and never suggests shellfish to someone
allergic to it, whatever the question. The search brings what resembles the question; these lines come
whatever the question is, so a wish said once takes effect at the next turn, without waiting for reflection.
They are compact: at most a quarter of the block (PROFILE_SHARE), the rest is left to the question.
"""

from __future__ import annotations

from collections.abc import Sequence

from memories import vocabulary
from memories.models import MemoryItem
from memories.relations import whom
from memories.text import query_tokens

PROFILE_SHARE = 0.25  # of the block's characters, at most
PROFILE_CANDIDATES = 40  # the newest wishes and key facts read; a profile shows far fewer
# A slot rule's key (data.key) that names a profile slot by another word.
RULE_KEY_SLOT = {"residence": vocabulary.Slot.HOME}
WISH = vocabulary.Tag.WISH  # the profile's first kind of line, before the slots
PROFILE_ORDER = (WISH, *vocabulary.KEY_FACT_SLOTS)  # wishes, then the slots in their order


def profile_slot(memory: MemoryItem) -> str:
    """What a memory is in the profile: a wish (Tag.WISH), else its slot (the extractor's slot, else a slot
    rule's key), or "" when it is neither."""
    if vocabulary.Tag.WISH in (memory.tags or []):
        return WISH
    if vocabulary.Tag.HABIT in (memory.tags or []):  # what they do, not who they are (reflection's matter)
        return ""
    data = memory.data or {}
    slot = str(data.get(vocabulary.SLOT_KEY) or "")
    if not slot:
        key = str(data.get("key") or "")
        slot = RULE_KEY_SLOT.get(key, key)
    return slot if slot in vocabulary.KEY_FACT_SLOTS else ""


def says_something(text: str) -> bool:
    """A line worth a place in every block names more than a word ("Carol", kept alone from "my wife,
    Carol", says nothing an agent can use)."""
    return len(query_tokens(text)) >= 2


def _same_words(a: set[str], b: set[str]) -> bool:
    """Two profile lines say the same when most of the shorter one's words are in the longer one."""
    return bool(a and b) and len(a & b) / min(len(a), len(b)) >= 0.8


# What a person has one of at a time: the profile shows the newest line of each person's (relations.whom).
ONE_VALUE_SLOTS = frozenset({vocabulary.Slot.NAME, vocabulary.Slot.HOME, vocabulary.Slot.WORK, vocabulary.Slot.PARTNER})


def profile_order(memories: Sequence[MemoryItem]) -> list[MemoryItem]:
    """Wishes first, then the key facts in KEY_FACT_SLOTS order; newest first within each; a line that
    repeats one already chosen (most of its words) once, and one line per person for a slot that holds
    one value (two current homes of the user: the newest; the sister's home beside the user's stays).
    `memories` come newest first."""
    ranked = sorted((m for m in memories if profile_slot(m) and says_something(m.text)),
                    key=lambda m: PROFILE_ORDER.index(profile_slot(m)))  # stable: newest first stays
    chosen: list[tuple[MemoryItem, set[str]]] = []
    held: set[tuple[str, frozenset[str]]] = set()
    for memory in ranked:
        words = set(query_tokens(memory.text))
        slot = profile_slot(memory)
        one_of = (slot, whom(memory.text)) if slot in ONE_VALUE_SLOTS else None
        if one_of in held or any(_same_words(words, other) for _, other in chosen):
            continue
        if one_of is not None:
            held.add(one_of)
        chosen.append((memory, words))
    return [m for m, _ in chosen]


def fit_within(costs: Sequence[int], budget: int) -> list[int]:
    """The indices of the lines that fit, in order: a line too long for what is left is skipped and a
    shorter one after it may still fit (as the block itself is filled)."""
    kept, used = [], 0
    for index, cost in enumerate(costs):
        if used + cost <= budget:
            kept.append(index)
            used += cost
    return kept


def profile_budget(max_chars: int) -> int:
    return int(max_chars * PROFILE_SHARE)
