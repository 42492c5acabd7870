"""Embedding writes and the per-model vector index.

Vectors are written after the memory commits; a failure marks the memory
(embedding_state=failed) and never loses it: it stays keyword-searchable and
backfill or a task retry embeds it later.
"""

from __future__ import annotations

import hashlib
import logging
import re
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import timedelta

import numpy as np
from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone
from pgvector import HalfVector
from pgvector.psycopg import register_vector

from memories import vocabulary
from memories.chunking import split_text
from memories.embedding import Embedder, EmbeddingError, get_embedder
from memories.models import EmbeddingState, MemoryItem, MemoryVector
from memories.writing import memories_embedded_in_transaction, memory_set_embedding_state

# Long texts are embedded in chunks of this many characters, overlapping by this many: a memory is short (the
# input bound is MEMORY_MAX_TEXT_CHARS), so most have one chunk and a long one is still found by its parts.
EMBEDDING_CHUNK_CHARS = 500
EMBEDDING_CHUNK_OVERLAP = 50
# Build parameters of a model's HNSW index, read when the index is created. Measured at 112k vectors
# (`make bench`, "Core"): (16, 64) 2.44 s per 1,000 inserts, recall@10 0.990; (16, 32) 1.69 s, 0.980.
HNSW_M = 16
HNSW_EF_CONSTRUCTION = 64
# A worker's embedding task takes up to this many other waiting memories of the tenant into its one call of
# the model: under a stream of single saves the model runs in batches (10 ms of CPU for one memory alone,
# 4.4 each in fours; `make bench-load`). 0 embeds only its own.
EMBEDDING_TASK_COMPANIONS = 15

logger = logging.getLogger(__name__)


@dataclass
class EmbedReport:
    embedded: int
    vectors: int
    missing: int
    changed: int = 0  # edited while being embedded: left to the edit's own task
    fresh: int = 0  # already held vectors of their current text (embed_waiting)
    # memory id -> the float32 vector of its whole text (one chunk), for what reads the same encoders
    # (emotion.emotions_fill) without running them again
    whole: dict[str, np.ndarray] = field(default_factory=dict)


def embed_items(item_ids: Sequence[str], *, embedder: Embedder | None = None,
                mark_state: bool = True) -> EmbedReport:
    """Embed the given memories (all chunks) under the embedder's model, replacing
    any vectors they already have under that model. Raises EmbeddingError after
    marking the rows failed."""
    embedder = embedder or get_embedder()
    ensure_hnsw_index_once(embedder.name, embedder.dimensions)
    items = list(
        MemoryItem.objects.filter(id__in=item_ids).only("id", "tenant_id", "user_id", "memory_type", "status", "text")
    )
    chunks: list[tuple[MemoryItem, int, str]] = []
    for item in items:
        pieces = split_text(item.text, size=EMBEDDING_CHUNK_CHARS, overlap=EMBEDDING_CHUNK_OVERLAP)
        for index, piece in enumerate(pieces or [item.text]):
            chunks.append((item, index, piece))
    try:
        matrix = embedder.embed_documents([c[2] for c in chunks])
    except Exception as exc:
        if mark_state:
            mark_embedding_failed([str(i.id) for i in items], exc)
        raise EmbeddingError(str(exc)) from exc
    with transaction.atomic():
        # Derived data: committed without waiting for the disk. A crash can lose the last commits' vectors
        # and their `done` marks together; those memories are still `pending` and the embed-pending sweep
        # (maintenance.embeddings_sweep, a beat job) embeds them again.
        commit_without_waiting_for_the_disk()
        # Rows erased meanwhile must not get orphan vectors, and rows edited meanwhile must not get
        # the old text's (the edit set them pending and queued their own embedding): lock what still
        # exists and keep what still says what was embedded.
        now_text = dict(MemoryItem.objects.select_for_update().filter(id__in=[i.id for i in items])
                        .values_list("id", "text"))
        alive = {item.id for item in items if now_text.get(item.id) == item.text}
        MemoryVector.objects.filter(item_id__in=alive, model=embedder.name).delete()
        rows = [(item, index, piece, vector) for (item, index, piece), vector in zip(chunks, matrix, strict=True)
                if item.id in alive]
        _copy_vectors(rows, embedder)
        if mark_state:
            memory_set_embedding_state(memory_ids=list(alive), state=EmbeddingState.DONE)
    by_item: dict[uuid.UUID, list[np.ndarray]] = {}
    for (item, _, _), vector in zip(chunks, matrix, strict=True):
        by_item.setdefault(item.id, []).append(vector)
    return EmbedReport(embedded=len(alive), vectors=len(rows), missing=len(item_ids) - len(now_text),
                       changed=len(now_text) - len(alive),
                       whole={str(i): v[0] for i, v in by_item.items() if len(v) == 1 and i in alive})


def commit_without_waiting_for_the_disk() -> None:
    """The surrounding transaction commits without waiting for its WAL to reach the disk (SET LOCAL: this
    transaction only). For derived writes a crash may lose and a sweep redoes, never for what a client
    was told is kept."""
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL synchronous_commit = off")


def vectors_store_known(known: Sequence[tuple[uuid.UUID | str, str, np.ndarray]], *, embedder: Embedder) -> list[str]:
    """(memory id, the text embedded, its document vector): vectors the caller's transaction already made of
    memories it wrote (deduplication embedded the text first), stored in that same transaction and marked
    done, so no task embeds them again after commit (writing.memories_embedded_in_transaction). Only for a
    memory that still holds that text, in one chunk (a longer one is embedded chunk by chunk after commit),
    and has no vector under the model yet. Returns the ids stored."""
    if not known:
        return []
    assert connection.in_atomic_block, "vectors_store_known writes inside the transaction that wrote the memories"
    ensure_hnsw_index_once(embedder.name, embedder.dimensions)
    by_id = {str(memory_id): (text, vector) for memory_id, text, vector in known}
    held = {str(i) for i in MemoryVector.objects.filter(item_id__in=list(by_id), model=embedder.name)
            .values_list("item_id", flat=True)}
    rows = []
    for item in MemoryItem.objects.filter(id__in=list(by_id)).only("id", "tenant_id", "user_id", "memory_type",
                                                                   "status", "text"):
        text, vector = by_id[str(item.id)]
        if item.text == text and str(item.id) not in held and \
                split_text(text, size=EMBEDDING_CHUNK_CHARS, overlap=EMBEDDING_CHUNK_OVERLAP) == [text]:
            rows.append((item, 0, text, vector))
    _copy_vectors(rows, embedder)
    stored = [str(item.id) for item, _, _, _ in rows]
    if stored:
        memory_set_embedding_state(memory_ids=stored, state=EmbeddingState.DONE)
        memories_embedded_in_transaction(stored)
    return stored


def waiting_companions(item_ids: Sequence[str], limit: int) -> list[str]:
    """Up to `limit` other memories of the same tenants saved in the last EMBEDDING_SWEEP_AFTER seconds
    and still waiting for their vectors, newest first: their own tasks are queued behind this one, and
    one model call embeds four texts for 4.4 ms of CPU each against 10 ms for one alone (docs/reliability.md);
    those tasks then find them fresh. Older ones (a crash, a broker outage) are the sweep's."""
    if limit <= 0 or not item_ids:
        return []
    tenants = MemoryItem.objects.filter(id__in=list(item_ids)).values("tenant_id")
    since = timezone.now() - timedelta(seconds=settings.EMBEDDING_SWEEP_AFTER)
    return [str(i) for i in MemoryItem.objects.filter(tenant_id__in=tenants, embedding_state=EmbeddingState.PENDING,
                                                      created_at__gte=since)
            .exclude(id__in=list(item_ids)).order_by("-created_at", "-id").values_list("id", flat=True)[:limit]]


def stale_under_model(item_ids: Sequence[str], model: str) -> tuple[list[str], list[str]]:
    """(stale, fresh): whether each memory's vectors under `model` hold its current text, chunk for chunk.
    Stale ones need embedding; fresh ones were embedded already (by another task's batch, or before)."""
    chunks: dict[str, list[tuple[int, str]]] = {}
    for item_id, index, text in MemoryVector.objects.filter(item_id__in=list(item_ids), model=model).values_list(
            "item_id", "chunk_index", "chunk_text"):
        chunks.setdefault(str(item_id), []).append((index, text))
    stale: list[str] = []
    fresh: list[str] = []
    for item_id, text in MemoryItem.objects.filter(id__in=list(item_ids)).values_list("id", "text"):
        pieces = split_text(text, size=EMBEDDING_CHUNK_CHARS, overlap=EMBEDDING_CHUNK_OVERLAP)
        held = [piece for _, piece in sorted(chunks.get(str(item_id), []))]
        (fresh if held and held == (pieces or [text]) else stale).append(str(item_id))
    return stale, fresh


def embed_waiting(item_ids: Sequence[str], *, companions: int) -> EmbedReport:
    """The embedding task's work: these memories and up to `companions` others still waiting, those
    whose vectors do not already hold their current text, in one call of the model. A memory found
    fresh but still marked pending (edited back to the text it had) is marked done."""
    embedder = get_embedder()
    wanted = list(dict.fromkeys(str(i) for i in item_ids))
    stale, fresh = stale_under_model(wanted + waiting_companions(wanted, companions), embedder.name)
    marked_otherwise = list(MemoryItem.objects.filter(id__in=fresh).exclude(embedding_state=EmbeddingState.DONE)
                            .values_list("id", flat=True)) if fresh else []
    if marked_otherwise:
        memory_set_embedding_state(memory_ids=marked_otherwise, state=EmbeddingState.DONE)
    report = embed_items(stale, embedder=embedder) if stale else EmbedReport(embedded=0, vectors=0, missing=0)
    report.fresh = len(fresh)
    return report


def mark_embedding_failed(item_ids: Sequence[str], error: Exception) -> None:
    """Flag memories whose embedding failed; backfill and retries look for the flag."""
    memory_set_embedding_state(memory_ids=item_ids, state=EmbeddingState.FAILED,
                               error=f"{type(error).__name__}: {error}")


_VECTOR_COLUMNS = ("item_id", "tenant_id", "user_id", "memory_type", "status", "chunk_index", "chunk_text", "model",
                   "dimensions", "embedding", "created_at")
_VECTOR_TYPES = ["uuid", "int8", "varchar", "varchar", "varchar", "int2", "text", "varchar", "int2", "halfvec",
                 "timestamptz"]


def store_vectors(pairs: list[tuple[MemoryItem, np.ndarray]], embedder: Embedder) -> None:
    """Store vectors that came with imported memories (one chunk each), marking them embedded."""
    ensure_hnsw_index_once(embedder.name, embedder.dimensions)
    norms = [np.linalg.norm(v) or 1.0 for _, v in pairs]
    _copy_vectors([(m, 0, m.text, v / n) for (m, v), n in zip(pairs, norms, strict=True)], embedder)
    memory_set_embedding_state(memory_ids=[m.id for m, _ in pairs], state=EmbeddingState.DONE)


def _copy_vectors(rows: list[tuple[MemoryItem, int, str, np.ndarray]], embedder: Embedder) -> None:
    """Write vectors with binary COPY: three times faster than INSERT here
    (0.55 s vs 1.8 s per 1,000 x 384), most of it saved on the client."""
    if not rows:
        return

    _register_vector_types()
    now = timezone.now()
    with connection.cursor() as cursor:
        sql = f"COPY memory_vectors ({', '.join(_VECTOR_COLUMNS)}) FROM STDIN WITH (FORMAT BINARY)"
        with cursor.cursor.copy(sql) as copy:
            copy.set_types(_VECTOR_TYPES)
            for item, index, piece, vector in rows:
                copy.write_row((item.id, item.tenant_id, item.user_id, item.memory_type, item.status, index, piece,
                                embedder.name, embedder.dimensions, HalfVector(vector), now))


def _register_vector_types() -> None:
    """Teach this psycopg connection pgvector's binary types (once per connection)."""
    connection.ensure_connection()
    raw = connection.connection
    if not getattr(raw, "_pgvector_registered", False):
        register_vector(raw)
        raw._pgvector_registered = True


def _index_name(kind: str, model: str) -> str:
    slug = re.sub(r"[^a-z0-9]+", "_", model.lower()).strip("_")[:30]
    digest = hashlib.sha1(model.encode()).hexdigest()[:8]
    return f"memvec_{kind}_{slug}_{digest}"


def hnsw_index_name(model: str) -> str:
    return _index_name("hnsw", model)


def user_index_name(model: str) -> str:
    return _index_name("user", model)


def _lock_index_name(cursor, name: str) -> None:
    """Two workers embedding a new model's first vectors both find its index
    missing; without this, both CREATE INDEX IF NOT EXISTS and the second
    fails on pg_class's unique name. The lock is held until the creating
    transaction commits, so the second then sees the index and skips."""
    cursor.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", [f"vector-index:{name}"])


def ensure_hnsw_index(model: str, dimensions: int, *, using_connection=None) -> str:
    """Create the HNSW cosine index for one model's vectors if it is missing.

    The column is an unsized halfvec (several models coexist), so the index is
    on a sized cast, restricted to that model's rows; queries that want it
    must use the same cast and model predicate (search/semantic.py does).
    """
    name = hnsw_index_name(model)
    conn = using_connection or connection
    with transaction.atomic(using=conn.alias), conn.cursor() as cursor:
        _lock_index_name(cursor, name)
        cursor.execute(
            f"""CREATE INDEX IF NOT EXISTS {name} ON memory_vectors
                USING hnsw ((embedding::halfvec({int(dimensions)})) halfvec_cosine_ops)
                WITH (m = {int(HNSW_M)}, ef_construction = {int(HNSW_EF_CONSTRUCTION)})
                WHERE {vocabulary.sql_model_is(model)}"""
        )
    return name


# A b-tree entry holds at most 2,704 bytes; a halfvec takes 2 bytes a dimension.
USER_INDEX_MAX_DIMENSIONS = 1024


def ensure_user_vector_index(model: str, dimensions: int, *, using_connection=None) -> str | None:
    """Create one model's per-user covering index if it is missing: the exact
    plan then reads a user's vectors from the index alone, a few contiguous
    pages, instead of one heap page per vector wherever it was written
    (measured at 1M memories, 1,000 per user: exact vector step 15.0 -> 5.4 ms
    p50). Models wider than USER_INDEX_MAX_DIMENSIONS keep the plain index."""
    if dimensions > USER_INDEX_MAX_DIMENSIONS:
        return None
    name = user_index_name(model)
    conn = using_connection or connection
    with transaction.atomic(using=conn.alias), conn.cursor() as cursor:
        _lock_index_name(cursor, name)
        cursor.execute(
            f"""CREATE INDEX IF NOT EXISTS {name} ON memory_vectors (tenant_id, user_id)
                INCLUDE (item_id, embedding) WHERE {vocabulary.sql_model_is(model)}"""
        )
    return name


# Models whose indexes this process has seen exist: a fact about the database, true in any process (a
# forked child's too), so reset() leaves it.
_indexed_models: set[str] = set()


def ensure_hnsw_index_once(model: str, dimensions: int) -> None:
    """A model's indexes (HNSW, per-user covering) must exist as soon as its
    vectors do (otherwise the 'HNSW' plan silently becomes a sequential scan).
    Checked once per process, through the catalogue first so existing indexes
    cost no table lock."""
    if model in _indexed_models:
        return
    wanted: dict[str, Callable[..., str | None]] = {hnsw_index_name(model): ensure_hnsw_index}
    if dimensions <= USER_INDEX_MAX_DIMENSIONS:
        wanted[user_index_name(model)] = ensure_user_vector_index
    with connection.cursor() as cursor:
        cursor.execute("SELECT indexname FROM pg_indexes WHERE tablename = 'memory_vectors' AND indexname = ANY(%s)",
                       [list(wanted)])
        existing = {row[0] for row in cursor.fetchall()}
    for name, create in wanted.items():
        if name not in existing:
            create(model, dimensions)
    _indexed_models.add(model)


def refresh_planner_statistics() -> None:
    """ANALYZE the memory tables after a bulk load. On a freshly loaded tenant
    the planner otherwise believes it holds one row and picks a per-row scan of
    the user's items (measured 41 ms vs 1.9 ms for the same query)."""
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE memory_items")
        cursor.execute("ANALYZE memory_vectors")
