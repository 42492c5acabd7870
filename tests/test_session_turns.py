"""A session's raw turns listed by session (issue 57 item 3, seed 003): GET /users/{id}/sessions and
/users/{id}/sessions/{session}/turns, read from the conversation jobs as they keep the turns."""

from __future__ import annotations

import pytest
from memory_client import MemoryClient, Session, SessionTurn, ValidationError

from memories.keys import api_key_create
from memories.writing import FORGOTTEN_TURN
from tests.conftest import converse
from tests.test_job_page import MARCUS


def turns_of(api, user_id: str, session_id: str, **query) -> dict:
    response = api.get(f"users/{user_id}/sessions/{session_id}/turns", query)
    assert response.status_code == 200, response.content
    return response.json()


def test_a_sessions_turns_in_order_with_pages_and_isolation(api, api_b, reviewer):
    first = converse(api, ["I live in Leeds.", {"role": "assistant", "content": "Noted."}], session_id="s1")
    second = converse(api, [{"role": "user", "name": "Ada", "content": "I play the cello.",
                             "created_at": "2026-01-02T03:04:05Z"}], session_id="s1")
    converse(api, ["Elsewhere."], session_id="s2")
    converse(api, ["Not Alice's."], user_id="bob", session_id="s1")

    body = turns_of(api, "alice", "s1")
    assert [(t["role"], t["content"], t["index"]) for t in body["results"]] == [
        ("user", "I live in Leeds.", 0), ("assistant", "Noted.", 1), ("user", "I play the cello.", 0)]
    assert [t["job_id"] for t in body["results"]] == [first["job_id"]] * 2 + [second["job_id"]]
    assert body["results"][2]["name"] == "Ada" and body["results"][2]["created_at"].startswith("2026-01-02T03:04:05")
    assert body["results"][0]["name"] is None and body["next"] is None and body["previous"] is None

    page = turns_of(api, "alice", "s1", page_size=2)
    assert [t["content"] for t in page["results"]] == ["I live in Leeds.", "Noted."] and page["previous"] is None
    following = api.client.get(page["next"])  # the link as given, absolute
    assert following.status_code == 200
    assert [t["content"] for t in following.json()["results"]] == ["I play the cello."]
    assert following.json()["next"] is None and following.json()["previous"]

    sessions = api.get("users/alice/sessions").json()["sessions"]
    assert {(s["session_id"], s["turns"], s["jobs"]) for s in sessions} == {("s1", 3, 2), ("s2", 1, 1)}
    assert all(s["first_turn_at"] <= s["last_turn_at"] for s in sessions)

    # another tenant sees nothing of Alice's; a reviewer key of hers sees every job of the tenant
    assert turns_of(api_b, "alice", "s1")["results"] == []
    assert api_b.get("users/alice/sessions").json()["sessions"] == []
    assert len(turns_of(reviewer, "alice", "s1")["results"]) == 3


@pytest.mark.parametrize(("path", "query", "field"), [
    ("users/alice/sessions/s1/turns", {"page_size": "0"}, "page_size"),
    ("users/alice/sessions/s1/turns", {"page_size": "many"}, "page_size"),
    ("users/alice/sessions/s1/turns", {"cursor": "%%%"}, "cursor"),
    ("users/alice/sessions/s1/turns", {"cursor": "bm9wZQ=="}, "cursor"),
    ("users/alice/sessions/" + "s" * 300 + "/turns", {}, "session_id"),
    ("users/alice/sessions/a\u200bb/turns", {}, "session_id"),
    ("users/" + "u" * 300 + "/sessions/s1/turns", {}, "user_id"),
    ("users/" + "u" * 300 + "/sessions", {}, "user_id"),
])
def test_bad_input_names_the_field(api, path, query, field):
    response = api.get(path, query)
    assert response.status_code == 400 and field in response.json(), response.content


def test_a_forgotten_turn_shows_as_its_marker_and_erasure_leaves_none(api, reviewer, settings):
    settings.CONVERSATION_EPISODES = True
    converse(api, [{"role": "user", "name": "Marcus", "content": text} if i != 1 else
                   {"role": "assistant", "content": text} for i, text in enumerate(MARCUS)], user_id="marcus")
    contents = [t["content"] for t in turns_of(api, "marcus", "s1")["results"]]
    assert contents[2] == FORGOTTEN_TURN and contents[4] == FORGOTTEN_TURN
    assert contents[3] == MARCUS[3] and not any("Manchester" in c for c in contents)

    assert reviewer.delete("users/marcus/memories").status_code == 200
    assert turns_of(api, "marcus", "s1")["results"] == []
    assert api.get("users/marcus/sessions").json()["sessions"] == []


def test_the_python_sdk_lists_sessions_and_turns(live_server, transactional_db):
    key = api_key_create(tenant_name="acme").raw_key
    other = api_key_create(tenant_name="globex").raw_key
    with MemoryClient(live_server.url, api_key=key) as client:
        job = client.add_conversation("hana", "s9", [{"role": "user", "content": "My mum Sheila lives in Leeds."},
                                                     {"role": "assistant", "content": "Lovely."},
                                                     {"role": "user", "content": "She gardens."}])
        assert client.wait_for_job(job.job_id).status == "done"
        page = client.session_turns("hana", "s9", page_size=2)
        assert all(isinstance(t, SessionTurn) for t in page.results)
        assert [t.content for t in page.results] == ["My mum Sheila lives in Leeds.", "Lovely."]
        assert page.results[0].job_id == job.job_id and page.results[0].created_at.tzinfo
        rest = client.next_page(page)
        assert rest is not None and [(t.index, t.content) for t in rest.results] == [(2, "She gardens.")]
        assert client.next_page(rest) is None
        sessions = client.sessions("hana")
        assert [(s.session_id, s.turns, s.jobs) for s in sessions] == [("s9", 3, 1)]
        assert isinstance(sessions[0], Session)
        with pytest.raises(ValidationError) as bad:
            client.session_turns("hana", "s9", page_size=0)
        assert "page_size" in bad.value.fields
    with MemoryClient(live_server.url, api_key=other) as stranger:
        assert stranger.session_turns("hana", "s9").results == [] and stranger.sessions("hana") == []


def test_an_agent_key_reads_the_turns_it_sent_as_it_reads_jobs(api, reviewer, django_capture_on_commit_callbacks):
    from tests.conftest import Api

    converse(api, ["I live in Leeds."], session_id="s1")
    other_agent = Api(api_key_create(tenant_name="acme", name="other agent").raw_key,
                      django_capture_on_commit_callbacks)
    converse(other_agent, ["I keep bees."], session_id="s1")
    assert [t["content"] for t in turns_of(api, "alice", "s1")["results"]] == ["I live in Leeds."]
    assert [t["content"] for t in turns_of(other_agent, "alice", "s1")["results"]] == ["I keep bees."]
    assert [t["content"] for t in turns_of(reviewer, "alice", "s1")["results"]] == ["I live in Leeds.",
                                                                                   "I keep bees."]
    assert [s["jobs"] for s in reviewer.get("users/alice/sessions").json()["sessions"]] == [2]
