"""A reviewer approves sensitive text deliberately: as written with a recorded reason, or redacted; both
audited (the memory's APPROVE row and the candidate say so), and a refusal is shown in the candidate's own
card in the admin's queue, not off-screen."""

import pytest
from django.test import Client
from django.urls import reverse

from memories.governance import AS_WRITTEN, REDACTED, sensitive_approval_refusal
from memories.keys import api_key_create
from memories.models import Candidate, CandidateStatus, MemoryHistory, MemoryItem
from tests.conftest import Api

NUMBER = "07700 900123"
SAID = f"Please keep my mobile, {NUMBER}, for the courier."


@pytest.fixture
def agent(db, django_capture_on_commit_callbacks) -> Api:
    return Api(api_key_create(tenant_name="acme", name="agent").raw_key, django_capture_on_commit_callbacks)


def _held(agent: Api, text: str = SAID, **fields) -> dict:
    answer = agent.post("memories", {"user_id": "nina", "text": text, **fields})
    assert answer.status_code == 202, answer.content
    return answer.json()["candidate"]


@pytest.mark.parametrize(("found", "mode", "reason", "refused_field"), [
    ([], "", "", ""),
    ([("text", ["phone"])], "", "", "text"),
    ([("data.ssn", ["national_id"])], "", "", "data.ssn"),
    ([("text", ["phone"])], AS_WRITTEN, "", "reason"),
    ([("text", ["phone"])], AS_WRITTEN, "   ", "reason"),
    ([("text", ["phone"])], AS_WRITTEN, "the user asked us to keep it", ""),
    ([], AS_WRITTEN, "", "reason"),
    ([("text", ["health"])], REDACTED, "", "text"),  # redaction that left something behind
    ([], REDACTED, "", ""),
    ([], "keep", "", "sensitive"),
])
def test_the_approval_decision_as_a_table(found, mode, reason, refused_field):
    refusal, field = sensitive_approval_refusal(found=found, mode=mode, reason=reason)
    assert field == refused_field and bool(refusal) == bool(refused_field)


def test_approve_as_written_needs_a_reason_and_is_audited(agent, reviewer):
    candidate = _held(agent)
    plain = reviewer.post(f"review/{candidate['id']}/approve", {})
    assert plain.status_code == 400 and "approve it as written with a reason" in plain.json()["text"][0]
    no_reason = reviewer.post(f"review/{candidate['id']}/approve", {"sensitive": "as_written"})
    assert no_reason.status_code == 400 and "reason" in no_reason.json()
    answer = reviewer.post(f"review/{candidate['id']}/approve",
                           {"sensitive": "as_written", "reason": "the user asked us to keep it for deliveries"})
    assert answer.status_code == 200 and answer.json()["status"] == "approved", answer.content
    memory = MemoryItem.objects.get(user_id="nina", status="active")
    assert memory.text == SAID
    approval = MemoryHistory.objects.get(memory_id=memory.id, event="APPROVE")
    assert approval.new_data["sensitive_kept_as_written"] == ["phone"]
    assert approval.new_data["sensitive_reason"] == "the user asked us to keep it for deliveries"
    assert "kept as written (phone): the user asked us to keep it" in approval.reason
    assert "kept as written" in Candidate.objects.get(id=candidate["id"]).reason_detail


def test_approve_redacted_keeps_the_number_nowhere(agent, reviewer):
    candidate = _held(agent, tags=["courier", f"tel {NUMBER}"], data={"phone": NUMBER, "note": "leave at door"})
    answer = reviewer.post(f"review/{candidate['id']}/approve", {"sensitive": "redacted"})
    assert answer.status_code == 200, answer.content
    memory = MemoryItem.objects.get(user_id="nina", status="active")
    assert memory.text == "Please keep my mobile, [phone withheld], for the courier."
    assert memory.tags == ["courier", "tel [phone withheld]"]
    assert memory.data == {"phone": "[phone withheld]", "note": "leave at door"}
    assert MemoryHistory.objects.get(memory_id=memory.id, event="APPROVE").new_data["sensitive_redacted"] is True
    stored = [Candidate.objects.get(id=candidate["id"]).text, str(Candidate.objects.get(id=candidate["id"]).data),
              *(f"{h.old_text} {h.new_text} {h.new_data} {h.old_data}" for h in MemoryHistory.objects.all())]
    assert not any(NUMBER in words for words in stored)


def test_a_held_patch_is_approved_redacted_or_as_written(agent, reviewer):
    memory = agent.remember("nina", "Nina likes chess.")
    held = agent.patch(f"memories/{memory['id']}", {"data": {"ssn": "078-05-1120"}}).json()["candidate"]
    assert reviewer.post(f"review/{held['id']}/approve", {"sensitive": "redacted"}).status_code == 200
    current = MemoryItem.objects.get(user_id="nina", status="active", expired_at__isnull=True)
    assert current.data == {"ssn": "[id withheld]"}
    again = agent.patch(f"memories/{current.id}", {"text": "Nina's SSN is 078-05-1120."}).json()["candidate"]
    assert reviewer.post(f"review/{again['id']}/approve",
                         {"sensitive": "as_written", "reason": "the user's tax adviser needs it"}).status_code == 200
    assert MemoryItem.objects.filter(text="Nina's SSN is 078-05-1120.", status="active").exists()


def test_the_admin_queue_shows_the_refusal_in_the_card_and_approves_both_ways(agent, operator):
    first, second, third = _held(agent), _held(agent, f"My email is nina@example.com, {NUMBER}."), \
        _held(agent, "My PIN is 4821.")
    client = Client()
    client.force_login(operator("rita", "reviewers"))
    listed = reverse("admin:memories_candidate_changelist")
    page = client.get(listed).content.decode()
    assert page.count("Approve as written") == 3 and page.count("Approve redacted") == 3

    decide = reverse("admin:memories_candidate_decide", args=[first["id"]])
    refused = client.post(decide, {"decision": "approve", "text": SAID})
    assert refused.status_code == 302 and refused["Location"].endswith(f"#candidate-{first['id']}")
    page = client.get(listed).content.decode()
    card = page[page.index(f'id="candidate-{first["id"]}"'):]
    card = card[:card.index('class="review-card"', 10) if 'class="review-card"' in card[10:] else len(card)]
    assert 'class="review-refusal errornote" role="alert"' in card and "approve it as written" in card
    assert "review-refusal" not in client.get(listed).content.decode()  # shown once, where it happened

    client.post(decide, {"decision": "approve_as_written", "text": SAID, "reason": ""})
    assert Candidate.objects.get(id=first["id"]).status == CandidateStatus.PENDING  # no reason: refused
    client.post(decide, {"decision": "approve_as_written", "text": SAID, "reason": "courier deliveries"})
    client.post(reverse("admin:memories_candidate_decide", args=[second["id"]]),
                {"decision": "approve_redacted", "text": second["text"]})
    active = set(MemoryItem.objects.filter(user_id="nina", status="active").values_list("text", flat=True))
    assert active == {SAID, "My email is [email withheld], [phone withheld]."}
    assert Candidate.objects.get(id=third["id"]).status == CandidateStatus.PENDING
