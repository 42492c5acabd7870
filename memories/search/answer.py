"""What a search answers besides the ranked memories (seed 001 §5.2, seed 002 §5.3 and §5.7): which of the
asker's keywords each memory holds, a preview, the total it counted, and the results grouped per group.
Pure functions (table-tested in tests/test_search_controls.py); the original turns are read in turns.py.

A "group" is the group conversation a memory was saved in (`group_id`): seed 002's memories carry the
`group_id` of the group chat they came from and its retrieval groups by it (`group_by_groupid_stratagy`);
this service keeps that same id on every memory (docs/read-path.md, the group's profile). Memories saved
outside any group form the group "".
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from memories import vocabulary
from memories.excerpts import episode_excerpt
from memories.search.query import ScoredMemory, SearchPlan, SearchQuery
from memories.text import has_han, query_words, stem

PREVIEW_CHARS = 200  # seed 001 §5.2: content[:200]
_WORD = re.compile(r"\w+", re.UNICODE)


@dataclass
class SearchAnswer:
    """A search's answer: the ranked memories with what each interface shows beside them."""

    results: list[ScoredMemory]
    plan: SearchPlan
    matched_keywords: dict[str, list[str]] = field(default_factory=dict)  # memory id -> the asker's words
    previews: dict[str, str] = field(default_factory=dict)  # memory id -> preview
    groups: list[dict[str, Any]] = field(default_factory=list)
    turns: dict[str, dict[str, Any]] | None = None  # memory id -> {turns, turns_total}, when asked (turns.py)


def keyword_words(query: SearchQuery) -> list[tuple[str, tuple[str, ...]]]:
    """The words a memory is said to match, each with the terms it stands for: every explicit keyword
    (all of its terms must be there), else each content word of the query, once per term."""
    if query.keywords:
        out = []
        for keyword in query.keywords:
            terms = tuple(dict.fromkeys(term for _, term in query_words(keyword)))
            if terms:
                out.append((keyword, terms))
        return out
    seen: dict[str, str] = {}
    for word, term in query_words(query.query):
        seen.setdefault(term, word)
    return [(word, (term,)) for term, word in seen.items()]


def matched_keywords(words: Sequence[tuple[str, tuple[str, ...]]], text: str) -> list[str]:
    """Which of the words the text holds: a Latin term as one of its stemmed words, a Chinese one as a part
    of it (the index cuts Chinese words into their parts, so a part found is a term matched)."""
    if not words:
        return []
    folded = unicodedata.normalize("NFKC", text).casefold()
    stems = {stem(token) for token in _WORD.findall(folded)}
    return [word for word, terms in words
            if all((term in folded) if has_han(term) else (term in stems) for term in terms)]


def preview(text: str, limit: int = PREVIEW_CHARS) -> str:
    """The text on one line, cut to `limit` characters with "…" when longer."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: max(limit - 1, 0)].rstrip() + "…"


def memory_preview(memory: Any, query: str, limit: int = PREVIEW_CHARS) -> str:
    """A memory's preview: an episode's turns that match the question (as the context block shows
    them), else the start of its text."""
    data = memory.data if isinstance(memory.data, dict) else {}
    turns = data.get("turns")
    if vocabulary.Tag.EPISODE in (memory.tags or []) and isinstance(turns, list) and turns:
        excerpt, _ = episode_excerpt(turns, query, limit)
        if excerpt:
            return excerpt
    return preview(memory.text, limit)


def result_groups(results: Sequence[ScoredMemory]) -> list[dict[str, Any]]:
    """The results per group (seed 002's group_by_groupid): each group once, in the order of its best
    result, with its memory ids best first, their count and its best score."""
    groups: dict[str, dict[str, Any]] = {}
    for found in results:
        group = groups.setdefault(found.memory.group_id or "", {
            "group_id": found.memory.group_id or "", "count": 0, "best_score": found.score, "memory_ids": []})
        group["count"] += 1
        group["memory_ids"].append(str(found.memory.id))
    return list(groups.values())


def search_answer_build(query: SearchQuery, results: list[ScoredMemory], plan: SearchPlan,
                        turns: dict[str, dict[str, Any]] | None = None) -> SearchAnswer:
    """The answer around the ranked results (each part a pure function above)."""
    words = keyword_words(query)
    return SearchAnswer(
        results=results, plan=plan, groups=result_groups(results), turns=turns,
        matched_keywords={str(r.memory.id): matched_keywords(words, r.memory.text) for r in results},
        previews={str(r.memory.id): memory_preview(r.memory, query.query) for r in results})
