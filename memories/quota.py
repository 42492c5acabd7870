"""Per-tenant storage quotas: current memories and bytes of text and data.

Usage is measured with one query and kept per process for
QUOTA_USAGE_CACHE_SECONDS, with this process's own writes added as they
happen: a quota is enforced to within what other processes wrote in that
time, without a COUNT over a million rows on every save.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass

from django.conf import settings
from django.db import connection

from memories import vocabulary
from memories.errors import QuotaExceeded, TooBusy
from memories.models import ConversationJob, EmbeddingState, MemoryItem, MemoryStatus, Tenant
from memories.process_state import forgotten_on_reset
from memories.timing import timed


@dataclass
class Usage:
    memories: int
    bytes: int


_cache: dict[int, tuple[float, Usage]] = {}
_lock = threading.Lock()


def quota_limits(tenant: Tenant) -> tuple[int, int]:
    """(memories, bytes): the tenant's own, else the settings'; 0 means no limit."""
    memories = tenant.max_memories if tenant.max_memories is not None else settings.TENANT_MAX_MEMORIES
    size = tenant.max_bytes if tenant.max_bytes is not None else settings.TENANT_MAX_BYTES
    return int(memories), int(size)


def tenant_usage(tenant_id: int) -> Usage:
    """Current (latest-version, not rejected) memories and their bytes of text and data."""
    now = time.monotonic()
    with _lock:
        cached = _cache.get(tenant_id)
        if cached and now - cached[0] < settings.QUOTA_USAGE_CACHE_SECONDS:
            return Usage(cached[1].memories, cached[1].bytes)
    with connection.cursor() as cursor:
        cursor.execute(
            f"""SELECT count(*), coalesce(sum(octet_length(m.text) + octet_length(m.data::text)), 0)
                FROM memory_items m
                WHERE m.tenant_id = %s AND {vocabulary.sql_not_replaced("m")} AND m.status <> %s""",
            [tenant_id, MemoryStatus.REJECTED.value])
        count, size = cursor.fetchone()
    usage = Usage(int(count), int(size))
    with _lock:
        _cache[tenant_id] = (now, usage)
    return Usage(usage.memories, usage.bytes)


@timed("quota")
def quota_check(tenant: Tenant, *, memories: int, size: int) -> None:
    """Refuse a write that would take the tenant past a quota; count it when it passes."""
    if memories <= 0 and size <= 0:
        return
    max_memories, max_bytes = quota_limits(tenant)
    if not max_memories and not max_bytes:
        return
    usage = tenant_usage(tenant.id)
    if max_memories and usage.memories + memories > max_memories:
        raise QuotaExceeded(f"tenant {tenant.name} holds {usage.memories} memories; {memories} more would pass "
                            f"its quota of {max_memories}", quota="memories", limit=max_memories,
                            used=usage.memories)
    if max_bytes and usage.bytes + size > max_bytes:
        raise QuotaExceeded(f"tenant {tenant.name} holds {usage.bytes} bytes of memories; {size} more would pass "
                            f"its quota of {max_bytes}", quota="bytes", limit=max_bytes, used=usage.bytes)
    with _lock:
        cached = _cache.get(tenant.id)
        if cached:
            cached[1].memories += memories
            cached[1].bytes += size


@forgotten_on_reset
def forget_usage(tenant_id: int | None = None) -> None:
    """Drop cached usage (after an erasure, or in tests)."""
    with _lock:
        if tenant_id is None:
            _cache.clear()
        else:
            _cache.pop(tenant_id, None)


def pending_work(tenant_id: int) -> int:
    """A tenant's background work still to do, in jobs: its conversation jobs waiting or running, and its
    saved batches still waiting for their embeddings (each MEMORY_BATCH_MAX memories awaiting one, or fewer,
    count as one job: a batch is background work as a conversation is)."""
    jobs = ConversationJob.objects.filter(tenant_id=tenant_id, status__in=vocabulary.PENDING_JOB_STATUSES).count()
    waiting = MemoryItem.objects.filter(tenant_id=tenant_id, embedding_state=EmbeddingState.PENDING,
                                        expired_at__isnull=True).count()
    return jobs + -(-waiting // max(1, settings.MEMORY_BATCH_MAX))


def refuse_when_busy(tenant_id: int, *, adding: int = 1, queue_full: bool = False) -> None:
    """TooBusy (429 with Retry-After) when `adding` more units of background work would pass the tenant's
    TENANT_MAX_PENDING_JOBS, or when the work would go to an in-process pool that is full (`queue_full`:
    queue.background_queue_full(), EAGER_BACKGROUND_QUEUE_MAX)."""
    limit = settings.TENANT_MAX_PENDING_JOBS
    pending = pending_work(tenant_id) if limit else 0
    if limit and pending + adding > limit:
        raise TooBusy(f"{pending} conversations or batches of this tenant are still waiting or running (limit "
                      f"{limit}, TENANT_MAX_PENDING_JOBS); retry when some are done", retry_after=5)
    if queue_full:
        raise TooBusy("the background queue of this server is full (EAGER_BACKGROUND_QUEUE_MAX); retry shortly",
                      retry_after=10)
