"""The Model Context Protocol server: the memory service as tools an agent calls.

Tools: add_memory, search_memories, get_context, list_memories, delete_memory,
list_people, get_person, and the tools apps above memories register (register_tool:
reflection's end_session); one resource template, memory://{memory_id}. Every call is one tenant's, through one
of its API keys: stdio takes the key when it starts (`manage.py mcp_server --key`);
streamable HTTP takes it from each request's `Authorization: Bearer KEY` and
answers 401 without one. Tools call the same service functions and serializers as
the REST API: the same rules, roles, rate limits and audit trail. Bad arguments
come back as MCP tool errors naming the field; the server keeps serving.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, Literal

import anyio
import pydantic_core
from django.conf import settings
from django.db import close_old_connections
from django.utils import timezone
from mcp.server.fastmcp import Context, FastMCP
from mcp.server.fastmcp.exceptions import ToolError
from rest_framework import serializers as drf_serializers

from memories import agents, governance, ratelimit, selectors
from memories.api.auth import ApiClient
from memories.api.parsers import too_deep
from memories.api.people import person_body, person_page_body
from memories.api.serializers import (
    ContextRequestSerializer,
    ConversationSerializer,
    IdentifierField,
    MemoryCreateSerializer,
    MemorySearchSerializer,
    MemorySerializer,
    path_identifier,
)
from memories.context import ContextRequest
from memories.errors import ServiceError
from memories.keys import HeaderAuthentication, api_key_authenticate, authenticate_header
from memories.models import ApiKey
from memories.network import client_of, meta_of_asgi_scope
from memories.people.selectors import people_of, person_page
from memories.search import listed_in_scope

INSTRUCTIONS = (
    "Long-term memory for this user. Call get_context at the start of a turn to learn what you should know; "
    "add_memory to keep a durable fact (or pass the turns as messages to let the service extract them); "
    "search_memories to look something up; delete_memory when the user asks you to forget; "
    "list_people and get_person for who is who in the user's life."
)
LIST_MAX = 200


def _caller_now(raw_key: str | None, known: ApiKey | None) -> ApiClient:
    """The calling key, checked now (a key revoked while a stdio server runs stops working), and rate-limited."""
    key = known if known is not None else api_key_authenticate(raw_key or "")
    if key is None:
        raise ToolError("Invalid, revoked or expired API key.")
    decision = ratelimit.api_request_allowed(key_id=key.id, tenant_id=key.tenant_id)
    if not decision.allowed:
        raise ToolError(f"rate limited: retry after {decision.retry_after} seconds")
    return ApiClient(key.tenant, key)


def sendable(message: str) -> str:
    """Pure: a message the SDK can encode: a lone surrogate ("\\ud800", sent as a memory_id) written
    as its escape, not an HTTP 500 when the reply is encoded."""
    return message.encode("utf-8", "backslashreplace").decode("utf-8")


def _field_errors(errors: Any) -> str:
    return "invalid arguments: " + json.dumps(errors, default=str)


def _valid(serializer_class: type[drf_serializers.Serializer], data: dict) -> dict:
    serializer = serializer_class(data={k: v for k, v in data.items() if v is not None})
    if not serializer.is_valid():
        raise ToolError(_field_errors(serializer.errors))
    return dict(serializer.validated_data)


def sent_size(answer: Any) -> int:
    """The bytes a tool's answer takes in its JSON-RPC reply: FastMCP sends it as text, JSON indented
    by two and then escaped again as a string, so the bare json.dumps counted 4 MB where 4.85 MB went
    out (issue 43). Encoded as the SDK encodes (pydantic_core, UTF-8); tools are registered without
    structured output (build_server), so this text is the only copy sent."""
    text = pydantic_core.to_json(answer, fallback=str, indent=2).decode()
    reply = {"jsonrpc": "2.0", "id": 0, "result": {"content": [{"type": "text", "text": text}], "isError": False}}
    return len(pydantic_core.to_json(reply))


def bounded_answer(answer: Any) -> Any:
    """A tool's answer within API_MAX_RESPONSE_BYTES as sent, as the REST API's and Mem0's are: a bigger
    one is a tool error that says how to ask for less."""
    limit = settings.API_MAX_RESPONSE_BYTES
    if limit and isinstance(answer, dict | list):
        size = sent_size(answer)
        if size > limit:
            raise ToolError(f"the answer would be {size} bytes, over the {limit}-byte limit "
                            "(API_MAX_RESPONSE_BYTES): ask for fewer items (limit)")
    return answer


# A tool from an app built on memories (which this module may not import): a factory given `call`, the
# server's runner of Django work, that returns the async tool function. Apps register from AppConfig.ready.
ToolFactory = Callable[[Callable[..., Any]], Callable[..., Any]]
_REGISTERED_TOOLS: list[ToolFactory] = []


def register_tool(factory: ToolFactory) -> None:
    if factory not in _REGISTERED_TOOLS:
        _REGISTERED_TOOLS.append(factory)


def valid_arguments(serializer_class: type[drf_serializers.Serializer], data: dict) -> dict:
    """A registered tool's arguments through a serializer: a tool error naming the field, or the values."""
    return _valid(serializer_class, data)


# The service's own tools, each a factory given `call` (see ToolFactory), as registered tools are.


def _add_memory_tool(call: Callable[..., Any]) -> Callable[..., Any]:
    async def add_memory(ctx: Context, user_id: str, text: str | None = None, messages: list[dict] | None = None,
                         memory_type: Literal["fact", "episodic", "preference"] = "fact",
                         importance: float = 0.5, tags: list[str] | None = None, agent_id: str | None = None,
                         session_id: str | None = None, infer: bool = False) -> dict:
        """Remember something about a user. Either `text` (one memory, stored as given; infer=true decides
        against the user's near-duplicates first), or `messages` ([{role, content}], a conversation the
        service extracts durable facts from; session_id names the conversation)."""
        def work(caller: ApiClient) -> dict:
            if (text is None) == (messages is None):
                raise ToolError(_field_errors({"text": ["give text or messages, not both"]}))
            if messages is not None:
                data = _valid(ConversationSerializer, {"user_id": user_id, "session_id": session_id or "mcp",
                                                       "agent_id": agent_id, "messages": messages})
                job = agents.conversation_submit(tenant=caller.tenant, api_key=caller.key, **data)
                return {"job_id": str(job.id), "status": job.status, "operations": job.operations}
            serializer = MemoryCreateSerializer(data={k: v for k, v in {
                "user_id": user_id, "text": text, "memory_type": memory_type, "importance": importance,
                "tags": tags, "agent_id": agent_id, "session_id": session_id, "infer": infer}.items()
                if v is not None})
            if not serializer.is_valid():
                raise ToolError(_field_errors(serializer.errors))
            applied = agents.memory_save(tenant=caller.tenant, spec=serializer.to_spec(), actor=caller.actor,
                                         infer=infer, role=caller.role, api_key_id=caller.key_id)
            if applied.candidate is not None:
                return {"operation": "REVIEW", "reason": applied.reason, "candidate_id": str(applied.candidate.id)}
            return {"operation": applied.operation, "reason": applied.reason,
                    "memory": MemorySerializer(applied.memory, context={"include_data": False}).data}
        return await call(ctx, work)
    return add_memory


def _search_memories_tool(call: Callable[..., Any]) -> Callable[..., Any]:
    async def search_memories(ctx: Context, user_id: str, query: str, limit: int | None = None,
                              agent_id: str | None = None, session_id: str | None = None,
                              group_id: str | None = None,
                              mode: Literal["hybrid", "semantic", "keyword"] = "hybrid",
                              keywords: list[str] | None = None, time_range_days: int | None = None,
                              min_score: float | None = None, memory_types: list[str] | None = None,
                              include_turns: bool = False) -> dict:
        """Find a user's memories relevant to `query`, best first, with every part of each score, the words
        each holds (`keywords`: look for these words instead of the query's), a preview, the total, the
        results per group, and `degraded` when the vector side failed (keyword results only, not none).
        `time_range_days`: only the last N days; `include_turns`: the conversation turns behind each."""
        def work(caller: ApiClient) -> dict:
            serializer = MemorySearchSerializer(data={k: v for k, v in {
                "user_id": user_id, "query": query, "limit": limit, "agent_id": agent_id,
                "session_id": session_id, "group_id": group_id, "mode": mode, "keywords": keywords,
                "time_range_days": time_range_days, "min_score": min_score, "memory_types": memory_types,
                "include_turns": include_turns}.items() if v is not None})
            if not serializer.is_valid():
                raise ToolError(_field_errors(serializer.errors))
            answer = agents.search_answered(tenant=caller.tenant, query=serializer.to_query(now=timezone.now()),
                                            include_turns=include_turns)
            results = []
            for r in answer.results:
                memory_id = str(r.memory.id)
                results.append({"id": memory_id, "text": r.memory.text, "memory_type": r.memory.memory_type,
                                "group_id": r.memory.group_id, "created_at": r.memory.created_at.isoformat(),
                                "score": r.score, "scores": r.scores,
                                "matched_keywords": answer.matched_keywords[memory_id],
                                "preview": answer.previews[memory_id],
                                **((answer.turns or {}).get(memory_id, {}) if include_turns else {})})
            plan = answer.plan
            return {"results": results, "total_count": plan.total_count, "total_count_exact": plan.total_count_exact,
                    "groups": answer.groups, "degraded": plan.degraded, "degraded_reason": plan.degraded_reason}
        return await call(ctx, work)
    return search_memories


def _get_context_tool(call: Callable[..., Any]) -> Callable[..., Any]:
    async def get_context(ctx: Context, user_id: str, query: str, agent_id: str | None = None,
                          session_id: str | None = None, group_id: str | None = None,
                          format: Literal["markdown", "plain", "json"] = "markdown") -> dict:
        """What the agent should know right now about the user, for this query: traits, the group,
        relevant memories and working memory, as one block to put in the prompt."""
        def work(caller: ApiClient) -> dict:
            data = _valid(ContextRequestSerializer, {"user_id": user_id, "query": query, "agent_id": agent_id,
                                                     "session_id": session_id, "group_id": group_id,
                                                     "format": format})
            built = agents.context_for_agent(tenant=caller.tenant, request=ContextRequest(**data))
            return {"context": built.text, "status": built.status}
        return await call(ctx, work)
    return get_context


def _list_memories_tool(call: Callable[..., Any]) -> Callable[..., Any]:
    async def list_memories(ctx: Context, user_id: str, limit: int = 50, before: str | None = None,
                            agent_id: str | None = None, session_id: str | None = None) -> dict:
        """A user's current memories, newest first. For the next page pass the last one's created_at as
        `before`."""
        def work(caller: ApiClient) -> dict:
            data = _valid(_ListArguments, {"user_id": user_id, "limit": limit, "before": before,
                                           "agent_id": agent_id, "session_id": session_id})
            rows = listed_in_scope(caller.tenant, user_id=data["user_id"], agent_id=data.get("agent_id"),
                                   session_id=data.get("session_id"))
            if data.get("before"):
                rows = rows.filter(created_at__lt=data["before"])
            page = list(rows.order_by("-created_at", "-id")[:data["limit"]])
            return {"results": MemorySerializer(page, many=True, context={"include_data": False}).data,
                    "next_before": page[-1].created_at.isoformat() if len(page) == data["limit"] else None}
        return await call(ctx, work)
    return list_memories


def _delete_memory_tool(call: Callable[..., Any]) -> Callable[..., Any]:
    async def delete_memory(ctx: Context, memory_id: str) -> dict:
        """Forget one memory (archived: it is no longer recalled; its history keeps who and why).
        A memory an operator approved may be held for review instead."""
        def work(caller: ApiClient) -> dict:
            change = governance.memory_change_by_key(tenant=caller.tenant, memory_id=memory_id,
                                                     role=caller.role, api_key_id=caller.key_id,
                                                     actor=caller.actor, archive=True)
            if change.candidate is not None:
                return {"operation": "REVIEW", "candidate_id": str(change.candidate.id),
                        "reason": change.candidate.reason_detail}
            assert change.result is not None
            return {"operation": change.result.operation, "memory_id": str(change.result.memory.id)}
        return await call(ctx, work)
    return delete_memory


def _list_people_tool(call: Callable[..., Any]) -> Callable[..., Any]:
    async def list_people(ctx: Context, user_id: str,
                          kind: Literal["user", "person", "pet", "place", "organisation"] | None = None) -> dict:
        """The people (and pets, places, organisations) in the user's life: the user first, then by last
        mention; each with relation (mother, friend, ...), aliases, where they live or work now (edges) and
        current facts. As GET /api/v1/users/{user_id}/people."""
        def work(caller: ApiClient) -> dict:
            user = path_identifier(user_id)
            views = people_of(caller.tenant, user, kinds=[kind] if kind else ())
            return {"user_id": user, "people": [person_body(v) for v in views]}
        return await call(ctx, work)
    return list_people


def _get_person_tool(call: Callable[..., Any]) -> Callable[..., Any]:
    async def get_person(ctx: Context, user_id: str, person_id: str) -> dict:
        """One person of the user (an id from list_people): current facts and edges, the facts that stopped
        holding, every edge with its valid and invalid time (where they lived before), the history of
        changes, and who is within two hops. As GET /api/v1/users/{user_id}/people/{person_id}."""
        def work(caller: ApiClient) -> dict:
            return person_page_body(person_page(caller.tenant, path_identifier(user_id), person_id))
        return await call(ctx, work)
    return get_person


OWN_TOOLS: tuple[ToolFactory, ...] = (_add_memory_tool, _search_memories_tool, _get_context_tool,
                                      _list_memories_tool, _delete_memory_tool, _list_people_tool, _get_person_tool)


def build_server(*, raw_key: str | None = None, host: str = "127.0.0.1", port: int = 8001) -> FastMCP:
    """The server. raw_key: stdio's one key; None: each HTTP request brings its own (see KeyCheck)."""
    server = FastMCP("memory-service", instructions=INSTRUCTIONS, host=host, port=port, stateless_http=True,
                     json_response=True)

    async def call(ctx: Context, work: Callable[[ApiClient], Any]) -> Any:
        """Run Django work on a worker thread (the ORM is synchronous), mapping domain errors to tool errors."""
        request = ctx.request_context.request
        known = getattr(getattr(request, "state", None), "api_key", None) if request is not None else None

        def run() -> Any:
            close_old_connections()
            try:
                return bounded_answer(work(_caller_now(raw_key, known)))
            except drf_serializers.ValidationError as exc:
                raise ToolError(_field_errors(exc.detail)) from None
            except ServiceError as exc:  # its message may quote what was sent: a lone surrogate is no UTF-8
                raise ToolError(sendable(f"{type(exc).__name__}: {exc}")) from None
            finally:
                close_old_connections()

        return await anyio.to_thread.run_sync(run)

    for factory in (*OWN_TOOLS, *_REGISTERED_TOOLS):
        server.tool(structured_output=False)(factory(call))  # one copy on the wire: what sent_size counts

    @server.resource("memory://{memory_id}", mime_type="application/json")
    async def memory_resource(memory_id: str) -> str:
        """One memory of the caller's tenant, as JSON."""
        ctx = server.get_context()

        def work(caller: ApiClient) -> str:
            memory = selectors.memory_get(tenant=caller.tenant, memory_id=memory_id)
            return json.dumps(MemorySerializer(memory).data)
        return await call(ctx, work)

    return server


class _ListArguments(drf_serializers.Serializer):
    user_id = IdentifierField()
    agent_id = IdentifierField(required=False)
    session_id = IdentifierField(required=False)
    limit = drf_serializers.IntegerField(min_value=1, max_value=LIST_MAX, default=50)
    before = drf_serializers.DateTimeField(required=False)


class KeyCheck:
    """ASGI wrapper for streamable HTTP: no valid `Authorization: Bearer KEY`, no MCP (401);
    the key found travels to the tools in the request's state."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        header = dict(scope.get("headers") or []).get(b"authorization", b"").decode("latin-1")
        client_address = client_of(meta_of_asgi_scope(scope)).address

        def authenticate() -> HeaderAuthentication:  # the REST API's check, bad-key limit included
            close_old_connections()
            try:
                return authenticate_header(header, client_address=client_address, schemes=("bearer", "token"))
            finally:
                close_old_connections()

        found = await anyio.to_thread.run_sync(authenticate)
        if found.key is None:
            throttled = found.problem == "throttled"
            body = json.dumps({"detail": "Too many bad API keys from this address; wait and retry." if throttled
                               else "Authorization header must be 'Bearer <key>' with a valid API key."})
            headers = [(b"content-type", b"application/json")]
            headers.append((b"retry-after", str(max(1, round(found.retry_after))).encode()) if throttled
                           else (b"www-authenticate", b"Bearer"))
            await send({"type": "http.response.start", "status": 429 if throttled else 401, "headers": headers})
            await send({"type": "http.response.body", "body": body.encode()})
            return None
        scope.setdefault("state", {})["api_key"] = found.key
        if scope.get("method") != "POST":
            return await self.app(scope, receive, send)
        sent = await _whole_body(receive, settings.DATA_UPLOAD_MAX_MEMORY_SIZE)
        if problem := body_problem(sent):
            status, message = problem
            answer = {"jsonrpc": "2.0", "id": None, "error": {"code": -32700 if status == 400 else -32600,
                                                               "message": message}}
            await send({"type": "http.response.start", "status": status,
                        "headers": [(b"content-type", b"application/json")]})
            await send({"type": "http.response.body", "body": json.dumps(answer).encode()})
            return None
        assert sent is not None  # body_problem answered a body cut off at the limit
        return await self.app(scope, _replay(sent, receive), send)


def body_problem(body: bytes | None) -> tuple[int, str] | None:
    """Pure: what is wrong with an MCP request's body before the SDK reads it, as (status, message):
    over DATA_UPLOAD_MAX_MEMORY_SIZE (None: it was cut off there) is a 413; nested deeper than
    JSON_MAX_DEPTH a 400 (the SDK's parser raised RecursionError: an HTTP 500, issue 55)."""
    if body is None:
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        return 413, f"the body is larger than {limit} bytes (DATA_UPLOAD_MAX_MEMORY_SIZE)"
    if problem := too_deep(body.decode("utf-8", errors="replace")):
        return 400, f"Parse error: JSON {problem}"
    return None


async def _whole_body(receive, limit: int) -> bytes | None:
    """The request's body, or None once it passes `limit` bytes."""
    parts, size, more = [], 0, True
    while more:
        message = await receive()
        if message["type"] != "http.request":
            break
        parts.append(message.get("body", b""))
        size += len(parts[-1])
        if limit and size > limit:
            return None
        more = message.get("more_body", False)
    return b"".join(parts)


def _replay(body: bytes, receive):
    """An ASGI receive that hands the app the body already read, then the server's own messages
    (a disconnect)."""
    sent = False

    async def replay():
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()
    return replay


def http_app(*, host: str = "127.0.0.1", port: int = 8001):
    """The streamable HTTP app (at /mcp), behind the key check; serve it with `http_config`."""
    server = build_server(host=host, port=port)
    return KeyCheck(server.streamable_http_app())


def http_config(*, host: str = "127.0.0.1", port: int = 8001, log_level: str = "warning"):
    """uvicorn's configuration of the HTTP transport. uvicorn would rewrite the client from
    X-Forwarded-For sent from loopback (its proxy_headers default): off, so the client is the one the
    API would find (network.client_of: forwarding headers only from TRUSTED_PROXIES)."""
    import uvicorn  # only the HTTP transport serves with uvicorn

    return uvicorn.Config(http_app(host=host, port=port), host=host, port=port, log_level=log_level,
                          proxy_headers=False)
