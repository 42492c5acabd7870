"""Embedding writes and the per-model vector index.

Vectors are written after the memory commits; a failure marks the memory
(embedding_state=failed) and never loses it: it stays keyword-searchable and
backfill or a task retry embeds it later.
"""

from __future__ import annotations

import hashlib
import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass

from django.conf import settings
from django.db import connection, transaction

from memories.chunking import split_text
from memories.embedding import Embedder, EmbeddingError, get_embedder
from memories.models import EmbeddingState, MemoryItem, MemoryVector

logger = logging.getLogger(__name__)


@dataclass
class EmbedReport:
    embedded: int
    vectors: int
    missing: int


def embed_items(item_ids: Sequence[str], *, embedder: Embedder | None = None,
                mark_state: bool = True) -> EmbedReport:
    """Embed the given memories (all chunks) under the embedder's model, replacing
    any vectors they already have under that model. Raises EmbeddingError after
    marking the rows failed."""
    embedder = embedder or get_embedder()
    items = list(
        MemoryItem.objects.filter(id__in=item_ids).only("id", "tenant_id", "user_id", "memory_type", "status", "text")
    )
    chunks: list[tuple[MemoryItem, int, str]] = []
    for item in items:
        pieces = split_text(item.text, size=settings.EMBEDDING_CHUNK_CHARS, overlap=settings.EMBEDDING_CHUNK_OVERLAP)
        for index, piece in enumerate(pieces or [item.text]):
            chunks.append((item, index, piece))
    try:
        matrix = embedder.embed_documents([c[2] for c in chunks])
    except Exception as exc:
        if mark_state:
            MemoryItem.objects.filter(id__in=[i.id for i in items]).update(
                embedding_state=EmbeddingState.FAILED, embedding_error=str(exc)[:2000]
            )
        raise EmbeddingError(str(exc)) from exc
    rows = [
        MemoryVector(item_id=item.id, tenant_id=item.tenant_id, user_id=item.user_id, memory_type=item.memory_type,
                     status=item.status, chunk_index=index, chunk_text=piece, model=embedder.name,
                     dimensions=embedder.dimensions, embedding=vector)
        for (item, index, piece), vector in zip(chunks, matrix, strict=True)
    ]
    with transaction.atomic():
        # Rows erased meanwhile must not get orphan vectors: lock what still exists.
        alive = set(MemoryItem.objects.select_for_update().filter(id__in=[i.id for i in items])
                    .values_list("id", flat=True))
        MemoryVector.objects.filter(item_id__in=alive, model=embedder.name).delete()
        MemoryVector.objects.bulk_create([r for r in rows if r.item_id in alive], batch_size=1000)
        if mark_state:
            MemoryItem.objects.filter(id__in=alive).update(embedding_state=EmbeddingState.DONE, embedding_error="")
    return EmbedReport(embedded=len(alive), vectors=sum(1 for r in rows if r.item_id in alive),
                       missing=len(item_ids) - len(alive))


def hnsw_index_name(model: str) -> str:
    slug = re.sub(r"[^a-z0-9]+", "_", model.lower()).strip("_")[:30]
    digest = hashlib.sha1(model.encode()).hexdigest()[:8]
    return f"memvec_hnsw_{slug}_{digest}"


def ensure_hnsw_index(model: str, dimensions: int, *, using_connection=None) -> str:
    """Create the HNSW cosine index for one model's vectors if it is missing.

    The column is an unsized halfvec (several models coexist), so the index is
    on a sized cast, restricted to that model's rows; queries that want it
    must use the same cast and model predicate (search.py does).
    """
    name = hnsw_index_name(model)
    conn = using_connection or connection
    with conn.cursor() as cursor:
        cursor.execute(
            f"""CREATE INDEX IF NOT EXISTS {name} ON memory_vectors
                USING hnsw ((embedding::halfvec({int(dimensions)})) halfvec_cosine_ops)
                WITH (m = 16, ef_construction = 64)
                WHERE model = {_quote_literal(model)}"""
        )
    return name


def _quote_literal(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"
