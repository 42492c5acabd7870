"""What /context reads about its user in one statement (memories.context_reads), working memory as seed 003
draws it (every save enters it; merged with the search's results by relevance), and the scorer's ceiling."""

import uuid
from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from memories.context import ContextRequest, _memory_and_working_lines, build_context
from memories.context_reads import WorkingAsk, memory_lines_from, user_reads
from memories.models import MemoryItem
from memories.search import ScoredMemory, SearchQuery, tuning
from memories.search.rows import RetrievedRow
from memories.search.scoring import score_candidate, score_ceiling


@pytest.mark.parametrize(("max_chars", "short_line", "lines"), [
    (2000, None, 62),  # no memories yet: one line per CONTEXT_CHARS_PER_MEMORY (32)
    (2000, 84.0, 20),  # long English lines: 2,000 / (84 + 16)
    (2000, 10.0, 62),  # short Chinese lines: never more than the count by 32 characters a line
    (400, 200.0, 6),  # never fewer than the floor
    (4000, 1.0, 64),  # never more than the ceiling
])
def test_the_block_counts_its_lines_by_the_users_short_lines(max_chars, short_line, lines):
    assert memory_lines_from(max_chars, short_line, floor=6, per_line=32, ceiling=64, line_chars=16) == lines


@pytest.mark.parametrize("timed", [False, True])
def test_no_candidate_scores_above_its_fusion_times_the_ceiling(timed):
    now = timezone.now().timestamp()
    top = RetrievedRow(id="a", rank_value=0.0, memory_type="fact", importance=1.0, moment=now, arousal="1",
                       episode=True)
    # A "when" question meeting a memory that says when, true in the month and the year it names.
    time_top = tuning.SEARCH_TIME_MENTION_BONUS + 2 * tuning.SEARCH_TIME_PERIOD_BONUS if timed else 0.0
    score, _ = score_candidate(top, 0.1, 0.2, now, "core", time_top)
    assert score == pytest.approx(0.1 * score_ceiling(timed=timed))  # reached, never passed
    assert score_ceiling(timed=True) > score_ceiling(timed=False)


def _ask(user_id: str, **scope) -> WorkingAsk:
    now = timezone.now()
    return WorkingAsk(scope=SearchQuery(query="", user_id=user_id, **scope), limit=10,
                      since=now - timedelta(days=1), entries=True)


def _reads(tenant, user_id: str, **scope):
    return user_reads(tenant, user_id, profile_scope=SearchQuery(query="", user_id=user_id), slots=("diet",),
                      profile_limit=40, working=_ask(user_id, **scope), line_max=160, now=timezone.now())


def test_every_save_enters_working_memory_in_its_scope_through_seed_003s_filter(api, tenant_a):
    api.remember("alice", "Alice bought a red kayak.", agent_id="shop")
    api.remember("alice", "Alice adopted a grey cat.", agent_id="vet")
    api.remember("alice", "Yes.")  # a fragment: seed 003's filter keeps it out (6 characters at least)
    api.remember("bob", "Bob plays chess.")
    reads = _reads(tenant_a, "alice")
    assert [m.text for m in reads.working] == ["Alice adopted a grey cat.", "Alice bought a red kayak."]
    assert [m.text for m in _reads(tenant_a, "alice", agent_id="vet").working] == ["Alice adopted a grey cat."]
    assert reads.short_line is not None and not reads.has_people and not reads.has_traits and reads.name is None
    MemoryItem.objects.filter(user_id="alice").update(created_at=timezone.now() - timedelta(days=2))
    assert _reads(tenant_a, "alice").working == []  # a day later (WORKING_MEMORY_TTL): no longer fresh


def test_a_context_reads_its_user_in_one_statement(api, tenant_a):
    for text in ("Alice is vegetarian.", "Alice works at a bakery in Porto.", "Alice likes long walks."):
        api.remember("alice", text)
    build_context(tenant=tenant_a, request=ContextRequest(query="what does alice eat?", user_id="alice"))
    with CaptureQueriesContext(connection) as queries:
        built = build_context(tenant=tenant_a, request=ContextRequest(query="where does she work?", user_id="alice"))
    # The user (profile, name, people?, traits?, working memory, line lengths), the search, its winners' rows.
    # Savepoints aside: the vector query takes one only inside a caller's transaction (this test's), so that
    # its failure can be answered from keywords; a request runs in autocommit and sends none.
    statements = [q["sql"] for q in queries.captured_queries if not q["sql"].startswith(("SAVEPOINT", "RELEASE"))]
    assert len(statements) == 3, [sql[:80] for sql in statements]
    assert "bakery" in built.text and built.status["working_memory"] == "used"


def _memory(text: str, minutes_ago: int) -> MemoryItem:
    now = timezone.now()
    return MemoryItem(id=uuid.uuid4(), text=text, memory_type="fact", importance=0.5, tags=[], data={},
                      created_at=now - timedelta(minutes=minutes_ago), session_id="")


def test_working_memory_merges_into_the_memory_lines_by_relevance():
    found = [ScoredMemory(memory=_memory(f"Found {i}.", 60 * 24 * 400), score=score, scores={"fusion": score})
             for i, score in enumerate([0.09, 0.05, 0.001])]
    fresh = [_memory("Just said: the user is in Porto.", 1), found[0].memory]
    lines, extra = _memory_and_working_lines(ContextRequest(query="q", user_id="u"), [], found, fresh, [])
    assert [r.memory.text for r in extra] == ["Just said: the user is in Porto."]  # found ones are not repeated
    assert extra[0].scores["working_memory"] is True
    texts = [line.text for line in lines]
    assert {line.section for line in lines} == {"memories"}  # one section, no "Just now" appended after it
    assert texts.index("Just said: the user is in Porto.") < texts.index("Found 2.")  # fresher than the weakest
    assert texts.index("Found 1.") < texts.index("Just said: the user is in Porto.")
