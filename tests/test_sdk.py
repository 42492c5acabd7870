"""The Python SDK (clients/python, `memory_client`) against the live service."""

from __future__ import annotations

import time

import pytest
from memory_client import (
    AsyncMemoryClient,
    AuthenticationError,
    Conflict,
    ContextBlock,
    MemoryClient,
    NotFound,
    PermissionDenied,
    Person,
    RateLimited,
    RetryPolicy,
    ServiceUnavailable,
    TransportError,
    ValidationError,
)
from memory_client.errors import QuotaExceeded, ServerError, error_for

from memories.keys import api_key_create
from memories.models import KeyRole
from tests.conftest import run_async


@pytest.mark.parametrize("status, body, expected", [
    (400, {"text": ["too long"]}, ValidationError),
    (413, {"body": ["too large"]}, ValidationError),
    (401, {"detail": "bad key"}, AuthenticationError),
    (403, {"detail": "no"}, PermissionDenied),
    (403, {"detail": "full", "quota": "memories", "limit": 1, "used": 1}, QuotaExceeded),
    (404, {"detail": "memory x not found"}, NotFound),
    (409, {"detail": "stale", "current_version": 3}, Conflict),
    (429, {"detail": "slow down"}, RateLimited),
    (503, {"detail": "database unavailable"}, ServiceUnavailable),
    (500, "<html>", ServerError),
])
def test_each_error_answer_has_its_exception(status, body, expected):
    error = error_for(status, body, retry_after=2.0, request_id="r1")
    assert type(error) is expected and error.status_code == status and error.request_id == "r1"


@pytest.mark.parametrize("attempt, status, retry_after, expected", [
    (0, 429, 2.0, 2.0),  # the service's Retry-After wins
    (0, 503, 120.0, 30.0),  # ... up to max_delay
    (2, 503, None, "backoff"),  # else exponential backoff with jitter: 0.5 * 2**2 * [0.5, 1)
    (3, 429, 1.0, None),  # retries exhausted
    (0, 400, None, None),  # a client error is never retried
    (0, 500, None, None),  # nor a server error: it may have written something
    (0, None, None, "backoff"),  # a failed connection is
])
def test_retry_delays(attempt, status, retry_after, expected):
    delay = RetryPolicy(max_retries=3).delay(attempt, status_code=status, retry_after=retry_after)
    if expected == "backoff":
        assert delay is not None and 0.25 * 2 ** attempt <= delay < 0.5 * 2 ** attempt
    else:
        assert delay == expected


@pytest.fixture
def keys(transactional_db):
    agent = api_key_create(tenant_name="acme").raw_key
    reviewer = api_key_create(tenant_name="acme", role=KeyRole.REVIEWER).raw_key
    other = api_key_create(tenant_name="globex").raw_key
    return agent, reviewer, other


def test_the_sync_client_covers_the_api(live_server, keys):
    agent_key, reviewer_key, other_key = keys
    with MemoryClient(live_server.url, api_key=agent_key) as client:
        saved = client.add("alice", "Alice's favourite tea is genmaicha.", tags=["tea"], importance=0.8)
        assert saved.operation == "ADD" and saved.memory.version == 1 and saved.memory.created_at.tzinfo
        memory = client.get(saved.memory.id)
        assert memory.text == "Alice's favourite tea is genmaicha." and memory.tags == ["tea"]

        for n in range(4):
            client.add("alice", f"Alice visited museum number {n}.")
        assert len(client.list(user_id="alice", page_size=2).results) == 2
        assert len(list(client.iter_memories(user_id="alice", page_size=2))) == 5

        found = client.search("genmaicha tea", user_id="alice", limit=3)
        top = found.results[0]
        assert top.memory.id == memory.id and top.scores.relevance == 1.0 and top.scores.keyword is not None
        assert found.degraded == []
        # The seeds' controls: a keyword list, a time range in days; matched keywords, a preview, the turns
        # (none for a memory saved as given), the total and the groups.
        keyed = client.search("what does she drink?", user_id="alice", mode="keyword", keywords=["genmaicha"],
                              time_range_days=30, include_turns=True)
        hit = keyed.results[0]
        assert hit.memory.id == memory.id and hit.matched_keywords == ["genmaicha"]
        assert hit.preview == "Alice's favourite tea is genmaicha." and hit.turns == [] and hit.turns_total == 0
        assert keyed.total_count == len(keyed.results) and keyed.total_count_exact
        assert [(g.group_id, g.count) for g in keyed.groups] == [("", len(keyed.results))]
        assert found.results[0].turns is None  # only when asked
        with pytest.raises(ValidationError) as refused:
            client.search("tea", user_id="alice", keywords=["tea"], mode="semantic")
        assert "keywords" in refused.value.fields

        updated = client.update(memory.id, importance=0.3, expected_version=1)
        assert updated.operation == "UPDATE" and updated.memory.version == 2
        with pytest.raises(Conflict) as stale:
            client.update(memory.id, importance=0.9, expected_version=1)
        assert stale.value.current_version == 2
        retexted = client.update(memory.id, text="Alice's favourite tea is sencha.")
        events = [e.event for e in client.iter_history(retexted.memory.id)]
        assert events[:2] == ["ADD", "UPDATE"] and "SUPERSEDE" in events

        job = client.add_conversation("bob", "s1", [{"role": "user", "content": "I work as a nurse in Leeds."},
                                                    {"role": "assistant", "content": "Thanks for sharing."}])
        job = client.wait_for_job(job.job_id)
        ended = client.end_session("s1", user_id="bob")
        assert ended.trigger == "session_end" and ended.session_id == "s1" and ended.raw["id"] == ended.id
        assert client.wait_for_reflection(ended.id).status == "completed"
        assert client.end_session("s1", user_id="bob").id == ended.id  # once per session
        assert job.status == "done" and job.counts.get("ADD", 0) >= 1

        context = client.context("What does bob do for a living?", user_id="bob")
        assert isinstance(context, ContextBlock) and "nurse" in context.text and context.memories

        a, b = client.add("carol", "Carol has a dog."), client.add("carol", "Carol's dog is called Rex.")
        merged = client.merge([a.memory.id, b.memory.id], text="Carol has a dog called Rex.")
        assert merged.text == "Carol has a dog called Rex."
        assert client.delete(merged.id).operation == "DELETE"

        with pytest.raises(ValidationError) as invalid:
            client.add("alice", "")
        assert "text" in invalid.value.fields
        with pytest.raises(NotFound):
            client.get("00000000-0000-0000-0000-000000000000")
        with pytest.raises(PermissionDenied):
            client.review_queue()  # agent keys don't see the queue

        assert client.traits("alice") == {"behavior": [], "preference": [], "core": []}
        cycle = client.reflect("alice")
        assert client.wait_for_reflection(cycle.id).status == "completed"
        assert client.health()["status"] in ("ok", "degraded") and client.ready()["ready"] is True

        erased = client.erase_user("carol")
        assert erased.counts["memories"] == 3 and client.list(user_id="carol").results == []

    with MemoryClient(live_server.url + "/api/v1", api_key=other_key) as other:
        with pytest.raises(NotFound):
            other.get(memory.id)
        assert other.search("tea", user_id="alice").results == []
    with pytest.raises(AuthenticationError):
        MemoryClient(live_server.url, api_key="mk_wrong").get(memory.id)


def test_reviewers_work_the_queue(live_server, keys, settings):
    agent_key, reviewer_key, _ = keys
    agent = MemoryClient(live_server.url, api_key=agent_key)
    job = agent.add_conversation("dan", "s1", [{"role": "user", "content": "My email is dan@example.com."},
                                               {"role": "user", "content": "I might take up pottery."}])
    agent.wait_for_job(job.job_id)
    reviewer = MemoryClient(live_server.url, api_key=reviewer_key)
    waiting = reviewer.review_queue()
    assert waiting, "sensitive and unsure statements wait for review"
    approved = reviewer.approve(waiting[0].id, text="Dan might take up pottery.")
    assert approved.status == "approved" and approved.result_memory
    if len(waiting) > 1:
        assert reviewer.reject(waiting[1].id, reason="not needed").status == "rejected"


def test_429_is_retried_after_the_wait_the_service_names(live_server, keys, settings, redis_url):
    settings.RATE_LIMIT_WINDOW_SECONDS, settings.RATE_LIMIT_KEY_REQUESTS = 1, 2
    patient = MemoryClient(live_server.url, api_key=keys[0], retry=RetryPolicy(max_retries=5, max_delay=2))
    started = time.monotonic()
    for n in range(5):
        patient.add("erin", f"Erin note {n}.")
    assert time.monotonic() - started >= 1.0, "some calls waited for the next window"

    impatient = MemoryClient(live_server.url, api_key=keys[0], retry=RetryPolicy(max_retries=0))
    with pytest.raises(RateLimited) as refused:
        for n in range(5):
            impatient.add("erin", f"Erin other note {n}.")
    assert refused.value.retry_after and refused.value.retry_after <= 1


def test_no_server_is_a_transport_error_after_retries():
    client = MemoryClient("http://127.0.0.1:9", api_key="mk_x", retry=RetryPolicy(max_retries=1, base_delay=0.01),
                          timeout=2)
    with pytest.raises(TransportError):
        client.health()


def test_the_async_client_and_the_agent_loop(live_server, keys):
    async def agent_loop() -> str:
        async with AsyncMemoryClient(live_server.url, api_key=keys[0]) as memory:
            job = await memory.add_conversation("fay", "chat-1", [
                {"role": "user", "content": "I'm training for the Berlin marathon in September."}])
            await memory.wait_for_job(job.job_id)
            context = await memory.context("How is the training going?", user_id="fay")
            listed = [m async for m in memory.iter_memories(user_id="fay", page_size=1)]
            assert listed and all(m.user_id == "fay" for m in listed)
            return context.text

    assert "marathon" in run_async(agent_loop)


def test_the_people_in_a_users_life(live_server, keys):
    """people and person, sync and async: a conversation names someone, the service knows them."""
    agent_key, _, other_key = keys
    with MemoryClient(live_server.url, api_key=agent_key) as client:
        job = client.add_conversation("hana", "s1", [{"role": "user", "content": "My mum Sheila lives in Leeds."}])
        assert client.wait_for_job(job.job_id).status == "done"
        people = client.people("hana")
        assert people[0].kind == "user"
        mum = next(p for p in people if p.relation == "mother")
        assert isinstance(mum, Person) and mum.name == "Sheila" and mum.relation_word == "mum"
        assert mum.kind == "person" and mum.raw["id"] == mum.id
        assert [e.value for e in mum.edges if e.predicate == "lives_in"] == ["Leeds"]
        assert all(p.kind == "person" for p in client.people("hana", kind="person"))
        assert mum.id in {p.id for p in client.people("hana", kind="person")}
        page = client.person("hana", mum.id)
        assert page.id == mum.id and page.status == "active" and page.relation == "mother"
        lived = [e for e in page.edges_history if e.predicate == "lives_in"]
        assert [(e.value, e.invalid_at) for e in lived] == [("Leeds", None)] and lived[0].created_at.tzinfo
        about = [m for m in client.list(user_id="hana").results if m.subject and m.subject["id"] == mum.id]
        assert about and "Leeds" in about[0].text
        found = client.search("Leeds", user_id="hana", person_id=mum.id).results
        assert found and all(r.memory.subject and r.memory.subject["id"] == mum.id for r in found)

        with pytest.raises(ValidationError) as bad_kind:
            client.people("hana", kind="robot")
        assert "kind" in bad_kind.value.fields
        with pytest.raises(NotFound):
            client.person("hana", "00000000-0000-0000-0000-000000000000")
        with pytest.raises(NotFound):
            client.person("someone-else", mum.id)
    with MemoryClient(live_server.url, api_key=other_key) as other:
        assert other.people("hana") == []
        with pytest.raises(NotFound):
            other.person("hana", mum.id)

    async def read() -> tuple[list[Person], Person]:
        async with AsyncMemoryClient(live_server.url, api_key=agent_key) as memory:
            return await memory.people("hana", kind="person"), await memory.person("hana", mum.id)

    persons, again = run_async(read)
    assert mum.id in {p.id for p in persons} and again.name == "Sheila" and again.edges_history


def test_the_readme_agent_loop_runs_as_written(live_server, keys, monkeypatch):
    import re
    from pathlib import Path

    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text()
    code = re.search(r"An agent turn:\n\n```python\n(.*?)```", readme, re.S).group(1)
    namespace: dict = {"KEY": keys[0]}
    monkeypatch.setenv("PORT", live_server.url.rsplit(":", 1)[1])  # the snippet reads $PORT, as make run does
    exec(code, namespace)  # noqa: S102 - our own README
    prompts: list[str] = []

    def llm(prompt: str) -> str:
        prompts.append(prompt)
        return "Noted."

    namespace["agent_turn"]("gus", "chat-1", "I moved to Oslo last spring.", llm)
    namespace["agent_turn"]("gus", "chat-1", "Where do I live now?", llm)
    assert "Oslo" in prompts[1], prompts[1]


MEMORY_JSON = {"id": "m1", "user_id": "u", "text": "t", "new_field": 1}
SAMPLES = {
    "Memory": MEMORY_JSON,
    "ScoreParts": {"relevance": 1.0, "fusion": 0.1, "recency": 1, "importance": 0.5, "stage": 1, "new_field": 1},
    "SearchResult": {"memory": MEMORY_JSON, "score": 0.5, "scores": {"relevance": 1, "fusion": 0.1, "recency": 1,
                                                                     "importance": 0.5, "stage": 1}, "new_field": 1},
    "SearchResponse": {"results": [], "degraded": [], "new_field": 1},
    "SearchGroup": {"group_id": "", "count": 1, "best_score": 0.5, "memory_ids": ["m"], "new_field": 1},
    "Candidate": {"id": "c", "user_id": "u", "operation": "ADD", "text": "t", "status": "pending", "new_field": 1},
    "WriteResult": {"operation": "ADD", "memory": MEMORY_JSON, "new_field": 1},
    "Job": {"job_id": "j", "status": "done", "new_field": 1},
    "HistoryEvent": {"id": 1, "memory_id": "m", "event": "ADD", "actor": "a", "new_field": 1},
    "Trait": {"id": "t", "text": "t", "subtype": "preference", "stage": "emerging", "confidence": 0.5,
              "new_field": 1},
    "ContextBlock": {"context": "", "format": "markdown", "new_field": 1},
    "Erasure": {"user_id": "u", "receipt_id": 1, "counts": {}, "new_field": 1},
    "ReflectionCycle": {"id": 1, "user_id": "u", "status": "done", "new_field": 1},
    "PersonFact": {"id": "m", "text": "t", "memory_type": "fact", "new_field": 1},
    "PersonEdge": {"id": "e", "predicate": "lives_in", "source_id": "p", "value": "Leeds", "new_field": 1},
    "Person": {"id": "p", "name": "Sheila", "kind": "person", "current_facts": [{"id": "m", "text": "t"}],
               "edges": [{"id": "e", "predicate": "lives_in", "source_id": "p"}], "new_field": 1},
    "SessionTurn": {"job_id": "j", "index": 0, "role": "user", "content": "c", "new_field": 1},
    "Session": {"session_id": "s", "turns": 1, "jobs": 1, "new_field": 1},
}


def test_every_sdk_model_keeps_the_whole_answer_in_raw():
    """A field the API adds is reachable before the SDK names it: every model has `raw` (Page too)."""
    import dataclasses

    from memory_client import models

    named = {name for name, value in vars(models).items()
             if dataclasses.is_dataclass(value) and value.__module__ == models.__name__}
    assert named == set(SAMPLES) | {"Page"}
    for name, body in SAMPLES.items():
        parsed = getattr(models, name).from_json(body)
        assert parsed.raw["new_field"] == 1, name
    assert "raw" in {f.name for f in dataclasses.fields(models.Page)}


def test_what_the_typescript_sdk_can_the_python_sdk_can(live_server, keys):
    """Approve as written with a reason, approve redacted, the context's language, page after page,
    and the async client's wait for a reflection: sync and async, against the live service."""
    agent_key, reviewer_key, _ = keys  # the first approval loads the emotion models: minutes on a busy machine
    agent = MemoryClient(live_server.url, api_key=agent_key, timeout=180)
    reviewer = MemoryClient(live_server.url, api_key=reviewer_key, timeout=180)
    said = "Please keep my mobile, 07700 900123, for the courier."
    held = [agent.add("nina", said).candidate, agent.add("nina", said.replace("courier", "florist")).candidate]
    assert all(c is not None and "sensitive" in c.reasons for c in held)
    with pytest.raises(ValidationError) as bare:
        reviewer.approve(held[0].id)
    assert "text" in bare.value.fields and "approve it redacted" in str(bare.value)
    with pytest.raises(ValidationError) as no_reason:
        reviewer.approve(held[0].id, sensitive="as_written")
    assert "reason" in no_reason.value.fields

    kept = reviewer.approve(held[0].id, sensitive="as_written", reason="the user asked us to keep it for deliveries")
    assert kept.status == "approved" and kept.resolved_by and kept.resolved_at.tzinfo
    assert agent.get(kept.result_memory).text == said
    approval = [e for e in agent.iter_history(kept.result_memory) if e.event == "APPROVE"]
    assert "kept as written (phone): the user asked us to keep it" in approval[0].reason
    assert approval[0].new_data["sensitive_reason"] == "the user asked us to keep it for deliveries"
    redacted = reviewer.approve(held[1].id, sensitive="redacted")
    assert agent.get(redacted.result_memory).text == "Please keep my mobile, [phone withheld], for the florist."

    agent.add("nina", "Nina's favourite flowers are tulips.")
    english = agent.context("What flowers does Nina like?", user_id="nina", language="en")
    chinese = agent.context("What flowers does Nina like?", user_id="nina", language="zh")
    assert "### Memories" in english.text and "### 记忆" in chinese.text and "tulips" in chinese.text
    with pytest.raises(ValidationError) as bad_language:
        agent.context("flowers", user_id="nina", language="fr")
    assert "language" in bad_language.value.fields

    first = agent.list(user_id="nina", page_size=1)
    pages, page = [first], agent.next_page(first)
    while page is not None:
        pages.append(page)
        page = agent.next_page(page)
    listed = [m for p in pages for m in p.results]
    assert len(pages) == 3 and [m.id for m in listed] == [m.id for m in agent.iter_memories(user_id="nina")]
    assert all(isinstance(m.access_count, int) and m.content_hash for m in listed)
    erased = agent.erase_user("nina")  # an agent key erases what it saved; the reviewer's approvals wait for one
    assert erased.memories == erased.counts["memories"] == 1 and erased.erased_at.tzinfo and erased.pending_candidate_id

    async def the_async_client() -> tuple[int, int, str]:
        async with AsyncMemoryClient(live_server.url, api_key=agent_key, timeout=180) as memory:
            for n in range(3):
                await memory.add("omar", f"Omar visited museum number {n}.")
            first = await memory.list(user_id="omar", page_size=2)
            second = await memory.next_page(first)
            assert await memory.next_page(second) is None
            cycle = await memory.wait_for_reflection((await memory.reflect("omar")).id)
            block = await memory.context("museums", user_id="omar", language="zh")
            return len(first.results) + len(second.results), cycle.started_at is not None, cycle.status + block.text

    count, started, said_back = run_async(the_async_client)
    assert count == 3 and started and said_back.startswith("completed") and "### 记忆" in said_back
