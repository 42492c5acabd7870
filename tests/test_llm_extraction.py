"""The LLM extractor through the real `openai` client against a local scripted server."""

import json

import pytest

from memories.models import ConversationJob, MemoryItem
from tests.conftest import converse
from tests.fake_openai import Reply, chat_reply

CHAT = "/v1/chat/completions"


def memories_reply(*items) -> Reply:
    return chat_reply(json.dumps({"memories": list(items)}))


def item(text, subject="Alice", **fields):
    return {"subject": subject, "text": text, "type": "fact", "importance": 0.7, "confidence": 0.9,
            "tags": ["t"], "source_messages": [0], **fields}


@pytest.fixture
def llm(settings, fake_openai):
    settings.EXTRACTION_PROVIDER = "llm"
    settings.LLM_BASE_URL = fake_openai.base_url
    settings.LLM_MODEL = "test-model"
    settings.LLM_TIMEOUT = 0.5
    settings.EXTRACTION_MAX_RETRIES = 2
    settings.EXTRACTION_RETRY_BACKOFF = 0.01
    return fake_openai


ALICE = [{"role": "user", "name": "Alice", "content": "I adopted a beagle called Pixel last week."}]


def test_it_saves_what_the_model_extracts(api, llm):
    llm.script(CHAT, memories_reply(item("Alice adopted a beagle called Pixel last week (May 7, 2023).",
                                         type="episodic", valid_at="2023-05-07")))
    job = converse(api, ALICE)
    assert job["status"] == "done" and job["extractor"] == "llm" and job["counts"] == {"ADD": 1}
    memory = MemoryItem.objects.get()
    assert memory.memory_type == "episodic" and memory.valid_at.date().isoformat() == "2023-05-07"
    path, payload = llm.requests[-1]
    assert payload["model"] == "test-model" and payload["response_format"] == {"type": "json_object"}
    system, user = payload["messages"]
    assert "third person" in system["content"] and "- Alice" in user["content"]
    assert "[0]" in user["content"] and "beagle" in user["content"]


def test_existing_memories_are_shown_and_a_named_contradiction_invalidates(api, llm):
    old = api.remember("alice", "Alice works at Initech.")
    llm.script(CHAT, memories_reply(item("Alice works at Globex.", contradicts=old["id"])))
    job = converse(api, [{"role": "user", "name": "Alice", "content": "I quit Initech, I'm at Globex now."}])
    assert [op["operation"] for op in job["operations"]] == ["INVALIDATE", "ADD"]
    assert old["id"] in llm.requests[-1][1]["messages"][1]["content"]
    assert MemoryItem.objects.get(id=old["id"]).invalid_at is not None


def test_malformed_items_are_dropped_one_by_one(api, llm):
    llm.script(CHAT, memories_reply(
        item("Alice likes jazz.", importance="very", confidence=7),
        {"subject": "Alice", "text": ""},
        "not an object",
        item("Mallory likes wine.", subject="Mallory"),
    ))
    job = converse(api, ALICE)
    assert job["status"] == "done" and job["counts"] == {"ADD": 1}
    memory = MemoryItem.objects.get()
    assert memory.importance == 0.5 and memory.confidence == 1.0  # repaired: default and clamped
    assert sum("dropped" in w for w in job["warnings"]) == 3


def test_json_inside_prose_is_repaired(api, llm):
    llm.script(CHAT, chat_reply('Sure! ```json\n{"memories": [{"subject": "Alice", "text": "Alice owns a beagle.", '
                                '"importance": 0.8, "confidence": 0.9}]}\n```'))
    assert converse(api, ALICE)["counts"] == {"ADD": 1}


@pytest.mark.parametrize("failure", [
    chat_reply("this is not json at all"),
    Reply(raw="<html>502 Bad Gateway</html>"),
    Reply(status=500, body={"error": {"message": "boom"}}),
    Reply(status=429, body={"error": {"message": "slow down"}}),
    Reply(delay=1.5, body={}),
])
def test_a_transient_failure_is_retried(api, llm, failure):
    llm.script(CHAT, failure, memories_reply(item("Alice owns a beagle named Pixel.")))
    job = converse(api, ALICE)
    assert job["status"] == "done" and job["attempts"] == 2 and job["counts"] == {"ADD": 1}


def test_after_the_last_try_the_job_fails_and_can_be_rerun(api, llm):
    llm.script(CHAT, *[Reply(status=429, body={"error": {"message": "slow down"}})] * 3)
    job = converse(api, ALICE)
    assert job["status"] == "failed" and "429" in job["error"] and job["attempts"] == 3
    assert MemoryItem.objects.count() == 0
    assert ConversationJob.objects.get(id=job["job_id"]).messages[0]["content"].startswith("I adopted")
    llm.script(CHAT, memories_reply(item("Alice owns a beagle named Pixel.")))
    response = api.post(f"jobs/{job['job_id']}/retry")
    assert response.status_code == 202
    rerun = api.get(f"jobs/{job['job_id']}").json()
    assert rerun["status"] == "done" and rerun["counts"] == {"ADD": 1}
    assert api.post(f"jobs/{job['job_id']}/retry").status_code == 400  # done jobs are not re-run


def test_a_client_error_is_not_retried(api, llm):
    llm.script(CHAT, Reply(status=400, body={"error": {"message": "bad request"}}))
    job = converse(api, ALICE)
    assert job["status"] == "failed" and job["attempts"] == 1 and "400" in job["error"]


def test_the_model_cannot_file_one_participants_memory_under_another(api, llm):
    llm.script(CHAT, memories_reply(item("Alice loves sailing.", subject="Alice"),
                                    item("Bob is allergic to shellfish.", subject="Bob")))
    converse(api, [{"role": "user", "name": "Alice", "content": "I love sailing."},
                   {"role": "user", "name": "Bob", "content": "I'm allergic to shellfish."}],
             user_id="alice-id", participants={"Alice": "alice-id", "Bob": "bob-id"})
    def texts(user_id):
        return list(MemoryItem.objects.filter(user_id=user_id).values_list("text", flat=True))

    assert texts("alice-id") == ["Alice loves sailing."]
    assert texts("bob-id") == ["Bob is allergic to shellfish."]


def test_the_model_can_ask_to_forget_and_the_prompt_carries_the_rules(api, llm):
    api.remember("alice", "Alice smokes.")
    llm.script(CHAT, memories_reply(item("Alice smokes.", forget=True)))
    job = converse(api, [{"role": "user", "name": "Alice", "content": "I don't smoke anymore."}])
    assert [op["operation"] for op in job["operations"]] == ["DELETE"]
    forgotten = MemoryItem.objects.get(user_id="alice", status="archived")
    assert "smoke" not in forgotten.text  # forget leaves nothing readable (writing.memory_forget's marker)
    system = llm.requests[-1][1]["messages"][0]["content"]
    assert '"forget": true' in system and "用户" in system and "about-other" in system
    assert "I'm so proud of you" in system and "[shares a photo" in system  # what is not about the speaker


def test_with_an_llm_an_episode_gets_a_narrative(api, llm, settings):
    settings.CONVERSATION_EPISODES = True
    llm.script(CHAT, memories_reply(item("Alice adopted a beagle called Pixel.")))
    llm.script(CHAT, chat_reply("Alice told the assistant on 8 May 2023 that she adopted a beagle called Pixel."))
    job = converse(api, ALICE)
    episode = MemoryItem.objects.get(tags__contains=["episode"])
    assert episode.text.endswith("Summary: Alice told the assistant on 8 May 2023 that she adopted a beagle "
                                 "called Pixel.")
    assert episode.data["narratives"] and not any("narrative" in w for w in job["warnings"])
    llm.script(CHAT, memories_reply(item("Alice likes walks.")))
    llm.script(CHAT, Reply(status=500, body={"error": {"message": "down"}}))
    later = converse(api, ["I like walks."], session_id="s9")
    assert later["status"] == "done" and any("narrative skipped" in w for w in later["warnings"])


def test_habits_and_wishes_from_the_model_are_kept_as_the_offline_path_keeps_them(api, llm):
    llm.script(CHAT, memories_reply(item("Alice always runs before work.", type="habit"),
                                    item("Alice wants short, direct answers.", type="wish")))
    job = converse(api, [{"role": "user", "name": "Alice",
                          "content": "I always run before work. Please keep your answers short and direct."}])
    assert [op["operation"] for op in job["operations"]] == ["ADD", "ADD"]
    kept = {m.text: m for m in MemoryItem.objects.filter(user_id="alice")}
    assert "habit" in kept["Alice always runs before work."].tags
    assert "wish" in kept["Alice wants short, direct answers."].tags
    assert all(m.memory_type == "fact" for m in kept.values())
    system = llm.requests[-1][1]["messages"][0]["content"]
    assert '"habit"' in system and '"wish"' in system and 'never "Alice' + "'s answers" + '"' in system
    assert "A request to forget is never a memory of its own" in system


def test_an_llms_narrative_is_redacted_like_the_turns(api, llm, settings):
    """The narrative is the model's words about the session: what the detector finds in it is withheld, as
    in the kept turns (a model that repeats a card number or a diagnosis must not store it as an episode)."""
    settings.CONVERSATION_EPISODES = True
    llm.script(CHAT, memories_reply(item("Alice adopted a beagle called Pixel.")))
    llm.script(CHAT, chat_reply("Alice adopted a beagle; her card 4111 1111 1111 1111 paid the vet, and she "
                                "was diagnosed with HIV in 2020."))
    converse(api, ALICE)
    episode = MemoryItem.objects.get(tags__contains=["episode"])
    assert "4111" not in episode.text and "HIV" not in episode.text, episode.text
    assert "[card withheld]" in episode.text and "[health withheld]" in episode.text
    assert not any("4111" in n or "HIV" in n for n in episode.data["narratives"])


def test_the_llm_path_names_the_same_people(api, llm):
    """What the model writes about a relative is theirs, read by the same people reader as the offline path."""
    llm.script(CHAT, memories_reply(item("Alice's mum Sheila is diabetic.", tags=["health"]),
                                    item("Alice's mum Sheila moved from Leeds to York.", source_messages=[1])))
    # Two turns: a turn that says someone's health is held whole (memories/screening.py), the move with it.
    converse(api, [{"role": "user", "name": "Alice", "content": "My mum Sheila is diabetic."},
                   {"role": "user", "name": "Alice", "content": "She moved from Leeds to York."}])
    assert not MemoryItem.objects.filter(text__contains="diabetic").exists()
    people = {p["name"]: p for p in api.get("users/alice/people").json()["people"]}
    assert people["Sheila"]["relation"] == "mother"
    assert [e["value"] for e in people["Sheila"]["edges"]] == ["York"]
    moved = MemoryItem.objects.get(text__contains="moved from Leeds")
    assert str(moved.subject_entity_id) == people["Sheila"]["id"]


def test_a_forget_the_turn_does_not_ask_for_is_not_acted_on(api, llm):
    """Issue 55: a forget acts only on a confident reading. The model's forget of a turn that asks
    nothing ("I forgot my umbrella at the office") removes nothing; a note on the job says so."""
    api.remember("alice", "Alice plays the cello.")
    llm.script(CHAT, memories_reply(item("Alice plays the cello.", forget=True)))
    job = converse(api, [{"role": "user", "name": "Alice", "content": "I forgot my umbrella at the office."}])
    assert "DELETE" not in [op["operation"] for op in job["operations"]], job["operations"]
    assert MemoryItem.objects.filter(user_id="alice", status="active", text="Alice plays the cello.").exists()
