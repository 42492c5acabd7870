"""Reads that may go to a read replica: the search path (search and context).

With DATABASE_REPLICA_URL set, settings add a `replica` database. A block run
through `on_replica(work)` reads from it — the router
(memory_project/routers.py) sends the ORM's reads there and the search module
asks `read_alias()` for its raw SQL — and everything else (writes, the
ingestion's reads, reads inside a write) stays on the primary. If the replica
can't be reached the same work runs again on the primary.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TypeVar

from django.conf import settings
from django.db import InterfaceError, OperationalError

REPLICA = "replica"
PRIMARY = "default"
_alias: ContextVar[str] = ContextVar("read_alias", default=PRIMARY)
logger = logging.getLogger(__name__)
T = TypeVar("T")


def replica_configured() -> bool:
    return REPLICA in settings.DATABASES


def read_alias() -> str:
    """The database the current block reads from."""
    return _alias.get()


@contextmanager
def reading_from(alias: str) -> Iterator[None]:
    token = _alias.set(alias)
    try:
        yield
    finally:
        _alias.reset(token)


def on_replica(work: Callable[[], T]) -> T:
    """Run a read-only block on the replica when there is one; on the primary if the replica is down."""
    if not replica_configured():
        return work()
    try:
        with reading_from(REPLICA):
            return work()
    except (OperationalError, InterfaceError):
        logger.warning("read replica unavailable; read from the primary instead", exc_info=True)
        return work()
