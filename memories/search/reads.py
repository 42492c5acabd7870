"""Reads around a search: the winners' full rows, their sources, scope listings and the trait lines."""

from __future__ import annotations

import threading
import time
from typing import NamedTuple

from django.db.models import Case, IntegerField, QuerySet, Value, When
from django.utils import timezone

from memories import vocabulary
from memories.memory_rows import memory_rows
from memories.models import MemoryItem, MemoryType, Tenant
from memories.replicas import read_alias
from memories.search.filters import db, item_filters, scope_filter
from memories.search.query import SearchQuery
from memories.search.rows import named
from memories.text import query_tokens


def memories_by_id(ids: list[str]) -> list[MemoryItem]:
    """The winners' full rows (memories.memory_rows: without the ORM's query compiler,
    about 0.5 ms of a 4 ms search), each with its sources (`loaded_sources`) so that an
    answer needs no second query for them."""
    if not ids:
        return []
    return memory_rows("id = ANY(%s::uuid[])", [ids], with_sources=True)


def texts_of(ids: list[str]) -> dict[str, str]:
    """memory id -> text, for the candidates a rule needs to read (search.temporal)."""
    if not ids:
        return {}
    with db().cursor() as cursor:
        cursor.execute("SELECT id, text FROM memory_items WHERE id = ANY(%s::uuid[])", [ids])
        return {str(row["id"]): row["text"] for row in named(cursor)}


def trait_stages(ids: list[str]) -> dict[str, tuple[str, float]]:
    """memory id -> (stage, decayed confidence) for trait memories."""
    if not ids:
        return {}
    # Through the trait's reverse relation: search (memories) does not import traits.
    return {str(k): (stage, decayed) for k, stage, decayed in
            MemoryItem.objects.filter(id__in=list(ids), trait__isnull=False)
            .values_list("id", "trait__stage", "trait__decayed_confidence")}


def jobs_of(memory_ids: list[str]) -> dict[str, set[str]]:
    """The conversation jobs each memory came from (its sources)."""
    out: dict[str, set[str]] = {}
    if not memory_ids:
        return out
    with db().cursor() as cursor:
        cursor.execute("SELECT item_id, job_id FROM memory_sources WHERE item_id = ANY(%s::uuid[]) AND job_id <> ''",
                       [memory_ids])
        for row in named(cursor):
            out.setdefault(str(row["item_id"]), set()).add(row["job_id"])
    return out


def listed_in_scope(tenant: Tenant, *, user_id: str, agent_id: str | None = None,
                    session_id: str | None = None) -> QuerySet[MemoryItem]:
    """A user's searchable memories in a scope, as a queryset to page through (Mem0's get_all, MCP's list)."""
    return (MemoryItem.objects.filter(tenant=tenant).filter(vocabulary.is_searchable(timezone.now()))
            .filter(scope_filter(user_id=user_id, agent_id=agent_id, session_id=session_id)))


def searchable_in_scope(tenant: Tenant, q: SearchQuery, ids: list[str]) -> list[str]:
    """Which of these memories a search with q's scope and filters may return now (the query text is unused)."""
    if not ids:
        return []
    where, params = item_filters(tenant, q, timezone.now())
    with db().cursor() as cursor:
        cursor.execute(f"SELECT m.id FROM memory_items m WHERE {where} AND m.id = ANY(%s::uuid[])", [*params, ids])
        allowed = {str(r["id"]) for r in named(cursor)}
    return [i for i in ids if i in allowed]


def newest_in_scope(tenant: Tenant, q: SearchQuery, limit: int) -> list[MemoryItem]:
    """The newest searchable memories in q's scope and filters (the query text is unused)."""
    where, params = item_filters(tenant, q, timezone.now())
    with db().cursor() as cursor:
        cursor.execute(f"SELECT m.id FROM memory_items m WHERE {where} ORDER BY m.created_at DESC, m.id LIMIT %s",
                       [*params, limit])
        ids = [str(r["id"]) for r in named(cursor)]
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
    subtype in `order`, then most confident. Through the trait's reverse
    relation: memories does not import the traits app, and names no table of it."""
    subtype_rank = Case(*(When(trait__subtype=subtype, then=Value(rank)) for rank, subtype in enumerate(order)),
                        default=Value(99), output_field=IntegerField())
    rows = (MemoryItem.objects.using(read_alias())
            .filter(vocabulary.is_searchable(timezone.now()), tenant=tenant, user_id=user_id,
                    memory_type=MemoryType.TRAIT, trait__stage__in=list(stages),
                    trait__decayed_confidence__gt=min_confidence)
            .annotate(subtype_rank=subtype_rank).order_by("subtype_rank", "-trait__decayed_confidence", "id")
            .values_list("id", "text", "trait__subtype", "trait__stage", "trait__decayed_confidence")[:limit])
    return [TraitLineRow(id=str(memory_id), text=text, subtype=subtype, stage=stage, decayed_confidence=decayed)
            for memory_id, text, subtype, stage, decayed in rows]


# The user's own name as query terms, per process: (tenant id, user id) -> (terms, until; monotonic).
_OWN_NAME_SECONDS = 60.0
_own_names: dict[tuple[int, str], tuple[tuple[str, ...], float]] = {}
_own_names_lock = threading.Lock()


def profile_name(tenant_id: int, user_id: str) -> str | None:
    """The name the user's profile holds: the newest current fact with data key "name" (its value is kept
    in lower case). Extraction calls the speaker by it; search leaves it out of the keyword side."""
    value = (MemoryItem.objects.using(read_alias()).filter(vocabulary.is_current(), tenant_id=tenant_id,
                                                            user_id=user_id, data__key="name")
             .order_by("-created_at").values_list("data__value", flat=True).first())
    return value.strip() if isinstance(value, str) and value.strip() else None


def profile_display_name(tenant_id: int, user_id: str) -> str | None:
    """The profile's name as a person writes it ("maria" is kept in lower case: "Maria"): what extraction
    calls the speaker and what the context block is headed with."""
    name = profile_name(tenant_id, user_id)
    return name.title() if name and name.isascii() else name


def own_name_terms(tenant_id: int, user_id: str) -> tuple[str, ...]:
    """The terms of the user's profile name, remembered for a minute: the keyword side leaves them out
    of a question about the user."""
    key = (tenant_id, user_id)
    with _own_names_lock:
        found = _own_names.get(key)
    if found is not None and found[1] > time.monotonic():
        return found[0]
    name = profile_name(tenant_id, user_id)
    terms = tuple(query_tokens(name)) if name else ()
    with _own_names_lock:
        if len(_own_names) > 50_000:
            _own_names.clear()
        _own_names[key] = (terms, time.monotonic() + _OWN_NAME_SECONDS)
    return terms
