"""The governance admin through Django's test client: each action calls the
service the API uses, with the operator's username as actor."""

import re

import pytest
from django.test import Client
from django.urls import reverse

from memories.models import Candidate, MemoryHistory, MemoryItem
from memories.writing import MemorySpec, memory_create
from tests.conftest import converse

CHANGELIST = "admin:memories_memoryitem_changelist"


def login(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def remember(tenant, user_id, text, **fields):
    return memory_create(tenant=tenant, spec=MemorySpec(user_id=user_id, text=text, **fields), actor="test").memory


@pytest.fixture
def reviewer(operator):
    return login(operator("rita", "reviewers"))


@pytest.fixture
def auditor(operator):
    return login(operator("aldo", "auditors"))


def test_the_review_queue_lists_pending_first_with_target_and_sources(api, reviewer):
    converse(api, ["I live in Lisbon."])
    [target] = MemoryItem.objects.all()
    from memories.models import MemoryHistory as H

    H.objects.create(memory_id=target.id, tenant=target.tenant, user_id="alice", event="APPROVE", actor="x")
    converse(api, ["I think I might try pottery.", "I moved to Porto."])
    first, second = Candidate.objects.order_by("created_at")
    Candidate.objects.filter(id=first.id).update(status="rejected")
    page = reviewer.get(reverse("admin:memories_candidate_changelist")).content.decode()
    assert "Porto" in page and "pottery" not in page  # a work list: pending only, unless asked
    everything = reviewer.get(reverse("admin:memories_candidate_changelist") + "?status=all").content.decode()
    assert everything.index("Porto") < everything.index("pottery")  # pending before decided
    decided = reviewer.get(reverse("admin:memories_candidate_changelist") + "?status=rejected").content.decode()
    assert "pottery" in decided and "Porto" not in decided
    detail = reviewer.get(reverse("admin:memories_candidate_change", args=[second.id])).content.decode()
    assert "User lives in Lisbon" in detail and "I moved to Porto." in detail and "contradicts_approved" in detail


def test_approve_with_edited_text_and_reject_from_the_change_page(api, reviewer):
    converse(api, ["I think I might try pottery.", "I guess I will maybe learn Italian."])
    first, second = Candidate.objects.order_by("created_at")
    url = reverse("admin:memories_candidate_change", args=[first.id])
    response = reviewer.post(url, {"text": "Alice wants to try pottery.", "_approve": "1"})
    assert response.status_code == 302
    first.refresh_from_db()
    assert first.status == "approved" and first.resolved_by == "rita"
    assert first.result_memory.text == "Alice wants to try pottery."
    assert MemoryHistory.objects.filter(memory_id=first.result_memory_id, event="APPROVE", actor="rita").exists()
    reviewer.post(reverse("admin:memories_candidate_change", args=[second.id]), {"text": second.text, "_reject": "1"})
    second.refresh_from_db()
    assert second.status == "rejected" and second.resolved_by == "rita"


def test_bulk_approve_and_reject(api, reviewer):
    converse(api, ["I think I might try pottery.", "I guess I will maybe learn Italian.",
                   "I think I might adopt a dog."])
    ids = [str(c.id) for c in Candidate.objects.order_by("created_at")]
    changelist = reverse("admin:memories_candidate_changelist")
    reviewer.post(changelist, {"action": "approve_selected", "_selected_action": ids[:2]})
    reviewer.post(changelist, {"action": "reject_selected", "_selected_action": ids[2:]})
    assert sorted(Candidate.objects.values_list("status", flat=True)) == ["approved", "approved", "rejected"]


def test_merge_two_memories_of_one_user(tenant_a, reviewer):
    a = remember(tenant_a, "alice", "Alice has a cat.")
    b = remember(tenant_a, "alice", "Alice's cat is named Miso.")
    changelist = reverse(CHANGELIST)
    form = reviewer.post(changelist, {"action": "merge_selected", "_selected_action": [a.id, b.id]})
    assert form.status_code == 200 and b"Merge 2 memories" in form.content
    done = reviewer.post(changelist, {"action": "merge_selected", "_selected_action": [a.id, b.id], "apply": "1",
                                      "merged_text": "Alice has a cat named Miso.", "reason": "duplicates"})
    assert done.status_code == 302
    merged = MemoryItem.objects.get(text="Alice has a cat named Miso.")
    a.refresh_from_db()
    b.refresh_from_db()
    assert a.superseded_by_id == merged.id == b.superseded_by_id and a.expired_at and b.expired_at
    assert MemoryHistory.objects.filter(event="MERGE", actor="rita").count() == 3


def test_merging_across_users_is_refused(tenant_a, reviewer):
    a = remember(tenant_a, "alice", "Alice has a cat.")
    b = remember(tenant_a, "bob", "Bob has a cat.")
    response = reviewer.post(reverse(CHANGELIST), {"action": "merge_selected", "_selected_action": [a.id, b.id]},
                             follow=True)
    assert b"cannot be merged" in response.content
    assert MemoryItem.objects.filter(expired_at__isnull=True).count() == 2


def test_editing_text_supersedes_and_shows_the_timeline(tenant_a, reviewer):
    memory = remember(tenant_a, "alice", "Alice lives in Lisbon.", tags=["home"])
    url = reverse("admin:memories_memoryitem_change", args=[memory.id])
    response = reviewer.post(url, {"text": "Alice lives in Porto.", "importance": "0.5", "tags": "home",
                                   "expected_version": "1"})
    new = MemoryItem.objects.get(text="Alice lives in Porto.")
    assert response.status_code == 302 and response["Location"].endswith(f"{new.id}/change/")
    memory.refresh_from_db()
    assert memory.expired_at and memory.superseded_by_id == new.id and memory.text == "Alice lives in Lisbon."
    page = reviewer.get(response["Location"]).content.decode()
    assert "SUPERSEDE" in page and "rita" in page and '<del class="diff-old">Lisbon.</del>' in page
    assert f"v1 ({memory.id})" in page


def test_the_edit_form_shows_tags_and_version_as_a_person_would_submit_them(tenant_a, reviewer):
    memory = remember(tenant_a, "alice", "Alice lives in Lisbon.", tags=["home", "city"])
    page = reviewer.get(reverse("admin:memories_memoryitem_change", args=[memory.id])).content.decode()
    assert 'name="tags" value="home, city"' in page
    assert 'name="expected_version" value="1"' in page


def test_a_stale_edit_is_refused(tenant_a, reviewer):
    memory = remember(tenant_a, "alice", "Alice lives in Lisbon.")
    url = reverse("admin:memories_memoryitem_change", args=[memory.id])
    response = reviewer.post(url, {"text": "Alice lives in Porto.", "importance": "0.5", "tags": "",
                                   "expected_version": "7"}, follow=True)
    assert b"Not saved" in response.content
    assert not MemoryItem.objects.filter(text="Alice lives in Porto.").exists()


def test_archive_and_restore(tenant_a, reviewer):
    memory = remember(tenant_a, "alice", "Alice likes jazz.")
    reviewer.post(reverse(CHANGELIST), {"action": "archive_selected", "_selected_action": [memory.id]})
    memory.refresh_from_db()
    assert memory.status == "archived"
    reviewer.post(reverse(CHANGELIST), {"action": "restore_selected", "_selected_action": [memory.id]})
    memory.refresh_from_db()
    assert memory.status == "active"
    assert list(MemoryHistory.objects.filter(memory_id=memory.id).values_list("event", "actor")) == [
        ("ADD", "test"), ("DELETE", "rita"), ("RESTORE", "rita")]


def test_forgetting_a_user_shows_counts_then_erases(tenant_a, operator):
    admin_client = login(operator("root", superuser=True))
    remember(tenant_a, "alice", "Alice likes jazz.")
    remember(tenant_a, "alice", "Alice likes tea.")
    url = reverse("admin:memories_forget_user")
    page = admin_client.get(url, {"tenant": tenant_a.id, "user_id": "alice"}).content.decode()
    assert "forget alice" in page and "<th>memories</th><td>2</td>" in page
    response = admin_client.post(url, {"tenant": tenant_a.id, "user_id": "alice", "confirm": "yes"})
    assert response.status_code == 302 and not MemoryItem.objects.filter(user_id="alice").exists()


def test_forgetting_a_user_normalises_the_id_as_the_api_does(tenant_a, operator):
    """Issue 43: the admin erased the raw spelling; 'ａｌｉｃｅ' (full-width) is the 'alice' the API
    stored, and an id with an invisible character is refused rather than erasing nothing."""
    admin_client = login(operator("root", superuser=True))
    remember(tenant_a, "alice", "Alice likes jazz.")
    url = reverse("admin:memories_forget_user")
    page = admin_client.get(url, {"tenant": tenant_a.id, "user_id": "ａｌｉｃｅ"}).content.decode()
    assert "forget alice" in page and "<th>memories</th><td>1</td>" in page
    refused = admin_client.post(url, {"tenant": tenant_a.id, "user_id": "ali\u200bce", "confirm": "yes"})
    assert refused.status_code == 200 and "U+200B" in refused.content.decode()
    assert MemoryItem.objects.filter(user_id="alice").exists()
    response = admin_client.post(url, {"tenant": tenant_a.id, "user_id": "ａｌｉｃｅ", "confirm": "yes"})
    assert response.status_code == 302 and not MemoryItem.objects.filter(user_id="alice").exists()


def test_reviewers_cannot_forget_users(tenant_a, reviewer):
    assert reviewer.get(reverse("admin:memories_forget_user")).status_code == 403


def test_an_auditor_reads_everything_and_changes_nothing(api, tenant_a, auditor):
    memory = remember(tenant_a, "alice", "Alice likes jazz.")
    converse(api, ["I think I might try pottery."])
    candidate = Candidate.objects.get()
    page = auditor.get(reverse("admin:memories_memoryitem_change", args=[memory.id])).content.decode()
    assert "Alice likes jazz." in page and 'name="_save"' not in page
    assert 'name="_approve"' not in auditor.get(reverse("admin:memories_candidate_change",
                                                        args=[candidate.id])).content.decode()
    forged = auditor.post(reverse("admin:memories_memoryitem_change", args=[memory.id]),
                          {"text": "hijacked", "importance": "0.5", "tags": "", "expected_version": "1"})
    assert forged.status_code == 403
    auditor.post(reverse(CHANGELIST), {"action": "archive_selected", "_selected_action": [memory.id]})
    auditor.post(reverse("admin:memories_candidate_change", args=[candidate.id]), {"text": "x", "_approve": "1"})
    memory.refresh_from_db()
    candidate.refresh_from_db()
    assert memory.text == "Alice likes jazz." and memory.status == "active" and candidate.status == "pending"


def test_a_tenant_scoped_operator_sees_only_their_tenant(tenant_a, tenant_b, operator):
    client = login(operator("tina", "reviewers", tenant=tenant_b))
    mine = remember(tenant_b, "bob", "Bob likes tea.")
    theirs = remember(tenant_a, "alice", "Alice likes jazz.")
    page = client.get(reverse(CHANGELIST)).content.decode()
    assert "Bob likes tea." in page and "Alice likes jazz." not in page
    response = client.get(reverse("admin:memories_memoryitem_change", args=[theirs.id]))
    assert response.status_code == 302  # "doesn't exist" redirect, not the content
    client.post(reverse(CHANGELIST), {"action": "archive_selected", "_selected_action": [theirs.id, mine.id]})
    theirs.refresh_from_db()
    assert theirs.status == "active"
    assert "Alice" not in client.get(reverse("admin:memories_memoryhistory_changelist")).content.decode()


def test_the_dashboard_counts_and_draws_without_a_cdn(api, tenant_a, reviewer):
    remember(tenant_a, "alice", "Alice likes jazz.")
    converse(api, ["I think I might try pottery."])
    page = reviewer.get(reverse("admin:index")).content.decode()
    assert 'id="memories-per-day-chart"' in page
    assert re.search(r'<td id="pending-count"><a href="/admin/memories/candidate/[^"]*">1</a></td>', page)  # the queue
    for chart in ("queue-size-chart", "queue-age-chart", "operations-chart", "traits-chart", "health-chart"):
        assert f'id="{chart}"' in page, chart
    assert "<title>" in page.split('id="queue-size-chart"')[1].split("</svg>")[0]  # values on hover
    page = re.sub(r'value="[^"]*"', 'value=""', page)  # a CSRF token may spell "cdn" by chance
    assert "cdn" not in page.lower() and "https://" not in page


@pytest.mark.parametrize("peak, top", [(0, 1.0), (0.4, 1.0), (1, 1.0), (3, 5.0), (7, 10.0), (11, 20.0), (180, 200.0),
                                       (240, 250.0), (2600, 5000.0)])
def test_chart_axes_end_at_a_round_number(peak, top):
    from memory_project.charts import nice_ceiling

    assert nice_ceiling(peak) == top


def test_a_superuser_picks_a_tenant_dashboard_and_a_scoped_operator_sees_only_theirs(tenant_a, tenant_b, operator):
    remember(tenant_a, "alice", "Alice likes jazz.")
    remember(tenant_b, "bob", "Bob likes chess.")
    root = Client()
    root.force_login(operator("root", superuser=True))
    everything = root.get(reverse("admin:index")).content.decode()
    assert "all tenants" in everything and 'id="dashboard-tenant"' in everything
    one = root.get(reverse("admin:index"), {"tenant": tenant_b.id}).content.decode()
    assert "Memory dashboard — globex" in one
    scoped = Client()
    scoped.force_login(operator("sam", "reviewers", tenant=tenant_a))
    page = scoped.get(reverse("admin:index"), {"tenant": tenant_b.id}).content.decode()
    assert "Memory dashboard — acme" in page and 'id="dashboard-tenant"' not in page


def test_memory_text_is_escaped(tenant_a, reviewer):
    memory = remember(tenant_a, "alice", "<script>alert('x')</script> Alice")
    for url in (reverse(CHANGELIST), reverse("admin:memories_memoryitem_change", args=[memory.id])):
        page = reviewer.get(url).content.decode()
        assert "<script>alert" not in page and "&lt;script&gt;alert" in page


def test_the_memory_list_runs_a_fixed_number_of_queries(tenant_a, reviewer, django_assert_max_num_queries):
    for i in range(60):
        remember(tenant_a, f"user-{i % 5}", f"Memory number {i}.")
    with django_assert_max_num_queries(12):
        assert reviewer.get(reverse(CHANGELIST)).status_code == 200


def test_trait_pages_show_evidence_chain_and_operators_dissolve_and_pin(tenant_a, reviewer):
    from traits import services
    from traits.models import Trait

    memory = remember(tenant_a, "alice", "Alice loves tea.")
    parent = services.trait_create(tenant=tenant_a, user_id="alice", text="Enjoys calm mornings",
                                   subtype="preference", actor="t", stage="established", confidence=0.7)
    trait = services.trait_create(tenant=tenant_a, user_id="alice", text="Likes tea", subtype="behavior",
                                  actor="t", evidence=[(memory, "B")], parent=parent)
    page = reviewer.get(reverse("admin:traits_trait_change", args=[trait.pk])).content.decode()
    assert "Alice loves tea." in page and "Enjoys calm mornings" in page and "trend" in page
    changelist = reverse("admin:traits_trait_changelist")
    reviewer.post(changelist, {"action": "pin_selected", "_selected_action": [parent.pk]})
    reviewer.post(changelist, {"action": "dissolve_selected", "_selected_action": [trait.pk]})
    assert Trait.objects.get(pk=parent.pk).pinned and Trait.objects.get(pk=trait.pk).stage == "dissolved"
    assert MemoryHistory.objects.filter(memory_id=trait.pk, event="STAGE_CHANGE", actor="rita").exists()
    assert MemoryHistory.objects.filter(memory_id=parent.pk, event="UPDATE", actor="rita").exists()
    assert reviewer.get(reverse("admin:reflection_reflectioncycle_changelist")).status_code == 200


def test_the_trait_list_links_each_trait_to_its_page_with_rounded_confidences(tenant_a, reviewer):
    from traits import services

    trait = services.trait_create(tenant=tenant_a, user_id="alice", text="Likes tea", subtype="preference",
                                  actor="t", stage="established", confidence=0.31200000000000006)
    page = reviewer.get(reverse("admin:traits_trait_changelist")).content.decode()
    assert f'href="{reverse("admin:traits_trait_change", args=[trait.pk])}"' in page
    assert reverse("admin:memories_memoryitem_change", args=[trait.pk]) not in page
    assert "0.31" in page and "0.312000" not in page
    index = reviewer.get(reverse("admin:index")).content.decode()
    assert "Memory history" in index and "Memory historys" not in index
    assert "Trait evidence" in index and "Trait evidences" not in index


def test_search_as_the_agent_shows_every_score_part_the_plan_and_the_context_block(tenant_a, tenant_b, reviewer,
                                                                                     operator):
    from memories.models import MemoryItem as Item

    remember(tenant_a, "alice", "Alice wants to try pottery classes.")
    remember(tenant_a, "alice", "Alice's sister lives in Porto.")
    url = reverse("admin:memories_search_as_agent")
    page = reviewer.get(url, {"tenant": tenant_a.id, "user_id": "alice", "query": "pottery classes"})
    body = page.content.decode()
    assert page.status_code == 200 and 'id="agent-results"' in body
    first_row = body.split('<td class="num">1</td>')[1].split("</tr>")[0]
    assert "Alice wants to try pottery classes." in first_row
    for part in ("semantic", "keyword", "fusion", "relevance", "recency", "importance", "stage"):
        assert f"<th class=\"num\">{part}</th>" in body
    assert "vector plan <b>exact</b>" in body and 'id="context-block"' in body and "pottery" in body
    assert Item.objects.filter(access_count__gt=0).count() == 0, "an operator's look is not an agent's read"

    bad = reviewer.get(url, {"tenant": tenant_a.id, "user_id": "bad\u200bid", "query": "x"}).content.decode()
    assert "errornote" in bad and "user_id" in bad.split("errornote")[1][:200] and "id=\"agent-results\"" not in bad
    # The query is bounded by the API's own validation: too long or too many words is an error, not a search.
    for query, field in (("x" * 5000, "query"), (" ".join(f"w{i}" for i in range(500)), "query")):
        refused = reviewer.get(url, {"tenant": tenant_a.id, "user_id": "alice", "query": query}).content.decode()
        assert "errornote" in refused and field in refused.split("errornote")[1][:300], refused[-2000:]
        assert 'id="agent-results"' not in refused

    remember(tenant_b, "alice", "Globex's alice likes chess.")
    scoped = Client()
    scoped.force_login(operator("sam", "reviewers", tenant=tenant_a))
    other = scoped.get(url, {"tenant": tenant_b.id, "user_id": "alice", "query": "chess"}).content.decode()
    assert "chess" not in other.split("</form>")[-1], "another tenant's memories stay out of reach"
    assert "Search as the agent" in scoped.get(reverse("admin:memories_memoryitem_changelist")).content.decode()


def test_the_review_queue_decides_inline_with_a_word_diff_and_the_source_turn(api, reviewer, tenant_b, operator):
    converse(api, ["I live in Lisbon."])
    [target] = MemoryItem.objects.all()
    from memories.models import MemoryHistory as H

    H.objects.create(memory_id=target.id, tenant=target.tenant, user_id="alice", event="APPROVE", actor="x")
    converse(api, ["I moved to Porto.", "I think I might try pottery."])
    pending = {c.text: c for c in Candidate.objects.filter(status="pending")}
    page = reviewer.get(reverse("admin:memories_candidate_changelist")).content.decode()
    assert 'id="review-keys"' in page and "memories/review.js" in page
    assert '<del class="diff-old">Lisbon</del>' in page and '<ins class="diff-new">Porto</ins>' in page
    assert "I moved to Porto." in page  # the source turn
    move = next(c for text, c in pending.items() if "Porto" in text)
    pottery = next(c for text, c in pending.items() if "pottery" in text)
    assert f'id="review-{move.id}"' in page and f'form="review-{move.id}"' in page

    listed = reverse("admin:memories_candidate_changelist")
    done = reviewer.post(reverse("admin:memories_candidate_decide", args=[move.id]),
                         {"decision": "approve", "text": "Alice moved to Porto in 2026.", "next": listed})
    assert done.status_code == 302 and done["Location"] == f"{listed}#candidate-{pottery.id}"  # on the next row
    move.refresh_from_db()
    assert move.status == "approved" and MemoryItem.objects.get(id=move.result_memory_id).text == \
        "Alice moved to Porto in 2026."
    reviewer.post(reverse("admin:memories_candidate_decide", args=[pottery.id]),
                  {"decision": "reject", "next": "https://evil.example/"})
    pottery.refresh_from_db()
    assert pottery.status == "rejected"

    outsider = Client()
    outsider.force_login(operator("ola", "reviewers", tenant=tenant_b))
    again = Candidate.objects.create(tenant=move.tenant, user_id="alice", operation="ADD", text="x", reasons=["low"])
    assert outsider.post(reverse("admin:memories_candidate_decide", args=[again.id]),
                         {"decision": "approve"}).status_code == 404


def test_traits_filter_by_tenant_through_their_memory(tenant_a, tenant_b, operator):
    from traits import services

    services.trait_create(tenant=tenant_a, user_id="alice", text="Likes tea", subtype="preference", actor="t",
                          stage="established", confidence=0.7)
    services.trait_create(tenant=tenant_b, user_id="bob", text="Likes chess", subtype="preference", actor="t",
                          stage="established", confidence=0.7)
    root = Client()
    root.force_login(operator("root", superuser=True))
    for name in ("traits_trait", "traits_traitevidence"):
        assert root.get(reverse(f"admin:{name}_changelist"), {"tenant": tenant_b.id}).status_code == 200
    page = root.get(reverse("admin:traits_trait_changelist"), {"tenant": tenant_b.id}).content.decode()
    assert "Likes chess" in page and "Likes tea" not in page


def test_the_forget_page_has_one_heading(tenant_a, operator):
    root = Client()
    root.force_login(operator("root", superuser=True))
    for query in ({}, {"tenant": tenant_a.id, "user_id": "alice"}):
        page = root.get(reverse("admin:memories_forget_user"), query).content.decode()
        assert page.count("<h1>Forget a user</h1>") == 1 and page.count("Forget a user</h") == 1, query
