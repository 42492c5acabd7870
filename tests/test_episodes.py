"""Episodes: each speaker's original turns of a session, kept beside the facts."""

import pytest

from memories import ingestion
from memories.models import MemoryItem, MemorySource
from memories.vocabulary import Tag
from memories.writing import episode_lines
from memories.writing.episodes import episode_groups
from reflection.engine import memories_since_watermark
from tests.conftest import converse


@pytest.fixture(autouse=True)
def episodes_on(settings):
    settings.CONVERSATION_EPISODES = True


def _episodes(user_id="alice"):
    return list(MemoryItem.objects.filter(user_id=user_id, tags__contains=[Tag.EPISODE], expired_at__isnull=True)
                .order_by("created_at"))


def test_a_conversation_keeps_each_speakers_turns_as_an_episode(api):
    job = converse(api, [
        {"role": "user", "name": "Ann", "content": "I adopted a cat. My email is ann@example.com."},
        {"role": "assistant", "content": "Congratulations!"},
        {"role": "user", "name": "Ben", "content": "We should visit her."},
    ], user_id="ann", session_id="s-1", participants={"Ann": "ann", "Ben": "ben"})
    (ann,) = _episodes("ann")
    (ben,) = _episodes("ben")
    assert ann.memory_type == "episodic" and ann.text.startswith("Cat")  # a title made of what Ann said
    assert ann.data["title"].startswith("Cat") and "cat" in ann.data["keywords"]
    assert ann.data["summary"] == "Ann adopted a cat." and ann.text.endswith("\nSummary: Ann adopted a cat.")
    assert "Ann: I adopted a cat." in ann.text and "assistant: Congratulations!" in ann.text
    assert "ann@example.com" not in ann.text and "[email withheld]" in ann.text  # raw turns skip review
    assert "Ben: We should visit her." in ben.text and "Ann" not in ben.text.split("\n", 1)[1]
    assert [t["index"] for t in ann.data["turns"]] == [0, 1] and ann.data["turns"][0]["job_id"] == job["job_id"]
    assert MemorySource.objects.get(item=ann).message_indices == [0, 1]
    assert "episode" not in job["counts"]  # episodes are not extraction operations


def test_later_turns_of_a_session_grow_its_episode_then_start_a_new_part(api, monkeypatch):
    converse(api, ["I like tea."], session_id="s-2")
    converse(api, ["I went to Rome in May."], session_id="s-2")
    (episode,) = _episodes()
    assert "I like tea." in episode.text and "I went to Rome in May." in episode.text and episode.version == 2
    monkeypatch.setattr(ingestion, "EPISODE_MAX_CHARS", len(episode_lines(episode.data["turns"])) + 10)
    converse(api, ["I started a new job at the hospital today."], session_id="s-2")
    first, second = _episodes()
    assert first.id == episode.id and "(part 2)" in second.text.splitlines()[0]
    converse(api, ["Another session entirely."], session_id="s-3")
    assert len(_episodes()) == 3


@pytest.mark.parametrize("sizes, room, limit, expected", [
    ([10, 10], 0, 100, [[], [0, 1]]),  # no current episode: a new part takes both
    ([10, 10], 15, 100, [[0], [1]]),  # the current one has room for the first only
    ([10, 10], 50, 100, [[0, 1]]),  # both fit the current one
    ([150], 0, 100, [[], [0]]),  # an oversized turn still gets a part of its own
    ([60, 60, 60], 0, 100, [[], [0], [1], [2]]),
])
def test_episode_grouping(sizes, room, limit, expected):
    turns = [{"speaker": "A", "text": "x" * (size - 4), "at": "", "index": i} for i, size in enumerate(sizes)]
    for turn in turns:  # the line is "[] A: xxx": its size as given
        assert len(episode_lines([turn])) + 1 == len("[] A: ") + len(turn["text"]) + 1
    groups = episode_groups(turns, room, limit)
    assert [[t["index"] for t in group] for group in groups] == expected


def test_a_fact_ranks_above_the_episode_it_came_from(api):
    converse(api, ["I am allergic to peanuts.", "The weather is nice.", "I went to the market."])
    results = api.search("alice", "allergic to peanuts", limit=5)
    kinds = ["episode" if Tag.EPISODE in r["memory"]["tags"] else "fact" for r in results]
    assert kinds[0] == "fact" and "episode" in kinds
    assert results[0]["memory"]["text"] == "User is allergic to peanuts"


def test_episodes_feed_no_traits_and_go_with_their_agent(api, tenant_a):
    converse(api, ["I love jazz."], agent_id="dj")
    assert _episodes() and not any(Tag.EPISODE in m.tags for m in memories_since_watermark(tenant_a, "alice"))
    api.delete("users/alice/memories?agent_id=dj")
    assert _episodes() == []


@pytest.mark.parametrize("scored, jobs, expected_order", [
    # (score, id) pairs; the episode E holds job j1
    ([(0.9, "E"), (0.5, "F1")], {"E": {"j1"}, "F1": {"j1"}}, ["F1", "E"]),  # its own fact: below it
    ([(0.9, "E"), (0.5, "F2")], {"E": {"j1"}, "F2": {"j2"}}, ["E", "F2"]),  # another episode's fact: unchanged
    ([(0.4, "E"), (0.5, "F1")], {"E": {"j1"}, "F1": {"j1"}}, ["F1", "E"]),  # already below
    ([(0.9, "E"), (0.6, "F1"), (0.3, "F3")], {"E": {"j1", "j3"}, "F1": {"j1"}, "F3": {"j3"}}, ["F1", "E", "F3"]),
])
def test_an_episode_ranks_below_the_facts_from_its_turns(scored, jobs, expected_order):
    from memories.search import demote_episodes

    out = demote_episodes([(score, memory_id, {}) for score, memory_id in scored], {"E"}, jobs)
    assert [memory_id for _, memory_id, _ in sorted(out, key=lambda e: -e[0])] == expected_order
