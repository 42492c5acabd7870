"""Background work survives a dead worker (issue 43, item 7). A conversation job whose worker process is
SIGKILLed mid-run is left `running`; the reclaim sweep leaves it alone while the worker lives (its advisory
lock is held), and once the process is dead runs it again, or fails it with the reason after
EXTRACTION_MAX_RETRIES runs: retry works, the retention period applies, the tenant's slot is free.
Reflection cycles likewise. The in-process queue is bounded (429 with Retry-After), and batches count
against the tenant's pending-job limit."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path

import pytest
from django.db import connection
from django.utils import timezone
from rest_framework.test import APIClient

from memories.job_states import conversation_turns_expire
from memories.keys import api_key_create
from memories.models import ApiKey, ConversationJob, JobStatus, MemoryItem, Tenant
from memories.queue import drain_background, holding_work
from memories.reclaim import jobs_reclaim
from reflection.engine import cycles_reclaim
from reflection.models import CycleStatus, CycleTrigger, ReflectionCycle
from tests.conftest import stop_process

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def silent_llm():
    """An endpoint that accepts connections and never answers: a job calling it hangs mid-run."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    yield f"http://127.0.0.1:{server.getsockname()[1]}/v1"
    server.close()


def _worker(script: str, **env) -> subprocess.Popen:
    """A real process on the test database (the way a gunicorn worker of `make run` is one)."""
    full = {**os.environ, "EMBEDDED_DB_NAME": connection.settings_dict["NAME"],
            "DJANGO_SETTINGS_MODULE": "memory_project.test_settings", **env}
    return subprocess.Popen([sys.executable, "-c", "import django; django.setup()\n" + script], cwd=ROOT,
                            env=full, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)


def _lock_holder(kind: str, ident: str | int) -> subprocess.Popen:
    """Another process holding the work lock of (kind, ident), as a worker running it does, until stopped."""
    holder = _worker(f"from memories.queue import work_lock_try\nimport time\n"
                     f"print(work_lock_try({kind!r}, {ident!r}), flush=True)\ntime.sleep(60)")
    if holder.stdout.readline().strip() != b"True":
        stop_process(holder)
        raise AssertionError(f"the other process did not take the {kind} lock")
    return holder


def _until(condition, seconds: float, process: subprocess.Popen | None = None) -> None:
    deadline = time.time() + seconds
    while not condition():
        if time.time() > deadline:
            output = process.stdout.read().decode()[-3000:] if process and process.poll() is not None else ""
            raise AssertionError(f"not in time {output}")
        time.sleep(0.2)


def _later(seconds_past_the_bound: int = 60):
    from django.conf import settings

    return timezone.now() + timedelta(seconds=settings.WORK_RECLAIM_AFTER + seconds_past_the_bound)


def _job(tenant: Tenant, **fields) -> ConversationJob:
    fields.setdefault("api_key", ApiKey.objects.filter(tenant=tenant).first())
    return ConversationJob.objects.create(tenant=tenant, user_id="alice", session_id="s1", messages=[
        {"role": "user", "content": "I have a dog named Rex."}], **fields)


def test_a_job_whose_worker_was_killed_is_run_again_and_a_live_one_is_left_alone(transactional_db, silent_llm):
    key = api_key_create(tenant_name="reclaim")
    job = _job(key.api_key.tenant)
    worker = _worker(f"from memories.tasks import run_conversation_job\n"
                     f"run_conversation_job.apply(args=['{job.id}'])",
                     EXTRACTION_PROVIDER="llm", LLM_BASE_URL=silent_llm, LLM_TIMEOUT="300",
                     EXTRACTION_MAX_RETRIES="0")
    try:
        _until(lambda: ConversationJob.objects.get(id=job.id).status == JobStatus.RUNNING, 60, worker)
        assert jobs_reclaim(now=_later()) == {"requeued": 0, "failed": 0}  # its worker lives: not touched
        assert ConversationJob.objects.get(id=job.id).status == JobStatus.RUNNING
        worker.kill()  # SIGKILL: no handler runs, the job stays `running`
        worker.wait(10)
    finally:
        stop_process(worker)
    assert ConversationJob.objects.get(id=job.id).status == JobStatus.RUNNING
    # PostgreSQL ends the dead worker's session (and its lock) as soon as it sees the socket close.
    _until(lambda: jobs_reclaim(now=_later())["requeued"] == 1 or ConversationJob.objects.get(
        id=job.id).status != JobStatus.RUNNING, 30)
    assert drain_background(120)
    reclaimed = ConversationJob.objects.get(id=job.id)
    assert reclaimed.status == JobStatus.DONE, (reclaimed.status, reclaimed.error)
    assert reclaimed.attempts == 2  # the lost run and the one after the sweep
    assert MemoryItem.objects.filter(tenant=key.api_key.tenant, user_id="alice", text__contains="Rex").exists()


def test_a_job_that_killed_its_worker_too_often_fails_with_the_reason_and_then_behaves(api, key_a, settings):
    from django.conf import settings as live

    stuck = _job(key_a.api_key.tenant, status=JobStatus.RUNNING, attempts=live.EXTRACTION_MAX_RETRIES + 1,
                 started_at=timezone.now() - timedelta(seconds=live.WORK_RECLAIM_AFTER + 5))
    settings.TENANT_MAX_PENDING_JOBS = 1
    busy = api.post("conversations", {"user_id": "bob", "session_id": "s", "messages": [
        {"role": "user", "content": "I like tea."}]})
    assert busy.status_code == 429 and busy["Retry-After"]  # the stuck job holds the tenant's one slot
    assert jobs_reclaim() == {"requeued": 0, "failed": 1}
    failed = api.get(f"jobs/{stuck.id}").json()
    assert failed["status"] == "failed" and "worker running it stopped" in failed["error"], failed
    assert ConversationJob.objects.get(id=stuck.id).finished_at is not None
    freed = api.post("conversations", {"user_id": "bob", "session_id": "s", "messages": [
        {"role": "user", "content": "I like tea."}]})
    assert freed.status_code == 202, freed.content  # the slot is free again
    # The retention period applies to it as to any finished job.
    now = timezone.now()
    assert conversation_turns_expire(now=now + timedelta(days=live.CONVERSATION_RAW_RETENTION_DAYS + 1)) >= 1
    assert ConversationJob.objects.get(id=stuck.id).messages == []


def test_retry_of_a_reclaimed_job_runs_it(api, key_a):
    from django.conf import settings as live

    stuck = _job(key_a.api_key.tenant, status=JobStatus.RUNNING, attempts=live.EXTRACTION_MAX_RETRIES + 1,
                 started_at=timezone.now() - timedelta(seconds=live.WORK_RECLAIM_AFTER + 5))
    assert api.post(f"jobs/{stuck.id}/retry").status_code == 400  # running: refused, as before
    jobs_reclaim()
    retried = api.post(f"jobs/{stuck.id}/retry")
    assert retried.status_code == 202, retried.content
    assert api.get(f"jobs/{stuck.id}").json()["status"] == "done"
    assert MemoryItem.objects.filter(user_id="alice", text__contains="Rex").exists()


def test_with_no_broker_a_job_queued_too_long_is_sent_again(api, key_a):
    from django.conf import settings as live

    lost = _job(key_a.api_key.tenant)  # its process's pool died before running it
    ConversationJob.objects.filter(id=lost.id).update(
        created_at=timezone.now() - timedelta(seconds=live.WORK_RECLAIM_AFTER + 5))
    young = _job(key_a.api_key.tenant)
    assert jobs_reclaim()["requeued"] == 1
    assert ConversationJob.objects.get(id=young.id).status == JobStatus.QUEUED
    assert ConversationJob.objects.get(id=lost.id).status == JobStatus.QUEUED  # sent again, on the pool


def test_a_delivery_of_a_job_another_worker_runs_does_nothing(transactional_db):
    key = api_key_create(tenant_name="reclaim")
    job = _job(key.api_key.tenant)
    holder = _lock_holder("job", str(job.id))
    try:
        from memories.tasks import run_conversation_job

        # An eager apply's result, read without Celery's guard against waiting inside a task: an earlier
        # test's eager task can leave this thread looking like one, and the guard then refused (in one run).
        delivered = run_conversation_job.apply(args=[str(job.id)]).get(disable_sync_subtasks=False)
        assert delivered == {"status": "running elsewhere"}
        assert ConversationJob.objects.get(id=job.id).status == JobStatus.QUEUED
        with holding_work("job", job.id) as mine:
            assert not mine
    finally:
        stop_process(holder)


def _cycle(tenant: Tenant, session_id: str = "s1", **fields) -> ReflectionCycle:
    return ReflectionCycle.objects.create(tenant=tenant, user_id="alice", session_id=session_id,
                                          trigger=CycleTrigger.SESSION_END, **fields)


def test_a_cycle_left_running_is_run_again_once_then_failed(transactional_db):
    key = api_key_create(tenant_name="reclaim")
    cycle = _cycle(key.api_key.tenant)
    holder = _lock_holder("cycle", cycle.id)
    try:
        assert cycles_reclaim(eager=True, now=_later()) == {"requeued": 0, "failed": 0, "resent": 0}
        holder.kill()
        holder.wait(10)
    finally:
        stop_process(holder)
    _until(lambda: cycles_reclaim(eager=True, now=_later())["requeued"] == 1, 30)
    assert drain_background(60)
    again = ReflectionCycle.objects.get(id=cycle.id)
    assert again.status == CycleStatus.COMPLETED and again.error.startswith("reclaimed by the sweep"), again.error
    # A cycle that was run again and stopped again fails with the reason.
    twice = _cycle(key.api_key.tenant, "s2", error="reclaimed by the sweep: running for 400 s with no live worker")
    assert cycles_reclaim(eager=True, now=_later())["failed"] == 1
    failed = ReflectionCycle.objects.get(id=twice.id)
    assert failed.status == CycleStatus.FAILED and "stopped twice" in failed.error and failed.completed_at


def _long_conversation(client: APIClient, user_id: str):
    return client.post("/api/v1/conversations", {"user_id": user_id, "session_id": "s", "messages": [
        {"role": "user", "content": "I like long walks by the river. " * 80}]}, format="json")


def test_the_in_process_queue_is_bounded(transactional_db, settings, silent_llm):
    settings.EAGER_BACKGROUND_QUEUE_MAX, settings.CONVERSATION_SYNC_CHARS = 1, 2000
    settings.EXTRACTION_PROVIDER, settings.LLM_BASE_URL, settings.LLM_TIMEOUT = "llm", silent_llm, 3.0
    settings.EXTRACTION_MAX_RETRIES = 0
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {api_key_create(tenant_name='bounded').raw_key}")
    first = _long_conversation(client, "alice")  # runs on the pool and hangs on the silent LLM
    assert first.status_code == 202, first.content
    full = _long_conversation(client, "bob")
    assert full.status_code == 429 and int(full["Retry-After"]) > 0, full.content
    assert "EAGER_BACKGROUND_QUEUE_MAX" in full.json()["detail"]
    short = client.post("/api/v1/conversations", {"user_id": "carol", "session_id": "s", "messages": [
        {"role": "user", "content": "Hi"}]}, format="json")
    assert short.status_code == 202  # a short conversation runs in the request, not on the pool
    assert drain_background(60)
    assert _long_conversation(client, "bob").status_code == 202  # room again once the pool drained
    assert drain_background(60)


def test_batches_count_against_the_pending_job_limit(api, key_a, settings):
    settings.TENANT_MAX_PENDING_JOBS, settings.EMBEDDING_INLINE_MAX_ITEMS = 2, 1  # a batch embeds in the background
    _job(key_a.api_key.tenant)  # one conversation waiting
    batch = {"memories": [{"user_id": "alice", "text": f"Alice fact number {i}."} for i in range(3)]}
    first = api.post("memories/batch", batch)
    assert first.status_code == 201, first.content  # 1 job + this batch = 2
    waiting = MemoryItem.objects.filter(tenant=key_a.api_key.tenant, embedding_state="pending").count()
    if waiting:  # its embeddings are still to do: the batch holds a slot
        refused = api.post("memories/batch", {"memories": [{"user_id": "alice", "text": "Alice likes figs."},
                                                           {"user_id": "alice", "text": "Alice likes dates."}]})
        assert refused.status_code == 429 and refused["Retry-After"], refused.content
        conversation = api.post("conversations", {"user_id": "bob", "session_id": "s", "messages": [
            {"role": "user", "content": "I like tea."}]})
        assert conversation.status_code == 429
    else:
        pytest.fail("the batch's embeddings ran inside the request: nothing to count")
