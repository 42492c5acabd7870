"""Erasure leaves nothing of the user's words anywhere: every table's text,
JSON, array and full-text column is scanned afterwards, Redis too."""

from __future__ import annotations

import pytest
from django.apps import apps
from django.contrib.admin.models import CHANGE, LogEntry
from django.contrib.contenttypes.models import ContentType
from django.contrib.postgres.fields import ArrayField
from django.contrib.postgres.search import SearchVectorField
from django.db import connection, models, transaction

from memories import erasure
from memories.ingestion import conversation_job_create, conversation_job_run
from memories.models import Candidate, ConversationJob, ErasureReceipt, MemoryHistory, MemoryItem
from reflection.models import ReflectionCycle
from tests.conftest import converse
from traits import services

WORDS = ("zebrawood", "quokka", "4111")  # distinctive: none of them is in a user id or a column name


def _holds_text(model) -> bool:
    return any(isinstance(f, models.TextField | models.JSONField | ArrayField | SearchVectorField)
               or f.name == "user_id" for f in model._meta.get_fields() if getattr(f, "concrete", False))


def test_every_model_that_can_hold_user_data_is_in_the_registry():
    covered = {label for store in erasure.REGISTRY for label in store.models} | set(erasure.NOT_USER_DATA)
    holding = {m._meta.label for m in apps.get_models() if _holds_text(m)}
    assert holding - covered == set(), "add these models to memories.erasure.REGISTRY (or NOT_USER_DATA)"


def _columns_holding(word: str) -> list[str]:
    """Every text, varchar, json(b), array and tsvector column of every table that contains `word`."""
    with connection.cursor() as cursor:
        cursor.execute("""SELECT table_name, column_name FROM information_schema.columns
                          WHERE table_schema = 'public'
                            AND (data_type IN ('text', 'character varying', 'json', 'jsonb', 'ARRAY', 'tsvector'))""")
        columns = cursor.fetchall()
        found = []
        for table, column in columns:
            cursor.execute(f'SELECT count(*) FROM "{table}" WHERE "{column}"::text ILIKE %s', [f"%{word}%"])
            if cursor.fetchone()[0]:
                found.append(f"{table}.{column}")
        return found


@pytest.fixture
def erin_everywhere(api, reviewer, tenant_a, redis_url, operator, settings):
    """User erin's words in memories, versions, history, vectors, candidates,
    jobs, episodes, traits, reflection, the admin log, working memory and read counts."""
    settings.CONVERSATION_EPISODES = True
    memory = api.remember("erin", "Erin carves zebrawood bowls on Sundays.")
    api.patch(f"memories/{memory['id']}", {"text": "Erin carves zebrawood bowls on Saturdays."})
    converse(api, ["I love quokkas.", "I have a new email, it is erin.quokka@example.com.",
                   "I have a new card, it is 4111 1111 1111 1111."], user_id="erin")
    assert Candidate.objects.filter(user_id="erin", status="pending").exists()
    api.search("erin", "zebrawood")
    services.trait_create(tenant=tenant_a, user_id="erin", text="Likes zebrawood crafts", subtype="preference",
                          actor="test")
    ReflectionCycle.objects.create(tenant=tenant_a, user_id="erin", trigger="scheduled", status="failed",
                                   error="could not read 'Erin carves zebrawood'")
    item = MemoryItem.objects.filter(user_id="erin").first()
    LogEntry.objects.create(user=operator("olga", "reviewers"), content_type=ContentType.objects.get_for_model(item),
                            object_id=str(item.id), object_repr=str(item), action_flag=CHANGE,
                            change_message=f"changed text to {item.text}")
    api.remember("bob", "Bob also likes zebrawood.")  # another user's words stay
    return tenant_a


def test_erasure_leaves_none_of_the_users_words_anywhere(api, reviewer, erin_everywhere, redis_url):
    import redis

    assert _columns_holding("quokka") and _columns_holding("zebrawood")
    candidate = Candidate.objects.filter(user_id="erin", status="pending").first()
    response = api.delete("users/erin/memories")
    assert response.status_code == 200, response.content
    counts = response.json()["counts"]
    assert counts["memories"] >= 5 and counts["candidates"] >= 1 and counts["jobs"] == 1  # facts and an episode
    assert counts["working_memory"] >= 1 and counts["admin_log"] == 1 and counts["reflection_cycles"] == 1

    assert _columns_holding("quokka") == []
    assert _columns_holding("4111") == []
    # Bob's own memory keeps its words; nothing of erin's does.
    assert MemoryItem.objects.filter(user_id="bob").exists()
    assert all(c.startswith(("memory_items.", "memory_vectors.", "memory_history.", "memory_user_term_stats."))
               for c in _columns_holding("zebrawood"))
    with connection.cursor() as cursor:  # the kept keyword statistics: bob's counts stay, erin's are gone
        cursor.execute("SELECT user_id, count(*) FROM memory_user_term_stats WHERE lexeme = 'zebrawood' GROUP BY 1")
        assert dict(cursor.fetchall()) == {"bob": 1}
        cursor.execute("SELECT count(*) FROM memory_user_text_stats WHERE user_id = 'erin'")
        assert cursor.fetchone()[0] == 0
    assert not MemoryItem.objects.filter(user_id="erin").exists()
    assert not MemoryHistory.objects.filter(user_id="erin", new_text__icontains="zebrawood").exists()
    client = redis.Redis.from_url(redis_url)
    assert not any(b"zebrawood" in (client.dump(k) or b"") or b"quokka" in (client.dump(k) or b"")
                   for k in client.keys("*"))

    # The erased user's old candidate is closed: approving it brings nothing back.
    assert reviewer.post(f"review/{candidate.id}/approve", {}).status_code == 400
    assert not MemoryItem.objects.filter(user_id="erin").exists()
    job = ConversationJob.objects.get(user_id="erin")
    assert job.status == "done" and job.messages == [] and job.operations == [] and job.counts


def test_erasure_is_idempotent_and_leaves_a_receipt(api, erin_everywhere):
    first = api.delete("users/erin/memories").json()
    second = api.delete("users/erin/memories").json()
    assert set(first["counts"]) == set(second["counts"])
    assert any(first["counts"].values()) and not any(second["counts"].values())
    receipts = list(ErasureReceipt.objects.filter(user_id="erin").order_by("id"))
    assert len(receipts) == 2 and receipts[0].counts == first["counts"]
    assert receipts[0].actor.startswith("api:") and "zebrawood" not in str(receipts[0].counts)


def test_the_dry_run_counts_what_the_erasure_then_erases(erin_everywhere):
    preview = erasure.user_erase(tenant=erin_everywhere, user_id="erin", actor="t", dry_run=True)
    assert preview.receipt is None and MemoryItem.objects.filter(user_id="erin").exists()
    done = erasure.user_erase(tenant=erin_everywhere, user_id="erin", actor="t")
    assert done.counts == preview.counts


def test_a_job_queued_before_the_erasure_writes_nothing_after_it(api, tenant_a):
    with transaction.atomic():  # committed, but its task is not run yet
        job = conversation_job_create(tenant=tenant_a, user_id="erin", session_id="s",
                                      participants={"Erin": "erin", "Bob": "bob"},
                                      messages=[{"role": "user", "name": "Erin", "content": "I love quokkas."},
                                                {"role": "user", "name": "Bob", "content": "I love quokkas too."}])
    erasure.user_erase(tenant=tenant_a, user_id="erin", actor="t")
    conversation_job_run(str(job.id))
    assert not MemoryItem.objects.filter(user_id="erin").exists()
    job.refresh_from_db()
    assert job.status == "done" and job.messages == [] and _columns_holding("quokka") == []


def test_an_erasure_after_extraction_read_the_turns_still_wins(api, tenant_a, monkeypatch):
    """Extraction runs before the job's transaction; an erasure that commits in
    between is seen under the per-user lock and nothing is written for erin."""
    from memories import ingestion

    with transaction.atomic():
        job = conversation_job_create(tenant=tenant_a, user_id="erin", session_id="s",
                                      messages=[{"role": "user", "content": "I love quokkas."}])
    original = ingestion.get_extractor

    def extractor_then_erase():
        extractor = original()
        real = extractor.extract

        def extract(**kwargs):
            found = real(**kwargs)
            erasure.user_erase(tenant=tenant_a, user_id="erin", actor="t")
            return found

        monkeypatch.setattr(extractor, "extract", extract)
        return extractor

    monkeypatch.setattr(ingestion, "get_extractor", extractor_then_erase)
    done = conversation_job_run(str(job.id))
    assert done.counts.get("erased") == 1
    assert not MemoryItem.objects.filter(user_id="erin").exists()


def test_an_erased_users_name_never_heads_a_context_block(api, tenant_a):
    """The block's heading is the name the user gave; after the erasure it is their id, at once (the name is
    read fresh, not from a per-process cache)."""
    converse(api, ["Hi! I'm Quokkarina, I live in Perth."], user_id="erin")
    api.post("memories/search", {"user_id": "erin", "query": "where does she live"})  # the read path warmed up
    assert "Quokkarina" in api.post("context", {"user_id": "erin", "query": "where"}).json()["context"]
    erasure.user_erase(tenant=tenant_a, user_id="erin", actor="t")
    assert "Quokkarina" not in api.post("context", {"user_id": "erin", "query": "where"}).json()["context"]


def test_erasure_leaves_no_session_id_of_the_user(api, tenant_a):
    """Issue 43: session ids survived erasure in candidates, jobs and reflection cycles; a client's
    session id often names the user ("erin-okapi-call"), so none of the erased user's stays anywhere."""
    session = "erin-okapi-call"
    api.remember("erin", "Erin repairs clocks.", session_id=session)
    converse(api, ["I love quokkas.", "I think I might try pottery."], user_id="erin", session_id=session)
    assert Candidate.objects.filter(user_id="erin", session_id=session).exists()
    ReflectionCycle.objects.create(tenant=tenant_a, user_id="erin", session_id=session, trigger="session_end",
                                   status="completed")
    ReflectionCycle.objects.create(tenant=tenant_a, user_id="erin", session_id="erin-okapi-later",
                                   trigger="session_end", status="queued")
    ReflectionCycle.objects.create(tenant=tenant_a, user_id="erin", trigger="requested", status="queued")
    api.remember("bob", "Bob repairs clocks.", session_id="bob-okapi-call")  # another user's stays
    assert {c.split(".")[0] for c in _columns_holding("okapi")} >= {"review_candidates", "conversation_jobs",
                                                                     "reflection_cycles"}

    response = api.delete("users/erin/memories")
    assert response.status_code == 200, response.content
    assert all(c.startswith("memory_items.") for c in _columns_holding("okapi"))
    assert set(MemoryItem.objects.filter(session_id__icontains="okapi").values_list("user_id", flat=True)) == {"bob"}
    # The session's waiting cycle ends (it would reflect on nothing); the user's other one still waits.
    assert sorted(ReflectionCycle.objects.filter(user_id="erin").values_list("trigger", "status")) == [
        ("requested", "queued"), ("session_end", "completed"), ("session_end", "failed")]
    again = api.delete("users/erin/memories").json()["counts"]
    assert not any(again.values())
