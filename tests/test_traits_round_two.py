"""Traits a person would recognise: one habit said in other words is one trait, a habit the user says ended is
no longer shown, a forget request or small talk grows none, and a trait's page explains itself (its evidence
by session, why each statement joined, what a reviewer can do) — through the API as a client sends turns."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from memories.models import MemoryHistory
from tests.conftest import converse, end_session
from traits.models import Trait, TraitEvidence, TraitOrigin

SHOWN = ("emerging", "established", "core")


def _say(api, turns_by_session: list[list[str]], prefix: str = "s") -> None:
    for number, turns in enumerate(turns_by_session, start=1):
        converse(api, turns, session_id=f"{prefix}{number}")
        end_session(api, f"{prefix}{number}")


def _traits(api, stages: str = "trend,candidate,emerging,established,core") -> list[dict]:
    grouped = api.get(f"users/alice/traits?stage={stages}").json()
    return [t for rows in grouped.values() for t in rows]


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("habit, ended, word", [
    (["I play chess at the club every Thursday evening.", "Thursday night chess at the club is my weekly ritual."],
     "I don't play chess any more, the club closed down.", "chess"),
    (["我每天晚上都会弹一会儿吉他。", "晚饭后弹吉他是我每天的习惯。"], "现在不弹吉他了，手指受伤了。", "吉他"),
], ids=["english", "chinese"])
def test_a_habit_the_user_says_ended_is_no_longer_shown_and_says_why(api, habit, ended, word):
    _say(api, [[said] for said in habit])
    shown = [t for t in _traits(api, ",".join(SHOWN)) if word in t["text"]]
    assert len(shown) == 1 and shown[0]["supporting"] == 2, _traits(api)
    _say(api, [[ended]], prefix="later")
    assert not [t for t in _traits(api, ",".join(SHOWN)) if word in t["text"]], _traits(api)
    trait = Trait.objects.get(pk=shown[0]["id"])
    # Ended by the reflector's reading of the turn (a candidate: said again, it grows back), or dissolved when
    # the extractor read the turn as replacing the habit's facts; either way with the reason in its history.
    assert trait.stage in ("candidate", "dissolved")
    reasons = " | ".join(MemoryHistory.objects.filter(memory_id=trait.memory_id).values_list("reason", flat=True))
    assert "the user said it ended" in reasons or "invalidated" in reasons, reasons


@pytest.mark.django_db(transaction=True)
def test_forget_requests_and_small_talk_grow_no_trait(api):
    _say(api, [["I run the half marathon course every Sunday morning.", "thanks!"],
               ["Please forget what I said about the half marathon.", "haha ok"],
               ["Can you forget the half marathon thing?", "cool, thanks"]])
    texts = [t["text"] for t in _traits(api)]
    assert not [t for t in texts if "forget" in t.lower() or "said about" in t.lower() or "thanks" in t.lower()], texts
    assert not [t for t in _traits(api, ",".join(SHOWN)) if "marathon" in t["text"]], texts


@pytest.mark.django_db(transaction=True)
def test_a_traits_page_shows_its_evidence_by_session_and_why_each_joined(api):
    _say(api, [["I cycle to work every day, about 8 km along the lake."],
               ["The bike is how I get to the office five days a week."]])
    (trait,) = [t for t in _traits(api, ",".join(SHOWN)) if "office" in t["text"] or "work" in t["text"]]
    page = api.get(f"traits/{trait['id']}").json()
    sessions = page["evidence_by_session"]
    assert [group["session_id"] for group in sessions] == ["s1", "s2"], sessions
    reasons = [e["reason"] for group in sessions for e in group["evidence"]]
    assert reasons[0].startswith("the user's words read as habit") and "first statement" in reasons[0], reasons
    assert "close to its meaning" in reasons[1] and sessions[1]["evidence"][0]["closeness"] > 0, reasons
    assert [a["action"] for a in page["reviewer_actions"]] == ["pin", "split", "dissolve"]


@pytest.mark.django_db(transaction=True)
def test_a_reviewer_splits_a_statement_that_says_something_else_out_of_a_trait(api, operator):
    _say(api, [["I cycle to work every day, about 8 km along the lake."],
               ["The bike is how I get to the office five days a week."],
               ["Cycling into work is just what I do, every single weekday."]])
    trait = Trait.objects.get(pk=next(t["id"] for t in _traits(api, ",".join(SHOWN)) if "work" in t["text"]))
    moving = TraitEvidence.objects.filter(trait=trait, kind="supporting").order_by("created_at").last()
    client = Client()
    client.force_login(operator("rita", "reviewers"))
    listing = reverse("admin:traits_traitevidence_changelist")
    page = client.get(f"{listing}?trait__memory__id__exact={trait.pk}")
    assert page.status_code == 200 and "Split the selected statements" in page.content.decode()
    response = client.post(listing, {"action": "split_selected", "_selected_action": [moving.pk]}, follow=True)
    assert "Split 1 statement(s) into the trait" in response.content.decode()
    split = Trait.objects.get(derived_from=TraitOrigin.REVIEWER_SPLIT)
    assert list(split.evidence.values_list("memory_id", flat=True)) == [moving.memory_id]
    assert split.evidence.get().reason.startswith(f"split out of trait {trait.pk}")
    moving.refresh_from_db()
    assert moving.withdrawn_at is not None
    assert MemoryHistory.objects.filter(memory_id=trait.memory_id, actor__contains="rita",
                                        reason__contains="split by a reviewer").exists()
