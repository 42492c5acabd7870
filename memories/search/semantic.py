"""The vector side. A user's own rows by b-tree with exact distance (sub-millisecond,
recall 1.0) up to SEARCH_EXACT_MAX_ROWS vectors; the per-model HNSW index with
iterative scan beyond that and for tenant-wide search."""

from __future__ import annotations

import time
from datetime import datetime
from functools import lru_cache
from typing import Any

import numpy as np
from django.db import transaction
from django.utils import timezone

from memories import vocabulary
from memories.models import MemoryStatus, Tenant
from memories.process_state import forgotten_on_reset
from memories.replicas import read_alias
from memories.search import tuning
from memories.search.filters import db, item_filters
from memories.search.query import SearchQuery, VectorPlan
from memories.search.rows import SCORE_COLUMNS, RetrievedRow, candidate, named

_PLAN_CACHE: dict[tuple[int, str, str, int], tuple[float, VectorPlan]] = {}
PLAN_CACHE_SECONDS = 60.0


def vector_literal(vector: np.ndarray) -> str:
    """The vector as pgvector's text input, six significant digits a value: one %-format of the whole
    vector (0.15 ms for the pair's 896 values; a formatted string per value took 0.32)."""
    values = vector.tolist()
    return _literal_format(len(values)) % tuple(values)


@lru_cache(maxsize=8)
def _literal_format(dimensions: int) -> str:
    return "[" + ",".join(["%.6g"] * dimensions) + "]"


forgotten_on_reset(_PLAN_CACHE.clear)


def _plan_key(tenant: Tenant, user_id: str, model: str) -> tuple[int, str, str, int]:
    return tenant.id, user_id, model, tuning.SEARCH_EXACT_MAX_ROWS


def cached_vector_plan(tenant: Tenant, user_id: str | None, model: str) -> VectorPlan:
    """hnsw for tenant-wide search and for users known to hold more than
    SEARCH_EXACT_MAX_ROWS vectors; exact otherwise. A user's size is learnt
    from the exact query itself (it counts what it scanned, up to the cap),
    so a user not seen in the last minute costs no extra round trip."""
    if user_id is None:
        return "hnsw"
    cached = _PLAN_CACHE.get(_plan_key(tenant, user_id, model))
    if cached and time.monotonic() - cached[0] < PLAN_CACHE_SECONDS:
        return cached[1]
    return "exact"


def exact_semantic_sql(tenant: Tenant, q: SearchQuery, vector: np.ndarray, model: str, pool: int,
                       now: datetime) -> tuple[str, list[Any]]:
    """The user's own vectors by b-tree, at most SEARCH_EXACT_MAX_ROWS + 1 of
    them, with exact distance. Each row also carries how many vectors were
    scanned (column `scanned`): above the cap the result is partial and the
    caller switches the user to the HNSW plan."""
    where, params = item_filters(tenant, q, now)
    sql = f"""
        WITH mine AS MATERIALIZED (
            SELECT v.item_id, v.embedding <=> %s::halfvec AS distance FROM memory_vectors v
            WHERE v.tenant_id = %s AND v.user_id = %s AND {vocabulary.sql_model_is(model, "v")} LIMIT %s
        ),
        -- Sorted here so the join below walks nearest-first and stops at the pool
        -- (PostgreSQL 17+ knows a CTE's order): 2.3 -> 1.1 ms at 663 memories.
        nearest AS MATERIALIZED (
            SELECT item_id, MIN(distance) AS distance FROM mine GROUP BY item_id ORDER BY MIN(distance)
        ),
        found AS (
            SELECT m.id AS id, n.distance AS rank_value, {SCORE_COLUMNS}
            FROM nearest n CROSS JOIN LATERAL (
                SELECT * FROM memory_items m WHERE m.id = n.item_id AND {where} LIMIT 1) AS m
            ORDER BY n.distance LIMIT %s
        )
        -- The count comes back even when the filters leave no row.
        SELECT f.*, c.scanned
        FROM (SELECT count(*) AS scanned FROM mine) AS c LEFT JOIN found f ON true
        ORDER BY f.rank_value"""
    args = [vector_literal(vector), tenant.id, q.user_id, tuning.SEARCH_EXACT_MAX_ROWS + 1, *params, pool]
    return sql, args


def exact_result(tenant: Tenant, q: SearchQuery, model: str, rows: list[dict[str, Any]]) -> list[RetrievedRow] | None:
    """Candidate rows of the exact plan (named rows with `scanned`), or None
    when the user turned out to hold more vectors than the plan may scan; such
    a user is then searched through HNSW for the next PLAN_CACHE_SECONDS."""
    if rows and rows[0]["scanned"] > tuning.SEARCH_EXACT_MAX_ROWS:
        if len(_PLAN_CACHE) > 100_000:
            _PLAN_CACHE.clear()
        _PLAN_CACHE[_plan_key(tenant, q.user_id or "", model)] = (time.monotonic(), "hnsw")
        return None
    return [candidate(r) for r in rows if r["id"] is not None]


HNSW_EF_MAX = 1000  # pgvector refuses a larger hnsw.ef_search (an error, not a slower search)


def _hnsw_semantic(tenant: Tenant, q: SearchQuery, vector: np.ndarray, model: str, dimensions: int, pool: int,
                   now: datetime) -> list[RetrievedRow]:
    """The per-model HNSW index with iterative scan (filters cannot starve
    the result); the sized cast and model predicate match the partial index."""
    where, params = item_filters(tenant, q, now)
    literal = vector_literal(vector)
    user_clause = "AND v.user_id = %s" if q.user_id is not None else ""
    status_clause = "" if q.as_of is not None else f"AND {vocabulary.sql_vector_searchable('v')}"
    overfetch = pool * 4
    sql = f"""
        WITH nearest AS MATERIALIZED (
            SELECT v.item_id, v.embedding::halfvec({dimensions}) <=> %s::halfvec({dimensions}) AS distance
            FROM memory_vectors v
            WHERE {vocabulary.sql_model_is(model, "v")} AND v.tenant_id = %s {user_clause} {status_clause}
            ORDER BY v.embedding::halfvec({dimensions}) <=> %s::halfvec({dimensions})
            LIMIT %s
        )
        SELECT m.id AS id, MIN(n.distance) AS rank_value, {SCORE_COLUMNS}
        FROM nearest n JOIN memory_items m ON m.id = n.item_id
        WHERE {where}
        GROUP BY m.id ORDER BY rank_value LIMIT %s"""
    args = [literal, tenant.id, *([q.user_id] if q.user_id is not None else []), literal, overfetch,
            *params, pool]
    with transaction.atomic(using=read_alias()), db().cursor() as cursor:
        cursor.execute("SET LOCAL hnsw.iterative_scan = relaxed_order")
        cursor.execute(f"SET LOCAL hnsw.ef_search = {min(max(int(tuning.SEARCH_HNSW_EF), overfetch), HNSW_EF_MAX)}")
        cursor.execute(sql, args)
        return [candidate(r) for r in named(cursor)]


def semantic_search(
    tenant: Tenant, q: SearchQuery, vector: np.ndarray, model: str, dimensions: int, pool: int, now: datetime,
    plan: VectorPlan,
) -> tuple[list[RetrievedRow], VectorPlan]:
    """(candidate rows, the plan that ran): exact falls back to hnsw for a user
    found to be larger than the exact plan may scan."""
    if plan == "exact" and q.user_id is not None:
        sql, args = exact_semantic_sql(tenant, q, vector, model, pool, now)
        with db().cursor() as cursor:
            cursor.execute(sql, args)
            rows = exact_result(tenant, q, model, named(cursor))
        if rows is not None:
            return rows, "exact"
    return _hnsw_semantic(tenant, q, vector, model, dimensions, pool, now), "hnsw"


def exact_tenant_neighbours(tenant: Tenant, vector: np.ndarray, model: str, limit: int) -> list[str]:
    """Brute-force nearest vectors tenant-wide: the ground truth for HNSW recall."""
    with transaction.atomic(using=read_alias()), db().cursor() as cursor:
        cursor.execute("SET LOCAL enable_indexscan = off")
        cursor.execute(
            "SELECT item_id FROM memory_vectors WHERE tenant_id = %s AND model = %s AND status = %s"
            " ORDER BY embedding <=> %s::halfvec LIMIT %s",
            [tenant.id, model, MemoryStatus.ACTIVE, vector_literal(vector), limit],
        )
        return [str(r["item_id"]) for r in named(cursor)]


def nearest_memories(*, tenant: Tenant, user_id: str, vector: np.ndarray, model: str, dimensions: int,
                     limit: int = 1) -> list[tuple[str, float]]:
    """The user's current memories closest to a vector: (id, cosine similarity)."""
    now = timezone.now()
    query = SearchQuery(query="", user_id=user_id, limit=limit)
    found, _ = semantic_search(tenant, query, vector, model, dimensions, limit, now,
                               cached_vector_plan(tenant, user_id, model))
    return [(row.id, 1.0 - row.rank_value) for row in found]
