from memories.models import MemoryHistory, MemoryItem, MemorySource, MemoryVector


def test_delete_archives_and_records_history(api):
    memory = api.remember("alice", "Temporary note.")
    response = api.delete(f"memories/{memory['id']}")
    assert response.status_code == 200
    assert response.json()["memory"]["status"] == "archived"
    item = MemoryItem.objects.get(id=memory["id"])
    assert item.status == "archived"
    assert set(MemoryVector.objects.filter(item=item).values_list("status", flat=True)) == {"archived"}
    events = [h["event"] for h in api.get(f"memories/{memory['id']}/history").json()["results"]]
    assert events == ["ADD", "DELETE"]
    assert api.search("alice", "Temporary note") == []


def test_an_archived_text_can_be_saved_again(api):
    memory = api.remember("alice", "Note.")
    api.delete(f"memories/{memory['id']}")
    assert api.post("memories", {"user_id": "alice", "text": "Note."}).json()["operation"] == "ADD"


def test_erasure_removes_content_and_keeps_audit_rows(api):
    first = api.remember("alice", "Alice's secret diary entry.")
    api.patch(f"memories/{first['id']}", {"text": "Alice's revised diary entry."})
    api.remember("bob", "Bob stays.")
    MemorySource.objects.create(item_id=first["id"], session_id="s1", message_indices=[0])

    response = api.delete("users/alice/memories")
    assert response.status_code == 200
    body = response.json()
    assert body["memories"] == 2 and body["vectors"] == 2 and body["sources"] == 1

    assert not MemoryItem.objects.filter(user_id="alice").exists()
    assert not MemoryVector.objects.filter(user_id="alice").exists()
    history = MemoryHistory.objects.filter(user_id="alice")
    assert history.filter(event="ERASE").count() == 2
    assert not history.exclude(old_text=None).exists() and not history.exclude(new_text=None).exists()
    assert not history.exclude(new_data=None).exists()
    assert MemoryItem.objects.filter(user_id="bob").count() == 1
    assert api.get(f"memories/{first['id']}").status_code == 404
