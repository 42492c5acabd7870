"""Read counts: clients' searches and context requests count each memory they
get back, buffered and written in batches (memories.access)."""

import pytest
import redis

from memories import access
from memories.models import MemoryItem
from memories.process_state import reset


@pytest.fixture(autouse=True)
def fresh_buffers():
    reset()
    yield
    reset()


def _counts(*ids):
    return {str(m.id): (m.access_count, m.last_accessed_at) for m in MemoryItem.objects.filter(id__in=ids)}


def test_searches_and_context_count_reads_in_the_process_buffer(api, settings):
    settings.REDIS_URL = ""
    bees = api.remember("alice", "Alice keeps bees on her roof.")
    tea = api.remember("alice", "Alice drinks green tea.")
    searched = [r["memory"]["id"] for r in api.search("alice", "bees", mode="keyword")]
    context = api.post("context", {"user_id": "alice", "query": "bees"})
    assert context.status_code == 200
    given = searched + [m["memory"]["id"] for m in context.json()["memories"]]
    assert searched == [bees["id"]] and given.count(bees["id"]) == 2
    # Nothing is written per read...
    assert _counts(bees["id"])[bees["id"]][0] == 0
    # ...until the buffer is flushed: each memory counted as often as it was given.
    assert access.flush_access_counts() == len(set(given))
    counts = _counts(bees["id"], tea["id"])
    assert counts[bees["id"]][0] == 2 and counts[bees["id"]][1] is not None
    assert counts[tea["id"]][0] == given.count(tea["id"])
    assert api.get(f"memories/{bees['id']}").json()["access_count"] == 2


def test_redis_buffers_reads_across_processes_until_the_beat_flush(api, redis_url):
    bees = api.remember("alice", "Alice keeps bees on her roof.")
    for _ in range(3):
        api.search("alice", "bees", mode="keyword")
    client = redis.Redis.from_url(redis_url)
    assert int(client.hget(access.REDIS_KEY, bees["id"])) == 3
    assert _counts(bees["id"])[bees["id"]][0] == 0
    assert access.flush_access_counts() == 1
    assert _counts(bees["id"])[bees["id"]][0] == 3
    assert not client.exists(access.REDIS_KEY) and not list(client.scan_iter(f"{access.FLUSHING_PREFIX}*"))


def test_a_buffer_whose_write_failed_is_written_by_the_next_flush(api, redis_url):
    """A flush renames the buffer before writing; a run that died after the
    rename leaves the renamed key, and the next flush writes it."""
    bees = api.remember("alice", "Alice keeps bees on her roof.")
    api.search("alice", "bees", mode="keyword")
    client = redis.Redis.from_url(redis_url)
    client.rename(access.REDIS_KEY, f"{access.FLUSHING_PREFIX}left-by-a-crash")
    api.search("alice", "bees", mode="keyword")
    assert access.flush_access_counts() == 2  # the same memory, once from each buffer
    assert _counts(bees["id"])[bees["id"]][0] == 2


def test_reads_still_work_and_count_locally_when_redis_is_down(api, settings):
    settings.REDIS_URL = "redis://127.0.0.1:1/0"  # nothing listens there
    bees = api.remember("alice", "Alice keeps bees on her roof.")
    assert api.search("alice", "bees", mode="keyword")
    assert access._redis_retry_at > 0  # the next searches skip Redis for a while
    assert api.search("alice", "bees", mode="keyword")
    settings.REDIS_URL = ""
    access.flush_access_counts()
    assert _counts(bees["id"])[bees["id"]][0] == 2
