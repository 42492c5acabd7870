"""Database failures that running the same transaction again cures, and the loop that runs it again.

A deadlock victim (40P01), a serialization failure (40001), a connection the server dropped or a
server restarting (class 08, 57P01-57P03) say nothing about the work itself: the transaction rolled
back whole, so running it again from the start is safe, and is what PostgreSQL's documentation asks of
applications. Issue 51: conversation jobs ended `failed` on a deadlock after their 202, and nothing ran
them again. Any other error (a constraint, bad data, a bug) is permanent and is raised at once.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable
from typing import TypeVar

from django.db import DatabaseError, Error, connection

logger = logging.getLogger(__name__)
T = TypeVar("T")

DEADLOCK, SERIALIZATION, CONNECTION = "deadlock", "serialization failure", "connection lost"
# SQLSTATE -> cause; class 08 (connection exception) is matched by its prefix.
TRANSIENT_STATES = {"40P01": DEADLOCK, "40001": SERIALIZATION, "57P01": CONNECTION, "57P02": CONNECTION,
                    "57P03": CONNECTION}


def transient_cause(exc: BaseException) -> str | None:
    """Why a retry may cure `exc` (DEADLOCK, SERIALIZATION, CONNECTION), or None when it is permanent.
    Django wraps the driver's error: the SQLSTATE is on its cause. A driver error with no SQLSTATE is a
    connection that broke before the server could answer."""
    if not isinstance(exc, Error):  # Django's DatabaseError and InterfaceError (a closed connection)
        return None
    cause = exc.__cause__ if exc.__cause__ is not None else exc
    state = getattr(cause, "sqlstate", None)
    if state is None:  # the driver's own error, before any answer from the server: a broken connection
        return CONNECTION if type(cause).__name__ in ("OperationalError", "InterfaceError") else None
    if state in TRANSIENT_STATES:
        return TRANSIENT_STATES[state]
    return CONNECTION if state.startswith("08") else None


def backoff_seconds(attempt: int, *, base: float, cap: float, rng: random.Random | None = None) -> float:
    """Exponential backoff with jitter: a wait between half and all of base x 2^attempt (capped), so two
    transactions that deadlocked do not come back in step and collide again."""
    ceiling = min(cap, base * (2 ** attempt))
    return (rng or random).uniform(ceiling / 2, ceiling)


def run_retrying(work: Callable[[], T], *, attempts: int, base: float, cap: float = 5.0,
                 deadline: float | None = None, what: str = "transaction",
                 on_retry: Callable[[str, int], None] | None = None) -> T:
    """Run `work` (one whole transaction: it opens and commits its own, and is safe to run again) until
    it succeeds, retrying transient failures up to `attempts` times with backoff; raises the last error
    when they keep coming, when `deadline` (time.monotonic) would pass, or at once for a permanent one.
    Inside a caller's transaction nothing is retried: the caller's transaction is the one that failed."""
    attempt = 0
    while True:
        try:
            return work()
        except Error as exc:
            cause = transient_cause(exc)
            if cause is None or attempt >= attempts or connection.in_atomic_block:
                raise
            wait = backoff_seconds(attempt, base=base, cap=cap)
            if deadline is not None and time.monotonic() + wait > deadline:
                raise
            logger.warning("%s hit a %s (attempt %d of %d); running it again in %.2f s", what, cause,
                           attempt + 1, attempts + 1, wait)
            if on_retry is not None:
                on_retry(cause, attempt)
            if cause == CONNECTION:
                _drop_connection()
            time.sleep(wait)
            attempt += 1


def _drop_connection() -> None:
    """A broken connection is closed so the next query opens a fresh one (a pool discards the broken one)."""
    try:
        connection.close()
    except DatabaseError:
        connection.connection = None
