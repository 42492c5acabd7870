"""Reads around a search: the winners' full rows, their sources, scope listings and the trait lines."""

from __future__ import annotations

import threading
import time

from django.db.models import QuerySet
from django.utils import timezone

from memories import vocabulary
from memories.memory_rows import memory_rows
from memories.models import CURRENT_STATUSES, MemoryItem, Tenant
from memories.process_state import forgotten_on_reset
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


# Where a key fact's slot is read from: the extractor's slot (data.slot), else a slot rule's key (data.key).
PROFILE_FACT_SLOT_SQL = f"coalesce(m.data ->> '{vocabulary.SLOT_KEY}', m.data ->> 'key')"


def profile_candidates(tenant: Tenant, q: SearchQuery, slots: tuple[str, ...], limit: int) -> list[MemoryItem]:
    """The newest searchable memories in q's scope that a profile may show: standing wishes (Tag.WISH) and
    facts whose slot is one of `slots`; episodes never (they are turns, not statements). One statement (the
    ids, then their rows, had been two round trips on every /context)."""
    where, params = item_filters(tenant, q, timezone.now())
    found = memory_rows(f"id IN (SELECT m.id FROM memory_items m WHERE {where} AND NOT (m.tags && %s::varchar[]) "
                        f"AND (m.tags && %s::varchar[] OR {PROFILE_FACT_SLOT_SQL} = ANY(%s)) "
                        "ORDER BY m.created_at DESC, m.id LIMIT %s)",
                        [*params, [vocabulary.Tag.EPISODE], [vocabulary.Tag.WISH], list(slots), limit])
    return sorted(sorted(found, key=lambda m: str(m.id)), key=lambda m: m.created_at, reverse=True)


# The user's own name as query terms, per process: (tenant id, user id) -> (terms, until; monotonic).
_OWN_NAME_SECONDS = 60.0
_own_names: dict[tuple[int, str], tuple[tuple[str, ...], float]] = {}
_own_names_lock = threading.Lock()
forgotten_on_reset(_own_names.clear)


# The literal key matches the partial index memory_profile_name (migration 0023), whatever the plan.
_PROFILE_NAME_SQL = f"""SELECT CASE WHEN jsonb_typeof(m.data -> 'value') = 'string' THEN m.data ->> 'value' END AS name
FROM memory_items m
WHERE m.tenant_id = %s AND m.user_id = %s AND m.data -> 'key' = '"name"'::jsonb AND {vocabulary.sql_not_replaced("m")}
  AND {vocabulary.sql_status_in(CURRENT_STATUSES, "m")}
ORDER BY m.created_at DESC LIMIT 1"""


def profile_name(tenant_id: int, user_id: str) -> str | None:
    """The name the user's profile holds: the newest current fact with data key "name" (its value is kept
    in lower case). Extraction calls the speaker by it, /context heads its block with it; search leaves it
    out of the keyword side. One statement by hand: through the ORM it cost 0.9 ms a /context."""
    with db().cursor() as cursor:
        cursor.execute(_PROFILE_NAME_SQL, [tenant_id, user_id])
        rows = named(cursor)
    value = rows[0]["name"] if rows else None
    return value.strip() if isinstance(value, str) and value.strip() else None


def profile_display_name(tenant_id: int, user_id: str) -> str | None:
    """The profile's name as a person writes it ("maria" is kept in lower case: "Maria"): what extraction
    calls the speaker and what the context block is headed with (read fresh: an erased or renamed user's
    old name is never shown)."""
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
