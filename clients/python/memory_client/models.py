"""Typed answers. Each model keeps the service's whole JSON in `raw`, so a field added
to the API is reachable before this package names it."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Generic, TypeVar

T = TypeVar("T")


def _when(value: Any) -> datetime | None:
    return datetime.fromisoformat(value.replace("Z", "+00:00")) if isinstance(value, str) and value else None


def _pick(cls: type, body: dict[str, Any], **converted: Any) -> dict[str, Any]:
    names = {f.name for f in dataclasses.fields(cls)}
    values = {k: v for k, v in body.items() if k in names}
    values.update(converted)
    values["raw"] = body
    return values


@dataclass(frozen=True)
class Memory:
    id: str
    user_id: str
    text: str
    memory_type: str = "fact"
    status: str = "active"
    version: int = 1
    agent_id: str = ""
    session_id: str = ""
    group_id: str = ""
    tags: list[str] = field(default_factory=list)
    importance: float | None = None
    confidence: float | None = None
    data: dict[str, Any] | None = None
    superseded_by: str | None = None
    embedding_state: str | None = None
    created_at: datetime | None = None
    updated_at: datetime | None = None
    valid_at: datetime | None = None
    expires_at: datetime | None = None
    subject: dict[str, Any] | None = None
    """Whom it is about, {id, name} (a Person's id); None for a memory written before people."""
    object: dict[str, Any] | None = None
    """The other entity the fact names, {id, name}, when one."""
    emotion: dict[str, Any] | None = None
    """{valence -1..1, arousal 0..1, label}, when read."""
    content_hash: str = ""
    invalid_at: datetime | None = None
    """When the fact stopped holding in the world (a later fact contradicted it)."""
    expired_at: datetime | None = None
    """When this version stopped being current here (superseded, invalidated)."""
    archived_at: datetime | None = None
    access_count: int = 0
    last_accessed_at: datetime | None = None
    episode: dict[str, Any] | None = None
    """An episode's unit: {title, summary, narrative, subject, keywords, language, facts, part}; None otherwise."""
    raw: dict[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def from_json(cls, body: dict[str, Any]) -> Memory:
        return cls(**_pick(cls, body, **{k: _when(body.get(k)) for k in (
            "created_at", "updated_at", "valid_at", "expires_at", "invalid_at", "expired_at", "archived_at",
            "last_accessed_at")}))


@dataclass(frozen=True)
class ScoreParts:
    """Why a memory ranked where it did: every part of its score."""

    relevance: float
    fusion: float
    recency: float
    importance: float
    stage: float
    semantic: float | None = None
    keyword: float | None = None
    trait_stage: str | None = None
    trait_confidence: float | None = None
    working_memory: bool | None = None
    """True for a line of the session's working memory (context), not a stored memory."""
    raw: dict[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def from_json(cls, body: dict[str, Any]) -> ScoreParts:
        return cls(**_pick(cls, body))


@dataclass(frozen=True)
class SearchResult:
    memory: Memory
    score: float
    scores: ScoreParts
    sources: list[dict[str, Any]] = field(default_factory=list)
    raw: dict[str, Any] = field(default_factory=dict, repr=False)
    matched_keywords: list[str] = field(default_factory=list)
    """The query's words (or the keywords given) the memory holds."""
    preview: str = ""
    """The text on one line, at most 200 characters (an episode: its turns that match the question)."""
    turns: list[dict[str, Any]] | None = None
    """With include_turns: the conversation turns it was drawn from ({job_id, index, role, speaker, content,
    created_at}, sensitive data redacted); None when not asked."""
    turns_total: int | None = None

    @classmethod
    def from_json(cls, body: dict[str, Any]) -> SearchResult:
        return cls(Memory.from_json(body["memory"]), body["score"], ScoreParts.from_json(body.get("scores") or {}),
                   body.get("sources") or [], body, matched_keywords=body.get("matched_keywords") or [],
                   preview=body.get("preview") or "", turns=body.get("turns"), turns_total=body.get("turns_total"))


@dataclass(frozen=True)
class SearchGroup:
    """The results of one group conversation (`group_id`; "" for memories saved outside any group)."""

    group_id: str
    count: int
    best_score: float
    memory_ids: list[str] = field(default_factory=list)
    raw: dict[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def from_json(cls, body: dict[str, Any]) -> SearchGroup:
        return cls(**_pick(cls, body))


@dataclass(frozen=True)
class SearchResponse:
    results: list[SearchResult]
    degraded: list[str] = field(default_factory=list)
    """The sides that could not run (["semantic"]: the embedder or the vector search failed, and the results
    are the keyword side's alone), told apart from an empty answer."""
    degraded_reason: str = ""
    raw: dict[str, Any] = field(default_factory=dict, repr=False)
    total_count: int = 0
    """Memories that passed the scope, filters and floors among the candidates fetched."""
    total_count_exact: bool = True
    groups: list[SearchGroup] = field(default_factory=list)

    @classmethod
    def from_json(cls, body: dict[str, Any]) -> SearchResponse:
        return cls([SearchResult.from_json(r) for r in body["results"]], body.get("degraded") or [],
                   body.get("degraded_reason") or "", body, total_count=body.get("total_count") or 0,
                   total_count_exact=body.get("total_count_exact", True),
                   groups=[SearchGroup.from_json(g) for g in body.get("groups") or []])


@dataclass(frozen=True)
class Candidate:
    """A change waiting for a reviewer."""

    id: str
    user_id: str
    operation: str
    text: str
    status: str
    memory_type: str = "fact"
    confidence: float | None = None
    reasons: list[str] = field(default_factory=list)
    reason_detail: str = ""
    changes: Any = None
    result_memory: str | None = None
    created_at: datetime | None = None
    importance: float | None = None
    tags: list[str] = field(default_factory=list)
    target: Memory | None = None
    """The memory the change is to (UPDATE, DELETE, ...), when one."""
    session_id: str = ""
    source_messages: list[Any] = field(default_factory=list)
    submitted_by_key: int | None = None
    resolved_by: str = ""
    resolved_at: datetime | None = None
    raw: dict[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def from_json(cls, body: dict[str, Any]) -> Candidate:
        target = body.get("target")
        return cls(**_pick(cls, body, created_at=_when(body.get("created_at")),
                           resolved_at=_when(body.get("resolved_at")),
                           target=Memory.from_json(target) if isinstance(target, dict) else None))


@dataclass(frozen=True)
class WriteResult:
    """What a save, update or delete did: ADD, NOOP, UPDATE, DELETE — or REVIEW (held: see `candidate`)."""

    operation: str
    reason: str = ""
    memory: Memory | None = None
    candidate: Candidate | None = None
    raw: dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def held_for_review(self) -> bool:
        return self.candidate is not None

    @classmethod
    def from_json(cls, body: dict[str, Any]) -> WriteResult:
        return cls(body["operation"], body.get("reason") or "",
                   Memory.from_json(body["memory"]) if body.get("memory") else None,
                   Candidate.from_json(body["candidate"]) if body.get("candidate") else None, body)


@dataclass(frozen=True)
class Job:
    """A conversation's extraction."""

    job_id: str
    status: str
    user_id: str = ""
    session_id: str = ""
    attempts: int = 0
    error: str = ""
    operations: list[dict[str, Any]] = field(default_factory=list)
    counts: dict[str, Any] = field(default_factory=dict)
    warnings: list[Any] = field(default_factory=list)
    created_at: datetime | None = None
    finished_at: datetime | None = None
    extractor: str = ""
    submitted_by_key: int | None = None
    raw: dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def finished(self) -> bool:
        return self.status in ("done", "failed")

    @classmethod
    def from_json(cls, body: dict[str, Any]) -> Job:
        return cls(**_pick(cls, body, created_at=_when(body.get("created_at")),
                           finished_at=_when(body.get("finished_at"))))


@dataclass(frozen=True)
class HistoryEvent:
    id: int
    memory_id: str
    event: str
    actor: str
    old_text: str | None = None
    new_text: str | None = None
    reason: str = ""
    created_at: datetime | None = None
    old_data: Any = None
    new_data: Any = None
    job_id: str = ""
    """The conversation job behind the event, when one."""
    raw: dict[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def from_json(cls, body: dict[str, Any]) -> HistoryEvent:
        return cls(**_pick(cls, body, created_at=_when(body.get("created_at"))))


@dataclass(frozen=True)
class Trait:
    id: str
    text: str
    subtype: str
    stage: str
    confidence: float
    decayed_confidence: float | None = None
    supporting: int = 0
    contradicting: int = 0
    pinned: bool = False
    parent: str | None = None
    children: list[str] = field(default_factory=list)
    evidence: list[dict[str, Any]] = field(default_factory=list)
    confidence_history: list[dict[str, Any]] = field(default_factory=list)
    context: str = ""
    reinforcement_count: int = 0
    last_reinforced_at: datetime | None = None
    data: Any = None
    evidence_by_session: list[dict[str, Any]] = field(default_factory=list)
    """From `trait`: the evidence grouped by session."""
    reviewer_actions: list[dict[str, Any]] = field(default_factory=list)
    child_traits: list[dict[str, Any]] = field(default_factory=list)
    parent_chain: list[dict[str, Any]] = field(default_factory=list)
    raw: dict[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def from_json(cls, body: dict[str, Any]) -> Trait:
        return cls(**_pick(cls, body, last_reinforced_at=_when(body.get("last_reinforced_at"))))


@dataclass(frozen=True)
class ContextBlock:
    """What the agent should know now: `text` goes in the prompt; `sections` for tool-calling agents."""

    text: str
    format: str
    sections: dict[str, Any]
    status: dict[str, Any]
    memories: list[SearchResult]
    working_memory: str = ""
    raw: dict[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def from_json(cls, body: dict[str, Any]) -> ContextBlock:
        return cls(body["context"], body["format"], body.get("sections") or {}, body.get("status") or {},
                   [SearchResult.from_json(r) for r in body.get("memories") or []], body.get("working_memory") or "",
                   body)


@dataclass(frozen=True)
class Erasure:
    """What an erasure did. `pending_candidate_id`: a key without the erase permission erased only what it
    saved; the rest waits for a reviewer to approve this candidate."""

    user_id: str
    receipt_id: int | None
    counts: dict[str, Any]
    pending_candidate_id: str | None = None
    erased_at: datetime | None = None
    memories: int = 0
    vectors: int = 0
    sources: int = 0
    history_scrubbed: int = 0
    raw: dict[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def from_json(cls, body: dict[str, Any]) -> Erasure:
        candidate = body.get("candidate") or {}
        return cls(**_pick(cls, body, receipt_id=body.get("receipt_id"), counts=body.get("counts") or {},
                           pending_candidate_id=candidate.get("id"), erased_at=_when(body.get("erased_at"))))


@dataclass(frozen=True)
class ReflectionCycle:
    id: int
    user_id: str
    status: str
    trigger: str = ""
    session_id: str = ""
    memories_scanned: int = 0
    traits_created: int = 0
    traits_updated: int = 0
    traits_dissolved: int = 0
    error: str = ""
    started_at: datetime | None = None
    completed_at: datetime | None = None
    raw: dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def finished(self) -> bool:
        return self.status not in ("queued", "running")

    @classmethod
    def from_json(cls, body: dict[str, Any]) -> ReflectionCycle:
        return cls(**_pick(cls, body, started_at=_when(body.get("started_at")),
                           completed_at=_when(body.get("completed_at"))))


@dataclass(frozen=True)
class PersonFact:
    """A current fact about a person: a memory whose subject they are."""

    id: str
    text: str
    memory_type: str = "fact"
    raw: dict[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def from_json(cls, body: dict[str, Any]) -> PersonFact:
        return cls(**_pick(cls, body))


@dataclass(frozen=True)
class PersonEdge:
    """What holds of a person: `predicate` (lives_in, works_at, ...) with a `value` ("Leeds") or another
    entity (`target_id`); `invalid_at` once it stopped holding (she moved)."""

    id: str
    predicate: str
    source_id: str
    value: str = ""
    target_id: str | None = None
    memory_id: str | None = None
    valid_at: datetime | None = None
    invalid_at: datetime | None = None
    created_at: datetime | None = None
    expired_at: datetime | None = None
    raw: dict[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def from_json(cls, body: dict[str, Any]) -> PersonEdge:
        return cls(**_pick(cls, body, **{k: _when(body.get(k)) for k in ("valid_at", "invalid_at", "created_at",
                                                                           "expired_at")}))


@dataclass(frozen=True)
class Person:
    """Someone (or a pet, place, organisation; `kind`) in the user's life, the user included (kind "user").
    `relation` is normalised (mother, partner, friend), `relation_word` the user's own (mum, 婆婆).
    From `people`: current facts and edges. From `person` also `status`, `facts_history` (facts that stopped
    holding), `edges_history` (every edge with its times), `history` (changes) and `connected` (two hops)."""

    id: str
    name: str
    kind: str
    given_name: str | None = None
    relation: str | None = None
    relation_word: str | None = None
    aliases: list[str] = field(default_factory=list)
    version: int = 1
    current_facts: list[PersonFact] = field(default_factory=list)
    edges: list[PersonEdge] = field(default_factory=list)
    status: str | None = None
    facts_history: list[dict[str, Any]] = field(default_factory=list)
    edges_history: list[PersonEdge] = field(default_factory=list)
    history: list[dict[str, Any]] = field(default_factory=list)
    connected: list[dict[str, Any]] = field(default_factory=list)
    raw: dict[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def from_json(cls, body: dict[str, Any]) -> Person:
        return cls(**_pick(cls, body, current_facts=[PersonFact.from_json(f) for f in body.get("current_facts") or []],
                           edges=[PersonEdge.from_json(e) for e in body.get("edges") or []],
                           edges_history=[PersonEdge.from_json(e) for e in body.get("edges_history") or []]))


@dataclass(frozen=True)
class SessionTurn:
    """One raw turn of a session as its conversation job keeps it (a forgotten turn reads as its marker)."""

    job_id: str
    index: int
    role: str
    content: str
    name: str | None = None
    created_at: datetime | None = None
    raw: dict[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def from_json(cls, body: dict[str, Any]) -> SessionTurn:
        return cls(**_pick(cls, body, created_at=_when(body.get("created_at"))))


@dataclass(frozen=True)
class Session:
    """One session of a user: when its first and last conversation job came, how many turns and jobs."""

    session_id: str
    turns: int = 0
    jobs: int = 0
    first_turn_at: datetime | None = None
    last_turn_at: datetime | None = None
    raw: dict[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def from_json(cls, body: dict[str, Any]) -> Session:
        return cls(**_pick(cls, body, first_turn_at=_when(body.get("first_turn_at")),
                           last_turn_at=_when(body.get("last_turn_at"))))


@dataclass(frozen=True)
class Page(Generic[T]):
    """One page of a cursor-paginated list; `next` is the link to the following page (or None)."""

    results: list[T]
    next: str | None = None
    previous: str | None = None
    raw: dict[str, Any] = field(default_factory=dict, repr=False)
    item: Callable[[dict[str, Any]], T] | None = field(default=None, repr=False, compare=False)
    """How this page's results were read (`next_page` reads the following page the same way)."""
