"""The search controls seeds 001 (§3.1, §5.2, §9) and 002 (§5.3, §5.7, §8.2) name, on the REST API: the
keyword list, the relative time range, the per-mode defaults; matched keywords, previews, original turns,
the total, the groups, and a failed vector side told apart from an empty answer. The pure rules are
table-tested here too; Mem0's, MCP's and the SDKs' sides are in their own test files."""

from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection

from memories.models import MemoryItem
from memories.search import SearchPlan, SearchQuery, search_defaults, search_query
from memories.search.answer import keyword_words, matched_keywords, preview, result_groups
from memories.search.defaults import MODE_DEFAULTS
from memories.search.query import ScoredMemory
from tests.conftest import converse

NOW = datetime(2026, 11, 28, 12, 0, tzinfo=UTC)


# -- the request: bad values are a 400 naming the field

@pytest.mark.parametrize(("fields", "named"), [
    ({"keywords": []}, "keywords"),
    ({"keywords": "MySQL"}, "keywords"),
    ({"keywords": [123]}, "keywords"),
    ({"keywords": ["the", "of"]}, "keywords"),  # stopwords only: nothing to look for
    ({"keywords": ["x" * 101]}, "keywords"),
    ({"keywords": [f"word{i}" for i in range(65)]}, "keywords"),  # more than SEARCH_MAX_QUERY_TERMS (64)
    ({"keywords": ["MySQL"], "mode": "semantic"}, "keywords"),
    ({"time_range_days": 0}, "time_range_days"),
    ({"time_range_days": -3}, "time_range_days"),
    ({"time_range_days": 36501}, "time_range_days"),
    ({"time_range_days": "30"}, "time_range_days"),
    ({"time_range_days": 1.5}, "time_range_days"),
    ({"time_range_days": True}, "time_range_days"),
    ({"time_range_days": 7, "start_time": "2026-01-01T00:00:00Z"}, "time_range_days"),
    ({"include_turns": "yes"}, "include_turns"),
    ({"include_turns": 1}, "include_turns"),
    ({"limit": 0}, "limit"),
    ({"min_score": 1.5}, "min_score"),
    ({"min_similarity": "high"}, "min_similarity"),
    ({"mode": "fuzzy"}, "mode"),
])
def test_a_bad_search_control_is_a_400_naming_it(api, fields, named):
    response = api.post("memories/search", {"user_id": "alice", "query": "database", **fields})
    assert response.status_code == 400, response.content
    assert named in response.json()


# -- the defaults, pure

@pytest.mark.parametrize("mode", ["hybrid", "semantic", "keyword"])
def test_each_mode_has_its_defaults(mode):
    assert search_defaults(mode) == MODE_DEFAULTS[mode]
    query = search_query(now=NOW, user_id="u", query="q", mode=mode)
    expected = MODE_DEFAULTS[mode]
    assert (query.limit, query.min_score, query.min_similarity) == (expected.limit, expected.min_score,
                                                                    expected.min_similarity)


def test_an_unknown_mode_has_no_defaults():
    with pytest.raises(ValueError):
        search_defaults("fuzzy")  # type: ignore[arg-type]


@pytest.mark.parametrize(("given", "expected"), [
    ({}, {"limit": 10, "min_score": None, "min_similarity": None, "mode": "hybrid", "start_time": None}),
    ({"limit": 3, "min_score": 0.4}, {"limit": 3, "min_score": 0.4}),
    ({"mode": "semantic", "min_similarity": 0.2}, {"mode": "semantic", "min_similarity": 0.2}),
    ({"time_range_days": 30}, {"start_time": NOW - timedelta(days=30)}),
    ({"time_range_days": 30, "start_time": NOW - timedelta(days=3)}, {"start_time": NOW - timedelta(days=3)}),
    ({"time_range_days": 3, "start_time": NOW - timedelta(days=30)}, {"start_time": NOW - timedelta(days=3)}),
    ({"keywords": ("MySQL",)}, {"keywords": ("MySQL",)}),
])
def test_what_a_caller_leaves_out_comes_from_the_defaults(given, expected):
    query = search_query(now=NOW, user_id="u", query="q", **given)
    assert {name: getattr(query, name) for name in expected} == expected


# -- the answer's parts, pure

@pytest.mark.parametrize(("query", "keywords", "text", "matched"), [
    ("Where does Alice go camping?", None, "Alice camped by the lake.", ["Alice", "camping"]),
    ("What database?", None, "Alice's DATABASE is MySQL.", ["database"]),
    ("what database?", ("MySQL", "Postgres"), "Alice's database is MySQL.", ["MySQL"]),
    ("x", ("New York",), "She moved to New York.", ["New York"]),
    ("x", ("New York",), "She moved to York.", []),  # every word of a keyword
    ("在北京吃什么烤鸭", None, "我喜欢在北京吃烤鸭", ["北京", "吃", "烤鸭"]),
    ("北京烤鸭", None, "我喜欢在北京吃烤鸭", []),  # one word to the keyword side, as to the index
    ("MySQL配置", ("MySQL", "数据库", "配置"), "数据库配置是 MySQL 8", ["MySQL", "数据库", "配置"]),
    ("the of and", None, "the of and", []),
])
def test_matched_keywords(query, keywords, text, matched):
    words = keyword_words(SearchQuery(query=query, keywords=keywords))
    assert matched_keywords(words, text) == matched


@pytest.mark.parametrize(("text", "limit", "shown"), [
    ("short", 200, "short"),
    ("two\n  lines", 200, "two lines"),
    ("a" * 250, 200, "a" * 199 + "…"),
    ("word " * 5, 8, "word wo…"),
])
def test_preview(text, limit, shown):
    assert preview(text, limit) == shown


def test_results_are_grouped_per_group_conversation_in_the_order_of_their_best():
    def found(group_id, score):
        return ScoredMemory(memory=MemoryItem(user_id="u", text="t", group_id=group_id), score=score)
    results = [found("team", 0.9), found("", 0.8), found("team", 0.7), found("family", 0.5)]
    groups = result_groups(results)
    assert [(g["group_id"], g["count"], g["best_score"]) for g in groups] == [("team", 2, 0.9), ("", 1, 0.8),
                                                                              ("family", 1, 0.5)]
    assert groups[0]["memory_ids"] == [str(results[0].memory.id), str(results[2].memory.id)]
    assert result_groups([]) == []


# -- through the API

@pytest.fixture
def notes(api):
    api.remember("alice", "Alice's database is MySQL 8 on port 3307.")
    api.remember("alice", "Alice went hiking in the Alps.", valid_at=(datetime.now(UTC) - timedelta(days=90))
                 .isoformat())
    api.remember("alice", "The team agreed to ship on Friday.", group_id="team")
    api.remember("alice", "The team retro is on Monday.", group_id="team")
    api.remember("alice", "Alice's sister lives in Porto.")


def _body(api, **fields):
    response = api.post("memories/search", {"user_id": "alice", **fields})
    assert response.status_code == 200, response.content
    return response.json()


def test_keywords_replace_the_query_on_the_keyword_side(api, notes):
    # The query shares no word with the memory; the keyword list does.
    body = _body(api, query="what is she running?", keywords=["MySQL"], mode="keyword")
    assert [r["memory"]["text"] for r in body["results"]] == ["Alice's database is MySQL 8 on port 3307."]
    assert body["results"][0]["matched_keywords"] == ["MySQL"]
    assert _body(api, query="what is she running?", mode="keyword")["results"] == []


def test_each_result_says_which_words_it_holds_and_shows_a_preview(api, notes):
    body = _body(api, query="Where did Alice go hiking?")
    [top] = [r for r in body["results"] if r["memory"]["text"] == "Alice went hiking in the Alps."]
    assert top["matched_keywords"] == ["Alice", "hiking"]
    assert top["preview"] == "Alice went hiking in the Alps."
    assert all("turns" not in r for r in body["results"])  # only when asked


def test_a_time_range_in_days_leaves_out_older_memories(api, notes):
    texts = [r["memory"]["text"] for r in _body(api, query="hiking Alps", time_range_days=30)["results"]]
    assert "Alice went hiking in the Alps." not in texts
    texts = [r["memory"]["text"] for r in _body(api, query="hiking Alps", time_range_days=120)["results"]]
    assert "Alice went hiking in the Alps." in texts


def test_the_answer_counts_its_total_and_groups_per_group(api, notes):
    body = _body(api, query="team", mode="keyword", limit=1)
    assert len(body["results"]) == 1
    assert body["total_count"] == 2 and body["total_count_exact"] is True
    assert body["groups"] == [{"group_id": "team", "count": 1, "best_score": body["results"][0]["score"],
                               "memory_ids": [body["results"][0]["memory"]["id"]]}]
    everything = _body(api, query="Alice team sister", limit=10)
    assert {g["group_id"] for g in everything["groups"]} == {"", "team"}
    assert sum(g["count"] for g in everything["groups"]) == len(everything["results"])
    assert everything["degraded"] == []


def test_a_floor_is_counted_in_the_total(api, notes):
    loose = _body(api, query="Alice database MySQL", mode="keyword")
    strict = _body(api, query="Alice database MySQL", mode="keyword", min_score=0.9)
    assert strict["total_count"] < loose["total_count"]
    assert strict["total_count"] == len(strict["results"])


def test_original_turns_come_with_a_result_when_asked_redacted_as_an_episode_keeps_them(api):
    job = converse(api, ["Hello!", "I work as a nurse at St Mary's hospital. My email is alice@example.com."],
                   session_id="chat-1")  # the e-mail is held for review; the job keeps the turn as it was sent
    body = _body(api, query="nurse hospital", include_turns=True)
    found = [r for r in body["results"] if "nurse" in r["memory"]["text"]]
    assert found, body
    [turn] = found[0]["turns"]
    assert found[0]["turns_total"] == 1
    assert (turn["job_id"], turn["index"], turn["role"]) == (job["job_id"], 1, "user")
    assert "St Mary's hospital" in turn["content"] and "alice@example.com" not in turn["content"]
    saved = api.remember("alice", "Alice's nurse badge number is on file.")
    body = _body(api, query="nurse badge", include_turns=True)
    by_id = {r["memory"]["id"]: r for r in body["results"]}
    assert by_id[saved["id"]]["turns"] == [] and by_id[saved["id"]]["turns_total"] == 0  # saved as given


def test_a_failed_vector_search_is_a_degraded_answer_not_an_empty_one(api, notes):
    with connection.cursor() as cursor:  # the vector table gone (seed 001 §9: pgvector missing and the like)
        cursor.execute("ALTER TABLE memory_vectors RENAME TO memory_vectors_away")
    body = _body(api, query="MySQL database")
    assert body["degraded"] == ["semantic"] and body["degraded_reason"].startswith("vector search failed")
    assert [r["memory"]["text"] for r in body["results"]] == ["Alice's database is MySQL 8 on port 3307."]
    semantic = api.post("memories/search", {"user_id": "alice", "query": "MySQL database", "mode": "semantic"})
    assert semantic.status_code == 503 and "vector search failed" in semantic.json()["detail"]
    assert _body(api, query="nothing matches zzz")["degraded"] == ["semantic"]  # empty, and says why


def test_a_search_plan_counts_for_internal_callers_too(api, notes, tenant_a):
    from memories.search import memory_search

    plan = SearchPlan()
    found = memory_search(tenant=tenant_a, query=SearchQuery(query="team", user_id="alice", mode="keyword", limit=1),
                          plan=plan)
    assert len(found) == 1 and plan.total_count == 2
