import pytest

from memories.models import MemoryHistory, MemoryItem, MemoryVector


def test_it_adds_a_memory_and_embeds_it(api, tenant_a):
    response = api.post("memories", {"user_id": "alice", "text": "Alice lives in Lisbon.", "tags": ["home"],
                                     "importance": 0.8, "data": {"city": "Lisbon"}})
    assert response.status_code == 201
    body = response.json()
    assert body["operation"] == "ADD"
    memory = body["memory"]
    assert memory["text"] == "Alice lives in Lisbon."
    assert memory["tags"] == ["home"] and memory["importance"] == 0.8 and memory["version"] == 1
    assert memory["status"] == "active" and memory["expired_at"] is None and memory["valid_at"]
    item = MemoryItem.objects.get(id=memory["id"])
    assert item.tenant == tenant_a and item.embedding_state == "done"
    vector = MemoryVector.objects.get(item=item)
    assert vector.model == "hash-384" and vector.dimensions == 384 and vector.user_id == "alice"
    assert list(MemoryHistory.objects.filter(memory_id=item.id).values_list("event", flat=True)) == ["ADD"]


def test_same_text_again_is_a_noop(api):
    first = api.remember("alice", "Alice likes green tea.")
    response = api.post("memories", {"user_id": "alice", "text": "  alice LIKES green   tea. "})
    assert response.status_code == 201
    assert response.json()["operation"] == "NOOP"
    assert response.json()["memory"]["id"] == first["id"]
    assert MemoryItem.objects.filter(user_id="alice").count() == 1


def test_same_text_for_another_user_is_a_new_memory(api):
    api.remember("alice", "Likes green tea.")
    response = api.post("memories", {"user_id": "bob", "text": "Likes green tea."})
    assert response.json()["operation"] == "ADD"


def test_same_text_with_new_tags_is_an_update(api):
    first = api.remember("alice", "Alice likes green tea.", tags=["drink"])
    response = api.post("memories", {"user_id": "alice", "text": "Alice likes green tea.", "tags": ["morning"]})
    body = response.json()
    assert body["operation"] == "UPDATE"
    assert body["memory"]["id"] == first["id"]
    assert body["memory"]["tags"] == ["drink", "morning"] and body["memory"]["version"] == 2


def test_batch_returns_one_operation_per_item(api):
    api.remember("alice", "Owns a cat named Miso.")
    response = api.post("memories/batch", {"memories": [
        {"user_id": "alice", "text": "Owns a cat named Miso."},
        {"user_id": "alice", "text": "Works as a nurse."},
        {"user_id": "alice", "text": "works as a NURSE."},
        {"user_id": "bob", "text": "Plays the cello."},
    ]})
    assert response.status_code == 201
    assert [r["operation"] for r in response.json()["results"]] == ["NOOP", "ADD", "NOOP", "ADD"]
    assert MemoryItem.objects.count() == 3
    assert MemoryItem.objects.filter(embedding_state="done").count() == 3


def test_a_bad_item_rejects_the_whole_batch(api):
    response = api.post("memories/batch", {"memories": [
        {"user_id": "alice", "text": "Fine memory."},
        {"user_id": "alice", "text": ""},
    ]})
    assert response.status_code == 400
    assert "memories" in response.json()
    assert MemoryItem.objects.count() == 0


def test_batch_over_the_limit_is_rejected(api, settings):
    memories = [{"user_id": "alice", "text": f"memory {i}"} for i in range(1001)]
    response = api.post("memories/batch", {"memories": memories})
    assert response.status_code == 400
    assert "memories" in response.json()
    assert MemoryItem.objects.count() == 0


def test_a_full_batch_of_1000_is_saved_in_one_go(api):
    memories = [{"user_id": f"user-{i % 7}", "text": f"memory number {i}"} for i in range(1000)]
    response = api.post("memories/batch", {"memories": memories})
    assert response.status_code == 201
    assert MemoryItem.objects.count() == 1000
    assert MemoryHistory.objects.filter(event="ADD").count() == 1000


def test_over_long_ids_and_tags_are_refused_not_truncated(tenant_a):
    """The batch insert must never cut a user id short (two users would become
    one): the service refuses it by name, and the column would too."""
    import pytest
    from django.db import DataError, connection, transaction

    from memories.bulk import insert_objects
    from memories.errors import InvalidOperation
    from memories.writing import INDEXED_TEXT, MemorySpec, memory_create_batch
    from memories.writing.core import new_item

    for spec, field in ((MemorySpec(user_id="u" * 256, text="Too long a user."), "user_id"),
                        (MemorySpec(user_id="u", text="Too long a session.", session_id="s" * 256), "session_id"),
                        (MemorySpec(user_id="u", text="Too long a tag.", tags=["t" * 101]), "tags")):
        with pytest.raises(InvalidOperation) as refused:
            memory_create_batch(tenant=tenant_a, actor="t", specs=[spec])
        assert refused.value.field == field
    # Below the service rules, the insert itself keeps the column's limit.
    from django.utils import timezone

    item = new_item(tenant_a, MemorySpec(user_id="u", text="Direct insert."), timezone.now())
    item.user_id = "u" * 300
    with pytest.raises(DataError), transaction.atomic():
        insert_objects(MemoryItem, [item], {"search_vector": INDEXED_TEXT})
    assert not MemoryItem.objects.filter(text="Direct insert.").exists()
    assert connection.is_usable()


def _key(text: str, *, user: str = "alice", archived: bool = False, tags=(), data=()):
    from memories.writing.create import SpecKey

    return SpecKey(user, f"h:{text}", archived, tuple(tags), tuple(data))


@pytest.mark.parametrize("case, specs, stored, expected", [
    ("a new text is added", [_key("tea")], {}, [("ADD", None, None, (), ())]),
    ("a stored text again is a NOOP", [_key("tea")], {("alice", "h:tea", False): ()},
     [("NOOP", ("alice", "h:tea", False), None, (), ())]),
    ("with a new tag it is an UPDATE of the stored row", [_key("tea", tags=["drink"])],
     {("alice", "h:tea", False): ()}, [("UPDATE", ("alice", "h:tea", False), None, ("drink",), ())]),
    ("twice in one batch: the second matches the first", [_key("tea"), _key("tea", data=["k"])], {},
     [("ADD", None, None, (), ()), ("UPDATE", None, 0, (), ("k",))]),
    ("another user's same text is their own", [_key("tea"), _key("tea", user="bob")], {},
     [("ADD", None, None, (), ()), ("ADD", None, None, (), ())]),
    ("an archived text may be saved again", [_key("tea")], {("alice", "h:tea", True): ()},
     [("ADD", None, None, (), ())]),
    ("a re-import of an archived row is a NOOP", [_key("tea", archived=True)], {("alice", "h:tea", True): ()},
     [("NOOP", ("alice", "h:tea", True), None, (), ())]),
    ("a tag the row already has is no change", [_key("tea", tags=["drink"]), _key("tea", tags=["drink"])],
     {("alice", "h:tea", False): ()},
     [("UPDATE", ("alice", "h:tea", False), None, ("drink",), ()), ("NOOP", ("alice", "h:tea", False), None, (), ())]),
])
def test_the_batch_plan(case, specs, stored, expected):
    from memories.writing.create import Stored, plan_batch

    plans = plan_batch(specs, {key: Stored() for key in stored})
    assert [(p.operation, p.stored, p.earlier, p.new_tags, p.new_data_keys) for p in plans] == expected, case
