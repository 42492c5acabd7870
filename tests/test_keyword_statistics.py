"""The per-user keyword statistics the database keeps (migration 0017): after
every kind of write they equal a fresh count, and BM25 on them ranks exactly
as BM25 that scans the user's memories."""

import threading

import pytest
from django.db import connection

from memories.erasure import user_erase
from memories.models import MemoryItem, MemoryStatus, Tenant
from memories.search import SearchPlan, SearchQuery, memory_search, tuning
from memories.writing import (
    MemorySpec,
    memory_create_batch,
    memory_set_status,
    memory_supersede,
    memory_update,
)

TEXTS = ["Alice likes green tea in Kyoto", "Alice visited the Louvre with Bruno", "Bruno repaired a red bicycle",
         "Alice bought a vintage camera", "green tea and jazz records after work", "Alice lost her camera in Osaka"]


def kept(tenant_id: int) -> tuple[set, set]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT user_id, documents, total_length FROM memory_user_text_stats WHERE tenant_id = %s",
                       [tenant_id])
        totals = set(cursor.fetchall())
        cursor.execute("SELECT user_id, lexeme, documents FROM memory_user_term_stats WHERE tenant_id = %s",
                       [tenant_id])
        return totals, set(cursor.fetchall())


def counted_afresh(tenant_id: int) -> tuple[set, set]:
    with connection.cursor() as cursor:
        cursor.execute("""SELECT user_id, count(*), sum(coalesce(length(search_vector), 0)) FROM memory_items
                          WHERE tenant_id = %s AND expired_at IS NULL AND status = 'active' GROUP BY 1""", [tenant_id])
        totals = set(cursor.fetchall())
        cursor.execute("""SELECT m.user_id, l.lexeme, count(*) FROM memory_items m, unnest(m.search_vector) l
                          WHERE m.tenant_id = %s AND m.expired_at IS NULL AND m.status = 'active'
                          GROUP BY 1, 2""", [tenant_id])
        return totals, set(cursor.fetchall())


def create(tenant, user_id, texts, **fields):
    return [r.memory for r in memory_create_batch(tenant=tenant, actor="test", enqueue_embedding=False,
                                                  count_for_reflection=False, specs=[
        MemorySpec(user_id=user_id, text=text, **fields) for text in texts])]


def _supersede(tenant, memory):
    memory_supersede(tenant=tenant, memory_id=memory.id, new_text="Alice now drinks black coffee", actor="test")


def _edit(tenant, memory):
    memory_update(tenant=tenant, memory_id=memory.id, text="Alice visited Montreal in spring", actor="test")


def _archive(tenant, memory):
    memory_set_status(tenant=tenant, memory_id=memory.id, status=MemoryStatus.ARCHIVED, actor="test")


def _archive_and_restore(tenant, memory):
    _archive(tenant, memory)
    memory_set_status(tenant=tenant, memory_id=memory.id, status=MemoryStatus.ACTIVE, actor="test")


def _embedding_state_only(tenant, memory):
    MemoryItem.objects.filter(id=memory.id).update(embedding_state="done", access_count=7)


def _erase(tenant, memory):
    user_erase(tenant=tenant, user_id="alice", actor="test")


def _delete_row(tenant, memory):
    MemoryItem.objects.filter(id=memory.id).delete()


@pytest.mark.parametrize("change", [None, _supersede, _edit, _archive, _archive_and_restore, _embedding_state_only,
                                    _erase, _delete_row])
def test_kept_statistics_equal_a_fresh_count_after_each_kind_of_write(db, change):
    tenant = Tenant.objects.create(name="stats")
    memories = create(tenant, "alice", TEXTS)
    create(tenant, "bob", TEXTS[:2])
    if change is not None:
        change(tenant, memories[0])
    assert kept(tenant.id) == counted_afresh(tenant.id)
    if change is _erase:  # nothing of alice's words is left in the counts
        assert {row[0] for row in kept(tenant.id)[1]} == {"bob"}


def test_pending_memories_do_not_count_until_approved(db):
    tenant = Tenant.objects.create(name="stats-pending")
    pending = create(tenant, "alice", ["Alice adopted a puppy"], status=MemoryStatus.PENDING)[0]
    assert kept(tenant.id) == (set(), set())
    memory_set_status(tenant=tenant, memory_id=pending.id, status=MemoryStatus.ACTIVE, actor="test")
    assert kept(tenant.id) == counted_afresh(tenant.id) != (set(), set())


def test_concurrent_writers_of_one_user_keep_exact_counts(transactional_db):
    tenant = Tenant.objects.create(name="stats-concurrent")
    errors = []

    def writer(index):
        try:
            for round_ in range(5):
                create(tenant, "alice", [f"{text} round {round_} writer {index}" for text in TEXTS])
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=writer, args=(i,)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert not errors and not any(t.is_alive() for t in threads)
    assert kept(tenant.id) == counted_afresh(tenant.id)
    assert ("alice", 4 * 5 * len(TEXTS)) in {(u, n) for u, n, _ in kept(tenant.id)[0]}


def test_bm25_on_kept_statistics_ranks_as_scanning_does(db, monkeypatch):
    tenant = Tenant.objects.create(name="stats-rank")
    create(tenant, "alice", TEXTS + [f"note {i}: Alice and green tea" for i in range(20)])
    create(tenant, "bob", ["Alice", "camera camera camera"])  # another user's counts never enter
    answers = {}
    for statistics in ("kept", "scanned"):
        monkeypatch.setattr(tuning, "SEARCH_KEYWORD_STATISTICS", statistics)
        plan = SearchPlan()
        found = memory_search(tenant=tenant, plan=plan, query=SearchQuery(
            query="Alice camera green tea", user_id="alice", mode="keyword", limit=20))
        assert plan.keyword_statistics == statistics
        answers[statistics] = [(r.memory.text, round(r.scores["keyword"], 9)) for r in found]
    assert answers["kept"] == answers["scanned"] and len(answers["kept"]) == 20
