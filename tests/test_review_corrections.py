"""A reviewer corrects the service (issue 56 item 1): reinstate a wrongly retired memory (alone, or
retiring the wrong replacement), change whom a memory is about, split a memory that joined two facts;
bulk actions say what they did and why not. Pure decisions as tables, then the writer on a real database."""

import pytest

from memories import writing
from memories.errors import InvalidOperation, VersionConflict
from memories.models import MemoryHistory, MemoryItem, MemorySource
from memories.text import bulk_summary
from memories.writing import ALONE, RETIRE_REPLACEMENT, MemorySpec, memory_create
from tests.conftest import converse

FORGOTTEN = "it was forgotten at the user's request: its words are gone and it cannot be restored"


@pytest.mark.parametrize(("state", "forgotten", "choice", "replacement", "refused"), [
    ("invalidated", False, ALONE, "current", ""),
    ("invalidated", False, RETIRE_REPLACEMENT, "current", ""),
    ("invalidated", False, ALONE, None, ""),
    ("invalidated", False, RETIRE_REPLACEMENT, None, "no memory retired it"),
    ("invalidated", False, RETIRE_REPLACEMENT, "archived", "archived already"),
    ("superseded", False, RETIRE_REPLACEMENT, "current", ""),
    ("archived", False, ALONE, None, ""),
    ("expired", False, ALONE, None, ""),
    ("archived", True, ALONE, None, "forgotten at the user's request"),
    ("current", False, ALONE, None, "already current"),
    ("pending", False, ALONE, None, "decide it in the review queue"),
    ("rejected", False, ALONE, None, "decide it in the review queue"),
    ("invalidated", False, "both", "current", "choose"),
])
def test_reinstate_refusal(state, forgotten, choice, replacement, refused):
    answer = writing.reinstate_refusal(state=state, forgotten=forgotten, choice=choice, replacement_state=replacement)
    assert (refused in answer) if refused else answer == ""


@pytest.mark.parametrize(("current", "found", "active", "same", "refused"), [
    (True, True, True, False, ""),
    (False, True, True, False, "reinstate it first"),
    (True, False, False, False, "no such person"),
    (True, True, False, False, "merged into another"),
    (True, True, True, True, "already about them"),
])
def test_subject_refusal(current, found, active, same, refused):
    answer = writing.subject_refusal(current=current, person_found=found, person_active=active, same=same)
    assert (refused in answer) if refused else answer == ""


@pytest.mark.parametrize(("original", "parts", "refused"), [
    ("Ann keeps bees and lives in Ghent.", ["Ann keeps bees.", "Ann lives in Ghent."], ""),
    ("Ann keeps bees and lives in Ghent.", ["Ann keeps bees."], "at least two"),
    ("Ann keeps bees and lives in Ghent.", ["Ann keeps bees.", "  "], "empty"),
    ("Ann keeps bees and lives in Ghent.", ["Ann keeps bees.", "ann keeps bees. "], "say the same"),
    ("Ann keeps bees and lives in Ghent.", ["Ann keeps bees and lives in Ghent.", "Ann lives in Ghent."],
     "repeats the whole memory"),
])
def test_split_refusal(original, parts, refused):
    answer = writing.split_refusal(original=original, parts=parts)
    assert (refused in answer) if refused else answer == ""


@pytest.mark.parametrize(("done", "why_not", "text", "level"), [
    (0, {("was forgotten at the user's request and cannot be restored",
          "were forgotten at the user's request and cannot be restored"): 2},
     "0 restored: 2 were forgotten at the user's request and cannot be restored.", "warning"),
    (3, {}, "3 restored.", "success"),
    (0, {}, "0 restored.", "warning"),
    (1, {("was current already", "were current already"): 1}, "1 restored: 1 was current already.", "warning"),
])
def test_bulk_summary(done, why_not, text, level):
    assert bulk_summary(done=done, verb="restored", why_not=why_not) == (text, level)


@pytest.mark.parametrize(("refusal", "phrase"), [
    (f"memory 1 cannot be reinstated: {FORGOTTEN}", "were forgotten at the user's request and cannot be restored"),
    ("memory 1 cannot be reinstated: it is already current", "were current already"),
    ("memory 1 cannot be reinstated: it is pending in review: decide it in the review queue", "wait in review"),
    ("memory 2 with the same text is already current", "say what current memories say"),
])
def test_not_reinstated_phrase(refusal, phrase):
    assert phrase in writing.not_reinstated_phrase(refusal)[1]


def remember(tenant, user_id, text, **fields):
    return memory_create(tenant=tenant, spec=MemorySpec(user_id=user_id, text=text, **fields), actor="test").memory


def wrongly_invalidated(tenant):
    leeds = remember(tenant, "marcus", "Marcus lives in Leeds.")
    job = remember(tenant, "marcus", "Marcus started a new job at a bank.")
    writing.memory_invalidate(tenant=tenant, memory_id=leeds.id, invalid_at=job.created_at, actor="extraction",
                              reason="contradicted by: Marcus started a new job at a bank.", contradicted_by=job)
    return leeds, job


def test_reinstate_alone_keeps_the_replacement(db, tenant_a):
    leeds, job = wrongly_invalidated(tenant_a)
    result = writing.memory_reinstate(tenant=tenant_a, memory_id=leeds.id, choice=ALONE, actor="admin:rita",
                                      reason="a new job does not move him")
    leeds.refresh_from_db()
    job.refresh_from_db()
    assert result.retired is None
    assert leeds.expired_at is None and leeds.invalid_at is None and leeds.status == "active"
    assert job.expired_at is None and job.status == "active"
    row = MemoryHistory.objects.filter(memory_id=leeds.id).order_by("created_at", "id").last()
    assert (row.event, row.actor, row.reason) == ("RESTORE", "admin:rita", "a new job does not move him")
    assert row.new_data["version"] == leeds.version
    with pytest.raises(InvalidOperation, match="already current"):
        writing.memory_reinstate(tenant=tenant_a, memory_id=leeds.id, choice=ALONE, actor="admin:rita", reason="")


def test_reinstate_and_retire_the_wrong_replacement(db, tenant_a):
    leeds, job = wrongly_invalidated(tenant_a)
    result = writing.memory_reinstate(tenant=tenant_a, memory_id=leeds.id, choice=RETIRE_REPLACEMENT,
                                      actor="admin:rita", reason="misheard: he did not change jobs")
    job.refresh_from_db()
    assert result.retired.id == job.id and job.status == "archived"
    row = MemoryHistory.objects.filter(memory_id=job.id).order_by("created_at", "id").last()
    assert row.event == "DELETE" and row.actor == "admin:rita" and "misheard" in row.reason
    assert str(leeds.id) in row.reason


def test_a_superseded_memory_comes_back_and_its_wrong_version_goes(db, tenant_a):
    old = remember(tenant_a, "ann", "Ann works at the bakery.")
    new = writing.memory_supersede(tenant=tenant_a, memory_id=old.id, new_text="Ann works at the library.",
                                   actor="extraction")
    writing.memory_reinstate(tenant=tenant_a, memory_id=old.id, choice=RETIRE_REPLACEMENT, actor="admin:rita",
                             reason="she still works at the bakery")
    old.refresh_from_db()
    new.refresh_from_db()
    assert old.expired_at is None and old.superseded_by_id is None and new.status == "archived"


def test_a_forgotten_memory_is_never_reinstated(db, tenant_a):
    gone = remember(tenant_a, "ann", "Ann plays squash on Tuesdays.")
    writing.memory_forget(tenant=tenant_a, memory_id=gone.id, actor="test")
    with pytest.raises(InvalidOperation, match="forgotten at the user's request"):
        writing.memory_reinstate(tenant=tenant_a, memory_id=gone.id, choice=ALONE, actor="admin:rita", reason="")
    assert MemoryItem.objects.get(id=gone.id).status == "archived"


def test_reinstating_words_already_current_is_a_conflict(db, tenant_a):
    old = remember(tenant_a, "ann", "Ann has a cat.")
    writing.memory_set_status(tenant=tenant_a, memory_id=old.id, status="archived", actor="test")
    remember(tenant_a, "ann", "Ann has a cat.")
    with pytest.raises(VersionConflict, match="same text"):
        writing.memory_reinstate(tenant=tenant_a, memory_id=old.id, choice=ALONE, actor="admin:rita", reason="")


def test_change_whom_a_memory_is_about(api, tenant_a):
    from memories.models import Person

    converse(api, ["My sister Ana lives in Bristol. My mum Sheila teaches maths."], user_id="priya")
    ana = Person.objects.get(name="Ana")
    memory = MemoryItem.objects.get(user_id="priya", text__icontains="maths", expired_at__isnull=True)
    assert memory.subject_entity_id != ana.id
    changed = writing.memory_set_subject(tenant=tenant_a, memory_id=memory.id, person_id=ana.id,
                                         actor="admin:rita", reason="it was Ana who teaches maths")
    assert changed.subject_entity_id == ana.id and changed.version == memory.version + 1
    row = MemoryHistory.objects.filter(memory_id=memory.id).order_by("created_at", "id").last()
    assert (row.event, row.actor, row.reason) == ("UPDATE", "admin:rita", "it was Ana who teaches maths")
    assert row.new_data["subject_entity_id"] == str(ana.id)
    with pytest.raises(InvalidOperation, match="already about them"):
        writing.memory_set_subject(tenant=tenant_a, memory_id=memory.id, person_id=ana.id, actor="admin:rita",
                                   reason="")
    stranger = remember(tenant_a, "someone-else", "Someone else likes tea.")
    with pytest.raises(InvalidOperation, match="no such person"):  # another user's people are not offered
        writing.memory_set_subject(tenant=tenant_a, memory_id=stranger.id, person_id=ana.id, actor="admin:rita",
                                   reason="")


def test_split_a_memory_that_joined_two_facts(db, tenant_a):
    joined = remember(tenant_a, "ann", "Ann keeps bees and her brother lives in Ghent.", importance=0.8)
    MemorySource.objects.create(item=joined, session_id="s1", message_indices=[0], job_id="")
    bees, ghent = writing.memory_split(tenant=tenant_a, memory_id=joined.id, actor="admin:rita",
                                       parts=["Ann keeps bees.", "Ann's brother lives in Ghent."],
                                       reason="two facts in one")
    joined.refresh_from_db()
    assert joined.expired_at is not None and joined.superseded_by_id == bees.id
    assert {bees.text, ghent.text} == {"Ann keeps bees.", "Ann's brother lives in Ghent."}
    assert bees.importance == ghent.importance == 0.8 and bees.expired_at is None and ghent.expired_at is None
    assert MemorySource.objects.filter(item_id__in=[bees.id, ghent.id], session_id="s1").count() == 2
    row = MemoryHistory.objects.get(memory_id=joined.id, event="SUPERSEDE")
    assert row.actor == "admin:rita" and "two facts in one" in row.reason and str(ghent.id) in row.reason
    assert MemoryHistory.objects.get(memory_id=ghent.id, event="ADD").new_data["split_from"] == str(joined.id)
    with pytest.raises(InvalidOperation, match="only a current memory"):
        writing.memory_split(tenant=tenant_a, memory_id=joined.id, parts=["a b", "c d"], actor="x", reason="")


def test_a_split_part_passes_the_sensitive_gate(db, tenant_a):
    joined = remember(tenant_a, "ann", "Ann keeps bees and likes Ghent.")
    with pytest.raises(InvalidOperation):
        writing.memory_split(tenant=tenant_a, memory_id=joined.id, actor="admin:rita", reason="",
                             parts=["Ann keeps bees.", "Ann's card is 4111 1111 1111 1111."])
    joined.refresh_from_db()
    assert joined.expired_at is None  # nothing written
