"""The review queue's feedback and a reviewer's corrections in the admin (issue 56): the sensitive kind named
on the card, Undo giving back what the reviewer typed, a candidate drawn from a turn the user asked to forget
closed by the forget with a note; the memory page's subject and split forms. Pure parts as tables; the
forget through the real conversation door."""

import pytest
from django.test import Client
from django.urls import reverse

from memories.admin.review import given_back, sensitive_named
from memories.models import Candidate, CandidateStatus, MemoryHistory, MemoryItem
from memories.writing import MemorySpec, memory_create
from tests.conftest import converse


@pytest.mark.parametrize(("detail", "named"), [
    ("sensitive content: email", "email"),
    ("confidence 0.40 < 0.50; sensitive content: health", "health"),
    ("sensitive content: email, phone; card in tags", "email, phone; card in tags"),
    ("sensitive content: health; rejected: not now", "health"),
    ("sensitive content: email; closed: the user asked to forget it", "email"),
    ("sensitive content in what was said (its turns, or split across them): card", "card (in what was said)"),
    ("confidence 0.40 < 0.50", ""),
    ("", ""),
])
def test_sensitive_named(detail, named):
    assert sensitive_named(detail) == named


@pytest.mark.parametrize(("typed", "candidate", "given"), [
    ({"id": "c1", "reason": "not about Ann", "text": ""}, "c1", ("not about Ann", "the text")),
    ({"id": "c1", "reason": "", "text": "Ann's edit"}, "c1", ("", "Ann's edit")),
    ({"id": "c1", "reason": "not about Ann", "text": ""}, "c2", ("", "the text")),
    (None, "c1", ("", "the text")),
])
def test_given_back(typed, candidate, given):
    assert given_back(typed, candidate, "the text") == given


def test_a_forget_closes_the_candidates_its_turn_made_with_a_note(api):
    converse(api, ["I might learn the cello, and my email is ann@example.com."], user_id="ann")
    held = {c.reasons[0]: c for c in Candidate.objects.filter(user_id="ann")}
    assert set(held) == {"low_confidence", "sensitive"}
    assert all(c.status == CandidateStatus.PENDING for c in held.values())
    converse(api, ["Please forget my email address."], user_id="ann", session_id="s2")
    email, cello = (Candidate.objects.get(id=held[r].id) for r in ("sensitive", "low_confidence"))
    # The one that said it, and the one drawn from the turn that said it: closed, with the note why.
    assert email.status == cello.status == CandidateStatus.REJECTED
    assert email.reason_detail.endswith("closed: the user asked to forget it")
    assert cello.reason_detail.endswith("closed: the user asked to forget the turn it came from")
    assert "cello" not in cello.text and "ann@example.com" not in email.text


def test_the_queue_names_the_kind_and_shows_the_closing_note(api, operator):
    converse(api, ["My email is ann@example.com."], user_id="ann")
    reviewer = Client()
    reviewer.force_login(operator("rita", "reviewers"))
    page = reviewer.get(reverse("admin:memories_candidate_changelist")).content.decode()
    assert "sensitive: email" in page and "sensitive (email)" in page
    converse(api, ["Please forget my email address."], user_id="ann", session_id="s2")
    page = reviewer.get(reverse("admin:memories_candidate_changelist") + "?status=all").content.decode()
    assert "Closed: the user asked to forget" in page


def test_undo_gives_back_the_reason_typed(api, operator):
    converse(api, ["I might learn the cello."], user_id="ann")
    held = Candidate.objects.get(user_id="ann")
    reviewer = Client()
    reviewer.force_login(operator("rita", "reviewers"))
    reviewer.post(reverse("admin:memories_candidate_decide", args=[held.id]),
                  {"decision": "reject", "reason": "not about Ann", "text": held.text})
    page = reviewer.post(reverse("admin:memories_candidate_undo", args=[held.id]), follow=True).content.decode()
    assert "with the reason you typed" in page and 'value="not about Ann"' in page
    again = reviewer.get(reverse("admin:memories_candidate_changelist")).content.decode()
    assert 'value="not about Ann"' not in again  # given back once, not kept for ever


def test_the_memory_page_changes_whom_a_memory_is_about_and_splits_one(api, tenant_a, operator):
    from memories.models import Person

    converse(api, ["My sister Ana lives in Bristol. My mum Sheila teaches maths."], user_id="priya")
    ana = Person.objects.get(name="Ana")
    maths = MemoryItem.objects.get(user_id="priya", text__icontains="maths", expired_at__isnull=True)
    reviewer = Client()
    reviewer.force_login(operator("rita", "reviewers"))
    page = reviewer.get(reverse("admin:memories_memoryitem_change", args=[maths.id])).content.decode()
    assert 'id="subject-person"' in page and "Split into two memories" in page
    reviewer.post(reverse("admin:memories_memoryitem_subject", args=[maths.id]),
                  {"person_id": str(ana.id), "reason": "it was Ana"})
    assert MemoryItem.objects.get(id=maths.id).subject_entity_id == ana.id
    assert MemoryHistory.objects.filter(memory_id=maths.id, event="UPDATE", actor="rita", reason="it was Ana").exists()

    joined = memory_create(tenant=tenant_a, actor="test", spec=MemorySpec(
        user_id="priya", text="Priya keeps bees and her brother lives in Ghent.")).memory
    answer = reviewer.post(reverse("admin:memories_memoryitem_split", args=[joined.id]),
                           {"part": ["Priya keeps bees.", "Priya's brother lives in Ghent."], "reason": "two facts"},
                           follow=True)
    assert b"Split into 2 memories." in answer.content
    assert set(MemoryItem.objects.filter(user_id="priya", expired_at__isnull=True, text__in=[
        "Priya keeps bees.", "Priya's brother lives in Ghent."]).values_list("text", flat=True)) == {
        "Priya keeps bees.", "Priya's brother lives in Ghent."}
    refused = reviewer.post(reverse("admin:memories_memoryitem_split", args=[maths.id]),
                            {"part": ["only one"], "reason": ""}, follow=True)
    assert b"Not split: give at least two texts" in refused.content
