import pytest

from memories.models import MemoryItem

VALID = {"user_id": "alice", "text": "A valid memory."}


@pytest.mark.parametrize(
    ("payload", "field"),
    [
        ({"text": "no user"}, "user_id"),
        ({"user_id": "", "text": "empty user"}, "user_id"),
        ({"user_id": "alice"}, "text"),
        ({"user_id": "alice", "text": ""}, "text"),
        ({"user_id": "alice", "text": "   "}, "text"),
        ({"user_id": "alice", "text": "x" * 8001}, "text"),
        ({**VALID, "memory_type": "gossip"}, "memory_type"),
        ({**VALID, "importance": 1.5}, "importance"),
        ({**VALID, "importance": -0.1}, "importance"),
        ({**VALID, "importance": "high"}, "importance"),
        ({**VALID, "importance": True}, "importance"),
        ({"user_id": 42, "text": "number as user"}, "user_id"),
        ({"user_id": "alice", "text": ["a", "list"]}, "text"),
        ({**VALID, "tags": "not-a-list"}, "tags"),
        ({**VALID, "tags": [1, 2]}, "tags"),
        ({**VALID, "data": [1, 2]}, "data"),
        ({**VALID, "valid_at": "yesterday-ish"}, "valid_at"),
        ({**VALID, "colour": "blue"}, "colour"),
    ],
)
def test_it_rejects_bad_memory_fields(api, payload, field):
    response = api.post("memories", payload)
    assert response.status_code == 400, response.content
    assert field in response.json()
    assert MemoryItem.objects.count() == 0


def test_it_rejects_malformed_json(api):
    response = api.client.post("/api/v1/memories", data="{bad json", content_type="application/json")
    assert response.status_code == 400
    assert "body" in response.json()


def test_it_rejects_a_non_object_body(api):
    response = api.post("memories", ["a", "list"])
    assert response.status_code == 400
    assert response.json()


@pytest.mark.parametrize(
    ("payload", "field"),
    [
        ({"query": "tea"}, "user_id"),
        ({"user_id": "alice"}, "query"),
        ({"user_id": "alice", "query": "tea", "limit": 101}, "limit"),
        ({"user_id": "alice", "query": "tea", "limit": 0}, "limit"),
        ({"user_id": "alice", "query": "tea", "limit": "ten"}, "limit"),
        ({"user_id": "alice", "query": "tea", "mode": "psychic"}, "mode"),
        ({"user_id": "alice", "query": "tea", "memory_types": ["gossip"]}, "memory_types"),
        ({"user_id": "alice", "query": "tea", "as_of": "not a date"}, "as_of"),
        ({"user_id": "alice", "query": "tea", "min_score": -1}, "min_score"),
        ({"user_id": "alice", "query": "tea", "start_time": "2024-02-01T00:00:00Z",
          "end_time": "2024-01-01T00:00:00Z"}, "end_time"),
    ],
)
def test_it_rejects_bad_search_fields(api, payload, field):
    response = api.post("memories/search", payload)
    assert response.status_code == 400, response.content
    assert field in response.json()


@pytest.mark.parametrize(
    ("payload", "field"),
    [
        ({"importance": 2}, "importance"),
        ({"expected_version": "one", "importance": 0.2}, "expected_version"),
        ({"expected_version": 0, "importance": 0.2}, "expected_version"),
        ({"text": ""}, "text"),
        ({}, "non_field_errors"),
    ],
)
def test_it_rejects_bad_patches(api, payload, field):
    memory = api.remember("alice", "Original.")
    response = api.patch(f"memories/{memory['id']}", payload)
    assert response.status_code == 400, response.content
    assert field in response.json()


def test_it_rejects_bad_list_filters(api):
    response = api.get("memories", {"memory_type": "gossip"})
    assert response.status_code == 400
    assert "memory_type" in response.json()
    response = api.get("memories", {"created_after": "soon"})
    assert response.status_code == 400
    assert "created_after" in response.json()


def test_an_unknown_api_path_or_malformed_id_answers_json(api):
    for path in ("memories/not-a-uuid", "memories/not-a-uuid/history", "no-such-endpoint"):
        response = api.get(path)
        assert response.status_code == 404 and response.json()["detail"] == "Not found."


def test_each_input_serializer_validates_with_fields_of_its_own():
    """Input serializers copy their declared fields shallowly (serializers.get_fields): two at once
    (two threads of one worker) must not share a bound field, nor a list's child, nor touch the class's."""
    from memories.api.serializers import MemorySearchSerializer

    first = MemorySearchSerializer(data={"user_id": "u", "query": "tea", "tags": ["ok", 5]})
    second = MemorySearchSerializer(data={"user_id": "v", "query": "jazz", "tags": ["fine"]})
    for name in ("query", "tags"):
        assert first.fields[name] is not second.fields[name]
        assert first.fields[name].parent is first and second.fields[name].parent is second
    assert first.fields["tags"].child is not second.fields["tags"].child
    assert first.fields["tags"].child.parent is first.fields["tags"]
    declared = MemorySearchSerializer._declared_fields
    assert declared["query"].parent is None and declared["tags"].child.parent is declared["tags"]

    assert not first.is_valid()
    assert list(first.errors) == ["tags"] and list(first.errors["tags"]) == [1]
    assert second.is_valid(), second.errors
    assert second.validated_data["tags"] == ["fine"] and second.validated_data["user_id"] == "v"
