"""Celery tasks for reflection and the trait beat jobs: thin wrappers."""

from __future__ import annotations

import logging
import time

from celery import shared_task

from memories.consistency import consistency_check as run_consistency_check
from memories.identity import identifier_digest
from memories.models import MemoryItem, Tenant
from memories.writing import reflection_nudge_taken
from reflection.engine import (
    ReflectionBusy,
    cycles_reclaim,
    maybe_reflect,
    memories_since_watermark,
    reflection_give_up,
    reflection_run,
    reflection_run_queued,
)
from reflection.moments import reflection_reevaluate, sessions_end_idle
from traits import services

logger = logging.getLogger(__name__)


@shared_task(acks_late=True)
def reflect_user(tenant_id: int, user_id: str, trigger: str, trigger_value: float | None = None) -> dict:
    try:
        cycle = reflection_run(tenant=Tenant.objects.get(id=tenant_id), user_id=user_id, trigger=trigger,
                               trigger_value=trigger_value)
    except ReflectionBusy as exc:
        return {"skipped": str(exc)}
    return {"cycle": cycle.pk, "status": cycle.status}


BUSY_RETRIES = 12
BUSY_RETRY_SECONDS = 5


@shared_task(bind=True, acks_late=True, max_retries=BUSY_RETRIES)
def run_requested_cycle(self, cycle_id: int) -> dict:
    """A cycle asked for through the API. While another cycle of the user runs,
    it waits (retries) for up to a minute, then fails saying why."""
    for attempt in range(BUSY_RETRIES + 1):
        try:
            cycle = reflection_run_queued(cycle_id)
        except ReflectionBusy as exc:
            if attempt == BUSY_RETRIES:
                reflection_give_up(cycle_id, f"{exc}; gave up after {BUSY_RETRIES} tries")
                return {"skipped": str(exc)}
            if not self.request.is_eager:
                raise self.retry(exc=exc, countdown=BUSY_RETRY_SECONDS) from exc
            time.sleep(BUSY_RETRY_SECONDS)  # in-process mode: this runs on a background thread
            continue
        return {"cycle": cycle_id, "status": cycle.status if cycle else "not queued"}
    return {}


@shared_task(bind=True, acks_late=True, max_retries=BUSY_RETRIES)
def reevaluate_traits(self, tenant_id: int, user_id: str, cause: str, lost: dict[str, list[str]],
                      replaced_by: dict[str, str]) -> dict:
    """Contradiction-focused reflection (queued by the writer's withdrawal announcement): waits, as a
    requested cycle does, while another cycle of the user runs."""
    tenant = Tenant.objects.filter(id=tenant_id).first()
    if tenant is None:
        return {"skipped": "tenant gone"}
    for attempt in range(BUSY_RETRIES + 1):
        try:
            cycle = reflection_reevaluate(tenant=tenant, user_id=user_id, cause=cause, lost=lost,
                                          replaced_by=replaced_by)
        except ReflectionBusy as exc:
            if attempt == BUSY_RETRIES:
                logger.warning("trait re-evaluation for ~%s gave up", identifier_digest(user_id))
                return {"skipped": str(exc)}
            if not self.request.is_eager:
                raise self.retry(exc=exc, countdown=BUSY_RETRY_SECONDS) from exc
            time.sleep(BUSY_RETRY_SECONDS)
            continue
        return {"cycle": cycle.pk, "status": cycle.status}
    return {}


@shared_task
def end_idle_sessions() -> int:
    """Idle detection: a session quiet for SESSION_IDLE_MINUTES gets its session_end cycle."""
    return sessions_end_idle()


@shared_task
def reflect_due_users() -> int:
    """Scheduled trigger: every user with memories a cycle would scan (the engine's own definition)."""
    pairs = MemoryItem.objects.exclude(memory_type="trait").values_list("tenant_id", "user_id").distinct()
    sent = 0
    for tenant_id, user_id in pairs.iterator():
        if memories_since_watermark(Tenant(id=tenant_id), user_id).exists():
            reflect_user.delay(tenant_id, user_id, "scheduled")
            sent += 1
    return sent


@shared_task
def reflect_if_important(tenant_id: int, user_ids: list[str]) -> int:
    """Importance trigger, sent by saves and ingestion after they saved memories: once per tenant per
    REFLECTION_NUDGE_WINDOW, for every user nudged meanwhile (the next nudge sends again from here on)."""
    user_ids = reflection_nudge_taken(tenant_id, user_ids)
    tenant = Tenant.objects.filter(id=tenant_id).first()
    return maybe_reflect(tenant, set(user_ids)) if tenant else 0


@shared_task
def expire_trends() -> int:
    return services.traits_expire_trends()


@shared_task
def refresh_trait_decay() -> int:
    return services.traits_refresh_decay()


@shared_task
def dissolve_weak_traits() -> int:
    return services.traits_dissolve_weak()


@shared_task
def consistency_check() -> dict:
    report = run_consistency_check(fix=False)
    if not report.clean:
        logger.warning("consistency check found problems: %s",
                       {name: len(ids) for name, ids in report.problems.items() if ids})
    return {name: len(ids) for name, ids in report.problems.items()}


@shared_task
def reclaim_stuck_cycles() -> dict:
    """Reflection cycles a dead worker left running (or, with no broker, queued); a beat job."""
    from celery import current_app as app  # the project's app (memory_project/celery.py)

    return cycles_reclaim(eager=bool(app.conf.task_always_eager))
