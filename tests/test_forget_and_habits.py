"""Remember what a person would: habits and wishes kept as facts, and "forget that" as a decision that
reaches every fact and episode turn that says it, never as a fact of its own."""

from __future__ import annotations

import pytest

from memories.dedupe import says_forgotten
from memories.models import MemoryHistory, MemoryItem
from memories.writing import FORGOTTEN_TURN
from tests.conftest import converse, end_session


def _facts(user_id: str = "alice") -> list[str]:
    return sorted(MemoryItem.objects.filter(user_id=user_id, status="active", expired_at__isnull=True)
                  .exclude(tags__contains=["episode"]).values_list("text", flat=True))


def _episode_turns(user_id: str = "alice") -> list[str]:
    return [turn["text"] for episode in MemoryItem.objects.filter(user_id=user_id, tags__contains=["episode"],
                                                                  expired_at__isnull=True)
            for turn in episode.data["turns"]]


@pytest.fixture
def episodes_on(settings):
    settings.CONVERSATION_EPISODES = True


def test_forget_in_the_same_conversation_is_a_decision_not_a_fact(api, episodes_on):
    job = converse(api, ["I play the cello in a community orchestra.", "I work as a nurse.",
                         "Actually, please forget that I play the cello."])
    operations = [op["operation"] for op in job["operations"]]
    assert operations.count("DELETE") == 1 and "forget" not in " ".join(_facts()).lower()
    assert not any("cello" in text for text in _facts()), _facts()
    assert any("nurse" in text for text in _facts())
    turns = _episode_turns()
    assert turns.count(FORGOTTEN_TURN) == 2 and not any("cello" in t for t in turns)  # the fact and the request
    assert any("nurse" in t for t in turns)  # the rest of the episode stays
    context = api.post("context", {"user_id": "alice", "query": "What instrument does Alice play?"}).json()
    assert "cello" not in context["context"]


def test_forget_in_a_later_conversation_reaches_every_fact_and_turn(api, episodes_on):
    converse(api, ["I play the cello in a community orchestra.", "I also enjoy hiking."], session_id="s1")
    converse(api, ["I play the cello every evening after work."], session_id="s2")
    episodes_before = MemoryItem.objects.filter(tags__contains=["episode"]).count()
    job = converse(api, ["Please forget that I play the cello."], session_id="s3")
    assert [op["operation"] for op in job["operations"]].count("DELETE") >= 1, job["operations"]
    assert job["counts"].get("turns_forgotten", 0) >= 1
    assert not any("cello" in text for text in _facts()), _facts()
    assert not any("cello" in t for t in _episode_turns()), _episode_turns()
    assert any("hiking" in t for t in _episode_turns())  # an episode is never deleted to forget one sentence
    assert MemoryItem.objects.filter(tags__contains=["episode"], expired_at__isnull=True).count() >= episodes_before
    audit = MemoryHistory.objects.filter(reason__contains="forgotten at the user's request")
    assert audit.exists() and all(row.new_text is None and row.old_text is None for row in audit)  # no content


@pytest.mark.parametrize("forgotten, turn, says", [
    ("User plays the cello", "I play the cello in a community orchestra.", True),
    ("User plays the cello", "I love hiking in the Alps.", False),
    ("Alice plays the cello", "Actually, please forget that I play the cello.", True),
    ("用户会拉大提琴", "我会拉大提琴。", True),
    ("用户会拉大提琴", "我喜欢爬山。", False),
])
def test_which_turns_say_what_was_forgotten(forgotten, turn, says):
    assert says_forgotten(forgotten, turn, names=frozenset({"User", "用户", "Alice"})) is says


@pytest.mark.parametrize("said, kept, tag", [
    ("I always run before work, it clears my head.", "User always runs before work", "habit"),
    ("I have a flat white every morning.", "User has a flat white every morning", "habit"),
    ("Another early morning run today, 6am as usual.", "User had another early morning run today",
     "habit"),
    # A one-off run said with no word of routine is an event (the corpus's labelling rules), not a habit.
    ("Ran 10k this morning at dawn before the office.", "User ran 10k this morning", "event"),
    ("我习惯每天早上跑步。", "用户习惯每天早上跑步", "habit"),
    ("Please keep it brief.", "User wants the assistant to keep it brief", "wish"),
    ("Keep your answers short and direct.", "User wants the assistant to keep the answers short and direct", "wish"),
    ("I'd rather you didn't use emojis.", "User would rather the assistant didn't use emojis", "wish"),
    ("请简短一点回答。", "用户希望助手简短一点回答", "wish"),
])
def test_habits_and_wishes_are_kept_as_facts(api, said, kept, tag):
    job = converse(api, [said])
    assert [op["operation"] for op in job["operations"]] == ["ADD"], job["operations"]
    memory = MemoryItem.objects.get(id=job["operations"][0]["memory_id"])
    assert memory.text.startswith(kept) and tag in memory.tags


@pytest.mark.parametrize(("fact", "trait"), [
    ("User had another early morning run today (November 27, 2026), 6am as usual",
     "Usually has early morning run, 6am"),
    ("User ran 10k this morning at dawn before the office", "Usually runs 10k at dawn before the office"),
    ("User went to the gym again", "Usually goes to the gym"),
    ("User always runs along the river before work, it clears User's head", "Usually runs along the river before work"),
])
def test_a_reported_occasion_becomes_the_habit_it_shows(fact, trait):
    from reflection.reflectors import trait_text

    assert trait_text(fact, "+", "behavior") == trait


def test_a_wish_about_answers_stays_about_the_answers(api):
    job = converse(api, ["I prefer to keep my answers short and to the point."])
    text = job["operations"][0]["text"]
    assert "User's answers" not in text and "the answers" in text


@pytest.mark.django_db(transaction=True)
def test_traits_grow_offline_from_what_people_say_across_sessions(api):
    """Four statements of one habit in four sessions make a behaviour trait; two requests for brief answers
    make one preference trait, worded as the user last asked (seed 004's stages: emerging at two B supports)."""
    habit = ["I always run before work.", "I run before work every day, it clears my head.",
             "Another run before work today, as usual.", "I usually run before work."]
    for n, said in enumerate(habit, start=1):
        job = converse(api, [said, {"role": "assistant", "content": "Nice!"}], session_id=f"run-{n}")
        assert [op["operation"] for op in job["operations"]] == ["ADD"], job["operations"]
        end_session(api, f"run-{n}")
    for n, said in enumerate(["Please keep it brief.", "Keep your answers short please, I like short answers."],
                             start=1):
        converse(api, [said], session_id=f"style-{n}")
        end_session(api, f"style-{n}")
    traits = api.get("users/alice/traits?stage=candidate,emerging,established,core").json()
    running = [t for t in traits["behavior"] if "runs before work" in t["text"]]
    assert len(running) == 1, traits  # one habit, one trait, worded from its best statement
    assert running[0]["stage"] == "emerging" and running[0]["supporting"] == 4
    preferences = [t for t in traits["preference"] if "brief" in t["text"] or "short" in t["text"]]
    assert len(preferences) == 1 and preferences[0]["supporting"] == 2, traits["preference"]
    assert "short" in preferences[0]["text"], preferences  # one wish, in the wording the user said it last
    context = api.post("context", {"user_id": "alice", "query": "What does Alice do before work?"}).json()
    assert running[0]["text"] in context["context"]


@pytest.mark.parametrize("said, forgotten", [
    ("Actually, please forget that I play the cello.", "User plays the cello"),
    ("Forget that I have a flat white every morning.", "User has a flat white every morning"),
    ("忘掉我会拉大提琴这件事。", "用户会拉大提琴"),
    ("其实，别记住我喜欢爵士乐。", "用户喜欢爵士乐"),
])
def test_forget_requests_say_what_to_forget(said, forgotten):
    from datetime import UTC, datetime

    from memories.extraction import Message, RulesExtractor

    statements = RulesExtractor().extract(messages=[Message(index=0, role="user", content=said)],
                                          speakers={"User": "u"}, existing=[], now=datetime.now(UTC))
    assert [(s.text, s.forget) for s in statements] == [(forgotten, True)]


def test_a_chinese_episode_names_its_speakers_in_chinese(api, episodes_on):
    converse(api, ["我在上海瑞金医院当护士。", {"role": "assistant", "content": "好的，记住了。"}], session_id="zh")
    episode = MemoryItem.objects.get(tags__contains=["episode"])
    assert [turn["speaker"] for turn in episode.data["turns"]] == ["用户", "助手"]
    assert "User" not in episode.text and "assistant" not in episode.text


def test_habits_and_wishes_on_the_labelled_set():
    """tests/samples/habits_and_wishes.tsv: habits and wishes as people say them (English and Chinese) and
    near misses (questions, one-off requests, hypotheticals, small talk). Per category: recall (a kept
    utterance leaves a behaviour or preference fact) >= 0.9, junk (a near miss leaves one) <= 0.05."""
    from datetime import UTC, datetime
    from pathlib import Path

    from memories.extraction import Message, RulesExtractor
    from tests.figures import record

    rows = [line.split("\t") for line in (Path(__file__).parent / "samples" / "habits_and_wishes.tsv")
            .read_text(encoding="utf-8").splitlines() if line and not line.startswith("#")]
    assert len(rows) >= 200
    extractor = RulesExtractor()
    by_category: dict[str, list[bool]] = {}
    for category, _keep, text in rows:
        statements = extractor.extract(messages=[Message(index=0, role="user", content=text)],
                                       speakers={"User": "u"}, existing=[], now=datetime.now(UTC))
        by_category.setdefault(category, []).append(any({"habit", "wish"} & set(s.tags) for s in statements))
    for category, hits in sorted(by_category.items()):
        share = sum(hits) / len(hits)
        record(f"habits and wishes: {category} {'junk' if category.startswith('near') else 'recall'}",
               f"{share:.2f} of {len(hits)}")
        if category.startswith("near"):
            assert share <= 0.05, category
        else:
            assert share >= 0.9, category


@pytest.mark.parametrize(("text", "confidence", "acts"), [
    ("Forget that I'm learning Portuguese.", 0.2, True),  # said outright: whatever the model's certainty
    ("scrub anything you've got on my ex", 0.9, True), ("don't keep a record of my debts please", 0.6, True),
    ("the weight thing, no need to hold onto it, right?", 0.95, True), ("当我没说，跳槽那个", 0.8, True),
    ("我信什么教这个不需要你记", 0.94, True), ("我的 income 信息 no need to store 吧", 0.99, True),
    ("scrub anything you've got on my ex", 0.3, False),  # a request's words, but the model barely read one
    ("if you need to restart it", 0.41, False), ("I'll remember it myself.", 1.0, False),
    ("I forgot my umbrella at the office.", 0.66, False), ("I keep forgetting my keys.", 0.9, False),
    ("Don't forget to water the plants on Friday.", 0.9, False),
    ("The delete key on my laptop is broken.", 0.95, False),
    ("I never remember birthdays", 0.86, False), ("我忘了带伞。", 0.9, False), ("别忘了提醒我开会。", 0.95, False),
])
def test_a_forget_acts_only_on_a_confident_reading(text, confidence, acts):
    """Issue 55. On the intent corpus (memories/extraction_data/intents) 312 of the 313 forget requests
    the model reads as forgets keep the reading, and none of the 20 other clauses it reads as forgets do."""
    from memories.extraction.forget import forget_is_confident

    assert forget_is_confident(text, confidence) is acts


def test_a_misread_forget_neither_blanks_its_turn_nor_lets_a_password_through(api, episodes_on):
    """Issue 55: "Login for the NAS is admin / Winter2024! if you need to restart it" was stored as an
    active fact with the password while its turn was replaced by the forget marker."""
    from memories.models import Candidate

    converse(api, ["I play the cello in a community orchestra."], session_id="s0")
    job = converse(api, ["Login for the NAS is admin / Winter2024! if you need to restart it",
                         "I forgot my umbrella at the office.", "I'll remember it myself."])
    assert "DELETE" not in [op["operation"] for op in job["operations"]], job["operations"]
    assert not MemoryItem.objects.filter(user_id="alice", text__contains="Winter2024").exists()
    held = Candidate.objects.filter(user_id="alice", status="pending")
    assert any("secret" in c.reason_detail for c in held), [(c.text, c.reason_detail) for c in held]
    turns = _episode_turns()
    assert FORGOTTEN_TURN not in turns and not any("Winter2024" in t for t in turns), turns
    assert any("[secret withheld]" in t for t in turns) and any("umbrella" in t for t in turns), turns
    assert any("cello" in text for text in _facts())


def test_a_forget_that_takes_nothing_blanks_nothing(api, episodes_on):
    converse(api, ["I work as a nurse at the city hospital."], session_id="s1")
    job = converse(api, ["Please forget that I play the trombone.", "I also enjoy hiking."], session_id="s2")
    assert "DELETE" not in [op["operation"] for op in job["operations"]], job["operations"]
    assert FORGOTTEN_TURN not in _episode_turns() and any("nurse" in t for t in _facts())


@pytest.mark.parametrize(("said", "forget", "word"), [
    ("Maybe I'll move to Berlin next year, not sure yet.", "Forget that I might move to Berlin.", "Berlin"),
    ("I was diagnosed with diabetes last year.", "Forget that I was diagnosed with diabetes.", "diabetes")])
def test_a_forget_of_a_held_statement_closes_it_and_takes_it_from_the_episode_and_the_block(
        api, episodes_on, said, forget, word):
    """Issue 55: a forget of something held for review was a NOOP: the candidate stayed pending with its
    text, and the episode and /context kept it."""
    from memories.models import Candidate

    held = converse(api, [said, "I work as a nurse at the city hospital."], session_id="s1")
    review = [op for op in held["operations"] if op["operation"] == "REVIEW"]
    assert review, held["operations"]
    converse(api, [forget], session_id="s2")
    candidate = Candidate.objects.get(id=review[0]["candidate_id"])
    assert candidate.status == "rejected" and word not in candidate.text, candidate.text
    turns = _episode_turns()
    assert not any(word in t for t in turns) and FORGOTTEN_TURN in turns and any("nurse" in t for t in turns)
    context = api.post("context", {"user_id": "alice", "query": f"{word} nurse", "max_chars": 4000}).json()
    assert word not in str(context) and "nurse" in context["context"], context
