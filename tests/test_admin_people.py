"""People in the governance admin through Django's test client: the list and a person's page (aliases, edges
over time, the memories about them, history), and the reviewer's changes, each through memories.people.graph
with the operator as actor and a reason: merge, split, correct a relation, retract an edge."""

import re
from html import unescape

import pytest
from django.test import Client
from django.urls import reverse

from memories.models import MemoryItem, Person, PersonEdge, PersonHistory
from tests.conftest import converse

PEOPLE = "admin:memories_person_changelist"
EDGES = "admin:memories_personedge_changelist"


def login(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def reviewer(operator):
    return login(operator("rita", "reviewers"))


@pytest.fixture
def auditor(operator):
    return login(operator("aldo", "auditors"))


def priya(api, *, shelly: bool = False) -> Person:
    """Priya's mum Sheila (aliases, a relation edge, Leeds then York); with `shelly`, an entry "Shelly" said
    before, that is the same woman under a pet name."""
    if shelly:
        converse(api, [{"role": "user", "name": "Priya", "content": "Shelly loves gardening."}], session_id="s0")
    converse(api, [{"role": "user", "name": "Priya", "content": "I'm Priya. My mum Sheila teaches maths."},
                   {"role": "user", "name": "Priya", "content": "She lives in Leeds."}], session_id="s1")
    converse(api, [{"role": "user", "name": "Priya", "content": "Mum moved from Leeds to York last month."}],
             session_id="s2")
    return Person.objects.get(name="Sheila")


def current(text_part: str) -> MemoryItem:
    return MemoryItem.objects.get(text__contains=text_part, expired_at__isnull=True)


def tables(page: str, css_class: str) -> list[str]:
    return re.findall(rf'<table class="{css_class}">(.*?)</table>', page, re.S)


def edges(page: str) -> tuple[list[str], list[str]]:
    """The edge sentences of a person's page as read: those holding now, and past ones."""

    def sentences(field: str) -> list[str]:
        box = page.split(f"field-{field}", 1)[1].split('<div class="readonly">', 1)[1].split("</div>", 1)[0]
        return [unescape(re.sub(r"<[^>]+>", "", cell)).replace("\u2019", "'")
                for cell in re.findall(r'<tr class="person-edge"><td>(.*?)</td>', box)]

    return sentences("current_edges"), sentences("past_edges")


def test_the_people_list_and_a_persons_page_show_aliases_edges_memories_and_history(api, reviewer):
    sheila = priya(api)
    listed = reviewer.get(reverse(PEOPLE)).content.decode()
    assert "Sheila" in listed and "mother" in listed and "mum" in listed and "York" in listed
    assert reverse("admin:memories_person_change", args=[sheila.id]) in listed
    for query, found in (({"q": "mum"}, True), ({"q": "alice"}, True), ({"kind": "place"}, False),
                         ({"relation": "mother"}, True), ({"relation": "none"}, False), ({"status": "merged"}, False)):
        page = reviewer.get(reverse(PEOPLE), query)
        assert page.status_code == 200 and (f"{sheila.id}/change/" in page.content.decode()) is found, query

    page = reviewer.get(reverse("admin:memories_person_change", args=[sheila.id])).content.decode()
    assert 'name="_save"' not in page  # read-only: changes are the confirmed actions
    assert "<div class=\"readonly\">Sheila, mum</div>" in page  # the aliases
    [memories] = tables(page, "person-memories")
    assert "teaches maths" in memories and "moved from Leeds to York" in memories
    now, before = edges(page)
    assert sorted(now) == ["Sheila is alice's mother", "Sheila lives in York"]
    assert before == ["Sheila lives in Leeds"]
    [history] = tables(page, "history-timeline person-history")
    for event in ("CREATE", "EDGE_ADD", "EDGE_END"):
        assert f"<b>{event}</b>" in history, event
    assert 'id="person-correct-relation"' in page and 'class="edge-retract"' in page

    memory = current("teaches maths")  # the memory's side: whom it is about, linked
    link = reverse("admin:memories_person_change", args=[sheila.id])
    assert link in reviewer.get(reverse("admin:memories_memoryitem_change", args=[memory.id])).content.decode()
    assert link in reviewer.get(reverse("admin:memories_memoryitem_changelist")).content.decode()
    assert reviewer.get(reverse(EDGES)).status_code == 200


def test_merging_two_people_moves_the_memories_and_a_split_puts_them_back(api, reviewer):
    sheila = priya(api, shelly=True)
    shelly = Person.objects.get(name="Shelly")
    assert current("Shelly loves gardening").subject_entity_id == shelly.id
    selected = {"action": "merge_selected", "_selected_action": [shelly.id, sheila.id]}
    confirm = reviewer.post(reverse(PEOPLE), selected)
    page = confirm.content.decode()
    assert confirm.status_code == 200 and page.count("<h1>Merge 2 people of alice</h1>") == 1  # one heading
    assert "Merge into Sheila" in page and "kept" in page
    refused = reviewer.post(reverse(PEOPLE), {**selected, "apply": "1", "reason": ""})
    assert refused.status_code == 200 and "This field is required" in refused.content.decode()  # a reason first
    assert Person.objects.get(id=shelly.id).status == "active"

    done = reviewer.post(reverse(PEOPLE), {**selected, "apply": "1", "reason": "Shelly is what Priya calls her mum"})
    assert done.status_code == 302 and done["Location"] == reverse("admin:memories_person_change", args=[sheila.id])
    shelly.refresh_from_db()
    assert shelly.status == "merged" and shelly.merged_into_id == sheila.id
    assert current("Shelly loves gardening").subject_entity_id == sheila.id
    assert "Shelly" in set(sheila.aliases.values_list("alias", flat=True))
    merges = PersonHistory.objects.filter(event="MERGE", actor="rita")
    assert {m.person_id for m in merges} == {sheila.id, shelly.id}
    assert {m.reason for m in merges} == {"Shelly is what Priya calls her mum"}
    page = reviewer.get(done["Location"], follow=True).content.decode()
    assert "Merged 1 person into Sheila." in page and "Shelly loves gardening" in page and "<b>MERGE</b>" in page
    merged_page = reviewer.get(reverse("admin:memories_person_change", args=[shelly.id])).content.decode()
    assert "into <a href" in merged_page and 'id="person-split"' in merged_page

    split_url = reverse("admin:memories_person_split", args=[shelly.id])
    form = reviewer.get(split_url).content.decode()
    assert "Split off 1 merged person" in form and f'value="{shelly.id}"' in form
    back = reviewer.post(reverse(PEOPLE), {"action": "split_selected", "_selected_action": [shelly.id],
                                           "apply": "1", "reason": "two different women after all"})
    assert back.status_code == 302 and back["Location"].endswith(f"{shelly.id}/change/")
    shelly.refresh_from_db()
    assert shelly.status == "active" and shelly.merged_into_id is None
    assert current("Shelly loves gardening").subject_entity_id == shelly.id
    assert current("teaches maths").subject_entity_id == sheila.id
    assert PersonHistory.objects.filter(person_id=shelly.id, event="SPLIT", actor="rita",
                                        reason="two different women after all").exists()
    again = reviewer.post(reverse(PEOPLE), {"action": "split_selected", "_selected_action": [shelly.id]},
                          follow=True)
    assert "was not merged into anyone" in again.content.decode()


def test_a_merge_needs_two_people_of_one_user(api, tenant_a, reviewer):
    sheila = priya(api)
    converse(api, [{"role": "user", "name": "Bo", "content": "My sister Ana lives in Bristol."}], user_id="bo")
    ana = Person.objects.get(name="Ana")
    for chosen, words in (([sheila.id], "Select at least two people"),
                          ([sheila.id, ana.id], "different users or tenants cannot be merged")):
        page = reviewer.post(reverse(PEOPLE), {"action": "merge_selected", "_selected_action": chosen,
                                               "apply": "1", "reason": "x"}, follow=True).content.decode()
        assert words in page
    user = Person.objects.get(user_id="alice", kind="user")
    refused = reviewer.post(reverse(PEOPLE), {"action": "merge_selected", "_selected_action": [sheila.id, user.id],
                                              "apply": "1", "reason": "x"}, follow=True).content.decode()
    assert "not merged: merge: both must be active and neither the user" in refused  # the service's refusal
    assert not PersonHistory.objects.filter(event="MERGE").exists()


def test_correcting_a_relation_writes_a_relation_history_row_and_ends_the_old_edge(api, reviewer):
    sheila = priya(api)
    version = sheila.version
    form = reviewer.get(reverse("admin:memories_person_relation", args=[sheila.id])).content.decode()
    assert 'name="relation"' in form and '<option value="mother" selected>' in form and 'name="reason"' in form
    done = reviewer.post(reverse(PEOPLE), {"action": "correct_relation", "_selected_action": [sheila.id],
                                           "apply": "1", "relation": "aunt", "word": "auntie",
                                           "reason": "Priya's aunt, not her mum"})
    assert done.status_code == 302 and done["Location"].endswith(f"{sheila.id}/change/")
    sheila.refresh_from_db()
    assert (sheila.relation, sheila.relation_word, sheila.version) == ("aunt", "auntie", version + 1)
    row = PersonHistory.objects.get(person_id=sheila.id, event="RELATION", actor="rita")
    assert row.reason == "Priya's aunt, not her mum" and row.old_data["relation"] == "mother"
    relation = PersonEdge.objects.filter(target=sheila, predicate="relation")
    assert [(e.value, e.invalid_at is None) for e in relation.order_by("created_at")] == [("mother", False),
                                                                                         ("aunt", True)]
    page = reviewer.get(done["Location"]).content.decode()
    now, before = edges(page)
    assert "Sheila is alice's aunt" in now and "Sheila is alice's mother" in before
    assert "relation: mother &rarr; aunt" in tables(page, "history-timeline person-history")[0]

    user = Person.objects.get(user_id="alice", kind="user")
    refused = reviewer.post(reverse(PEOPLE), {"action": "correct_relation", "_selected_action": [user.id]},
                            follow=True).content.decode()
    assert "the user has no relation to themself" in refused
    unknown = reviewer.post(reverse(PEOPLE), {"action": "correct_relation", "_selected_action": [sheila.id],
                                              "apply": "1", "relation": "zzz", "reason": "x"})
    assert unknown.status_code == 200 and "Select a valid choice" in unknown.content.decode()
    assert Person.objects.get(id=sheila.id).relation == "aunt"


def test_retracting_an_edge_keeps_it_as_history(api, reviewer):
    sheila = priya(api)
    york = PersonEdge.objects.get(source=sheila, value="York")
    form = reviewer.get(reverse("admin:memories_personedge_retract", args=[york.id])).content.decode()
    assert "Retract an edge" in form and "lives in" in form
    done = reviewer.post(reverse(EDGES), {"action": "retract_selected", "_selected_action": [york.id],
                                          "apply": "1", "reason": "she never moved"})
    assert done.status_code == 302 and done["Location"].endswith(f"{sheila.id}/change/")
    york.refresh_from_db()
    assert york.expired_at is not None and york.invalid_at is None
    assert PersonHistory.objects.filter(person_id=sheila.id, event="EDGE_RETRACT", actor="rita",
                                        reason="she never moved").exists()
    now, before = edges(reviewer.get(done["Location"]).content.decode())
    assert "Sheila lives in York" not in now and "Sheila lives in York" in before
    assert reviewer.get(reverse(EDGES), {"state": "retracted"}).content.decode().count("York") >= 1


def test_another_tenants_operator_cannot_see_or_change_the_person(api, tenant_b, operator):
    sheila = priya(api)
    york = PersonEdge.objects.get(source=sheila, value="York")
    outsider = login(operator("tina", "reviewers", tenant=tenant_b))
    assert "Sheila" not in outsider.get(reverse(PEOPLE)).content.decode()
    assert "York" not in outsider.get(reverse(EDGES)).content.decode()
    assert outsider.get(reverse("admin:memories_person_change", args=[sheila.id])).status_code == 302  # no such
    for url in (reverse("admin:memories_person_relation", args=[sheila.id]),
                reverse("admin:memories_person_split", args=[sheila.id]),
                reverse("admin:memories_personedge_retract", args=[york.id])):
        assert outsider.get(url).status_code == 404, url
    outsider.post(reverse(PEOPLE), {"action": "correct_relation", "_selected_action": [sheila.id], "apply": "1",
                                    "relation": "aunt", "reason": "x"})
    outsider.post(reverse(EDGES), {"action": "retract_selected", "_selected_action": [york.id], "apply": "1",
                                   "reason": "x"})
    sheila.refresh_from_db()
    york.refresh_from_db()
    assert sheila.relation == "mother" and york.expired_at is None
    assert not PersonHistory.objects.filter(actor="tina").exists()


def test_an_auditor_reads_people_and_changes_nothing(api, auditor):
    sheila = priya(api)
    page = auditor.get(reverse("admin:memories_person_change", args=[sheila.id]))
    assert page.status_code == 200 and "teaches maths" in page.content.decode()
    assert 'id="person-correct-relation"' not in page.content.decode()
    assert 'class="edge-retract"' not in page.content.decode()
    assert auditor.get(reverse("admin:memories_person_relation", args=[sheila.id])).status_code == 403
    assert auditor.post(reverse("admin:memories_person_change", args=[sheila.id]), {}).status_code == 403
    auditor.post(reverse(PEOPLE), {"action": "correct_relation", "_selected_action": [sheila.id], "apply": "1",
                                   "relation": "aunt", "reason": "x"})
    assert Person.objects.get(id=sheila.id).relation == "mother"
