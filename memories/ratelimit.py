"""Rate limits: fixed-window counters per bucket (an API key, a tenant, a
client address that sent bad keys, an admin login).

Counters live in Redis when REDIS_URL is set, else in the database
(`rate_counters`): either way they are shared by every process and survive a
restart. A failing Redis falls back to the database rather than to no limit.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from django.conf import settings
from django.db import connection, transaction

from memories.models import RateCounter
from memories.network import client_bucket
from memories.process_state import forgotten_on_reset
from memories.working import redis_client

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Limit:
    """At most `requests` in each window of `seconds`."""

    requests: int
    seconds: int


@dataclass(frozen=True)
class Decision:
    allowed: bool
    count: int
    retry_after: int  # seconds until the window ends (0 when allowed)


def decide(count: int, limit: Limit, now: float) -> Decision:
    """Pure: a window's count against its limit."""
    if limit.requests <= 0 or count <= limit.requests:
        return Decision(True, count, 0)
    window_end = (int(now) // limit.seconds + 1) * limit.seconds
    return Decision(False, count, max(1, int(window_end - now)))


def hit(bucket: str, limit: Limit, *, cost: int = 1) -> Decision:
    """Count `cost` requests in the bucket's current window and decide."""
    now = time.time()
    if limit.requests <= 0:
        return Decision(True, 0, 0)
    window = int(now) // limit.seconds
    return decide(_add(bucket, window, limit.seconds, cost), limit, now)


def peek(bucket: str, limit: Limit) -> Decision:
    """The current window's decision without counting (a login about to be tried)."""
    now = time.time()
    return decide(_add(bucket, int(now) // limit.seconds, limit.seconds, 0), limit, now)


def reset(bucket: str, limit: Limit) -> None:
    bucket, window = bucket[:200], int(time.time()) // limit.seconds
    if settings.REDIS_URL and _redis_ok():
        try:
            _redis().delete(_redis_key(bucket, window))
            return
        except Exception:  # noqa: BLE001 - fall through to the database
            _redis_failed()

    RateCounter.objects.filter(bucket=bucket, window=window).delete()


# --------------------------------------------------------------------------- stores

_redis_retry_at = 0.0


def _redis():
    return redis_client()


def _redis_ok() -> bool:
    return time.monotonic() >= _redis_retry_at


def _redis_failed() -> None:
    global _redis_retry_at
    _redis_retry_at = time.monotonic() + 30
    logger.warning("rate limits use the database for 30 s: Redis unavailable")


def _redis_key(bucket: str, window: int) -> str:
    return f"rl:{bucket}:{window}"


def _add(bucket: str, window: int, seconds: int, cost: int) -> int:
    return _add_many([bucket], window, seconds, cost)[0]


@contextmanager
def counters_committed_without_waiting() -> Iterator[None]:
    """The counters' own transaction commits without waiting for its WAL to reach the disk
    (synchronous_commit off, for this transaction only): a commit's flush took 4 ms on these machines
    and every lease refill of a read paid it, while a counter lost in a crash (the last few hundred
    milliseconds of counts) only lets a few more requests through. Inside a caller's transaction
    nothing changes: the caller's writes keep their durable commit."""
    if connection.in_atomic_block:
        yield
        return
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("SET LOCAL synchronous_commit TO OFF")
        yield


def _add_many(buckets: list[str], window: int, seconds: int, cost: int) -> list[int]:
    """Add `cost` to each bucket's window in one round trip; the new counts, in order. A negative
    cost gives room back (a lease's unused part), never below zero."""
    buckets = [bucket[:200] for bucket in buckets]
    if settings.REDIS_URL and _redis_ok():
        try:
            pipe = _redis().pipeline(transaction=False)
            for bucket in buckets:
                pipe.incrby(_redis_key(bucket, window), cost)
                pipe.expire(_redis_key(bucket, window), seconds + 1)
            return [int(count) for count in pipe.execute()[::2]]
        except Exception:  # noqa: BLE001 - Redis down: the database keeps counting
            _redis_failed()
    # One upsert for all buckets (always in the caller's order: two requests never lock in opposite orders);
    # now and then the windows of the past go.
    with counters_committed_without_waiting(), connection.cursor() as cursor:
        cursor.execute(
            """INSERT INTO rate_counters (bucket, "window", count)
               SELECT b, %s, greatest(%s, 0) FROM unnest(%s::varchar[]) WITH ORDINALITY AS u(b, n) ORDER BY n
               ON CONFLICT (bucket, "window") DO UPDATE SET count = greatest(0, rate_counters.count + %s)
               RETURNING bucket, count""",
            [window, cost, buckets, cost])
        counts = dict(cursor.fetchall())
        if random.random() < 0.01:
            cursor.execute("""DELETE FROM rate_counters WHERE bucket = ANY(%s) AND "window" < %s""",
                           [buckets, window])
    return [int(counts[bucket]) for bucket in buckets]


# --------------------------------------------------------------------------- the service's limits


def key_limit() -> Limit:
    return Limit(settings.RATE_LIMIT_KEY_REQUESTS, settings.RATE_LIMIT_WINDOW_SECONDS)


def tenant_limit() -> Limit:
    return Limit(settings.RATE_LIMIT_TENANT_REQUESTS, settings.RATE_LIMIT_WINDOW_SECONDS)


def bad_key_limit() -> Limit:
    return Limit(settings.RATE_LIMIT_BAD_KEY_REQUESTS, settings.RATE_LIMIT_WINDOW_SECONDS)


def login_limit() -> Limit:
    return Limit(settings.ADMIN_LOGIN_MAX_FAILURES, settings.ADMIN_LOGIN_LOCKOUT_SECONDS)


def login_client_limit() -> Limit:
    return Limit(settings.ADMIN_LOGIN_MAX_FAILURES_PER_CLIENT, settings.ADMIN_LOGIN_LOCKOUT_SECONDS)


def bad_key_bucket(client_address: str) -> str:
    """The bad-key counter of a client: per IPv4 address or IPv6 /64 (memories.network.client_bucket)."""
    return f"badkey:{client_bucket(client_address)}"


def login_buckets(username: str, client_address: str) -> list[tuple[str, Limit]]:
    """Pure: the counters a login attempt answers to, the account's first. Per (account, client) and
    per client, never per account alone: a guesser slows only itself, and the real user logging in
    from anywhere else is never locked out. A client is an IPv4 address or an IPv6 /64."""
    client = client_bucket(client_address)
    return [(f"login:{username.casefold()}:{client}", login_limit()), (f"login-client:{client}", login_client_limit())]


def login_refused(username: str, client_address: str) -> Decision | None:
    """Whether a login may be tried at all: the refusal of the first counter already full, else None
    (checked before the password, so a locked-out guesser learns nothing even when right)."""
    for bucket, limit in login_buckets(username, client_address):
        state = peek(bucket, limit)
        if limit.requests > 0 and state.count >= limit.requests:
            return Decision(False, state.count, state.retry_after or limit.seconds)
    return None


def login_failed(username: str, client_address: str) -> int:
    """Count a failed login on every counter; the account-and-client count so far."""
    return [hit(bucket, limit).count for bucket, limit in login_buckets(username, client_address)][0]


def login_succeeded(username: str, client_address: str) -> None:
    """A right password clears this account's failures from this client (not the client's own count)."""
    reset(*login_buckets(username, client_address)[0])


def lease_granted(counts: list[int], limits: list[int], size: int) -> int:
    """Pure: of `size` requests just reserved in each bucket (counts: each bucket's count after the
    reservation), how many this process may admit — as many as every bucket still had room for."""
    return min(max(0, min(size, limit - (count - size))) for count, limit in zip(counts, limits, strict=True))


def next_lease_size(size: int, granted: int, cap: int) -> int:
    """Pure: a lease used in full doubles (up to `cap`); a short one — the limit is near — starts
    again at one, so that a process never holds much of what is left."""
    return min(cap, size * 2) if granted >= size else 1


def lease_cap(*limits: Limit) -> int:
    """How many requests a process may reserve ahead: RATE_LIMIT_LEASE_MAX, and never more than
    1/32 of a limit (with P processes, at most P/32 of a window can sit unused in other processes)."""
    return max(1, min(settings.RATE_LIMIT_LEASE_MAX, *(limit.requests // 32 for limit in limits)))


@dataclass
class _Lease:
    window: int
    tokens: int  # requests this process may still admit in the window without asking the store
    size: int  # the next reservation's size


class LeaseBook:
    """One process's reservations of rate-limit room, per (key, tenant).

    A request asks the shared counters (PostgreSQL or Redis) only when its lease is spent: it
    reserves `size` requests in both buckets in one round trip and admits what both had room
    for. The sum of all processes' admissions never passes a limit; what a process reserved and
    did not use is lost at the window's end (bounded by lease_cap). A refused request counts
    once, as without leases: the reserved rest is given back."""

    def __init__(self) -> None:
        self._leases: dict[tuple, _Lease] = {}
        self._lock = threading.Lock()

    def admit(self, buckets: list[str], limits: list[Limit], now: float) -> Decision:
        seconds = limits[0].seconds
        window = int(now) // seconds
        ident = (*buckets, *limits)
        with self._lock:
            lease = self._leases.get(ident)
            if lease is not None and lease.window == window and lease.tokens > 0:
                lease.tokens -= 1
                return Decision(True, 0, 0)
            size = lease.size if lease is not None and lease.window == window else 1
        counts = _add_many(buckets, window, seconds, size)
        granted = lease_granted(counts, [limit.requests for limit in limits], size)
        if granted < size:
            _add_many(buckets, window, seconds, -(size - max(granted, 1)))  # give back what is not taken
        with self._lock:
            if len(self._leases) > 10_000:
                self._leases = {k: v for k, v in self._leases.items() if v.window == window}
            lease = self._leases.get(ident)
            if lease is None or lease.window != window:
                lease = self._leases[ident] = _Lease(window, 0, 1)
            lease.tokens += max(0, granted - 1)
            lease.size = next_lease_size(size, granted, lease_cap(*limits))
        if granted:
            return Decision(True, counts[0], 0)
        return Decision(False, counts[0], max(1, int((window + 1) * seconds - now)))

    def forget(self) -> None:
        with self._lock:
            self._leases.clear()


_lease_book = LeaseBook()


@forgotten_on_reset
def forget_rate_state() -> None:
    """The leases this process holds are given up, and Redis is tried again at once."""
    global _redis_retry_at
    _lease_book.forget()
    _redis_retry_at = 0.0


def api_request_allowed(*, key_id: int, tenant_id: int, book: LeaseBook | None = None) -> Decision:
    """A request of one key: counted against the key and its tenant; the stricter decides. The
    process's lease book (LeaseBook) spares most requests the round trip to the counters."""
    now = time.time()
    by_key, by_tenant = key_limit(), tenant_limit()
    if by_key.seconds != by_tenant.seconds or by_key.requests <= 0 or by_tenant.requests <= 0:
        decisions = [hit(f"key:{key_id}", by_key), hit(f"tenant:{tenant_id}", by_tenant)]
        refused = [d for d in decisions if not d.allowed]
        return max(refused, key=lambda d: d.retry_after) if refused else decisions[0]
    return (book or _lease_book).admit([f"key:{key_id}", f"tenant:{tenant_id}"], [by_key, by_tenant], now)
