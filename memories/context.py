"""Top memories -> the prompt block an agent puts in its system prompt."""

from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings
from django.utils import timezone

from memories import vocabulary
from memories.models import MemoryItem, Tenant
from memories.search import (
    ScoredMemory,
    SearchQuery,
    importance_bonus,
    memory_search,
    recency_bonus,
)
from memories.working import WorkingMemoryUnavailable, working_memory_recent


@dataclass
class PromptContext:
    text: str
    memories: list[ScoredMemory]
    working_memory: str  # "used", or why it was skipped


def _working_items(tenant: Tenant, user_id: str, known: set[str], rank: int) -> tuple[list[ScoredMemory], str]:
    """The freshest working-memory items not already found, scored as if
    ranked just after the search results (fusion 1/(k+rank))."""
    try:
        recent = working_memory_recent(tenant.id, user_id)
    except WorkingMemoryUnavailable as exc:
        return [], f"skipped: {exc}"
    ids = [entry["id"] for entry in recent if entry.get("id") not in known]
    current = {str(m.id): m for m in MemoryItem.objects.filter(vocabulary.is_searchable(timezone.now()),
                                                               tenant=tenant, user_id=user_id, id__in=ids)}
    now, out = timezone.now(), []
    fusion = 1.0 / (settings.SEARCH_RRF_K + rank)
    for memory_id in ids:
        memory = current.get(memory_id)
        if memory is None:
            continue
        recency, importance = recency_bonus(memory, now), importance_bonus(memory)
        out.append(ScoredMemory(memory=memory, score=fusion * (1 + recency + importance), scores={
            "semantic": None, "keyword": None, "fusion": fusion, "recency": recency, "importance": importance,
            "stage": 0.0, "working_memory": True}))
    return out, "used"


def render_context(user_id: str, memories: list[ScoredMemory], max_chars: int) -> str:
    """A heading and one dated line per memory, best first, never longer than max_chars."""
    heading = f"## What you remember about {user_id}"
    if not memories:
        return ""
    lines = [heading]
    size = len(heading)
    for scored in memories:
        memory = scored.memory
        moment = memory.valid_at or memory.created_at
        line = f"- [{moment.date().isoformat()}] {' '.join(memory.text.split())}"
        if size + 1 + len(line) > max_chars:
            continue
        lines.append(line)
        size += 1 + len(line)
    return "\n".join(lines) if len(lines) > 1 else ""


def build_context(*, tenant: Tenant, user_id: str, query: str, limit: int = 10, max_chars: int = 2000
                  ) -> PromptContext:
    found = memory_search(tenant=tenant, query=SearchQuery(query=query, user_id=user_id, limit=limit))
    known = {str(r.memory.id) for r in found}
    extra, working_state = _working_items(tenant, user_id, known, len(found) + 1)
    texts = {" ".join(r.memory.text.split()).casefold() for r in found}
    merged = found + [r for r in extra if " ".join(r.memory.text.split()).casefold() not in texts]
    merged.sort(key=lambda r: -r.score)
    merged = merged[: limit + 5]
    return PromptContext(text=render_context(user_id, merged, max_chars), memories=merged,
                         working_memory=working_state)
