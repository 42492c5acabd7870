"""memory_search: both retrievers, the fusion and the scorer, in that order."""

from __future__ import annotations

import heapq
import logging
import time
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import replace
from datetime import datetime
from typing import Any

import numpy as np
from django.db import DatabaseError, transaction
from django.utils import timezone

from memories import metrics
from memories.embedding import Embedder, EmbeddingError, embed_query, get_embedder
from memories.errors import VectorSearchError
from memories.models import Tenant
from memories.search import tuning
from memories.search.filters import db
from memories.search.keyword import keyword_candidates, keyword_sql, keyword_terms, uses_kept_statistics
from memories.search.neighbours import next_in_session, spread_to_neighbours
from memories.search.query import MODES, ScoredMemory, SearchPlan, SearchQuery
from memories.search.reads import jobs_of, memories_by_id, own_name_terms, texts_of
from memories.search.rows import RetrievedRow, candidate, named
from memories.search.scoring import (
    ACTIVE_TRAIT_STAGES,
    best_fusion,
    demote_episodes,
    filling,
    reciprocal_rank_fusion,
    score_candidate,
    score_ceiling,
    search_pool,
    semantic_weight,
)
from memories.search.semantic import cached_vector_plan, exact_result, exact_semantic_sql, semantic_search
from memories.search.temporal import mentions_time, time_intent, time_match
from memories.trait_lines import trait_stages_read

logger = logging.getLogger(__name__)


def memory_search(
    *, tenant: Tenant, query: SearchQuery, embedder: Embedder | None = None, plan: SearchPlan | None = None,
    query_vector: Callable[[], np.ndarray] | None = None,
) -> list[ScoredMemory]:
    """Search one user's (or a group's, or the tenant's) memories; see the package docstring.
    query_vector: how to get the query's vector when a caller started it early (context.py)."""
    if query.mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}")
    plan = plan or SearchPlan()
    started = time.perf_counter()
    try:
        return _memory_search(tenant, query, embedder, plan, query_vector)
    finally:
        metrics.observe_search(mode=query.mode, vector_plan=plan.vector_plan, seconds=time.perf_counter() - started)


def _exact_and_keyword(tenant: Tenant, q: SearchQuery, vector: np.ndarray, model: str, pool: int,
                       now: datetime) -> tuple[list[RetrievedRow] | None, list[RetrievedRow]]:
    """Both retrievers of a per-user hybrid search in one round trip:
    (exact semantic rows or None when the user is too large for the exact
    plan, keyword rows)."""
    semantic_sql, semantic_args = exact_semantic_sql(tenant, q, vector, model, pool, now)
    statement = keyword_sql(tenant, q, pool, now)
    if statement is None:
        with db().cursor() as cursor:
            cursor.execute(semantic_sql, semantic_args)
            return exact_result(tenant, q, model, named(cursor)), []
    sql = (f"SELECT true AS semantic_side, s.* FROM ({semantic_sql}) AS s"
           f" UNION ALL SELECT false, k.*, NULL::bigint FROM ({statement[0]}) AS k")
    with db().cursor() as cursor:
        cursor.execute(sql, [*semantic_args, *statement[1]])
        rows = named(cursor)
    # Each branch is ordered inside; sort again rather than trust the Append's order.
    semantic = sorted((r for r in rows if r["semantic_side"]),
                      key=lambda r: (r["rank_value"] is None, r["rank_value"] or 0.0))
    keyword = sorted((r for r in rows if not r["semantic_side"]), key=lambda r: -r["rank_value"])
    return exact_result(tenant, q, model, semantic), [candidate(r) for r in keyword]


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


def below_their_facts(scored: list[tuple[float, str, dict[str, Any]]],
                      episodes: set[str]) -> list[tuple[float, str, dict[str, Any]]]:
    """scoring.demote_episodes with the sources read from the database, when both kinds were found."""
    found = {memory_id for _, memory_id, _ in scored}
    if not found & episodes or not found - episodes:
        return scored
    return demote_episodes(scored, episodes, jobs_of(sorted(found)))


def _with_neighbours(tenant: Tenant, query: SearchQuery, scored: list[tuple[float, str, dict[str, Any]]],
                     facts: dict[str, RetrievedRow], now: datetime) -> list[tuple[float, str, dict[str, Any]]]:
    """search.neighbours for the best SEARCH_NEIGHBOUR_HITS hits (not episodes, which hold whole
    sessions, nor traits) that have a session; the neighbours' rows join `facts`."""
    weight, count = tuning.SEARCH_NEIGHBOUR_WEIGHT, tuning.SEARCH_NEIGHBOUR_HITS
    if weight <= 0 or count <= 0:
        return scored
    best = [facts[memory_id] for _, memory_id, _ in scored
            if not facts[memory_id].episode and facts[memory_id].memory_type != "trait"][:count]
    hits = [row.id for row in best if row.in_session]
    if not hits:  # no round trip for memories saved without a session
        return scored
    following = next_in_session(tenant, query, hits, now)
    for row in following.values():
        facts.setdefault(row.id, row)
    spread = spread_to_neighbours(scored, {hit: row.id for hit, row in following.items()}, weight)
    if query.min_score is not None:
        spread = [entry for entry in spread if entry[2]["relevance"] >= query.min_score]
    return spread


def _memory_search(tenant: Tenant, query: SearchQuery, embedder: Embedder | None, plan: SearchPlan,
                   query_vector: Callable[[], np.ndarray] | None) -> list[ScoredMemory]:
    """Retrieve both sides -> fuse and score -> lend to session neighbours -> load the winners."""
    now = timezone.now()
    if query.user_id is not None and query.mode != "semantic" and not query.keyword_ignore and not query.keywords:
        query = replace(query, keyword_ignore=own_name_terms(tenant.id, query.user_id))
    semantic, keyword, sides = _retrieve(tenant, query, embedder, plan, query_vector, now)
    scored = _fuse_and_score(query, semantic, keyword, sides, now)
    if not scored:
        return []
    facts: dict[str, RetrievedRow] = {r.id: r for r in [*semantic, *keyword]}
    if query.mode == "hybrid":
        scored = _with_neighbours(tenant, query, scored, facts, now)
    pool = search_pool(query.limit)
    plan.total_count = len(scored)
    plan.total_count_exact = plan.candidates_semantic < pool and plan.candidates_keyword < pool
    scored = below_their_facts(scored[: query.limit], {i for i, row in facts.items() if row.episode})
    if query.fill is not None:
        scored = filling(scored, {i: row.chars for i, row in facts.items()}, query.fill)
    rows = {str(m.id): m for m in memories_by_id([e[1] for e in scored])}
    return [ScoredMemory(memory=rows[memory_id], score=score, scores=parts)
            for score, memory_id, parts in scored if memory_id in rows]


def _retrieve(tenant: Tenant, query: SearchQuery, embedder: Embedder | None, plan: SearchPlan,
              query_vector: Callable[[], np.ndarray] | None,
              now: datetime) -> tuple[list[RetrievedRow], list[RetrievedRow], list[float]]:
    """The semantic and keyword candidates, and the weights of the sides that ran (the plan says how)."""
    pool = search_pool(query.limit)
    semantic: list[RetrievedRow] = []
    keyword: list[RetrievedRow] = []
    keyword_done = False  # per-user hybrid fetches both sides in one statement
    sides: list[float] = []
    if query.mode in ("semantic", "hybrid"):
        embedder = embedder or get_embedder()
        vector = _query_vector(query, embedder, plan, query_vector)
        found = _vector_side(tenant, query, embedder, vector, plan, pool, now) if vector is not None else None
        if found is not None:
            sides.append(_semantic_weight(query))
            semantic, keyword_rows = found
            if keyword_rows is not None:
                keyword, keyword_done = keyword_rows, True
        else:
            plan.vector_plan = "none"
    if query.mode != "semantic" and not keyword_done:  # keyword mode, hybrid through HNSW, or degraded
        keyword = keyword_candidates(tenant, query, pool, now)
    if query.mode != "semantic" and keyword_terms(query):
        sides.append(tuning.SEARCH_KEYWORD_WEIGHT)
        if tuning.SEARCH_KEYWORD_RANKING == "bm25":
            plan.keyword_statistics = "kept" if uses_kept_statistics(query) else "scanned"
    if query.min_similarity is not None:  # the cosine floor: weak semantic neighbours never enter the fusion
        semantic = [r for r in semantic if 1.0 - r.rank_value >= query.min_similarity]
    plan.candidates_semantic, plan.candidates_keyword = len(semantic), len(keyword)
    return semantic, keyword, sides


def _vector_side(tenant: Tenant, query: SearchQuery, embedder: Embedder, vector: np.ndarray, plan: SearchPlan,
                 pool: int, now: datetime) -> tuple[list[RetrievedRow], list[RetrievedRow] | None] | None:
    """The semantic candidates (with the keyword ones when a per-user hybrid fetched both in one statement),
    or None when the vector statement failed and hybrid answers from its keywords (the plan says so, seed 001
    §9's VectorSearchError). Semantic mode has nothing else: the failure is raised as VectorSearchError."""
    connection = db()
    # Inside a transaction (a test's, a caller's) the failed statement needs its own savepoint; a request's
    # autocommit read needs none, and pays no round trip for it.
    guard = transaction.atomic(using=connection.alias) if connection.in_atomic_block else nullcontext()
    try:
        with guard:
            plan.vector_plan = cached_vector_plan(tenant, query.user_id, embedder.name)
            if plan.vector_plan == "exact" and query.mode == "hybrid":
                exact_rows, keyword = _exact_and_keyword(tenant, query, vector, embedder.name, pool, now)
                if exact_rows is not None:
                    return exact_rows, keyword
            else:
                keyword = None
            # semantic mode, a tenant-wide or large user, or the exact plan stopped at its cap
            known = cached_vector_plan(tenant, query.user_id, embedder.name)
            semantic, plan.vector_plan = semantic_search(tenant, query, vector, embedder.name,
                                                         embedder.dimensions, pool, now, known)
            return semantic, keyword
    except DatabaseError as exc:
        if query.mode == "semantic":
            raise VectorSearchError(f"vector search failed: {exc}"[:500]) from exc
        logger.warning("vector search failed; answering from the keyword side: %s", exc)
        plan.degraded.append("semantic")
        plan.degraded_reason = f"vector search failed: {exc}"[:500]
        return None


def _semantic_weight(query: SearchQuery) -> float:
    return semantic_weight(query.query, latin=tuning.SEARCH_SEMANTIC_WEIGHT, han=tuning.SEARCH_SEMANTIC_WEIGHT_HAN)


def _fuse_and_score(query: SearchQuery, semantic: list[RetrievedRow], keyword: list[RetrievedRow],
                    sides: list[float], now: datetime) -> list[tuple[float, str, dict[str, Any]]]:
    """Weighted reciprocal-rank fusion, then the one scorer (recency, importance, trait stage, time in the
    question) on the light columns the retrievers returned; best first."""
    fused = reciprocal_rank_fusion([([r.id for r in semantic], _semantic_weight(query)),
                                    ([r.id for r in keyword], tuning.SEARCH_KEYWORD_WEIGHT)], tuning.SEARCH_RRF_K)
    if not fused:
        return []
    best = best_fusion(sides, tuning.SEARCH_RRF_K)
    similarity = {r.id: 1.0 - r.rank_value for r in semantic}
    keyword_rank = {r.id: r.rank_value for r in keyword}
    facts: dict[str, RetrievedRow] = {r.id: r for r in [*semantic, *keyword]}
    stages = trait_stages_read([i for i, row in facts.items() if row.memory_type == "trait"])
    # Time in the question (hybrid): a "when" question prefers memories that say when; a named month or year
    # prefers memories true then.
    intent = time_intent(query.query) if query.mode == "hybrid" else None
    says_when = ({i for i, text in texts_of(list(fused)).items() if mentions_time(text)}
                 if intent is not None and intent.asks_when else set())
    scored: list[tuple[float, str, dict[str, Any]]] = []
    now_seconds = now.timestamp()
    # Best fusion first: once `limit` are scored, a candidate whose fusion at the scorer's ceiling is below the
    # limit-th best score cannot reach the answer (neighbours only raise scores), and none after it can.
    ceiling = score_ceiling(timed=intent is not None and intent.any)
    best_scores: list[float] = []  # a min-heap of the `limit` best scores so far
    for memory_id, fusion in sorted(fused.items(), key=lambda entry: (-entry[1], entry[0])):
        if len(best_scores) >= query.limit and fusion * ceiling < best_scores[0]:
            break
        row = facts[memory_id]
        stage, trait_confidence = stages.get(memory_id, (None, None))
        if row.memory_type == "trait" and stage not in ACTIVE_TRAIT_STAGES:
            continue  # trends, candidates and dissolved traits are not shown to agents
        timed = 0.0
        if intent is not None and intent.any:
            timed = time_match(intent, memory_id in says_when, row.moment,
                               mention_bonus=tuning.SEARCH_TIME_MENTION_BONUS,
                               period_bonus=tuning.SEARCH_TIME_PERIOD_BONUS)
        score, parts = score_candidate(row, fusion, best, now_seconds, stage, timed)
        if query.min_score is not None and parts["relevance"] < query.min_score:
            continue
        if len(best_scores) < query.limit:
            heapq.heappush(best_scores, score)
        elif score > best_scores[0]:
            heapq.heapreplace(best_scores, score)
        scored.append((score, memory_id, {  # relevance (0-1, what to threshold on) first, then the raw parts
            "relevance": parts["relevance"], "semantic": similarity.get(memory_id),
            "keyword": keyword_rank.get(memory_id), **parts,
            **({"trait_stage": stage, "trait_confidence": trait_confidence} if stage else {}),
        }))
    scored.sort(key=lambda entry: (-entry[0], entry[1]))
    return scored
