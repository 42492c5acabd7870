"""Erasure: the registry of every place a user's words can be, and the one
function (used by the API, the admin and commands) that empties them.

A store is in REGISTRY with what erasure does to it. tests/test_erasure.py
fails when a model with a user id or a free-text/JSON/array column is not in
the registry, so a new table cannot quietly keep what a user asked us to forget.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.contrib.admin.models import LogEntry
from django.db import transaction
from django.db.models import Q, QuerySet
from django.utils import timezone

from memories import withdrawals
from memories.access import forget_access_counts
from memories.models import (
    Candidate,
    CandidateOperation,
    CandidateStatus,
    ConversationJob,
    ErasureReceipt,
    MemoryItem,
    Tenant,
)
from memories.people.erase import people_erase
from memories.quota import forget_usage
from memories.working import working_memory_clear
from memories.writing import (
    FORGOTTEN_TURN,
    ErasureScope,
    episodes_hearing,
    episodes_unhear,
    user_forget,
    users_write_lock,
)

logger = logging.getLogger(__name__)

ERASED = ""  # what a scrubbed NOT NULL text column holds


@dataclass(frozen=True)
class Store:
    """One place that can hold a user's data, and what erasure does there."""

    name: str
    models: tuple[str, ...]  # app_label.ModelName of the tables it covers ("" for non-database stores)
    action: str  # "delete" | "scrub" | "kept"
    why: str


# Memories' own stores; the apps built on memories add theirs from their app configs (register_store).
REGISTRY: list[Store] = [
    Store("memories", ("memories.MemoryItem",), "delete", "the memories themselves"),
    Store("vectors", ("memories.MemoryVector",), "delete", "embeddings and chunk texts (with their memory)"),
    Store("sources", ("memories.MemorySource",), "delete", "provenance (with their memory)"),
    Store("history_scrubbed", ("memories.MemoryHistory",), "scrub",
          "audit rows stay with events, actors and times; texts, data and reasons are emptied"),
    Store("candidates", ("memories.Candidate",), "scrub",
          "pending ones rejected; text, data, changes and session id emptied"),
    Store("jobs", ("memories.ConversationJob",), "scrub",
          "messages, participants, operations, warnings, errors and session id emptied; status and counts kept"),
    Store("admin_log", ("admin.LogEntry",), "scrub", "the admin's own log quotes a changed object's text"),
    Store("receipts", ("memories.ErasureReceipt",), "kept", "the proof of erasure: counts, actor, time, no content"),
    Store("working_memory", ("memories.WorkingMemoryEntry",), "delete",
          "the user's recent items: the Redis list, or the table's rows (ids only; they go with their memories)"),
    Store("access_counts", (), "delete", "buffered read counts (Redis and this process) of the erased memories"),
    Store("people", ("memories.Person", "memories.PersonAlias", "memories.PersonEdge"), "delete",
          "the people, pets, places and organisations the user named, their aliases and edges (a narrower "
          "erasure: the edges its memories said, and the people nothing kept still names)"),
    Store("heard_in_episodes", (), "scrub",
          "the user's turns kept in other participants' episodes (said to them by name), and the narratives "
          "that read them; the rest of those episodes stays"),
    Store("people_history", ("memories.PersonHistory",), "scrub",
          "audit rows of people stay with events, actors and times; data and reasons are emptied"),
]

# A step erases (or, dry_run, counts) one store of one user: (tenant, user id, dry run, scope) -> counts
# by store name. Steps registered with before_memories run before the memory rows go (a store that hangs
# on them); the rest after.
ErasureStep = Callable[[Tenant, str, bool, ErasureScope], dict[str, int]]
_STEPS_BEFORE_MEMORIES: list[ErasureStep] = []
_STEPS_AFTER_MEMORIES: list[ErasureStep] = []


def register_store(*stores: Store, step: ErasureStep, before_memories: bool = False) -> None:
    """An app's stores and the step that erases them (from its AppConfig.ready; once)."""
    steps = _STEPS_BEFORE_MEMORIES if before_memories else _STEPS_AFTER_MEMORIES
    if step in steps:
        return
    REGISTRY.extend(stores)
    steps.append(step)


# Tables that hold text but never a memory user's words (checked by the registry test too).
NOT_USER_DATA: dict[str, str] = {
    "sessions.Session": "admin login sessions of operators",
    "auth.User": "operators' accounts",
    "auth.Group": "operator roles",
    "auth.Permission": "permission names",
    "contenttypes.ContentType": "model names",
    "memories.Tenant": "customer names",
    "memories.ApiKey": "key names and hashes",
    "memories.OperatorProfile": "operator scopes",
    "memories.ActiveEmbedding": "embedding model settings",
}


@dataclass
class ErasureResult:
    user_id: str
    counts: dict[str, int]
    receipt: ErasureReceipt | None  # None for a dry run


def user_erase(*, tenant: Tenant, user_id: str, actor: str, reason: str = "erasure request",
               dry_run: bool = False, agent_id: str | None = None,
               scope: ErasureScope | None = None) -> ErasureResult:
    """Erase everything held about one user of one tenant, or (dry_run) count
    it. Idempotent: the second run reports the same keys, all zero. The
    receipt is written in the same transaction as the erasure.

    agent_id: erase only what that agent saved or sent about the user (its
    memories, candidates and conversation jobs); the rest of the user stays.
    scope: any narrower part (an API key's own saves, governance.user_erase_requested)."""
    scope = scope or ErasureScope(agent_id=agent_id)
    with transaction.atomic():
        # The jobs the user spoke in (job id -> session id): their turns, and shared narratives, in others' episodes.
        spoke_in = {str(job): session for job, session in _jobs_of(tenant, user_id, scope.submitted())
                    .values_list("id", "session_id")}
        _lock_with_hearers(tenant, user_id, spoke_in)
        memory_ids = [str(i) for i in MemoryItem.objects.filter(scope.memories(), tenant=tenant, user_id=user_id)
                      .values_list("id", flat=True)]
        candidate_ids = [str(i) for i in Candidate.objects.filter(scope.submitted(), tenant=tenant, user_id=user_id)
                         .values_list("id", flat=True)]
        if not scope.whole_user and not dry_run:  # the user's traits stay: what they stood on is withdrawn
            withdrawals.announce(tenant_id=tenant.id, user_id=user_id, memory_ids=memory_ids, cause="erased")
        # Caches first: the working-memory table's rows would go with the memories uncounted.
        counts: dict[str, int] = _caches(tenant, user_id, memory_ids, dry_run, whole_user=scope.whole_user)
        for step in (people_erase, *_STEPS_BEFORE_MEMORIES):
            counts.update(step(tenant, user_id, dry_run, scope))
        counts.update(user_forget(tenant=tenant, user_id=user_id, actor=actor, reason=reason, dry_run=dry_run,
                                  scope=scope))
        counts["heard_in_episodes"] = episodes_unhear(tenant=tenant, speaker_id=user_id, actor=actor,
                                                      job_ids=None if scope.whole_user else set(spoke_in),
                                                      spoke_in=spoke_in, dry_run=dry_run)
        for step in (_scrub_candidates, _scrub_jobs, *_STEPS_AFTER_MEMORIES):
            counts.update(step(tenant, user_id, dry_run, scope))
        counts["admin_log"] = _scrub_admin_log(memory_ids + candidate_ids, dry_run)
        receipt = None
        if not dry_run:
            receipt = ErasureReceipt.objects.create(tenant=tenant, user_id=user_id, agent_id=scope.agent_id or "",
                                                    api_key_id=scope.api_key_id, actor=actor, reason=reason[:200],
                                                    counts=counts)
            logger.info("erased user of tenant %s: %s", tenant.id, counts)
            forget_usage(tenant.id)
    return ErasureResult(user_id=user_id, counts=counts, receipt=receipt)


def _lock_with_hearers(tenant: Tenant, user_id: str, spoke_in: dict[str, str]) -> None:
    """The user's write lock and those of the participants whose episodes hold the user's turns, in one
    order before anything is written (a job that adds a hearer meanwhile holds the user's lock too: read
    again once it is taken)."""
    locked: set[str] = set()
    while True:
        wanted = {user_id, *episodes_hearing(tenant=tenant, speaker_id=user_id, spoke_in=spoke_in)}
        if wanted <= locked:
            return
        users_write_lock(tenant.id, wanted | locked)
        locked |= wanted


def erased_since(tenant: Tenant, user_ids: set[str], since: datetime, agent_id: str = "",
                 api_key_id: int | None = None) -> set[str]:
    """Which of these users were erased after `since` (wholly, or for this agent, or by the key that sent
    the job): a job that read its turns before an erasure and applies after it must write nothing for
    them. Another key's erasure of its own part is not the user's erasure; the sending key's is (what the
    job would write is that key's)."""
    agents = ["", agent_id] if agent_id else [""]
    whole = Q(agent_id__in=agents, api_key_id__isnull=True)
    if api_key_id is not None:
        whole |= Q(api_key_id=api_key_id, agent_id__in=agents)
    return set(ErasureReceipt.objects.filter(whole, tenant=tenant, user_id__in=user_ids, created_at__gte=since)
               .values_list("user_id", flat=True))


def _scrub_candidates(tenant: Tenant, user_id: str, dry_run: bool, scope: ErasureScope) -> dict[str, int]:
    """The user's candidates; a narrower erasure keeps the proposal to erase the rest (it holds no words)."""
    rows = Candidate.objects.filter(scope.submitted(), tenant=tenant, user_id=user_id)
    if not scope.whole_user:
        rows = rows.exclude(operation=CandidateOperation.ERASE)
    rows = rows.filter(
        ~Q(text=ERASED) | ~Q(data={}) | ~Q(changes={}) | ~Q(tags=[]) | ~Q(reason_detail=ERASED)
        | ~Q(source_messages=[]) | ~Q(session_id=ERASED) | Q(status=CandidateStatus.PENDING))
    if dry_run:
        return {"candidates": rows.count()}

    rows.filter(status=CandidateStatus.PENDING).update(status=CandidateStatus.REJECTED, resolved_at=timezone.now(),
                                                       resolved_by="erasure")
    # The session id goes too: a client's session ids often carry the user's name or a date (issue 43).
    return {"candidates": rows.update(text=ERASED, data={}, changes={}, tags=[], reason_detail=ERASED,
                                      source_messages=[], session_id=ERASED)}


def _scrub_jobs(tenant: Tenant, user_id: str, dry_run: bool, scope: ErasureScope) -> dict[str, int]:
    """Jobs of the user, and jobs of others in which the user spoke (participants)."""
    rows = _jobs_of(tenant, user_id, scope.submitted()).filter(
        ~Q(messages=[]) | ~Q(operations=[]) | ~Q(participants={}) | ~Q(warnings=[]) | ~Q(error=ERASED)
        | ~Q(session_id=ERASED))
    if dry_run:
        return {"jobs": rows.count()}
    return {"jobs": ConversationJob.objects.filter(id__in=list(rows.values_list("id", flat=True))).update(
        messages=[], operations=[], participants={}, warnings=[], error=ERASED, session_id=ERASED)}


def _jobs_of(tenant: Tenant, user_id: str, scope: Q) -> QuerySet[ConversationJob]:
    """The user's conversation jobs in scope, and those of others in which the user spoke (participants)."""
    spoke_in = ConversationJob.objects.filter(scope, tenant=tenant).extra(
        where=["EXISTS (SELECT 1 FROM jsonb_each_text(conversation_jobs.participants) AS p "
               "WHERE p.value = %s)"], params=[user_id])
    return ConversationJob.objects.filter(scope, tenant=tenant, user_id=user_id) | spoke_in


# --------------------------------------------------------------------------- forgetting one thing
# A user's forget request (ingestion) reaches the conversations stored with their words, as erasure does.


def forget_in_messages(messages: list[dict[str, Any]], says_it: Callable[[str], bool]) -> list[dict[str, Any]]:
    """A job's stored turns with those that say what was forgotten replaced by FORGOTTEN_TURN."""
    return [{**m, "content": FORGOTTEN_TURN} if isinstance(m.get("content"), str)
            and m["content"] != FORGOTTEN_TURN and says_it(m["content"]) else m for m in messages]


def forget_in_operations(operations: list[dict[str, Any]], says_it: Callable[[str], bool],
                          memory_ids: set[str]) -> list[dict[str, Any]]:
    """A job's operations with the text (and a reason quoting it) of what was forgotten replaced."""
    out = []
    for entry in operations:
        entry = dict(entry)
        if entry.get("memory_id") in memory_ids or says_it(str(entry.get("text", ""))):
            entry["text"] = FORGOTTEN_TURN
        if entry.get("reason") and says_it(str(entry["reason"])):
            entry["reason"] = FORGOTTEN_TURN
        out.append(entry)
    return out


def forget_in_jobs(*, tenant: Tenant, user_id: str, says_it: Callable[[str], bool], memory_ids: set[str],
                   exclude_job_id: str = "") -> int:
    """Forget in the stored conversations: every job of the user (or in which the user spoke) keeps its
    turns and operations without what the user asked to forget. Returns how many jobs changed."""
    rows = _jobs_of(tenant, user_id, Q()).exclude(messages=[], operations=[])
    if exclude_job_id:
        rows = rows.exclude(id=exclude_job_id)
    changed = 0
    for found in rows.only("id", "messages", "operations").iterator(chunk_size=200):
        messages = forget_in_messages(found.messages, says_it)
        operations = forget_in_operations(found.operations, says_it, memory_ids)
        if messages != found.messages or operations != found.operations:
            ConversationJob.objects.filter(id=found.id).update(messages=messages, operations=operations)
            changed += 1
    return changed



FORGOTTEN_BY = "forgotten at the user's request"  # who closed a candidate a forget reached


def forget_in_candidates(*, tenant: Tenant, user_id: str, says_it: Callable[[str], bool]) -> int:
    """Forget in the review queue: the user's candidates whose text, or the turn they came from, says what
    they asked to forget lose their words (text, data, changes), and a pending one is rejected with a note
    saying so, so no approval can bring it back. Returns how many changed."""
    changed = 0
    turns: dict[str, list[Any]] = {}  # job id -> its messages, read once
    for candidate in Candidate.objects.filter(tenant=tenant, user_id=user_id).exclude(text=FORGOTTEN_TURN).exclude(
            text=ERASED).only("id", "text", "status", "job_id", "source_messages", "reason_detail").iterator(
            chunk_size=200):
        said_here = says_it(candidate.text)
        if not said_here and not _turn_says_it(candidate, turns, says_it):
            continue
        fields: dict[str, Any] = {"text": FORGOTTEN_TURN, "data": {}, "changes": {}}
        if candidate.status == CandidateStatus.PENDING:
            note = "closed: the user asked to forget " + ("it" if said_here else "the turn it came from")
            fields.update(status=CandidateStatus.REJECTED, resolved_at=timezone.now(), resolved_by=FORGOTTEN_BY,
                          reason_detail=f"{candidate.reason_detail}; {note}".strip("; "))
        changed += Candidate.objects.filter(id=candidate.id).update(**fields)
    return changed


def _turn_says_it(candidate: Candidate, turns: dict[str, list[Any]], says_it: Callable[[str], bool]) -> bool:
    """Whether a turn the candidate was drawn from says what the user asked to forget."""
    if not candidate.job_id or not candidate.source_messages:
        return False
    key = str(candidate.job_id)
    if key not in turns:
        turns[key] = ConversationJob.objects.filter(id=candidate.job_id).values_list("messages", flat=True).first() \
            or []
    messages = turns[key]
    return any(0 <= i < len(messages) and says_it(str(messages[i].get("content", "")))
               for i in candidate.source_messages)


def _scrub_admin_log(object_ids: list[str], dry_run: bool) -> int:
    rows = LogEntry.objects.filter(object_id__in=object_ids).exclude(object_repr=ERASED, change_message=ERASED)
    return rows.count() if dry_run else rows.update(object_repr=ERASED, change_message=ERASED)


def _caches(tenant: Tenant, user_id: str, memory_ids: list[str], dry_run: bool,
            whole_user: bool = True) -> dict[str, int]:
    """Redis working memory and buffered read counts. Cleared inside the
    erasure's transaction: if Redis fails, the erasure fails and is retried,
    rather than leaving the user's recent words in Redis for a day."""
    return {"working_memory": working_memory_clear(tenant.id, user_id, dry_run=dry_run,
                                                   memory_ids=None if whole_user else set(memory_ids)),
            "access_counts": forget_access_counts(memory_ids, dry_run=dry_run)}
