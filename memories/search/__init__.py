"""Every rule about finding a memory: semantic, keyword and hybrid retrieval,
reciprocal rank fusion and the final score.

    query     what a search asks (SearchQuery), how it ran (SearchPlan), what it answers (ScoredMemory)
    filters   which memories it may see: scopes, bitemporal as_of, types, tags, time range
    rows      the named rows the retrievers' SQL returns (RetrievedRow)
    semantic  the vector side: exact per-user plan, HNSW beyond SEARCH_EXACT_MAX_ROWS and tenant-wide
    keyword   the keyword side: BM25 (or ts_rank_cd)
    scoring   the one scorer, shared with context.py: fusion x (1 + recency + importance + stage)
    service   memory_search, which runs them in that order
    defaults  what a search asks when the caller leaves it out (per mode); time_range_days
    answer    what an answer shows beside the ranking: matched keywords, previews, groups
    turns     the original turns behind the memories found
    reads     the winners' rows, sources, listings in a scope, the profile's candidates
"""

from memories.search.answer import SearchAnswer, search_answer_build
from memories.search.defaults import search_defaults, search_query
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
from memories.search.turns import turns_behind

__all__ = [
    "MODES", "CharacterFill", "RetrievedRow", "ScoredMemory", "SearchAnswer", "SearchPlan", "SearchQuery",
    "candidate_row", "demote_episodes", "exact_tenant_neighbours", "jobs_of", "listed_in_scope", "memories_by_id",
    "memory_search", "nearest_memories", "newest_in_scope", "profile_candidates", "profile_display_name",
    "profile_name", "score_candidate", "scope_filter", "search_answer_build", "search_defaults", "search_query",
    "searchable_in_scope", "semantic_search", "turns_behind",
]
