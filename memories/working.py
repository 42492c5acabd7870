"""Working memory: each user's most recent extracted items in Redis, with a TTL.

Optional by design: with REDIS_URL unset or Redis down, ingestion and context
still work; callers get a WorkingMemoryUnavailable to report, never a crash.
"""

from __future__ import annotations

import json
import logging
from functools import lru_cache

from django.conf import settings

from memories.models import MemoryItem

logger = logging.getLogger(__name__)


class WorkingMemoryUnavailable(Exception):
    pass


@lru_cache(maxsize=4)
def _client(url: str):
    import redis

    return redis.Redis.from_url(url, socket_timeout=1, socket_connect_timeout=1)


def redis_client():
    """The configured Redis (REDIS_URL), one client per process."""
    return _client(settings.REDIS_URL)


def _key(tenant_id: int, user_id: str) -> str:
    return f"wm:{tenant_id}:{user_id}"


def working_memory_push(items: list[MemoryItem]) -> int:
    """Push freshly saved memories (newest first) and trim to the configured size."""
    if not settings.REDIS_URL:
        raise WorkingMemoryUnavailable("REDIS_URL is not set: working memory is off")
    import redis

    by_user: dict[tuple[int, str], list[MemoryItem]] = {}
    for item in items:
        by_user.setdefault((item.tenant_id, item.user_id), []).append(item)
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
    return len(items)


def working_memory_recent(tenant_id: int, user_id: str, limit: int | None = None) -> list[dict]:
    if not settings.REDIS_URL:
        raise WorkingMemoryUnavailable("REDIS_URL is not set: working memory is off")
    import redis

    try:
        raw = _client(settings.REDIS_URL).lrange(_key(tenant_id, user_id), 0,
                                                  (limit or settings.WORKING_MEMORY_SIZE) - 1)
    except redis.RedisError as exc:
        raise WorkingMemoryUnavailable(f"Redis unavailable: {exc}") from exc
    return [json.loads(entry) for entry in raw]


def working_memory_clear(tenant_id: int, user_id: str, *, dry_run: bool = False,
                         memory_ids: set[str] | None = None) -> int:
    """Drop (or, dry_run, count) a user's working memory, or only the entries of
    these memories; returns the items dropped. Raises WorkingMemoryUnavailable
    when Redis is configured but fails: erasure must not report success while
    the words are still there."""
    if not settings.REDIS_URL:
        return 0
    import redis

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
