"""How often clients get each memory back (access_count, last_accessed_at).

A write per search would turn every read into a row update, so reads are
counted in a buffer and written in batches: in Redis when REDIS_URL is set
(shared by every process, flushed by the `flush-access-counts` beat job), else
in this process (flushed when it holds FLUSH_AFTER_IDS memories or is
FLUSH_AFTER_SECONDS old). Counts are usage statistics, not audit: a process
that dies loses at most its unflushed local buffer; Redis buffers are renamed
before they are written, so a failed write is retried by the next flush.
"""

from __future__ import annotations

import atexit
import logging
import threading
import time
import uuid
from collections.abc import Iterable, Sequence

import redis
from django.conf import settings
from django.db import DatabaseError

from memories.process_state import forgotten_on_reset
from memories.working import WorkingMemoryUnavailable, redis_client
from memories.writing import memory_add_reads

logger = logging.getLogger(__name__)

REDIS_KEY = "memory:access"
FLUSHING_PREFIX = "memory:access:flushing:"
FLUSH_AFTER_IDS = 500
FLUSH_AFTER_SECONDS = 30.0


class _LocalBuffer:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.counts: dict[str, tuple[int, float]] = {}
        self.started = time.monotonic()

    def add(self, ids: Iterable[str], at: float) -> None:
        with self.lock:
            if not self.counts:
                self.started = time.monotonic()
            for memory_id in ids:
                count, _ = self.counts.get(memory_id, (0, at))
                self.counts[memory_id] = (count + 1, at)

    def due(self) -> bool:
        return len(self.counts) >= FLUSH_AFTER_IDS or (
            bool(self.counts) and time.monotonic() - self.started >= FLUSH_AFTER_SECONDS)

    def take(self) -> dict[str, tuple[int, float]]:
        with self.lock:
            taken, self.counts = self.counts, {}
            return taken

    def put_back(self, counts: dict[str, tuple[int, float]]) -> None:
        with self.lock:
            for memory_id, (count, at) in counts.items():
                have, last = self.counts.get(memory_id, (0, at))
                self.counts[memory_id] = (have + count, max(last, at))


_local = _LocalBuffer()
REDIS_RETRY_SECONDS = 30.0
_redis_retry_at = 0.0


def record_memory_access(memory_ids: Sequence[str]) -> None:
    """Count one read of each memory a client was given. Never fails the read."""
    if not memory_ids:
        return
    ids = [str(i) for i in memory_ids]
    now = time.time()
    global _redis_retry_at
    if settings.REDIS_URL and time.monotonic() >= _redis_retry_at:
        try:
            pipe = redis_client().pipeline(transaction=False)
            for memory_id in ids:
                pipe.hincrby(REDIS_KEY, memory_id, 1)
            pipe.hset(REDIS_KEY, mapping={f"{memory_id}:t": now for memory_id in ids})
            pipe.execute()
            return
        except redis.RedisError as exc:
            # A Redis that hangs must not cost every search its timeout: skip it for a while.
            _redis_retry_at = time.monotonic() + REDIS_RETRY_SECONDS
            logger.warning("access counts use the process buffer for %.0f s: Redis unavailable (%s)",
                           REDIS_RETRY_SECONDS, exc)
    _local.add(ids, now)
    if _local.due():
        flush_local_access_counts()


def forget_access_counts(memory_ids: Sequence[str], *, dry_run: bool = False) -> int:
    """Drop (or count) buffered reads of erased memories, in Redis and here;
    returns how many buffered entries there were."""
    ids = {str(i) for i in memory_ids}
    if not ids:
        return 0
    with _local.lock:
        found = [i for i in ids if i in _local.counts]
        if not dry_run:
            for memory_id in found:
                del _local.counts[memory_id]
    held = len(found)
    if settings.REDIS_URL:
        fields = [name for i in ids for name in (i, f"{i}:t")]
        client = redis_client()
        try:
            for key in [REDIS_KEY, *client.scan_iter(match=f"{FLUSHING_PREFIX}*")]:
                held += sum(1 for value in client.hmget(key, list(ids)) if value is not None)
                if not dry_run:
                    client.hdel(key, *fields)
        except redis.RedisError as exc:
            raise WorkingMemoryUnavailable(f"Redis unavailable: {exc}") from exc
    return held


def flush_local_access_counts() -> int:
    """Write this process's buffer (also at a clean exit, see below)."""
    counts = _local.take()
    if not counts:
        return 0
    try:
        return memory_add_reads(counts=counts)
    except DatabaseError:
        logger.warning("could not write %d access counts; kept for the next flush", len(counts))
        _local.put_back(counts)
        return 0


@forgotten_on_reset
def forget_access_state() -> None:
    """Reads buffered here are dropped unwritten (in a process forked from another, its parent writes
    them), and Redis is tried again at once."""
    global _redis_retry_at
    _local.take()
    _redis_retry_at = 0.0


def discard_local_access_counts() -> int:
    """Drop this process's buffer unwritten (a test run's counts point at rolled-back rows)."""
    return len(_local.take())


def _flush_at_exit() -> None:
    try:
        flush_local_access_counts()
    except Exception:  # the database may already be gone; counts are statistics
        logger.warning("access counts not written at exit", exc_info=True)


atexit.register(_flush_at_exit)


def flush_access_counts() -> int:
    """Write every buffered count (Redis and this process); returns the memories updated."""
    written = flush_local_access_counts()
    if not settings.REDIS_URL:
        return written

    client = redis_client()
    try:
        client.rename(REDIS_KEY, f"{FLUSHING_PREFIX}{uuid.uuid4().hex}")
    except redis.ResponseError:
        pass  # nothing counted since the last flush
    for key in client.scan_iter(match=f"{FLUSHING_PREFIX}*"):
        raw = client.hgetall(key)
        counts = _parse_redis_counts(raw)
        written += memory_add_reads(counts=counts)  # raises on a database fault: the key stays for the next run
        client.delete(key)
    return written


def _parse_redis_counts(raw: dict[bytes, bytes]) -> dict[str, tuple[int, float]]:
    counts: dict[str, tuple[int, float]] = {}
    for field, value in raw.items():
        name = field.decode()
        if name.endswith(":t"):
            continue
        at = float(raw.get(f"{name}:t".encode(), b"0") or 0)
        counts[name] = (int(value), at)
    return counts
