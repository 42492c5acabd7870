"""Mem0's routes never widen scope: a parameter a route does not honour (app_id, a filter it cannot
apply, an unknown query parameter) is a 400 naming it, on every route, and nothing is read or erased;
Mem0's own client (mem0ai 2.2.1) keeps working unchanged. Malformed bodies are a 4xx, never a 5xx."""

from __future__ import annotations

import json
import os

os.environ.setdefault("MEM0_TELEMETRY", "False")

import httpx  # noqa: E402
import pytest  # noqa: E402
from mem0 import MemoryClient  # noqa: E402
from mem0.exceptions import MemoryError as Mem0Error  # noqa: E402

from memories.keys import api_key_create  # noqa: E402
from memories.models import MemoryItem  # noqa: E402
from tests.conftest import Api  # noqa: E402


@pytest.fixture
def mem0(key_a, django_capture_on_commit_callbacks) -> Api:
    return Api(key_a.raw_key, django_capture_on_commit_callbacks)


def _call(api: Api, method: str, path: str, body=None, **params):
    query = "&".join(f"{k}={v}" for k, v in params.items())
    url = f"{path}?{query}" if query else path
    with api._capture(execute=True):
        if body is None:
            return getattr(api.client, method)(url)
        return getattr(api.client, method)(url, json.dumps(body), content_type="application/json")


def _two_apps(mem0: Api) -> list[str]:
    ids = []
    for text in ("Ann keeps bees.", "Ann sails."):
        answer = _call(mem0, "post", "/v3/memories/add/", {"user_id": "ann", "infer": False,
                                                           "messages": [{"role": "user", "content": text}]})
        assert answer.status_code == 200, answer.content
        ids.append(answer.json()["results"][0]["id"])
    return ids


def test_delete_all_with_app_id_as_the_client_sends_it_erases_nothing(mem0):
    _two_apps(mem0)
    for params in ({"user_id": "ann", "app_id": "crm"}, {"user_id": "ann", "app_id": ""},
                   {"filters": json.dumps({"user_id": "ann", "app_id": "crm"})}):
        answer = _call(mem0, "delete", "/v1/memories/", **params)
        assert answer.status_code == 400 and any("app_id" in field for field in answer.json()), answer.content
    assert MemoryItem.objects.filter(user_id="ann").count() == 2


@pytest.mark.parametrize("params", [
    {"user_id": "ann", "agent_id": "*"}, {"user_id": "ann", "run_id": "*"}, {"user_id": "ann", "agent_id": " * "},
    {"filters": json.dumps({"user_id": "ann", "agent_id": "*"})},
    {"filters": json.dumps({"user_id": "ann", "agent_id": None})},
    {"filters": json.dumps({"AND": [{"user_id": "ann"}, {"agent_id": "*"}]})},
    {"filters": str({"user_id": "ann", "agent_id": None})},  # the Python literal httpx makes of a dict
    {"filters": json.dumps({"user_id": "*"})}, {"user_id": "*"}])
def test_a_wildcard_never_widens_a_deletion(mem0, params):
    """Issue 55: `agent_id: "*"` on delete_all erased the whole user, memories without an agent
    included. In a deletion a wildcard (or an explicit null) is a 400 naming the key; nothing is erased."""
    _two_apps(mem0)
    answer = _call(mem0, "delete", "/v1/memories/", **params)
    assert answer.status_code == 400, answer.content
    assert {"agent_id", "run_id", "user_id"} & set(answer.json()), answer.content
    assert MemoryItem.objects.filter(user_id="ann", status="active").count() == 2


@pytest.mark.parametrize(("filters", "problem"), [
    ("[" * 1300, "nested deeper"), ("[[[" * 400 + "]]]" * 400, "nested deeper"),
    ("{\"user_id\": " * 70 + "1" + "}" * 70, "nested deeper"), ("(" * 900, "nested deeper"),
    ("[" * 40, "a JSON object"), ("{'user_id': 'ann', 'x': {" + "1, " * 10 + "}}", ""), ("\\" * 30, "a JSON object")])
def test_deep_or_broken_filters_on_delete_all_are_a_400_before_parsing(mem0, filters, problem):
    """Issue 55: `DELETE /v1/memories/?filters=[[[…` 1,300 deep was a 500 (RecursionError in json)."""
    _two_apps(mem0)
    answer = _call(mem0, "delete", "/v1/memories/", filters=filters)
    assert answer.status_code == 400 and problem in str(answer.json().get("filters", answer.json())), answer.content
    assert MemoryItem.objects.filter(user_id="ann", status="active").count() == 2


def test_a_wildcard_still_means_any_in_a_read(mem0):
    _two_apps(mem0)
    answer = _call(mem0, "post", "/v3/memories/", {"filters": {"user_id": "ann", "agent_id": "*"}})
    assert answer.status_code == 200 and len(answer.json()["results"]) == 2, answer.content


@pytest.mark.parametrize(("path", "body"), [
    ("/v3/memories/", {"filters": {"user_id": "ann"}, "app_id": "crm"}),
    ("/v3/memories/", {"user_id": "ann", "app_id": "crm"}),
    ("/v3/memories/search/", {"query": "bees", "filters": {"user_id": "ann"}, "app_id": "crm"}),
    ("/v3/memories/search/", {"query": "bees", "user_id": "ann", "app_id": "crm"}),
    ("/v3/memories/add/", {"user_id": "ann", "app_id": "crm", "messages": "I like tea.", "infer": False}),
])
def test_get_all_search_and_add_refuse_a_top_level_app_id(mem0, path, body):
    _two_apps(mem0)
    answer = _call(mem0, "post", path, body)
    assert answer.status_code == 400 and "app_id" in answer.json(), answer.content
    assert MemoryItem.objects.filter(user_id="ann").count() == 2


@pytest.mark.parametrize(("path", "body", "field"), [
    ("/v3/memories/", {"filters": {"user_id": "ann"}, "categories": ["work"]}, "categories"),
    ("/v3/memories/", {"filters": {"user_id": "ann"}, "start_date": "2024-01-01"}, "start_date"),
    ("/v3/memories/", {"filters": {"user_id": "ann"}, "metadata": {"a": 1}}, "metadata"),
    ("/v3/memories/search/", {"query": "q", "filters": {"user_id": "ann"}, "metadata": {"a": 1}}, "metadata"),
    ("/v3/memories/search/", {"query": "q", "filters": {"user_id": "ann"}, "colour": "red"}, "colour"),
    ("/v3/memories/search/", {"query": "q", "filters": {"user_id": "ann"}, "output_format": "v2"}, "output_format"),
    ("/v3/memories/add/", {"user_id": "ann", "messages": "hi", "colour": "red"}, "colour"),
])
def test_a_body_parameter_a_route_does_not_honour_is_a_400_naming_it(mem0, path, body, field):
    answer = _call(mem0, "post", path, body)
    assert answer.status_code == 400 and field in answer.json(), answer.content


@pytest.mark.parametrize(("method", "path", "params"), [
    ("post", "/v3/memories/add/", {"user_id": "ann"}),
    ("post", "/v3/memories/", {"user_id": "ann"}),
    ("post", "/v3/memories/search/", {"app_id": "crm"}),
    ("get", "/v1/memories/{id}/", {"app_id": "crm"}),
    ("put", "/v1/memories/{id}/", {"org_id": "o"}),
    ("delete", "/v1/memories/{id}/", {"user_id": "bob"}),
    ("get", "/v1/memories/{id}/history/", {"app_id": "crm"}),
    ("delete", "/v1/memories/", {"user_id": "ann", "colour": "red"}),
    ("put", "/v1/batch/", {"user_id": "ann"}),
    ("delete", "/v1/batch/", {"user_id": "ann"}),
    ("get", "/v1/entities/", {"type": "agent"}),
    ("delete", "/v2/entities/user/ann/", {"app_id": "crm"}),
    ("get", "/v1/ping/", {"org_id": "o"}),
])
def test_an_unknown_query_parameter_is_a_400_naming_it_on_every_route(mem0, method, path, params):
    ids = _two_apps(mem0)
    body = {"memories": [{"memory_id": ids[0], "text": "Ann keeps wasps."}]} if "batch" in path else (
        {"text": "Ann keeps wasps."} if method == "put" else ({"query": "bees", "filters": {"user_id": "ann"},
                                                               "messages": "I like tea."} if method == "post"
                                                              else None))
    answer = _call(mem0, method, path.format(id=ids[0]), body, **params)
    assert answer.status_code == 400, answer.content
    (name,) = params if len(params) == 1 else [k for k in params if k != "user_id"]
    assert f"query.{name}" in answer.json(), answer.content
    assert MemoryItem.objects.filter(user_id="ann", status="active", expired_at__isnull=True).count() == 2
    assert set(MemoryItem.objects.filter(user_id="ann").values_list("text", flat=True)) == {"Ann keeps bees.",
                                                                                            "Ann sails."}


def test_entities_pages_are_checked_not_ignored(mem0):
    _two_apps(mem0)
    assert _call(mem0, "get", "/v1/entities/", page=1, page_size=10).status_code == 200
    answer = _call(mem0, "get", "/v1/entities/", page=2)
    assert answer.status_code == 400 and "query.page" in answer.json()


FUZZ_BODIES = [None, [], "x", 5, {"filters": None}, {"filters": "user_id=ann"}, {"filters": {"user_id": 5}},
               {"filters": {"user_id": ["ann"]}}, {"filters": {"AND": [{"user_id": "ann"}, "x"]}},
               {"filters": {"user_id": "ann", "created_at": {"gte": "yesterday"}}},
               {"filters": {"user_id": "ann"}, "page": "two"}, {"filters": {"user_id": "ann"}, "page": -1},
               {"filters": {"user_id": "ann"}, "top_k": "ten"}, {"filters": {"user_id": "ann"}, "threshold": "x"},
               {"filters": {"user_id": "ann"}, "query": 5}, {"filters": {"user_id": "ann"}, "query": ""},
               {"memories": None}, {"memories": [{"memory_id": 5}]}, {"memories": [{"memory_id": "x", "text": 5}]},
               {"text": None}, {"text": 5}, {"metadata": "x"}, {"expiration_date": "soon"}, {"timestamp": "x"},
               {"messages": [{"role": "user"}], "user_id": "ann"}, {"messages": [], "user_id": "ann"},
               {"user_id": "ann\x00", "messages": "hi"}, {"user_id": "a" * 10_000, "messages": "hi"}]


@pytest.mark.parametrize("body", FUZZ_BODIES)
@pytest.mark.parametrize(("method", "path"), [
    ("post", "/v3/memories/add/"), ("post", "/v3/memories/"), ("post", "/v3/memories/search/"),
    ("put", "/v1/memories/{id}/"), ("put", "/v1/batch/"), ("delete", "/v1/batch/")])
def test_malformed_mem0_bodies_are_a_4xx_never_a_5xx(mem0, method, path, body):
    memory = MemoryItem.objects.first()
    target = str(memory.id) if memory else "00000000-0000-0000-0000-000000000000"
    with mem0._capture(execute=True):
        answer = getattr(mem0.client, method)(path.format(id=target), json.dumps(body),
                                              content_type="application/json")
    assert 400 <= answer.status_code < 500, (answer.status_code, answer.content)


def test_the_mem0_client_is_unchanged_and_its_app_id_is_refused(live_server, transactional_db):
    raw = api_key_create(tenant_name="acme", can_erase=True).raw_key
    client = MemoryClient(api_key=raw, host=live_server.url)
    client.add("Ann keeps bees.", user_id="ann", infer=False)
    client.add("Ann sails.", user_id="ann", agent_id="coach", infer=False)
    assert client.get_all(filters={"user_id": "ann"}, page=1, page_size=10)["count"] == 2
    assert client.search("bees", filters={"user_id": "ann"}, top_k=5)["results"]
    with pytest.raises(Mem0Error):
        client.delete_all(user_id="ann", app_id="crm")
    with pytest.raises(Mem0Error):
        client.get_all(filters={"user_id": "ann", "app_id": "crm"})
    assert MemoryItem.objects.filter(user_id="ann").count() == 2
    client.delete_all(user_id="ann", agent_id="coach")
    assert list(MemoryItem.objects.filter(user_id="ann").values_list("text", flat=True)) == ["Ann keeps bees."]
    answer = httpx.delete(f"{live_server.url}/v1/memories/", params={"user_id": "ann", "app_id": "crm"},
                          headers={"Authorization": f"Token {raw}"})
    assert answer.status_code == 400 and "app_id" in answer.json()


@pytest.mark.parametrize(("method", "path"), [("delete", "/v1/memories/"), ("delete", "/v1/memories/{id}/"),
                                              ("get", "/v1/memories/{id}/"), ("delete", "/v2/entities/user/ann/")])
def test_a_scope_sent_in_a_body_the_route_does_not_read_is_a_400(mem0, method, path):
    ids = _two_apps(mem0)
    with mem0._capture(execute=True):
        url = path.format(id=ids[0]) + ("?user_id=ann" if path == "/v1/memories/" else "")
        answer = mem0.client.generic(method.upper(), url, json.dumps({"user_id": "ann", "app_id": "crm"}),
                                     content_type="application/json")
    assert answer.status_code == 400 and "body" in answer.json(), answer.content
    assert MemoryItem.objects.filter(user_id="ann", status="active").count() == 2


from hypothesis import HealthCheck, given  # noqa: E402
from hypothesis import settings as hypothesis_settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

KEYS = ["user_id", "agent_id", "run_id", "app_id", "messages", "role", "content", "metadata", "infer", "filters",
        "AND", "OR", "created_at", "gte", "query", "top_k", "threshold", "page", "page_size", "memories",
        "memory_id", "text", "expiration_date", "timestamp", "include_episodes", "output_format", "name"]
SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-2**70, 2**70), st.floats(allow_nan=False),
                    st.text(max_size=30), st.sampled_from(["ann", "user", "*", "", "2024-01-01", "\x00", "v1.1"]))
JSON = st.recursive(SCALARS, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(st.sampled_from(KEYS) | st.text(max_size=8), inner, max_size=5)),
    max_leaves=20)
NEAR_VALID = st.fixed_dictionaries(
    {"user_id": st.just("ann"), "messages": st.lists(st.dictionaries(
        st.sampled_from(["role", "content", "name", "created_at"]),
        SCALARS | st.sampled_from(["user", "assistant", "system", "I like tea."])), max_size=3)},
    optional={"infer": st.booleans(), "metadata": JSON, "filters": JSON, "query": SCALARS, "top_k": SCALARS,
              "text": SCALARS, "expiration_date": SCALARS, "timestamp": SCALARS,
              "memories": st.lists(st.fixed_dictionaries({"memory_id": st.text(max_size=36)},
                                                         optional={"text": SCALARS, "metadata": JSON}))})
BODIES = st.dictionaries(st.sampled_from(KEYS), JSON, max_size=6) | JSON | NEAR_VALID


@hypothesis_settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(body=BODIES, route=st.sampled_from([("post", "/v3/memories/add/"), ("post", "/v3/memories/"),
                                          ("post", "/v3/memories/search/"), ("put", "/v1/memories/{id}/"),
                                          ("put", "/v1/batch/"), ("delete", "/v1/batch/")]))
def test_fuzzed_mem0_bodies_never_answer_5xx(mem0, body, route):
    method, path = route
    memory = MemoryItem.objects.first()
    target = str(memory.id) if memory else "00000000-0000-0000-0000-000000000000"
    with mem0._capture(execute=True):
        answer = mem0.client.generic(method.upper(), path.format(id=target), json.dumps(body),
                                     content_type="application/json")
    assert answer.status_code < 500, (method, path, body, answer.status_code, answer.content[:300])
