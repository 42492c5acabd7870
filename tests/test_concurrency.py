"""Concurrency against the real database: optimistic locking under 50 writers,
parallel ingestion of one conversation, all within a minute (no deadlock)."""

import threading
import time

import pytest
from django.db import connection
from rest_framework.test import APIClient

from memories.keys import api_key_create
from memories.models import MemoryHistory, MemoryItem
from tests.figures import record

pytestmark = pytest.mark.slow


def run_parallel(count: int, work, timeout: float = 60.0) -> list:
    results, barrier = [None] * count, threading.Barrier(count)

    def worker(index):
        try:
            barrier.wait()
            results[index] = work(index)
        except Exception as exc:  # noqa: BLE001 - reported by the test
            results[index] = exc
        finally:
            connection.close()

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(count)]
    started = time.monotonic()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(max(timeout - (time.monotonic() - started), 0.1))
    assert not any(t.is_alive() for t in threads), "workers still running after a minute: a deadlock?"
    return results


def test_fifty_writers_on_one_memory_win_or_get_409(transactional_db):
    key = api_key_create(tenant_name="race").raw_key
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    memory = client.post("/api/v1/memories", {"user_id": "alice", "text": "Shared memory."}, format="json").json()

    def write(index):
        local = APIClient()
        local.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
        version = local.get(f"/api/v1/memories/{memory['memory']['id']}").json()["version"]
        response = local.patch(f"/api/v1/memories/{memory['memory']['id']}",
                               {"importance": round(0.01 + index / 100, 2), "expected_version": version},
                               format="json")
        return response.status_code

    started = time.monotonic()
    codes = run_parallel(50, write)
    elapsed = time.monotonic() - started
    assert all(code in (200, 409) for code in codes), codes
    wins = codes.count(200)
    row = MemoryItem.objects.get(id=memory["memory"]["id"])
    assert wins >= 1 and row.version == 1 + wins
    assert MemoryHistory.objects.filter(memory_id=row.id, event="UPDATE").count() == wins
    record("concurrency: 50 writers, wins / 409s", f"{wins} / {codes.count(409)} in {elapsed:.1f} s")


def test_twenty_parallel_ingestions_of_one_conversation_leave_no_duplicates(transactional_db):
    key = api_key_create(tenant_name="ingest-race").raw_key
    messages = [{"role": "user", "content": text} for text in (
        "I prefer window seats.", "I have a dog named Rex.", "I live in Ghent.", "I love sailing on lakes.")]

    def ingest(index):
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
        return client.post("/api/v1/conversations", {"user_id": "alice", "session_id": f"s-{index}",
                                                     "messages": messages}, format="json").json()["status"]

    started = time.monotonic()
    statuses = run_parallel(20, ingest)
    elapsed = time.monotonic() - started
    assert statuses == ["done"] * 20, statuses
    current = MemoryItem.objects.filter(user_id="alice", expired_at__isnull=True, status="active")
    texts = list(current.values_list("text", flat=True))
    assert len(texts) == len(set(texts)) == 4
    record("concurrency: 20 parallel ingestions, duplicate memories", f"0 ({elapsed:.1f} s)")
