"""End to end through a real Celery worker on the machine's Redis."""

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from django.db import connection
from rest_framework.test import APIClient

from memories.keys import api_key_create
from memories.models import MemoryItem
from memory_project.celery import app

BROKER = "redis://127.0.0.1:6379/13"
ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def worker(transactional_db):
    import redis

    redis.Redis.from_url(BROKER).flushdb()
    env = {**os.environ, "CELERY_BROKER_URL": BROKER, "EMBEDDED_DB_NAME": connection.settings_dict["NAME"],
           "DJANGO_SETTINGS_MODULE": "memory_project.test_settings"}
    process = subprocess.Popen([sys.executable, "-m", "celery", "-A", "memory_project", "worker", "--pool=solo",
                                "-l", "warning", "--without-heartbeat", "--without-gossip", "--without-mingle"],
                               cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    previous = (app.conf.task_always_eager, app.conf.broker_url)
    app.conf.task_always_eager, app.conf.broker_url = False, BROKER
    _reset_pools()  # pools made earlier point at the old broker URL
    yield process
    app.conf.task_always_eager, app.conf.broker_url = previous
    _reset_pools()
    process.terminate()
    try:
        process.wait(10)
    except subprocess.TimeoutExpired:
        process.kill()
    redis.Redis.from_url(BROKER).flushdb()


def _reset_pools() -> None:
    # Drop references only: kombu keeps pools per URL in a global registry, and
    # Celery's eager path acquires a producer from it too.
    app._pool = None
    app.amqp._producer_pool = None


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
