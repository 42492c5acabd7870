"""Erasure is race-free (issue 43, item 4): a conversation job that read its turns before an erasure writes
nothing for the erased scope, whether a key allowed to erase the user erased it all or the agent key that
sent the conversation erased its own part. The job runs in the background (in-process pool) on a real
scripted LLM endpoint that answers after 2 s; the erasure comes 0.4 s after the conversation was sent."""

from __future__ import annotations

import json
import time

import pytest
from rest_framework.test import APIClient

from memories.keys import api_key_create
from memories.models import ConversationJob, ErasureReceipt, MemoryItem
from memories.queue import drain_background
from tests.fake_openai import Reply, chat_reply

CHAT = "/v1/chat/completions"


def _client(**key) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {api_key_create(tenant_name='race', **key).raw_key}")
    return client


@pytest.fixture
def slow_llm(settings, fake_openai):
    settings.EXTRACTION_PROVIDER, settings.LLM_BASE_URL, settings.LLM_MODEL = "llm", fake_openai.base_url, "m"
    settings.LLM_TIMEOUT, settings.CONVERSATION_SYNC_CHARS, settings.CONVERSATION_EPISODES = 10.0, 10, True
    memories = [{"subject": "User", "text": f"User keeps bee hive number {i} in Porto.", "type": "fact",
                 "importance": 0.7, "confidence": 0.9, "tags": ["t"], "source_messages": [0]} for i in range(5)]
    reply = chat_reply(json.dumps({"memories": memories}))
    fake_openai.script(CHAT, Reply(status=reply.status, body=reply.body, delay=2.0))
    return fake_openai


@pytest.mark.parametrize("who", ["the sending agent key", "a key allowed to erase", "no one (the control)"])
def test_a_job_that_read_its_turns_before_an_erasure_writes_nothing(transactional_db, slow_llm, who):
    agent = _client(name="agent")
    eraser = agent if who == "the sending agent key" else _client(name="backend", can_erase=True)
    if who == "no one (the control)":
        eraser = None
    sent = agent.post("/api/v1/conversations", {"user_id": "erin", "session_id": "s1", "messages": [
        {"role": "user", "content": "I keep five bee hives in Porto."}]}, format="json")
    assert sent.status_code == 202, sent.content
    job_id = sent.json()["job_id"]
    time.sleep(0.4)
    assert ConversationJob.objects.get(id=job_id).status == "running"  # it has read its turns
    if eraser is None:  # without the erasure the job writes its five facts: the test can see a write
        assert drain_background(60)
        assert MemoryItem.objects.filter(user_id="erin", text__startswith="User keeps bee hive").count() == 5
        return
    erased = eraser.delete("/api/v1/users/erin/memories")
    assert erased.status_code in (200, 202), erased.content
    assert ErasureReceipt.objects.filter(user_id="erin").exists()
    assert drain_background(60)
    job = ConversationJob.objects.get(id=job_id)
    assert job.status == "done", (job.status, job.error)
    assert not MemoryItem.objects.filter(user_id="erin").exists(), list(
        MemoryItem.objects.filter(user_id="erin").values_list("text", flat=True))
    assert job.counts.get("erased") == 5, job.counts
