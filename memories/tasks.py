"""Celery tasks: thin wrappers that re-fetch by id and call a service."""

from __future__ import annotations

import logging

from celery import shared_task

from memories.embedding import EmbeddingError
from memories.vectors import embed_items, mark_embedding_failed

logger = logging.getLogger(__name__)


@shared_task(bind=True, max_retries=5, acks_late=True)
def embed_memories(self, item_ids: list[str]) -> dict:
    """Embed memories after commit. Idempotent: re-running replaces the vectors."""
    try:
        report = embed_items(item_ids)
    except Exception as exc:
        if not isinstance(exc, EmbeddingError):
            logger.exception("embedding task crashed")
            mark_embedding_failed(item_ids, exc)
        if self.request.is_eager:
            # In-process mode: leave the rows marked failed for `backfill` rather
            # than failing the request that saved them.
            logger.warning("embedding failed for %d memories: %s", len(item_ids), exc)
            return {"embedded": 0, "failed": len(item_ids)}
        raise self.retry(exc=exc, countdown=min(2 ** self.request.retries * 5, 300)) from exc
    return {"embedded": report.embedded, "vectors": report.vectors}
