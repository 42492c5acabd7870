"""Every rule about finding a memory: semantic, keyword and hybrid retrieval,
reciprocal rank fusion and the final score.

final score = fusion x (1 + recency bonus + importance bonus + trait stage boost),
with each part returned so a person can see why a memory came back.

The vector side picks its plan by the user's size: a user's own rows by
b-tree with exact distance (sub-millisecond, recall 1.0) up to
SEARCH_EXACT_MAX_ROWS vectors, the per-model HNSW index with iterative scan
beyond that and for tenant-wide search.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import NamedTuple

import numpy as np
from django.conf import settings
from django.db import connections, transaction
from django.db.models import Q
from django.utils import timezone

from memories import metrics, vocabulary
from memories.embedding import Embedder, EmbeddingError, embed_query, get_embedder
from memories.models import MemoryItem, MemoryStatus, Tenant
from memories.replicas import read_alias
from memories.text import query_tokens, tsquery_from_tokens
from memories.writing import EPISODE_TAG

logger = logging.getLogger(__name__)

MODES = ("semantic", "keyword", "hybrid")
RECENCY_WEIGHT = 0.15
RECENCY_SCALE_SECONDS = 30 * 24 * 3600.0
IMPORTANCE_WEIGHT = 0.15
STAGE_BOOST = {"core": 0.25, "established": 0.15, "emerging": 0.05}
ACTIVE_TRAIT_STAGES = tuple(STAGE_BOOST)


@dataclass
class SearchQuery:
    """What to look for, and where (see _scope_clauses for the scope rules).

    min_score is on the 0-1 relevance scale (fusion over the best fusion this
    query could reach); min_similarity is a cosine floor for the semantic side.
    """

    query: str
    user_id: str | None = None  # None: the whole tenant, or the group when group_id is given
    agent_id: str | None = None
    session_id: str | None = None
    group_id: str | None = None
    mode: str = "hybrid"
    memory_types: list[str] | None = None
    tags: list[str] | None = None
    start_time: datetime | None = None
    end_time: datetime | None = None
    as_of: datetime | None = None
    min_score: float | None = None
    min_similarity: float | None = None
    limit: int = 10


class CandidateRow(NamedTuple):
    """One candidate from a retriever, with what the scorer needs."""

    id: str
    rank_value: float  # cosine distance (semantic side) or rank score (keyword side)
    memory_type: str
    importance: float | None
    moment: float  # valid_at (else created_at) in epoch seconds
    arousal: str | None
    episode: bool = False  # a session's original turns (writing.episode_append), ranked below facts


@dataclass
class ScoredMemory:
    memory: MemoryItem
    score: float
    scores: dict = field(default_factory=dict)


@dataclass
class SearchPlan:
    """How the vector side ran; returned for benchmarks and debugging."""

    vector_plan: str = ""  # exact | hnsw | none
    candidates_semantic: int = 0
    candidates_keyword: int = 0
    degraded: list[str] = field(default_factory=list)  # sides that could not run ("semantic")
    degraded_reason: str = ""


# --------------------------------------------------------------------------- filters


def _item_filters(tenant: Tenant, q: SearchQuery, now: datetime) -> tuple[str, list]:
    """SQL conditions on memory_items (alias m) shared by both retrievers."""
    clauses = ["m.tenant_id = %s"]
    params: list = [tenant.id]
    if q.user_id is not None:
        clauses.append("m.user_id = %s")
        params.append(q.user_id)
    if q.as_of is not None:
        # Bitemporal: recorded by then and not yet replaced, and true in the world then.
        # An archived row counts only if it was archived after that moment.
        clauses.append(
            "m.created_at <= %s AND (m.expired_at IS NULL OR m.expired_at > %s)"
            " AND (m.valid_at IS NULL OR m.valid_at <= %s) AND (m.invalid_at IS NULL OR m.invalid_at > %s)"
            f" AND (m.status = '{MemoryStatus.ACTIVE}'"
            f" OR (m.status = '{MemoryStatus.ARCHIVED}' AND m.archived_at > %s))"
        )
        params += [q.as_of] * 5
    else:
        clauses.append(vocabulary.sql_searchable("m"))
        params.append(now)
    scope, scope_params = _scope_clauses(q)
    clauses += scope
    params += scope_params
    if q.memory_types:
        clauses.append("m.memory_type = ANY(%s)")
        params.append(list(q.memory_types))
    if q.tags:
        clauses.append("m.tags && %s::varchar[]")
        params.append(list(q.tags))
    if q.start_time is not None:
        clauses.append("COALESCE(m.valid_at, m.created_at) >= %s")
        params.append(q.start_time)
    if q.end_time is not None:
        clauses.append("COALESCE(m.valid_at, m.created_at) <= %s")
        params.append(q.end_time)
    return " AND ".join(clauses), params


def _scope_clauses(q: SearchQuery) -> tuple[list[str], list]:
    """The scope rules, in SQL (see scope_filter for the same in the ORM):
    agent_id  the agent's memories and those saved with no agent;
    session_id that session's memories only (Mem0's run);
    group_id  with a user: the user's memories in that group and those saved
              outside any group; without a user: every memory of the group."""
    clauses, params = [], []
    if q.agent_id is not None:
        clauses.append("m.agent_id IN (%s, '')")
        params.append(q.agent_id)
    if q.session_id is not None:
        clauses.append("m.session_id = %s")
        params.append(q.session_id)
    if q.group_id is not None:
        clauses.append("m.group_id IN (%s, '')" if q.user_id is not None else "m.group_id = %s")
        params.append(q.group_id)
    return clauses, params


def scope_filter(*, user_id: str | None, agent_id: str | None = None, session_id: str | None = None,
                 group_id: str | None = None) -> Q:
    """The ORM form of _scope_clauses (lists, exports, the context's extra sections)."""
    condition = Q(user_id=user_id) if user_id is not None else Q()
    if agent_id is not None:
        condition &= Q(agent_id__in=[agent_id, ""])
    if session_id is not None:
        condition &= Q(session_id=session_id)
    if group_id is not None:
        condition &= Q(group_id__in=[group_id, ""]) if user_id is not None else Q(group_id=group_id)
    return condition


# --------------------------------------------------------------------------- retrievers


def _vector_literal(vector: np.ndarray) -> str:
    return "[" + ",".join(f"{x:.6g}" for x in vector.tolist()) + "]"


_PLAN_CACHE: dict[tuple, tuple[float, str]] = {}
PLAN_CACHE_SECONDS = 60.0


def _plan_key(tenant: Tenant, user_id: str, model: str) -> tuple:
    return tenant.id, user_id, model, settings.SEARCH_EXACT_MAX_ROWS


def _db():
    """The connection this block reads from: the replica inside memories.replicas.on_replica, else the primary."""
    return connections[read_alias()]


def cached_vector_plan(tenant: Tenant, user_id: str | None, model: str) -> str:
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


# Columns the scorer needs, read in the same query as the candidates.
# The moment as epoch seconds: parsing two timestamps per candidate cost 2.4 ms a search.
_SCORE_COLUMNS = ("m.memory_type, m.importance, extract(epoch FROM coalesce(m.valid_at, m.created_at))::float8, "
                  f"m.data #>> '{{emotion,arousal}}', '{EPISODE_TAG}' = ANY(m.tags)")


def _candidate_rows(rows) -> list[CandidateRow]:
    return [CandidateRow(str(r[0]), float(r[1]), *r[2:7]) for r in rows]


SCANNED_COLUMN = 7  # the exact plan's extra column: how many vectors it scanned


def _exact_semantic_sql(tenant: Tenant, q: SearchQuery, vector: np.ndarray, model: str, pool: int,
                        now: datetime) -> tuple[str, list]:
    """The user's own vectors by b-tree, at most SEARCH_EXACT_MAX_ROWS + 1 of
    them, with exact distance. Each row also carries how many vectors were
    scanned: above the cap the result is partial and the caller switches the
    user to the HNSW plan."""
    where, params = _item_filters(tenant, q, now)
    sql = f"""
        WITH mine AS MATERIALIZED (
            SELECT v.item_id, v.embedding <=> %s::halfvec AS distance FROM memory_vectors v
            WHERE v.tenant_id = %s AND v.user_id = %s AND v.model = %s LIMIT %s
        ),
        -- Sorted here so the join below walks nearest-first and stops at the pool
        -- (PostgreSQL 17+ knows a CTE's order): 2.3 -> 1.1 ms at 663 memories.
        nearest AS MATERIALIZED (
            SELECT item_id, MIN(distance) AS distance FROM mine GROUP BY item_id ORDER BY MIN(distance)
        ),
        found AS (
            SELECT m.id, n.distance, {_SCORE_COLUMNS}
            FROM nearest n CROSS JOIN LATERAL (
                SELECT * FROM memory_items m WHERE m.id = n.item_id AND {where} LIMIT 1) AS m
            ORDER BY n.distance LIMIT %s
        )
        -- The count comes back even when the filters leave no row.
        SELECT f.*, c.scanned
        FROM (SELECT count(*) AS scanned FROM mine) AS c LEFT JOIN found f ON true
        ORDER BY f.distance"""
    args = [_vector_literal(vector), tenant.id, q.user_id, model, settings.SEARCH_EXACT_MAX_ROWS + 1, *params, pool]
    return sql, args


def _hnsw_semantic(tenant: Tenant, q: SearchQuery, vector: np.ndarray, model: str, dimensions: int, pool: int,
                   now: datetime) -> list[CandidateRow]:
    """The per-model HNSW index with iterative scan (filters cannot starve
    the result); the sized cast and model predicate match the partial index."""
    where, params = _item_filters(tenant, q, now)
    literal = _vector_literal(vector)
    user_clause = "AND v.user_id = %s" if q.user_id is not None else ""
    status_clause = "" if q.as_of is not None else f"AND {vocabulary.sql_vector_searchable('v')}"
    overfetch = pool * 4
    sql = f"""
        WITH nearest AS MATERIALIZED (
            SELECT v.item_id, v.embedding::halfvec({dimensions}) <=> %s::halfvec({dimensions}) AS distance
            FROM memory_vectors v
            WHERE v.model = %s AND v.tenant_id = %s {user_clause} {status_clause}
            ORDER BY v.embedding::halfvec({dimensions}) <=> %s::halfvec({dimensions})
            LIMIT %s
        )
        SELECT m.id, MIN(n.distance) AS distance, {_SCORE_COLUMNS}
        FROM nearest n JOIN memory_items m ON m.id = n.item_id
        WHERE {where}
        GROUP BY m.id ORDER BY distance LIMIT %s"""
    args = [literal, model, tenant.id, *([q.user_id] if q.user_id is not None else []), literal, overfetch,
            *params, pool]
    with transaction.atomic(using=read_alias()), _db().cursor() as cursor:
        cursor.execute("SET LOCAL hnsw.iterative_scan = relaxed_order")
        cursor.execute(f"SET LOCAL hnsw.ef_search = {max(int(settings.SEARCH_HNSW_EF), overfetch)}")
        cursor.execute(sql, args)
        return _candidate_rows(cursor.fetchall())


def _exact_result(tenant: Tenant, q: SearchQuery, model: str, rows: list[tuple]) -> list[CandidateRow] | None:
    """Candidate rows of the exact plan, or None when the user turned out to
    hold more vectors than the plan may scan; such a user is then searched
    through HNSW for the next PLAN_CACHE_SECONDS."""
    if rows and rows[0][SCANNED_COLUMN] > settings.SEARCH_EXACT_MAX_ROWS:
        if len(_PLAN_CACHE) > 100_000:
            _PLAN_CACHE.clear()
        _PLAN_CACHE[_plan_key(tenant, q.user_id or "", model)] = (time.monotonic(), "hnsw")
        return None
    return _candidate_rows(r for r in rows if r[0] is not None)


def semantic_search(
    tenant: Tenant, q: SearchQuery, vector: np.ndarray, model: str, dimensions: int, pool: int, now: datetime,
    plan: str,
) -> tuple[list[CandidateRow], str]:
    """(candidate rows, the plan that ran): exact falls back to hnsw for a user
    found to be larger than the exact plan may scan."""
    if plan == "exact" and q.user_id is not None:
        sql, args = _exact_semantic_sql(tenant, q, vector, model, pool, now)
        with _db().cursor() as cursor:
            cursor.execute(sql, args)
            rows = _exact_result(tenant, q, model, cursor.fetchall())
        if rows is not None:
            return rows, "exact"
    return _hnsw_semantic(tenant, q, vector, model, dimensions, pool, now), "hnsw"


BM25_K1 = 1.2
BM25_B = 0.75


def keyword_candidates(tenant: Tenant, q: SearchQuery, pool: int, now: datetime) -> list[CandidateRow]:
    """Full-text candidates (see _candidate_rows), best first."""
    statement = keyword_sql(tenant, q, pool, now)
    if statement is None:
        return []
    with _db().cursor() as cursor:
        cursor.execute(*statement)
        return _candidate_rows(cursor.fetchall())


def keyword_sql(tenant: Tenant, q: SearchQuery, pool: int, now: datetime) -> tuple[str, list] | None:
    """The full-text statement ranked as SEARCH_KEYWORD_RANKING says: bm25
    (better recall; one heavier statement) or ts_rank (Postgres' ts_rank_cd:
    no IDF, about 1 ms cheaper per search). None when the query has no terms."""
    # Capped here too (the API refuses more): internal callers pass long texts, and each term is a SQL column.
    tokens = query_tokens(q.query)[: settings.SEARCH_MAX_QUERY_TERMS]
    if not tokens:
        return None
    if settings.SEARCH_KEYWORD_RANKING == "ts_rank":
        return _ts_rank_sql(tenant, q, tokens, pool, now)
    return _bm25_sql(tenant, q, tokens, pool, now)


def _ts_rank_sql(tenant: Tenant, q: SearchQuery, tokens: list[str], pool: int, now: datetime) -> tuple[str, list]:
    where, params = _item_filters(tenant, q, now)
    sql = f"""
        SELECT m.id, ts_rank_cd(m.search_vector, query, 1) AS rank, {_SCORE_COLUMNS}
        FROM memory_items m, to_tsquery('simple', %s) AS query
        WHERE {where} AND m.search_vector @@ query
        ORDER BY rank DESC, m.created_at DESC LIMIT %s"""
    return sql, [tsquery_from_tokens(tokens), *params, pool]


def _bm25_sql(tenant: Tenant, q: SearchQuery, tokens: list[str], pool: int, now: datetime) -> tuple[str, list]:
    """BM25 over the searched memories: document frequencies and average
    length come from the same scope (the user, or the tenant), term
    frequencies from the tsvector's positions. ts_rank_cd has no IDF, so a
    speaker's name in half the memories weighed as much as a rare word."""
    where, params = _item_filters(tenant, q, now)
    query = tsquery_from_tokens(tokens)
    term_counts = ", ".join(f"count(*) FILTER (WHERE m.search_vector @@ to_tsquery('simple', %s)) AS df{i}"
                            for i in range(len(tokens)))
    idf_rows = " UNION ALL ".join(
        f"SELECT %s::text, ln(1 + (s.n - s.df{i} + 0.5) / (s.df{i} + 0.5)), s.df{i} FROM stats s"
        for i in range(len(tokens)))
    # One statement: document frequencies and average length over the searched
    # scope, then BM25 over the matching memories.
    sql = f"""
        WITH stats AS (
            SELECT count(*)::float8 AS n, coalesce(avg(length(m.search_vector)), 1)::float8 AS avglen,
                   {term_counts}
            FROM memory_items m WHERE {where}
        ),
        idf(term, weight, df) AS ({idf_rows})
        SELECT m.id, SUM(idf.weight * (tf.n * ({BM25_K1} + 1))
                         / (tf.n + {BM25_K1} * (1 - {BM25_B} + {BM25_B} * length(m.search_vector) / s.avglen)))
                   AS score, {_SCORE_COLUMNS}
        FROM memory_items m
        CROSS JOIN stats s
        CROSS JOIN LATERAL (SELECT u.lexeme, coalesce(array_length(u.positions, 1), 1) AS n
                            FROM unnest(m.search_vector) AS u) AS tf
        JOIN idf ON idf.term = tf.lexeme AND idf.df > 0
        WHERE {where} AND m.search_vector @@ to_tsquery('simple', %s)
        GROUP BY m.id, s.avglen
        ORDER BY score DESC, m.created_at DESC LIMIT %s"""
    return sql, [*tokens, *params, *tokens, *params, query, pool]


def _exact_and_keyword(tenant: Tenant, q: SearchQuery, vector: np.ndarray, model: str, pool: int,
                       now: datetime) -> tuple[list[CandidateRow] | None, list[CandidateRow]]:
    """Both retrievers of a per-user hybrid search in one round trip:
    (exact semantic rows or None when the user is too large for the exact
    plan, keyword rows)."""
    semantic_sql, semantic_args = _exact_semantic_sql(tenant, q, vector, model, pool, now)
    statement = keyword_sql(tenant, q, pool, now)
    if statement is None:
        with _db().cursor() as cursor:
            cursor.execute(semantic_sql, semantic_args)
            return _exact_result(tenant, q, model, cursor.fetchall()), []
    sql = (f"SELECT true, s.* FROM ({semantic_sql}) AS s"
           f" UNION ALL SELECT false, k.*, NULL::bigint FROM ({statement[0]}) AS k")
    with _db().cursor() as cursor:
        cursor.execute(sql, [*semantic_args, *statement[1]])
        rows = cursor.fetchall()
    # Each branch is ordered inside; sort again rather than trust the Append's order.
    semantic = sorted((r[1:] for r in rows if r[0]), key=lambda r: (r[1] is None, r[1] or 0.0))
    keyword = sorted((r[1:] for r in rows if not r[0]), key=lambda r: -r[1])
    return _exact_result(tenant, q, model, semantic), _candidate_rows(keyword)


# --------------------------------------------------------------------------- scoring


def recency_seconds_bonus(age_seconds: float, arousal) -> float:
    """0..0.15, decaying with a 30-day scale; emotionally charged memories
    (data.emotion.arousal, 0..1) fade up to 1.5x slower."""
    age = max(age_seconds, 0.0)
    try:
        arousal_value = min(max(float(arousal or 0), 0.0), 1.0)
    except (TypeError, ValueError):
        arousal_value = 0.0
    return RECENCY_WEIGHT * math.exp(-age / (RECENCY_SCALE_SECONDS * (1 + arousal_value * 0.5)))


def candidate_row(memory: MemoryItem, rank_value: float = 0.0) -> CandidateRow:
    """A loaded memory as the scorer's row: the same columns _SCORE_COLUMNS reads in SQL."""
    emotion = memory.data.get("emotion") if isinstance(memory.data, dict) else None
    return CandidateRow(str(memory.id), rank_value, memory.memory_type, memory.importance,
                        (memory.valid_at or memory.created_at).timestamp(),
                        emotion.get("arousal") if isinstance(emotion, dict) else None,
                        EPISODE_TAG in (memory.tags or []))


def _trait_stages(ids: list[str]) -> dict[str, tuple[str, float]]:
    """memory id -> (stage, decayed confidence) for trait memories."""
    if not ids:
        return {}
    # Through the trait's reverse relation: search (memories) does not import traits.
    return {str(k): (stage, decayed) for k, stage, decayed in
            MemoryItem.objects.filter(id__in=list(ids), trait__isnull=False)
            .values_list("id", "trait__stage", "trait__decayed_confidence")}


def reciprocal_rank_fusion(ranked_lists: list[tuple[list[str], float]], k: int) -> dict[str, float]:
    """sum over lists of weight / (k + rank)."""
    fused: dict[str, float] = {}
    for ranked, weight in ranked_lists:
        for rank, memory_id in enumerate(ranked, start=1):
            fused[memory_id] = fused.get(memory_id, 0.0) + weight / (k + rank)
    return fused


def best_fusion(sides: list[float], k: int) -> float:
    """The fusion a memory ranked first on every side that ran would get: the top of the relevance scale."""
    return sum(weight / (k + 1) for weight in sides)


def relevance(fusion: float, best: float) -> float:
    """Fusion on a 0-1 scale that means the same in every mode (min_score applies to it)."""
    return min(fusion / best, 1.0) if best > 0 else 0.0


def _query_vector(query: SearchQuery, embedder: Embedder, plan: SearchPlan,
                  compute: Callable[[], np.ndarray] | None) -> np.ndarray | None:
    """The query's vector; None when the embedder fails and hybrid can answer from keywords
    (the plan says so). Semantic mode has nothing else: the failure is raised as EmbeddingError."""
    try:
        return compute() if compute is not None else embed_query(query.query, embedder)
    except Exception as exc:  # a remote endpoint's EmbeddingError, or the local model failing
        if query.mode == "semantic":
            raise exc if isinstance(exc, EmbeddingError) else EmbeddingError(f"{type(exc).__name__}: {exc}") from exc
        logger.warning("query embedding failed; answering from the keyword side: %s", exc)
        plan.degraded.append("semantic")
        plan.degraded_reason = f"embedding failed: {exc}"[:500]
        return None


def score_candidate(row: CandidateRow, fusion: float, best: float, now_seconds: float,
                    stage: str | None) -> tuple[float, dict]:
    """The one scorer (search and context): fusion x (1 + recency + importance + stage boost),
    times SEARCH_EPISODE_WEIGHT for an episode: a fact outranks the episode it came from."""
    recency = recency_seconds_bonus(now_seconds - row.moment, row.arousal)
    importance = IMPORTANCE_WEIGHT * (row.importance if row.importance is not None else 0.5)
    stage_boost = STAGE_BOOST.get(stage or "", 0.0)
    weight = settings.SEARCH_EPISODE_WEIGHT if row.episode else 1.0
    return weight * fusion * (1.0 + recency + importance + stage_boost), {
        "relevance": relevance(fusion, best), "fusion": fusion, "recency": recency, "importance": importance,
        "stage": stage_boost}


def memory_search(
    *, tenant: Tenant, query: SearchQuery, embedder: Embedder | None = None, plan: SearchPlan | None = None,
    query_vector: Callable[[], np.ndarray] | None = None,
) -> list[ScoredMemory]:
    """Search one user's (or a group's, or the tenant's) memories; see the module docstring.
    query_vector: how to get the query's vector when a caller started it early (context.py)."""
    if query.mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}")
    plan = plan or SearchPlan()
    started = time.perf_counter()
    try:
        return _memory_search(tenant, query, embedder, plan, query_vector)
    finally:
        metrics.observe_search(mode=query.mode, vector_plan=plan.vector_plan, seconds=time.perf_counter() - started)


def _memory_search(tenant: Tenant, query: SearchQuery, embedder: Embedder | None, plan: SearchPlan,
                   query_vector: Callable[[], np.ndarray] | None) -> list[ScoredMemory]:
    now = timezone.now()
    pool = max(query.limit * 3, 50)
    semantic: list[CandidateRow] = []
    keyword: list[CandidateRow] = []
    keyword_done = False  # per-user hybrid fetches both sides in one statement
    sides: list[float] = []  # the weights of the sides that ran

    if query.mode in ("semantic", "hybrid"):
        embedder = embedder or get_embedder()
        vector = _query_vector(query, embedder, plan, query_vector)
        if vector is not None:
            sides.append(settings.SEARCH_SEMANTIC_WEIGHT)
            plan.vector_plan = cached_vector_plan(tenant, query.user_id, embedder.name)
            exact_rows = None
            if plan.vector_plan == "exact" and query.mode == "hybrid":
                exact_rows, keyword = _exact_and_keyword(tenant, query, vector, embedder.name, pool, now)
                keyword_done = True
            if exact_rows is not None:
                semantic = exact_rows
            else:  # semantic mode, a tenant-wide or large user, or the exact plan stopped at its cap
                known = cached_vector_plan(tenant, query.user_id, embedder.name)
                semantic, plan.vector_plan = semantic_search(tenant, query, vector, embedder.name,
                                                             embedder.dimensions, pool, now, known)
        else:
            plan.vector_plan = "none"
    if query.mode != "semantic" and not keyword_done:  # keyword mode, hybrid through HNSW, or degraded
        keyword = keyword_candidates(tenant, query, pool, now)
    if query.mode != "semantic" and query_tokens(query.query):
        sides.append(settings.SEARCH_KEYWORD_WEIGHT)
    if query.min_similarity is not None:  # the cosine floor: weak semantic neighbours never enter the fusion
        semantic = [r for r in semantic if 1.0 - r.rank_value >= query.min_similarity]
    plan.candidates_semantic, plan.candidates_keyword = len(semantic), len(keyword)

    fused = reciprocal_rank_fusion([([r.id for r in semantic], settings.SEARCH_SEMANTIC_WEIGHT),
                                    ([r.id for r in keyword], settings.SEARCH_KEYWORD_WEIGHT)], settings.SEARCH_RRF_K)
    if not fused:
        return []
    best = best_fusion(sides, settings.SEARCH_RRF_K)
    similarity = {r.id: 1.0 - r.rank_value for r in semantic}
    keyword_rank = {r.id: r.rank_value for r in keyword}
    # Score from the light columns the candidate queries returned; load full rows only for the winners.
    facts: dict[str, CandidateRow] = {r.id: r for r in [*semantic, *keyword]}
    stages = _trait_stages([i for i, row in facts.items() if row.memory_type == "trait"])

    scored: list[tuple[float, str, dict]] = []
    now_seconds = now.timestamp()
    for memory_id, fusion in fused.items():
        row = facts[memory_id]
        stage, trait_confidence = stages.get(memory_id, (None, None))
        if row.memory_type == "trait" and stage not in ACTIVE_TRAIT_STAGES:
            continue  # trends, candidates and dissolved traits are not shown to agents
        score, parts = score_candidate(row, fusion, best, now_seconds, stage)
        if query.min_score is not None and parts["relevance"] < query.min_score:
            continue
        scored.append((score, memory_id, {
            "semantic": similarity.get(memory_id), "keyword": keyword_rank.get(memory_id), **parts,
            **({"trait_stage": stage, "trait_confidence": trait_confidence} if stage else {}),
        }))
    scored.sort(key=lambda entry: (-entry[0], entry[1]))
    scored = below_their_facts(scored[: query.limit], {i for i, row in facts.items() if row.episode})
    rows = {str(m.id): m for m in memories_by_id([e[1] for e in scored])}
    return [ScoredMemory(memory=rows[memory_id], score=score, scores=parts)
            for score, memory_id, parts in scored if memory_id in rows]


def listed_in_scope(tenant: Tenant, *, user_id: str, agent_id: str | None = None, session_id: str | None = None):
    """A user's searchable memories in a scope, as a queryset to page through (Mem0's get_all, MCP's list)."""
    return (MemoryItem.objects.filter(tenant=tenant).filter(vocabulary.is_searchable(timezone.now()))
            .filter(scope_filter(user_id=user_id, agent_id=agent_id, session_id=session_id)))


def searchable_in_scope(tenant: Tenant, q: SearchQuery, ids: list[str]) -> list[str]:
    """Which of these memories a search with q's scope and filters may return now (the query text is unused)."""
    if not ids:
        return []
    where, params = _item_filters(tenant, q, timezone.now())
    with _db().cursor() as cursor:
        cursor.execute(f"SELECT m.id FROM memory_items m WHERE {where} AND m.id = ANY(%s::uuid[])", [*params, ids])
        allowed = {str(r[0]) for r in cursor.fetchall()}
    return [i for i in ids if i in allowed]


def newest_in_scope(tenant: Tenant, q: SearchQuery, limit: int) -> list[MemoryItem]:
    """The newest searchable memories in q's scope and filters (the query text is unused)."""
    where, params = _item_filters(tenant, q, timezone.now())
    with _db().cursor() as cursor:
        cursor.execute(f"SELECT m.id FROM memory_items m WHERE {where} ORDER BY m.created_at DESC, m.id LIMIT %s",
                       [*params, limit])
        ids = [str(r[0]) for r in cursor.fetchall()]
    rows = {str(m.id): m for m in memories_by_id(ids)}
    return [rows[i] for i in ids if i in rows]


class TraitLineRow(NamedTuple):
    id: str
    text: str
    subtype: str
    stage: str
    decayed_confidence: float


def active_traits(tenant: Tenant, user_id: str, stages: tuple[str, ...], order: tuple[str, ...],
                  min_confidence: float, limit: int) -> list[TraitLineRow]:
    """Seed 004's trait recall in one statement: searchable trait memories whose
    trait is at one of `stages` with decayed confidence above the floor, by
    subtype in `order`, then most confident. The traits table is read by name:
    memories does not import the traits app."""
    with _db().cursor() as cursor:
        cursor.execute(f"""
            SELECT m.id, m.text, t.subtype, t.stage, t.decayed_confidence
            FROM memory_items m JOIN traits t ON t.memory_id = m.id
            WHERE m.tenant_id = %s AND m.user_id = %s AND m.memory_type = 'trait' AND {vocabulary.sql_searchable("m")}
              AND t.stage = ANY(%s) AND t.decayed_confidence > %s
            ORDER BY coalesce(array_position(%s::text[], t.subtype::text), 99), t.decayed_confidence DESC, m.id
            LIMIT %s""", [tenant.id, user_id, timezone.now(), list(stages), min_confidence, list(order), limit])
        return [TraitLineRow(str(r[0]), *r[1:]) for r in cursor.fetchall()]


def jobs_of(memory_ids: list[str]) -> dict[str, set[str]]:
    """The conversation jobs each memory came from (its sources)."""
    out: dict[str, set[str]] = {}
    if not memory_ids:
        return out
    with _db().cursor() as cursor:
        cursor.execute("SELECT item_id, job_id FROM memory_sources WHERE item_id = ANY(%s::uuid[]) AND job_id <> ''",
                       [memory_ids])
        for item_id, job_id in cursor.fetchall():
            out.setdefault(str(item_id), set()).add(job_id)
    return out


def demote_episodes(scored: list[tuple[float, str, dict]], episodes: set[str],
                    jobs: dict[str, set[str]]) -> list[tuple[float, str, dict]]:
    """Pure rule over the answer's memories: an episode that ranks above the best fact in the
    answer that came from one of its turns moves just below that fact (the fact that holds the
    answer outranks the episode that holds the fact); other episodes keep their score. Nothing
    enters or leaves the answer, best first again after."""
    fact_scores = [(score, jobs.get(memory_id, set())) for score, memory_id, _ in scored if memory_id not in episodes]
    out = []
    for score, memory_id, parts in scored:
        if memory_id in episodes:
            mine = jobs.get(memory_id, set())
            ceiling = max((fact for fact, fact_jobs in fact_scores if fact_jobs & mine), default=None)
            if ceiling is not None and score >= ceiling:
                parts = {**parts, "below_fact": True}
                score = ceiling * 0.999
        out.append((score, memory_id, parts))
    out.sort(key=lambda entry: (-entry[0], entry[1]))
    return out


def below_their_facts(scored: list[tuple[float, str, dict]], episodes: set[str]) -> list[tuple[float, str, dict]]:
    """demote_episodes with the sources read from the database, when both kinds were found."""
    found = {memory_id for _, memory_id, _ in scored}
    if not found & episodes or not found - episodes:
        return scored
    return demote_episodes(scored, episodes, jobs_of(sorted(found)))


def memories_by_id(ids: list[str]) -> list[MemoryItem]:
    """The winners' full rows without the ORM's query compiler (about 0.5 ms
    of a 4 ms search); the tsvector stays in the database."""
    if not ids:
        return []
    fields = [f for f in MemoryItem._meta.concrete_fields if f.attname != "search_vector"]
    with _db().cursor() as cursor:
        columns = ", ".join(str(f.column) for f in fields)
        cursor.execute(f"SELECT {columns} FROM memory_items WHERE id = ANY(%s::uuid[])",
                       [ids])
        rows = cursor.fetchall()
    converters = [(i, f.from_db_value) for i, f in enumerate(fields) if hasattr(f, "from_db_value")]
    names = [f.attname for f in fields]
    items = []
    for row in rows:
        values = list(row)
        for index, convert in converters:
            values[index] = convert(values[index], None, _db())
        items.append(MemoryItem.from_db(read_alias(), names, values))
    return items


def exact_tenant_neighbours(tenant: Tenant, vector: np.ndarray, model: str, limit: int) -> list[str]:
    """Brute-force nearest vectors tenant-wide: the ground truth for HNSW recall."""
    with transaction.atomic(using=read_alias()), _db().cursor() as cursor:
        cursor.execute("SET LOCAL enable_indexscan = off")
        cursor.execute(
            "SELECT item_id FROM memory_vectors WHERE tenant_id = %s AND model = %s AND status = %s"
            " ORDER BY embedding <=> %s::halfvec LIMIT %s",
            [tenant.id, model, MemoryStatus.ACTIVE, _vector_literal(vector), limit],
        )
        return [str(r[0]) for r in cursor.fetchall()]


def nearest_memories(*, tenant: Tenant, user_id: str, vector: np.ndarray, model: str, dimensions: int,
                     limit: int = 1) -> list[tuple[str, float]]:
    """The user's current memories closest to a vector: (id, cosine similarity)."""
    now = timezone.now()
    query = SearchQuery(query="", user_id=user_id, limit=limit)
    found, _ = semantic_search(tenant, query, vector, model, dimensions, limit, now,
                               cached_vector_plan(tenant, user_id, model))
    return [(row.id, 1.0 - row.rank_value) for row in found]
