"""The people in a user's life (issue 53): entities, who each memory is about, edges over time, and the
read path, end to end through POST /conversations in English and Chinese."""

from memories.models import MemoryItem, Person, PersonEdge
from tests.conftest import converse


def _people(api, user_id="alice"):
    return {p["name"]: p for p in api.get(f"users/{user_id}/people").json()["people"]}


def test_a_mothers_facts_are_hers_and_her_move_ends_where_she_lived(api):
    converse(api, [{"role": "user", "name": "Priya", "content": "I'm Priya. My mum Sheila teaches maths."},
                   {"role": "assistant", "content": "Thanks for telling me."},
                   {"role": "user", "name": "Priya", "content": "She lives in Leeds."}], session_id="s1")
    converse(api, [{"role": "user", "name": "Priya", "content": "Mum moved from Leeds to York last month."}],
             session_id="s2")
    people = _people(api)
    sheila = people["Sheila"]
    assert sheila["relation"] == "mother" and sheila["kind"] == "person"
    assert {"Sheila", "mum"} <= {a.casefold() if a != "Sheila" else a for a in sheila["aliases"]}
    assert any("maths" in f["text"] for f in sheila["current_facts"])
    user = next(p for p in people.values() if p["kind"] == "user")
    assert not any("maths" in f["text"] for f in user["current_facts"])
    assert [e["value"] for e in sheila["edges"] if e["predicate"] == "lives_in"] == ["York"]
    page = api.get(f"users/alice/people/{sheila['id']}").json()
    lived = [(e["value"], e["invalid_at"] is None) for e in page["edges_history"] if e["predicate"] == "lives_in"]
    assert ("Leeds", False) in lived and ("York", True) in lived


def test_chinese_relatives(api):
    converse(api, [{"role": "user", "content": "我叫林晓雨。我婆婆腰不好，每天都要吃药。"},
                   {"role": "user", "content": "我哥跳槽去了腾讯。"}])
    people = _people(api)
    mil = next(p for p in people.values() if p["relation"] == "mother_in_law")
    assert any("腰" in f["text"] for f in mil["current_facts"])
    brother = next(p for p in people.values() if p["relation"] == "brother")
    assert [e["value"] for e in brother["edges"]] == ["腾讯"]


def test_the_block_has_a_people_section_and_a_question_naming_mum_brings_her_facts(api):
    converse(api, [{"role": "user", "content": "I'm Priya. My mum Sheila teaches maths."},
                   {"role": "user", "content": "I love climbing on Saturdays."}])
    block = api.post("context", {"user_id": "alice", "query": "what should I get my mother for her birthday?",
                                 "max_chars": 1000}).json()
    people = block["sections"]["people"]
    assert [line["text"] for line in people] == ["Sheila — mum; teaches maths"]
    assert "### People\n- Sheila — mum; teaches maths" in block["context"]
    texts = [line["text"] for line in block["sections"]["memories"]]
    assert any(t.endswith("mum Sheila teaches maths") for t in texts[:3])  # her facts, after the search's best


def test_chinese_block_people_section(api):
    converse(api, [{"role": "user", "content": "我叫林晓雨。我婆婆腰不好，每天都要吃药。"}])
    block = api.post("context", {"user_id": "alice", "query": "婆婆最近怎么样", "max_chars": 1000}).json()
    [line] = block["sections"]["people"]
    assert line["text"] in ("婆婆 — 腰不好", "婆婆 — 每天都要吃药")
    assert block["sections"]["profile"] == []  # her back is not the user's profile
    assert "### 身边的人" in block["context"]


def test_erasure_removes_the_people_and_forgetting_a_fact_takes_it_off_their_page(api):
    converse(api, [{"role": "user", "content": "My sister Ana lives in Bristol. My mum Sheila teaches maths."}])
    ana = _people(api)["Ana"]
    assert ana["edges"][0]["value"] == "Bristol"
    converse(api, [{"role": "user", "content": "Please forget that my sister lives in Bristol."}], session_id="s9")
    page = api.get(f"users/alice/people/{ana['id']}").json()
    assert not any("Bristol" in str(e) for e in page["edges"] + page["edges_history"])
    assert not any("Bristol" in f["text"] for f in page["current_facts"])
    assert api.delete("users/alice/memories").status_code == 200
    assert not Person.objects.filter(user_id="alice").exists() and not PersonEdge.objects.filter(
        user_id="alice").exists()
    assert api.get("users/alice/people").json()["people"] == []


def test_search_accepts_a_person_filter(api):
    converse(api, [{"role": "user",
                    "content": "My sister Ana loves hiking. I love hiking too. My mum Sheila hates hiking."}])
    ana = _people(api)["Ana"]
    found = api.post("memories/search", {"user_id": "alice", "query": "hiking", "person_id": ana["id"]}).json()
    texts = [r["memory"]["text"] for r in found["results"]]
    assert texts and all("Ana" in t for t in texts)
    assert all(r["memory"]["subject"]["id"] == ana["id"] for r in found["results"])
    bad = api.post("memories/search", {"user_id": "alice", "query": "hiking", "person_id": "nope"})
    assert bad.status_code == 400 and "person_id" in bad.text


def test_the_same_name_under_another_relation_is_kept_apart_for_a_reviewer(api):
    converse(api, [{"role": "user", "content": "My friend Ana is a nurse."}])
    converse(api, [{"role": "user", "content": "My sister Ana lives in Bristol."}], session_id="s2")
    anas = Person.objects.filter(user_id="alice", name="Ana").order_by("created_at")
    assert [a.relation for a in anas] == ["friend", "sister"]
    assert anas[1].maybe_same_as_id == anas[0].id


def test_an_unnamed_partner_named_later_is_one_person(api):
    converse(api, [{"role": "user", "content": "我老公在一家银行上班。"}])
    converse(api, [{"role": "user", "content": "我老公叫刘洋，他很会做饭。"}], session_id="s2")
    partners = [p for p in api.get("users/alice/people").json()["people"] if p["relation"] == "partner"]
    assert [p["name"] for p in partners] == ["刘洋"]
    assert "老公" in partners[0]["aliases"]


def test_a_friends_dog_is_the_friends(api):
    converse(api, [{"role": "user", "content": "My friend Jo has a lovely house. My friend's dog Rex is hilarious."}])
    people = _people(api)
    rex = people["Rex"]
    assert rex["kind"] == "pet" and rex["relation"] == "other"
    assert [(e["predicate"], e["value"]) for e in rex["edges"]] == [("belongs_to", "Jo")]
    page = api.get(f"users/alice/people/{people['Jo']['id']}").json()
    assert any(c["name"] == "Rex" and c["depth"] == 1 for c in page["connected"])


def test_every_memory_carries_the_emotion_it_was_said_with(api):
    """Read offline: beside a save's embedding after its commit, in one batch for a conversation's."""
    saved = api.remember("alice", "I'm so happy and proud, my daughter got into Oxford!!")
    emotion = api.get(f"memories/{saved['id']}").json()["emotion"]
    assert emotion["valence"] > 0 and 0 <= emotion["arousal"] <= 1 and emotion["label"]
    converse(api, [{"role": "user", "content": "I'm really worried, my mum is in hospital again."}])
    worried = MemoryItem.objects.get(text__contains="hospital")
    assert worried.emotion["valence"] < 0
