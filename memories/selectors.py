"""Reads that are not search: one memory, a user's list, a memory's history."""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from datetime import date, datetime, timedelta
from typing import Any, NamedTuple

from django.db import connection
from django.db.models import Count, F, Func, IntegerField, Max, Min, QuerySet, Sum
from django.db.models.functions import TruncDate
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from memories import vocabulary
from memories.errors import MemoryNotFound, get_or_not_found
from memories.memory_rows import memory_of_tenant
from memories.models import (
    Candidate,
    CandidateStatus,
    ConversationJob,
    HistoryEvent,
    MemoryHistory,
    MemoryItem,
    MemorySource,
    MemoryStatus,
    Tenant,
)
from memories.text import humanised_duration


class UserMemoriesRow(NamedTuple):
    user_id: str
    memories: int
    first_at: datetime
    last_at: datetime


def users_with_memories(*, tenant: Tenant, limit: int) -> list[UserMemoriesRow]:
    """The tenant's users that have current memories, most recently active first, with counts."""
    rows = (MemoryItem.objects.filter(tenant=tenant).filter(vocabulary.is_current()).values("user_id")
            .annotate(memories=Count("id"), first_at=Min("created_at"), last_at=Max("created_at"))
            .order_by("-last_at")[:limit])
    return [UserMemoriesRow(r["user_id"], r["memories"], r["first_at"], r["last_at"]) for r in rows]


class OperationalCounts(NamedTuple):
    """The operational state: /metrics reads it (all tenants) at each scrape, the dashboard per tenant."""

    embedding_pending: int
    embedding_failed: int
    review_pending: int
    review_oldest_age_seconds: float
    jobs_failed: int
    jobs_waiting: int


def operational_counts(now: datetime, tenant: Tenant | None = None) -> OperationalCounts:
    """tenant None: every tenant."""
    scope = {"tenant": tenant} if tenant else {}
    embeddings = dict(MemoryItem.objects.filter(vocabulary.is_embeddable(), embedding_state__in=["pending", "failed"],
                                                **scope)
                      .values_list("embedding_state").annotate(n=Count("id")).values_list("embedding_state", "n"))
    review = Candidate.objects.filter(status=CandidateStatus.PENDING, **scope).aggregate(n=Count("id"),
                                                                                          oldest=Min("created_at"))
    jobs = dict(ConversationJob.objects.filter(status__in=["failed", *vocabulary.PENDING_JOB_STATUSES], **scope)
                .values_list("status").annotate(n=Count("id")).values_list("status", "n"))
    return OperationalCounts(
        embedding_pending=embeddings.get("pending", 0), embedding_failed=embeddings.get("failed", 0),
        review_pending=review["n"], review_oldest_age_seconds=(now - review["oldest"]).total_seconds()
        if review["oldest"] else 0.0,
        jobs_failed=jobs.get("failed", 0), jobs_waiting=sum(n for status, n in jobs.items() if status != "failed"))


def memory_list(*, tenant: Tenant) -> QuerySet[MemoryItem]:
    return MemoryItem.objects.filter(tenant=tenant)


def memory_sources(memory_ids: list) -> dict[str, list[dict]]:
    """Where each memory came from (session, message indices, job), oldest first; one query."""
    out: dict[str, list[dict]] = {str(i): [] for i in memory_ids}
    rows = (MemorySource.objects.filter(item_id__in=list(memory_ids)).order_by("created_at", "id")
            .values_list("item_id", "session_id", "message_indices", "job_id"))
    for item_id, session_id, indices, job_id in rows:
        out[str(item_id)].append({"session_id": session_id, "message_indices": list(indices), "job_id": job_id})
    return out


def memory_get(*, tenant: Tenant, memory_id: uuid.UUID | str) -> MemoryItem:
    """A tenant's memory; another tenant's id is indistinguishable from a missing one (read
    without the ORM's compiler: the one query of a read by id)."""
    memory = memory_of_tenant(tenant.id, memory_id)
    if memory is None:
        raise MemoryNotFound(f"memory {memory_id} not found")
    return memory


def memory_newest_version(*, tenant: Tenant, memory_id: uuid.UUID | str, max_hops: int = 1000) -> MemoryItem:
    """The memory a (possibly superseded) id leads to now: Mem0's clients keep one id across edits."""
    memory = memory_get(tenant=tenant, memory_id=memory_id)
    for _ in range(max_hops):
        if memory.superseded_by_id is None:
            break
        memory = memory_get(tenant=tenant, memory_id=memory.superseded_by_id)
    return memory


def memory_lineage_ids(memory: MemoryItem) -> list[uuid.UUID]:
    """The memory and every earlier version or merged original that led to it."""
    seen = {memory.id}
    frontier = [memory.id]
    while frontier:
        earlier = list(
            MemoryItem.objects.filter(tenant_id=memory.tenant_id, superseded_by_id__in=frontier)
            .exclude(id__in=seen)
            .values_list("id", flat=True)
        )
        seen.update(earlier)
        frontier = earlier
    return list(seen)


def memory_history(*, tenant: Tenant, memory_id: uuid.UUID | str) -> QuerySet[MemoryHistory]:
    memory = memory_get(tenant=tenant, memory_id=memory_id)
    return MemoryHistory.objects.filter(tenant=tenant, memory_id__in=memory_lineage_ids(memory)).order_by(
        "created_at", "id"
    )


def memory_versions_of_others(*, tenant: Tenant, memory_ids: list) -> set[uuid.UUID]:
    """Which of these memories are new versions (or merges) of others: their ADD repeats a SUPERSEDE or MERGE."""
    return set(MemoryItem.objects.filter(tenant=tenant, superseded_by_id__in=memory_ids)
               .values_list("superseded_by_id", flat=True).distinct())


def job_get(*, tenant: Tenant, job_id: uuid.UUID | str) -> ConversationJob:
    return get_or_not_found(ConversationJob.objects.filter(tenant=tenant), "job", id=job_id)


def _per_day(queryset, field: str, days: list) -> list[tuple]:

    counted = dict(queryset.annotate(day=TruncDate(field)).values("day").annotate(n=Count("id"))
                   .values_list("day", "n"))
    return [(day, counted.get(day, 0)) for day in days]


class QueueDay(NamedTuple):
    day: date
    pending: int  # candidates waiting at the end of the day
    oldest_age_hours: float  # how long the oldest of them had waited by then


def review_queue_by_day(*, tenant_id: int | None, days: int) -> list[QueueDay]:
    """The review queue's size and oldest age at the end of each of the last `days` days (one statement)."""
    with connection.cursor() as cursor:
        cursor.execute("""
            WITH ends AS (
                SELECT d::date AS day, d + interval '1 day' AS day_end
                FROM generate_series(date_trunc('day', now()) - (%s - 1) * interval '1 day',
                                     date_trunc('day', now()), interval '1 day') AS d)
            SELECT e.day, count(c.id),
                   coalesce(extract(epoch FROM max(least(e.day_end, now()) - c.created_at)) / 3600, 0)
            FROM ends e
            LEFT JOIN review_candidates c ON c.created_at < e.day_end
                 AND (c.resolved_at IS NULL OR c.resolved_at >= e.day_end)
                 AND (%s::bigint IS NULL OR c.tenant_id = %s::bigint)
            GROUP BY e.day ORDER BY e.day""", [days, tenant_id, tenant_id])
        return [QueueDay(row[0], int(row[1]), float(row[2])) for row in cursor.fetchall()]


class OperationCount(NamedTuple):
    kind: str
    operations: int


def extraction_operations(*, tenant_id: int | None, since: datetime) -> list[OperationCount]:
    """What extraction did since a moment, by kind (ADD, NOOP, UPDATE, ...): the jobs' counts added up."""
    with connection.cursor() as cursor:
        cursor.execute("""
            SELECT kv.key, sum(kv.value::bigint)
            FROM conversation_jobs j, jsonb_each_text(j.counts) AS kv
            WHERE j.created_at >= %s AND (%s::bigint IS NULL OR j.tenant_id = %s::bigint)
              AND kv.value ~ '^[0-9]+$'
            GROUP BY kv.key ORDER BY sum(kv.value::bigint) DESC, kv.key""", [since, tenant_id, tenant_id])
        return [OperationCount(row[0], int(row[1])) for row in cursor.fetchall()]


def dashboard_stats(*, tenant: Tenant | None) -> dict:
    """Counts for the admin dashboard; tenant None means all tenants."""


    scope = {"tenant": tenant} if tenant else {}
    items = MemoryItem.objects.filter(**scope)
    now = timezone.now()
    since = (now - timedelta(days=29)).replace(hour=0, minute=0, second=0, microsecond=0)
    days = [(since + timedelta(days=i)).date() for i in range(30)]
    state = operational_counts(now, tenant)
    return {
        "tenant": tenant.name if tenant else "",
        "by_status": [{"label": r["status"], "count": r["n"]}
                      for r in items.values("status").annotate(n=Count("id")).order_by("status")],
        "by_type": [{"label": r["memory_type"], "count": r["n"]} for r in
                    items.filter(vocabulary.is_latest_version()).values("memory_type").annotate(n=Count("id"))
                    .order_by("memory_type")],
        "archived_per_day": _per_day(items.filter(archived_at__gte=since), "archived_at", days),
        "queue_by_day": review_queue_by_day(tenant_id=tenant.id if tenant else None, days=30),
        "extraction_ops": extraction_operations(tenant_id=tenant.id if tenant else None, since=since),
        "embedding_backlog": {"pending": state.embedding_pending, "failed": state.embedding_failed},
        "failed_jobs": state.jobs_failed,
        "pending": state.review_pending,
        "oldest_age": humanised_duration(state.review_oldest_age_seconds) if state.review_pending else None,
        "per_day": _per_day(items.filter(created_at__gte=since), "created_at", days),
        "traits": [{"label": r["stage"], "count": r["n"]} for r in
                   items.filter(trait__isnull=False).values(stage=F("trait__stage")).annotate(n=Count("id"))
                   .order_by("stage")],
    }


# --------------------------------------------------------------------------- what a memory's page leads with


class MemoryStanding(NamedTuple):
    """Whether a memory holds, said once for the admin's memory page."""

    state: str  # "current" | "superseded" | "invalidated" | "archived" | "rejected" | "pending" | "expired"
    since: datetime | None
    replaced_by: uuid.UUID | None  # the newer version, or the memory that contradicted it


def memory_standing(memory: MemoryItem) -> MemoryStanding:
    """Superseded and invalidated memories keep status 'active' (they held until then); what a reviewer
    needs first is whether the memory still holds, and what replaced it."""
    if memory.superseded_by_id:
        return MemoryStanding("superseded", memory.expired_at, memory.superseded_by_id)
    if memory.invalid_at is not None:
        row = (MemoryHistory.objects.filter(memory_id=memory.id, event=HistoryEvent.INVALIDATE)
               .order_by("-created_at").values_list("new_data", flat=True).first())
        replaced = (row or {}).get("contradicted_by")
        return MemoryStanding("invalidated", memory.invalid_at, uuid.UUID(replaced) if replaced else None)
    if memory.status == MemoryStatus.ARCHIVED:
        return MemoryStanding("archived", memory.archived_at, None)
    if memory.status in (MemoryStatus.REJECTED, MemoryStatus.PENDING):
        return MemoryStanding(memory.status, memory.updated_at, None)
    if memory.expired_at is not None:
        return MemoryStanding("expired", memory.expired_at, None)
    return MemoryStanding("current", None, None)


def candidates_against(memory: MemoryItem) -> QuerySet[Candidate]:
    """Review candidates waiting to change this memory (an update, a contradiction, an archive)."""
    return Candidate.objects.filter(tenant_id=memory.tenant_id, target_id=memory.id,
                                    status=CandidateStatus.PENDING).order_by("created_at")


class Produced(NamedTuple):
    """What one operation of a conversation job made, shown beside the turn it came from."""

    operation: str  # ADD, UPDATE, INVALIDATE, DELETE, REVIEW as the job recorded it; "kept" when only cited
    text: str
    link: str  # "memory:<id>" | "candidate:<id>" | ""
    note: str = ""  # a candidate's status now


class TurnOutcome(NamedTuple):
    """One turn of a conversation job and what extraction made of it."""

    turn: int
    speaker: str
    content: str
    produced: list[Produced]


class JobReading(NamedTuple):
    """A conversation job as a reviewer reads it: each turn once with what it produced; the episodes
    the turns were kept in, once for the whole job; operations that name no turn, after."""

    turns: list[TurnOutcome]
    episodes: list[Produced]
    unplaced: list[Produced]


def _key(operation: dict[str, Any]) -> str:
    return str(operation.get("candidate_id") or operation.get("memory_id") or "")


def operations_by_turn(operations: Sequence[dict[str, Any]],
                       sources: Mapping[str, Sequence[int]]) -> tuple[dict[int, list[int]], list[int]]:
    """Where each of a job's operations is shown (positions in `operations`): against the turns it
    recorded (`turns`, recorded since issue 56); for an older job, against the turns its memory or
    candidate was read from (`sources`, by id), an INVALIDATE against those of the write after it (what
    retired the memory, not where the memory was said). A DELETE of an older job names no turn (the
    request's turn was not kept, and the forgotten memory's turn is where it was said), nor does an
    operation whose memory cites none: those are listed after the conversation."""
    by_turn: dict[int, list[int]] = {}
    unplaced: list[int] = []
    for position, operation in enumerate(operations):
        turns = operation.get("turns")
        if turns is None:
            following = operations[position + 1] if position + 1 < len(operations) else {}
            turns = ([] if operation.get("operation") == "DELETE"
                     else sources.get(_key(following), []) if operation.get("operation") == "INVALIDATE"
                     else sources.get(_key(operation), []))
        for turn in sorted(set(turns)):
            by_turn.setdefault(turn, []).append(position)
        if not turns:
            unplaced.append(position)
    return by_turn, unplaced


def job_reading(job: ConversationJob) -> JobReading:
    """The job's turns as a conversation, each with the operations it produced (linked to their memory or
    candidate); memories and candidates citing a turn that the operations do not list (an approval made
    later) show as "kept" or "REVIEW"; the episodes once."""
    sources: dict[str, list[int]] = {}
    episodes: dict[str, Produced] = {}
    texts: dict[str, str] = {}
    for source in MemorySource.objects.filter(job_id=str(job.id)).select_related("item"):
        item = source.item
        if vocabulary.Tag.EPISODE in (item.tags or []):
            episodes.setdefault(str(item.id), Produced("episode", item.text.split("\n", 1)[0], f"memory:{item.id}"))
            continue
        sources.setdefault(str(item.id), []).extend(source.message_indices)
        texts[str(item.id)] = item.text
    statuses = {}
    for candidate in Candidate.objects.filter(job_id=job.id).only("id", "status", "text", "source_messages"):
        sources[str(candidate.id)] = list(candidate.source_messages)
        statuses[str(candidate.id)], texts[str(candidate.id)] = candidate.status, candidate.text
    operations = list(job.operations or [])
    by_turn, unplaced = operations_by_turn(operations, sources)

    def shown(operation: dict[str, Any]) -> Produced:
        kind = "candidate" if operation.get("candidate_id") else "memory" if operation.get("memory_id") else ""
        return Produced(operation.get("operation", ""), str(operation.get("text", "")),
                        f"{kind}:{_key(operation)}" if kind else "", statuses.get(_key(operation), ""))

    produced = {turn: [shown(operations[p]) for p in positions] for turn, positions in by_turn.items()}
    listed = {_key(operation) for operation in operations}
    for key, turns in sources.items():  # cited by the job, not in its operations
        if key not in listed:
            for turn in sorted(set(turns)):
                produced.setdefault(turn, []).append(Produced(
                    "REVIEW" if key in statuses else "kept", texts[key],
                    f"{'candidate' if key in statuses else 'memory'}:{key}", statuses.get(key, "")))
    return JobReading([TurnOutcome(i, m.get("name") or m.get("role", ""), m.get("content", ""), produced.get(i, []))
                       for i, m in enumerate(job.messages or [])],
                      list(episodes.values()), [shown(operations[p]) for p in unplaced])


# --------------------------------------------------------------------------- a session's raw turns


class SessionTurn(NamedTuple):
    """One stored turn of a session: as the job keeps it (a forgotten turn is its marker)."""

    job_id: uuid.UUID
    position: int  # its index in the job's messages
    role: str
    name: str
    content: str
    created_at: datetime  # the turn's own time when it was sent with one, else its job's


class SessionRow(NamedTuple):
    session_id: str
    first_turn_at: datetime
    last_turn_at: datetime
    turns: int
    jobs: int


def _session_jobs(*, tenant: Tenant, user_id: str, key_id: int | None) -> QuerySet[ConversationJob]:
    """The user's conversation jobs of the tenant; only the key's own when `key_id` is given (agent keys).
    Erasure scrubs a job's session id to "" (erasure.ERASED; an API session id is never empty): those are
    no session's."""
    jobs = ConversationJob.objects.filter(tenant=tenant, user_id=user_id).exclude(session_id="")
    return jobs if key_id is None else jobs.filter(api_key_id=key_id)


def session_turns(*, tenant: Tenant, user_id: str, session_id: str, key_id: int | None = None) -> list[SessionTurn]:
    """The user's raw turns of one session in order (by job, then position), read from the jobs' kept
    messages: a turn a forget reached reads as its marker, turns a retention sweep dropped are gone."""
    turns: list[SessionTurn] = []
    rows = _session_jobs(tenant=tenant, user_id=user_id, key_id=key_id).filter(session_id=session_id)
    for job in rows.order_by("created_at", "id").only("id", "messages", "created_at").iterator(chunk_size=100):
        for index, message in enumerate(job.messages or []):
            given = message.get("created_at")
            at = _parsed_time(given) if isinstance(given, str) else None
            turns.append(SessionTurn(job.id, index, str(message.get("role", "")), str(message.get("name") or ""),
                                     str(message.get("content", "")), at or job.created_at))
    return turns


def _parsed_time(value: str) -> datetime | None:
    try:
        return parse_datetime(value)
    except ValueError:
        return None


def user_sessions(*, tenant: Tenant, user_id: str, key_id: int | None = None) -> list[SessionRow]:
    """The user's sessions, latest first: when the first and last job came, how many turns and jobs."""
    rows = (_session_jobs(tenant=tenant, user_id=user_id, key_id=key_id).values("session_id")
            .annotate(first=Min("created_at"), last=Max("created_at"), jobs=Count("id"),
                      turns=Sum(JsonbArrayLength("messages"))).order_by("-last", "session_id"))
    return [SessionRow(r["session_id"], r["first"], r["last"], int(r["turns"] or 0), r["jobs"]) for r in rows]


class JsonbArrayLength(Func):
    function = "jsonb_array_length"
    output_field = IntegerField()
