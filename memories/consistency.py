"""Consistency checks across the memory tables: what should never happen but
could after crashes, manual SQL or bugs. A report, and safe repairs."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from django.db import connection, transaction

from memories.models import EmbeddingState, MemoryItem, MemorySource, MemoryVector
from memories.search.statistics import drifted_users, rebuild_user_statistics
from memories.text import content_hash
from memories.writing import memory_refresh_content_hash, memory_set_embedding_state

CHECKS = {
    "orphan_history": """SELECT h.id FROM memory_history h LEFT JOIN memory_items m ON m.id = h.memory_id
        WHERE m.id IS NULL AND NOT EXISTS (SELECT 1 FROM memory_history e WHERE e.memory_id = h.memory_id
        AND e.event = 'ERASE')""",
    "orphan_vectors": """SELECT v.id FROM memory_vectors v LEFT JOIN memory_items m ON m.id = v.item_id
        WHERE m.id IS NULL""",
    "orphan_sources": """SELECT s.id FROM memory_sources s LEFT JOIN memory_items m ON m.id = s.item_id
        WHERE m.id IS NULL""",
    "embedded_without_vectors": """SELECT m.id FROM memory_items m WHERE m.embedding_state = 'done'
        AND NOT EXISTS (SELECT 1 FROM memory_vectors v WHERE v.item_id = m.id)""",
    "dangling_supersede": """SELECT m.id FROM memory_items m WHERE m.expired_at IS NOT NULL
        AND m.invalid_at IS NULL AND m.superseded_by_id IS NULL
        AND NOT EXISTS (SELECT 1 FROM memory_history h WHERE h.memory_id = m.id AND h.event = 'INVALIDATE')""",
    "superseded_loops": """WITH RECURSIVE chain(start, id, depth, path) AS (
            SELECT id, superseded_by_id, 1, ARRAY[id] FROM memory_items WHERE superseded_by_id IS NOT NULL
            UNION ALL
            SELECT c.start, m.superseded_by_id, c.depth + 1, c.path || m.id FROM chain c
            JOIN memory_items m ON m.id = c.id
            WHERE m.superseded_by_id IS NOT NULL AND NOT m.id = ANY(c.path) AND c.depth < 100)
        SELECT DISTINCT start FROM chain WHERE id = start""",
}


# Checks of the apps built on memories (registered from their app configs): name -> (SQL selecting the ids of
# the broken rows, the repair that removes them and says how many it removed).
_REGISTERED: dict[str, tuple[str, Callable[[list[str]], int]]] = {}


def register_check(name: str, sql: str, repair: Callable[[list[str]], int]) -> None:
    """An app's own consistency check and its safe repair."""
    _REGISTERED[name] = (sql, repair)


@dataclass
class ConsistencyReport:
    problems: dict[str, list[str]] = field(default_factory=dict)
    fixed: dict[str, int] = field(default_factory=dict)
    left: list[str] = field(default_factory=list)

    @property
    def clean(self) -> bool:
        return not any(self.problems.values())


def consistency_check(*, fix: bool = False, sample: int = 20, progress=None) -> ConsistencyReport:
    """progress(done, total): called as the hash scan (the long part) goes through the memories."""
    report = ConsistencyReport()
    with connection.cursor() as cursor:
        for name, sql in [*CHECKS.items(), *((n, check[0]) for n, check in _REGISTERED.items())]:
            cursor.execute(sql)
            report.problems[name] = [str(row[0]) for row in cursor.fetchall()]
    total = MemoryItem.objects.count() if progress else 0
    mismatched = []
    for done, m in enumerate(MemoryItem.objects.only("id", "text", "content_hash").iterator(chunk_size=2000), 1):
        if m.content_hash != content_hash(m.text):
            mismatched.append(str(m.id))
        if progress and done % 2000 == 0:
            progress(done, total)
    if progress:
        progress(total, total)
    report.problems["hash_mismatch"] = mismatched
    report.problems["keyword_statistics_drift"] = [f"{tenant_id}:{user_id}" for tenant_id, user_id in drifted_users()]
    if fix:
        _repair(report)
    report.problems = {name: ids[:sample] if not fix else ids for name, ids in report.problems.items()}
    return report


@transaction.atomic
def _repair(report: ConsistencyReport) -> None:
    """Repair what is safe: orphan rows go, hashes are recomputed, rows that
    claim vectors they lack are marked for re-embedding, drifted keyword
    statistics are counted afresh. Loops and dangling chains need a person:
    they are reported, not changed."""
    p = report.problems
    report.fixed["orphan_vectors"] = MemoryVector.objects.filter(id__in=p["orphan_vectors"]).delete()[0]
    report.fixed["orphan_sources"] = MemorySource.objects.filter(id__in=p["orphan_sources"]).delete()[0]
    for name, (_sql, repair) in _REGISTERED.items():
        report.fixed[name] = repair(p[name])
    report.fixed["embedded_without_vectors"] = memory_set_embedding_state(
        memory_ids=p["embedded_without_vectors"], state=EmbeddingState.PENDING)
    report.fixed["hash_mismatch"] = sum(memory_refresh_content_hash(memory_id=i) for i in p["hash_mismatch"])
    for key in p["keyword_statistics_drift"]:
        tenant_id, user_id = key.split(":", 1)
        rebuild_user_statistics(int(tenant_id), user_id)
    report.fixed["keyword_statistics_drift"] = len(p["keyword_statistics_drift"])
    for name in ("orphan_history", "dangling_supersede", "superseded_loops"):
        if p[name]:
            report.left.append(f"{name}: {len(p[name])} left for a person to look at (audit rows are never deleted)")
