"""Forget leaves nothing readable (issue 43, item 6): after "forget that I'm learning Portuguese" the words
are gone from the conversation jobs' stored turns and operations (job API, job page), from the archived
memory's text, from its history rows (the audit rows stay, without content) and from Mem0's history();
a forgotten memory can be neither restored (admin button, admin action) nor edited back (REST, Mem0)."""

from __future__ import annotations

import json

import pytest
from django.test import Client
from django.urls import reverse

from memories.models import ConversationJob, MemoryHistory, MemoryItem, MemoryVector
from memories.writing import FORGOTTEN_TURN
from tests.conftest import converse

CASES = {
    "en": (["I'm learning Portuguese for a trip to Lisbon next spring.", "I work as a nurse at the city hospital."],
           ["Forget that I'm learning Portuguese."], "Portuguese", "nurse"),
    "zh": (["我在学葡萄牙语，明年春天要去里斯本。", "我在市医院当护士。"], ["别记住我在学葡萄牙语。"],
           "葡萄牙", "护士"),
}


@pytest.fixture
def episodes_on(settings):
    settings.CONVERSATION_EPISODES = True


def _history_words(user_id: str = "alice") -> str:
    return json.dumps([[row.old_text, row.new_text, row.old_data, row.new_data, row.reason]
                       for row in MemoryHistory.objects.filter(user_id=user_id)], ensure_ascii=False)


def _forget(api, language: str) -> tuple[list[dict], str, str]:
    said, forget, word, kept = CASES[language]
    first = converse(api, said, session_id="s1")
    assert any(word in op["text"] for op in first["operations"]), first["operations"]  # it was remembered
    second = converse(api, forget, session_id="s2")
    assert [op["operation"] for op in second["operations"]].count("DELETE") >= 1, second["operations"]
    return [first, second], word, kept


@pytest.mark.parametrize("language", ["en", "zh"])
def test_forgotten_words_are_gone_from_jobs_memories_and_history(api, episodes_on, language):
    jobs, word, kept = _forget(api, language)
    for job in jobs:  # the job API's operations, and the stored turns the job page shows
        body = api.get(f"jobs/{job['job_id']}").json()
        assert word not in json.dumps(body, ensure_ascii=False), body["operations"]
        stored = ConversationJob.objects.get(id=job["job_id"])
        assert word not in json.dumps([stored.messages, stored.operations], ensure_ascii=False), stored.messages
    assert any(m["content"] == FORGOTTEN_TURN for m in ConversationJob.objects.get(id=jobs[0]["job_id"]).messages)
    assert any(kept in m["content"] for m in ConversationJob.objects.get(id=jobs[0]["job_id"]).messages)
    rows = list(MemoryItem.objects.filter(user_id="alice"))  # every status and version, episodes too
    assert not [(m.status, m.text) for m in rows
                if word in m.text or word in json.dumps([m.data, m.tags], ensure_ascii=False)]
    assert any(kept in m.text for m in rows if m.status == "active")  # the rest stays
    assert word not in _history_words()
    forgotten = [m for m in rows if m.text == FORGOTTEN_TURN]
    assert forgotten and all(m.status == "archived" for m in forgotten)
    for memory in forgotten:  # the audit trail stays: who added it and that it was forgotten, no words
        events = list(MemoryHistory.objects.filter(memory_id=memory.id).order_by("created_at")
                      .values_list("event", "old_text", "new_text"))
        assert events[0][0] == "ADD" and events[-1] == ("DELETE", None, None), events
        assert not MemoryVector.objects.filter(item_id=memory.id).exists()  # nothing of it to search


def test_mem0_history_of_a_forgotten_memory_has_events_without_words(api, episodes_on):
    _forget(api, "en")
    memory = MemoryItem.objects.get(user_id="alice", text=FORGOTTEN_TURN, expired_at__isnull=True)
    response = api.client.get(f"/v1/memories/{memory.id}/history/")
    assert response.status_code == 200, response.content
    history = response.json()
    assert [h["event"] for h in history][0] == "ADD" and history[-1]["event"] == "DELETE"
    assert "Portuguese" not in json.dumps(history)


def test_a_forgotten_memory_cannot_be_restored_or_edited_back(api, episodes_on, operator):
    _forget(api, "en")
    memory = MemoryItem.objects.get(user_id="alice", text=FORGOTTEN_TURN, expired_at__isnull=True)
    admin = Client()
    admin.force_login(operator("rita", "reviewers"))
    page = admin.get(reverse("admin:memories_memoryitem_change", args=[memory.id]))
    assert page.status_code == 200 and b'id="restore-button"' not in page.content
    assert b"Portuguese" not in page.content
    refused = admin.post(reverse("admin:memories_memoryitem_restore", args=[memory.id]), follow=True)
    assert b"cannot be restored" in refused.content
    admin.post(reverse("admin:memories_memoryitem_changelist"),
               {"action": "restore_selected", "_selected_action": [memory.id]})
    memory.refresh_from_db()
    assert memory.status == "archived" and memory.text == FORGOTTEN_TURN
    patched = api.patch(f"memories/{memory.id}", {"text": "Alice is learning Portuguese."})
    assert patched.status_code in (400, 409), patched.content
    assert "forgotten" in json.dumps(patched.json())
    put = api.client.put(f"/v1/memories/{memory.id}/", {"text": "Alice is learning Portuguese."}, format="json")
    assert 400 <= put.status_code < 500, put.content
    assert not MemoryItem.objects.filter(user_id="alice", text__contains="Portuguese").exists()


def test_the_job_page_shows_no_forgotten_turn(api, episodes_on, operator):
    jobs, word, _kept = _forget(api, "en")
    admin = Client()
    admin.force_login(operator("root", superuser=True))
    for job in jobs:
        page = admin.get(reverse("admin:memories_conversationjob_change", args=[job["job_id"]]))
        assert page.status_code == 200 and word.encode() not in page.content


def test_what_other_memories_history_quoted_of_it_goes_too(api, episodes_on):
    converse(api, ["I live in Porto."], session_id="s1")
    moved = converse(api, ["I live in Lisbon now."], session_id="s2")
    assert any("Lisbon" in op.get("reason", "") for op in moved["operations"]), moved["operations"]
    assert "Lisbon" in _history_words()  # Porto's INVALIDATE row says what contradicted it
    forgot = converse(api, ["Forget that I live in Lisbon."], session_id="s3")
    assert [op["operation"] for op in forgot["operations"]].count("DELETE") >= 1, forgot["operations"]
    assert "Lisbon" not in _history_words()
    for job in ConversationJob.objects.filter(user_id="alice"):
        assert "Lisbon" not in json.dumps([job.messages, job.operations]), job.operations


@pytest.mark.parametrize("said, forget, word", [
    ("I was diagnosed with diabetes last year.", "Forget that I was diagnosed with diabetes.", "diabetes"),
    ("我去年被诊断出糖尿病。", "别记住我被诊断出糖尿病。", "糖尿病"),
])
def test_a_fact_held_for_review_is_forgotten_too(api, episodes_on, said, forget, word):
    from memories.models import Candidate

    held = converse(api, [said], session_id="s1")
    assert [op["operation"] for op in held["operations"]] == ["REVIEW"], held["operations"]  # health: held
    converse(api, [forget], session_id="s2")
    candidate = Candidate.objects.get(id=held["operations"][0]["candidate_id"])
    assert candidate.status == "rejected" and word not in json.dumps(
        [candidate.text, candidate.data, candidate.changes], ensure_ascii=False), candidate.text
    assert not MemoryItem.objects.filter(user_id="alice", text__contains=word).exists()
