"""Every rule about finding a memory: semantic, keyword and hybrid retrieval,
reciprocal rank fusion and the final score.

    query     what a search asks (SearchQuery), how it ran (SearchPlan), what it answers (ScoredMemory)
    filters   which memories it may see: scopes, bitemporal as_of, types, tags, time range
    rows      the named rows the retrievers' SQL returns (RetrievedRow)
    semantic  the vector side: exact per-user plan, HNSW beyond SEARCH_EXACT_MAX_ROWS and tenant-wide
    keyword   the keyword side: BM25 (or ts_rank_cd)
    scoring   the one scorer, shared with context.py: fusion x (1 + recency + importance + stage)
    service   memory_search, which runs them in that order
    reads     the winners' rows, sources, listings in a scope, the profile's candidates
"""

from memories.search.filters import scope_filter
from memories.search.query import MODES, CharacterFill, ScoredMemory, SearchPlan, SearchQuery
from memories.search.reads import (
    jobs_of,
    listed_in_scope,
    memories_by_id,
    newest_in_scope,
    profile_candidates,
    profile_display_name,
    profile_name,
    searchable_in_scope,
)
from memories.search.rows import RetrievedRow, candidate_row
from memories.search.scoring import demote_episodes, score_candidate
from memories.search.semantic import exact_tenant_neighbours, nearest_memories, semantic_search
from memories.search.service import memory_search

__all__ = [
    "MODES", "CharacterFill", "RetrievedRow", "ScoredMemory", "SearchPlan", "SearchQuery",
    "candidate_row", "demote_episodes", "exact_tenant_neighbours", "jobs_of", "listed_in_scope", "memories_by_id",
    "memory_search", "nearest_memories", "newest_in_scope", "profile_candidates", "profile_display_name",
    "profile_name", "score_candidate", "scope_filter", "searchable_in_scope", "semantic_search",
]
