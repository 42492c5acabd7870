"""Neighbour expansion: a strong hit brings in the memory saved right after it in
the same session. In a conversation stored turn by turn the answer often sits
one turn after the hit (the question "Anything you're excited about?" is found,
"I'm thrilled to make a family..." holds the answer); on LoCoMo half of the
questions the search missed had their evidence one turn after a top-10 hit.

Order within a session is (created_at, id): writing.memory_create_batch stamps
the rows of a batch a microsecond apart, so a batch keeps the order it was sent in.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from memories.models import Tenant
from memories.search.filters import db, item_filters
from memories.search.query import SearchQuery
from memories.search.rows import SCORE_COLUMNS, RetrievedRow, candidate, named


def next_in_session(tenant: Tenant, q: SearchQuery, hit_ids: list[str], now: datetime) -> dict[str, RetrievedRow]:
    """hit id -> the next memory of its session that the search may return (its scope and filters)."""
    if not hit_ids:
        return {}
    where, params = item_filters(tenant, q, now)
    sql = f"""
        SELECT h.id AS hit, n.*
        FROM memory_items h CROSS JOIN LATERAL (
            SELECT m.id AS id, 0.0::float8 AS rank_value, {SCORE_COLUMNS}
            FROM memory_items m
            WHERE {where} AND m.user_id = h.user_id AND m.session_id = h.session_id AND m.session_id <> ''
              AND m.created_at >= h.created_at  -- with the line above: the partial index memory_session_order
              AND (m.created_at, m.id) > (h.created_at, h.id)
            ORDER BY m.created_at, m.id LIMIT 1) AS n
        WHERE h.id = ANY(%s::uuid[]) AND h.tenant_id = %s AND h.session_id <> ''"""
    with db().cursor() as cursor:
        cursor.execute(sql, [*params, hit_ids, tenant.id])
        return {str(row["hit"]): candidate(row) for row in named(cursor)}


def spread_to_neighbours(scored: list[tuple[float, str, dict[str, Any]]], following: dict[str, str],
                         weight: float) -> list[tuple[float, str, dict[str, Any]]]:
    """Pure rule: each hit in `following` (hit id -> the id of the memory after it) lends
    weight x its score to that memory, which keeps the larger of that and its own score
    (a memory not yet in the list enters with the lent score, and weight x the hit's
    relevance). Best first again after."""
    by_id = {memory_id: (score, parts) for score, memory_id, parts in scored}
    lent: dict[str, tuple[float, str]] = {}
    for score, memory_id, _ in scored:
        neighbour = following.get(memory_id)
        if neighbour is not None and weight * score > lent.get(neighbour, (0.0, ""))[0]:
            lent[neighbour] = (weight * score, memory_id)
    for neighbour, (score, hit) in lent.items():
        own = by_id.get(neighbour)
        if own is None or score > own[0]:
            base = own[1] if own else {"relevance": 0.0, "semantic": None, "keyword": None, "fusion": 0.0}
            relevance = max(base.get("relevance", 0.0), weight * by_id[hit][1].get("relevance", 0.0))
            by_id[neighbour] = (score, {**base, "relevance": relevance, "neighbour_of": hit})
    out = [(score, memory_id, parts) for memory_id, (score, parts) in by_id.items()]
    out.sort(key=lambda entry: (-entry[0], entry[1]))
    return out
