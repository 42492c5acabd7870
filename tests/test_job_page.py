"""A conversation job's page (issue 56): which turns a forget blanks (dedupe.turns_forgotten) and where
each operation is shown (selectors.operations_by_turn), as tables; then the page itself, served."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from memories.dedupe import turns_forgotten
from memories.models import ConversationJob, MemoryItem
from memories.selectors import operations_by_turn
from memories.writing import FORGOTTEN_TURN

MARCUS = ["Hi, I'm Marcus. I live in Leeds and I work as a nurse.",
          "Nice to meet you, Marcus.",
          "My brother Tom just started at Manchester university.",
          "Actually I moved to York last month.",
          "Please forget that my brother is at university, he'd rather I didn't share that."]
NAMES = frozenset({"Marcus", "marcus", "User"})


@pytest.mark.parametrize(("forgotten", "said_in", "blanked"), [
    # Took nothing: nothing is blanked, not even the request (issue 56: a turn was marked when nothing went).
    ([], {4}, set()),
    ([], set(), set()),
    # Took the brother fact: the turn it was read from, and the request that repeats it; Leeds stays.
    (["Marcus's brother is at university", "Marcus's brother Tom just started at Manchester university"],
     {2, 4}, {2, 4}),
    # The same without the sources (a job from before they were kept): the words find both turns.
    (["Marcus's brother is at university", "Marcus's brother Tom just started at Manchester university"],
     set(), {2, 4}),
    # The request's words alone reach the request and not the fact said in other words: the memory's
    # own words are what find the turn that said it.
    (["Marcus's brother is at university, he'd rather I didn't share that"], set(), {4}),
    # A turn named by its source is blanked even when it shares no words (the sentence was reworded).
    (["Marcus works in healthcare"], {0}, {0}),
    # Nothing else is blanked for a forget about something else.
    (["Marcus plays the cello"], set(), set()),
])
def test_which_turns_a_forget_blanks(forgotten, said_in, blanked):
    assert turns_forgotten(MARCUS, forgotten=forgotten, said_in=said_in, names=NAMES) == blanked


def test_which_turns_a_forget_blanks_in_chinese():
    turns = ["我叫小林，住在杭州。", "我弟弟在南京大学读书。", "请忘记我弟弟在南京读书的事。"]
    assert turns_forgotten(turns, forgotten=["小林的弟弟在南京大学读书"], said_in={2}, names=frozenset({"小林"})) \
        == {1, 2}
    assert turns_forgotten(turns, forgotten=[], said_in={2}) == set()


def op(operation: str, key: str = "", turns=None, candidate: bool = False) -> dict:
    entry: dict = {"operation": operation, "text": key, "candidate_id" if candidate else "memory_id": key or None}
    if turns is not None:
        entry["turns"] = turns
    return entry


@pytest.mark.parametrize(("operations", "sources", "by_turn", "unplaced"), [
    # Recorded turns win: the INVALIDATE and its ADD beside the turn that moved, the DELETE beside the request.
    ([op("ADD", "leeds", [0]), op("INVALIDATE", "leeds", [3]), op("ADD", "york", [3]), op("DELETE", "tom", [4])],
     {"leeds": [0], "york": [3], "tom": [2]}, {0: [0], 3: [1, 2], 4: [3]}, []),
    # An older job (no turns recorded): a write by its memory's sources; an INVALIDATE by the write after it.
    ([op("ADD", "leeds"), op("INVALIDATE", "leeds"), op("ADD", "york")],
     {"leeds": [0], "york": [3]}, {0: [0], 3: [1, 2]}, []),
    # ... a DELETE of an older job names no turn; nor does a write whose memory cites none.
    ([op("DELETE", "tom"), op("ADD", "nowhere")], {"tom": [2]}, {}, [0, 1]),
    # A review candidate by its own source turns; an INVALIDATE held with it goes beside the same turns.
    ([op("INVALIDATE", "leeds"), op("REVIEW", "c1", candidate=True)], {"c1": [1, 2], "leeds": [0]},
     {1: [0, 1], 2: [0, 1]}, []),
    # A statement drawn from two turns shows beside each; an empty recorded list is unplaced.
    ([op("ADD", "both", [0, 2]), op("NOOP", "", [])], {}, {0: [0], 2: [0]}, [1]),
    ([], {}, {}, []),
])
def test_where_each_operation_is_shown(operations, sources, by_turn, unplaced):
    assert operations_by_turn(operations, sources) == (by_turn, unplaced)


@pytest.fixture
def episodes_on(settings):
    settings.CONVERSATION_EPISODES = True


def test_the_job_page_shows_each_turn_once_and_blanks_only_what_went(api, operator, tenant_a, episodes_on):
    from tests.conftest import converse

    job = converse(api, [{"role": "user", "name": "Marcus", "content": text} if i != 1 else
                         {"role": "assistant", "content": text} for i, text in enumerate(MARCUS)], user_id="marcus")
    stored = ConversationJob.objects.get(id=job["job_id"])
    assert [m["content"] == FORGOTTEN_TURN for m in stored.messages] == [False, False, True, False, True]
    assert {op["operation"]: op["turns"] for op in stored.operations if op["operation"] != "ADD"} == \
        {"INVALIDATE": [3], "DELETE": [4]}
    assert stored.counts["turns_forgotten"] >= 2
    assert MemoryItem.objects.filter(user_id="marcus", tags__contains=["episode"]).exists()

    admin = Client()
    admin.force_login(operator("rita", "reviewers", tenant=tenant_a))
    page = admin.get(reverse("admin:memories_conversationjob_change", args=[stored.id])).content.decode()
    assert page.count("I moved to York last month") == 1 and "Manchester" not in page
    assert 'class="job-counts"' in page and "{&quot;ADD" not in page and '{"ADD' not in page
    assert page.count("job-op-invalidate") == 1 and page.count("job-op-delete") >= 1
    listed = admin.get(reverse("admin:memories_conversationjob_changelist")).content.decode()
    assert "<h1>Conversation jobs</h1>" in listed and "{&quot;ADD" not in listed
