"""The agent's read path: scopes, the context block's sections, scores on one
scale, sources, degradation, merge, expiry, reflection as a job."""

import json
import time
from datetime import timedelta

import pytest
from django.utils import timezone

from memories import context_tuning
from memories.context import ContextLine, collapse_near_duplicates, near_duplicate, render
from memories.erasure import user_erase
from memories.models import HistoryEvent, MemoryHistory, MemoryItem
from memories.porting import export_rows
from memories.process_state import reset
from memories.tasks import archive_expired
from memories.writing import memory_note
from reflection.models import ReflectionCycle
from tests.conftest import converse
from tests.fake_openai import Reply, chat_reply
from traits import services
from traits.models import Trait


def _texts(results) -> set[str]:
    return {r["memory"]["text"] for r in results}


@pytest.fixture
def scoped(api):
    """Alice's memories saved by two agents, none, two groups and a session."""
    api.remember("alice", "Alice plays chess on Sundays.", agent_id="coach")
    api.remember("alice", "Alice plays the cello in an orchestra.", agent_id="music")
    api.remember("alice", "Alice plays tennis with her brother.")
    api.remember("alice", "Alice plays cards with the book club.", group_id="book-club")
    api.remember("alice", "Alice plays darts at work.", group_id="office")
    api.remember("alice", "Alice plays squash tonight.", session_id="s-9")
    api.remember("bob", "Bob plays bridge with the book club.", group_id="book-club")


# --------------------------------------------------------------------------- scopes


def test_an_agent_scope_sees_its_own_and_unscoped_memories(api, scoped):
    everything = _texts(api.search("alice", "plays", limit=20))
    assert len(everything) == 6  # without agent_id: all of the user's
    coach = _texts(api.search("alice", "plays", agent_id="coach", limit=20))
    assert "Alice plays chess on Sundays." in coach and "Alice plays tennis with her brother." in coach
    assert "Alice plays the cello in an orchestra." not in coach


def test_a_session_scope_sees_that_session_only(api, scoped):
    assert _texts(api.search("alice", "plays", session_id="s-9")) == {"Alice plays squash tonight."}


def test_a_group_scope_with_a_user_sees_that_group_and_no_group(api, scoped):
    found = _texts(api.search("alice", "plays", group_id="book-club", limit=20))
    assert "Alice plays cards with the book club." in found and "Alice plays tennis with her brother." in found
    assert "Alice plays darts at work." not in found and not any("Bob" in t for t in found)


def test_a_group_without_a_user_reads_every_members_memories_of_that_group(api, scoped):
    response = api.post("memories/search", {"group_id": "book-club", "query": "plays book club"})
    assert response.status_code == 200
    assert _texts(response.json()["results"]) == {"Alice plays cards with the book club.",
                                                  "Bob plays bridge with the book club."}
    assert "user_id" in api.post("memories/search", {"query": "plays"}).json()  # neither user nor group: 400


def test_lists_and_exports_take_the_same_scopes(api, scoped, tenant_a):
    listed = {m["text"] for m in api.get("memories?user_id=alice&agent_id=music").json()["results"]}
    assert "Alice plays the cello in an orchestra." in listed and "Alice plays chess on Sundays." not in listed
    group = {m["text"] for m in api.get("memories?group_id=book-club").json()["results"]}
    assert group == {"Alice plays cards with the book club.", "Bob plays bridge with the book club."}
    exported = {row["text"] for row in export_rows(tenant=tenant_a, user_id="alice", agent_id="coach")}
    assert "Alice plays chess on Sundays." in exported and "Alice plays the cello in an orchestra." not in exported


def test_erasing_one_agents_memories_of_a_user_keeps_the_rest(api, scoped, tenant_a):
    response = api.delete("users/alice/memories?agent_id=music")
    assert response.status_code == 200 and response.json()["memories"] == 1
    left = set(MemoryItem.objects.filter(user_id="alice").values_list("text", flat=True))
    assert "Alice plays the cello in an orchestra." not in left and len(left) == 5
    assert not MemoryHistory.objects.filter(new_text__contains="cello").exists()
    assert user_erase(tenant=tenant_a, user_id="alice", actor="t", agent_id="music").counts["memories"] == 0


def test_a_group_conversation_keeps_a_group_profile_for_group_context(api):
    converse(api, [{"role": "user", "name": "Ann", "content": "I'm the organiser of this club."},
                   {"role": "user", "name": "Ben", "content": "We meet every Tuesday at the library."},
                   {"role": "user", "name": "Ben", "content": "I live in Porto."}],
             user_id="ann", session_id="g1", group_id="hikers", participants={"Ann": "ann", "Ben": "ben"})
    profile = {m["text"] for m in api.get("memories?group_id=hikers&memory_type=profile").json()["results"]}
    assert "Ann is the group's organiser" in profile
    assert any("We meet every Tuesday at the library" in t for t in profile)
    assert {"Ann is a member of the group", "Ben is a member of the group"} <= profile
    body = api.post("context", {"group_id": "hikers", "query": "when do we meet"}).json()
    assert body["sections"]["group_profile"] and "### The group" in body["context"]
    assert "the group hikers" in body["context"].splitlines()[0]
    group_section = [line["text"] for line in body["sections"]["group_profile"]]
    assert "Ben lives in Porto" in profile and "Ben lives in Porto" not in group_section  # Ben's, not the group's


# --------------------------------------------------------------------------- the context block


def _trait(tenant, text, subtype, stage, confidence):
    trait = services.trait_create(tenant=tenant, user_id="alice", text=text, subtype=subtype, actor="t",
                                  stage=stage, confidence=confidence)
    Trait.objects.filter(pk=trait.pk).update(decayed_confidence=confidence)
    return trait


def test_context_has_traits_then_memories_with_statuses_outside_the_text(api, tenant_a, settings):
    settings.REDIS_URL = ""
    _trait(tenant_a, "Habitually runs before work", "behavior", "established", 0.7)
    _trait(tenant_a, "Values honesty above comfort", "core", "core", 0.9)
    _trait(tenant_a, "Prefers tea to coffee", "preference", "emerging", 0.5)
    _trait(tenant_a, "Prefers trains to planes", "preference", "established", 0.8)  # the more confident first
    _trait(tenant_a, "Likes loud music", "preference", "established", 0.2)  # decayed below 0.3
    _trait(tenant_a, "Might like sushi", "preference", "trend", 0.9)  # a trend is not shown
    for city, topic in [("Lisbon", "databases"), ("Oslo", "compilers"), ("Rome", "robotics"), ("Kyoto", "gardens"),
                        ("Lima", "cooking"), ("Cairo", "history"), ("Quito", "volcanoes"), ("Perth", "surfing"),
                        ("Dublin", "poetry"), ("Accra", "music"), ("Hanoi", "coffee"), ("Riga", "chess")]:
        api.remember("alice", f"Alice flew to {city} for a conference about {topic}.")
    body = api.post("context", {"user_id": "alice", "query": "conference city"}).json()
    traits = [line["text"] for line in body["sections"]["traits"]]
    assert traits == ["Values honesty above comfort", "Prefers trains to planes", "Prefers tea to coffee",
                      "Habitually runs before work"]
    assert 6 <= len(body["sections"]["memories"]) <= 16  # as many as 2,000 characters hold (memory_lines_for)
    text = body["context"]
    assert text.index("### Traits") < text.index("### Memories")
    assert "REDIS" not in text and "skipped" not in text
    assert body["status"]["working_memory"] == "used" and body["status"]["search"] == "ok"  # the database store
    limited = api.post("context", {"user_id": "alice", "query": "conference", "trait_limit": 1, "limit": 3}).json()
    assert len(limited["sections"]["traits"]) == 1 and len(limited["sections"]["memories"]) == 3


def test_near_duplicates_collapse_into_the_richer_line(api):
    api.remember("alice", "Alice likes hiking.")
    api.remember("alice", "Alice likes hiking in the Alps with her sister.")
    api.remember("alice", "Alice is allergic to peanuts.")
    body = api.post("context", {"user_id": "alice", "query": "hiking"}).json()
    lines = [line for line in body["sections"]["memories"] if "hiking" in line["text"]]
    assert len(lines) == 1 and lines[0]["text"] == "Alice likes hiking in the Alps with her sister."
    assert len(lines[0]["collapsed"]) == 1


@pytest.mark.parametrize("a, b, same", [
    ("Alice likes hiking", "Alice likes hiking in the Alps", True),
    ("Alice likes tea", "Alice likes coffee", False),
    ("Alice likes tea", "Alice likes tea", True),
    ("爱丽丝喜欢爬山", "爱丽丝喜欢在阿尔卑斯山爬山", True),
    ("Alice lives in Porto", "Bob works in Lisbon", False),
])
def test_near_duplicate_rule(a, b, same):
    from memories.context import _tokens

    assert near_duplicate(_tokens(a), _tokens(b), 0.8) is same


def test_rendering_fits_max_chars_without_cutting_a_line_in_every_format():
    lines = [ContextLine(section="traits", id="t1", text="Values honesty", kind="core"),
             *[ContextLine(section="memories", id=f"m{i}", text=f"Memory line number {i} " + "x" * (i * 9),
                           date="2024-01-01", kind="fact") for i in range(10)]]
    for form in ("markdown", "plain", "json"):
        for budget in (60, 120, 400):
            text, shown = render([ContextLine(**vars(line)) for line in lines], subject="alice", form=form,
                                 max_chars=budget)
            assert len(text) <= budget
            for line in shown:
                assert " ".join(line.text.split()) in text
    markdown, _ = render(lines, subject="alice", form="markdown", max_chars=2000)
    plain, _ = render(lines, subject="alice", form="plain", max_chars=2000)
    as_json, _ = render(lines, subject="alice", form="json", max_chars=2000)
    assert markdown.startswith("## ") and "#" not in plain
    assert json.loads(as_json)["traits"][0]["text"] == "Values honesty"


@pytest.mark.parametrize(("max_chars", "lines"), [(400, 6), (1000, 8), (2000, 16), (4000, 20), (100_000, 20)])
def test_the_budget_decides_how_many_memory_lines_a_block_holds(max_chars, lines):
    from memories.context import memory_lines_for

    assert memory_lines_for(max_chars, floor=6, per_line=125, ceiling=20) == lines


def test_collapse_keeps_the_order_of_the_best_lines():
    lines = [ContextLine(section="memories", id="a", text="Alice likes tea"),
             ContextLine(section="memories", id="b", text="Alice lives in Porto"),
             ContextLine(section="memories", id="c", text="Alice likes tea very much")]
    kept = collapse_near_duplicates(lines, 0.8)
    assert [line.id for line in kept] == ["c", "b"] and kept[0].text == "Alice likes tea very much"
    assert kept[0].collapsed == ["a"]  # the richer line, whole, in the first one's place


def test_a_fact_takes_the_place_of_the_episode_excerpt_that_says_the_same():
    """Facts come first where they carry the same evidence, whichever ranked higher."""
    excerpt = ContextLine(section="memories", id="e", excerpt=True, kind="episodic", text=(
        "assistant: Sounds lovely. / User: Please keep your answers short, I read them on my phone."))
    fact = ContextLine(section="memories", id="f", kind="fact",
                       text="User wants the assistant to keep the answers short")
    for lines in ([excerpt, fact], [fact, excerpt]):
        kept = collapse_near_duplicates([ContextLine(**vars(line)) for line in lines], 0.8)
        assert [(line.id, line.text) for line in kept] == [("f", fact.text)] and kept[0].collapsed == ["e"]


def test_a_line_never_shows_another_lines_words():
    """A trait and a memory that say the same: the trait line stays the trait's, the memory is listed."""
    lines = [ContextLine(section="traits", id="t", text="Has a flat white", kind="behavior"),
             ContextLine(section="memories", id="m", text="I have a flat white every morning at the café",
                         kind="fact", date="2026-01-01")]
    kept = collapse_near_duplicates(lines, 0.8)
    assert [(line.id, line.text, line.kind) for line in kept] == [("t", "Has a flat white", "behavior")]
    assert kept[0].collapsed == ["m"]


def test_context_json_format_is_data(api):
    api.remember("alice", "Alice is allergic to peanuts.")
    body = api.post("context", {"user_id": "alice", "query": "allergy", "format": "json"}).json()
    parsed = json.loads(body["context"])
    assert parsed["about"] == "alice" and parsed["memories"][0]["text"] == "Alice is allergic to peanuts."
    assert "format" in api.post("context", {"user_id": "alice", "query": "q", "format": "yaml"}).json()


def test_condensed_context_uses_the_llm_and_falls_back_on_failure(api, settings, fake_openai):
    settings.LLM_BASE_URL = fake_openai.base_url
    settings.EXTRACTION_PROVIDER = "rules"
    api.remember("alice", "Alice is allergic to peanuts.")
    api.remember("alice", "Alice prefers short answers.")
    fake_openai.script("/v1/chat/completions", chat_reply("- Allergic to peanuts.\n- Wants short answers.\n"
                                                          "- Keep it brief."))
    body = api.post("context", {"user_id": "alice", "query": "food", "condense": True}).json()
    assert body["context"].startswith("- Allergic to peanuts.") and body["status"]["condensed"] == "used"
    fake_openai.script("/v1/chat/completions", Reply(status=500, body={"error": {"message": "down"}}))
    body = api.post("context", {"user_id": "alice", "query": "food", "condense": True}).json()
    assert body["context"].startswith("## What you know about alice")
    assert body["status"]["condensed"].startswith("fallback")


# --------------------------------------------------------------------------- scores and sources


def test_min_score_is_on_a_zero_to_one_relevance_scale(api):
    api.remember("alice", "Alice is allergic to peanuts.")
    api.remember("alice", "Alice went to Lisbon in May.")
    for mode in ("semantic", "keyword", "hybrid"):
        results = api.search("alice", "allergic to peanuts", mode=mode)
        assert results and all(0 < r["scores"]["relevance"] <= 1 for r in results)
        assert results[0]["scores"]["relevance"] == pytest.approx(1.0)  # ranked first on every side that ran
        assert [r["memory"]["text"] for r in api.search("alice", "allergic to peanuts", mode=mode, min_score=0.5)
                ][0] == "Alice is allergic to peanuts."
    assert "min_score" in api.post("memories/search", {"user_id": "alice", "query": "q", "min_score": 2}).json()


def test_min_similarity_is_a_cosine_floor_on_the_semantic_side(api):
    api.remember("alice", "Alice is allergic to peanuts.")
    api.remember("alice", "Alice went to Lisbon in May.")
    loose = api.search("alice", "allergic peanuts", mode="semantic", min_similarity=-1)
    assert len(loose) == 2
    strict = api.search("alice", "allergic peanuts", mode="semantic", min_similarity=0.99)
    assert strict == []


def test_search_results_carry_their_sources(api):
    job = converse(api, ["I have a dog named Rex."], session_id="walks")
    result = api.search("alice", "dog")[0]
    assert result["sources"] == [{"session_id": "walks", "message_indices": [0], "job_id": job["job_id"]}]
    api.remember("alice", "Alice saved this by hand.")
    assert api.search("alice", "saved by hand")[0]["sources"] == []


# --------------------------------------------------------------------------- degradation


@pytest.fixture
def embedder_down(settings):
    settings.EMBEDDING_PROVIDER, settings.EMBEDDING_MODEL = "openai", "remote"
    settings.EMBEDDING_BASE_URL = "http://127.0.0.1:9/v1"  # nothing listens there
    settings.EMBEDDING_TIMEOUT = settings.EMBEDDING_QUERY_TIMEOUT = 0.5
    reset()
    yield
    reset()


def test_hybrid_answers_from_keywords_when_the_embedder_is_down(api, settings):
    api.remember("alice", "Alice is allergic to peanuts.")
    settings.EMBEDDING_PROVIDER, settings.EMBEDDING_MODEL = "openai", "remote"
    settings.EMBEDDING_BASE_URL = "http://127.0.0.1:9/v1"
    settings.EMBEDDING_QUERY_TIMEOUT = 0.5
    reset()
    try:
        response = api.post("memories/search", {"user_id": "alice", "query": "peanuts"})
        assert response.status_code == 200
        body = response.json()
        assert body["degraded"] == ["semantic"] and "embedding failed" in body["degraded_reason"]
        assert _texts(body["results"]) == {"Alice is allergic to peanuts."}
        assert body["results"][0]["scores"]["relevance"] == pytest.approx(1.0)  # the keyword side is all that ran
        semantic = api.post("memories/search", {"user_id": "alice", "query": "peanuts", "mode": "semantic"})
        assert semantic.status_code == 503 and "embedding" in semantic.json()["detail"]
        context = api.post("context", {"user_id": "alice", "query": "peanuts"}).json()
        assert context["status"]["search"] == "degraded: semantic" and "peanuts" in context["context"]
    finally:
        reset()


def test_a_conversation_job_retries_a_failed_embedding_by_itself(api, settings, fake_openai):
    settings.EMBEDDING_PROVIDER, settings.EMBEDDING_MODEL = "openai", "test-embed"
    settings.EMBEDDING_BASE_URL, settings.EMBEDDING_DIMENSIONS = fake_openai.base_url, 8
    settings.EXTRACTION_RETRY_BACKOFF = 0.05
    reset()
    try:
        # A job embeds its statements as one batch of documents, which the client retries twice itself
        # (OpenAIEmbedder: max_retries=2): three failures in a row reach the job, which retries as a whole.
        fake_openai.script("/v1/embeddings", *[Reply(status=500, body={"error": {"message": "busy"}})] * 3)
        job = converse(api, ["I have a cat named Miso."])
    finally:
        reset()
    assert job["status"] == "done" and job["attempts"] == 2, job
    assert MemoryItem.objects.filter(user_id="alice", text__contains="Miso").exists()


def test_a_job_whose_embedding_keeps_failing_fails_after_bounded_retries(api, settings, embedder_down):
    settings.EXTRACTION_RETRY_BACKOFF, settings.EXTRACTION_MAX_RETRIES = 0.01, 2
    job = converse(api, ["I have a cat named Miso."])
    assert job["status"] == "failed" and "embedding failed" in job["error"] and job["attempts"] == 3
    assert not MemoryItem.objects.filter(user_id="alice").exists()  # nothing half-written


# --------------------------------------------------------------------------- merge


def test_merge_through_the_api_supersedes_the_originals_with_history(api):
    a = api.remember("alice", "Alice likes tea.")
    b = api.remember("alice", "Alice drinks green tea every morning.")
    response = api.post("memories/merge", {"ids": [a["id"], b["id"]]})
    assert response.status_code == 201, response.content
    merged = response.json()
    assert merged["text"] == "Alice likes tea; Alice drinks green tea every morning."
    for original in (a, b):
        row = MemoryItem.objects.get(id=original["id"])
        assert row.expired_at is not None and str(row.superseded_by_id) == merged["id"]
    assert MemoryHistory.objects.filter(event=HistoryEvent.MERGE).count() == 3
    again = api.post("memories/merge", {"ids": [a["id"], merged["id"]], "text": "x"})
    assert again.status_code == 409  # a superseded original is no longer current


def test_merge_conflicts_and_refusals(api, reviewer, tenant_a):
    a = api.remember("alice", "Alice likes tea.")
    b = api.remember("alice", "Alice likes green tea.")
    c = api.remember("bob", "Bob likes tea.")
    stale = api.post("memories/merge", {"ids": [a["id"], b["id"]], "expected_versions": {a["id"]: 7}})
    assert stale.status_code == 409 and stale.json()["current_version"] == 1
    assert api.post("memories/merge", {"ids": [a["id"], c["id"]]}).status_code == 400  # two users
    assert "ids" in api.post("memories/merge", {"ids": [a["id"]]}).json()
    memory_note(memory=MemoryItem.objects.get(id=a["id"]), event=HistoryEvent.APPROVE, actor="op", reason="ok")
    assert api.post("memories/merge", {"ids": [a["id"], b["id"]]}).status_code == 403  # an agent key
    done = reviewer.post("memories/merge", {"ids": [a["id"], b["id"]], "text": "Alice likes green tea best.",
                                            "expected_versions": {a["id"]: 1, b["id"]: 1}})
    assert done.status_code == 201 and done.json()["text"] == "Alice likes green tea best."


# --------------------------------------------------------------------------- expiry


def test_an_expired_memory_drops_out_at_once_and_is_archived_by_the_beat_job(api, redis_url):
    api.remember("alice", "Alice is in Berlin this week.", ttl_seconds=1)
    kept = api.remember("alice", "Alice lives in Porto.")
    assert "Alice is in Berlin this week." in _texts(api.search("alice", "Berlin Porto"))
    time.sleep(1.2)
    assert _texts(api.search("alice", "Berlin Porto")) == {"Alice lives in Porto."}
    body = api.post("context", {"user_id": "alice", "query": "Berlin"}).json()
    assert "Berlin" not in body["context"]
    for listed in ("memories?user_id=alice", "memories?user_id=alice&status=active"):  # never listed as active
        assert {m["text"] for m in api.get(listed).json()["results"]} == {"Alice lives in Porto."}
    assert archive_expired() == {"archived": 1}
    gone = MemoryItem.objects.get(text="Alice is in Berlin this week.")
    assert gone.status == "archived"
    event = MemoryHistory.objects.get(memory_id=gone.id, event=HistoryEvent.DELETE)
    assert event.actor == "expiry" and event.reason.startswith("expired at")
    assert MemoryItem.objects.get(id=kept["id"]).status == "active"


def test_expiry_on_save_and_by_type(api, settings):
    settings.MEMORY_TTL_DAYS_BY_TYPE = {"episodic": 2}
    episode = api.remember("alice", "Alice had a long day.", memory_type="episodic")
    assert abs((timezone.now() + timedelta(days=2)) - _when(episode["expires_at"])) < timedelta(minutes=1)
    assert api.remember("alice", "Alice is vegetarian.")["expires_at"] is None
    soon = (timezone.now() + timedelta(hours=1)).isoformat()
    assert _when(api.remember("alice", "Alice is on call.", expires_at=soon)["expires_at"]) == _when(soon)
    past = (timezone.now() - timedelta(hours=1)).isoformat()
    assert "expires_at" in api.post("memories", {"user_id": "alice", "text": "x", "expires_at": past}).json()
    both = api.post("memories", {"user_id": "alice", "text": "y", "expires_at": soon, "ttl_seconds": 5})
    assert "ttl_seconds" in both.json()


def _when(value: str):
    from django.utils.dateparse import parse_datetime

    return parse_datetime(value)


# --------------------------------------------------------------------------- reflection


def test_explicit_saves_count_toward_the_importance_trigger(api, settings, tenant_a):
    settings.REFLECTION_IMPORTANCE_THRESHOLD = 1.0
    api.remember("alice", "Alice loves jazz.", importance=0.6)
    assert not ReflectionCycle.objects.filter(user_id="alice").exists()
    api.remember("alice", "Alice prefers jazz clubs over bars.", importance=0.6)
    cycle = ReflectionCycle.objects.get(user_id="alice")
    assert cycle.trigger == "importance_accumulated" and cycle.trigger_value == pytest.approx(1.2)


def test_expiry_is_changed_and_cleared_by_patch_and_through_review(api, reviewer):
    memory = api.remember("alice", "Alice is travelling.")
    soon = (timezone.now() + timedelta(days=3)).isoformat()
    changed = api.patch(f"memories/{memory['id']}", {"expires_at": soon}).json()["memory"]
    assert _when(changed["expires_at"]) == _when(soon) and changed["version"] == 2
    assert api.patch(f"memories/{memory['id']}", {"expires_at": None}).json()["memory"]["expires_at"] is None
    memory_note(memory=MemoryItem.objects.get(id=memory["id"]), event=HistoryEvent.APPROVE, actor="op", reason="ok")
    held = api.patch(f"memories/{memory['id']}", {"expires_at": soon})
    assert held.status_code == 202
    candidate = held.json()["candidate"]["id"]
    assert reviewer.post(f"review/{candidate}/approve", {}).status_code == 200
    assert _when(api.get(f"memories/{memory['id']}").json()["expires_at"]) == _when(soon)


def test_working_memory_in_the_context_keeps_to_the_scope_and_agent_erasure_clears_it(api, tenant_a, redis_url):
    from memories.working import working_memory_recent

    converse(api, ["I bought a red kayak yesterday."], agent_id="shop")
    converse(api, ["I adopted a grey cat last week."], agent_id="vet", session_id="s2")
    mine = api.post("context", {"user_id": "alice", "query": "weather", "agent_id": "vet"}).json()
    shown = [line["text"] for section in mine["sections"].values() for line in section]
    assert mine["status"]["working_memory"] == "used"
    assert any("cat" in t for t in shown) and not any("kayak" in t for t in shown)
    from memories.context import ContextRequest, _working_memories

    fresh, _ = _working_memories(tenant_a, ContextRequest(query="x", user_id="alice", agent_id="vet"), 5)
    assert [m.agent_id for m in fresh] == ["vet"]  # the shop agent's fresh item is out of scope
    assert api.delete("users/alice/memories?agent_id=shop").json()["counts"]["working_memory"] == 1
    left = [entry["text"] for entry in working_memory_recent(tenant_a.id, "alice")]
    assert left and not any("kayak" in t for t in left)


def test_the_fast_memory_body_is_what_drf_renders(api, tenant_a):
    from rest_framework import serializers as drf

    from memories.api.serializers import MemorySerializer

    first = api.remember("alice", "Alice likes tea.", tags=["drink"], data={"k": [1, 2]}, agent_id="a",
                         ttl_seconds=60)
    second = api.remember("alice", "Alice likes green tea.")
    api.post("memories/merge", {"ids": [first["id"], second["id"]]})
    for memory in MemoryItem.objects.filter(user_id="alice"):
        fast = MemorySerializer(memory).data
        slow = drf.ModelSerializer.to_representation(MemorySerializer(memory), memory)
        assert dict(fast) == dict(slow)
        assert "data" not in MemorySerializer(memory, context={"include_data": False}).data


def _turns(*texts: str) -> list[dict]:
    return [{"speaker": "Caroline" if i % 2 == 0 else "Melanie", "text": text, "at": f"2023-05-0{i + 1}T10:00"}
            for i, text in enumerate(texts)]


@pytest.mark.parametrize("case, turns, query, cap, expected", [
    ("the matching turn with one neighbour each side",
     _turns("Hi!", "Hey, how was the weekend?", "I went to a support group yesterday.", "That sounds brave.", "Bye"),
     "When did Caroline go to the support group?", 400,
     "Melanie: Hey, how was the weekend? / Caroline: I went to a support group yesterday. / Melanie: That sounds "
     "brave."),
    ("two matches apart, a gap between them",
     _turns("I adopted a dog.", "Nice.", "Weather is bad.", "Ok.", "The dog loves the park.", "Cute."),
     "dog", 400,
     "Caroline: I adopted a dog. / Melanie: Nice. … Melanie: Ok. / Caroline: The dog loves the park. / "
     "Melanie: Cute."),
    ("neighbours go before the best turn is cut",
     _turns("Hello there my friend.", "I went to a support group yesterday.", "That sounds brave of you."),
     "support group", 60, "Melanie: I went to a support group yesterday."),
    ("nothing matches: nothing to show", _turns("Hi!", "Hello."), "pottery", 400, ""),
    ("a forgotten turn is never shown", _turns("I play the cello.", "[forgotten at the user's request]", "Nice."),
     "cello forgotten", 400, "Caroline: I play the cello."),
    ("Chinese by character pairs", _turns("你好", "我在上海瑞金医院当护士。", "真好。"), "用户在哪家医院工作？", 400,
     "Caroline: 你好 / Melanie: 我在上海瑞金医院当护士。 / Caroline: 真好。"),
])
def test_an_episode_shows_the_turns_that_match(case, turns, query, cap, expected):
    from memories.excerpts import episode_excerpt

    text, _date = episode_excerpt(turns, query, cap)
    assert text == expected, case
    assert len(text) <= cap


def test_a_small_budget_still_carries_a_stated_preference(api, settings):
    """400 characters: a long conversation's episode does not push the user's wish out."""
    from tests.conftest import converse

    settings.CONVERSATION_EPISODES = True
    chatter = [f"Yesterday I walked past the old library on street number {n} and saw a long queue there."
               for n in range(12)]
    converse(api, [*chatter, "Please keep your answers short and direct.", *chatter[:4]], session_id="long")
    body = api.post("context", {"user_id": "alice", "query": "How should I phrase my answer to this user?",
                                "max_chars": 400}).json()
    assert len(body["context"]) <= 400
    assert "short and direct" in body["context"], body["context"]
    episodes = [line for line in body["sections"]["memories"] if line["kind"] == "episodic"]
    assert all(len(line["text"]) <= context_tuning.CONTEXT_EPISODE_LINE_CHARS for line in episodes)


def test_greetings_only_leave_nothing(api, settings):
    from tests.conftest import converse

    settings.CONVERSATION_EPISODES = True
    job = converse(api, ["hi", {"role": "assistant", "content": "Hello! How can I help?"}, "ok thanks, bye"],
                   session_id="hello")
    assert job["operations"] == [] and job["counts"].get("nothing_worth_keeping") == 1
    from memories.models import MemoryItem

    assert not MemoryItem.objects.filter(user_id="alice").exists()


def test_a_session_is_where_the_agent_is_not_a_wall(api, scoped):
    """Search keeps session_id as a filter; /context ranks the session's memories up and still shows the
    user's long-term memories from other sessions."""
    body = api.post("context", {"user_id": "alice", "query": "What does Alice play?", "session_id": "s-9",
                                "limit": 6}).json()
    texts = [line["text"] for line in body["sections"]["memories"]]
    assert texts[0] == "Alice plays squash tonight."  # this session's, first
    assert "Alice plays tennis with her brother." in texts  # another session's, still there
    fresh = api.post("context", {"user_id": "alice", "query": "What does Alice play?",
                                 "session_id": "a-brand-new-session"}).json()
    assert "Alice plays tennis with her brother." in fresh["context"]  # a new session's first turn is not empty


def test_readme_agent_loop_works_from_the_first_turn_of_a_new_session(live_server, transactional_db, monkeypatch):
    """The README's agent loop, run as written (its code block, with this server's URL and a key)."""
    import re
    from pathlib import Path

    from memories.keys import api_key_create

    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text(encoding="utf-8")
    block = next(code for code in re.findall(r"```python\n(.*?)```", readme, re.S) if "def agent_turn" in code)
    monkeypatch.setenv("PORT", live_server.url.rsplit(":", 1)[1])  # the block reads $PORT, as make run does
    namespace: dict = {"KEY": api_key_create(tenant_name="readme").raw_key}
    exec(compile(block, "README.md", "exec"), namespace)
    prompts: list[str] = []

    def llm(prompt: str) -> str:
        prompts.append(prompt)
        return "Noted."

    namespace["agent_turn"]("ana", "monday", "I'm allergic to peanuts.", llm)
    namespace["session_over"]("ana", "monday")
    namespace["agent_turn"]("ana", "tuesday", "Which snacks should I avoid?", llm)
    assert "peanuts" in prompts[-1], prompts[-1]  # the new session's first turn already knows


def test_the_group_profile_keeps_statements_about_the_group():
    """tests/samples/group_statements.tsv: 105 group-chat sentences in English and Chinese, labelled
    (a statement about the group or a role in it, or anything else). Precision >= 0.9."""
    from datetime import UTC, datetime
    from pathlib import Path

    from memories.extraction import Message, group_profile_candidates
    from tests.figures import record

    rows = [line.split("\t") for line in (Path(__file__).parent / "samples" / "group_statements.tsv")
            .read_text(encoding="utf-8").splitlines() if line and not line.startswith("#")]
    assert len(rows) >= 100
    kept_right = kept_wrong = missed = 0
    for label, text in rows:
        kept = any("member" not in s.tags for s in group_profile_candidates(
            messages=[Message(index=0, role="user", content=text, name="Ann")], speakers={"Ann": "ann"},
            now=datetime.now(UTC)))
        kept_right += kept and label == "1"
        kept_wrong += kept and label == "0"
        missed += not kept and label == "1"
    precision = kept_right / max(kept_right + kept_wrong, 1)
    record("group profile: precision / recall", f"{precision:.2f} / {kept_right / (kept_right + missed):.2f}")
    assert precision >= 0.9 and kept_right / (kept_right + missed) >= 0.8


@pytest.mark.django_db
def test_connections_prepare_statements_and_leave_the_plan_choice_to_postgresql(settings):
    """DB_PREPARED_STATEMENTS and DB_PLAN_CACHE_MODE reach PostgreSQL: a statement run five times is
    prepared on the connection, and PostgreSQL's own choice of plan (auto) stands."""
    from django.db import connection

    assert settings.DB_PREPARED_STATEMENTS and settings.DB_PLAN_CACHE_MODE == ""
    with connection.cursor() as cursor:
        cursor.execute("SHOW plan_cache_mode")
        assert cursor.fetchone()[0] == "auto"
        for value in range(6):
            cursor.execute("SELECT %s::int + 1 AS prepared_probe", [value])
        cursor.execute("SELECT count(*) FROM pg_prepared_statements WHERE statement LIKE %s",
                       ["%prepared_probe%"])
        assert cursor.fetchone()[0] == 1


@pytest.mark.django_db
def test_a_kept_generic_plan_of_the_exact_vector_scan_can_use_the_models_covering_index(tenant_a):
    """The model's name is a literal in the statement (vocabulary.sql_model_is): with it as a parameter,
    PostgreSQL's generic plan could not prove the partial index's predicate and read the heap. With the
    other indexes and unique constraints on the vectors dropped (in this test's transaction), fresh
    statistics, and sequential and bitmap scans off, the covering index is the one way in, and a generic
    plan must be able to take it."""
    import re
    from datetime import datetime

    from django.db import connection, transaction
    from django.utils import timezone
    from psycopg import sql as pgsql

    from memories.embedding import get_embedder
    from memories.search import SearchQuery
    from memories.search.semantic import exact_semantic_sql
    from memories.vectors import ensure_user_vector_index

    embedder = get_embedder()
    index = ensure_user_vector_index(embedder.name, embedder.dimensions)
    query = SearchQuery(query="bees", user_id="alice")
    sql, args = exact_semantic_sql(tenant_a, query, embedder.embed_query("bees"), embedder.name, 10, timezone.now())
    numbered = iter(range(1, 1000))
    types = ["timestamptz" if isinstance(a, datetime) else "bigint" if isinstance(a, int) else "text" for a in args]
    try:
        with transaction.atomic(), connection.cursor() as cursor:  # a savepoint: undone whatever happens
            # Every other way in goes, in this savepoint: unique constraints first (their indexes cannot be
            # dropped while a constraint uses them), then the other indexes but the primary key and HNSW.
            cursor.execute("SELECT conname FROM pg_constraint WHERE conrelid = 'memory_vectors'::regclass "
                           "AND contype = 'u'")
            for (constraint,) in cursor.fetchall():
                cursor.execute(f'ALTER TABLE memory_vectors DROP CONSTRAINT "{constraint}"')
            cursor.execute("SELECT indexname FROM pg_indexes WHERE tablename = 'memory_vectors' AND indexname <> %s "
                           "AND indexdef NOT LIKE '%%hnsw%%' AND indexname NOT LIKE '%%pkey'", [index])
            for (other,) in cursor.fetchall():
                cursor.execute(f'DROP INDEX "{other}"')
            # Statistics as they are now (ANALYZE may run inside a transaction).
            cursor.execute("ANALYZE memory_vectors")
            cursor.execute("SET LOCAL plan_cache_mode = force_generic_plan")
            cursor.execute("SET LOCAL enable_seqscan = off")
            # enable_indexscan stays on: it governs index-only scans too (PostgreSQL's documentation).
            cursor.execute("SET LOCAL enable_bitmapscan = off")
            numbered_sql = re.sub("%s", lambda _: f"${next(numbered)}", sql)
            cursor.execute(f"PREPARE exact_scan ({', '.join(types)}) AS {numbered_sql}")
            values = pgsql.SQL(", ").join(pgsql.Literal(a) for a in args).as_string(connection.connection)
            cursor.execute(f"EXPLAIN EXECUTE exact_scan({values})")  # a utility statement takes no parameters
            plan = "\n".join(row[0] for row in cursor.fetchall())
            transaction.set_rollback(True)
    finally:  # only this statement: psycopg keeps its own prepared statements on the connection
        with connection.cursor() as cursor:
            cursor.execute("SELECT count(*) FROM pg_prepared_statements WHERE name = 'exact_scan'")
            if cursor.fetchone()[0]:
                cursor.execute("DEALLOCATE exact_scan")
    assert index and f"Index Only Scan using {index}" in plan, plan
