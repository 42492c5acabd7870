"""Reflection cycles end to end, the beat jobs, the optimistic lock and the one-cycle-per-user guard."""

import json
import threading
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from memories.models import MemoryHistory, MemoryItem
from memories.writing import MemorySpec, memory_create
from reflection.engine import ReflectionBusy, reflection_run
from reflection.models import ReflectionCycle
from tests.conftest import wait_for_cycle
from tests.fake_openai import chat_reply
from traits import services
from traits.models import Trait, TraitEvidence


def remember(tenant, text, user_id="alice", **fields):
    return memory_create(tenant=tenant, spec=MemorySpec(user_id=user_id, text=text, **fields), actor="t").memory


def test_a_cycle_grows_a_trend_into_a_shown_trait_and_records_counters(tenant_a):
    remember(tenant_a, "Alice loves green tea in the morning.")
    remember(tenant_a, "Alice prefers green tea over coffee.")
    remember(tenant_a, "Alice went to the dentist.")
    cycle = reflection_run(tenant=tenant_a, user_id="alice", trigger="session_end")
    assert cycle.status == "completed" and cycle.memories_scanned == 3 and cycle.traits_created == 1
    trait = Trait.objects.select_related("memory").get()
    assert trait.subtype == "preference" and trait.stage == "emerging"  # two B statements: shown
    # worded from its best statement (reflection.wording: neither says how often or is tied to a day; the
    # shorter reads as a trait), not from whichever came first
    assert trait.memory.text == "Prefers green tea over coffee" and trait.memory.memory_type == "trait"
    assert TraitEvidence.objects.filter(trait=trait, kind="supporting").count() == 2
    events = list(MemoryHistory.objects.filter(memory_id=trait.memory_id, event="STAGE_CHANGE")
                  .values_list("old_data", "new_data"))
    assert [(o["stage"], n["stage"]) for o, n in events] == [("", "trend"), ("trend", "emerging")]


@pytest.mark.parametrize("one_moment, expected", [
    (True, [1, 5, 0]),  # the lone memory, then the whole batch (over the cap), then nothing left
    (False, [3, 3, 0]),  # the writer's batch: a microsecond apart, so the cap can fall inside it
])
def test_a_capped_cycle_never_cuts_a_batch_in_two(tenant_a, settings, one_moment, expected):
    """Rows that share one created_at (an import keeps the exported times) are
    scanned together: a cap inside them must not leave the rest behind the
    watermark, never to be scanned. Either way every memory is scanned once."""
    from memories.models import MemoryItem
    from memories.writing import memory_create_batch

    remember(tenant_a, "Alice went to the dentist.")
    batch = memory_create_batch(tenant=tenant_a, actor="t", specs=[
        MemorySpec(user_id="alice", text=f"Alice read chapter {i}.") for i in range(5)])
    if one_moment:
        MemoryItem.objects.filter(id__in=[r.memory.id for r in batch]).update(
            created_at=batch[0].memory.created_at)
    settings.REFLECTION_MAX_MEMORIES = 3
    scanned = [reflection_run(tenant=tenant_a, user_id="alice", trigger="manual").memories_scanned
               for _ in range(3)]
    assert scanned == expected


def test_a_memory_committed_after_a_cycle_started_is_not_left_behind_the_watermark(transactional_db):
    """A writer stamps created_at, then commits later; a cycle that ran in
    between must not move its watermark past that row."""
    from django.db import transaction

    from memories.models import Tenant

    tenant = Tenant.objects.create(name="slow-writer")
    remember(tenant, "Alice went to the dentist.")
    stamped, release = threading.Event(), threading.Event()

    def slow_writer():
        try:
            with transaction.atomic():
                remember(tenant, "Alice loves green tea in the morning.")
                stamped.set()
                release.wait(30)
        finally:
            connection.close()

    writer = threading.Thread(target=slow_writer)
    writer.start()
    assert stamped.wait(30)
    remember(tenant, "Alice prefers green tea over coffee.")  # committed, younger than the open write
    first = reflection_run(tenant=tenant, user_id="alice", trigger="manual")
    release.set()
    writer.join(30)
    second = reflection_run(tenant=tenant, user_id="alice", trigger="manual")
    assert first.status == second.status == "completed"
    assert first.memories_scanned + second.memories_scanned == 3


def test_the_next_cycle_starts_at_the_watermark_and_contradictions_count(tenant_a):
    remember(tenant_a, "Alice loves green tea in the morning.")
    remember(tenant_a, "Alice prefers green tea over coffee.")
    reflection_run(tenant=tenant_a, user_id="alice", trigger="session_end")
    remember(tenant_a, "Alice dislikes green tea now.")
    cycle = reflection_run(tenant=tenant_a, user_id="alice", trigger="scheduled")
    assert cycle.memories_scanned == 1 and cycle.traits_created == 0
    trait = Trait.objects.get()
    assert trait.contradiction_count == 1 and trait.confidence < 0.5
    assert reflection_run(tenant=tenant_a, user_id="alice", trigger="scheduled").memories_scanned == 0


def test_an_llm_cycle_on_a_scripted_server(tenant_a, settings, fake_openai):
    settings.EXTRACTION_PROVIDER, settings.LLM_BASE_URL = "llm", fake_openai.base_url
    remember(tenant_a, "Alice stayed at the office until 11 pm before the launch.")
    remember(tenant_a, "Alice worked through the night before the deadline.")
    fake_openai.script("/v1/chat/completions", chat_reply(json.dumps({"traits": [
        {"text": "Alice works late when a deadline nears", "subtype": "behavior", "context": "work",
         "supports": [0, 1], "contradicts": [], "quality": "B", "existing_trait_id": None},
        {"text": "Invented trait with no support", "subtype": "core", "supports": []},
    ]})))
    cycle = reflection_run(tenant=tenant_a, user_id="alice", trigger="session_end")
    assert cycle.status == "completed" and cycle.traits_created == 1
    trait = Trait.objects.get()
    assert trait.subtype == "behavior" and trait.context == "work" and trait.stage == "emerging"
    system = fake_openai.requests[-1][1]["messages"][0]["content"]
    assert "behaviours" in system


def test_a_failing_llm_fails_the_cycle_with_its_reason(tenant_a, settings, fake_openai):
    from tests.fake_openai import Reply

    settings.EXTRACTION_PROVIDER, settings.LLM_BASE_URL, settings.LLM_TIMEOUT = "llm", fake_openai.base_url, 1
    fake_openai.script("/v1/chat/completions", Reply(status=500, body={"error": {"message": "down"}}))
    remember(tenant_a, "Alice loves tea.")
    cycle = reflection_run(tenant=tenant_a, user_id="alice", trigger="session_end")
    assert cycle.status == "failed" and "500" in cycle.error
    assert reflection_run(tenant=tenant_a, user_id="alice", trigger="session_end").memories_scanned == 1  # retried


def test_two_cycles_never_run_for_one_user(tenant_a):
    ReflectionCycle.objects.create(tenant=tenant_a, user_id="alice", trigger="scheduled")
    with pytest.raises(ReflectionBusy):
        reflection_run(tenant=tenant_a, user_id="alice", trigger="session_end")
    assert reflection_run(tenant=tenant_a, user_id="bob", trigger="session_end").status == "completed"


def test_an_abandoned_cycle_does_not_block_forever(tenant_a, settings):
    stale = ReflectionCycle.objects.create(tenant=tenant_a, user_id="alice", trigger="scheduled")
    ReflectionCycle.objects.filter(pk=stale.pk).update(started_at=timezone.now() - timedelta(hours=2))
    assert reflection_run(tenant=tenant_a, user_id="alice", trigger="session_end").status == "completed"
    stale.refresh_from_db()
    assert stale.status == "failed" and "abandoned" in stale.error


def test_concurrent_cycles_for_one_user_run_one_at_a_time(transactional_db, tenant_a):
    for i in range(5):
        remember(tenant_a, f"Alice loves hiking trip number {i}.")
    outcomes, barrier = [], threading.Barrier(4)

    def run():
        barrier.wait()
        try:
            outcomes.append(reflection_run(tenant=tenant_a, user_id="alice", trigger="scheduled").status)
        except ReflectionBusy:
            outcomes.append("busy")
        finally:
            connection.close()

    threads = [threading.Thread(target=run) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert outcomes.count("completed") >= 1 and len(outcomes) == 4
    assert set(outcomes) <= {"completed", "busy"}
    assert Trait.objects.count() <= 1  # never two copies of the same trait
    # A cycle that saw a loser's insert still open scans only older rows (the watermark never passes a
    # row that could commit later), so it may have found nothing yet; the next cycle picks them up.
    reflection_run(tenant=tenant_a, user_id="alice", trigger="scheduled")
    assert Trait.objects.count() == 1


def test_the_optimistic_lock_retries_instead_of_overwriting(tenant_a):
    memory = remember(tenant_a, "Alice loves tea.")
    other = remember(tenant_a, "Alice prefers tea.")
    trait = services.trait_create(tenant=tenant_a, user_id="alice", text="Likes tea", subtype="preference",
                                  actor="t", evidence=[(memory, "B")])
    original = services._compare_and_set
    calls = []

    def racing(trait_row, state, now, **kwargs):
        if not calls:  # someone else bumps the version between our read and our write
            MemoryItem.objects.filter(id=trait_row.memory_id).update(version=trait_row.memory.version + 1)
        calls.append(1)
        return original(trait_row, state, now, **kwargs)

    services._compare_and_set = racing
    try:
        change = services.trait_add_evidence(trait_id=trait.pk, memory=other, kind="supporting", quality="B",
                                             actor="t")
    finally:
        services._compare_and_set = original
    assert len(calls) == 2  # first write lost the race, the retry re-read and won
    assert change.trait.reinforcement_count == 2 and TraitEvidence.objects.filter(trait=trait).count() == 2


def test_beat_jobs_expire_trends_refresh_decay_and_dissolve_weak_traits(tenant_a):
    memory = remember(tenant_a, "Alice loves tea.")
    trend = services.trait_create(tenant=tenant_a, user_id="alice", text="Likes tea", subtype="preference",
                                  actor="t", evidence=[(memory, "C")])
    Trait.objects.filter(pk=trend.pk).update(window_end=timezone.now() - timedelta(days=1))
    assert services.traits_expire_trends() == 1
    assert Trait.objects.get(pk=trend.pk).stage == "dissolved"

    weak = services.trait_create(tenant=tenant_a, user_id="alice", text="Habitually runs", subtype="behavior",
                                 actor="t", stage="emerging", confidence=0.06)
    Trait.objects.filter(pk=weak.pk).update(last_reinforced_at=timezone.now() - timedelta(days=200))
    pinned = services.trait_create(tenant=tenant_a, user_id="alice", text="Values honesty", subtype="core",
                                   actor="t", stage="established", confidence=0.01)
    services.trait_pin(trait=pinned, pinned=True, actor="operator")
    assert services.traits_refresh_decay() == 2
    assert Trait.objects.get(pk=weak.pk).decayed_confidence == pytest.approx(0.06 * 2.718281828 ** (-1.0), rel=1e-3)
    assert services.traits_dissolve_weak() == 1
    assert Trait.objects.get(pk=weak.pk).stage == "dissolved" and Trait.objects.get(pk=pinned.pk).stage != "dissolved"


def test_contradictions_in_one_context_split_the_trait(tenant_a):
    supports = [remember(tenant_a, f"Alice is relaxed about plans {i}.") for i in range(2)]
    trait = services.trait_create(tenant=tenant_a, user_id="alice", text="Is easy-going", subtype="behavior",
                                  context="personal", actor="t", evidence=[(m, "B") for m in supports])
    for i in range(3):
        services.trait_add_evidence(trait_id=trait.pk, memory=remember(tenant_a, f"Alice was strict at work {i}."),
                                    kind="contradicting", quality="C", actor="t", context="work")
    contextual = services.trait_split_by_context(trait=Trait.objects.get(pk=trait.pk), actor="reflection")
    assert contextual.context == "contextual" and contextual.derived_from == "contradiction_split"
    assert set(contextual.memory.data["contexts"]) == {"personal", "work"}
    assert Trait.objects.get(pk=trait.pk).stage == "dissolved"


def test_traits_api_lists_by_subtype_and_shows_chains(api, tenant_a):
    memory = remember(tenant_a, "Alice loves tea.")
    parent = services.trait_create(tenant=tenant_a, user_id="alice", text="Enjoys calm mornings",
                                   subtype="preference", actor="t", stage="established", confidence=0.7)
    trait = services.trait_create(tenant=tenant_a, user_id="alice", text="Likes tea", subtype="behavior", actor="t",
                                  evidence=[(memory, "B")], parent=parent)
    gone = services.trait_create(tenant=tenant_a, user_id="alice", text="Likes coffee", subtype="preference",
                                 actor="t")
    services.trait_set_stage(trait=gone, stage="dissolved", actor="operator", reason="wrong")
    listing = api.get("users/alice/traits").json()
    assert listing["behavior"] == []  # a trend is not shown by default
    assert [t["text"] for t in listing["preference"]] == ["Enjoys calm mornings"]
    assert listing["preference"][0]["children"] == [str(trait.pk)]
    trends = api.get("users/alice/traits?stage=trend").json()
    assert [t["text"] for t in trends["behavior"]] == ["Likes tea"]
    assert "Likes coffee" in [t["text"] for t in api.get("users/alice/traits?stage=dissolved").json()[
        "preference"]]
    assert api.get("users/alice/traits?stage=bogus").status_code == 400
    assert [c["text"] for c in api.get(f"traits/{parent.pk}").json()["child_traits"]] == ["Likes tea"]
    detail = api.get(f"traits/{trait.pk}").json()
    assert detail["evidence"][0]["text"] == "Alice loves tea." and detail["supporting"] == 1
    assert [p["text"] for p in detail["parent_chain"]] == ["Enjoys calm mornings"]


def test_search_boosts_active_traits_and_hides_trends(api, tenant_a):
    established = services.trait_create(tenant=tenant_a, user_id="alice", text="Alice prefers short answers",
                                        subtype="preference", actor="t", stage="established", confidence=0.8)
    services.trait_create(tenant=tenant_a, user_id="alice", text="Alice prefers long answers maybe",
                          subtype="preference", actor="t")  # a trend: not shown
    results = api.search("alice", "prefers answers")
    assert [r["memory"]["id"] for r in results] == [str(established.pk)]
    assert results[0]["scores"]["stage"] == 0.15 and results[0]["scores"]["trait_stage"] == "established"


@pytest.mark.django_db(transaction=True)
def test_the_reflect_endpoint_queues_a_cycle_that_a_worker_runs(api, tenant_a, api_b):
    remember(tenant_a, "Alice loves jazz.")
    remember(tenant_a, "Alice prefers jazz clubs over bars.")
    response = api.post("users/alice/reflect", {})
    assert response.status_code == 202
    body = response.json()
    assert body["status"] in ("queued", "running", "completed") and body["trigger"] == "requested"
    cycle = wait_for_cycle(api, body["id"], seconds=60)
    assert cycle["memories_scanned"] == 2 and cycle["traits_created"] >= 1 and cycle["completed_at"]
    traits = api.get("users/alice/traits?stage=trend,candidate,emerging,established,core").json()
    assert any("jazz" in t["text"].lower() for group in traits.values() for t in group)
    assert api_b.get("users/alice/traits?stage=trend").json() == {"behavior": [], "preference": [], "core": []}
    assert api_b.get(f"reflection-cycles/{body['id']}").status_code == 404  # another tenant's cycle


def test_the_scheduled_trigger_reflects_only_users_with_new_memories(tenant_a):
    from reflection.tasks import reflect_due_users

    remember(tenant_a, "Alice loves green tea.")
    remember(tenant_a, "Bob loves jazz.", user_id="bob")
    assert reflect_due_users() == 2  # eager: both cycles ran
    assert ReflectionCycle.objects.filter(status="completed").count() == 2
    assert reflect_due_users() == 0  # nothing new since the watermarks
    remember(tenant_a, "Bob prefers vinyl records.", user_id="bob")
    assert reflect_due_users() == 1
