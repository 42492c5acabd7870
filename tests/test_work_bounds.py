"""Work is bounded: long conversations run in the background even with Celery
eager, and every job stops at its time limit, writing nothing."""

import time

import pytest

from memories.models import ConversationJob, MemoryItem
from tests.conftest import converse

TURNS = ["I prefer window seats.", "I have a dog named Rex.", "I live in Ghent.", "I love sailing on lakes."]


@pytest.mark.django_db(transaction=True)
def test_a_long_conversation_runs_in_the_background_even_when_celery_is_eager(api, settings):
    settings.CONVERSATION_SYNC_CHARS = 20
    started = time.monotonic()
    response = api.post("conversations", {"user_id": "alice", "session_id": "s1",
                                          "messages": [{"role": "user", "content": t} for t in TURNS]})
    assert response.status_code == 202 and response.json()["status"] in ("queued", "running", "done")
    job_id = response.json()["job_id"]
    deadline = started + 60
    while ConversationJob.objects.get(id=job_id).status != "done":
        assert time.monotonic() < deadline, ConversationJob.objects.get(id=job_id).error
        time.sleep(0.1)
    assert MemoryItem.objects.filter(user_id="alice").count() >= 3
    short = converse(api, ["I like tea."], session_id="s2")  # under the budget: answered inline
    assert short["status"] == "done"


def test_a_job_past_its_time_limit_fails_and_writes_nothing(api, settings):
    settings.CONVERSATION_JOB_TIME_LIMIT = -1
    job = converse(api, TURNS)
    assert job["status"] == "failed" and "CONVERSATION_JOB_TIME_LIMIT" in job["error"]
    assert not MemoryItem.objects.exists()


def test_a_tenant_with_too_many_pending_conversations_gets_429(api, api_b, settings, tenant_a):
    settings.TENANT_MAX_PENDING_JOBS = 2
    ConversationJob.objects.bulk_create(ConversationJob(tenant=tenant_a, user_id="u", session_id=f"s{i}",
                                                        messages=[], status="queued") for i in range(2))
    response = api.post("conversations", {"user_id": "alice", "session_id": "s", "messages": [
        {"role": "user", "content": "I like tea."}]})
    assert response.status_code == 429 and int(response["Retry-After"]) >= 1
    assert "TENANT_MAX_PENDING_JOBS" in response.json()["detail"]
    assert converse(api_b, ["I like tea."])["status"] == "done"  # another tenant is not held up


@pytest.mark.django_db(transaction=True)
def test_a_batch_embeds_outside_the_request_and_the_sweep_finishes_what_a_crash_left(api, settings):
    """With no broker a batch's embeddings run on the background pool: while every worker of the pool
    is held busy, the batch is answered and its rows wait `pending`; once released they are embedded.
    Rows left pending for good (a crash after commit) are embedded by the beat job `embed-pending`."""
    import threading
    from datetime import timedelta

    from django.utils import timezone

    from memories import queue
    from memories.schedule import run_entry

    settings.EMBEDDING_INLINE_MAX_ITEMS = 1
    release = threading.Event()
    pool = queue.background_pool()
    for _ in range(max(1, settings.EAGER_BACKGROUND_WORKERS)):
        pool.submit(release.wait, 30)
    try:
        answer = api.post("memories/batch", {"memories": [
            {"user_id": "bo", "text": f"Bo's note number {i}: " + "words " * 200} for i in range(20)]})
        assert answer.status_code == 201
        states = set(MemoryItem.objects.filter(user_id="bo").values_list("embedding_state", flat=True))
        assert states == {"pending"}  # the request did not embed them
    finally:
        release.set()
    assert queue.drain_background(timeout=60)
    assert set(MemoryItem.objects.filter(user_id="bo").values_list("embedding_state", flat=True)) == {"done"}

    # A crash between commit and embedding: the rows stay pending with no vector.
    settings.EMBEDDING_INLINE_MAX_ITEMS = 1_000_000
    from memories.models import MemoryVector

    single = api.remember("cy", "Cy repairs bicycles.")
    MemoryVector.objects.filter(item_id=single["id"]).delete()
    MemoryItem.objects.filter(id=single["id"]).update(embedding_state="pending")
    run_entry("embed-pending", settings.CELERY_BEAT_SCHEDULE["embed-pending"])
    assert MemoryItem.objects.get(id=single["id"]).embedding_state == "pending"  # too young: its task may run
    MemoryItem.objects.filter(id=single["id"]).update(created_at=timezone.now() - timedelta(minutes=5))
    run_entry("embed-pending", settings.CELERY_BEAT_SCHEDULE["embed-pending"])
    assert MemoryItem.objects.get(id=single["id"]).embedding_state == "done"
    assert MemoryVector.objects.filter(item_id=single["id"]).exists()
