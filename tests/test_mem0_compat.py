"""Mem0's own client (mem0ai 2.2.1), unchanged, against the live service."""

from __future__ import annotations

import os

os.environ.setdefault("MEM0_TELEMETRY", "False")

import httpx  # noqa: E402
import pytest  # noqa: E402
from mem0 import AsyncMemoryClient, MemoryClient  # noqa: E402
from mem0.exceptions import MemoryError as Mem0Error  # noqa: E402

from memories.keys import api_key_create  # noqa: E402
from memories.models import MemoryHistory, MemoryItem  # noqa: E402
from tests.conftest import run_async  # noqa: E402


@pytest.fixture
def keys(transactional_db):
    return api_key_create(tenant_name="acme").raw_key, api_key_create(tenant_name="globex").raw_key


@pytest.fixture
def client(live_server, keys) -> MemoryClient:
    return MemoryClient(api_key=keys[0], host=live_server.url)


def test_construction_pings_and_a_bad_key_is_refused(live_server, keys):
    assert MemoryClient(api_key=keys[0], host=live_server.url).org_id
    with pytest.raises(ValueError, match="Invalid, revoked or expired API key"):
        MemoryClient(api_key="mk_not-a-key", host=live_server.url)


def test_add_extracts_search_finds_and_every_call_leaves_history(client):
    added = client.add([{"role": "user", "content": "I'm allergic to peanuts."},
                        {"role": "assistant", "content": "Noted, no peanuts."},
                        {"role": "user", "content": "I live in Lisbon with my partner Ana."}],
                       user_id="alice", run_id="trip")
    events = {e["event"] for e in added["results"]}
    assert events == {"ADD"} and len(added["results"]) >= 2, added
    stored = MemoryItem.objects.filter(user_id="alice")
    assert all("Noted" not in m.text for m in stored), "assistant small talk is not a memory"

    found = client.search("Is she allergic to peanuts?", filters={"user_id": "alice"}, top_k=3)
    assert "peanut" in found["results"][0]["memory"].lower()
    assert 1 <= len(found["results"]) <= 3 and {"score", "scores", "id", "user_id"} <= set(found["results"][0])
    assert found["results"][0]["run_id"] == "trip"

    verbatim = client.add("Remember: the wifi password hint is 'blue door'.", user_id="alice", infer=False,
                          metadata={"source": "note"})
    memory_id = verbatim["results"][0]["id"]
    got = client.get(memory_id)
    assert got["memory"] == "Remember: the wifi password hint is 'blue door'." and got["metadata"] == {"source": "note"}

    updated = client.update(memory_id, text="The wifi password hint is 'red door'.")
    assert updated["memory"] == "The wifi password hint is 'red door'." and updated["version"] == 2
    assert client.get(memory_id)["memory"] == updated["memory"], "the old id leads to the newest version"
    history = client.history(memory_id)
    assert [h["event"] for h in history] == ["ADD", "UPDATE"]
    assert history[1]["old_memory"].endswith("'blue door'.") and history[1]["new_memory"].endswith("'red door'.")

    assert client.delete(memory_id)["message"] == "Memory deleted successfully!"
    assert MemoryHistory.objects.filter(memory_id=updated["id"], event="DELETE").count() == 1
    assert [h["event"] for h in client.history(memory_id)] == ["ADD", "UPDATE", "DELETE"]
    assert all(r["id"] != memory_id for r in client.get_all(filters={"user_id": "alice"})["results"])


def test_filters_scope_by_agent_and_run_and_pages_walk_everything(client):
    client.add([{"role": "user", "content": f"Note number {i} for the planner."} for i in range(7)],
               user_id="bob", agent_id="planner", run_id="r1", infer=False)
    client.add([{"role": "user", "content": "A note only the coach saved."}], user_id="bob", agent_id="coach",
               run_id="r2", infer=False)

    by_agent = client.search("note", filters={"AND": [{"user_id": "bob"}, {"agent_id": "coach"}]}, top_k=20)
    assert {r["agent_id"] for r in by_agent["results"]} == {"coach"}
    by_run = client.get_all(filters={"user_id": "bob", "run_id": "r1"}, page_size=100)
    assert by_run["count"] == 7 and {r["run_id"] for r in by_run["results"]} == {"r1"}

    seen, page = [], 1
    while True:
        answer = client.get_all(filters={"user_id": "bob"}, page=page, page_size=3)
        seen += [r["id"] for r in answer["results"]]
        if not answer["next"]:
            break
        page += 1
    assert len(seen) == len(set(seen)) == 8 and answer["count"] == 8


def test_batches_users_and_delete_all(client, keys, live_server):
    added = client.add([{"role": "user", "content": f"Fact {i} about carol."} for i in range(3)],
                       user_id="carol", infer=False)
    ids = [r["id"] for r in added["results"]]
    client.batch_update([{"memory_id": ids[0], "text": "Fact zero, corrected."},
                         {"memory_id": ids[1], "text": "Fact one, corrected."}])
    assert client.get(ids[0])["memory"] == "Fact zero, corrected."
    with pytest.raises(Mem0Error):  # one unknown id: nothing of the batch is applied
        client.batch_update([{"memory_id": ids[2], "text": "changed?"},
                             {"memory_id": "00000000-0000-0000-0000-000000000000", "text": "x"}])
    assert client.get(ids[2])["memory"] == "Fact 2 about carol." and client.get(ids[2])["version"] == 1
    deleted = client.batch_delete([{"memory_id": ids[2]}, {"memory_id": ids[2]}])  # named twice: one deletion
    assert MemoryItem.objects.get(id=ids[2]).status == "archived" and "deleted 1 memories" in str(deleted)

    users = client.users()
    assert {u["name"] for u in users["results"]} == {"carol"} and users["results"][0]["total_memories"] == 2

    other_tenant = MemoryClient(api_key=keys[1], host=live_server.url)
    assert other_tenant.users()["results"] == [] and other_tenant.get_all(filters={"user_id": "carol"})["count"] == 0
    with pytest.raises(Mem0Error):
        other_tenant.get(ids[0])

    client.delete_all(user_id="carol")
    assert not MemoryItem.objects.filter(user_id="carol").exists()
    assert not MemoryHistory.objects.filter(user_id="carol", new_text__contains="corrected").exists()


def test_what_mem0_has_and_this_service_does_not_is_a_clear_error(client, keys, live_server):
    for call in (lambda: client.get_summary(filters={"user_id": "x"}),
                 lambda: client.create_memory_export(schema="{}", filters={"user_id": "x"}),
                 lambda: client.get_webhooks(project_id="p"),
                 lambda: client.feedback(memory_id="00000000-0000-0000-0000-000000000000", feedback="POSITIVE"),
                 lambda: client.search("q", filters={"user_id": "x"}, rerank=True),
                 lambda: client.add("hi", user_id="x", custom_instructions="only food"),
                 lambda: client.add("hi", agent_id="lonely-agent"),
                 lambda: client.search("q", filters={"OR": [{"user_id": "x"}, {"user_id": "y"}]})):
        with pytest.raises(Mem0Error) as caught:
            call()
        assert caught.value.details.get("status_code", 0) < 500 or caught.value.details["status_code"] == 501
    answer = httpx.post(f"{live_server.url}/v1/summary/", headers={"Authorization": f"Token {keys[0]}"}, json={})
    assert answer.status_code == 501 and "summaries" in answer.json()["detail"]
    bad = httpx.post(f"{live_server.url}/v3/memories/search/", headers={"Authorization": f"Token {keys[0]}"},
                     json={"query": "q", "filters": {"user_id": "x", "colour": "red"}})
    assert bad.status_code == 400 and "filters.colour" in bad.json()
    assert httpx.get(f"{live_server.url}/v1/ping/").status_code == 401


def test_the_async_client_works_the_same(live_server, keys):
    async def scenario():
        client = AsyncMemoryClient(api_key=keys[0], host=live_server.url)
        await client.add([{"role": "user", "content": "I play the cello on Sundays."}], user_id="dora")
        found = await client.search("What instrument does dora play?", filters={"user_id": "dora"}, top_k=2)
        listed = await client.get_all(filters={"user_id": "dora"})
        return found, listed

    found, listed = run_async(scenario)
    assert "cello" in found["results"][0]["memory"] and listed["count"] >= 1


def test_get_all_and_search_give_facts_and_no_invented_run_id(client, keys, live_server, settings):
    """Mem0's users expect facts: the service's episodes (each session's raw turns) come only when asked;
    an add() without run_id answers run_id None, not the internal session's name."""
    settings.CONVERSATION_EPISODES = True
    client.add([{"role": "user", "content": "I'm allergic to peanuts."},
                {"role": "user", "content": "I live in Lisbon with my partner Ana."}], user_id="bea")
    from memories.queue import drain_background

    drain_background()
    assert MemoryItem.objects.filter(user_id="bea", memory_type="episodic").exists()
    listed = client.get_all(filters={"user_id": "bea"})["results"]
    assert listed and all(m["memory_type"] != "episodic" for m in listed)
    assert all(m["run_id"] is None for m in listed)
    found = client.search("peanuts Lisbon", filters={"user_id": "bea"}, top_k=10)["results"]
    assert found and all(m["memory_type"] != "episodic" for m in found)
    asked = httpx.post(f"{live_server.url}/v3/memories/", headers={"Authorization": f"Token {keys[0]}"},
                       json={"filters": {"user_id": "bea"}, "include_episodes": True}).json()["results"]
    assert any(m["memory_type"] == "episodic" for m in asked)
    bad = httpx.post(f"{live_server.url}/v3/memories/", headers={"Authorization": f"Token {keys[0]}"},
                     json={"filters": {"user_id": "bea"}, "include_episodes": "yes"})
    assert bad.status_code == 400 and "include_episodes" in bad.json()


@pytest.mark.parametrize("episodes, traits, left_out", [
    (False, False, ("episodic", "trait")),
    (True, False, ("trait",)),
    (False, True, ("episodic",)),
    (True, True, ()),
])
def test_get_all_leaves_out_what_is_not_asked_for(episodes, traits, left_out):
    from memories.api.mem0 import listed_types_left_out

    assert listed_types_left_out(episodes=episodes, traits=traits) == left_out


@pytest.mark.parametrize("memory_type, data, shown", [
    ("fact", {"source": "note"}, {"source": "note"}),  # what a client gave
    ("fact", {}, None),
    ("fact", {"key": "home", "value": "Lisbon", "slot": "home"}, None),  # the extractor's own
    ("fact", {"key": "k", "colour": "red"}, {"key": "k", "colour": "red"}),  # a client's, naming "key" too
    ("trait", {"contexts": {"general": {"tendency": "tea"}}}, None),
    ("episodic", {"turns": [{"role": "user", "content": "hi"}]}, None),
])
def test_metadata_is_what_a_client_gave(memory_type, data, shown):
    from memories.api.mem0 import mem0_metadata

    assert mem0_metadata(memory_type, data) == shown


def test_score_is_relevance_and_traits_come_when_asked(client, keys, live_server):
    """Mem0's users threshold on `score`: it is the 0-1 relevance (the best hit 1.0), the ranking's raw
    score stays as `ranking_score`. get_all lists facts; traits only with include_traits, and no
    memory shows the service's bookkeeping as metadata."""
    from memories.models import Tenant
    from memories.writing import MemorySpec, memory_create_batch

    client.add([{"role": "user", "content": "I live in Lisbon and I work as a baker."}], user_id="tim")
    memory_create_batch(tenant=Tenant.objects.get(name="acme"), actor="test", specs=[MemorySpec(
        user_id="tim", text="Tim tends to bake at dawn.", memory_type="trait",
        data={"contexts": {"general": {"tendency": "bakes at dawn", "confidence": 0.7}}})])

    found = client.search("Where does tim live?", filters={"user_id": "tim"}, top_k=5)["results"]
    assert found[0]["score"] == found[0]["scores"]["relevance"] == 1.0
    assert all(0.0 <= r["score"] <= 1.0 and r["score"] == r["scores"]["relevance"] for r in found)
    assert all(r["ranking_score"] > 0 for r in found)
    assert any(r["ranking_score"] != r["score"] for r in found)

    listed = client.get_all(filters={"user_id": "tim"})["results"]
    assert listed and not {m["memory_type"] for m in listed} & {"trait", "episodic"}
    assert all(m["metadata"] is None for m in listed), "extraction's slots are not Mem0 metadata"
    asked = httpx.post(f"{live_server.url}/v3/memories/", headers={"Authorization": f"Token {keys[0]}"},
                       json={"filters": {"user_id": "tim"}, "include_traits": True}).json()["results"]
    traits = [m for m in asked if m["memory_type"] == "trait"]
    assert [t["memory"] for t in traits] == ["Tim tends to bake at dawn."] and traits[0]["metadata"] is None
    bad = httpx.post(f"{live_server.url}/v3/memories/", headers={"Authorization": f"Token {keys[0]}"},
                     json={"filters": {"user_id": "tim"}, "include_traits": "yes"})
    assert bad.status_code == 400 and "include_traits" in bad.json()


def test_graph_relations_come_from_the_people_the_service_keeps(client):
    """Mem0's `enable_graph`: search and get_all answer the user's relations beside the results."""
    client.add([{"role": "user", "content": "My mum Sheila lives in Leeds."}], user_id="priya")
    found = client.search("where does my mum live?", filters={"user_id": "priya"}, enable_graph=True)
    relations = {(r["source"], r["relationship"], r["destination"]) for r in found["relations"]}
    assert ("Sheila", "lives_in", "Leeds") in relations
    assert any(r == "mother" and d == "Sheila" for _, r, d in relations)
    listed = client.get_all(filters={"user_id": "priya"}, enable_graph=True)
    assert listed["relations"] and "relations" not in client.search("mum", filters={"user_id": "priya"})


def test_search_says_its_total_the_words_each_memory_holds_and_honours_keyword_search(client):
    """Seed 001's controls where Mem0 has a place for them: `keyword_search` (on: hybrid, off: semantic only);
    beside Mem0's fields, which its client passes through: matched keywords, the total, a failed vector side."""
    client.add("Alice's database is MySQL 8 on port 3307.", user_id="alice", infer=False)
    client.add("Alice's sister lives in Porto.", user_id="alice", infer=False)
    found = client.search("Which database does Alice run?", filters={"user_id": "alice"}, keyword_search=True)
    top = found["results"][0]
    assert top["memory"] == "Alice's database is MySQL 8 on port 3307."
    assert top["matched_keywords"] == ["database", "Alice"]
    assert found["total_count"] >= 1 and found["degraded"] == [] and found["degraded_reason"] == ""
    semantic = client.search("Which database does Alice run?", filters={"user_id": "alice"}, keyword_search=False)
    assert all(r["scores"]["keyword"] is None for r in semantic["results"])  # the keyword side did not run
    assert any(r["scores"]["keyword"] is not None for r in found["results"])
    with pytest.raises(Mem0Error) as caught:
        client.search("q", filters={"user_id": "alice"}, keyword_search="yes")
    assert caught.value.details == {"keyword_search": ["true or false"]}
