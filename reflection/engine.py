"""Reflection: one cycle scans a user's memories since the last watermark,
groups related ones by vector similarity, asks a reflector which traits they
support or contradict, and grows, reinforces, contradicts, promotes and
dissolves traits. Two cycles never run for one user at once (a unique index
on running cycles; a cycle older than REFLECTION_STALE_AFTER is abandoned).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta

import numpy as np
from django.conf import settings
from django.db import IntegrityError, connection, transaction
from django.db.models import Max, Sum
from django.utils import timezone

from memories import metrics, vocabulary
from memories.embedding import get_embedder
from memories.errors import get_or_not_found
from memories.governance import sensitive_kinds
from memories.models import MemoryItem, MemoryType, MemoryVector, Tenant
from memories.queue import enqueue, holding_work, work_lock_release, work_lock_try
from memories.vocabulary import Tag
from reflection.llm_reflector import get_reflector
from reflection.models import CycleStatus, CycleTrigger, ReflectionCycle
from reflection.reflectors import Reflector, TraitHint
from traits import services
from traits.models import EvidenceKind, Trait, TraitStage

logger = logging.getLogger(__name__)
ACTOR = "reflection"


class ReflectionBusy(Exception):
    """A cycle for this user is already running."""


# --------------------------------------------------------------------------- grouping


def group_related(memories: list[MemoryItem], threshold: float = 0.6) -> list[list[MemoryItem]]:
    """Greedy clustering by cosine similarity of each memory's first chunk
    vector; memories not embedded yet form groups of their own."""
    if not memories:
        return []
    model = get_embedder().name
    vectors = dict(MemoryVector.objects.filter(item_id__in=[m.id for m in memories], model=model, chunk_index=0)
                   .values_list("item_id", "embedding"))
    groups: list[list[MemoryItem]] = []
    centroids: list[np.ndarray] = []
    for memory in memories:
        vector = vectors.get(memory.id)
        if vector is None:
            groups.append([memory])
            centroids.append(np.zeros(1))
            continue
        vector = np.asarray(vector.to_list() if hasattr(vector, "to_list") else vector, dtype=np.float32)
        best, best_similarity = None, threshold
        for index, centroid in enumerate(centroids):
            if centroid.shape == vector.shape:
                similarity = float(np.dot(centroid, vector) / (np.linalg.norm(centroid) or 1.0))
                if similarity >= best_similarity:
                    best, best_similarity = index, similarity
        if best is None:
            groups.append([memory])
            centroids.append(vector.copy())
        else:
            groups[best].append(memory)
            centroids[best] = centroids[best] + vector
    return groups


# --------------------------------------------------------------------------- the cycle


def start_cycle(tenant: Tenant, user_id: str, trigger: str, trigger_value: float | None,
                 queued: ReflectionCycle | None = None) -> ReflectionCycle:
    """A new running cycle, or the queued one (from reflection_request) set running."""
    stale = timezone.now() - timedelta(seconds=settings.REFLECTION_STALE_AFTER)
    ReflectionCycle.objects.filter(tenant=tenant, user_id=user_id, status=CycleStatus.RUNNING,
                                   started_at__lt=stale).update(status=CycleStatus.FAILED,
                                                                error="abandoned (worker lost)",
                                                                completed_at=timezone.now())
    try:
        with transaction.atomic():
            if queued is None:
                return ReflectionCycle.objects.create(tenant=tenant, user_id=user_id, trigger=trigger,
                                                      trigger_value=trigger_value)
            ReflectionCycle.objects.filter(id=queued.id).update(status=CycleStatus.RUNNING, started_at=timezone.now())
            queued.refresh_from_db()
            return queued
    except IntegrityError:
        raise ReflectionBusy(f"a reflection cycle for {user_id} is already running") from None


def reflection_request(*, tenant: Tenant, user_id: str) -> ReflectionCycle:
    """Queue a cycle for a worker (POST /users/{u}/reflect): the caller gets its id at
    once. A cycle already waiting or running for the user is returned instead of a second."""
    waiting = ReflectionCycle.objects.filter(tenant=tenant, user_id=user_id,
                                             status__in=[CycleStatus.QUEUED, CycleStatus.RUNNING])
    stale = timezone.now() - timedelta(seconds=settings.REFLECTION_STALE_AFTER)
    existing = waiting.filter(started_at__gte=stale).order_by("-started_at").first()
    if existing is not None:
        return existing
    try:
        with transaction.atomic():
            cycle = ReflectionCycle.objects.create(tenant=tenant, user_id=user_id, trigger=CycleTrigger.REQUESTED,
                                                   status=CycleStatus.QUEUED)
            enqueue(vocabulary.TASK_RUN_QUEUED_CYCLE, cycle.id, background=True)
            return cycle
    except IntegrityError:  # a concurrent request queued one first
        return waiting.order_by("-started_at").first() or reflection_request(tenant=tenant, user_id=user_id)


def reflection_cycle_get(*, tenant: Tenant, cycle_id: int) -> ReflectionCycle:
    return get_or_not_found(ReflectionCycle.objects.filter(tenant=tenant), "reflection cycle", id=cycle_id)


def reflection_run_queued(cycle_id: int) -> ReflectionCycle | None:
    """Run a queued cycle; None when it is no longer queued (a redelivery)."""
    cycle = ReflectionCycle.objects.filter(id=cycle_id, status=CycleStatus.QUEUED).select_related("tenant").first()
    if cycle is None:
        return None
    return reflection_run(tenant=cycle.tenant, user_id=cycle.user_id, trigger=cycle.trigger, queued=cycle)


def reflection_give_up(cycle_id: int, reason: str) -> None:
    ReflectionCycle.objects.filter(id=cycle_id, status=CycleStatus.QUEUED).update(
        status=CycleStatus.FAILED, error=reason[:4000], completed_at=timezone.now())


def last_watermark(tenant: Tenant, user_id: str):
    return ReflectionCycle.objects.filter(tenant=tenant, user_id=user_id, status=CycleStatus.COMPLETED).aggregate(
        w=Max("watermark"))["w"]


def memories_since_watermark(tenant: Tenant, user_id: str):
    """The current, active, non-trait memories a user's next cycle would scan."""
    watermark = last_watermark(tenant, user_id)
    queryset = MemoryItem.objects.filter(vocabulary.is_searchable(timezone.now()), tenant=tenant,
                                         user_id=user_id).exclude(memory_type=MemoryType.TRAIT).exclude(
        tags__contains=[Tag.EPISODE])  # raw turns are evidence for facts, not facts themselves
    return queryset.filter(created_at__gt=watermark) if watermark else queryset


WRITE_CLOCK_MARGIN = timedelta(seconds=5)
LONGEST_WRITE = timedelta(minutes=10)


def open_writes_started_at():
    """When the oldest write transaction still open (other than ours) began,
    less a margin for clock skew between app and database; None when none is.

    A memory's created_at is stamped inside its transaction, so a row not yet
    committed is younger than this moment. A cycle scans only older rows, so
    its watermark never passes a row that commits later. Transactions open
    for longer than LONGEST_WRITE are broken, not writing, and are ignored.
    """
    with connection.cursor() as cursor:
        cursor.execute(
            """SELECT min(xact_start) FROM pg_stat_activity
               WHERE datname = current_database() AND pid <> pg_backend_pid()
                 AND backend_xid IS NOT NULL AND xact_start > now() - %s::interval""",
            [f"{LONGEST_WRITE.total_seconds()} seconds"])
        started = cursor.fetchone()[0]
    return started - WRITE_CLOCK_MARGIN if started else None


def session_memories(tenant: Tenant, user_id: str, session_id: str, cap: int) -> list[MemoryItem]:
    """What a session_end cycle reads: the session's current, non-trait memories (episodes aside), oldest
    first, whatever the user's watermark says (a later scheduled cycle counts none of them twice: a memory
    is evidence for a trait once)."""
    return list(MemoryItem.objects.filter(vocabulary.is_searchable(timezone.now()), tenant=tenant, user_id=user_id,
                                          session_id=session_id).exclude(memory_type=MemoryType.TRAIT)
                .exclude(tags__contains=[Tag.EPISODE]).order_by("created_at", "id")[:cap])


def memories_to_scan(tenant: Tenant, user_id: str, cap: int) -> list[MemoryItem]:
    """The next cycle's memories, oldest first, at most about `cap` of them.

    The watermark is a created_at, and a batch of memories shares one, so a
    cut must not fall inside a batch: the rows after the watermark's moment
    would never be scanned. The cut moves back to the last whole moment (or,
    when one moment alone holds more than `cap`, takes all of it).
    """
    scan = memories_since_watermark(tenant, user_id).order_by("created_at", "id")
    horizon = open_writes_started_at()
    if horizon is not None:
        scan = scan.filter(created_at__lt=horizon)
    memories = list(scan[: cap + 1])
    if len(memories) <= cap:
        return memories
    boundary = memories[cap].created_at
    whole = [m for m in memories[:cap] if m.created_at != boundary]
    return whole or list(scan.filter(created_at=boundary))


def importance_since_watermark(tenant: Tenant, user_id: str) -> float:
    return memories_since_watermark(tenant, user_id).aggregate(s=Sum("importance"))["s"] or 0.0


@contextmanager
def running(cycle: ReflectionCycle) -> Iterator[ReflectionCycle]:
    """A cycle's run, however it ends: completed, or failed with the reason (never raised: a cycle is
    retried by its trigger, not by its caller); saved and timed in the metrics."""
    held = work_lock_try("cycle", cycle.pk)  # while it runs, the reclaim sweep knows a live worker has it
    try:
        yield cycle
        cycle.status = CycleStatus.COMPLETED
    except Exception as exc:
        logger.exception("reflection cycle %s failed", cycle.pk)
        cycle.status, cycle.error = CycleStatus.FAILED, f"{type(exc).__name__}: {exc}"[:4000]
    finally:
        if held:
            work_lock_release("cycle", cycle.pk)
    cycle.completed_at = timezone.now()
    # The fields a run sets, not session_id: an erasure during the run has emptied it (cycles_erase).
    cycle.save(update_fields=["status", "error", "completed_at", "memories_scanned", "traits_created",
                              "traits_updated", "traits_dissolved", "watermark"])
    if cycle.started_at:
        metrics.observe_reflection_cycle(status=cycle.status,
                                         seconds=(cycle.completed_at - cycle.started_at).total_seconds())


def reflection_run(*, tenant: Tenant, user_id: str, trigger: str, trigger_value: float | None = None,
                   reflector: Reflector | None = None, queued: ReflectionCycle | None = None) -> ReflectionCycle:
    """Run one cycle for a user; raises ReflectionBusy if one is running."""
    cycle = start_cycle(tenant, user_id, trigger, trigger_value, queued)
    with running(cycle):
        if cycle.session_id:
            memories = session_memories(tenant, user_id, cycle.session_id, settings.REFLECTION_MAX_MEMORIES)
        else:
            memories = memories_to_scan(tenant, user_id, settings.REFLECTION_MAX_MEMORIES)
        traits = list(Trait.objects.filter(tenant=tenant, user_id=user_id)
                      .exclude(stage=TraitStage.DISSOLVED).select_related("memory"))
        hints = (reflector or get_reflector()).reflect(group_related(memories), traits) if memories else []
        created = updated = dissolved = 0
        for hint in hints:
            trait = Trait.objects.filter(memory_id=hint.existing_trait_id).select_related("memory").first() \
                if hint.existing_trait_id else None
            if trait is None:
                if not hint.supports or sensitive_kinds(hint.text):
                    continue  # a trait is written with no reviewer: none whose words carry sensitive data
                trait = services.trait_create(tenant=tenant, user_id=user_id, text=hint.text, subtype=hint.subtype,
                                              context=hint.context, actor=ACTOR, data={"key": hint.key},
                                              cycle_id=cycle.pk)
                created += 1
            observations = hint_observations(hint)
            if observations:
                change = services.trait_observe(trait_id=trait.pk, observations=observations, actor=ACTOR,
                                                cycle_id=cycle.pk)
                dissolved += change.new_stage == TraitStage.DISSOLVED and change.stage_changed
                # Updated means changed: new evidence or a new stage, not a match that added nothing.
                updated += hint.existing_trait_id is not None and (change.evidence_added > 0
                                                                    or change.stage_changed)
            trait.refresh_from_db()
            if hint.reworded and hint.supports:
                services.trait_reword(trait=trait, text=hint.reworded, actor=ACTOR,
                                      reason="the user's latest wording of the wish")
            if services.trait_split_by_context(trait=trait, actor=ACTOR):
                dissolved += 1
            services.trait_lift_to_preference(trait=trait, actor=ACTOR)
        cycle.memories_scanned = len(memories)
        cycle.traits_created, cycle.traits_updated, cycle.traits_dissolved = created, updated, dissolved
        # A session's cycle reads that session only: the user's watermark is not its to move.
        cycle.watermark = None if cycle.session_id else (memories[-1].created_at if memories
                                                         else last_watermark(tenant, user_id))
    return cycle


def hint_observations(hint: TraitHint) -> list[services.Observation]:
    """A hint's evidence as observations, in order, each with why it joined: support, contradictions, and the
    user's word that it ended (quality A: said outright)."""
    def observed(memory: MemoryItem, kind: str, quality: str, ends: bool = False) -> services.Observation:
        reason, closeness = hint.why.get(str(memory.id), ("", None))
        return services.Observation(memory, kind, quality, hint.context, ends=ends, reason=reason,
                                    closeness=closeness)

    return ([observed(m, EvidenceKind.SUPPORTING, hint.quality) for m in hint.supports]
            + [observed(m, EvidenceKind.CONTRADICTING, hint.quality) for m in hint.contradicts]
            + [observed(m, EvidenceKind.CONTRADICTING, "A", ends=True) for m in hint.ends])


def maybe_reflect(tenant: Tenant, user_ids: set[str]) -> int:
    """Importance trigger: a cycle is queued for each user whose new memories'
    importance adds up past the threshold; returns how many were queued."""
    queued = 0
    for user_id in sorted(user_ids):
        total = importance_since_watermark(tenant, user_id)
        if total >= settings.REFLECTION_IMPORTANCE_THRESHOLD:
            enqueue(vocabulary.TASK_REFLECT_USER, tenant.id, user_id, CycleTrigger.IMPORTANCE.value, total,
                    on_commit=False)
            queued += 1
    return queued


RECLAIMED = "reclaimed by the sweep"  # a cycle's error once it was run again after its worker stopped


def cycles_reclaim(*, eager: bool, now: datetime | None = None) -> dict[str, int]:
    """Reflection cycles a dead worker left: one `running` longer than WORK_RECLAIM_AFTER whose lock no live
    worker holds is queued again once (a session-end cycle is the only one its session gets), then failed
    with the reason; with no broker (`eager`), one `queued` that long (lost with its process's pool) is
    sent again. Counts of each."""
    now = now or timezone.now()
    cutoff = now - timedelta(seconds=settings.WORK_RECLAIM_AFTER)
    counts = {"requeued": 0, "failed": 0, "resent": 0}
    statuses = [CycleStatus.RUNNING, CycleStatus.QUEUED] if eager else [CycleStatus.RUNNING]
    for cycle_id in list(ReflectionCycle.objects.filter(status__in=statuses, started_at__lt=cutoff)
                         .order_by("started_at").values_list("id", flat=True)[:100]):
        with holding_work("cycle", cycle_id) as free:
            if not free:
                continue
            cycle = ReflectionCycle.objects.filter(id=cycle_id, status__in=statuses, started_at__lt=cutoff).first()
            if cycle is None:
                continue
            seconds = int((now - cycle.started_at).total_seconds())
            if cycle.status == CycleStatus.RUNNING and cycle.error.startswith(RECLAIMED):
                ReflectionCycle.objects.filter(id=cycle.id, status=CycleStatus.RUNNING).update(
                    status=CycleStatus.FAILED, completed_at=now,
                    error=f"the worker running it stopped twice (the last {seconds} s ago); the next cycle "
                          "reflects on its memories")
                counts["failed"] += 1
                continue
            try:
                with transaction.atomic():
                    ReflectionCycle.objects.filter(id=cycle.id).update(
                        status=CycleStatus.QUEUED, started_at=now,
                        error=f"{RECLAIMED}: {cycle.status} for {seconds} s with no live worker")
            except IntegrityError:  # another cycle of the user waits already: this one is not needed
                ReflectionCycle.objects.filter(id=cycle.id).update(
                    status=CycleStatus.FAILED, completed_at=now,
                    error=f"the worker running it stopped ({seconds} s ago); another cycle of the user waits")
                counts["failed"] += 1
                continue
            counts["requeued" if cycle.status == CycleStatus.RUNNING else "resent"] += 1
        # sent once the lock is let go, or its worker would find it held
        enqueue(vocabulary.TASK_RUN_QUEUED_CYCLE, cycle_id, background=True)
    return counts
