"""Enqueue a Celery task by name, after commit.

Services name the task instead of importing the tasks module: tasks are the
interface layer and import services, never the other way round (the import
contract in pyproject.toml checks it). With no broker configured, Celery runs
the task in-process (eager), exactly as `.delay()` would.
"""

from __future__ import annotations

import logging
import os
import threading
from concurrent.futures import ThreadPoolExecutor

from django.conf import settings
from django.db import connections, transaction

logger = logging.getLogger(__name__)


_background: ThreadPoolExecutor | None = None
_background_lock = threading.Lock()


def _background_pool() -> ThreadPoolExecutor:
    global _background
    with _background_lock:
        if _background is None:
            _background = ThreadPoolExecutor(max_workers=max(1, settings.EAGER_BACKGROUND_WORKERS),
                                             thread_name_prefix="eager-job")
        return _background


def _lower_this_threads_priority() -> None:
    """Background jobs yield the CPU to requests (Linux: niceness is per thread)."""
    try:
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 10)
    except (AttributeError, OSError):  # not Linux, or not permitted: run at normal priority
        pass


def _run_in_background(task, args: tuple) -> None:
    def run() -> None:
        _lower_this_threads_priority()
        try:
            task.apply(args=args)
        except Exception:
            logger.exception("background task %s failed", task.name)
        finally:
            connections.close_all()  # this thread's connections go back to the pool

    _background_pool().submit(run)


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
                _run_in_background(task, args)
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
