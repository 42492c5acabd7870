"""Working memory: each user's most recently extracted memories, newest first, for a day.

Seed 003's tier between quarantine and long-term memory. Two stores behind one API
(WORKING_MEMORY_STORE): a Redis list per user when REDIS_URL is set, otherwise a
table on the service's own PostgreSQL (WorkingMemoryEntry), so the embedded default
has it too. Same size (WORKING_MEMORY_SIZE, the newest kept) and TTL
(WORKING_MEMORY_TTL, renewed by every push, as Redis' EXPIRE on the list) in both.
What enters it is filtered as the seed says: confident enough and long enough
(worth_holding).

Optional by design: with the store off or Redis down, ingestion and context still
work; callers get a WorkingMemoryUnavailable to report, never a crash.
"""

from __future__ import annotations

import json
import logging
from datetime import timedelta
from functools import lru_cache

import redis
from django.conf import settings
from django.db import DatabaseError, transaction
from django.utils import timezone

from memories.models import MemoryItem, WorkingMemoryEntry
from memories.process_state import forgotten_on_reset

logger = logging.getLogger(__name__)

STORES = ("auto", "redis", "database", "off")
# Seed 003's inbound filter: confidence at least this (hedged statements, 0.4, stay out) ...
WORKING_MEMORY_MIN_CONFIDENCE = 0.8
# ... and at least this many characters. The seed's 50 was for raw chunks; an extracted statement is
# short ("用户对花生过敏" is 7), so the floor only keeps out fragments.
WORKING_MEMORY_MIN_CHARS = 6


class WorkingMemoryUnavailable(Exception):
    pass


@lru_cache(maxsize=4)
def _client(url: str):
    return redis.Redis.from_url(url, socket_timeout=1, socket_connect_timeout=1)


forgotten_on_reset(_client.cache_clear)  # a client's sockets are not to be shared with a forked child


def redis_client():
    """The configured Redis (REDIS_URL), one client per process."""
    return _client(settings.REDIS_URL)


def working_store(setting: str, redis_url: str) -> str:
    """Which store holds working memory: redis, database or off. auto: Redis when it is
    configured, the database otherwise (the embedded default has working memory too)."""
    if setting == "auto":
        return "redis" if redis_url else "database"
    if setting == "redis" and not redis_url:
        return "off"
    return setting


def _store() -> str:
    return working_store(settings.WORKING_MEMORY_STORE, settings.REDIS_URL)


_OFF = "working memory is off (WORKING_MEMORY_STORE, or redis without REDIS_URL)"


def worth_holding(text: str, confidence: float, *, min_confidence: float, min_chars: int) -> bool:
    """Seed 003's inbound filter: a memory enters working memory when it is confident enough
    and long enough to say something (WORKING_MEMORY_MIN_CONFIDENCE, WORKING_MEMORY_MIN_CHARS)."""
    return confidence >= min_confidence and len(text.strip()) >= min_chars


def _key(tenant_id: int, user_id: str) -> str:
    return f"wm:{tenant_id}:{user_id}"


def working_memory_push(items: list[MemoryItem]) -> int:
    """Push freshly saved memories (newest last in `items`) that pass the inbound filter; keep
    each user's newest WORKING_MEMORY_SIZE and renew their TTL. Returns how many entered."""
    store = _store()
    if store == "off":
        raise WorkingMemoryUnavailable(_OFF)
    held = [item for item in items if worth_holding(item.text, item.confidence,
                                                     min_confidence=WORKING_MEMORY_MIN_CONFIDENCE,
                                                     min_chars=WORKING_MEMORY_MIN_CHARS)]
    by_user: dict[tuple[int, str], list[MemoryItem]] = {}
    for item in held:
        by_user.setdefault((item.tenant_id, item.user_id), []).append(item)
    if store == "redis":
        _redis_push(by_user)
    else:
        _database_push(by_user)
    return len(held)


def _redis_push(by_user: dict[tuple[int, str], list[MemoryItem]]) -> None:
    try:
        pipe = _client(settings.REDIS_URL).pipeline()
        for (tenant_id, user_id), user_items in by_user.items():
            key = _key(tenant_id, user_id)
            for item in user_items:
                pipe.lpush(key, json.dumps({"id": str(item.id), "text": item.text,
                                            "created_at": item.created_at.isoformat()}))
            pipe.ltrim(key, 0, settings.WORKING_MEMORY_SIZE - 1)
            pipe.expire(key, settings.WORKING_MEMORY_TTL)
        pipe.execute()
    except redis.RedisError as exc:
        raise WorkingMemoryUnavailable(f"Redis unavailable: {exc}") from exc


EXPIRED_PURGED_PER_PUSH = 500  # rows of lapsed entries (any user's) a push deletes on its way


def _database_push(by_user: dict[tuple[int, str], list[MemoryItem]]) -> None:
    """Insert, trim each user to the newest WORKING_MEMORY_SIZE, renew the user's TTL, and
    delete a bounded number of anyone's lapsed rows (no beat job needed to keep it small)."""
    now = timezone.now()
    expires = now + timedelta(seconds=settings.WORKING_MEMORY_TTL)
    try:
        with transaction.atomic():
            for (tenant_id, user_id), user_items in by_user.items():
                mine = WorkingMemoryEntry.objects.filter(tenant_id=tenant_id, user_id=user_id)
                mine.filter(expires_at__lte=now).delete()  # a lapsed list is gone, as Redis' key would be
                WorkingMemoryEntry.objects.bulk_create([
                    WorkingMemoryEntry(tenant_id=tenant_id, user_id=user_id, item_id=item.id,
                                       pushed_at=now + timedelta(microseconds=order), expires_at=expires)
                    for order, item in enumerate(user_items)])
                beyond = mine.order_by("-pushed_at", "-id").values_list("id", flat=True)[settings.WORKING_MEMORY_SIZE:]
                WorkingMemoryEntry.objects.filter(id__in=list(beyond)).delete()
                mine.update(expires_at=expires)
            lapsed = WorkingMemoryEntry.objects.filter(expires_at__lte=now).values_list("id", flat=True)
            WorkingMemoryEntry.objects.filter(id__in=list(lapsed[:EXPIRED_PURGED_PER_PUSH])).delete()
    except DatabaseError as exc:
        raise WorkingMemoryUnavailable(f"the working-memory table is unavailable: {exc}") from exc


def working_memory_recent(tenant_id: int, user_id: str, limit: int | None = None) -> list[dict]:
    """The user's working memory, newest first: {"id", "text", "created_at"} each."""
    store = _store()
    limit = limit or settings.WORKING_MEMORY_SIZE
    if store == "off":
        raise WorkingMemoryUnavailable(_OFF)
    if store == "database":
        rows = (WorkingMemoryEntry.objects.filter(tenant_id=tenant_id, user_id=user_id,
                                                  expires_at__gt=timezone.now())
                .order_by("-pushed_at", "-id").values_list("item_id", "item__text", "item__created_at")[:limit])
        return [{"id": str(item_id), "text": text, "created_at": created.isoformat()}
                for item_id, text, created in rows]

    try:
        raw = _client(settings.REDIS_URL).lrange(_key(tenant_id, user_id), 0, limit - 1)
    except redis.RedisError as exc:
        raise WorkingMemoryUnavailable(f"Redis unavailable: {exc}") from exc
    return [json.loads(entry) for entry in raw]


def working_memory_clear(tenant_id: int, user_id: str, *, dry_run: bool = False,
                         memory_ids: set[str] | None = None) -> int:
    """Drop (or, dry_run, count) a user's working memory, or only the entries of
    these memories; returns the items dropped. Raises WorkingMemoryUnavailable
    when Redis is configured but fails: erasure must not report success while
    the words are still there. The database store's rows also go with their
    memories (a foreign key), so an erasure leaves none either way."""
    store = _store()
    if store == "database":
        rows = WorkingMemoryEntry.objects.filter(tenant_id=tenant_id, user_id=user_id)
        if memory_ids is not None:
            rows = rows.filter(item_id__in=list(memory_ids))
        return rows.count() if dry_run else rows.delete()[0]
    if store != "redis":
        return 0

    key = _key(tenant_id, user_id)
    try:
        client = _client(settings.REDIS_URL)
        if memory_ids is None:
            held = int(client.llen(key))
            if not dry_run:
                client.delete(key)
            return held
        doomed = [raw for raw in client.lrange(key, 0, -1) if json.loads(raw).get("id") in memory_ids]
        if not dry_run:
            for raw in doomed:
                client.lrem(key, 0, raw)
        return len(doomed)
    except redis.RedisError as exc:
        raise WorkingMemoryUnavailable(f"Redis unavailable: {exc}") from exc
