"""Seed 004's storage details (issue 57 item 4): the trait table's fill factor and autovacuum, its
per-user indexes, and memory_history.memory_type, each read back from PostgreSQL itself."""

import importlib

import pytest
from django.db import connection

from memories.erasure import user_erase
from memories.models import MemoryHistory
from memories.search.scoring import recency_seconds_bonus
from traits import services
from traits.models import Trait


def _reloptions(table: str) -> dict[str, str]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT reloptions FROM pg_class WHERE relname = %s AND relkind = 'r'", [table])
        options = cursor.fetchone()[0] or []
    return dict(option.split("=", 1) for option in options)


def _index_definitions(table: str) -> dict[str, str]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT indexname, indexdef FROM pg_indexes WHERE tablename = %s", [table])
        return dict(cursor.fetchall())


def test_the_trait_table_leaves_room_for_in_place_updates_and_is_vacuumed_early(db):
    assert _reloptions("traits") == {"fillfactor": "80", "autovacuum_vacuum_scale_factor": "0.05",
                                     "autovacuum_analyze_scale_factor": "0.02"}


def test_traits_have_per_user_stage_and_context_indexes(db):
    indexes = _index_definitions("traits")
    assert "(tenant_id, user_id, stage, subtype)" in indexes["trait_user_stage"]
    assert "(tenant_id, user_id, stage, decayed_confidence DESC)" in indexes["trait_user_active_confidence"]
    assert "WHERE" in indexes["trait_user_active_confidence"]  # only the active stages
    assert "(tenant_id, user_id, context)" in indexes["trait_user_context"]


def test_a_users_traits_are_read_through_the_per_user_index(tenant_a, tenant_b):
    for tenant, user in ((tenant_a, "alice"), (tenant_b, "alice"), (tenant_a, "bob")):
        services.trait_create(tenant=tenant, user_id=user, text=f"Likes tea ({tenant.name} {user})",
                              subtype="preference", actor="t")
    trait = Trait.objects.get(tenant=tenant_a, user_id="alice")
    assert (trait.tenant_id, trait.user_id) == (trait.memory.tenant_id, trait.memory.user_id)
    query = Trait.objects.filter(tenant=tenant_a, user_id="alice", stage__in=["trend", "candidate"])
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")  # three rows: without this any plan would do
        plan = query.explain()
    assert "Index Cond: ((tenant_id = " in plan and " trait_user_" in plan  # one of the per-user indexes


def test_history_rows_record_the_memorys_type_at_the_change(api, tenant_a):
    fact = api.remember("alice", "Alice lives in Lisbon.")
    trait = services.trait_create(tenant=tenant_a, user_id="alice", text="Enjoys long walks", subtype="behavior",
                                  actor="t")
    assert set(MemoryHistory.objects.filter(memory_id=fact["id"]).values_list("memory_type", flat=True)) == {"fact"}
    assert set(MemoryHistory.objects.filter(memory_id=trait.memory_id).values_list("memory_type", flat=True)) \
        == {"trait"}
    user_erase(tenant=tenant_a, user_id="alice", actor="t")
    erased = MemoryHistory.objects.get(memory_id=fact["id"], event="ERASE")
    assert erased.memory_type == "fact" and erased.old_text is None


def test_the_migration_backfills_the_type_of_rows_written_before_it(api, tenant_a):
    kept = api.remember("alice", "Alice lives in Lisbon.")
    gone = api.remember("bob", "Bob plays chess.")
    MemoryHistory.objects.filter(memory_id=gone["id"]).update(new_data={"memory_type": "task"})
    MemoryHistory.objects.filter(memory_id=gone["id"]).update(memory_id="00000000-0000-0000-0000-000000000001")
    MemoryHistory.objects.update(memory_type="")
    backfill = importlib.import_module("memories.migrations.0031_history_memory_type").BACKFILL
    with connection.cursor() as cursor:
        cursor.execute(backfill)
    assert set(MemoryHistory.objects.filter(memory_id=kept["id"]).values_list("memory_type", flat=True)) == {"fact"}
    # a row whose memory is no longer there: the type its own data recorded
    assert set(MemoryHistory.objects.filter(memory_id="00000000-0000-0000-0000-000000000001")
               .values_list("memory_type", flat=True)) == {"task"}


def test_arousal_slows_recency_decay_as_seed_004s_recall_formula_says():
    month = 30 * 24 * 3600.0
    calm, charged = recency_seconds_bonus(month, 0.0), recency_seconds_bonus(month, 1.0)
    assert recency_seconds_bonus(0.0, 0.0) == pytest.approx(0.15)
    assert calm == pytest.approx(0.15 * 2.718281828 ** -1, rel=1e-6)
    assert charged == pytest.approx(0.15 * 2.718281828 ** (-1 / 1.5), rel=1e-6) and charged > calm
