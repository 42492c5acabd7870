"""Seed 002's episode units: one episode per participant, from their own perspective (their turns and what
was said to them), a title, summary, subject and keywords offline, a {title, content} narrative per
participant with an LLM, the facts drawn listed on the unit, and erasing one participant leaves none of
their words in anyone's episode."""

import json
from datetime import date

import pytest
from django.test import Client
from django.urls import reverse

from memories.extraction.episode_unit import Seen, addressed, episode_digest, perspectives, read_narrative
from memories.models import MemoryHistory, MemoryItem, MemorySource, MemoryVector
from memories.vocabulary import Tag
from tests.conftest import converse
from tests.fake_openai import chat_reply
from tests.test_llm_extraction import CHAT, item, memories_reply


@pytest.fixture
def llm(settings, fake_openai):
    """The LLM path, through the real openai client against the scripted server (as test_llm_extraction)."""
    settings.EXTRACTION_PROVIDER = "llm"
    settings.LLM_BASE_URL = fake_openai.base_url
    settings.LLM_MODEL = "test-model"
    settings.LLM_TIMEOUT = 5
    return fake_openai


@pytest.mark.parametrize("text, name, expected", [
    ("Ann, I booked the trip.", "Ann", True),
    ("Hey Ann! Good to see you.", "Ann", True),
    ("Thanks Ann.", "Ann", True),
    ("so @ann what do you think", "Ann", True),
    ("小林，你明天来吗？", "小林", True),
    ("I told Ann about it.", "Ann", False),  # named, not spoken to
    ("Annabel, hi.", "Ann", False),
    ("Ann", "", False),
])
def test_a_turn_is_said_to_the_participant_it_names_at_its_opening(text, name, expected):
    assert addressed(text, name) is expected


@pytest.mark.parametrize("turns, expected", [
    # one user and the assistant: everything is theirs
    ([("u", "I like tea."), ("", "Noted.")], {"u": [0, 1]}),
    # the assistant's turn goes to whom it answers (the last user turn before it)
    ([("a", "I like tea."), ("b", "I like coffee."), ("", "Both noted.")], {"a": [0], "b": [1, 2]}),
    # before any user turn: the job's user
    ([("", "Welcome!"), ("b", "Hi, I'm new.")], {"a": [0], "b": [1]}),
    # a turn addressed by name is also the addressee's; one said to the room stays with its speaker
    ([("a", "Bea, my sister moved to Lisbon."), ("b", "Cy is learning the theremin."), ("c", "@Ann thanks")],
     {"a": [0, 2], "b": [0, 1], "c": [2]}),
])
def test_who_sees_which_turn(turns, expected):
    seen = [Seen(i, speaker, text) for i, (speaker, text) in enumerate(turns)]
    assert perspectives(seen, {"Ann": "a", "Bea": "b", "Cy": "c"}, "a") == expected


def test_an_offline_summary_is_the_owners_news_in_the_third_person_without_questions_or_compliments():
    day = date(2023, 5, 8)
    digest = episode_digest([
        ("Hey Mel! Good to see you! How have you been?", day),
        ("I went to a LGBTQ support group yesterday and it was so powerful.", day),
        ("You're such a great painter, Mel!", day),
        ("I'm keen on counseling or working in mental health.", day),
    ], name="Caroline", others=["Melanie"])
    assert digest.summary == ("Caroline went to a LGBTQ support group yesterday (7 May 2023) and it was so powerful. "
                              "Caroline is keen on counseling or working in mental health.")
    assert "LGBTQ support group" in digest.keywords and digest.subject == digest.keywords[0]
    assert digest.title.endswith("(8 May 2023)") and digest.language == "en"
    assert "mel" not in [k.casefold() for k in digest.keywords]  # the listener's name is no topic


def test_a_chinese_conversation_gets_a_chinese_title_and_summary():
    digest = episode_digest([("我上周搬到了杭州，在西湖边租了一套房子。", date(2024, 3, 2)), ("你好！", None)],
                            name="小林", others=["助手"])
    assert digest.language == "zh" and digest.title.endswith("（2024年3月2日）")
    assert digest.summary.startswith("小林上周搬到了杭州") and "杭州" in digest.keywords


@pytest.mark.parametrize("reply, expected", [
    ('{"title": "Kyoto trip", "content": "Ann booked a trip."}', ("Kyoto trip", "Ann booked a trip.")),
    ('```json\n{"title": "T", "content": "C"}\n```', ("T", "C")),
    ("Ann booked a trip.", ("", "Ann booked a trip.")),  # plain prose: the content
    ('{"memories": []}', ("", "")),  # no narrative at all
])
def test_the_models_narrative_is_read(reply, expected):
    assert read_narrative(reply) == expected


THREE = [
    {"role": "user", "name": "Ann", "content": "Ben, I finally booked the trip to Kyoto for October."},
    {"role": "assistant", "content": "That sounds lovely, Ann!"},
    {"role": "user", "name": "Ben", "content": "Ann, my sister Oksana moved to Lisbon last week."},
    {"role": "user", "name": "Cara", "content": "I started learning the theremin at the Zanzibar music school."},
    {"role": "user", "name": "Ben", "content": "Cara, I can lend you my grandfather's Bakelite radio."},
    {"role": "assistant", "content": "Ben, that is generous."},
]
BENS_WORDS = ("Oksana", "Lisbon", "Bakelite", "grandfather")


def _columns(row) -> str:
    """Every text, JSON and array column of a row, as one string."""
    return " ".join(json.dumps(getattr(row, f.attname), default=str) for f in row._meta.concrete_fields
                    if f.get_internal_type() in ("TextField", "CharField", "JSONField", "ArrayField"))


def _everything_of(user_id: str) -> str:
    """All a user's memories hold: their rows, their history, vectors and sources."""
    items = MemoryItem.objects.filter(user_id=user_id)
    ids = list(items.values_list("id", flat=True))
    rows = [*items, *MemoryHistory.objects.filter(memory_id__in=ids), *MemoryVector.objects.filter(item_id__in=ids),
            *MemorySource.objects.filter(item_id__in=ids)]
    return " ".join(_columns(row) for row in rows)


@pytest.fixture
def three_way(api, llm, settings):
    """Ann, Ben and Cara talk with the assistant; the model extracts one fact each and narrates each view."""
    settings.CONVERSATION_EPISODES = True
    llm.script(CHAT, memories_reply(item("Ann booked a trip to Kyoto for October.", subject="Ann"),
                                    item("Ben's sister Oksana moved to Lisbon.", subject="Ben", source_messages=[2]),
                                    item("Cara is learning the theremin.", subject="Cara", source_messages=[3])))
    llm.script(CHAT,  # narratives in user-id order: ann, ben, cara
               chat_reply(json.dumps({"title": "Kyoto and Lisbon", "content": "Ann told Ben she booked Kyoto for "
                                      "October; Ben told Ann his sister Oksana moved to Lisbon."})),
               chat_reply(json.dumps({"title": "Kyoto, a Bakelite radio", "content": "Ben heard Ann booked Kyoto "
                                      "and offered Cara his grandfather's Bakelite radio."})),
               chat_reply(json.dumps({"title": "Theremin lessons", "content": "Cara started the theremin at the "
                                      "Zanzibar music school; Ben offered her his grandfather's Bakelite radio."})))
    job = converse(api, THREE, user_id="ann", session_id="s-3", participants={"Ann": "ann", "Ben": "ben",
                                                                               "Cara": "cara"})
    assert job["status"] == "done", job
    return job


def _episode(user_id: str) -> MemoryItem:
    return MemoryItem.objects.get(user_id=user_id, tags__contains=[Tag.EPISODE])


def test_each_participant_gets_their_own_view_with_its_narrative_and_facts(api, three_way, llm):
    ann, ben, cara = _episode("ann"), _episode("ben"), _episode("cara")
    assert "Oksana" in ann.text and "theremin" not in ann.text  # said to Ann / said to the room
    assert "Kyoto" in ben.text and "generous" in ben.text and "lovely" not in ben.text
    assert "Bakelite" in cara.text and "Kyoto" not in cara.text
    assert ann.text.startswith("Kyoto and Lisbon · s-3\n") and ann.data["narratives"][0]["title"] == "Kyoto and Lisbon"
    assert ann.data["summary"] == "Ann finally booked the trip to Kyoto for October."  # her own words only
    assert "Kyoto" in ann.data["keywords"] and ann.data["subject"] and ann.data["voices"] == ["ben"]
    fact = MemoryItem.objects.get(user_id="ann", memory_type="fact")
    assert ann.data["facts"] == [str(fact.id)]
    narrated = [r[1]["messages"][1]["content"] for r in llm.requests if "one participant's episode" in
                r[1]["messages"][0]["content"]]
    assert len(narrated) == 3 and "theremin" not in narrated[0]  # the model read Ann's view only
    shown = api.get(f"memories/{ann.id}").json()["episode"]
    assert shown["title"] == "Kyoto and Lisbon" and shown["facts"] == [str(fact.id)]
    assert shown["narrative"].startswith("Ann told Ben") and shown["summary"] == ann.data["summary"]


def test_erasing_a_participant_leaves_none_of_their_words_in_anyone_elses_episode(api, three_way):
    before = _everything_of("ann") + _everything_of("cara")
    assert all(word in before for word in BENS_WORDS)  # they were there: the test can fail
    response = api.delete("users/ben/memories")
    assert response.status_code == 200 and response.json()["counts"]["heard_in_episodes"] == 2
    after = _everything_of("ann") + _everything_of("cara")
    assert not [word for word in BENS_WORDS if word in after], after
    assert not MemoryItem.objects.filter(user_id="ben").exists()
    ann, cara = _episode("ann"), _episode("cara")
    assert "Kyoto" in ann.text and ann.data["narratives"] == [] and ann.data["voices"] == []
    assert ann.text.startswith(ann.data["title"]) and ann.text.endswith("Summary: " + ann.data["summary"])
    assert "theremin" in cara.text  # the rest of each episode stays
    for user_id, query in (("ann", "Oksana moved to Lisbon"), ("cara", "grandfather's Bakelite radio")):
        found = " ".join(r["memory"]["text"] for r in api.search(user_id, query, limit=20))
        assert not [word for word in BENS_WORDS if word in found]


def test_an_episode_written_before_units_loses_the_shared_narrative_of_a_conversation_the_erased_spoke_in(
        api, settings):
    """Before units, one narrative of the whole conversation was copied into every participant's episode:
    erasing a participant takes it from the others' episodes of the jobs they spoke in."""
    settings.CONVERSATION_EPISODES = True
    converse(api, [{"role": "user", "name": "Ann", "content": "I booked the trip to Kyoto for October."},
                   {"role": "user", "name": "Ben", "content": "My sister Oksana moved to Lisbon."}],
             user_id="ann", session_id="s-old", participants={"Ann": "ann", "Ben": "ben"})
    ann = _episode("ann")
    legacy = {**ann.data, "narratives": ["Ann booked Kyoto; Ben's sister Oksana moved to Lisbon."]}
    legacy.pop("voices")
    legacy["turns"] = [{k: v for k, v in t.items() if k != "speaker_id"} for t in legacy["turns"]]
    MemoryItem.objects.filter(id=ann.id).update(  # the shape an episode had before units
        data=legacy, text=f"Conversation s-old\n{ann.text.split(chr(10))[1]}\nSummary: {legacy['narratives'][0]}")
    assert "Oksana" in _everything_of("ann")
    assert api.delete("users/ben/memories").json()["counts"]["heard_in_episodes"] == 1
    after = _episode("ann")
    assert "Oksana" not in _everything_of("ann") and "Kyoto" in after.text and after.data["narratives"] == []


def test_the_admin_shows_an_episodes_unit(three_way, operator):
    reviewer = Client()
    reviewer.force_login(operator("rita", "reviewers"))
    ann = _episode("ann")
    page = reviewer.get(reverse("admin:memories_memoryitem_change", args=[ann.id])).content.decode()
    fact = MemoryItem.objects.get(user_id="ann", memory_type="fact")
    assert "Episode unit" in page and "Kyoto and Lisbon" in page and ann.data["summary"] in page
    assert reverse("admin:memories_memoryitem_change", args=[fact.id]) in page  # the facts drawn from it
    page = reviewer.get(reverse("admin:memories_memoryitem_change", args=[fact.id])).content.decode()
    assert "Episode unit" not in page
