import pytest


def test_list_filters_by_user_type_tag_status_and_time(api):
    api.remember("alice", "A profile fact.", memory_type="profile", tags=["x"])
    api.remember("alice", "An episode.", memory_type="episodic")
    gone = api.remember("alice", "Archived one.")
    api.delete(f"memories/{gone['id']}")
    api.remember("bob", "Bob's fact.")

    def texts(**params):
        return sorted(m["text"] for m in api.get("memories", params).json()["results"])

    assert texts(user_id="alice") == ["A profile fact.", "An episode."]  # current memories unless asked
    assert texts(user_id="alice", include="all") == ["A profile fact.", "An episode.", "Archived one."]
    assert texts(user_id="alice", include="data,all") == ["A profile fact.", "An episode.", "Archived one."]
    assert texts(user_id="alice", memory_type="episodic") == ["An episode."]
    assert texts(tag="x") == ["A profile fact."]
    assert texts(status="archived") == ["Archived one."]
    changed = api.patch(f"memories/{api.remember('cai', 'Cai likes tea.')['id']}", {"text": "Cai likes coffee."})
    assert changed.status_code == 200
    assert texts(user_id="cai") == ["Cai likes coffee."]
    assert texts(user_id="cai", current="false") == ["Cai likes tea."]  # the superseded version
    assert texts(created_after="2000-01-01T00:00:00Z", user_id="bob") == ["Bob's fact."]
    assert texts(created_before="2000-01-01T00:00:00Z") == []


def test_list_is_paginated_with_a_cursor(api):
    api.post("memories/batch", {"memories": [{"user_id": "alice", "text": f"note {i}"} for i in range(7)]})
    first = api.get("memories", {"page_size": 5}).json()
    assert len(first["results"]) == 5 and first["next"]
    second = api.client.get(first["next"]).json()
    assert len(second["results"]) == 2
    ids = {m["id"] for m in first["results"]} | {m["id"] for m in second["results"]}
    assert len(ids) == 7


def test_health_tells_the_public_only_its_status(anonymous, db):
    response = anonymous.get("/api/v1/health")
    assert response.status_code == 200 and set(response.json()) == {"status"}
    bad_key = anonymous.get("/api/v1/health", HTTP_AUTHORIZATION="Bearer mk_wrong")
    assert bad_key.status_code == 200 and set(bad_key.json()) == {"status"}


def test_health_reports_each_part_to_a_key(api):
    response = api.get("health")
    assert response.status_code == 200
    body = response.json()
    assert body["status"] in ("ok", "degraded")
    checks = body["checks"]
    assert checks["database"]["ok"] and checks["vector_extension"]["ok"]
    assert checks["embedder"]["model"] == "hash-384"
    assert checks["broker"]["mode"] == "eager"


def test_health_says_when_redis_is_down(api, settings):
    settings.REDIS_URL = "redis://127.0.0.1:1/0"
    body = api.get("health").json()
    assert body["status"] == "degraded" and body["checks"]["working_memory"]["ok"] is False
    assert "127.0.0.1" not in str(body) and "ConnectionError" in body["checks"]["working_memory"]["error"]


def test_the_openapi_schema_and_docs_are_served(anonymous, db):
    schema = anonymous.get("/api/v1/schema/", HTTP_ACCEPT="application/json")
    assert schema.status_code == 200
    paths = schema.json()["paths"]
    for path in ("/api/v1/memories", "/api/v1/memories/batch", "/api/v1/memories/search",
                 "/api/v1/memories/{memory_id}", "/api/v1/memories/{memory_id}/history",
                 "/api/v1/users/{user_id}/memories", "/api/v1/health"):
        assert path in paths
    docs = anonymous.get("/api/v1/docs/")
    assert docs.status_code == 200 and b"swagger" in docs.content.lower()
    assert b"cdn" not in docs.content.lower()


@pytest.mark.parametrize("path, method, has_body, expected", [
    ("/api/v1/health", "GET", False, ["503"]),
    ("/api/v1/memories", "GET", False, ["400", "401", "403", "429", "503"]),
    ("/api/v1/memories", "POST", True, ["400", "401", "403", "413", "429", "503"]),
    ("/api/v1/memories/{memory_id}", "PATCH", True, ["400", "401", "403", "404", "409", "413", "429", "503"]),
    ("/api/v1/memories/merge", "POST", True, ["400", "401", "403", "409", "413", "429", "503"]),
    ("/api/v1/jobs/{job_id}", "GET", False, ["400", "401", "403", "404", "429", "503"]),
])
def test_error_answers_by_operation(path, method, has_body, expected):
    from memories.api.schema import error_answers

    assert error_answers(path=path, method=method, has_body=has_body) == expected


def test_every_operation_has_a_summary_and_its_error_answers(anonymous, db):
    schema = anonymous.get("/api/v1/schema/", HTTP_ACCEPT="application/json").json()
    for path, operations in schema["paths"].items():
        for method, operation in operations.items():
            assert operation.get("summary"), (method, path)
            errors = {code for code in operation["responses"] if code.startswith(("4", "5"))}
            assert "503" in errors, (method, path)
            if path not in ("/api/v1/health",):
                assert {"400", "401", "429"} <= errors, (method, path, errors)
