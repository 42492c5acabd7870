from datetime import timedelta

import pytest
from django.utils import timezone

from memories.search import SearchPlan, SearchQuery, memory_search, tuning


def _texts(results):
    return [r["memory"]["text"] for r in results]


@pytest.fixture
def alice_memories(api):
    api.remember("alice", "Alice is allergic to peanuts.", memory_type="profile", tags=["health"], importance=0.9)
    api.remember("alice", "Alice went hiking in the Alps last summer.", memory_type="episodic", tags=["travel"],
                 valid_at="2024-07-10T00:00:00Z")
    api.remember("alice", "Alice prefers short, direct answers.", memory_type="fact", tags=["style"])
    api.remember("alice", "我喜欢在北京吃烤鸭", memory_type="fact", tags=["food"])
    api.remember("alice", "我在上海的一家银行工作", memory_type="profile", tags=["work"])
    api.remember("bob", "Bob is allergic to cats.")


def test_keyword_search_finds_english_words(api, alice_memories):
    results = api.search("alice", "peanuts allergy", mode="keyword")
    assert _texts(results)[0] == "Alice is allergic to peanuts."
    assert results[0]["scores"]["keyword"] > 0 and results[0]["scores"]["semantic"] is None


def test_keyword_search_segments_chinese(api, alice_memories):
    assert _texts(api.search("alice", "烤鸭", mode="keyword")) == ["我喜欢在北京吃烤鸭"]
    assert _texts(api.search("alice", "他在哪里工作？", mode="keyword")) == ["我在上海的一家银行工作"]
    assert _texts(api.search("alice", "北京", mode="keyword")) == ["我喜欢在北京吃烤鸭"]


def test_semantic_search_ranks_by_similarity(api, alice_memories):
    results = api.search("alice", "Alice hiking in the Alps", mode="semantic")
    by_similarity = sorted(results, key=lambda r: -r["scores"]["semantic"])
    assert by_similarity[0]["memory"]["text"] == "Alice went hiking in the Alps last summer."
    # The final score adds recency and importance: a fresh, important memory can
    # outrank a closer but old one (valid_at 2024) — the formula, not noise.
    assert results[0]["memory"]["text"] == "Alice is allergic to peanuts."


def test_hybrid_returns_score_parts(api, alice_memories):
    results = api.search("alice", "allergic to peanuts")
    top = results[0]
    assert top["memory"]["text"] == "Alice is allergic to peanuts."
    parts = top["scores"]
    assert set(parts) == {"semantic", "keyword", "relevance", "fusion", "recency", "importance", "stage"}
    assert 0 < parts["relevance"] <= 1
    expected = parts["fusion"] * (1 + parts["recency"] + parts["importance"] + parts["stage"])
    assert top["score"] == pytest.approx(expected)
    assert parts["importance"] == pytest.approx(0.15 * 0.9)
    assert all(r["memory"]["user_id"] == "alice" for r in results)


def test_filters_by_type_tag_and_time(api, alice_memories):
    assert {r["memory"]["memory_type"] for r in api.search("alice", "Alice", memory_types=["profile"])} == {"profile"}
    assert _texts(api.search("alice", "Alice", tags=["travel"])) == ["Alice went hiking in the Alps last summer."]
    window = api.search("alice", "Alice hiking", start_time="2024-07-01T00:00:00Z", end_time="2024-07-31T00:00:00Z")
    assert _texts(window) == ["Alice went hiking in the Alps last summer."]


def test_limit_and_min_score(api, alice_memories):
    assert len(api.search("alice", "Alice", limit=2)) == 2
    assert api.search("alice", "Alice", min_score=1.0) == [] or all(
        r["scores"]["relevance"] == 1.0 for r in api.search("alice", "Alice", min_score=1.0))


def test_as_of_returns_what_was_known_then(api, tenant_a):
    old = api.remember("alice", "Alice lives in Lisbon.", valid_at="2020-01-01T00:00:00Z")
    before_move = timezone.now()
    api.patch(f"memories/{old['id']}", {"text": "Alice lives in Porto."})
    assert _texts(api.search("alice", "where does Alice live", mode="keyword")) == ["Alice lives in Porto."]
    then = api.search("alice", "where does Alice live", mode="keyword", as_of=before_move.isoformat())
    assert _texts(then) == ["Alice lives in Lisbon."]
    assert api.search("alice", "Alice lives", as_of="2019-06-01T00:00:00Z") == []


def test_an_archived_memory_is_found_as_of_before_it_was_archived_only(api, tenant_a):
    memory = api.remember("alice", "Alice keeps bees on her roof.")
    while_active = timezone.now()
    response = api.delete(f"memories/{memory['id']}")
    assert response.status_code in (200, 204), response.content
    after_archive = timezone.now()
    record = api.get(f"memories/{memory['id']}").json()
    assert record["status"] == "archived" and record["archived_at"] is not None
    assert api.search("alice", "bees", mode="keyword") == []
    assert _texts(api.search("alice", "bees", mode="keyword", as_of=while_active.isoformat())) == [
        "Alice keeps bees on her roof."]
    assert api.search("alice", "bees", mode="keyword", as_of=after_archive.isoformat()) == []
    # Restored (admin action, same service): current again, the stamp cleared.
    from memories.writing import memory_set_status

    restored = memory_set_status(tenant=tenant_a, memory_id=memory["id"], status="active", actor="test").memory
    assert restored.archived_at is None
    assert _texts(api.search("alice", "bees", mode="keyword")) == ["Alice keeps bees on her roof."]


def test_an_invalidated_fact_is_not_returned_now_but_is_as_of_then(api, tenant_a):
    from memories.writing import memory_invalidate

    memory = api.remember("alice", "Alice works at Initech.", valid_at="2021-01-01T00:00:00Z")
    while_true = timezone.now()
    memory_invalidate(tenant=tenant_a, memory_id=memory["id"], invalid_at=timezone.now(), actor="test",
                      reason="changed jobs")
    assert api.search("alice", "Initech", mode="keyword") == []
    assert _texts(api.search("alice", "Initech", mode="keyword", as_of=while_true.isoformat())) == [
        "Alice works at Initech."
    ]
    # Valid in 2022 in the world, but the service did not know it yet then.
    assert api.search("alice", "Initech", mode="keyword", as_of="2022-06-01T00:00:00Z") == []
    # Recorded just now, so a moment before it was recorded sees nothing.
    before = (while_true - timedelta(minutes=5)).isoformat()
    assert api.search("alice", "Initech", mode="keyword", as_of=before) == []


def test_the_hnsw_plan_finds_what_the_exact_plan_finds(api, tenant_a, monkeypatch):
    for i in range(30):
        api.remember("alice", f"Alice note {i} about topic {i % 5}")
    exact = SearchPlan()
    query = SearchQuery(query="note about topic 3", user_id="alice", mode="semantic", limit=5)
    exact_ids = [r.memory.id for r in memory_search(tenant=tenant_a, query=query, plan=exact)]
    monkeypatch.setattr(tuning, "SEARCH_EXACT_MAX_ROWS", 10)
    hnsw = SearchPlan()
    hnsw_ids = [r.memory.id for r in memory_search(tenant=tenant_a, query=query, plan=hnsw)]
    assert (exact.vector_plan, hnsw.vector_plan) == ("exact", "hnsw")
    assert hnsw_ids == exact_ids


def test_a_user_larger_than_the_exact_plan_is_searched_by_hnsw_even_when_filters_match_little(
        api, tenant_a, monkeypatch):
    """The exact plan scans at most SEARCH_EXACT_MAX_ROWS vectors and reports how
    many it scanned; a larger user must not get a partial answer from it."""
    for i in range(30):
        api.remember("alice", f"Alice note {i} about topic {i % 5}")
    api.remember("alice", "Alice prefers window seats on trains.", memory_type="profile")
    monkeypatch.setattr(tuning, "SEARCH_EXACT_MAX_ROWS", 10)
    # The first hybrid search finds the user large; the last one starts from the cached HNSW plan.
    for mode in ("hybrid", "semantic", "hybrid"):
        plan = SearchPlan()
        query = SearchQuery(query="window seats", user_id="alice", mode=mode, memory_types=["profile"])
        results = memory_search(tenant=tenant_a, query=query, plan=plan)
        assert plan.vector_plan == "hnsw"
        assert [r.memory.text for r in results] == ["Alice prefers window seats on trains."]
        assert results[0].scores["semantic"] is not None
        if mode == "hybrid":  # the keyword side runs on the HNSW path too
            assert results[0].scores["keyword"] is not None and plan.candidates_keyword == 1


def test_tenant_wide_search_uses_hnsw_and_stays_in_the_tenant(api, api_b, tenant_a):
    api.remember("alice", "Alice collects stamps.")
    api.remember("carol", "Carol collects coins.")
    api_b.remember("dave", "Dave collects stamps too.")
    plan = SearchPlan()
    results = memory_search(tenant=tenant_a, query=SearchQuery(query="collects stamps", limit=10), plan=plan)
    assert plan.vector_plan == "hnsw"
    assert {r.memory.user_id for r in results} == {"alice", "carol"}
    assert plan.candidates_keyword == 2  # hybrid: both memories match "collects"


def test_a_memory_not_yet_embedded_is_found_by_keyword(api, tenant_a):
    from memories.models import MemoryItem, MemoryVector

    memory = api.remember("alice", "Alice's passport expires in March.")
    MemoryVector.objects.all().delete()
    MemoryItem.objects.update(embedding_state="pending")
    assert _texts(api.search("alice", "passport expires")) == ["Alice's passport expires in March."]
    assert memory


def test_each_model_gets_a_per_user_covering_index_unless_too_wide(api):
    from django.db import connection

    from memories.embedding import get_embedder
    from memories.vectors import ensure_user_vector_index, user_index_name

    api.remember("alice", "Alice collects stamps.")
    model = get_embedder().name
    with connection.cursor() as cursor:
        cursor.execute("SELECT indexdef FROM pg_indexes WHERE indexname = %s", [user_index_name(model)])
        (definition,) = cursor.fetchone()
    assert "INCLUDE (item_id, embedding)" in definition and f"'{model}'" in definition
    # A 1,536-d halfvec would not fit a b-tree entry: such models keep the plain index.
    assert ensure_user_vector_index("wide-model", 1536) is None
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_indexes WHERE indexname = %s", [user_index_name("wide-model")])
        assert cursor.fetchone()[0] == 0
