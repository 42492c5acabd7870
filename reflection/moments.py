"""Reflection at the moments seed 004 names beside the importance and
scheduled triggers: a session's end (asked for, or idle) and a contradiction
of a trait's evidence (the writer's withdrawal announcement); and erasure's
step for the cycles."""

from __future__ import annotations

import logging
import uuid
from datetime import timedelta

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Exists, Max, OuterRef, Q
from django.utils import timezone

from memories import vocabulary
from memories.errors import MemoryNotFound
from memories.models import ConversationJob, MemoryItem, MemoryType, Tenant
from memories.queue import enqueue
from memories.withdrawals import Withdrawal
from memories.writing import ErasureScope
from reflection.engine import ACTOR, running, start_cycle
from reflection.models import CycleStatus, CycleTrigger, ReflectionCycle
from reflection.reflectors import memory_signal, says_the_same
from traits import services
from traits.models import EvidenceKind, Trait, TraitEvidence, TraitStage

logger = logging.getLogger(__name__)


# --------------------------------------------------------------------------- a session's end


def session_end_request(*, tenant: Tenant, user_id: str, session_id: str) -> tuple[ReflectionCycle, bool]:
    """Queue the session_end cycle of one session (POST /sessions/{s}/end, or idle detection): at most one
    per session, so a second end, or an end after the session went idle, returns the first cycle (False).
    A session the user never had (no memory, no conversation) is not found."""
    ended = ReflectionCycle.objects.filter(tenant=tenant, user_id=user_id, session_id=session_id,
                                           trigger=CycleTrigger.SESSION_END)
    existing = ended.first()
    if existing is not None:
        return existing, False
    if not (MemoryItem.objects.filter(tenant=tenant, user_id=user_id, session_id=session_id).exists()
            or ConversationJob.objects.filter(tenant=tenant, user_id=user_id, session_id=session_id).exists()):
        raise MemoryNotFound(f"user {user_id!r} has no session {session_id!r}")
    try:
        with transaction.atomic():
            cycle = ReflectionCycle.objects.create(tenant=tenant, user_id=user_id, session_id=session_id,
                                                   trigger=CycleTrigger.SESSION_END, status=CycleStatus.QUEUED)
            enqueue(vocabulary.TASK_RUN_QUEUED_CYCLE, cycle.id, background=True)
    except IntegrityError:  # ended twice at once: the other request queued it
        return ended.get(), False
    return cycle, True


def sessions_gone_idle(*, now, idle: timedelta, lookback: timedelta) -> list[tuple[int, str, str]]:
    """(tenant id, user id, session id) of every session whose last memory is older than `idle` (but newer
    than idle + lookback, so a first run does not end every session ever held) and that has no
    session_end cycle yet."""
    ended = ReflectionCycle.objects.filter(tenant_id=OuterRef("tenant_id"), user_id=OuterRef("user_id"),
                                           session_id=OuterRef("session_id"), trigger=CycleTrigger.SESSION_END)
    rows = (MemoryItem.objects.filter(created_at__gt=now - idle - lookback).exclude(session_id="")
            .exclude(memory_type=MemoryType.TRAIT)
            .values("tenant_id", "user_id", "session_id").annotate(last=Max("created_at"))
            .filter(last__lte=now - idle).filter(~Exists(ended)).order_by("last"))
    return [(r["tenant_id"], r["user_id"], r["session_id"]) for r in rows]


def sessions_end_idle(*, now=None) -> int:
    """Idle detection (SESSION_IDLE_MINUTES): queue the session_end cycle of every session gone quiet."""
    now = now or timezone.now()
    queued = 0
    tenants: dict[int, Tenant] = {}
    for tenant_id, user_id, session_id in sessions_gone_idle(
            now=now, idle=timedelta(minutes=settings.SESSION_IDLE_MINUTES),
            lookback=timedelta(hours=settings.SESSION_IDLE_LOOKBACK_HOURS)):
        tenant = tenants.setdefault(tenant_id, Tenant.objects.get(id=tenant_id))
        queued += session_end_request(tenant=tenant, user_id=user_id, session_id=session_id)[1]
    return queued


# --------------------------------------------------------------------------- contradiction-focused reflection


def on_evidence_withdrawn(withdrawal: Withdrawal) -> None:
    """The writer's announcement (memories.withdrawals): facts stopped holding. When any of them supports
    a live trait, queue that trait's re-evaluation after commit; the trait ids and the lost memory ids are
    read now, while an erased fact's evidence rows still exist."""
    lost: dict[str, list[str]] = {}
    rows = (TraitEvidence.objects.filter(memory_id__in=[uuid.UUID(m) for m in withdrawal.memory_ids],
                                         kind=EvidenceKind.SUPPORTING,
                                         withdrawn_at__isnull=True, trait__memory__tenant_id=withdrawal.tenant_id)
            .exclude(trait__stage=TraitStage.DISSOLVED).values_list("trait_id", "memory_id"))
    for trait_id, memory_id in rows:
        lost.setdefault(str(trait_id), []).append(str(memory_id))
    if lost:
        enqueue(vocabulary.TASK_REEVALUATE_TRAITS, withdrawal.tenant_id, withdrawal.user_id, withdrawal.cause, lost,
                withdrawal.replaced_by, background=True)


CARRIED_CAUSES = ("superseded", "invalidated")  # a replacement exists; forgotten and erased ones have none


def _reevaluate_trait(trait: Trait, memory_ids: list[str], cause: str, replacements: dict[str, MemoryItem],
                      replaced_by: dict[str, str], cycle: ReflectionCycle) -> services.TraitChange:
    """One trait against what replaced its lost support: a new version, or a newer statement the extractor
    read as replacing it, that still agrees carries the support over (a report of the habit, "今天周三，照常去练了
    腿", had retired the habit it reports and dissolved its trait); anything else weakens the trait
    (services.trait_withdraw_support)."""
    replacing = [replacements[replaced_by[m]] for m in memory_ids if replaced_by.get(m) in replacements]
    agreeing = [m for m in replacing if says_the_same(trait, m)]
    if cause in CARRIED_CAUSES and agreeing and len(agreeing) == len(memory_ids):
        return services.trait_carry_support(trait_id=trait.pk, from_memory_ids=memory_ids, to=agreeing,
                                            actor=ACTOR, cycle_id=cycle.pk)
    contradicting = next((m for m in replacing if m not in agreeing), None)
    quality = None
    if contradicting is not None:
        signal = memory_signal(contradicting)
        quality = "A" if cause == "invalidated" or signal is None else signal[3]
    return services.trait_withdraw_support(
        trait_id=trait.pk, actor=ACTOR, cycle_id=cycle.pk,
        withdrawn=services.Withdrawn(memory_ids=tuple(memory_ids), cause=cause, contradicting=contradicting,
                                     quality=quality))


def reflection_reevaluate(*, tenant: Tenant, user_id: str, cause: str, lost: dict[str, list[str]],
                          replaced_by: dict[str, str]) -> ReflectionCycle:
    """A cycle with trigger `contradiction` over the traits whose supporting facts stopped holding (seed
    004: a contradicted trait may be reflected on at once). Raises ReflectionBusy while another cycle of
    the user runs (the task retries)."""
    cycle = start_cycle(tenant, user_id, CycleTrigger.CONTRADICTION, None)
    with running(cycle):
        replacements = {str(m.id): m for m in MemoryItem.objects.filter(tenant=tenant,
                                                                         id__in=set(replaced_by.values()))}
        updated = dissolved = 0
        for trait_id, memory_ids in lost.items():
            trait = Trait.objects.filter(pk=uuid.UUID(trait_id), memory__tenant=tenant).select_related("memory").first()
            if trait is None or trait.stage == TraitStage.DISSOLVED:
                continue
            change = _reevaluate_trait(trait, memory_ids, cause, replacements, replaced_by, cycle)
            updated += change.evidence_added > 0 or change.stage_changed
            dissolved += change.stage_changed and change.new_stage == TraitStage.DISSOLVED
        cycle.memories_scanned = len({m for ids in lost.values() for m in ids})
        cycle.traits_updated, cycle.traits_dissolved = updated, dissolved
    return cycle


def cycles_erase(tenant: Tenant, user_id: str, dry_run: bool, scope: ErasureScope) -> dict[str, int]:
    """Erasure's step for reflection (registered from ReflectionConfig.ready): a cycle's error text may
    quote the user and its session id may name them; counts and times stay. Cycles belong to the user,
    not to an agent or a key."""
    if not scope.whole_user:
        return {"reflection_cycles": 0}
    rows = ReflectionCycle.objects.filter(~Q(error="") | ~Q(session_id=""), tenant=tenant, user_id=user_id)
    if dry_run:
        return {"reflection_cycles": rows.count()}
    # The session id goes too (it may carry the user's name); a session's cycle still waiting would
    # reflect on nothing, so it ends failed rather than becoming a second queued cycle of the user.
    rows.filter(status=CycleStatus.QUEUED).exclude(session_id="").update(status=CycleStatus.FAILED,
                                                                          completed_at=timezone.now())
    return {"reflection_cycles": rows.update(error="", session_id="")}

