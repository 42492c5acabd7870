"""What a search asks for, how it ran, and what it answers."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from memories.models import MemoryItem

SearchMode = Literal["semantic", "keyword", "hybrid"]
MODES: tuple[SearchMode, ...] = ("semantic", "keyword", "hybrid")
VectorPlan = Literal["", "exact", "hnsw", "none"]
KeywordStatistics = Literal["", "kept", "scanned"]


@dataclass(frozen=True)
class CharacterFill:
    """Stop at the best candidates whose texts fill `budget` characters (a /context block's): each counts
    `per_line` more (its bullet and date) and at most `line_max` (an episode's line is an excerpt)."""

    budget: int
    per_line: int = 0
    line_max: int | None = None


@dataclass
class SearchQuery:
    """What to look for, and where (see filters.scope_clauses for the scope rules).

    min_score is on the 0-1 relevance scale (fusion over the best fusion this
    query could reach); min_similarity is a cosine floor for the semantic side.
    """

    query: str
    user_id: str | None = None  # None: the whole tenant, or the group when group_id is given
    agent_id: str | None = None
    session_id: str | None = None
    group_id: str | None = None
    mode: SearchMode = "hybrid"
    memory_types: list[str] | None = None
    tags: list[str] | None = None
    start_time: datetime | None = None
    end_time: datetime | None = None
    as_of: datetime | None = None
    min_score: float | None = None
    min_similarity: float | None = None
    limit: int = 10
    person_id: uuid.UUID | None = None  # only memories about this person (memories.people): subject or object
    # Seed 001's explicit keyword list: the keyword side looks for these instead of the query's words (the
    # semantic side still reads the query).
    keywords: tuple[str, ...] | None = None
    # Terms the keyword side leaves out: the user's own name, which every fact about them says (set by
    # the search itself from the user's profile; a question naming the user is no match for all of them).
    keyword_ignore: tuple[str, ...] = ()
    # Only as many of the `limit` best as fill a character budget are loaded (None: all `limit`).
    fill: CharacterFill | None = None


@dataclass
class ScoredMemory:
    memory: MemoryItem
    score: float
    scores: dict[str, Any] = field(default_factory=dict)


@dataclass
class SearchPlan:
    """How the search ran; returned for benchmarks and debugging."""

    vector_plan: VectorPlan = ""
    keyword_statistics: KeywordStatistics = ""  # kept (maintained per-user rows) | scanned (over the scope)
    candidates_semantic: int = 0
    candidates_keyword: int = 0
    degraded: list[str] = field(default_factory=list)  # sides that could not run ("semantic")
    degraded_reason: str = ""
    # How many memories passed the scope, the filters and the floors among the candidates the sides fetched
    # (each at most scoring.search_pool(limit)); exact unless a side stopped at its pool (a lower bound then).
    total_count: int = 0
    total_count_exact: bool = True
