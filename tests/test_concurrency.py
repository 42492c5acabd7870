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
                               {"importance": round(0.011 + index / 100, 3), "expected_version": version},
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


def test_parallel_evidence_for_one_trait_counts_every_memory_once(transactional_db):
    """Eight reflection workers add evidence to one trait at once, each a batch
    of its own memories plus one they all share: every memory is counted once
    and the trait's counts match its evidence rows (compare-and-set, retried)."""
    from memories.models import Tenant
    from memories.writing import MemorySpec, memory_create_batch
    from traits import services
    from traits.models import Trait, TraitEvidence

    tenant = Tenant.objects.create(name="trait-race")
    texts = ["Alice takes the stairs (shared)."] + [f"Alice takes the stairs, day {i}." for i in range(24)]
    memories = [r.memory for r in memory_create_batch(tenant=tenant, actor="t", specs=[
        MemorySpec(user_id="alice", text=text) for text in texts])]
    trait = services.trait_create(tenant=tenant, user_id="alice", text="Alice prefers stairs.", subtype="behavior",
                                  actor="t")
    shared, own = memories[0], memories[1:]

    def observe(index):
        batch = [shared, *own[index * 3:(index + 1) * 3]]
        for _attempt in range(5):  # a worker that lost five races tries again later, as a task retry would
            try:
                return services.trait_observe(trait_id=trait.pk, actor="t", observations=[
                    services.Observation(m, "supporting", "B") for m in batch])
            except services.TraitConflict:
                time.sleep(0.05)
        raise AssertionError("never got through")

    outcomes = run_parallel(8, observe)
    assert not [o for o in outcomes if isinstance(o, Exception)], outcomes
    trait = Trait.objects.get(pk=trait.pk)
    rows = TraitEvidence.objects.filter(trait=trait)
    assert rows.count() == 25 and rows.filter(memory=shared).count() == 1
    assert trait.reinforcement_count == 25
