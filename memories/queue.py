"""Enqueue a Celery task by name, after commit.

Services name the task instead of importing the tasks module: tasks are the
interface layer and import services, never the other way round (the import
contract in pyproject.toml checks it). With no broker configured, Celery runs
the task in-process (eager), exactly as `.delay()` would.
"""

from __future__ import annotations

import hashlib
import logging
import os
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager, suppress
from functools import lru_cache

from django.conf import settings
from django.db import connections, transaction

from memories.process_state import forgotten_on_reset

logger = logging.getLogger(__name__)


_background: ThreadPoolExecutor | None = None
_background_pid = 0  # the process that made _background
_background_lock = threading.Lock()


def background_pool() -> ThreadPoolExecutor:
    """This process's in-process pool for background work when Celery is eager, made on first use."""
    global _background, _background_pid
    with _background_lock:
        if _background is None:
            _background = ThreadPoolExecutor(max_workers=max(1, settings.EAGER_BACKGROUND_WORKERS),
                                             thread_name_prefix="eager-job")
            _background_pid = os.getpid()
        return _background


@forgotten_on_reset
def forget_inherited_background_pool() -> None:
    """A pool made by the process this one was forked from has no threads here, and the tasks it counted
    will never run here: both are dropped. This process's own pool is left running, so that the tasks it
    holds finish and drain_background can wait for them."""
    global _background, _waiting
    with _background_lock:
        if _background is not None and _background_pid != os.getpid():
            _background, _waiting = None, 0


def _lower_this_threads_priority() -> None:
    """Background jobs yield the CPU to requests (Linux: niceness is per thread)."""
    try:
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 10)
    except (AttributeError, OSError):  # not Linux, or not permitted: run at normal priority
        pass


_waiting = 0  # tasks submitted to this process's pool and not finished (EAGER_BACKGROUND_QUEUE_MAX bounds it)


class BackgroundQueueFull(Exception):
    """This process's background pool holds EAGER_BACKGROUND_QUEUE_MAX tasks already."""


def background_queue_full() -> bool:
    """Whether this process's in-process pool is full (never with a broker: the broker queues)."""
    from celery import current_app as app  # the project's app (memory_project/celery.py)

    bound = settings.EAGER_BACKGROUND_QUEUE_MAX
    return bool(app.conf.task_always_eager and bound and _waiting >= bound)


def _run_in_background(task, args: tuple) -> None:
    global _waiting

    def run() -> None:
        global _waiting
        _lower_this_threads_priority()
        try:
            task.apply(args=args)
        except Exception:
            logger.exception("background task %s failed", task.name)
        finally:
            with _background_lock:
                _waiting -= 1
            connections.close_all()  # this thread's connections go back to the pool

    with _background_lock:
        if settings.EAGER_BACKGROUND_QUEUE_MAX and _waiting >= settings.EAGER_BACKGROUND_QUEUE_MAX:
            raise BackgroundQueueFull(f"{_waiting} background tasks waiting in this process "
                                      f"(EAGER_BACKGROUND_QUEUE_MAX {settings.EAGER_BACKGROUND_QUEUE_MAX})")
        _waiting += 1
    try:
        background_pool().submit(run)
    except BaseException:
        with _background_lock:
            _waiting -= 1
        raise


# ------------------------------------------------------------------ who is running what (advisory locks)
# A worker running a conversation job or a reflection cycle holds a PostgreSQL session-level advisory lock
# on it. The lock goes with the database session, so when the worker's process dies (SIGKILL, OOM, a
# restart) it is released at once: a reclaimer that can take it knows no live worker runs the work.

def _lock_key(kind: str, work_id: object) -> int:
    """One 64-bit key per piece of work (kind and id hashed together: no collision in practice)."""
    return int.from_bytes(hashlib.blake2b(f"work:{kind}:{work_id}".encode(), digest_size=8).digest(), "big",
                          signed=True)


def work_lock_try(kind: str, work_id: object) -> bool:
    """Take the lock on one piece of work for this database session (False: a live worker holds it)."""
    with connections["default"].cursor() as cursor:
        cursor.execute("SELECT pg_try_advisory_lock(%s)", [_lock_key(kind, work_id)])
        return bool(cursor.fetchone()[0])


def work_lock_release(kind: str, work_id: object) -> None:
    with connections["default"].cursor() as cursor:
        cursor.execute("SELECT pg_advisory_unlock(%s)", [_lock_key(kind, work_id)])


@contextmanager
def holding_work(kind: str, work_id: object) -> Iterator[bool]:
    """Hold the work's lock while the block runs; yields False (and holds nothing) when another live
    worker holds it already."""
    held = work_lock_try(kind, work_id)
    try:
        yield held
    finally:
        if held:
            try:
                work_lock_release(kind, work_id)
            except Exception:  # noqa: BLE001 - a lost session released it already
                logger.warning("work lock %s %s not released (its session is gone)", kind, work_id)


def drain_background(timeout: float = 60.0) -> bool:
    """Wait until every background task queued so far has run (True), or `timeout` passes (False).
    The test suite drains after each test, so that a job one test queued never runs inside the next
    one's transaction window (it would count as another writer there: reflection.open_writes_started_at)."""
    with _background_lock:
        pool = _background
    if pool is None:
        return True
    workers = max(1, settings.EAGER_BACKGROUND_WORKERS)
    barrier = threading.Barrier(workers + 1)

    def wait_at_barrier() -> None:  # every worker reaches it only after the tasks queued before it
        try:
            barrier.wait(timeout)
        except threading.BrokenBarrierError:
            pass

    for _ in range(workers):
        pool.submit(wait_at_barrier)
    try:
        barrier.wait(timeout)
        return True
    except threading.BrokenBarrierError:
        return False


_discovery_lock = threading.Lock()


def _registered(app, task_name: str):
    """The task by name. Task modules are discovered lazily (at worker start, or here on first
    use); one thread discovers while the others wait, or parallel first requests of a fresh
    process see a half-filled registry ("never registered")."""
    if task_name not in app.tasks:
        with _discovery_lock:
            if task_name not in app.tasks:
                app.loader.import_default_modules()
    return app.tasks[task_name]


def enqueue(task_name: str, *args, on_commit: bool = True, swallow_broker_errors: bool = False,
            background: bool = False) -> None:
    """Send `task_name(*args)` (after the surrounding transaction commits, by
    default). `background`: with no broker (Celery eager) the task runs on a
    small in-process thread pool instead of inside the request."""

    def send() -> None:
        from celery import current_app as app  # the project's app (memory_project/celery.py)

        try:
            task = _registered(app, task_name)
            if background and app.conf.task_always_eager:
                try:
                    _run_in_background(task, args)
                except BackgroundQueueFull as exc:  # its row stays queued: the reclaim sweep runs it
                    logger.warning("%s not run now: %s", task_name, exc)
                return
            task.delay(*args)
        except Exception:
            if not swallow_broker_errors:
                raise
            logger.exception("could not enqueue %s; a sweep or backfill will pick the work up", task_name)

    if on_commit:
        transaction.on_commit(send)
    else:
        send()


# ------------------------------------------------------------------ a nudge sent once per tenant per window
# A stream of saves nudged reflection once each: a task per save, the worker's CPU spent asking again and again.
# A nudge now adds its users to the tenant's set in Redis and claims the tenant's key (SET NX), both in one
# MULTI; only the nudge that claims it sends the task, `window` seconds later. The task, as it starts, takes
# the set and lets the key go in one MULTI (coalesced_taken), before it reads: a save that committed before
# that is in the set it took, a later one claims the key again and sends the next task. A task that runs
# later than the key lives (a backlog) is sent twice, never not at all.


@lru_cache(maxsize=4)
def _redis(url: str):
    import redis  # only with a broker and REDIS_URL: eager installs need no Redis client

    return redis.Redis.from_url(url, socket_timeout=1, socket_connect_timeout=1)


forgotten_on_reset(_redis.cache_clear)  # a client's sockets are not to be shared with a forked child


def _coalesce_keys(task_name: str, tenant_id: int) -> tuple[str, str]:
    """(the claim, the set of users waiting) of one task and tenant."""
    return f"memory:coalesce:{task_name}:{tenant_id}", f"memory:coalesce:{task_name}:{tenant_id}:users"


def enqueue_coalesced(task_name: str, tenant_id: int, user_ids: list[str], *, window: float,
                      on_commit: bool = True) -> None:
    """Send `task_name(tenant_id, users)` once for every call about the tenant within `window` seconds, that
    long after the first (after the surrounding commit by default); the task takes the other calls' users
    from Redis (coalesced_taken). Eager, without REDIS_URL, with window 0 or when Redis fails: sent at once,
    as `enqueue` does. Broker errors are logged, never raised."""

    def send() -> None:
        from celery import current_app as app  # the project's app (memory_project/celery.py)

        claim, users = _coalesce_keys(task_name, tenant_id)
        claimed, countdown = False, None
        if window > 0 and settings.REDIS_URL and not app.conf.task_always_eager:
            lifetime = max(60, int(window * 10))
            try:
                pipe = _redis(settings.REDIS_URL).pipeline(transaction=True)
                pipe.sadd(users, *user_ids).expire(users, lifetime).set(claim, "1", nx=True, ex=lifetime)
                claimed = bool(pipe.execute()[2])
            except Exception:  # noqa: BLE001 - Redis down: every nudge is sent, as before coalescing
                logger.warning("could not coalesce %s; sent at once", task_name, exc_info=True)
            else:
                if not claimed:
                    return  # a task of the tenant is waiting: it takes these users from the set
                countdown = window
        try:
            _registered(app, task_name).apply_async(args=(tenant_id, list(user_ids)), countdown=countdown)
        except Exception:
            logger.exception("could not enqueue %s; a sweep will pick the work up", task_name)
            if claimed:  # not sent: the next nudge must not wait for a task that will never run
                with suppress(Exception):
                    _redis(settings.REDIS_URL).delete(claim)

    if on_commit:
        transaction.on_commit(send)
    else:
        send()


def coalesced_taken(task_name: str, tenant_id: int, user_ids: list[str]) -> list[str]:
    """A coalesced task, starting: its own users and those later calls added, the set emptied and the claim
    let go together, so the next call sends a task again. Called before the task reads anything."""
    if not settings.REDIS_URL:
        return list(user_ids)
    claim, users = _coalesce_keys(task_name, tenant_id)
    try:
        pipe = _redis(settings.REDIS_URL).pipeline(transaction=True)
        waiting = pipe.smembers(users).delete(users).delete(claim).execute()[0]
    except Exception:  # noqa: BLE001 - the keys expire on their own; calls meanwhile wait for them
        logger.warning("could not take the coalesced %s of tenant %s", task_name, tenant_id, exc_info=True)
        return list(user_ids)
    return sorted({*user_ids, *(member.decode() for member in waiting)})


def queue_depth(queue: str = "celery") -> int | None:
    """Messages waiting on the broker's queue: 0 in eager mode, None when the broker can't be asked."""
    if not settings.CELERY_BROKER_URL:
        return 0
    try:
        from celery import current_app as app  # the project's app (memory_project/celery.py)

        with app.connection_for_read() as conn:
            conn.ensure_connection(max_retries=1, timeout=2)
            return int(conn.default_channel.queue_declare(queue=queue, passive=True).message_count)
    except Exception as exc:  # noqa: BLE001 - a scrape reports what it can
        if getattr(exc, "code", None) == 404 or "NOT_FOUND" in str(exc):
            return 0  # no queue yet: nothing was ever sent (Redis keeps no empty lists)
        logger.warning("queue depth unavailable", exc_info=True)
        return None
