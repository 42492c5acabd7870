"""The people in a user's life (issue 53): entities, who each memory is about, edges over time, and the
read path, end to end through POST /conversations in English and Chinese."""

from memories.models import MemoryItem
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
