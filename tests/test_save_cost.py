"""What a save costs the worker (issue 59): a job's statements keep the vectors deduplication made (no task
embeds them again), vectors commit without waiting for the disk and the embed-pending sweep redoes a lost
one, a save's emotion is read from its embedding, and a burst of saves asks reflection once."""

from __future__ import annotations

import json
import time
from datetime import timedelta

import numpy as np
import pytest
import redis
from django.db import connection, transaction
from django.utils import timezone

from memories import vocabulary
from memories.embedding import get_embedder
from memories.maintenance import embeddings_sweep
from memories.models import EmbeddingState, MemoryItem, MemoryVector
from memories.vectors import commit_without_waiting_for_the_disk, embed_items, vectors_store_known
from memories.writing import MemorySpec, memory_create_batch
from tests.conftest import celery_on_broker, redis_test_url, start_celery_worker, stop_process

# A Redis database of this xdist worker (the broker's queue and the nudges' keys), emptied before each test:
# a fixed database was shared with the other worker's Celery workers, which took this file's tasks.
BROKER = redis_test_url(2)
WINDOW = 3  # seconds a burst's nudges are coalesced over (a burst takes well under it)


@pytest.fixture(autouse=True)
def _empty_broker():
    redis.Redis.from_url(BROKER).flushdb()


def _queued_task_names() -> list[str]:
    """The tasks waiting on the broker's default queue (kombu's Redis transport: one JSON message each)."""
    return [json.loads(raw)["headers"]["task"] for raw in redis.Redis.from_url(BROKER).lrange("celery", 0, -1)]


def _synchronous_commit() -> str:
    with connection.cursor() as cursor:
        cursor.execute("SHOW synchronous_commit")
        return str(cursor.fetchone()[0])


@pytest.mark.django_db(transaction=True)
def test_a_vector_the_transaction_made_is_kept_and_its_embedding_never_sent(tenant_a, settings):
    settings.REFLECTION_NUDGE_WINDOW = 0
    embedder = get_embedder()
    texts = ["Alice keeps bees.", "Alice rows at dawn."]
    with celery_on_broker(BROKER):
        with transaction.atomic():
            kept, other = memory_create_batch(tenant=tenant_a, actor="test", count_for_reflection=False,
                                              specs=[MemorySpec(user_id="alice", text=t) for t in texts])
            vector = embedder.embed_documents([texts[0]])[0]
            assert vectors_store_known([(kept.memory.id, texts[0], vector),
                                        (other.memory.id, "another text", vector)], embedder=embedder) == [
                str(kept.memory.id)]  # a vector of a text the memory does not hold is not its vector
        queued = _queued_task_names()
    assert queued == [vocabulary.TASK_EMBED_MEMORIES]  # one task: the other memory's
    states = dict(MemoryItem.objects.values_list("text", "embedding_state"))
    assert states == {texts[0]: EmbeddingState.DONE, texts[1]: EmbeddingState.PENDING}
    stored = MemoryVector.objects.get(item_id=kept.memory.id, model=embedder.name)
    assert stored.chunk_text == texts[0]
    assert np.allclose(np.asarray(stored.embedding, dtype=np.float32), vector, atol=1e-3)


@pytest.mark.django_db(transaction=True)
def test_a_jobs_statements_keep_the_vectors_deduplication_made(api):
    from tests.conftest import converse

    job = converse(api, ["I prefer window seats. I have a dog named Rex."])
    assert job["counts"] == {"ADD": 2}
    embedder = get_embedder()
    for memory in MemoryItem.objects.all():
        assert memory.embedding_state == EmbeddingState.DONE
        (stored,) = MemoryVector.objects.filter(item_id=memory.id, model=embedder.name)
        assert stored.chunk_text == memory.text
        assert np.allclose(np.asarray(stored.embedding, dtype=np.float32),
                           embedder.embed_documents([memory.text])[0], atol=1e-3)


@pytest.mark.django_db(transaction=True)
def test_vectors_commit_without_waiting_for_the_disk_in_their_own_transaction_only(tenant_a):
    assert _synchronous_commit() == "on"
    with transaction.atomic():
        commit_without_waiting_for_the_disk()
        assert _synchronous_commit() == "off"
    assert _synchronous_commit() == "on"  # SET LOCAL: the next save on this pooled connection waits again
    (saved,) = memory_create_batch(tenant=tenant_a, actor="test", enqueue_embedding=False,
                                   specs=[MemorySpec(user_id="alice", text="Alice keeps bees.")])
    assert embed_items([str(saved.memory.id)]).embedded == 1
    assert _synchronous_commit() == "on"


@pytest.mark.django_db(transaction=True)
def test_the_sweep_embeds_a_memory_whose_vector_commit_was_lost(tenant_a, settings):
    """A crash can lose the last asynchronous commits: the vectors and their `done` mark go together, the
    memory is as its save left it (pending, no vector), and the embed-pending sweep embeds it."""
    (saved,) = memory_create_batch(tenant=tenant_a, actor="test", enqueue_embedding=False,
                                   specs=[MemorySpec(user_id="alice", text="Alice keeps bees.")])
    memory_id = str(saved.memory.id)
    embed_items([memory_id])
    # What the lost commit leaves: the memory's row as the save committed it, no vector.
    MemoryVector.objects.filter(item_id=memory_id).delete()
    MemoryItem.objects.filter(id=memory_id).update(
        embedding_state=EmbeddingState.PENDING,
        created_at=timezone.now() - timedelta(seconds=settings.EMBEDDING_SWEEP_AFTER + 5))
    assert embeddings_sweep() == 1
    assert MemoryItem.objects.get(id=memory_id).embedding_state == EmbeddingState.DONE
    assert MemoryVector.objects.filter(item_id=memory_id, chunk_text="Alice keeps bees.").count() == 1


def test_a_saves_emotion_read_from_its_vector_is_the_encoders_own(settings):
    """The default embedder's document vector holds both encoders' vectors: the emotion read from it is the
    one the encoders give when run again (the task reads it so, for its memory and its companions)."""
    from memories.embedding import EmbedderSpec, build_embedder, local_model_name
    from memories.emotion import emotions_from_vectors, emotions_of

    pair = build_embedder(EmbedderSpec("local", local_model_name(""), 896))
    texts = ["I'm so happy my sister finally got the job!", "My mum is in hospital and I'm worried.",
             "我今天很开心，终于完成了项目", "我们周末去爬山 with my 朋友, it was great", "User bought a kayak."]
    assert emotions_from_vectors(texts, pair.embed_documents(texts), pair) == emotions_of(texts)


@pytest.fixture
def worker(transactional_db, settings):
    """A real worker on Redis, nudges coalesced over WINDOW seconds."""
    settings.REDIS_URL, settings.REFLECTION_NUDGE_WINDOW = BROKER, WINDOW
    with celery_on_broker(BROKER):
        process = start_celery_worker(BROKER, capture_output=True, REDIS_URL=BROKER,
                                      REFLECTION_NUDGE_WINDOW=str(WINDOW))
        yield process
        stop_process(process)


def _cycles(tenant, expected: int, seconds: float = 120) -> dict[str, list]:
    """Each user's cycles (status, memories scanned) once each has `expected`, all completed, and none came
    for WINDOW + 3 seconds more (a busy machine is slow to run them, never allowed to run more)."""
    from reflection.models import ReflectionCycle

    deadline, last, quiet_since = time.monotonic() + seconds, None, time.monotonic()
    while time.monotonic() < deadline:
        now: dict[str, list] = {}
        for user_id, status, scanned in ReflectionCycle.objects.filter(tenant=tenant).order_by("id").values_list(
                "user_id", "status", "memories_scanned"):
            now.setdefault(user_id, []).append((status, scanned))
        if now != last:
            last, quiet_since = now, time.monotonic()
        elif len(now) == 2 and time.monotonic() - quiet_since > WINDOW + 3 and \
                all(len(c) >= expected and all(s == "completed" for s, _ in c) for c in now.values()):
            return now
        time.sleep(0.2)
    raise AssertionError(f"cycles did not settle: {last}")


def _burst(tenant, count: int, start: int) -> None:
    """`count` saves for each of two users, one transaction each (as that many requests), importance 0.9."""
    for index in range(start, start + count):
        for user_id in ("alice", "bob"):
            memory_create_batch(tenant=tenant, actor="test", enqueue_embedding=False, specs=[
                MemorySpec(user_id=user_id, text=f"{user_id} tried hobby number {index}.", importance=0.9)])


def test_a_burst_of_saves_asks_reflection_once_and_it_reads_every_one(worker):
    """Ten saves each of two users past the importance threshold (5) within the window: one trigger of the
    tenant, one cycle of each user's ten (without coalescing each save past the threshold queued its own
    cycle). A later burst asks again."""
    from memories.keys import api_key_create

    tenant = api_key_create(tenant_name="nudges").api_key.tenant
    _burst(tenant, 10, 0)
    assert _cycles(tenant, 1) == {"alice": [("completed", 10)], "bob": [("completed", 10)]}
    _burst(tenant, 10, 10)
    cycles = _cycles(tenant, 2)
    assert [len(c) for c in cycles.values()] == [2, 2] and all(c[1][1] >= 10 for c in cycles.values()), cycles
    assert MemoryItem.objects.filter(tenant=tenant).count() == 40
