"""Derived columns: values computed from the content (dedupe hash, embedding
state, full-text document, read counts, provenance backfills). They change
without a history row because the content does not."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from django.db import connection

from memories.models import (
    MemoryItem,
    MemorySource,
)
from memories.text import content_hash
from memories.writing.core import (
    search_document,
)

# --------------------------------------------------------------------------- derived columns
# Columns computed from the content (embedding state, full-text document, read
# counts, provenance backfills): they change without a history row because the
# memory's content does not; they change here all the same.


def memories_emotion_fill(emotions: dict[str, dict[str, Any]]) -> int:
    """The emotion read for memories saved without one (memories.emotion, after the save's commit): only
    rows that still have none, so a reviewer's or a client's value is never overwritten."""
    return sum(MemoryItem.objects.filter(id=memory_id, emotion__isnull=True).update(emotion=emotion)
               for memory_id, emotion in emotions.items())


def memory_set_embedding_state(*, memory_ids: Sequence[uuid.UUID | str], state: str, error: str = "") -> int:
    """done / failed / pending, as the embedding pipeline moves a memory along."""
    return MemoryItem.objects.filter(id__in=list(memory_ids)).update(embedding_state=state,
                                                                     embedding_error=error[:2000])


def memory_refresh_search_vectors(*, memory_ids: Sequence[uuid.UUID | str]) -> int:
    """Recompute the full-text document of memories that lack it (or whose rule changed)."""
    changed = 0
    for memory in MemoryItem.objects.filter(id__in=list(memory_ids)).only("id", "text"):
        changed += MemoryItem.objects.filter(id=memory.id).update(search_vector=search_document(memory.text))
    return changed


def memory_add_session_sources(*, memory_ids: Sequence[uuid.UUID | str]) -> int:
    """A source row for memories that name a session but have none (rows from before sources existed)."""
    return len(MemorySource.objects.bulk_create(
        MemorySource(item_id=m.id, session_id=m.session_id)
        for m in MemoryItem.objects.filter(id__in=list(memory_ids)).only("id", "session_id")))


def memory_add_reads(*, counts: dict[str, tuple[int, float]]) -> int:
    """Add buffered read counts (memory id -> (reads, last read as epoch seconds))
    in one UPDATE; memories erased meanwhile are skipped."""
    ids = list(counts)
    with connection.cursor() as cursor:
        cursor.execute(
            """UPDATE memory_items m
               SET access_count = m.access_count + u.n,
                   last_accessed_at = GREATEST(coalesce(m.last_accessed_at, u.at), u.at)
               FROM unnest(%s::uuid[], %s::int[], %s::timestamptz[]) AS u(id, n, at)
               WHERE m.id = u.id""",
            [ids, [counts[i][0] for i in ids], [datetime.fromtimestamp(counts[i][1], tz=UTC) for i in ids]],
        )
        updated: int = cursor.rowcount
        return updated



def memory_refresh_content_hash(*, memory_id: uuid.UUID | str) -> bool:
    """Recompute a memory's dedupe hash from its text after the hash rule
    changed. A derived column, so no history row: the content is unchanged."""
    memory = MemoryItem.objects.filter(id=memory_id).only("id", "text", "content_hash").first()
    digest = content_hash(memory.text) if memory is not None else None
    if memory is None or digest == memory.content_hash:
        return False
    return bool(MemoryItem.objects.filter(id=memory.id).update(content_hash=digest))
