"""What a /context block reads about its user before the search answers, in one statement.

Before, a block read the profile's name, the people, the profile's candidates, the traits and working
memory in five statements (then working memory's rows in a sixth and seventh); now one statement answers:

- the name the profile holds (search.reads' _PROFILE_NAME_SQL, the same partial index);
- whether the user has anyone in their life (graph_nodes) and any trait at all: the People section's
  and the traits' own reads run only when there is something to read (most users have neither);
- the profile's candidates (search.reads.profile_candidates' condition), as full rows;
- working memory (seed 003), as full rows, newest first: what the store holds (the database store's
  entries, or the ids a caller read from Redis) and the user's own saves of the last WORKING_MEMORY_TTL,
  whichever door they came through (a save, a batch, Mem0's add, MCP, a conversation): every save enters
  working memory without a second write per save. Seed 003's inbound filter applies to all of them;
- the length of the user's short lines (the lower quartile of their newest memories' lengths): the block
  asks the search for as many lines as lines of that length fill it (`memory_lines_from`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.db import connections

from memories import vocabulary
from memories.memory_rows import memories_from_rows, memory_columns
from memories.models import CURRENT_STATUSES, MemoryItem, MemoryType, PersonKind, PersonStatus, Tenant
from memories.replicas import read_alias
from memories.search.filters import item_filters
from memories.search.query import SearchQuery

# The newest memories whose lengths say how long the user's lines are.
LINE_SAMPLE = 200
# The share of the sample at or below the length the block counts its lines by (the lower quartile: a block
# of mostly long lines still has room for its short ones).
LINE_QUANTILE = 0.25

_NAME_SQL = f"""(SELECT CASE WHEN jsonb_typeof(n.data -> 'value') = 'string' THEN n.data ->> 'value' END
    FROM memory_items n WHERE n.tenant_id = %s AND n.user_id = %s AND n.data -> 'key' = '"name"'::jsonb
      AND {vocabulary.sql_not_replaced("n")} AND {vocabulary.sql_status_in(CURRENT_STATUSES, "n")}
    ORDER BY n.created_at DESC LIMIT 1)"""
_PEOPLE_SQL = (f"EXISTS (SELECT 1 FROM graph_nodes p WHERE p.tenant_id = %s AND p.user_id = %s "
               f"AND p.status = '{PersonStatus.ACTIVE}' AND p.kind <> '{PersonKind.USER}')")
_TRAITS_SQL = (f"EXISTS (SELECT 1 FROM memory_items t WHERE t.tenant_id = %s AND t.user_id = %s "
               f"AND t.memory_type = '{MemoryType.TRAIT}')")
_SHORT_LINE_SQL = """(SELECT percentile_cont(%s) WITHIN GROUP (ORDER BY least(char_length(l.text), %s))
    FROM (SELECT text FROM memory_items WHERE tenant_id = %s AND user_id = %s
          ORDER BY created_at DESC LIMIT %s) AS l)"""
_SLOT_SQL = f"coalesce(m.data ->> '{vocabulary.SLOT_KEY}', m.data ->> 'key')"


@dataclass
class UserReads:
    """What one statement told the block about its user."""

    name: str | None = None
    has_people: bool = False
    has_traits: bool = False
    short_line: float | None = None  # characters; None without memories
    profile: list[MemoryItem] = field(default_factory=list)  # newest first
    working: list[MemoryItem] = field(default_factory=list)  # newest first


@dataclass(frozen=True)
class WorkingAsk:
    """Which working memory the statement reads: the database store's entries (`entries`), ids a caller
    read from Redis (`held`, with when each was pushed), and the user's saves since `since`; at most
    `limit`, in `scope`, passing seed 003's inbound filter."""

    scope: SearchQuery
    limit: int
    since: datetime
    entries: bool
    held: tuple[tuple[str, datetime], ...] = ()
    min_confidence: float = 0.8
    min_chars: int = 6
    recent_saves: int = 50


def user_reads(tenant: Tenant, user_id: str, *, profile_scope: SearchQuery, slots: tuple[str, ...],
               profile_limit: int, working: WorkingAsk | None, line_max: int, now: datetime) -> UserReads:
    """One round trip: see the module docstring. `working` None: no working memory is read."""
    picked, picked_params = _picked_sql(tenant, profile_scope, slots, profile_limit, working, now)
    sql = (f"WITH {picked} SELECT {_NAME_SQL} AS name, {_PEOPLE_SQL} AS has_people, {_TRAITS_SQL} AS has_traits, "
           f"{_SHORT_LINE_SQL} AS short_line, picked.part, {memory_columns('memory_items')} "
           "FROM (SELECT 1) AS one LEFT JOIN (picked JOIN memory_items ON memory_items.id = picked.pid) ON true "
           "ORDER BY picked.part, picked.place")
    params = [*picked_params, tenant.id, user_id, tenant.id, user_id, tenant.id, user_id,
              LINE_QUANTILE, line_max, tenant.id, user_id, LINE_SAMPLE]
    alias = read_alias()
    with connections[alias].cursor() as cursor:
        cursor.execute(sql, params)
        rows = cursor.fetchall()
    first = rows[0]
    name = first[0].strip() if isinstance(first[0], str) and first[0].strip() else None
    reads = UserReads(name=name.title() if name and name.isascii() else name, has_people=bool(first[1]),
                      has_traits=bool(first[2]), short_line=float(first[3]) if first[3] is not None else None)
    held = [row for row in rows if row[4] is not None]
    for part, item in zip((row[4] for row in held), memories_from_rows(alias, [row[5:] for row in held]),
                          strict=True):
        (reads.profile if part == "profile" else reads.working).append(item)
    return reads


def _picked_sql(tenant: Tenant, profile_scope: SearchQuery, slots: tuple[str, ...], profile_limit: int,
                working: WorkingAsk | None, now: datetime) -> tuple[str, list]:
    """The CTEs that pick the profile's and working memory's ids (`picked`: part, pid, place)."""
    where, params = item_filters(tenant, profile_scope, now)
    sql = (f"profile AS (SELECT m.id, row_number() OVER (ORDER BY m.created_at DESC, m.id) AS place "
           f"FROM memory_items m WHERE {where} AND NOT (m.tags && %s::varchar[]) "
           f"AND (m.tags && %s::varchar[] OR {_SLOT_SQL} = ANY(%s)) ORDER BY m.created_at DESC, m.id LIMIT %s)")
    params += [[vocabulary.Tag.EPISODE], [vocabulary.Tag.WISH], list(slots), profile_limit]
    if working is None:
        return sql + ", picked AS (SELECT 'profile' AS part, id AS pid, place FROM profile)", params
    scope_where, scope_params = item_filters(tenant, working.scope, now)
    held_ids = [memory_id for memory_id, _ in working.held]
    held_at = [at for _, at in working.held]
    sql += (", held AS (SELECT e.item_id AS id, e.pushed_at AS at FROM memory_working_entries e"
            " WHERE %s AND e.tenant_id = %s AND e.user_id = %s AND e.expires_at > %s"
            " UNION ALL SELECT r.id, r.at FROM unnest(%s::uuid[], %s::timestamptz[]) AS r(id, at)"
            " UNION ALL (SELECT s.id, s.created_at FROM memory_items s WHERE s.tenant_id = %s AND s.user_id = %s"
            " AND s.created_at > %s ORDER BY s.created_at DESC LIMIT %s)),"
            " fresh AS (SELECT m.id, row_number() OVER (ORDER BY max(held.at) DESC, m.id) AS place"
            f" FROM held JOIN memory_items m ON m.id = held.id WHERE {scope_where}"
            " AND NOT (m.tags && %s::varchar[]) AND m.memory_type <> %s AND m.confidence >= %s"
            " AND char_length(btrim(m.text)) >= %s GROUP BY m.id ORDER BY max(held.at) DESC, m.id LIMIT %s),"
            " picked AS (SELECT 'profile' AS part, id AS pid, place FROM profile"
            " UNION ALL SELECT 'working', id, place FROM fresh)")
    params += [working.entries, tenant.id, working.scope.user_id, now, held_ids, held_at,
               tenant.id, working.scope.user_id, working.since, working.recent_saves,
               *scope_params, [vocabulary.Tag.EPISODE], MemoryType.TRAIT, working.min_confidence,
               working.min_chars, working.limit]
    return sql, params


def working_since(now: datetime, ttl_seconds: int) -> datetime:
    """The oldest save working memory still holds: a day (WORKING_MEMORY_TTL) before now."""
    return now - timedelta(seconds=ttl_seconds)


def memory_lines_from(max_chars: int, short_line: float | None, *, floor: int, per_line: int, ceiling: int,
                      line_chars: int) -> int:
    """How many memory lines a block of max_chars may hold, by the user's own lines: as many as lines of the
    user's short-line length (plus a line's date and dash, `line_chars`) fill, never fewer than `floor`, never
    more than `ceiling`, and never more than the count by `per_line` (CONTEXT_CHARS_PER_MEMORY, the block's
    count before it knew the user). A user with no memories yet: the count by `per_line`."""
    by_setting = max(floor, min(ceiling, max_chars // max(per_line, 1)))
    if short_line is None:
        return by_setting
    return max(floor, min(by_setting, int(max_chars // max(short_line + line_chars, 1.0))))
