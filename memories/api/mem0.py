"""Mem0 platform API compatibility: the routes and shapes `mem0ai`'s MemoryClient
(2.2.1) speaks, answered by this service's own writer, extraction and search.

Identity maps one to one, except: `run_id` is this service's `session_id`,
`metadata` is `data`, and every memory belongs to a user (a request with no
`user_id` is a 400 naming it). The same API keys, roles and tenancy apply; the
key comes as `Authorization: Token KEY` (Mem0's scheme) or `Bearer KEY`.
What Mem0 has and this service does not is a 501 naming the feature
(docs/mem0.md), never a 500.
"""

from __future__ import annotations

import ast
import json
import uuid
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from django.conf import settings
from django.core.paginator import EmptyPage, Paginator
from django.db import transaction
from django.utils import timezone
from django.utils.dateparse import parse_datetime
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.utils import extend_schema
from rest_framework import exceptions, serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from memories import agents, governance, selectors, writing
from memories.api.auth import ApiKeyAuthentication
from memories.api.parsers import too_deep
from memories.api.serializers import (
    ConversationSerializer,
    MemoryCreateSerializer,
    MemoryPatchSerializer,
    MemorySearchSerializer,
    MessageSerializer,
    PublicActorField,
    path_identifier,
)
from memories.models import MemoryItem, MemoryType
from memories.people.selectors import relations_of
from memories.search import listed_in_scope
from memories.vocabulary import SLOT_KEY

# Filter keys with a meaning here, and what they are called in this service.
IDENTITY_KEYS = {"user_id": "user_id", "agent_id": "agent_id", "run_id": "session_id"}
DATE_KEYS = ("created_at", "updated_at")
DATE_OPERATORS = ("gte", "gt", "lte", "lt")
DEFAULT_SESSION = "mem0"  # the session of an add() without run_id
MAX_PAGE_SIZE = 500
MAX_HISTORY = 1000
APP_ID_REFUSED = ("app_id is not supported: one tenant (API key) is one app here; use agent_id or run_id to "
                  "separate memories within a user")


def refuse_unsupported(given: Any, allowed: frozenset[str] | set[str], where: str, *, prefix: str = "") -> None:
    """A parameter a route does not honour is a 400 naming it, never silently dropped: a dropped scope
    or filter (app_id, categories, a date range) would widen what the call reads or erases."""
    unknown = sorted(set(given) - set(allowed))
    if unknown:
        raise _invalid(f"{prefix}{unknown[0]}", f"not supported by this service's {where} (docs/mem0.md)")


class Mem0TokenAuthentication(ApiKeyAuthentication):
    """`Authorization: Token KEY` as Mem0's clients send it (Bearer works too)."""

    keyword = "Token"
    schemes = ("token", "bearer")


class Mem0TokenScheme(OpenApiAuthenticationExtension):
    target_class = "memories.api.mem0.Mem0TokenAuthentication"
    name = "Mem0Token"

    def get_security_definition(self, auto_schema):
        return {"type": "apiKey", "in": "header", "name": "Authorization",
                "description": "`Token <API key>`, as Mem0's clients send it (the same keys as the bearer scheme)"}


def _invalid(field: str, message: str) -> serializers.ValidationError:
    return serializers.ValidationError({field: [message]})


def _identifier(value: Any, field: str) -> str:
    if not isinstance(value, str) or not value:
        raise _invalid(field, f"{field} must be a non-empty string")
    return path_identifier(value, field)  # the same length bound and NFKC rules as every other id


def _date(value: Any, field: str) -> datetime:
    parsed = None
    if isinstance(value, int | float) and not isinstance(value, bool):
        try:
            parsed = datetime.fromtimestamp(value, tz=UTC)
        except (OverflowError, OSError, ValueError):
            parsed = None
    elif isinstance(value, str):
        try:
            parsed = parse_datetime(value) or (parse_datetime(value + "T00:00:00") if len(value) == 10 else None)
        except ValueError:
            parsed = None
    if parsed is None:
        raise _invalid(field, "an ISO 8601 date or time, or a Unix timestamp")
    return parsed if timezone.is_aware(parsed) else parsed.replace(tzinfo=UTC)


def _flatten(filters: Any, field: str = "filters") -> dict:
    """Mem0's filter forms — a flat dict, or {"AND": [{...}, ...]} — as one dict; OR and NOT are refused."""
    if not isinstance(filters, dict):
        raise _invalid(field, "filters must be an object")
    flat: dict = {}
    for key, value in filters.items():
        if key == "AND":
            if not isinstance(value, list) or not all(isinstance(part, dict) for part in value):
                raise _invalid(f"{field}.AND", "AND takes a list of objects")
            for part in value:
                for inner_key, inner in _flatten(part, f"{field}.AND").items():
                    if inner_key in flat and flat[inner_key] != inner:
                        raise _invalid(f"{field}.{inner_key}", "given twice with different values")
                    flat[inner_key] = inner
        elif key in ("OR", "NOT"):
            raise _invalid(f"{field}.{key}", f"{key} filters are not supported here; give one user's scope")
        else:
            flat[key] = value
    return flat


WILDCARDS = (None, "*")


def wildcard_widens(key: str, value: Any, *, deleting: bool) -> bool:
    """Pure: whether an identity filter's value is a wildcard that would widen a deletion. A read may
    take "*" or null as "any"; a deletion may not: `agent_id: "*"` on delete_all erased the whole user,
    memories without an agent included (issue 55). Leave the key out to mean every agent."""
    return deleting and key in IDENTITY_KEYS and (value in WILDCARDS or (isinstance(value, str)
                                                                         and value.strip() in ("*", "")))


def scope_from(payload: dict, *, require_user: bool = True, deleting: bool = False) -> dict:
    """The user, agent, session and date range a Mem0 request names, at its top level or in `filters`.

    Returns this service's names: user_id, agent_id, session_id, created_after/before.
    Wildcards ("*") and null mean "any" in a read and are a 400 in a deletion (`deleting`); other keys
    are a 400 naming them. `app_id`, at the top level as in `filters`, is a 400: dropping it would widen
    the request to the whole user."""
    if payload.get("app_id") is not None:
        raise _invalid("app_id", APP_ID_REFUSED)
    flat = {k: v for k, v in payload.items() if k in IDENTITY_KEYS and v is not None}
    if payload.get("filters") is not None:
        for key, value in _flatten(payload["filters"]).items():
            if key in IDENTITY_KEYS and key in flat and flat[key] != value:
                raise _invalid(f"filters.{key}", "differs from the top-level value")
            flat[key] = value
    scope: dict = {}
    for key, value in flat.items():
        if wildcard_widens(key, value, deleting=deleting):
            raise _invalid(key, f"a wildcard or null {key} would widen the deletion; leave {key} out to erase "
                                "the whole user, or name one")
        if key in IDENTITY_KEYS:
            if value in WILDCARDS:
                continue
            scope[IDENTITY_KEYS[key]] = _identifier(value, key)
        elif key in DATE_KEYS:
            if not isinstance(value, dict) or not value or set(value) - set(DATE_OPERATORS):
                raise _invalid(f"filters.{key}", f"an object with {', '.join(DATE_OPERATORS)}")
            for operator, bound in value.items():
                moment = _date(bound, f"filters.{key}.{operator}")
                scope[f"{key}__{operator}"] = moment
        elif key == "app_id":
            raise _invalid("filters.app_id", APP_ID_REFUSED)
        else:
            raise _invalid(f"filters.{key}", "unsupported filter: use user_id, agent_id, run_id, created_at "
                                             "or updated_at")
    if require_user and "user_id" not in scope:
        raise _invalid("user_id", "this service keeps every memory for a user: give user_id (in filters)")
    return scope


def _scoped(tenant, scope: dict, *, left_out: tuple[str, ...] = (MemoryType.EPISODIC,)):
    identity = {k: scope[k] for k in ("agent_id", "session_id") if k in scope}
    dates = {k: v for k, v in scope.items() if "__" in k}
    listed = listed_in_scope(tenant, user_id=scope["user_id"], **identity).filter(**dates)
    return listed.exclude(memory_type__in=left_out) if left_out else listed


def _asks_for(payload: dict, option: str) -> bool:
    value = payload.get(option, False)
    if not isinstance(value, bool):
        raise _invalid(option, "true or false")
    return value


def _asks_for_episodes(payload: dict) -> bool:
    """Mem0's users expect facts from get_all and search; this service's episodes (the raw turns of each
    session, docs/extraction.md) come only with `include_episodes: true`."""
    return _asks_for(payload, "include_episodes")


def listed_types_left_out(*, episodes: bool, traits: bool) -> tuple[str, ...]:
    """What get_all leaves out unless asked (a pure rule): Mem0's users expect the facts they and their
    conversations gave; traits (what reflection concluded, `include_traits: true`) and episodes (each
    session's raw turns, `include_episodes: true`) are this service's own."""
    return tuple(t for t, asked in ((MemoryType.EPISODIC, episodes), (MemoryType.TRAIT, traits)) if not asked)


# What the extractor keeps in a fact's data for its own use (the slot a fact fills, its key and value).
EXTRACTOR_DATA_KEYS = frozenset({"key", "value", SLOT_KEY})


def mem0_metadata(memory_type: str, data: dict | None) -> dict | None:
    """A memory's `metadata` as Mem0's users see it: what a client gave, not the service's bookkeeping
    (a pure rule). A trait's or an episode's data is the service's own (contexts, turns, narratives); a
    fact's data made only of the extractor's keys is the extractor's."""
    if not data or memory_type in (MemoryType.TRAIT, MemoryType.EPISODIC):
        return None
    if set(data) <= EXTRACTOR_DATA_KEYS:
        return None
    return data


# Every type but episodes: what Mem0's search looks in unless episodes are asked for.
FACT_TYPES = [t for t in MemoryType.values if t != MemoryType.EPISODIC]


def _iso(value: datetime | None) -> str | None:
    return value.astimezone(UTC).isoformat().replace("+00:00", "Z") if value else None


def mem0_memory(memory: MemoryItem, score: float | None = None) -> dict:
    """A memory in Mem0's shape, with this service's own fields kept beside it."""
    body: dict[str, Any] = {
        "id": str(memory.id), "memory": memory.text, "user_id": memory.user_id,
        "agent_id": memory.agent_id or None,
        "run_id": memory.session_id if memory.session_id and memory.session_id != DEFAULT_SESSION else None,
        "app_id": None,
        "metadata": mem0_metadata(memory.memory_type, memory.data), "categories": list(memory.tags),
        "hash": memory.content_hash,
        "immutable": False, "created_at": _iso(memory.created_at), "updated_at": _iso(memory.updated_at),
        "expiration_date": memory.expires_at.date().isoformat() if memory.expires_at else None,
        "memory_type": memory.memory_type, "status": memory.status, "version": memory.version,
    }
    if score is not None:
        body["score"] = score
    return body


def _not_supported(feature: str) -> Response:
    return Response({"detail": f"{feature} is not supported by this service (see docs/mem0.md)",
                     "feature": feature}, status=status.HTTP_501_NOT_IMPLEMENTED)


class Mem0View(APIView):
    authentication_classes = [Mem0TokenAuthentication]
    # The query parameters each method honours (Mem0's clients send these); any other is a 400 naming it.
    query_parameters: dict[str, frozenset[str]] = {}
    body_methods: frozenset[str] = frozenset({"post", "put", "patch"})  # the methods whose body is read

    def initial(self, request, *args, **kwargs):
        super().initial(request, *args, **kwargs)  # the key first: an unknown caller learns nothing more
        method = request.method.lower()
        route = f"{type(self).__name__.removesuffix('View').lower()} route ({request.method})"
        refuse_unsupported(request.query_params, self.query_parameters.get(method, frozenset()), route,
                           prefix="query.")
        if method not in self.body_methods and request.data:  # a scope sent in a body it does not read
            raise _invalid("body", f"the {route} takes no body: give its parameters in the query")

    def body(self) -> dict:
        if not isinstance(self.request.data, dict):
            raise _invalid("body", "a JSON object")
        return self.request.data


class PingView(Mem0View):
    @extend_schema(
        operation_id="mem0_ping", summary="Mem0: check the key", responses={200: dict})
    def get(self, request):
        tenant = request.user.tenant
        return Response({"status": "ok", "org_id": f"tenant-{tenant.id}", "project_id": f"tenant-{tenant.id}",
                         "user_email": None, "tenant": tenant.name})


def _add_options(payload: dict) -> dict:
    """The add() options this service honours; the rest a 400 naming them (see docs/mem0.md)."""
    unsupported = {"custom_categories", "custom_instructions", "agent_custom_instructions",
                   "structured_data_schema", "includes", "excludes", "output_format", "version", "org_id",
                   "project_id", "immutable"} & {k for k, v in payload.items() if v is not None}
    known = {"messages", "filters", "metadata", "infer", "timestamp", "expiration_date", "async_mode",
             "app_id", *IDENTITY_KEYS} | unsupported  # app_id: refused by scope_from, naming it
    unknown = set(payload) - known
    if unsupported or unknown:
        field = sorted(unsupported or unknown)[0]
        raise _invalid(field, "not supported by this service's add (docs/mem0.md)" if field in unsupported
                       else "unknown field")
    return payload


def _checked_messages(messages: Any) -> list[dict]:
    """add()'s messages: a string (one user turn) or a list of {role, content}, each checked as the
    conversations API checks its turns; a malformed one is a 400 naming it (`messages[1].content`)."""
    if isinstance(messages, str):
        messages = [{"role": "user", "content": messages}]
    if not isinstance(messages, list) or not messages:
        raise _invalid("messages", "a non-empty list of {role, content}")
    if len(messages) > settings.CONVERSATION_MAX_MESSAGES:
        raise _invalid("messages", f"at most {settings.CONVERSATION_MAX_MESSAGES} (CONVERSATION_MAX_MESSAGES)")
    for index, message in enumerate(messages):
        if not isinstance(message, dict):
            raise _invalid(f"messages[{index}]", "an object with role and content")
        checked = MessageSerializer(data=message)
        if not checked.is_valid():
            field, errors = next(iter(checked.errors.items()))
            raise _invalid(f"messages[{index}].{field}", str(errors[0]))
    return messages


def _verbatim_specs(messages: list[dict], scope: dict, payload: dict) -> list[writing.MemorySpec]:
    metadata = payload.get("metadata") or {}
    if not isinstance(metadata, dict):
        raise _invalid("metadata", "an object")
    expires = _date(payload["expiration_date"], "expiration_date") if payload.get("expiration_date") else None
    valid_at = _date(payload["timestamp"], "timestamp") if payload.get("timestamp") is not None else None
    rows = []
    for index, message in enumerate(messages):
        if message.get("role") == "system":
            continue
        fields = {"user_id": scope["user_id"], "text": message["content"], "data": {**metadata},
                  "agent_id": scope.get("agent_id", ""), "session_id": scope.get("session_id", ""),
                  "expires_at": expires, "valid_at": valid_at}
        serializer = MemoryCreateSerializer(data={k: v for k, v in fields.items() if v is not None})
        if not serializer.is_valid():
            raise serializers.ValidationError({f"messages[{index}]": serializer.errors})
        rows.append(serializer.to_spec())
    return rows


class AddView(Mem0View):
    @extend_schema(
        operation_id="mem0_add", summary="Mem0: add messages (extracted, or verbatim with infer=false)", request=dict,
                   responses={200: dict})
    def post(self, request):
        payload = _add_options(self.body())
        scope = scope_from(payload)
        # Ids are screened where they are written; checked here first so the 400 names Mem0's field (run_id).
        writing.refuse_sensitive_identifiers({key: scope[ours] for key, ours in IDENTITY_KEYS.items() if ours in scope})
        messages = _checked_messages(payload.get("messages"))
        if payload.get("infer", True) is False:
            specs = _verbatim_specs(messages, scope, payload)
            applied = agents.memory_save_batch(tenant=request.user.tenant, specs=specs, actor=request.user.actor,
                                               role=request.user.role, api_key_id=request.user.key_id,
                                               turns=True)
            return Response({"results": [_verbatim_event(a) for a in applied]})
        conversation = ConversationSerializer(data={
            "user_id": scope["user_id"], "session_id": scope.get("session_id", DEFAULT_SESSION),
            "agent_id": scope.get("agent_id", ""), "messages": messages})
        conversation.is_valid(raise_exception=True)
        job = agents.conversation_submit(tenant=request.user.tenant, api_key=request.user.key,
                                         **conversation.validated_data)
        return Response({"results": _job_events(job), "job_id": str(job.id), "status": job.status.upper()})


def _verbatim_event(applied) -> dict:
    """One saved message as Mem0's add() reports it; one the review gate held says REVIEW (no memory id
    exists yet: the candidate's id is given instead)."""
    if applied.candidate is not None:
        return {"event": "REVIEW", "memory": applied.candidate.text, "candidate_id": str(applied.candidate.id),
                "reason": applied.reason, "data": {"memory": applied.candidate.text}}
    return {"id": str(applied.memory.id), "memory": applied.memory.text, "event": applied.operation,
            "data": {"memory": applied.memory.text}}


def _job_events(job) -> list[dict]:
    """What an extraction did, as Mem0's add() reports it: one event per memory touched."""
    events = []
    for op in job.operations or []:
        if not op.get("memory_id"):
            continue
        event = {"ADD": "ADD", "UPDATE": "UPDATE", "INVALIDATE": "DELETE", "DELETE": "DELETE"}.get(op["operation"])
        if event:
            events.append({"id": op["memory_id"], "memory": op["text"], "event": event,
                           "data": {"memory": op["text"]}})
    return events


class ListView(Mem0View):
    query_parameters = {"post": frozenset({"page", "page_size"})}

    @extend_schema(
        operation_id="mem0_list", summary="Mem0: list memories (page, page_size)", request=dict, responses={200: dict})
    def post(self, request):
        payload = self.body()
        refuse_unsupported({k for k, v in payload.items() if v is not None}, LIST_PARAMETERS, "get_all")
        scope = scope_from({k: v for k, v in payload.items() if k in ("filters", "app_id", *IDENTITY_KEYS)})
        page_number = _positive(request.query_params.get("page", payload.get("page", 1)), "page")
        size = min(_positive(request.query_params.get("page_size", payload.get("page_size", 100)), "page_size"),
                   MAX_PAGE_SIZE)
        left_out = listed_types_left_out(episodes=_asks_for_episodes(payload),
                                         traits=_asks_for(payload, "include_traits"))
        paginator = Paginator(_scoped(request.user.tenant, scope, left_out=left_out)
                              .order_by("-created_at", "-id"), size)
        try:
            page = paginator.page(page_number)
        except EmptyPage:
            rows: list = []
        else:
            rows = list(page.object_list)

        def link(number: int) -> str | None:
            if number < 1 or number > paginator.num_pages:
                return None
            return request.build_absolute_uri(f"{request.path}?page={number}&page_size={size}")

        return Response({"count": paginator.count, "next": link(page_number + 1),
                         "previous": link(page_number - 1) if rows else None,
                         "results": [mem0_memory(m) for m in rows], **_relations(request, payload, scope)})


def _positive(value: Any, field: str) -> int:
    try:
        number = int(value)
    except (TypeError, ValueError):
        raise _invalid(field, "a positive integer") from None
    if number < 1 or number > 1_000_000:
        raise _invalid(field, "a positive integer")
    return number


# What get_all and search honour in their bodies (identity keys at the top level work as in `filters`;
# app_id is refused by scope_from); anything else is a 400 naming it.
LIST_PARAMETERS = frozenset({"filters", "page", "page_size", "include_episodes", "include_traits", "app_id",
                             "enable_graph", *IDENTITY_KEYS})
SEARCH_PARAMETERS = frozenset({"query", "filters", "top_k", "limit", "threshold", "include_episodes",
                               "output_format", "app_id", "rerank", "keyword_search", "fields", "categories",
                               "reference_date", "enable_graph", *IDENTITY_KEYS})


class SearchView(Mem0View):
    @extend_schema(
        operation_id="mem0_search",
        summary="Mem0: search (filters, top_k, threshold)", request=dict, responses={200: dict})
    def post(self, request):
        payload = self.body()
        unsupported = {k for k in ("rerank", "fields", "categories", "reference_date") if payload.get(k)}
        if unsupported:
            raise _invalid(sorted(unsupported)[0], "not supported by this service's search (docs/mem0.md); "
                                                   "hybrid search with its own fusion always runs")
        refuse_unsupported({k for k, v in payload.items() if v is not None}, SEARCH_PARAMETERS, "search")
        if payload.get("output_format") not in (None, "v1.1"):
            raise _invalid("output_format", "only v1.1 (results under `results`) is answered here")
        scope = scope_from({k: v for k, v in payload.items() if k in ("filters", "app_id", *IDENTITY_KEYS)})
        fields: dict = {"user_id": scope["user_id"], "query": payload.get("query"),
                        "limit": payload.get("top_k", payload.get("limit", 10))}
        fields.update({k: scope[k] for k in ("agent_id", "session_id") if k in scope})
        if not _asks_for_episodes(payload):
            fields["memory_types"] = FACT_TYPES
        if payload.get("threshold") is not None:
            fields["min_similarity"] = payload["threshold"]
        if payload.get("keyword_search") is not None:  # Mem0's keyword search beside semantic: hybrid; off: semantic
            fields["mode"] = "hybrid" if _asks_for(payload, "keyword_search") else "semantic"
        checked = MemorySearchSerializer(data=fields)  # the same bounds as /api/v1/memories/search
        if not checked.is_valid():
            errors = dict(checked.errors)
            for ours, theirs in (("limit", "top_k"), ("min_similarity", "threshold")):
                if ours in errors:
                    errors[theirs] = errors.pop(ours)
            raise serializers.ValidationError(errors)
        start = scope.get("created_at__gte") or scope.get("created_at__gt")
        end = scope.get("created_at__lte") or scope.get("created_at__lt")
        query = replace(checked.to_query(now=timezone.now()), **({"start_time": start} if start else {}),
                        **({"end_time": end} if end else {}))
        answer = agents.search_answered(tenant=request.user.tenant, query=query)
        # `score` is relevance (0-1: the best hit 1.0, what Mem0's users threshold on); `ranking_score` is the
        # raw score the results are ordered by (fusion with recency, importance and stage: see `scores`). Beside
        # Mem0's fields (its clients pass the rest through): the words each memory holds, the total, and
        # whether the vector side failed (an answer from keywords alone, not an empty one).
        return Response({"results": [{**mem0_memory(r.memory, r.scores["relevance"]), "ranking_score": r.score,
                                      "scores": r.scores, "matched_keywords": answer.matched_keywords[str(r.memory.id)]}
                                     for r in answer.results],
                         "total_count": answer.plan.total_count, "degraded": answer.plan.degraded,
                         "degraded_reason": answer.plan.degraded_reason, **_relations(request, payload, scope)})


def _relations(request, payload: dict, scope: dict) -> dict:
    """Mem0's graph memory (`enable_graph`): the user's current relations beside the results, from the
    people the service keeps (docs/people.md); a call without a user has none."""
    if not payload.get("enable_graph"):
        return {}
    user_id = scope.get("user_id")
    return {"relations": relations_of(request.user.tenant, user_id) if user_id else []}


def _memory_id(value: str) -> str:
    try:
        return str(uuid.UUID(value))
    except ValueError:
        raise exceptions.NotFound(f"memory {value} not found") from None


def _newest(request, value: str) -> MemoryItem:
    """A Mem0 id names a memory across its versions: an edited memory's old id leads to the newest."""
    return selectors.memory_newest_version(tenant=request.user.tenant, memory_id=_memory_id(value))


# Mem0's three history events for this service's finer ones (the original is kept as `service_event`).
MEM0_EVENTS = {"ADD": "ADD", "UPDATE": "UPDATE", "SUPERSEDE": "UPDATE", "MERGE": "UPDATE", "APPROVE": "UPDATE",
               "RESTORE": "UPDATE", "STAGE_CHANGE": "UPDATE", "DELETE": "DELETE", "INVALIDATE": "DELETE",
               "ERASE": "DELETE", "REJECT": "DELETE"}


def _change(request, memory_id: str | uuid.UUID, **fields) -> governance.ClientChange:
    return governance.memory_change_by_key(tenant=request.user.tenant, memory_id=memory_id, role=request.user.role,
                                           api_key_id=request.user.key_id, actor=request.user.actor, **fields)


def _update_fields(item: dict, field: str = "body") -> dict:
    fields: dict = {}
    if item.get("text") is not None:
        fields["text"] = item["text"]
    if item.get("metadata") is not None:
        fields["data"] = item["metadata"]
    if "expiration_date" in item:
        fields["expires_at"] = _date(item["expiration_date"], "expiration_date") if item["expiration_date"] else None
    unknown = set(item) - {"text", "metadata", "expiration_date", "timestamp", "memory_id"}
    if unknown:
        raise _invalid(sorted(unknown)[0], "unknown field")
    if not fields:
        raise _invalid(field, "give text, metadata or expiration_date")
    checked = MemoryPatchSerializer(data=fields)  # the bounds of PATCH /api/v1/memories/{id}
    if not checked.is_valid():
        raise serializers.ValidationError({("metadata" if k == "data" else k): v for k, v in checked.errors.items()})
    return dict(checked.validated_data)


def _change_body(change: governance.ClientChange, message: str) -> Response:
    if change.candidate is not None:
        return Response({"message": f"held for review: {change.candidate.reason_detail}",
                         "candidate_id": str(change.candidate.id)}, status=status.HTTP_202_ACCEPTED)
    assert change.result is not None
    return Response({"message": message, **mem0_memory(change.result.memory)})


class DetailView(Mem0View):
    @extend_schema(
        operation_id="mem0_get", summary="Mem0: one memory", responses={200: dict})
    def get(self, request, memory_id):
        return Response(mem0_memory(_newest(request, memory_id)))

    @extend_schema(
        operation_id="mem0_update", summary="Mem0: update a memory (text, metadata, expiration_date)", request=dict,
                   responses={200: dict})
    def put(self, request, memory_id):
        fields = _update_fields(self.body())
        return _change_body(_change(request, _newest(request, memory_id).id, **fields),
                            "Memory updated successfully!")

    query_parameters = {"delete": frozenset({"delete_linked"})}

    @extend_schema(
        operation_id="mem0_delete", summary="Mem0: delete a memory (archived, with history)", responses={200: dict})
    def delete(self, request, memory_id):
        if request.query_params.get("delete_linked") in ("true", "True", "1"):
            raise _invalid("delete_linked", "not supported: superseded versions stay in the audit trail; "
                                            "erase the user to remove every version")
        return _change_body(_change(request, _newest(request, memory_id).id, archive=True),
                            "Memory deleted successfully!")


def _query_filters(request) -> dict:
    """delete_all's filters: plain query parameters, or `filters` as mem0ai 2.2.1 sends a dict
    (JSON, or the Python literal httpx makes of it)."""
    params: dict = {k: request.query_params.get(k) for k in (*IDENTITY_KEYS, "app_id") if k in request.query_params}
    raw = request.query_params.get("filters")
    if raw is not None:
        if len(raw) > 4000:
            raise _invalid("filters", "too long")
        if problem := too_deep(raw):  # before either parser reads it: json's C scanner raises RecursionError
            raise _invalid("filters", problem)
        try:
            params["filters"] = json.loads(raw)
        except (ValueError, RecursionError):
            try:
                params["filters"] = ast.literal_eval(raw)
            except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
                raise _invalid("filters", "a JSON object") from None
    return params


class CollectionView(Mem0View):
    query_parameters = {"delete": frozenset({"filters", "app_id", *IDENTITY_KEYS})}

    @extend_schema(
        operation_id="mem0_delete_all",
        summary="Mem0: delete all of a user's memories (an erasure: nothing of their words remains)",
                   responses={200: dict})
    def delete(self, request):
        scope = scope_from(_query_filters(request), deleting=True)
        if "session_id" in scope or any("__" in k for k in scope):
            raise _invalid("run_id", "delete_all erases a user (or one agent's part of a user); delete a run's "
                                     "memories one by one")
        return _erasure_answer(governance.user_erase_requested(
            tenant=request.user.tenant, user_id=scope["user_id"], api_key=request.user.key, actor=request.user.actor,
            agent_id=scope.get("agent_id")), "Memories deleted successfully!")


class HistoryView(Mem0View):
    @extend_schema(
        operation_id="mem0_history", summary="Mem0: a memory's history (oldest first)", responses={200: dict})
    def get(self, request, memory_id):
        newest = _newest(request, memory_id)
        rows = list(selectors.memory_history(tenant=request.user.tenant, memory_id=newest.id)[:MAX_HISTORY])
        versions = selectors.memory_versions_of_others(tenant=request.user.tenant,
                                                       memory_ids=list({row.memory_id for row in rows}))
        rows = [row for row in rows if not (row.event == "ADD" and row.memory_id in versions)]
        actor = PublicActorField()
        return Response([{
            "id": str(row.id), "memory_id": str(row.memory_id), "user_id": row.user_id,
            "event": MEM0_EVENTS.get(row.event, "UPDATE"), "service_event": row.event,
            "old_memory": row.old_text, "new_memory": row.new_text, "input": [], "metadata": row.new_data,
            "actor": actor.to_representation(row.actor), "reason": row.reason,
            "created_at": _iso(row.created_at), "updated_at": _iso(row.created_at)} for row in rows])


def _batch_items(payload: dict) -> list[dict]:
    refuse_unsupported(payload, {"memories"}, "batch")
    items = payload.get("memories")
    if not isinstance(items, list) or not items or not all(isinstance(i, dict) for i in items):
        raise _invalid("memories", "a non-empty list of objects with memory_id")
    if len(items) > settings.MEMORY_BATCH_MAX:
        raise _invalid("memories", f"at most {settings.MEMORY_BATCH_MAX} (MEMORY_BATCH_MAX)")
    for index, item in enumerate(items):
        if not isinstance(item.get("memory_id"), str):
            raise _invalid(f"memories[{index}].memory_id", "required")
    return items


class BatchView(Mem0View):
    body_methods = frozenset({"put", "delete"})

    @extend_schema(
        operation_id="mem0_batch_update",
        summary="Mem0: update many memories (all or none)", request=dict, responses={200: dict})
    def put(self, request):
        items = _batch_items(self.body())
        changes = [(_newest(request, i["memory_id"]).id, _update_fields(i, f"memories[{n}]"))
                   for n, i in enumerate(items)]
        with transaction.atomic():
            writing.memories_write_lock(request.user.tenant, [memory_id for memory_id, _ in changes])
            held = sum(_change(request, memory_id, **fields).candidate is not None for memory_id, fields in changes)
        return Response({"message": f"Successfully updated {len(changes) - held} memories",
                         "updated": len(changes) - held, "held_for_review": held})

    @extend_schema(
        operation_id="mem0_batch_delete",
        summary="Mem0: delete many memories (all or none)", request=dict, responses={200: dict})
    def delete(self, request):
        # The same memory named twice is one deletion (dict.fromkeys keeps the order, drops repeats).
        ids = list(dict.fromkeys(_newest(request, i["memory_id"]).id for i in _batch_items(self.body())))
        with transaction.atomic():
            writing.memories_write_lock(request.user.tenant, ids)
            held = sum(_change(request, memory_id, archive=True).candidate is not None for memory_id in ids)
        return Response({"message": f"Successfully deleted {len(ids) - held} memories",
                         "deleted": len(ids) - held, "held_for_review": held})


class EntitiesView(Mem0View):
    query_parameters = {"get": frozenset({"page", "page_size"})}

    @extend_schema(
        operation_id="mem0_users", summary="Mem0: the users with memories, and how many", responses={200: dict})
    def get(self, request):
        if _positive(request.query_params.get("page", 1), "query.page") != 1:
            raise _invalid("query.page", f"one page of up to {MAX_PAGE_SIZE} users is answered here")
        size = min(_positive(request.query_params.get("page_size", MAX_PAGE_SIZE), "query.page_size"), MAX_PAGE_SIZE)
        rows = selectors.users_with_memories(tenant=request.user.tenant, limit=size)
        results = [{"id": row.user_id, "name": row.user_id, "type": "user", "total_memories": row.memories,
                    "created_at": _iso(row.first_at), "updated_at": _iso(row.last_at), "owner": None,
                    "organization": None, "metadata": None} for row in rows]
        return Response({"count": len(results), "next": None, "previous": None, "results": results})


class EntityView(Mem0View):
    @extend_schema(
        operation_id="mem0_delete_user", summary="Mem0: delete a user (an erasure)", responses={200: dict})
    def delete(self, request, entity_type, name):
        if entity_type != "user":
            raise _invalid("type", f"deleting a whole {entity_type} is not supported: agents and runs are scopes "
                                   "inside a user here; delete_all(user_id=..., agent_id=...) erases an agent's part")
        return _erasure_answer(governance.user_erase_requested(
            tenant=request.user.tenant, user_id=path_identifier(name), api_key=request.user.key,
            actor=request.user.actor), "Entity deleted successfully.")


class LegacyEntityView(EntityView):
    """/v1/entities/{type}/{name}/: mem0ai's deprecated deleteUser (the JS client's) calls it; the same erasure."""

    @extend_schema(exclude=True)  # the documented route is /v2/entities/...
    def delete(self, request, entity_type, name):
        return super().delete(request, entity_type, name)


def _erasure_answer(answer, done: str) -> Response:
    """Mem0's delete answers: the message and counts; when a reviewer must erase the rest, 202 and the
    candidate waiting for them."""
    if answer.candidate is None:
        return Response({"message": done, "erased": answer.result.counts})
    return Response({"message": "Erased what this key saved; the rest waits for a reviewer's approval.",
                     "erased": answer.result.counts, "candidate_id": str(answer.candidate.id)},
                    status=202)


class UnsupportedView(APIView):
    """Mem0 features this service does not have: a 501 naming it (after the key is checked)."""

    authentication_classes = [Mem0TokenAuthentication]
    feature = "this Mem0 endpoint"

    @extend_schema(exclude=True)  # not part of this API: they answer only so that Mem0's clients get a clear error
    def _answer(self, request, *args, **kwargs):
        return _not_supported(self.feature)

    get = post = put = patch = delete = _answer
