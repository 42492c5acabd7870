from memories.working import working_memory_recent
from tests.conftest import converse


def test_extracted_items_land_in_working_memory(api, tenant_a, redis_url, settings):
    settings.WORKING_MEMORY_SIZE = 2
    job = converse(api, ["I prefer tea.", "I have a cat named Miso.", "I live in Porto."])
    assert not any("working memory" in w for w in job["warnings"])
    recent = working_memory_recent(tenant_a.id, "alice")
    assert [r["text"] for r in recent] == ["User lives in Porto", "User has a cat named Miso"]


def test_ingestion_works_when_redis_is_down(api, settings, anonymous):
    settings.REDIS_URL = "redis://127.0.0.1:1/0"
    job = converse(api, ["I prefer tea."])
    assert job["status"] == "done" and job["counts"] == {"ADD": 1}
    assert any("working memory skipped" in w for w in job["warnings"])
    assert api.get("health").json()["checks"]["working_memory"]["ok"] is False


def test_context_renders_a_dated_block_within_max_chars(api):
    api.remember("alice", "Alice is allergic to peanuts.", valid_at="2023-05-07T00:00:00Z", importance=0.9)
    api.remember("alice", "Alice prefers short, direct answers.")
    api.remember("bob", "Bob is allergic to cats.")
    response = api.post("context", {"user_id": "alice", "query": "food allergies", "max_chars": 300})
    assert response.status_code == 200
    body = response.json()
    lines = body["context"].splitlines()
    assert lines[0] == "## What you know about alice" and lines[1] == "### Memories"
    assert "- [2023-05-07] Alice is allergic to peanuts." in lines
    assert "Bob" not in body["context"] and len(body["context"]) <= 300
    scores = [m["score"] for m in body["memories"]]
    assert scores == sorted(scores, reverse=True)


def test_context_never_exceeds_max_chars(api):
    for i in range(30):
        api.remember("alice", f"Alice fact number {i} about her many hobbies and interests in detail.")
    body = api.post("context", {"user_id": "alice", "query": "hobbies", "max_chars": 200, "limit": 20}).json()
    assert 0 < len(body["context"]) <= 200


def test_context_adds_fresh_working_memory_items(api, redis_url):
    converse(api, ["I bought a red kayak yesterday."])
    body = api.post("context", {"user_id": "alice", "query": "weather tomorrow"}).json()
    assert body["working_memory"] == "used"
    assert any("kayak" in m["memory"]["text"] for m in body["memories"])
    texts = [m["memory"]["text"] for m in body["memories"]]
    assert len(texts) == len(set(texts))


def test_context_rejects_bad_input(api):
    assert "max_chars" in api.post("context", {"user_id": "a", "query": "q", "max_chars": 5}).json()
    assert "query" in api.post("context", {"user_id": "a"}).json()


# --------------------------------------------------------------------------- working memory without Redis

import pytest  # noqa: E402
from django.utils import timezone  # noqa: E402

from memories.models import WorkingMemoryEntry  # noqa: E402
from memories.working import working_store, worth_holding  # noqa: E402


@pytest.mark.parametrize(("setting", "redis_url", "store"), [
    ("auto", "", "database"), ("auto", "redis://127.0.0.1:6379/0", "redis"), ("redis", "", "off"),
    ("database", "redis://127.0.0.1:6379/0", "database"), ("off", "redis://x", "off"),
])
def test_the_working_store_is_redis_when_configured_else_the_database(setting, redis_url, store):
    assert working_store(setting, redis_url) == store


@pytest.mark.parametrize(("text", "confidence", "held"), [
    ("User lives in Porto", 0.8, True), ("User might adopt a dog", 0.4, False), ("ok", 0.9, False),
    ("用户对花生过敏", 0.8, True), ("   Porto   ", 0.9, False),
])
def test_seed_003s_inbound_filter(text, confidence, held):
    assert worth_holding(text, confidence, min_confidence=0.8, min_chars=6) is held


def test_working_memory_works_on_the_database_without_redis(api, tenant_a, settings):
    settings.REDIS_URL, settings.WORKING_MEMORY_SIZE = "", 2
    job = converse(api, ["I prefer tea.", "I have a cat named Miso.", "I live in Porto.", "Maybe I'll adopt a dog."])
    assert not any("working memory" in w for w in job["warnings"]), job["warnings"]
    recent = working_memory_recent(tenant_a.id, "alice")
    assert [r["text"] for r in recent] == ["User lives in Porto", "User has a cat named Miso"]  # newest two
    assert WorkingMemoryEntry.objects.filter(user_id="alice").count() == 2
    body = api.post("context", {"user_id": "alice", "query": "weather tomorrow"}).json()
    assert body["status"]["working_memory"] == "used"
    assert api.get("health").json()["checks"]["working_memory"] == {"ok": True, "enabled": True, "store": "database"}

    WorkingMemoryEntry.objects.update(expires_at=timezone.now())  # a day later
    assert working_memory_recent(tenant_a.id, "alice") == []
    converse(api, ["I work as a nurse."], session_id="s2")
    assert [r["text"] for r in working_memory_recent(tenant_a.id, "alice")] == ["User works as a nurse"]
    assert WorkingMemoryEntry.objects.count() == 1  # the lapsed rows went on the way

    counts = api.delete("users/alice/memories").json()["counts"]
    assert counts["working_memory"] == 1 and not WorkingMemoryEntry.objects.exists()
