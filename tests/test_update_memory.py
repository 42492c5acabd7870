from memories.models import MemoryItem


def test_a_text_change_supersedes_the_old_version(api):
    old = api.remember("alice", "Alice lives in Lisbon.", tags=["home"])
    response = api.patch(f"memories/{old['id']}", {"text": "Alice lives in Porto.", "expected_version": 1})
    assert response.status_code == 200
    new = response.json()["memory"]
    assert new["id"] != old["id"] and new["version"] == 2 and new["tags"] == ["home"]
    assert new["text"] == "Alice lives in Porto." and new["expired_at"] is None
    old_row = api.get(f"memories/{old['id']}").json()
    assert old_row["expired_at"] is not None and old_row["superseded_by"] == new["id"]
    assert old_row["text"] == "Alice lives in Lisbon."  # never overwritten in place
    assert MemoryItem.objects.get(id=new["id"]).embedding_state == "done"


def test_a_stale_expected_version_is_a_conflict(api):
    memory = api.remember("alice", "Alice drinks coffee.")
    assert api.patch(f"memories/{memory['id']}", {"importance": 0.9, "expected_version": 1}).status_code == 200
    response = api.patch(f"memories/{memory['id']}", {"importance": 0.1, "expected_version": 1})
    assert response.status_code == 409
    assert response.json()["current_version"] == 2
    assert MemoryItem.objects.get(id=memory["id"]).importance == 0.9


def test_patching_a_superseded_version_is_a_conflict(api):
    memory = api.remember("alice", "Version one.")
    new = api.patch(f"memories/{memory['id']}", {"text": "Version two."}).json()["memory"]
    response = api.patch(f"memories/{memory['id']}", {"text": "Version three."})
    assert response.status_code == 409
    assert response.json()["superseded_by"] == new["id"]


def test_non_text_changes_update_in_place(api):
    memory = api.remember("alice", "Alice plays chess.")
    response = api.patch(f"memories/{memory['id']}", {"importance": 0.9, "tags": ["games"], "data": {"level": 3}})
    body = response.json()["memory"]
    assert body["id"] == memory["id"] and body["version"] == 2
    assert body["importance"] == 0.9 and body["tags"] == ["games"] and body["data"] == {"level": 3}


def test_a_patch_that_changes_nothing_is_a_noop(api):
    memory = api.remember("alice", "Alice plays chess.", importance=0.5)
    response = api.patch(f"memories/{memory['id']}", {"importance": 0.5})
    assert response.json()["operation"] == "NOOP" and response.json()["memory"]["version"] == 1


def test_superseding_onto_another_current_text_is_a_conflict(api):
    api.remember("alice", "Text A.")
    other = api.remember("alice", "Text B.")
    response = api.patch(f"memories/{other['id']}", {"text": "Text A."})
    assert response.status_code == 409
