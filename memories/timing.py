"""Where a request's milliseconds go: named phases, timed exclusively.

A request opens a `Timeline` (the outermost middleware does it); code that is worth
telling apart — the key lookup, the rate limit, validation, the search, rendering,
the log line — wraps itself in `phase(name)`. Phases nest; each one's time is its
own (a phase inside another is not counted twice), and what no phase claims is the
request's `rest` (Django's middleware, DRF's dispatch, glue). SQL time is counted
beside them (`db`, with the number of statements), inside whichever phase ran it.

Outside a request (tasks, commands, tests calling services) `phase` costs one
context-variable read and times nothing. The `Server-Timing` header
(SERVER_TIMING setting) is how `make bench-requests` reads the phases from outside.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, TypeVar

T = TypeVar("T")

# The phases a request may report, in the order a header lists them.
PHASES = ("auth", "ratelimit", "quota", "validate", "embed", "work", "serialize", "render", "log", "rest")


@dataclass
class Timeline:
    """One request's phases: exclusive milliseconds by name, plus SQL time and statements."""

    started: float = field(default_factory=time.perf_counter)
    exclusive_ms: dict[str, float] = field(default_factory=dict)
    db_ms: float = 0.0
    db_statements: int = 0
    # Work done for the request on another thread while it went on (not a phase: the phases still add up).
    alongside_ms: dict[str, float] = field(default_factory=dict)
    _children_ms: list[float] = field(default_factory=lambda: [0.0])  # a stack: time taken by inner phases

    def total_ms(self) -> float:
        return (time.perf_counter() - self.started) * 1000

    def rest_ms(self) -> float:
        """What no phase claimed: the request's total less every phase's own time."""
        return max(0.0, self.total_ms() - sum(self.exclusive_ms.values()))


_current: ContextVar[Timeline | None] = ContextVar("request_timeline", default=None)


def timeline_begin() -> tuple[Timeline, object]:
    """Start timing a request; the token goes back to `timeline_end`."""
    timeline = Timeline()
    return timeline, _current.set(timeline)


def timeline_end(token) -> None:
    _current.reset(token)


def current_timeline() -> Timeline | None:
    return _current.get()


@contextmanager
def phase(name: str) -> Iterator[None]:
    """Count the time inside as `name`'s own (less any phase nested in it)."""
    timeline = _current.get()
    if timeline is None:
        yield
        return
    started = time.perf_counter()
    timeline._children_ms.append(0.0)
    try:
        yield
    finally:
        elapsed = (time.perf_counter() - started) * 1000
        children = timeline._children_ms.pop()
        timeline._children_ms[-1] += elapsed
        timeline.exclusive_ms[name] = timeline.exclusive_ms.get(name, 0.0) + max(0.0, elapsed - children)


def alongside(name: str, function: Callable[..., T], *args: Any) -> Callable[[], T]:
    """`function(*args)` to run on another thread for the current request: its time is reported as
    `name-alongside` (/context embeds its question while it reads the profile and traits)."""
    timeline = _current.get()

    def run() -> T:
        started = time.perf_counter()
        try:
            return function(*args)
        finally:
            if timeline is not None:
                timeline.alongside_ms[name] = (timeline.alongside_ms.get(name, 0.0)
                                               + (time.perf_counter() - started) * 1000)

    return run


def count_statement(execute, sql, params, many, context):
    """A `connection.execute_wrapper`: each SQL statement's time, added to the current request's."""
    timeline = _current.get()
    if timeline is None:
        return execute(sql, params, many, context)
    started = time.perf_counter()
    try:
        return execute(sql, params, many, context)
    finally:
        timeline.db_ms += (time.perf_counter() - started) * 1000
        timeline.db_statements += 1


def server_timing(timeline: Timeline) -> str:
    """The `Server-Timing` header's value: total, each phase that took time, rest, then db
    (a part of the phases, not one more)."""
    parts = [f"total;dur={timeline.total_ms():.2f}"]
    parts += [f"{name};dur={timeline.exclusive_ms[name]:.2f}" for name in PHASES if name in timeline.exclusive_ms]
    parts.append(f"rest;dur={timeline.rest_ms():.2f}")
    parts += [f"{name}-alongside;dur={ms:.2f}" for name, ms in timeline.alongside_ms.items()]
    parts.append(f'db;dur={timeline.db_ms:.2f};desc="{timeline.db_statements} statements"')
    return ", ".join(parts)


def parse_server_timing(value: str) -> dict[str, float]:
    """Milliseconds by name from a `Server-Timing` header (the bench reads its own servers)."""
    found: dict[str, float] = {}
    for part in value.split(","):
        name, *params = [piece.strip() for piece in part.split(";")]
        for param in params:
            if param.startswith("dur="):
                found[name] = float(param[4:])
    return found


def timed(name: str):
    """A decorator: every call of the function is `name`'s time (see `phase`)."""
    def decorate(function):
        @functools.wraps(function)
        def wrapper(*args, **kwargs):
            with phase(name):
                return function(*args, **kwargs)

        return wrapper

    return decorate
