"""Everything a process keeps for its own life, forgotten in one call: reset().

The caches, pools and loaded models of the service live in the modules that use them (the API keys
found, tenants' usage, rate-limit leases, buffered read counts, the active embedder and its models,
query vectors, vector plans, Redis clients, the background pools). Each of those modules
registers here how to forget its own state, so reset() reaches all of it without a list to keep in
step, and without the caller knowing any of their names.

Who calls it: a Celery worker process right after the fork (memory_project/celery.py) — threads do not
survive a fork, and a read count the parent buffered would be written twice — and the tests, which
change the settings a cache was built from."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, TypeVar

T = TypeVar("T")
Forget = TypeVar("Forget", bound=Callable[[], None])

_forgetters: list[Callable[[], None]] = []


def forgotten_on_reset(forget: Forget) -> Forget:
    """Register `forget` (no arguments) to run at every reset(); returns it, so it can decorate."""
    _forgetters.append(forget)
    return forget


def reset() -> None:
    """Forget this process's caches, pools and loaded models; each is built again when next needed."""
    for forget in list(_forgetters):
        forget()


class ThreadPool:
    """A thread pool that belongs to the process using it: made on first submit, and made again in a
    process forked from one that had made it (the parent's threads are not there, and work submitted to
    its pool would wait for ever)."""

    def __init__(self, **executor_options: Any):
        self._options = executor_options
        self._pool: tuple[int, ThreadPoolExecutor] | None = None
        self._lock = threading.Lock()
        forgotten_on_reset(self._forget_inherited)

    def submit(self, function: Callable[[], T]) -> Future[T]:
        with self._lock:
            if self._pool is None or self._pool[0] != os.getpid():
                self._pool = (os.getpid(), ThreadPoolExecutor(**self._options))
            pool = self._pool[1]
        return pool.submit(function)

    def _forget_inherited(self) -> None:
        with self._lock:
            if self._pool is not None and self._pool[0] != os.getpid():
                self._pool = None
