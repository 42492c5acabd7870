def test_history_follows_the_whole_version_chain(api):
    memory = api.remember("alice", "Alice has one cat.")
    second = api.patch(f"memories/{memory['id']}", {"text": "Alice has two cats."}).json()["memory"]
    api.patch(f"memories/{second['id']}", {"importance": 0.9})
    rows = api.get(f"memories/{second['id']}/history").json()["results"]
    assert [r["event"] for r in rows] == ["ADD", "SUPERSEDE", "ADD", "UPDATE"]
    supersede = rows[1]
    assert supersede["old_text"] == "Alice has one cat." and supersede["new_text"] == "Alice has two cats."
    assert all(r["actor"].startswith("api:") for r in rows)
    assert rows[3]["old_data"]["importance"] == 0.5 and rows[3]["new_data"]["importance"] == 0.9
