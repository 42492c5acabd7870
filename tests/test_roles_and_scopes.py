"""Who may do what: key roles and admin scopes, every cell of both tables,
then the same rules through the live API and admin."""

from io import StringIO

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.db.models.deletion import ProtectedError
from django.test import Client
from django.urls import reverse

from memories.keys import api_key_create
from memories.models import ApiKey, Candidate, ConversationJob, MemoryHistory, MemoryItem, OperatorProfile, Tenant
from memories.permissions import (
    KeyAction,
    admin_may_manage_accounts,
    admin_scope,
    change_needs_review,
    key_may,
    key_may_read_job,
    key_may_resolve_candidate,
    public_actor,
)
from tests.conftest import Api, converse
from tests.figures import record

ALLOWED = {
    "agent": {"save", "search", "conversations", "own_jobs", "reflect"},
    "reviewer": {"save", "search", "conversations", "own_jobs", "all_jobs", "erase", "reflect", "review"},
    "nonsense": set(),
}
KEY_MATRIX = [(role, action, action.value in allowed) for role, allowed in ALLOWED.items() for action in KeyAction]


@pytest.mark.parametrize(("role", "action", "allowed"), KEY_MATRIX)
def test_key_role_matrix(role, action, allowed):
    assert key_may(role, action) is allowed


@pytest.mark.parametrize(("role", "key_id", "job_key_id", "allowed"), [
    ("agent", 1, 1, True), ("agent", 1, 2, False), ("agent", 1, None, False),
    ("reviewer", 1, 2, True), ("reviewer", 1, None, True), ("nonsense", 1, 1, False),
])
def test_which_jobs_a_key_reads(role, key_id, job_key_id, allowed):
    assert key_may_read_job(role=role, key_id=key_id, job_key_id=job_key_id) is allowed


@pytest.mark.parametrize(("role", "key_ids", "submitted_by", "allowed"), [
    ("agent", {1}, 2, False), ("agent", {1}, 1, False), ("reviewer", {1}, 2, True), ("reviewer", {1}, None, True),
    ("reviewer", {1}, 1, False),
    ("reviewer", {3, 1}, 1, False),  # key 3 was rotated from key 1: the same client
    ("reviewer", {3, 1}, 2, True),
])
def test_who_resolves_a_candidate(role, key_ids, submitted_by, allowed):
    assert key_may_resolve_candidate(role=role, key_ids=key_ids, submitted_by_key_id=submitted_by) is allowed


def test_a_rotated_key_inherits_no_right_to_approve_what_its_predecessor_submitted(reviewer, reviewer_key_a,
                                                                                   django_capture_on_commit_callbacks):
    """Issue 55: a rotated key could approve what its predecessor submitted (a new key id). Twice rotated,
    still refused; another reviewer approves."""
    from memories.keys import api_key_create, api_key_rotate
    from tests.conftest import Api

    held = reviewer.post("memories", {"user_id": "ro", "text": "Ro's email is ro@example.com."}).json()
    candidate = held["candidate"]["id"]
    once = api_key_rotate(key_id=reviewer_key_a.api_key.id)
    twice = Api(api_key_rotate(key_id=once.api_key.id).raw_key, django_capture_on_commit_callbacks)
    answer = twice.post(f"review/{candidate}/approve", {"text": "Ro has an email address."})
    assert answer.status_code == 403, answer.content
    other = Api(api_key_create(tenant_name="acme", name="second", role="reviewer").raw_key,
                django_capture_on_commit_callbacks)
    assert other.post(f"review/{candidate}/approve", {"text": "Ro has an email address."}).status_code == 200


@pytest.mark.parametrize(("role", "approved", "protects", "needs_review"), [
    ("agent", True, True, True), ("agent", True, False, False), ("agent", False, True, False),
    ("reviewer", True, True, False), ("nonsense", True, True, True),
])
def test_which_changes_go_through_review(role, approved, protects, needs_review):
    assert change_needs_review(role=role, approved_by_operator=approved, tenant_protects_approved=protects) \
        is needs_review


SCOPES = [  # is_superuser, has_profile, profile tenant, all_tenants -> (all, tenant, manages accounts)
    (False, False, None, False, (False, None, False)),
    (False, True, None, False, (False, None, False)),
    (False, True, 7, False, (False, 7, False)),
    (False, True, None, True, (True, None, False)),
    (True, False, None, False, (True, None, True)),
    (True, True, 7, False, (False, 7, False)),
    (True, True, None, True, (True, None, True)),
    (True, True, None, False, (False, None, False)),
]


@pytest.mark.parametrize(("superuser", "has_profile", "tenant_id", "all_tenants", "expected"), SCOPES)
def test_admin_scope_matrix(superuser, has_profile, tenant_id, all_tenants, expected):
    scope = admin_scope(is_superuser=superuser, has_profile=has_profile, profile_tenant_id=tenant_id,
                        profile_all_tenants=all_tenants)
    assert (scope.all_tenants, scope.tenant_id, admin_may_manage_accounts(is_superuser=superuser, scope=scope)) \
        == expected


def test_the_tables_cover_every_cell_once():
    """Every key role meets every action, and every admin scope input is a different case: the tables
    above are whole (the figures say how many cells they hold)."""
    allowed_words = {word for words in ALLOWED.values() for word in words}
    assert allowed_words <= {action.value for action in KeyAction}  # no misspelled action passes unseen
    assert len({(role, action) for role, action, _ in KEY_MATRIX}) == len(ALLOWED) * len(KeyAction)
    assert len({cell[:4] for cell in SCOPES}) == len(SCOPES)
    record("roles: key role x action cells tested", len(KEY_MATRIX))
    record("roles: admin scope cells tested", len(SCOPES))


# --------------------------------------------------------------------------- through the API


def test_an_agent_key_gets_403_on_the_review_queue(api):
    converse(api, ["I think I might try pottery classes."])
    candidate = Candidate.objects.get()
    assert api.get("review").status_code == 403
    assert api.post(f"review/{candidate.id}/approve", {}).status_code == 403
    assert api.post(f"review/{candidate.id}/reject", {}).status_code == 403
    assert Candidate.objects.get().status == "pending"


def test_a_key_cannot_approve_what_it_submitted(reviewer):
    converse(reviewer, ["I think I might try pottery classes."])
    candidate = Candidate.objects.get()
    response = reviewer.post(f"review/{candidate.id}/approve", {"text": "Alice will try pottery."})
    assert response.status_code == 403 and not MemoryItem.objects.exists()
    assert reviewer.post(f"review/{candidate.id}/reject", {}).status_code == 403


def test_approved_text_is_screened_again(api, reviewer):
    converse(api, ["I think I might try pottery classes."])
    candidate = Candidate.objects.get()
    response = reviewer.post(f"review/{candidate.id}/approve",
                             {"text": "Alice's SSN is 078-05-1120 and card 4111 1111 1111 1111."})
    assert response.status_code == 400 and "text" in response.json()
    assert Candidate.objects.get().status == "pending" and not MemoryItem.objects.exists()


def test_a_reviewers_redaction_keeps_nothing_of_the_removed_words(api, reviewer):
    converse(api, ["I have a new email, it is alice.smith@example.com."])
    candidate = Candidate.objects.get()
    response = reviewer.post(f"review/{candidate.id}/approve", {"text": "Alice has a new email address."})
    assert response.status_code == 200, response.content
    assert response.json()["text"] == "Alice has a new email address."
    memory = MemoryItem.objects.get()
    assert memory.text == "Alice has a new email address."
    assert Candidate.objects.get().text == "Alice has a new email address."
    rows = MemoryHistory.objects.filter(memory_id=memory.id)
    assert not any("alice.smith" in str(value) for row in rows.values() for value in row.values())
    approve = rows.get(event="APPROVE")
    assert approve.new_data == {"edited_by_reviewer": True} and "edited by the reviewer" in approve.reason


def test_an_agent_key_changes_an_approved_memory_only_through_review(api, reviewer, tenant_a, settings):
    converse(api, ["I think I live in Lisbon."])
    approved = reviewer.post(f"review/{Candidate.objects.get().id}/approve", {}).json()
    memory_id = approved["result_memory"]
    held = api.patch(f"memories/{memory_id}", {"text": "User lives in Madrid."})
    assert held.status_code == 202 and held.json()["operation"] == "REVIEW"
    archive = api.delete(f"memories/{memory_id}")
    assert archive.status_code == 202
    unchanged = MemoryItem.objects.get(id=memory_id)
    assert unchanged.expired_at is None and unchanged.status == "active" and "Lisbon" in unchanged.text
    change = Candidate.objects.get(id=held.json()["candidate"]["id"])
    assert change.operation == "UPDATE" and change.reasons == ["changes_approved"]
    applied = reviewer.post(f"review/{change.id}/approve", {}).json()
    assert MemoryItem.objects.get(id=applied["result_memory"]).text == "User lives in Madrid."
    # A reviewer key's own change is applied directly; so is an agent's when the tenant opts out.
    settings.KEY_CACHE_SECONDS = 0  # the tenant changes behind the service's back: read it with the key
    Tenant.objects.filter(id=tenant_a.id).update(protect_approved=False)
    current = MemoryItem.objects.get(expired_at__isnull=True, status="active")
    assert api.patch(f"memories/{current.id}", {"importance": 0.9}).status_code == 200


def test_an_agent_key_sees_only_its_own_jobs(api, reviewer, tenant_a, django_capture_on_commit_callbacks):
    job = converse(api, ["I like tea."])
    other = Api(api_key_create(tenant_name="acme", name="other agent").raw_key, django_capture_on_commit_callbacks)
    assert other.get(f"jobs/{job['job_id']}").status_code == 404
    assert api.get(f"jobs/{job['job_id']}").status_code == 200
    assert reviewer.get(f"jobs/{job['job_id']}").status_code == 200
    assert ConversationJob.objects.get().api_key_id == ApiKey.objects.get(name="").id


def test_history_shows_operators_by_an_opaque_id(api, operator, settings):
    memory = api.remember("alice", "Alice likes tea.")
    client = Client()
    client.force_login(operator("rita", "reviewers"))
    client.post(reverse("admin:memories_memoryitem_changelist"),
                {"action": "archive_selected", "_selected_action": [memory["id"]]})
    actors = [row["actor"] for row in api.get(f"memories/{memory['id']}/history").json()["results"]]
    assert len(actors) == 2 and "rita" not in str(actors)
    assert actors[-1] == public_actor("rita", settings.SECRET_KEY) and len(actors[-1]) == len("operator:") + 12


# --------------------------------------------------------------------------- keys


def test_keys_are_listed_rotated_and_revoked_by_id(api, key_a):
    out = StringIO()
    call_command("api_keys", "create", "acme", "--role", "reviewer", "--expires", "30d", stdout=out,
                 stderr=StringIO())
    raw = out.getvalue().strip()
    reviewer_key = ApiKey.objects.get(role="reviewer")
    assert reviewer_key.expires_at is not None
    out = StringIO()
    call_command("api_keys", "list", "--tenant", "acme", stdout=out, stderr=StringIO())
    assert str(reviewer_key.id) in out.getvalue() and "reviewer" in out.getvalue()
    out = StringIO()
    call_command("api_keys", "rotate", str(reviewer_key.id), stdout=out, stderr=StringIO())
    new_raw = out.getvalue().strip()
    client = Client()
    assert client.get("/api/v1/review", HTTP_AUTHORIZATION=f"Bearer {raw}").status_code == 401
    assert client.get("/api/v1/review", HTTP_AUTHORIZATION=f"Bearer {new_raw}").status_code == 200
    call_command("api_keys", "revoke", str(key_a.api_key.id), stdout=StringIO())
    assert api.get("memories").status_code == 401


# --------------------------------------------------------------------------- admin scoping


def test_staff_without_a_scope_see_nothing(api, operator):
    api.remember("alice", "Alice likes tea.")
    client = Client()
    client.force_login(operator("nobody", "auditors", scope=None))
    page = client.get(reverse("admin:memories_memoryitem_changelist")).content.decode()
    assert "Alice likes tea" not in page
    assert "0 memory items" in page or "0 memories" in page or "Alice" not in page


def test_a_tenant_with_operators_cannot_be_deleted(tenant_a, operator):
    operator("tina", "reviewers", tenant=tenant_a)
    with pytest.raises(ProtectedError):
        Tenant.objects.filter(id=tenant_a.id).delete()
    assert OperatorProfile.objects.get(user__username="tina").tenant_id == tenant_a.id


def test_only_unscoped_superusers_manage_accounts(tenant_a, operator):
    scoped_root = Client()
    scoped_root.force_login(operator("troot", tenant=tenant_a, superuser=True))
    assert scoped_root.get(reverse("admin:auth_user_changelist")).status_code == 403
    assert scoped_root.post(reverse("admin:auth_user_add"), {"username": "mallory", "password1": "x9!kLmq2#zz",
                                                             "password2": "x9!kLmq2#zz"}).status_code == 403
    assert scoped_root.get(reverse("admin:memories_operatorprofile_changelist")).status_code == 403
    root = Client()
    root.force_login(operator("root", superuser=True))
    assert root.get(reverse("admin:auth_user_changelist")).status_code == 200
    assert root.get(reverse("admin:memories_tenant_changelist")).status_code == 200


def test_keys_are_made_in_the_admin_and_shown_once(tenant_a, operator):
    root = Client()
    root.force_login(operator("root", superuser=True))
    response = root.post(reverse("admin:memories_apikey_add"),
                         {"tenant": tenant_a.id, "name": "ci", "role": "agent", "expires_at_0": "",
                          "expires_at_1": ""}, follow=True)
    page = response.content.decode()
    key = ApiKey.objects.get(name="ci")
    assert "mk_" in page and key.key_hash not in page
    assert root.get(reverse("admin:memories_apikey_changelist")).status_code == 200
    root.post(reverse("admin:memories_apikey_changelist"), {"action": "revoke_keys",
                                                            "_selected_action": [key.id]})
    assert ApiKey.objects.get(name="ci").revoked_at is not None
    assert not User.objects.filter(username="mallory").exists()
