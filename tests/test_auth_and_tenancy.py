from datetime import timedelta

import pytest
from django.utils import timezone

from memories.keys import api_key_revoke
from memories.models import ApiKey, MemoryItem


def test_a_request_without_a_key_is_401(anonymous):
    response = anonymous.get("/api/v1/memories")
    assert response.status_code == 401
    assert response["WWW-Authenticate"] == "Bearer"


@pytest.mark.parametrize("header", ["Bearer nope", "Bearer mk_0000_wrong", "Basic abc", "Bearer "])
def test_a_bad_key_is_401(anonymous, key_a, header):
    response = anonymous.get("/api/v1/memories", HTTP_AUTHORIZATION=header)
    assert response.status_code == 401


def test_a_revoked_key_is_401(api, key_a):
    assert api.get("memories").status_code == 200
    api_key_revoke(key_id=key_a.api_key.id)
    assert api.get("memories").status_code == 401


def test_an_expired_key_is_401(api, key_a, settings):
    settings.KEY_CACHE_SECONDS = 0  # the row is changed behind the service's back: read it each time
    ApiKey.objects.filter(pk=key_a.api_key.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    assert api.get("memories").status_code == 401


def test_a_key_is_remembered_per_process_within_its_bound(api, key_a, settings, django_capture_on_commit_callbacks):
    """KEY_CACHE_SECONDS: no lookup per request. Revoking or rotating here takes effect at once; a change
    made by another process (here: the row updated directly) within the bound; expiry on every use."""
    import time

    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from memories.keys import api_key_create, api_key_rotate
    from tests.conftest import Api

    settings.KEY_CACHE_SECONDS = 1
    assert api.get("memories").status_code == 200
    with CaptureQueriesContext(connection) as queries:
        assert api.get("memories").status_code == 200
    assert not any("api_keys" in q["sql"] for q in queries.captured_queries), "the key was looked up again"

    ApiKey.objects.filter(pk=key_a.api_key.pk).update(revoked_at=timezone.now())  # another process revokes it
    assert api.get("memories").status_code == 200  # still remembered here, within the bound
    time.sleep(1.1)
    assert api.get("memories").status_code == 401  # past the bound: looked up, refused

    issued = api_key_create(tenant_name="acme", name="rotating")
    rotating = Api(issued.raw_key, django_capture_on_commit_callbacks)
    assert rotating.get("memories").status_code == 200
    replacement = api_key_rotate(key_id=issued.api_key.id)  # in this process: the old key stops at once
    assert rotating.get("memories").status_code == 401
    assert Api(replacement.raw_key, django_capture_on_commit_callbacks).get("memories").status_code == 200

    brief = api_key_create(tenant_name="acme", name="brief", expires_at=timezone.now() + timedelta(seconds=1))
    briefly = Api(brief.raw_key, django_capture_on_commit_callbacks)
    assert briefly.get("memories").status_code == 200
    settings.KEY_CACHE_SECONDS = 60
    assert briefly.get("memories").status_code == 200
    time.sleep(1.1)
    assert briefly.get("memories").status_code == 401  # expiry is checked on every use, cached or not


def test_only_a_hash_of_the_key_is_stored(key_a):
    stored = ApiKey.objects.get(pk=key_a.api_key.pk)
    assert key_a.raw_key not in (stored.key_hash, stored.prefix, stored.name)
    assert len(stored.key_hash) == 64


def test_another_tenant_cannot_touch_a_memory(api, api_b):
    memory = api.remember("alice", "Alice's bank is Monzo.")
    assert api_b.get(f"memories/{memory['id']}").status_code == 404
    assert api_b.get(f"memories/{memory['id']}/history").status_code == 404
    assert api_b.patch(f"memories/{memory['id']}", {"importance": 0.1}).status_code == 404
    assert api_b.patch(f"memories/{memory['id']}", {"text": "hijacked"}).status_code == 404
    assert api_b.delete(f"memories/{memory['id']}").status_code == 404
    assert api_b.get("memories").json()["results"] == []
    assert api_b.get("memories", {"user_id": "alice"}).json()["results"] == []
    for mode in ("semantic", "keyword", "hybrid"):
        assert api_b.search("alice", "Monzo bank", mode=mode) == []
    assert api_b.delete("users/alice/memories").json()["memories"] == 0
    item = MemoryItem.objects.get(id=memory["id"])
    assert item.status == "active" and item.importance == 0.5 and item.text == "Alice's bank is Monzo."


def test_the_same_user_id_in_two_tenants_is_two_users(api, api_b):
    api.remember("alice", "Tenant A's Alice likes jazz.")
    api_b.remember("alice", "Tenant B's Alice likes metal.")
    texts = [r["memory"]["text"] for r in api_b.search("alice", "likes music")]
    assert texts == ["Tenant B's Alice likes metal."]
