"""End to end through a real Celery worker on the machine's Redis."""

import time

import pytest
from rest_framework.test import APIClient

from memories.keys import api_key_create
from memories.models import MemoryItem
from tests.conftest import celery_on_broker, redis_test_url, start_celery_worker, stop_process

BROKER = redis_test_url(1)  # a Redis database of this xdist worker


@pytest.fixture
def worker(transactional_db):
    with celery_on_broker(BROKER):
        process = start_celery_worker(BROKER, capture_output=True)
        yield process
        stop_process(process)


def test_a_worker_runs_the_job_and_embeds_the_memories(worker):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {api_key_create(tenant_name='celery').raw_key}")
    response = client.post("/api/v1/conversations", {"user_id": "alice", "session_id": "s", "messages": [
        {"role": "user", "content": "I prefer window seats. I have a dog named Rex."}]}, format="json")
    assert response.status_code == 202
    job_id = response.json()["job_id"]
    deadline = time.time() + 60
    body = {}
    while time.time() < deadline:
        body = client.get(f"/api/v1/jobs/{job_id}").json()
        if body["status"] == "done" and MemoryItem.objects.filter(embedding_state="done").count() == 2:
            break
        time.sleep(0.3)
    else:
        worker.terminate()
        raise AssertionError(f"worker did not finish: {body}\n{worker.stdout.read().decode()[-3000:]}")
    assert body["counts"] == {"ADD": 2}
    assert set(MemoryItem.objects.values_list("text", flat=True)) == {"User prefers window seats",
                                                                        "User has a dog named Rex"}


def test_a_message_for_a_job_that_no_longer_exists_is_skipped(db):
    from memories.tasks import run_conversation_job

    assert run_conversation_job.apply(args=["00000000-0000-0000-0000-000000000001"]).get() == {"status": "missing"}


def test_every_task_queued_by_name_is_registered():
    """Services queue tasks by name (memories.vocabulary): a renamed task must fail here, not be
    logged and swallowed in production; so must a beat entry naming no task."""
    from django.conf import settings

    from memories import vocabulary
    from memory_project.celery import app

    app.loader.import_default_modules()
    for name in (*vocabulary.QUEUED_TASKS, *(entry["task"] for entry in settings.CELERY_BEAT_SCHEDULE.values())):
        assert name in app.tasks, name


def _sessions_opened() -> int:
    """Connections opened to this database so far (PostgreSQL counts them)."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT sessions FROM pg_stat_database WHERE datname = current_database()")
        return cursor.fetchone()[0]


def _until_embedded(count: int, worker, seconds: float = 60) -> None:
    deadline = time.time() + seconds
    while MemoryItem.objects.filter(embedding_state="done").count() < count:
        if time.time() > deadline:
            worker.terminate()
            raise AssertionError(f"not embedded in time\n{worker.stdout.read().decode()[-3000:]}")
        time.sleep(0.2)


WORKER_APPLICATION = "memory-test-prefork-worker"


@pytest.fixture
def prefork_worker(transactional_db):
    with celery_on_broker(BROKER):
        # libpq names the worker's connections, so that the test can drop those and no other.
        process = start_celery_worker(BROKER, capture_output=True, prefork=True, PGAPPNAME=WORKER_APPLICATION)
        yield process
        stop_process(process)


def test_a_worker_keeps_its_database_connections_between_tasks_and_replaces_a_broken_one(prefork_worker):
    """Celery closes a prefork worker's connection pool after every task unless CELERY_DB_REUSE_MAX is
    set (a new PostgreSQL backend per task); memory_project/celery.py hands connections back instead,
    and drops one that broke."""
    from django.db import connection

    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {api_key_create(tenant_name='celery').raw_key}")

    def save(text: str) -> None:
        assert client.post("/api/v1/memories", {"user_id": "alice", "text": text}, format="json").status_code == 201

    worker = prefork_worker
    save("Alice keeps bees.")
    _until_embedded(1, worker)  # the worker's processes have connected
    opened = _sessions_opened()
    for index, text in enumerate(["Alice sings.", "Alice rows.", "Alice paints.", "Alice cycles.", "Alice knits."]):
        save(text)
        _until_embedded(2 + index, worker)  # one task at a time: each could have had a new connection
    # Ten tasks ran (an embedding and a reflection nudge per save); the test's own connection is kept.
    assert _sessions_opened() - opened <= 2

    with connection.cursor() as cursor:  # the database drops the worker's connections (a restart, a failover)
        cursor.execute("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                       "WHERE datname = current_database() AND application_name = %s", [WORKER_APPLICATION])
        assert cursor.fetchone()[0] >= 1
    save("Alice swims.")
    save("Alice climbs.")
    _until_embedded(8, worker)  # a task that met a dead connection is retried on a new one
