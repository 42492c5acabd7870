"""Hybrid search's conversation rules: time in the question (search.temporal) and
neighbour expansion (search.neighbours). Pure rules table-tested; then through
the service on a real database."""

from datetime import UTC, datetime

import pytest

from memories.models import MemoryItem, Tenant
from memories.search import SearchQuery, memory_search, tuning
from memories.search.neighbours import spread_to_neighbours
from memories.search.temporal import TimeIntent, mentions_time, time_intent, time_match
from memories.writing import MemorySpec, memory_create_batch


@pytest.mark.parametrize("query, asks_when, months, years", [
    ("When did Melanie go camping in June?", True, {6}, set()),
    ("How long has Caroline had her friends?", True, set(), set()),
    ("What did she paint in 2022?", False, set(), {2022}),
    ("What did they do in May 2023?", False, {5}, {2023}),
    ("What may she do next?", False, set(), set()),  # the verb, not the month
    ("May I ask about her sister?", False, set(), set()),
    ("What does Alice like?", False, set(), set()),
    ("她什么时候去的北京？", True, set(), set()),
    ("她3月做了什么", False, {3}, set()),
    ("2023年她去了哪里", False, set(), {2023}),
])
def test_time_intent(query, asks_when, months, years):
    assert time_intent(query) == TimeIntent(asks_when=asks_when, months=frozenset(months), years=frozenset(years))


@pytest.mark.parametrize("text, says_when", [
    ("I went to a support group yesterday", True),
    ("We went camping two weekends ago", True),
    ("Last Friday I went to the adoption meeting", True),
    ("I've known these friends for 4 years", True),
    ("In May we moved", True),
    ("I may move someday", False),
    ("Caroline: Thanks, that means a lot!", False),
    ("我上周去了北京", True),
    ("我喜欢烤鸭", False),
])
def test_mentions_time(text, says_when):
    assert mentions_time(text) is says_when


JUNE_2023 = datetime(2023, 6, 27, tzinfo=UTC).timestamp()


@pytest.mark.parametrize("intent, says_when, moment, expected", [
    (TimeIntent(asks_when=True), True, JUNE_2023, 0.3),
    (TimeIntent(asks_when=True), False, JUNE_2023, 0.0),
    (TimeIntent(asks_when=False), True, JUNE_2023, 0.0),  # saying when matters only to a "when" question
    (TimeIntent(months=frozenset({6})), False, JUNE_2023, 0.5),
    (TimeIntent(months=frozenset({7})), False, JUNE_2023, 0.0),
    (TimeIntent(asks_when=True, months=frozenset({6}), years=frozenset({2023})), True, JUNE_2023, 1.3),
])
def test_time_match(intent, says_when, moment, expected):
    assert time_match(intent, says_when, moment, mention_bonus=0.3, period_bonus=0.5) == pytest.approx(expected)


def _entry(score, memory_id, relevance=1.0):
    return (score, memory_id, {"relevance": relevance})


@pytest.mark.parametrize("scored, following, expected", [
    # a hit lends 0.5 x its score to the memory after it, which enters the list
    ([_entry(1.0, "q")], {"q": "a"}, [("q", 1.0), ("a", 0.5)]),
    # a neighbour keeps its own score when that is larger
    ([_entry(1.0, "q"), _entry(0.8, "a")], {"q": "a"}, [("q", 1.0), ("a", 0.8)]),
    # ... and takes the lent one when it is larger, moving up
    ([_entry(1.0, "q"), _entry(0.6, "x"), _entry(0.2, "a")], {"q": "a"}, [("q", 1.0), ("x", 0.6), ("a", 0.5)]),
    # two hits lending to one memory: the larger loan counts
    ([_entry(1.0, "q"), _entry(0.9, "r")], {"q": "a", "r": "a"}, [("q", 1.0), ("r", 0.9), ("a", 0.5)]),
    # no neighbour, no change
    ([_entry(1.0, "q")], {}, [("q", 1.0)]),
])
def test_spread_to_neighbours(scored, following, expected):
    out = spread_to_neighbours(scored, following, 0.5)
    assert [(memory_id, pytest.approx(score)) for score, memory_id, _ in out] == expected


def test_a_lent_neighbour_says_whose_and_carries_a_share_of_its_relevance():
    out = spread_to_neighbours([_entry(1.0, "q", relevance=0.8)], {"q": "a"}, 0.5)
    assert out[1][2] == {"semantic": None, "keyword": None, "fusion": 0.0, "relevance": pytest.approx(0.4),
                         "neighbour_of": "q"}


def _save(tenant, user_id, texts, **fields):
    return [r.memory for r in memory_create_batch(tenant=tenant, actor="test", enqueue_embedding=False,
                                                  count_for_reflection=False,
                                                  specs=[MemorySpec(user_id=user_id, text=t, **fields) for t in texts])]


CONVERSATION = ["Mel: Anything you're excited about in the adoption process?",
                "Caro: I'm thrilled to make a family for kids who need one.",
                "Mel: That's lovely.", "Caro: Thanks!"]


@pytest.fixture
def conversation(db):
    tenant = Tenant.objects.create(name="signals")
    _save(tenant, "caro", CONVERSATION, session_id="s1", agent_id="chat")
    _save(tenant, "caro", ["Caro: I swam in the lake.", "Caro: I'm thrilled about the swim meet."], session_id="s2")
    return tenant


def _texts(tenant, query, **scope):
    return [r.memory.text for r in memory_search(tenant=tenant, query=SearchQuery(
        query=query, user_id="caro", mode="hybrid", **scope))]


def test_a_batch_keeps_its_order_and_the_answer_after_a_found_question_comes_back(conversation):
    from memories.models import MemoryItem

    saved = list(MemoryItem.objects.filter(tenant=conversation, session_id="s1").order_by("created_at", "id"))
    assert [m.text for m in saved] == CONVERSATION
    results = memory_search(tenant=conversation, query=SearchQuery(query="adoption process excitement",
                                                                   user_id="caro", mode="hybrid"))
    by_text = {r.memory.text: r for r in results}
    # No vectors were written and the answer shares no word with the query: only its question brings it in.
    answer = by_text[CONVERSATION[1]]
    assert answer.scores["neighbour_of"] == str(saved[0].id) and answer.scores["keyword"] is None
    assert [r.memory.text for r in results][:2] == CONVERSATION[:2]


def test_neighbours_stay_in_their_session_and_scope(conversation, monkeypatch):
    monkeypatch.setattr(tuning, "SEARCH_NEIGHBOUR_WEIGHT", 0.99)
    results = memory_search(tenant=conversation, query=SearchQuery(query="adoption", user_id="caro", mode="keyword"))
    assert all("neighbour_of" not in r.scores for r in results)  # hybrid only
    hybrid = memory_search(tenant=conversation, query=SearchQuery(query="adoption", user_id="caro", mode="hybrid",
                                                                  agent_id="other", limit=10))
    # The session belongs to agent "chat": another agent's search sees neither the hit nor its neighbour.
    assert not {r.memory.text for r in hybrid} & set(CONVERSATION)
    lake = memory_search(tenant=conversation, query=SearchQuery(query="lake", user_id="caro", mode="hybrid"))
    lent = [r for r in lake if "neighbour_of" in r.scores]
    assert [r.memory.text for r in lent] in ([], ["Caro: I'm thrilled about the swim meet."])


def test_neighbours_can_be_turned_off(conversation, monkeypatch):
    monkeypatch.setattr(tuning, "SEARCH_NEIGHBOUR_WEIGHT", 0.0)
    results = memory_search(tenant=conversation, query=SearchQuery(query="adoption process", user_id="caro"))
    assert all("neighbour_of" not in r.scores for r in results)


def test_a_when_question_prefers_the_memory_that_says_when(db):
    tenant = Tenant.objects.create(name="signals-time")
    _save(tenant, "mel", ["Mel: Camping with the kids is the best.", "Mel: We went camping last weekend."])
    ranked = _texts_of(tenant, "mel", "When did Mel go camping?")
    assert ranked[0] == "Mel: We went camping last weekend."
    top = memory_search(tenant=tenant, query=SearchQuery(query="When did Mel go camping?", user_id="mel"))[0]
    assert top.scores["time"] == pytest.approx(0.3)


def test_a_named_month_prefers_memories_true_then(db):
    tenant = Tenant.objects.create(name="signals-month")
    _save(tenant, "mel", ["Mel: We went camping by the lake."], valid_at=datetime(2023, 6, 20, tzinfo=UTC))
    _save(tenant, "mel", ["Mel: We went camping in the forest."], valid_at=datetime(2023, 7, 20, tzinfo=UTC))
    assert _texts_of(tenant, "mel", "camping in June")[0] == "Mel: We went camping by the lake."
    assert _texts_of(tenant, "mel", "camping in July")[0] == "Mel: We went camping in the forest."


def _texts_of(tenant, user_id, query):
    return [r.memory.text for r in memory_search(tenant=tenant, query=SearchQuery(query=query, user_id=user_id))]


def test_a_question_naming_the_user_is_no_keyword_match_for_every_fact(api):
    """Facts about Maria say "Maria": her own name in a question would rank them all (the shortest
    first); the keyword side leaves the profile's name out, the rest of the question decides."""
    from tests.conftest import converse

    converse(api, ["My name is Maria.", "I like jazz.", "I'm allergic to peanuts."], user_id="maria")
    assert {"Maria likes jazz", "Maria is allergic to peanuts"} <= {m.text for m in MemoryItem.objects.all()}
    assert api.search("maria", "Maria", mode="keyword") == []
    found = api.search("maria", "Maria jazz", mode="keyword")
    assert [r["memory"]["text"] for r in found] == ["Maria likes jazz"]
    assert api.search("bob", "Maria", mode="keyword") == []  # another user: nothing to leave out, nothing found
