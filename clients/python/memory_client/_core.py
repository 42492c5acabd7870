"""What the sync and async clients share: the endpoints (as request descriptions), the
retry rule and the error mapping. The clients only send."""

from __future__ import annotations

import builtins
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar
from urllib.parse import quote

import httpx

from memory_client.errors import MemoryServiceError, TransportError, error_for
from memory_client.models import (
    Candidate,
    ContextBlock,
    Erasure,
    HistoryEvent,
    Job,
    Memory,
    Page,
    Person,
    ReflectionCycle,
    SearchResponse,
    Session,
    SessionTurn,
    Trait,
    WriteResult,
)

RETRY_STATUSES = frozenset({429, 503})
DEFAULT_TIMEOUT = 30.0


T = TypeVar("T")


@dataclass(frozen=True)
class Call(Generic[T]):
    """One request and how to read its answer."""

    method: str
    path: str
    parse: Callable[[Any], T]
    json: Any = None
    params: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class RetryPolicy:
    """Retries on 429 and 503 (the service wrote nothing) and on failed connections, with
    exponential backoff and jitter; a Retry-After from the service wins, up to max_delay."""

    max_retries: int = 3
    base_delay: float = 0.5
    max_delay: float = 30.0

    def delay(self, attempt: int, *, status_code: int | None, retry_after: float | None) -> float | None:
        """Seconds to wait before attempt `attempt + 1`, or None to give up (a pure function)."""
        if attempt >= self.max_retries:
            return None
        if status_code is not None and status_code not in RETRY_STATUSES:
            return None
        if retry_after is not None:
            return min(max(retry_after, 0.0), self.max_delay)
        backoff: float = self.base_delay * (2 ** attempt) * (0.5 + random.random() / 2)
        return min(backoff, self.max_delay)


class Attempts:
    """The retry loop's decisions, shared by the sync and async clients: after each try, how long to wait
    before the next one, or that there is none (the answer is read, or TransportError raised)."""

    def __init__(self, policy: RetryPolicy, call: Call[Any], base: str):
        self.policy, self.call, self.base, self.number = policy, call, base, 0

    def after_error(self, exc: httpx.ConnectError | httpx.TimeoutException) -> float:
        """The wait before retrying a try that got no answer; raises TransportError when it may not be retried."""
        if isinstance(exc, httpx.ConnectError | httpx.ConnectTimeout):  # nothing reached the service
            wait = self.policy.delay(self.number, status_code=None, retry_after=None)
            if wait is not None:
                self.number += 1
                return wait
            raise TransportError(f"no answer from {self.base}: {exc}") from exc
        raise TransportError(f"timed out waiting for {self.call.method} {self.call.path}: {exc}") from exc

    def after_response(self, response: httpx.Response) -> float | None:
        """The wait before retrying (429 or 503 with retries left), or None: read this answer."""
        if response.status_code not in RETRY_STATUSES:
            return None
        wait = self.policy.delay(self.number, status_code=response.status_code,
                                 retry_after=retry_after_seconds(response))
        if wait is not None:
            self.number += 1
        return wait


def retry_after_seconds(response: httpx.Response) -> float | None:
    value = response.headers.get("Retry-After")
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None


def read(response: httpx.Response, call: Call[T]) -> T:
    """The parsed answer, or the exception for an error answer."""
    try:
        body = response.json() if response.content else None
    except ValueError:
        body = response.text
    if response.status_code >= 400:
        raise error_for(response.status_code, body, retry_after=retry_after_seconds(response),
                        request_id=response.headers.get("X-Request-ID"))
    return call.parse(body)


def _segment(value: str) -> str:
    return quote(str(value), safe="")


def _clean(values: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in values.items() if v is not None}


def _page(model: Callable[[dict[str, Any]], T]) -> Callable[[dict[str, Any]], Page[T]]:
    return lambda body: Page([model(r) for r in body["results"]], body.get("next"), body.get("previous"), body,
                             item=model)


def next_page_call(page: Page[T]) -> Call[Page[T]] | None:
    """The request for the page after `page` (None on the last page). The link's path and query are
    followed on the client's own origin: behind a proxy the service may name another host, and the key
    goes nowhere else."""
    if not page.next:
        return None
    if page.item is None:
        raise MemoryServiceError("next_page follows a page this client read (list, history)")
    return Call("GET", httpx.URL(page.next).raw_path.decode("ascii"), _page(page.item))


def _write_or_review(body: dict[str, Any]) -> WriteResult:
    return WriteResult.from_json(body)


def _traits(body: dict[str, Any]) -> dict[str, list[Trait]]:
    return {subtype: [Trait.from_json(t) for t in rows] for subtype, rows in body.items()}


class Endpoints:
    """Every endpoint of /api/v1, as a Call. Subclasses define `_send(call)`: the sync client returns the
    answer, the async client an awaitable of it."""

    def _send(self, call: Call[T]) -> T:  # pragma: no cover - defined by the clients
        raise NotImplementedError

    # -- memories
    def add(self, user_id: str, text: str, *, memory_type: str | None = None, importance: float | None = None,
            tags: list[str] | None = None, data: dict[str, Any] | None = None, agent_id: str | None = None,
            session_id: str | None = None, group_id: str | None = None, valid_at: str | None = None,
            expires_at: str | None = None, ttl_seconds: int | None = None, infer: bool | None = None) -> WriteResult:
        """Save one memory (verbatim; infer=True decides against the user's near-duplicates first)."""
        return self._send(Call("POST", "memories", WriteResult.from_json, json=_clean({
            "user_id": user_id, "text": text, "memory_type": memory_type, "importance": importance, "tags": tags,
            "data": data, "agent_id": agent_id, "session_id": session_id, "group_id": group_id,
            "valid_at": valid_at, "expires_at": expires_at, "ttl_seconds": ttl_seconds, "infer": infer})))

    def add_batch(self, memories: list[dict[str, Any]]) -> list[WriteResult]:
        """Save many memories in one transaction (each dict as for add)."""
        return self._send(Call("POST", "memories/batch",
                               lambda body: [WriteResult.from_json(r) for r in body["results"]],
                               json={"memories": memories}))

    def get(self, memory_id: str) -> Memory:
        return self._send(Call("GET", f"memories/{_segment(memory_id)}", Memory.from_json))

    def list(self, *, user_id: str | None = None, memory_type: str | None = None, status: str | None = None,
             tag: str | None = None, current: bool | None = None, agent_id: str | None = None,
             session_id: str | None = None, group_id: str | None = None, created_after: str | None = None,
             created_before: str | None = None, page_size: int | None = None, include_data: bool = False,
             cursor_url: str | None = None) -> Page[Memory]:
        """One page of memories, newest first; pass the page's `next` as cursor_url (or use iter_memories)."""
        params = _clean({"user_id": user_id, "memory_type": memory_type, "status": status, "tag": tag,
                         "current": None if current is None else str(current).lower(), "agent_id": agent_id,
                         "session_id": session_id, "group_id": group_id, "created_after": created_after,
                         "created_before": created_before, "page_size": page_size,
                         "include": "data" if include_data else None})
        return self._send(Call("GET", cursor_url or "memories", _page(Memory.from_json),
                               params={} if cursor_url else params))

    def update(self, memory_id: str, *, text: str | None = None, importance: float | None = None,
               tags: builtins.list[str] | None = None, data: dict[str, Any] | None = None,
               expires_at: str | None = None, expected_version: int | None = None) -> WriteResult:
        """Change a memory. A new text makes a new version (its id is in the result). Raises Conflict when
        expected_version is stale; an operator-approved memory may be held for review (held_for_review)."""
        return self._send(Call("PATCH", f"memories/{_segment(memory_id)}", _write_or_review, json=_clean({
            "text": text, "importance": importance, "tags": tags, "data": data, "expires_at": expires_at,
            "expected_version": expected_version})))

    def delete(self, memory_id: str) -> WriteResult:
        """Archive a memory (its history keeps who and why)."""
        return self._send(Call("DELETE", f"memories/{_segment(memory_id)}", _write_or_review))

    def merge(self, memory_ids: builtins.list[str], *, text: str | None = None,
              expected_versions: dict[str, int] | None = None) -> Memory:
        return self._send(Call("POST", "memories/merge", Memory.from_json, json=_clean({
            "ids": memory_ids, "text": text, "expected_versions": expected_versions})))

    def history(self, memory_id: str, *, cursor_url: str | None = None) -> Page[HistoryEvent]:
        return self._send(Call("GET", cursor_url or f"memories/{_segment(memory_id)}/history",
                               _page(HistoryEvent.from_json)))

    def search(self, query: str, *, user_id: str | None = None, agent_id: str | None = None,
               session_id: str | None = None, group_id: str | None = None, mode: str | None = None,
               limit: int | None = None, memory_types: builtins.list[str] | None = None,
               tags: builtins.list[str] | None = None,
               start_time: str | None = None, end_time: str | None = None, as_of: str | None = None,
               min_score: float | None = None, min_similarity: float | None = None,
               person_id: str | None = None, include_data: bool = False,
               keywords: builtins.list[str] | None = None, time_range_days: int | None = None,
               include_turns: bool = False) -> SearchResponse:
        """Hybrid (or semantic / keyword) search; each result carries its score parts, the words it holds
        (`matched_keywords`) and a `preview`; the answer its `total_count`, its `groups` and `degraded` when
        the vector side failed. `person_id`: only memories about that person (an id from `people`);
        `keywords`: the keyword side looks for these instead of the query's words; `time_range_days`: only
        the last N days; `include_turns`: each result carries the conversation turns it was drawn from.
        Left out, `limit`, `min_score` and `min_similarity` take the mode's defaults."""
        return self._send(Call("POST", "memories/search", SearchResponse.from_json,
                               params={"include": "data"} if include_data else {}, json=_clean({
            "query": query, "user_id": user_id, "agent_id": agent_id, "session_id": session_id,
            "group_id": group_id, "mode": mode, "limit": limit, "memory_types": memory_types, "tags": tags,
            "start_time": start_time, "end_time": end_time, "as_of": as_of, "min_score": min_score,
            "min_similarity": min_similarity, "person_id": person_id, "keywords": keywords,
            "time_range_days": time_range_days, "include_turns": include_turns or None})))

    def erase_user(self, user_id: str, *, agent_id: str | None = None) -> Erasure:
        """Erase everything of a user (or one agent's part): nothing of their words remains."""
        return self._send(Call("DELETE", f"users/{_segment(user_id)}/memories", Erasure.from_json,
                               params=_clean({"agent_id": agent_id})))

    # -- conversations and jobs
    def add_conversation(self, user_id: str, session_id: str, messages: builtins.list[dict[str, Any]], *,
                         agent_id: str | None = None, group_id: str | None = None,
                         participants: dict[str, str] | None = None) -> Job:
        """Send turns ({role, content[, name, created_at]}); the service extracts what is worth keeping."""
        return self._send(Call("POST", "conversations", Job.from_json, json=_clean({
            "user_id": user_id, "session_id": session_id, "messages": messages, "agent_id": agent_id,
            "group_id": group_id, "participants": participants})))

    def job(self, job_id: str) -> Job:
        return self._send(Call("GET", f"jobs/{_segment(job_id)}", Job.from_json))

    def retry_job(self, job_id: str) -> Job:
        return self._send(Call("POST", f"jobs/{_segment(job_id)}/retry", Job.from_json))

    # -- context
    def context(self, query: str, *, user_id: str | None = None, agent_id: str | None = None,
                session_id: str | None = None, group_id: str | None = None, limit: int | None = None,
                trait_limit: int | None = None, max_chars: int | None = None, format: str | None = None,
                include_working_memory: bool | None = None, condense: bool | None = None,
                language: str | None = None) -> ContextBlock:
        """The block to put in the prompt: traits, the group, relevant memories, working memory.
        `language`: the headings' language, "auto" (the user's, the default), "en" or "zh"."""
        return self._send(Call("POST", "context", ContextBlock.from_json, json=_clean({
            "query": query, "user_id": user_id, "agent_id": agent_id, "session_id": session_id,
            "group_id": group_id, "limit": limit, "trait_limit": trait_limit, "max_chars": max_chars,
            "format": format, "include_working_memory": include_working_memory, "condense": condense,
            "language": language})))

    # -- review (reviewer keys)
    def review_queue(self) -> builtins.list[Candidate]:
        return self._send(Call("GET", "review", lambda body: [Candidate.from_json(c) for c in body["results"]]))

    def approve(self, candidate_id: str, *, text: str | None = None, sensitive: str | None = None,
                reason: str | None = None) -> Candidate:
        """Approve a candidate (with text: approve the edited text instead). Text the sensitive-data screen
        flags is approved only with sensitive="redacted" (what it found is masked) or sensitive="as_written"
        and a reason (kept verbatim, audited); without either the answer is a ValidationError naming
        `sensitive`."""
        return self._send(Call("POST", f"review/{_segment(candidate_id)}/approve", Candidate.from_json,
                               json=_clean({"text": text, "sensitive": sensitive, "reason": reason})))

    def reject(self, candidate_id: str, *, reason: str = "") -> Candidate:
        return self._send(Call("POST", f"review/{_segment(candidate_id)}/reject", Candidate.from_json,
                               json={"reason": reason}))

    # -- traits and reflection
    def traits(self, user_id: str, *, stage: str | None = None) -> dict[str, builtins.list[Trait]]:
        """The user's traits by subtype (behavior, preference, core)."""
        return self._send(Call("GET", f"users/{_segment(user_id)}/traits", _traits, params=_clean({"stage": stage})))

    def trait(self, trait_id: str) -> Trait:
        """One trait with its evidence, children and confidence history."""
        return self._send(Call("GET", f"traits/{_segment(trait_id)}", Trait.from_json))

    def reflect(self, user_id: str) -> ReflectionCycle:
        """Queue a reflection cycle; poll reflection_cycle(id) or use wait_for_reflection."""
        return self._send(Call("POST", f"users/{_segment(user_id)}/reflect", ReflectionCycle.from_json, json={}))

    def end_session(self, session_id: str, *, user_id: str) -> ReflectionCycle:
        """Say a session ended: its reflection cycle (trigger session_end) is queued, once per session."""
        return self._send(Call("POST", f"sessions/{_segment(session_id)}/end", ReflectionCycle.from_json,
                               json={"user_id": user_id}))

    def reflection_cycle(self, cycle_id: int) -> ReflectionCycle:
        return self._send(Call("GET", f"reflection-cycles/{int(cycle_id)}", ReflectionCycle.from_json))

    # -- people
    def people(self, user_id: str, *, kind: str | None = None) -> builtins.list[Person]:
        """The people (and pets, places, organisations) in the user's life: the user first, then by last
        mention; each with relation, aliases, current edges (where they live or work) and current facts.
        kind: only "person", "pet", "place", "organisation" or "user"."""
        return self._send(Call("GET", f"users/{_segment(user_id)}/people",
                               lambda body: [Person.from_json(p) for p in body["people"]],
                               params=_clean({"kind": kind})))

    def person(self, user_id: str, person_id: str) -> Person:
        """One person of the user (NotFound for another user's): as in `people`, plus the facts that stopped
        holding, every edge with its times, the history of changes, and who is within two hops."""
        return self._send(Call("GET", f"users/{_segment(user_id)}/people/{_segment(person_id)}", Person.from_json))

    # -- sessions
    def sessions(self, user_id: str) -> builtins.list[Session]:
        """The user's sessions, latest first: first and last conversation job time, turns and jobs."""
        return self._send(Call("GET", f"users/{_segment(user_id)}/sessions",
                               lambda body: [Session.from_json(s) for s in body["sessions"]]))

    def session_turns(self, user_id: str, session_id: str, *, page_size: int | None = None,
                      cursor_url: str | None = None) -> Page[SessionTurn]:
        """One page of the user's raw turns of a session, in order, as the conversation jobs keep them (a
        forgotten turn reads as its marker); pass the page's `next` as cursor_url, or use next_page."""
        path = f"users/{_segment(user_id)}/sessions/{_segment(session_id)}/turns"
        return self._send(Call("GET", cursor_url or path, _page(SessionTurn.from_json),
                               params={} if cursor_url else _clean({"page_size": page_size})))

    # -- service
    def health(self) -> dict[str, Any]:
        """Liveness and, for a valid key, the checks (database, model, broker, Redis)."""
        return self._send(Call("GET", "health", lambda body: body))

    def ready(self) -> dict[str, Any]:
        """Readiness: the database answers, migrations are applied, the model is loaded (else ServiceUnavailable)."""
        return self._send(Call("GET", "ready", lambda body: body))


def base_url(url: str) -> str:
    """The API root for a service URL: "http://host:8000" and ".../api/v1" both work."""
    url = url.rstrip("/")
    return url + "/" if url.endswith("/api/v1") else url + "/api/v1/"


def headers(api_key: str) -> dict[str, str]:
    if not api_key:
        raise MemoryServiceError("an API key is required (manage.py create_api_key)")
    return {"Authorization": f"Bearer {api_key}", "User-Agent": "memory-client-python/0.1.0"}
