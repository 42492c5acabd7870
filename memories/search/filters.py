"""Which memories a search may see: the scope rules, in SQL and in the ORM, and the connection it reads from."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.db import connections
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models import Q

from memories import vocabulary
from memories.models import MemoryStatus, Tenant
from memories.replicas import read_alias
from memories.search.query import SearchQuery


def db() -> BaseDatabaseWrapper:
    """The connection this block reads from: the replica inside memories.replicas.on_replica, else the primary."""
    return connections[read_alias()]


def item_filters(tenant: Tenant, q: SearchQuery, now: datetime) -> tuple[str, list[Any]]:
    """SQL conditions on memory_items (alias m) shared by both retrievers."""
    clauses = ["m.tenant_id = %s"]
    params: list[Any] = [tenant.id]
    if q.user_id is not None:
        clauses.append("m.user_id = %s")
        params.append(q.user_id)
    if q.as_of is not None:
        # Bitemporal: recorded by then and not yet replaced, and true in the world then.
        # An archived row counts only if it was archived after that moment.
        clauses.append(
            "m.created_at <= %s AND (m.expired_at IS NULL OR m.expired_at > %s)"
            " AND (m.valid_at IS NULL OR m.valid_at <= %s) AND (m.invalid_at IS NULL OR m.invalid_at > %s)"
            f" AND (m.status = '{MemoryStatus.ACTIVE}'"
            f" OR (m.status = '{MemoryStatus.ARCHIVED}' AND m.archived_at > %s))"
        )
        params += [q.as_of] * 5
    else:
        clauses.append(vocabulary.sql_searchable("m"))
        params.append(now)
    scope, scope_params = scope_clauses(q)
    clauses += scope
    params += scope_params
    if q.memory_types:
        clauses.append("m.memory_type = ANY(%s)")
        params.append(list(q.memory_types))
    if q.tags:
        clauses.append("m.tags && %s::varchar[]")
        params.append(list(q.tags))
    if q.person_id is not None:
        clauses.append("(m.subject_entity_id = %s OR m.object_entity_id = %s)")
        params += [q.person_id, q.person_id]
    if q.start_time is not None:
        clauses.append("COALESCE(m.valid_at, m.created_at) >= %s")
        params.append(q.start_time)
    if q.end_time is not None:
        clauses.append("COALESCE(m.valid_at, m.created_at) <= %s")
        params.append(q.end_time)
    return " AND ".join(clauses), params


def scope_clauses(q: SearchQuery) -> tuple[list[str], list[Any]]:
    """The scope rules, in SQL (see scope_filter for the same in the ORM):
    agent_id  the agent's memories and those saved with no agent;
    session_id that session's memories only (Mem0's run);
    group_id  with a user: the user's memories in that group and those saved
              outside any group; without a user: every memory of the group."""
    clauses, params = [], []
    if q.agent_id is not None:
        clauses.append("m.agent_id IN (%s, '')")
        params.append(q.agent_id)
    if q.session_id is not None:
        clauses.append("m.session_id = %s")
        params.append(q.session_id)
    if q.group_id is not None:
        clauses.append("m.group_id IN (%s, '')" if q.user_id is not None else "m.group_id = %s")
        params.append(q.group_id)
    return clauses, params


def scope_filter(*, user_id: str | None, agent_id: str | None = None, session_id: str | None = None,
                 group_id: str | None = None) -> Q:
    """The ORM form of scope_clauses (lists, exports, the context's extra sections)."""
    condition = Q(user_id=user_id) if user_id is not None else Q()
    if agent_id is not None:
        condition &= Q(agent_id__in=[agent_id, ""])
    if session_id is not None:
        condition &= Q(session_id=session_id)
    if group_id is not None:
        condition &= Q(group_id__in=[group_id, ""]) if user_id is not None else Q(group_id=group_id)
    return condition
