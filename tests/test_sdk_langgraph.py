"""The SDK's LangGraph store (memory_client.langgraph.MemoryServiceStore) through
LangGraph's own BaseStore interface, against the live service."""

from __future__ import annotations

import pytest
from langgraph.store.base import BaseStore, Item, SearchItem
from memory_client import MemoryClient
from memory_client.langgraph import MemoryServiceStore

from memories.keys import api_key_create
from memories.models import MemoryHistory, MemoryItem
from tests.conftest import run_async


@pytest.fixture
def store(live_server, transactional_db) -> BaseStore:
    return MemoryServiceStore(MemoryClient(live_server.url, api_key=api_key_create(tenant_name="acme").raw_key))


def test_put_get_search_delete_and_list_namespaces(store):
    alice, bob = ("memories", "alice"), ("memories", "bob")
    store.put(alice, "food", {"text": "Alice is vegetarian.", "since": 2019})
    store.put(alice, "city", {"text": "Alice lives in Lisbon."})
    store.put(("memories", "alice", "work"), "job", {"content": "Alice is a nurse."})
    store.put(bob, "food", {"text": "Bob is allergic to peanuts."})

    item = store.get(alice, "food")
    assert isinstance(item, Item) and item.value == {"text": "Alice is vegetarian.", "since": 2019}
    assert item.key == "food" and item.namespace == alice and item.created_at.tzinfo
    assert store.get(alice, "missing") is None and store.get(bob, "city") is None

    store.put(alice, "food", {"text": "Alice is vegan.", "since": 2021})  # an update, with history
    assert store.get(alice, "food").value["text"] == "Alice is vegan."
    assert MemoryItem.objects.filter(user_id="alice", text="Alice is vegan.").count() == 1
    assert MemoryHistory.objects.filter(user_id="alice", event="SUPERSEDE").exists()

    found = store.search(alice, query="what does alice eat", limit=2)
    assert found and isinstance(found[0], SearchItem) and found[0].key == "food" and found[0].score is not None
    everything = store.search(alice)  # the prefix holds alice's items and the nested work namespace
    assert {(i.namespace, i.key) for i in everything} == {(alice, "food"), (alice, "city"),
                                                          (("memories", "alice", "work"), "job")}
    assert [i.key for i in store.search(alice, filter={"since": 2021})] == ["food"]
    assert {i.key for i in store.search(("memories",))} == {"food", "city", "job"}  # tenant-wide, by tag

    assert store.list_namespaces(prefix=("memories",)) == [alice, ("memories", "alice", "work"), bob]
    assert store.list_namespaces(max_depth=1) == [("memories",)]
    assert store.list_namespaces(suffix=("work",)) == [("memories", "alice", "work")]

    store.delete(alice, "city")
    assert store.get(alice, "city") is None
    assert MemoryItem.objects.get(text="Alice lives in Lisbon.").status == "archived"  # audited, not vanished


def test_the_async_interface(store):
    async def scenario():
        await store.aput(("notes", "carol"), "pet", {"text": "Carol has a dog called Rex."})
        item = await store.aget(("notes", "carol"), "pet")
        hits = await store.asearch(("notes", "carol"), query="dog")
        return item, hits

    item, hits = run_async(scenario)
    assert item.value["text"] == "Carol has a dog called Rex." and hits[0].key == "pet"
