"""Tenant isolation, generated over every API route and every admin list:
tenant B (and an operator scoped to B) tries to list, read, search, count,
update, delete, export, review and reflect tenant A's data. A leak is any
response that contains A's secret marker, or any change to A's rows."""

import uuid

import pytest
from django.contrib import admin
from django.test import Client
from django.urls import get_resolver, reverse

from memories.models import Candidate, ConversationJob, MemoryHistory, MemoryItem, Person
from reflection.models import ReflectionCycle
from tests.conftest import converse
from tests.figures import record
from traits import services

SECRET = "SECRET-A-7f3c"


@pytest.fixture
def tenant_a_data(api, tenant_a):
    memory = api.remember("alice", f"Alice's {SECRET} bank PIN hint is the cat.", tags=["private"], group_id="family")
    second = api.remember("alice", f"Alice's {SECRET} second secret.")
    job = converse(api, [f"I think I might take up pottery at the {SECRET} studio."])  # hedged: a candidate
    converse(api, [f"I love {SECRET} jazz.", f"I prefer {SECRET} jazz clubs."])
    converse(api, [f"My sister Zelda works at {SECRET} Labs."])  # a person and an edge that names the secret
    trait = services.trait_create(tenant=tenant_a, user_id="alice", text=f"Likes {SECRET} jazz",
                                  subtype="preference", actor="t", stage="established", confidence=0.8)
    cycle = ReflectionCycle.objects.create(tenant=tenant_a, user_id="alice", trigger="requested",
                                           status="completed", error=f"{SECRET} error")
    return {"memory": memory["id"], "second": second["id"], "job": job["job_id"],
            "candidate": str(Candidate.objects.get().id), "trait": str(trait.pk), "user": "alice", "tag": "private",
            "cycle": cycle.id, "group": "family",
            "person": str(Person.objects.get(tenant=tenant_a, name="Zelda").id)}


def attacks(ids: dict) -> list[tuple[str, str, dict | None, str]]:
    """(method, path, body, route it covers) for everything tenant B might try."""
    random_id = str(uuid.uuid4())
    out = [("get", "memories", None, "memories"), ("get", f"memories?user_id={ids['user']}", None, "memories"),
           ("get", f"memories?tag={ids['tag']}", None, "memories"),
           ("get", f"memories?status=active&user_id={ids['user']}", None, "memories"),
           # B may write under the same user_id in its own tenant; that must not reveal or touch A's copy.
           ("post", "memories", {"user_id": ids["user"], "text": "Alice's bank PIN hint is the cat."}, "memories"),
           ("post", "memories/batch", {"memories": [{"user_id": ids["user"], "text": "probe"}]}, "memories/batch")]
    for memory_id in (ids["memory"], random_id):
        out += [("get", f"memories/{memory_id}", None, "memories/<uuid:memory_id>"),
                ("patch", f"memories/{memory_id}", {"importance": 0.01}, "memories/<uuid:memory_id>"),
                ("patch", f"memories/{memory_id}", {"text": "overwritten"}, "memories/<uuid:memory_id>"),
                ("delete", f"memories/{memory_id}", None, "memories/<uuid:memory_id>"),
                ("get", f"memories/{memory_id}/history", None, "memories/<uuid:memory_id>/history")]
    for mode in ("semantic", "keyword", "hybrid"):
        out.append(("post", "memories/search", {"user_id": ids["user"], "query": f"{SECRET} bank PIN", "mode": mode},
                    "memories/search"))
        out.append(("post", "memories/search", {"group_id": ids["group"], "query": f"{SECRET} bank PIN", "mode": mode},
                    "memories/search"))
    out += [("post", "context", {"user_id": ids["user"], "query": f"{SECRET} jazz"}, "context"),
            ("post", "context", {"group_id": ids["group"], "query": f"{SECRET} bank"}, "context"),
            ("get", f"memories?group_id={ids['group']}", None, "memories"),
            ("post", "memories/merge", {"ids": [ids["memory"], ids["second"]]}, "memories/merge"),
            ("post", "memories/merge", {"ids": [ids["memory"], random_id], "text": "x"}, "memories/merge"),
            ("get", f"reflection-cycles/{ids['cycle']}", None, "reflection-cycles/<int:cycle_id>"),
            ("get", f"jobs/{ids['job']}", None, "jobs/<uuid:job_id>"),
            ("post", f"jobs/{ids['job']}/retry", None, "jobs/<uuid:job_id>/retry"),
            ("get", "review", None, "review"),
            ("post", f"review/{ids['candidate']}/approve", {}, "review/<uuid:candidate_id>/approve"),
            ("post", f"review/{ids['candidate']}/reject", {}, "review/<uuid:candidate_id>/reject"),
            ("get", f"users/{ids['user']}/traits?stage=dissolved", None, "users/<str:user_id>/traits"),
            ("get", f"traits/{ids['trait']}", None, "traits/<uuid:trait_id>"),
            ("post", f"users/{ids['user']}/reflect", {}, "users/<str:user_id>/reflect"),
            ("post", "sessions/s1/end", {"user_id": ids["user"]}, "sessions/<str:session_id>/end"),
            ("post", "conversations", {"user_id": ids["user"], "session_id": "s",
                                       "messages": [{"role": "user", "content": "I like probes."}]}, "conversations"),
            ("delete", f"users/{ids['user']}/memories", None, "users/<str:user_id>/memories"),
            ("get", "health", None, "health"),
            ("get", f"users/{ids['user']}/people", None, "users/<str:user_id>/people"),
            ("get", f"users/{ids['user']}/sessions", None, "users/<str:user_id>/sessions"),
            ("get", f"users/{ids['user']}/sessions/s1/turns", None,
             "users/<str:user_id>/sessions/<str:session_id>/turns")]
    for person_id in (ids["person"], random_id):
        out.append(("get", f"users/{ids['user']}/people/{person_id}", None,
                    "users/<str:user_id>/people/<uuid:person_id>"))
    return out


def snapshot_a(tenant):
    return (sorted(MemoryItem.objects.filter(tenant=tenant).values_list("id", "text", "status", "version",
                                                                         "importance")),
            sorted(Candidate.objects.filter(tenant=tenant).values_list("id", "status")),
            ConversationJob.objects.filter(tenant=tenant).count(),
            MemoryHistory.objects.filter(tenant=tenant).count())


def test_tenant_b_cannot_reach_tenant_a_through_any_endpoint(api_b, tenant_a, tenant_a_data):
    before = snapshot_a(tenant_a)
    tried, leaks, covered = 0, [], set()
    for method, path, body, route in attacks(tenant_a_data):
        response = getattr(api_b, method)(path, body) if body is not None or method in ("post", "patch") \
            else getattr(api_b, method)(path)
        tried += 1
        covered.add(route)
        if SECRET in response.content.decode() or response.status_code >= 500:
            leaks.append(f"{method.upper()} {path} -> {response.status_code}")
    assert snapshot_a(tenant_a) == before, "tenant B changed tenant A's data"
    api_routes = {str(p.pattern) for p in _included("api/v1/")}
    assert api_routes <= covered, f"routes without an isolation attack: {api_routes - covered}"
    record("isolation: API endpoints covered", len(api_routes))
    record("isolation: API requests tried by tenant B", tried)
    record("isolation: API leaks found", len(leaks))
    assert leaks == []


def _included(prefix: str):
    return next(p for p in get_resolver().url_patterns if hasattr(p, "url_patterns") and str(p.pattern) == prefix
                ).url_patterns


def mem0_attacks(ids: dict) -> list[tuple[str, str, dict | None, str]]:
    """The same, through the Mem0-compatible routes (memories/api/mem0.py)."""
    user, random_id = ids["user"], str(uuid.uuid4())
    out = [("get", "/v1/ping/", None, "v1/ping/"),
           ("post", "/v3/memories/", {"filters": {"user_id": user}}, "v3/memories/"),
           ("post", "/v3/memories/search/", {"query": f"{SECRET} bank PIN", "filters": {"user_id": user}},
            "v3/memories/search/"),
           ("post", "/v3/memories/add/", {"messages": [{"role": "user", "content": "probe"}], "user_id": user,
                                          "infer": False}, "v3/memories/add/"),
           ("get", "/v1/entities/", None, "v1/entities/"),
           ("put", "/v1/batch/", {"memories": [{"memory_id": ids["memory"], "text": "overwritten"}]}, "v1/batch/"),
           ("delete", "/v1/batch/", {"memories": [{"memory_id": ids["memory"]}]}, "v1/batch/"),
           ("delete", f"/v1/memories/?user_id={user}", None, "v1/memories/"),
           ("delete", f"/v2/entities/user/{user}/", None, "v2/entities/<str:entity_type>/<str:name>/"),
           ("delete", f"/v1/entities/user/{user}/", None, "v1/entities/<str:entity_type>/<str:name>/"),
           ("get", f"/v2/entities/user/{user}/profile/", None, "v2/entities/user/<str:name>/profile/"),
           ("post", "/v1/exports/", {"filters": {"user_id": user}}, "v1/exports/"),
           ("post", "/v1/exports/get/", {"filters": {"user_id": user}}, "v1/exports/get/"),
           ("post", "/v1/summary/", {"filters": {"user_id": user}}, "v1/summary/"),
           ("post", "/v1/feedback/", {"memory_id": ids["memory"]}, "v1/feedback/"),
           ("get", "/v2/profiles/settings/", None, "^v2/profiles/"),
           ("get", "/api/v1/webhooks/projects/p/", None, "^api/v1/webhooks/"),
           ("get", "/api/v1/orgs/organizations/o/projects/p/", None, "^api/v1/orgs/"),
           ("get", "/v9/anything/", None, "^v[0-9]+/")]
    for memory_id in (ids["memory"], random_id):
        out += [("get", f"/v1/memories/{memory_id}/", None, "v1/memories/<str:memory_id>/"),
                ("put", f"/v1/memories/{memory_id}/", {"text": "overwritten"}, "v1/memories/<str:memory_id>/"),
                ("delete", f"/v1/memories/{memory_id}/", None, "v1/memories/<str:memory_id>/"),
                ("get", f"/v1/memories/{memory_id}/history/", None, "v1/memories/<str:memory_id>/history/")]
    return out


def test_tenant_b_cannot_reach_tenant_a_through_the_mem0_routes(api_b, tenant_a, tenant_a_data):
    from rest_framework.test import APIClient

    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {api_b.raw_key}")
    before = snapshot_a(tenant_a)
    leaks, covered = [], set()
    for method, path, body, route in mem0_attacks(tenant_a_data):
        response = getattr(client, method)(path, body, format="json")
        covered.add(route)
        if SECRET in response.content.decode() or (response.status_code >= 500 and response.status_code != 501):
            leaks.append(f"{method.upper()} {path} -> {response.status_code}")
    assert snapshot_a(tenant_a) == before, "tenant B changed tenant A's data"
    routes = {str(p.pattern) for p in _included("")}
    assert routes <= covered, f"routes without an isolation attack: {routes - covered}"
    assert leaks == []


def test_an_operator_of_b_sees_nothing_of_a_in_any_admin_list(tenant_a, tenant_b, tenant_a_data, operator):
    client = Client()
    client.force_login(operator("bea", "auditors", tenant=tenant_b))
    tried, leaks = 0, []
    for model in admin.site._registry:
        opts = model._meta
        if opts.app_label not in ("memories", "traits", "reflection"):
            continue
        url = reverse(f"admin:{opts.app_label}_{opts.model_name}_changelist")
        for query in ("", "?q=bank+PIN", "?q=alice", "?q=jazz"):  # the search box echoes q: never the marker
            response = client.get(url + query)
            tried += 1
            if response.status_code == 200 and SECRET in response.content.decode():
                leaks.append(url + query)
    for name, object_id in (("memories_memoryitem", tenant_a_data["memory"]), ("traits_trait", tenant_a_data["trait"]),
                            ("memories_candidate", tenant_a_data["candidate"])):
        response = client.get(reverse(f"admin:{name}_change", args=[object_id]), follow=True)
        tried += 1
        if SECRET in response.content.decode():
            leaks.append(name)
    record("isolation: admin pages tried by a tenant-B operator", tried)
    record("isolation: admin leaks found", len(leaks))
    assert leaks == []
