"""Conversation ingestion with the offline rules extractor."""

from memories import ingestion
from memories.models import Candidate, MemoryHistory, MemoryItem, MemorySource
from tests.conftest import converse


def _current_texts(user_id="alice"):
    return sorted(MemoryItem.objects.filter(user_id=user_id, expired_at__isnull=True).values_list("text", flat=True))


def test_it_keeps_first_person_statements_and_drops_small_talk(api):
    job = converse(api, [
        "Hi there!",
        {"role": "assistant", "content": "Hello! I love helping people."},
        "I prefer short, direct answers. My wife Sarah loves hiking.",
        "What's the weather like today?",
        "Thanks!",
    ], session_id="chat-7")
    assert job["status"] == "done" and job["extractor"] == "meaning"
    assert _current_texts() == ["User prefers short, direct answers", "User's wife Sarah loves hiking"]
    assert [op["operation"] for op in job["operations"]] == ["ADD", "ADD"]
    assert job["counts"] == {"ADD": 2}


def test_the_speaker_name_replaces_the_pronoun(api):
    converse(api, [{"role": "user", "name": "Alice", "content": "I moved to Lisbon last week."}])
    [text] = _current_texts()
    assert text.startswith("Alice moved to Lisbon last week (")


def test_provenance_and_history_name_the_job(api):
    job = converse(api, ["Hello", "I work as a nurse at St Mary's hospital."], session_id="chat-9")
    memory = MemoryItem.objects.get(user_id="alice")
    source = MemorySource.objects.get(item=memory)
    assert source.session_id == "chat-9" and source.message_indices == [1] and source.job_id == job["job_id"]
    history = MemoryHistory.objects.get(memory_id=memory.id)
    assert history.actor == "extraction" and history.job_id == job["job_id"]
    assert api.get(f"jobs/{job['job_id']}").json()["operations"][0]["memory_id"] == str(memory.id)


def test_chinese_statements_stay_chinese(api):
    turn = {"role": "user", "name": "小王", "content": "你好！我喜欢在北京吃烤鸭。我在腾讯工作。今天天气怎么样？"}
    job = converse(api, [turn])
    assert job["counts"] == {"ADD": 2}
    assert _current_texts() == ["小王喜欢在北京吃烤鸭", "小王在腾讯工作"]


def test_the_same_conversation_twice_changes_nothing(api):
    messages = ["I prefer tea over coffee.", "I have two cats named Miso and Tofu."]
    converse(api, messages)
    job = converse(api, messages, session_id="s2")
    assert [op["operation"] for op in job["operations"]] == ["NOOP", "NOOP"]
    assert MemoryItem.objects.count() == 2


def test_a_changed_residence_invalidates_the_old_fact(api):
    converse(api, [{"role": "user", "content": "I live in Lisbon.", "created_at": "2023-01-10T10:00:00Z"}])
    old = MemoryItem.objects.get(user_id="alice")
    job = converse(api, [{"role": "user", "content": "I moved to Berlin.", "created_at": "2023-06-01T10:00:00Z"}])
    assert [op["operation"] for op in job["operations"]] == ["INVALIDATE", "ADD"]
    old.refresh_from_db()
    new = MemoryItem.objects.get(user_id="alice", expired_at__isnull=True)
    assert new.data == {"key": "residence", "value": "berlin", "slot": "home"}  # the slot: for the profile
    assert old.invalid_at == new.valid_at and old.expired_at is not None  # kept, not deleted
    assert MemoryHistory.objects.filter(memory_id=old.id, event="INVALIDATE").exists()
    assert [r["memory"]["text"] for r in api.search("alice", "where did she move", mode="keyword")] == [new.text]


def test_the_same_slot_value_again_is_a_noop(api):
    converse(api, ["I live in Lisbon."])
    job = converse(api, ["I live in Lisbon, near the river."])
    assert [op["operation"] for op in job["operations"]] == ["NOOP"]


def test_a_richer_near_duplicate_updates_and_a_poorer_one_is_a_noop(api, monkeypatch):
    monkeypatch.setattr(ingestion, "MEMORY_NEAR_DUPLICATE", 0.8)
    converse(api, ["I love hiking in the mountains."])
    richer = converse(api, ["I love hiking in the mountains of Norway."])
    assert [op["operation"] for op in richer["operations"]] == ["UPDATE"]
    assert _current_texts() == ["User loves hiking in the mountains of Norway"]
    poorer = converse(api, ["I love hiking in the mountains!"])
    assert [op["operation"] for op in poorer["operations"]] == ["NOOP"]
    assert "near duplicate" in poorer["operations"][0]["reason"]


def test_trivia_under_the_importance_threshold_is_dropped_and_counted(api, monkeypatch):
    monkeypatch.setattr(ingestion, "MEMORY_IMPORTANCE_THRESHOLD", 0.55)
    job = converse(api, ["I went to the cinema yesterday.", "I prefer aisle seats."])
    assert job["counts"] == {"dropped": 1, "ADD": 1}


def test_a_hedged_statement_waits_for_review(api, reviewer):
    job = converse(api, ["I think I might try pottery classes."])
    assert [op["operation"] for op in job["operations"]] == ["REVIEW"]
    assert MemoryItem.objects.count() == 0
    [candidate] = reviewer.get("review").json()["results"]
    assert candidate["reasons"] == ["low_confidence"] and candidate["operation"] == "ADD"


def test_sensitive_content_waits_for_review(api):
    job = converse(api, ["I have a new email, it is alice.smith@example.com."])
    assert job["counts"] == {"REVIEW": 1}
    assert Candidate.objects.get().reasons == ["sensitive"]


def test_approving_applies_the_proposal_and_rejecting_keeps_it_for_audit(api, reviewer):
    converse(api, ["I think I might try pottery classes.", "I guess I will maybe learn Italian."])
    first, second = reviewer.get("review").json()["results"]
    approved = reviewer.post(f"review/{first['id']}/approve", {"text": "Alice wants to try pottery classes."}).json()
    assert approved["status"] == "approved" and approved["resolved_by"].startswith("api:")
    memory = MemoryItem.objects.get(id=approved["result_memory"])
    assert memory.text == "Alice wants to try pottery classes."
    assert list(MemoryHistory.objects.filter(memory_id=memory.id).values_list("event", flat=True)) == \
        ["ADD", "APPROVE"]
    assert MemorySource.objects.filter(item=memory, session_id="s1").exists()
    rejected = reviewer.post(f"review/{second['id']}/reject", {"reason": "too vague"}).json()
    assert rejected["status"] == "rejected"
    assert Candidate.objects.count() == 2 and reviewer.get("review").json()["results"] == []
    assert reviewer.post(f"review/{second['id']}/approve", {}).status_code == 400


def test_contradicting_an_approved_memory_waits_for_review(api, reviewer):
    converse(api, ["I think I live in Lisbon."])
    [candidate] = reviewer.get("review").json()["results"]
    reviewer.post(f"review/{candidate['id']}/approve", {})
    job = converse(api, ["I moved to Berlin."])
    assert job["counts"] == {"REVIEW": 1}
    held = Candidate.objects.get(status="pending")
    assert held.operation == "INVALIDATE" and held.reasons == ["contradicts_approved"]
    reviewer.post(f"review/{held.id}/approve", {})
    assert _current_texts() == ["User moved to Berlin"]


def test_another_tenant_cannot_see_or_decide_candidates(api, api_b):
    converse(api, ["I think I might try pottery classes."])
    candidate = Candidate.objects.get()
    assert api_b.get("review").json()["results"] == []
    assert api_b.post(f"review/{candidate.id}/approve", {}).status_code == 404
    assert api_b.post(f"review/{candidate.id}/reject", {}).status_code == 404
    job_id = candidate.job_id
    assert api_b.get(f"jobs/{job_id}").status_code == 404


def test_each_participant_gets_their_own_memories(api):
    job = converse(api, [
        {"role": "user", "name": "Alice", "content": "I love sailing."},
        {"role": "user", "name": "Bob", "content": "I'm allergic to shellfish."},
        {"role": "user", "name": "Mallory", "content": "I prefer red wine."},
        {"role": "assistant", "content": "Noted!"},
    ], user_id="alice-id", group_id="trip", participants={"Alice": "alice-id", "Bob": "bob-id"})
    # A group conversation also keeps the group's profile: who takes part (see test_read_path).
    assert _current_texts("alice-id") == ["Alice is a member of the group", "Alice loves sailing"]
    assert _current_texts("bob-id") == ["Bob is a member of the group", "Bob is allergic to shellfish"]
    assert not MemoryItem.objects.filter(text__contains="wine").exists()  # not a participant
    assert not MemoryItem.objects.filter(text__contains="Mallory").exists()
    assert set(MemoryItem.objects.values_list("group_id", flat=True)) == {"trip"}
    assert {op["user_id"] for op in job["operations"]} == {"alice-id", "bob-id"}


def test_bad_conversations_are_rejected_with_the_field(api):
    cases = [
        ({"session_id": "s", "messages": [{"role": "user", "content": "hi"}]}, "user_id"),
        ({"user_id": "a", "session_id": "s", "messages": []}, "messages"),
        ({"user_id": "a", "session_id": "s", "messages": [{"role": "robot", "content": "hi"}]}, "messages"),
        ({"user_id": "a", "session_id": "s", "messages": [{"role": "user"}]}, "messages"),
        ({"user_id": "a", "messages": [{"role": "user", "content": "hi"}]}, "session_id"),
        ({"user_id": "a", "session_id": "s", "messages": "hello"}, "messages"),
        ({"user_id": "a", "session_id": "s", "messages": [{"role": "user", "content": "x"}],
          "participants": ["Alice"]}, "participants"),
    ]
    for payload, field in cases:
        response = api.post("conversations", payload)
        assert response.status_code == 400, payload
        assert field in response.json(), (payload, response.json())


def test_in_process_mode_returns_the_outcome_inline(transactional_db):
    from rest_framework.test import APIClient

    from memories.keys import api_key_create

    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {api_key_create(tenant_name='inline').raw_key}")
    response = client.post("/api/v1/conversations", {"user_id": "alice", "session_id": "s", "messages": [
        {"role": "user", "content": "I prefer window seats."}]}, format="json")
    assert response.status_code == 202
    body = response.json()
    assert body["status"] == "done" and body["counts"] == {"ADD": 1}


def test_200_near_identical_sentences_are_one_job_without_a_version_conflict(api):
    """A near duplicate superseded earlier in the same job must not be matched
    again: it used to fail the whole job with VersionConflict, retries included."""
    import random

    rng = random.Random(1)
    base = "I really love hiking in the Swiss Alps with my old dog Rex and my sister Maria every summer near Zermatt"
    extra = "quietly happily often early slowly gladly mostly boldly calmly warmly".split()
    turns = [f"{base} {' '.join(rng.sample(extra, rng.randint(0, 4)))}." for _ in range(200)]
    job = converse(api, turns)
    assert job["status"] == "done", job["error"]
    assert job["counts"].get("UPDATE", 0) >= 1 and job["counts"].get("ADD", 0) >= 1


def test_raw_turns_are_emptied_after_the_retention_and_the_outcome_stays(api, settings):
    from datetime import timedelta

    from django.utils import timezone

    from memories.job_states import conversation_turns_expire
    from memories.models import ConversationJob, MemorySource

    job = converse(api, ["I have a cat named Miso.", "I live in Porto."])
    kept = ConversationJob.objects.get(id=job["job_id"])
    assert kept.messages and kept.status == "done"
    now = timezone.now()
    assert conversation_turns_expire(now=now + timedelta(days=29)) == 0  # within CONVERSATION_RAW_RETENTION_DAYS
    assert conversation_turns_expire(now=now + timedelta(days=31)) == 1
    emptied = ConversationJob.objects.get(id=job["job_id"])
    assert emptied.messages == [] and emptied.turns_dropped_at is not None
    assert (emptied.status, emptied.counts, emptied.operations) == (kept.status, kept.counts, kept.operations)
    assert MemorySource.objects.filter(job_id=str(kept.id)).count() == 2  # the memories keep their sources
    assert conversation_turns_expire(now=now + timedelta(days=60)) == 0  # once

    failed = converse(api, ["I like tea."], session_id="s2")
    ConversationJob.objects.filter(id=failed["job_id"]).update(status="failed", finished_at=now - timedelta(days=40))
    assert conversation_turns_expire() == 1
    answer = api.post(f"jobs/{failed['job_id']}/retry", {})
    assert answer.status_code == 400 and "messages" in answer.json()
    settings.CONVERSATION_RAW_RETENTION_DAYS = 0
    ConversationJob.objects.update(turns_dropped_at=None)
    assert conversation_turns_expire(now=now + timedelta(days=365)) == 0  # 0 keeps them
