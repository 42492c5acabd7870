"""Reflection at the moments seed 004 names: a session's end (asked for, or idle), a contradiction of a
trait's evidence, and one clock for decay; trait texts that read as sentences."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection
from django.utils import timezone

from memories.erasure import user_erase
from memories.models import MemoryHistory, MemoryItem
from memories.writing import (
    MemorySpec,
    memory_create,
    memory_invalidate,
    memory_set_status,
    memory_supersede,
)
from reflection.engine import reflection_run
from reflection.models import ReflectionCycle
from reflection.moments import (
    on_evidence_withdrawn,
    reflection_reevaluate,
    session_end_request,
    sessions_end_idle,
    sessions_gone_idle,
)
from reflection.reflectors import trait_text
from tests.conftest import converse, wait_for_cycle
from traits import lifecycle, services
from traits.models import Trait, TraitEvidence

NOW = datetime(2026, 11, 1, tzinfo=UTC)
HABITS = ["I have a flat white every morning.", "I always have a flat white before work.",
          "I usually have a flat white with oat milk."]


def remember(tenant, text, user_id="alice", **fields):
    return memory_create(tenant=tenant, spec=MemorySpec(user_id=user_id, text=text, **fields), actor="t").memory


# --------------------------------------------------------------------------- one decay rule, one clock


@pytest.mark.parametrize("case, fields, expected", [
    ("never reinforced: the clock starts at the first observation",
     dict(stage="emerging", pinned=False, last_reinforced_at=None, first_observed_at=NOW - timedelta(days=30)),
     0.6 * 2.718281828 ** (-0.005 * 30)),
    ("reinforced: the clock starts at the last reinforcement",
     dict(stage="emerging", pinned=False, last_reinforced_at=NOW - timedelta(days=10),
          first_observed_at=NOW - timedelta(days=30)), 0.6 * 2.718281828 ** (-0.005 * 10)),
    ("pinned: an operator decided it holds",
     dict(stage="established", pinned=True, last_reinforced_at=None, first_observed_at=NOW - timedelta(days=300)),
     0.6),
    ("a trend lives by its window, not by decay",
     dict(stage="trend", pinned=False, last_reinforced_at=None, first_observed_at=NOW - timedelta(days=300)), 0.6),
    ("observed just now", dict(stage="candidate", pinned=False, last_reinforced_at=None, first_observed_at=NOW), 0.6),
])
def test_one_decay_rule(case, fields, expected):
    got = lifecycle.trait_decayed_confidence(confidence=0.6, subtype="behavior", reinforcements=0, now=NOW, **fields)
    assert got == pytest.approx(expected, rel=1e-6), case


def test_the_write_path_the_refresh_and_the_api_agree_on_decay(tenant_a, api):
    """Never reinforced, reinforced and pinned traits: what a write stored, what the periodic refresh
    computes and what the API shows are the same number."""
    now = timezone.now()
    made = []
    for n, (last, pinned) in enumerate([(None, False), (now - timedelta(days=20), False), (None, True)]):
        trait = services.trait_create(tenant=tenant_a, user_id="alice", text=f"Reads novel {n} most evenings",
                                      subtype="behavior", actor="t", stage="emerging", confidence=0.7)
        Trait.objects.filter(pk=trait.pk).update(first_observed_at=now - timedelta(days=40),
                                                 last_reinforced_at=last, pinned=pinned)
        made.append(trait.pk)
    services.traits_refresh_decay(now=now)
    shown = {t["id"]: t["decayed_confidence"]
             for t in api.get("users/alice/traits").json()["behavior"]}
    for trait in Trait.objects.filter(pk__in=made):
        rule = lifecycle.trait_decayed_confidence(
            confidence=trait.confidence, subtype=trait.subtype, stage=trait.stage, pinned=trait.pinned,
            reinforcements=trait.reinforcement_count, last_reinforced_at=trait.last_reinforced_at,
            first_observed_at=trait.first_observed_at, now=now)
        assert trait.decayed_confidence == pytest.approx(rule, abs=1e-9)
        assert shown[str(trait.pk)] == pytest.approx(rule, abs=1e-3)  # the API computes it now
    never, reinforced, pinned = (Trait.objects.get(pk=pk) for pk in made)
    assert never.decayed_confidence < reinforced.decayed_confidence < pinned.decayed_confidence == 0.7


# --------------------------------------------------------------------------- the rule for withdrawn support


@pytest.mark.parametrize("stage, confidence, live, expected", [
    ("emerging", 0.5, 3, "emerging"),
    ("emerging", 0.5, 1, "candidate"),  # too little support left for its stage
    ("emerging", 0.3, 3, "candidate"),  # confidence under entry less the margin
    ("established", 0.6, 4, "emerging"),
    ("core", 0.9, 1, "candidate"),  # steps down as far as the support goes
    ("core", 0.9, 2, "emerging"),
    ("candidate", 0.3, 1, "candidate"),  # the floor while any support holds
    ("candidate", 0.3, 0, "dissolved"),
    ("emerging", 0.04, 5, "dissolved"),  # confidence under the floor
    ("trend", 0.2, 1, "trend"),
    ("trend", 0.2, 0, "dissolved"),
])
def test_stage_for_support(stage, confidence, live, expected):
    assert lifecycle.stage_for_support(stage=stage, confidence=confidence, live_supporting=live) == expected


@pytest.mark.parametrize("cause, contradicting, expected_confidence, contradictions", [
    ("invalidated", "A", 0.5 * 0.7, 1),
    ("forgotten", None, 0.5 * (1 - 0.3 * 0.7), 0),
    ("erased", None, 0.5 * (1 - 0.3 * 0.7), 0),
    ("superseded", None, 0.5 * (1 - 0.3 * 0.4), 0),
])
def test_withdraw_support(cause, contradicting, expected_confidence, contradictions):
    state = lifecycle.TraitState("behavior", "emerging", 0.5, 3, 0, 4, NOW, None)
    after = lifecycle.withdraw_support(state, withdrawn=1, cause=cause, contradicting_quality=contradicting, now=NOW)
    assert after.confidence == pytest.approx(expected_confidence)
    # Support taken back is news, not noise: no hysteresis, the stage must be earned at the new confidence.
    expected_stage = "emerging" if expected_confidence >= lifecycle.STAGE_ENTRY["emerging"][0] else "candidate"
    assert after.supporting == 3 and after.contradictions == contradictions and after.stage == expected_stage


# --------------------------------------------------------------------------- trait texts


@pytest.mark.parametrize("memory, polarity, subtype, expected", [
    ("I have a flat white every morning.", "+", "behavior", "Has a flat white most mornings"),
    ("Alice has a flat white every morning", "+", "behavior", "Has a flat white most mornings"),
    ("I always run before work, it clears my head.", "+", "behavior", "Usually runs before work"),
    ("User goes to the gym every day", "+", "behavior", "Goes to the gym most days"),
    ("I want short, direct answers", "+", "preference", "Wants short, direct answers"),
    ("I prefer tea over coffee", "+", "preference", "Prefers tea over coffee"),
    ("Alice loves green tea in the morning.", "+", "preference", "Loves green tea in the morning"),
    ("I don't like loud music", "-", "preference", "Doesn't like loud music"),
    ("我每天早上喝咖啡", "+", "behavior", "每天早上喝咖啡"),
    ("用户喜欢绿茶", "+", "preference", "喜欢绿茶"),
    ("我不喜欢吵闹的音乐", "-", "preference", "不喜欢吵闹的音乐"),
    ("Maria hasn't been to Japan yet, but Maria really wants to visit Kyoto.", "+", "preference",
     "Wants to visit Kyoto"),
])
def test_trait_texts_read_as_sentences(memory, polarity, subtype, expected):
    assert trait_text(memory, polarity, subtype) == expected


@pytest.mark.parametrize("memory, signal", [
    ("Maria hasn't been to the Douro valley yet, but Maria definitely wants to go", None),
    ("Maria really loves it", None),
    ("Maria really wants to visit Kyoto", ("+", "visit kyoto", "preference", "C")),
    ("Maria loves green tea", ("+", "green tea", "preference", "B")),
])
def test_a_preference_that_names_nothing_is_no_trait_signal(memory, signal):
    """"… definitely wants to go" became the trait "Hasn't been to the Douro valley yet" (key "go")."""
    from memories.models import MemoryItem
    from reflection.reflectors import memory_signal

    assert memory_signal(MemoryItem(text=memory, tags=[])) == signal


def test_lifted_and_contextual_traits_read_as_sentences():
    assert services.lifted_text("Has a flat white most mornings") == \
        "Makes a point of it: has a flat white most mornings"
    assert services.contextual_text("Usually runs before work", "work", "social") == \
        "Usually runs before work (at work, not socially)"
    assert services.lifted_text("每天早上喝咖啡") == "坚持每天早上喝咖啡"


def test_traits_updated_counts_only_traits_that_changed(tenant_a):
    for text in HABITS:
        remember(tenant_a, text)
    first = reflection_run(tenant=tenant_a, user_id="alice", trigger="scheduled")
    assert first.traits_created == 1 and first.traits_updated == 0
    remember(tenant_a, "Alice went to the dentist.")  # matches no trait
    second = reflection_run(tenant=tenant_a, user_id="alice", trigger="scheduled")
    assert second.memories_scanned == 1 and second.traits_updated == 0
    remember(tenant_a, "I have a flat white every morning at the café.")
    third = reflection_run(tenant=tenant_a, user_id="alice", trigger="scheduled")
    assert third.traits_updated == 1
    trait = Trait.objects.select_related("memory").get()
    assert trait.memory.text == "Has a flat white most mornings" and trait.stage == "emerging"
    assert set(TraitEvidence.objects.filter(trait=trait).values_list("cycle_id", flat=True)) == {first.pk, third.pk}


# --------------------------------------------------------------------------- a session's end


def test_session_end_reflects_on_that_session_only_and_once(tenant_a, django_capture_on_commit_callbacks):
    for text in HABITS:
        remember(tenant_a, text, session_id="s1")
    remember(tenant_a, "I love jazz clubs.", session_id="s2")
    with django_capture_on_commit_callbacks(execute=False) as queued:
        cycle, created = session_end_request(tenant=tenant_a, user_id="alice", session_id="s1")
    assert created and cycle.trigger == "session_end" and cycle.status == "queued" and len(queued) == 1
    assert session_end_request(tenant=tenant_a, user_id="alice", session_id="s1") == (cycle, False)
    done = reflection_run(tenant=tenant_a, user_id="alice", trigger=cycle.trigger, queued=cycle)
    assert done.status == "completed" and done.memories_scanned == 3 and done.traits_created == 1
    assert done.watermark is None  # the user's watermark is not a session's to move
    assert not Trait.objects.filter(memory__text__icontains="jazz").exists()
    later = reflection_run(tenant=tenant_a, user_id="alice", trigger="scheduled")
    assert later.memories_scanned == 4  # the scheduled scan still reads everything once


def test_a_session_never_held_is_not_found(tenant_a, api):
    remember(tenant_a, "I like tea.", session_id="s1")
    answer = api.post("sessions/nope/end", {"user_id": "alice"})
    assert answer.status_code == 404 and "no session" in answer.json()["detail"]
    assert api.post("sessions/s1/end", {}).json() == {"user_id": ["This field is required."]}
    assert "session_id" in api.post("sessions/bad\u200bid/end", {"user_id": "alice"}).json()
    assert "extra" in api.post("sessions/s1/end", {"user_id": "alice", "extra": 1}).json()
    assert api.post("sessions/s1/end", {"user_id": "bob"}).status_code == 404  # alice's session, not bob's


def test_idle_sessions_end_once_each(tenant_a, tenant_b, settings):
    settings.SESSION_IDLE_MINUTES = 30
    quiet = remember(tenant_a, "I like tea.", session_id="quiet")
    remember(tenant_b, "I like tea.", session_id="quiet")  # another tenant's session of the same name
    remember(tenant_a, "I like coffee.", session_id="busy")
    remember(tenant_a, "No session here.")
    MemoryItem.objects.filter(session_id="quiet").update(created_at=timezone.now() - timedelta(minutes=45))
    MemoryItem.objects.filter(pk=quiet.pk).update(created_at=timezone.now() - timedelta(minutes=40))
    gone = sessions_gone_idle(now=timezone.now(), idle=timedelta(minutes=30), lookback=timedelta(hours=24))
    assert sorted(gone) == sorted([(tenant_a.id, "alice", "quiet"), (tenant_b.id, "alice", "quiet")])
    assert sessions_end_idle() == 2
    assert sessions_end_idle() == 0  # at most one cycle per session
    assert set(ReflectionCycle.objects.values_list("trigger", "session_id", "status")) == {
        ("session_end", "quiet", "queued")}
    ancient = sessions_gone_idle(now=timezone.now() + timedelta(days=3), idle=timedelta(minutes=30),
                                 lookback=timedelta(hours=24))
    assert ancient == []  # older than the lookback: a first run does not end every session ever held


# --------------------------------------------------------------------------- contradiction-focused reflection


def _grown_trait(tenant, texts=HABITS):
    memories = [remember(tenant, text) for text in texts]
    reflection_run(tenant=tenant, user_id="alice", trigger="scheduled")
    trait = Trait.objects.select_related("memory").get()
    assert trait.stage == "emerging", trait.stage
    return trait, memories


def _reevaluate_as_announced(tenant, django_capture_on_commit_callbacks, write):
    """Run a write and the re-evaluation its withdrawal announcement queues (here, not on a thread)."""
    from memories import withdrawals

    heard = []
    withdrawals.listen(heard.append)
    try:
        with django_capture_on_commit_callbacks(execute=False):
            write()
    finally:
        withdrawals._LISTENERS.remove(heard.append)
    assert heard, "the writer announced nothing"
    lost: dict[str, list[str]] = {}
    for withdrawal in heard:
        rows = TraitEvidence.objects.filter(memory_id__in=withdrawal.memory_ids, kind="supporting",
                                            withdrawn_at__isnull=True).values_list("trait_id", "memory_id")
        for trait_id, memory_id in rows:
            lost.setdefault(str(trait_id), []).append(str(memory_id))
    return heard[-1], lost


def test_a_contradicted_fact_weakens_its_trait_at_once(tenant_a):
    trait, memories = _grown_trait(tenant_a)
    newer = remember(tenant_a, "I gave up coffee.")
    memory_invalidate(tenant=tenant_a, memory_id=memories[0].id, invalid_at=timezone.now(), actor="t",
                      reason="contradicted", contradicted_by=newer)
    cycle = reflection_reevaluate(tenant=tenant_a, user_id="alice", cause="invalidated",
                                  lost={str(trait.pk): [str(memories[0].id)]},
                                  replaced_by={str(memories[0].id): str(newer.id)})
    assert cycle.trigger == "contradiction" and cycle.status == "completed" and cycle.traits_updated == 1
    after = Trait.objects.get(pk=trait.pk)
    assert after.confidence == pytest.approx(trait.confidence * 0.7)  # seed 004's contradiction, quality A
    # Two supports left, confidence 0.34: under emerging's 0.4 (no hysteresis for support taken back).
    assert after.stage == "candidate" and after.contradiction_count == 1
    withdrawn = TraitEvidence.objects.get(trait=trait, memory=memories[0])
    assert withdrawn.withdrawn_at is not None and withdrawn.cycle_id == cycle.pk
    against = TraitEvidence.objects.get(trait=trait, memory=newer)
    assert against.kind == "contradicting" and against.quality == "A" and against.cycle_id == cycle.pk
    reasons = list(MemoryHistory.objects.filter(memory_id=trait.pk).values_list("reason", flat=True))
    assert any(f"cycle {cycle.pk}" in r and "invalidated" in r for r in reasons)


def test_forgetting_every_support_dissolves_the_trait_unless_pinned(tenant_a):
    trait, memories = _grown_trait(tenant_a)
    for memory in memories:
        memory_set_status(tenant=tenant_a, memory_id=memory.id, status="archived", actor="t")
    cycle = reflection_reevaluate(tenant=tenant_a, user_id="alice", cause="forgotten",
                                  lost={str(trait.pk): [str(m.id) for m in memories]}, replaced_by={})
    after = Trait.objects.select_related("memory").get(pk=trait.pk)
    assert after.stage == "dissolved" and after.memory.status == "archived" and cycle.traits_dissolved == 1


def test_a_pinned_trait_weakens_but_stays(tenant_a):
    trait, memories = _grown_trait(tenant_a)
    services.trait_pin(trait=trait, pinned=True, actor="op")
    reflection_reevaluate(tenant=tenant_a, user_id="alice", cause="forgotten",
                          lost={str(trait.pk): [str(m.id) for m in memories]}, replaced_by={})
    after = Trait.objects.get(pk=trait.pk)
    assert after.stage == "emerging" and after.confidence < trait.confidence


def test_a_superseded_fact_that_still_agrees_carries_its_support(tenant_a):
    trait, memories = _grown_trait(tenant_a)
    new = memory_supersede(tenant=tenant_a, memory_id=memories[0].id, actor="t",
                           new_text="I have a flat white every morning, with oat milk.")
    cycle = reflection_reevaluate(tenant=tenant_a, user_id="alice", cause="superseded",
                                  lost={str(trait.pk): [str(memories[0].id)]},
                                  replaced_by={str(memories[0].id): str(new.id)})
    after = Trait.objects.get(pk=trait.pk)
    assert (after.stage, after.confidence) == (trait.stage, trait.confidence) and cycle.traits_updated == 1
    assert TraitEvidence.objects.get(trait=trait, memory=new).kind == "supporting"
    assert services.live_support(after) == 3


@pytest.mark.parametrize("how", ["invalidated", "superseded", "forgotten", "erased"])
def test_every_way_a_fact_stops_holding_is_announced_with_the_traits_it_supported(
        tenant_a, django_capture_on_commit_callbacks, how):
    trait, memories = _grown_trait(tenant_a)
    target = memories[0]
    if how == "erased":
        MemoryItem.objects.filter(pk=target.pk).update(agent_id="travel-bot")
    writes = {
        "invalidated": lambda: memory_invalidate(tenant=tenant_a, memory_id=target.id, invalid_at=timezone.now(),
                                                 actor="t", reason="x"),
        "superseded": lambda: memory_supersede(tenant=tenant_a, memory_id=target.id, actor="t",
                                               new_text="I stopped the morning flat whites."),
        "forgotten": lambda: memory_set_status(tenant=tenant_a, memory_id=target.id, status="archived", actor="t"),
        "erased": lambda: user_erase(tenant=tenant_a, user_id="alice", actor="t", agent_id="travel-bot"),
    }
    withdrawal, lost = _reevaluate_as_announced(tenant_a, django_capture_on_commit_callbacks, writes[how])
    assert withdrawal.cause == how and withdrawal.memory_ids == (str(target.id),)
    if how == "erased":  # the evidence rows went with the memory: the listener read them before
        assert lost == {} and not MemoryItem.objects.filter(pk=target.pk).exists()
        lost = {str(trait.pk): [str(target.id)]}
    else:
        assert lost == {str(trait.pk): [str(target.id)]}
    cycle = reflection_reevaluate(tenant=tenant_a, user_id="alice", cause=how, lost=lost,
                                  replaced_by=withdrawal.replaced_by)
    after = Trait.objects.get(pk=trait.pk)
    # Support taken back (contradicted, superseded by a version that says otherwise, forgotten, erased) is
    # news: no hysteresis, and at the lower confidence the trait is no longer shown.
    assert cycle.status == "completed" and after.confidence < trait.confidence and after.stage == "candidate"


def test_the_listener_queues_work_only_when_a_trait_stood_on_the_fact(tenant_a, django_capture_on_commit_callbacks):
    from memories.withdrawals import Withdrawal

    trait, memories = _grown_trait(tenant_a)
    other = remember(tenant_a, "Alice went to the dentist.")
    with django_capture_on_commit_callbacks(execute=False) as queued:
        on_evidence_withdrawn(Withdrawal(tenant_a.id, "alice", (str(other.id),), "forgotten"))
    assert queued == []
    with django_capture_on_commit_callbacks(execute=False) as queued:
        on_evidence_withdrawn(Withdrawal(tenant_a.id, "alice", (str(memories[1].id),), "forgotten"))
    assert len(queued) == 1


# --------------------------------------------------------------------------- end to end, through the API


def _context(api) -> str:
    answer = api.post("context", {"user_id": "alice", "query": "What does Alice do in the mornings?"})
    assert answer.status_code == 200, answer.content
    return answer.json()["context"]


@pytest.mark.django_db(transaction=True)
def test_habits_across_sessions_grow_a_trait_that_a_contradiction_takes_back(api):
    for n, habit in enumerate(HABITS, start=1):
        api.remember("alice", habit, session_id=f"morning-{n}")
        ended = api.post(f"sessions/morning-{n}/end", {"user_id": "alice"})
        assert ended.status_code == 202 and ended.json()["trigger"] == "session_end", ended.content
        cycle = wait_for_cycle(api, ended.json()["id"])
        assert cycle["session_id"] == f"morning-{n}" and cycle["memories_scanned"] == 1
        assert api.post(f"sessions/morning-{n}/end", {"user_id": "alice"}).json()["id"] == cycle["id"]
    behaviours = api.get("users/alice/traits").json()["behavior"]
    assert [t["text"] for t in behaviours] == ["Has a flat white most mornings"]
    assert behaviours[0]["stage"] == "emerging" and behaviours[0]["supporting"] == 3
    assert "Has a flat white most mornings" in _context(api)

    job = converse(api, ["I don't have a flat white in the morning anymore."], session_id="morning-4")
    # An update: the habit it ends is invalidated (its history says by what) and the new state is kept.
    assert [op["operation"] for op in job["operations"]] == ["INVALIDATE", "ADD"], job
    assert job["operations"][0]["text"] in HABITS, job["operations"]
    deadline = time.monotonic() + 90
    while not (done := ReflectionCycle.objects.filter(trigger="contradiction", status="completed").first()):
        assert time.monotonic() < deadline
        time.sleep(0.1)
    assert wait_for_cycle(api, done.pk)["traits_updated"] == 1
    trait = api.get(f"traits/{behaviours[0]['id']}").json()
    assert trait["stage"] == "candidate" and trait["confidence"] < behaviours[0]["confidence"]
    assert trait["supporting"] == 2
    assert [e["cycle_id"] for e in trait["evidence"] if e["withdrawn_at"]] == [done.pk]
    assert "flat white most mornings" not in _context(api)
    with connection.cursor() as cursor:  # the history says which cycle did it
        cursor.execute("SELECT reason FROM memory_history WHERE memory_id = %s", [behaviours[0]["id"]])
        assert any(f"cycle {done.pk}" in reason for (reason,) in cursor.fetchall())
