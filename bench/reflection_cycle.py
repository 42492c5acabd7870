"""Reflection benchmark: one cycle over N new memories of one user with the
offline heuristic; seconds and SQL queries per cycle.

    make bench-reflection                     # N = 1,000
    make bench-reflection BENCH_ARGS="--n 5000"
"""

from __future__ import annotations

import argparse
import random
import time
import uuid

from common import print_table, setup_django

LIKES = ["green tea", "jazz records", "mountain hikes", "short answers", "spicy food", "early mornings",
         "board games", "sci-fi novels", "cold showers", "city trips"]
FILLER = ["went to the dentist", "met an old friend", "fixed the bike", "bought groceries", "missed the bus",
          "watched a documentary", "called the bank", "visited the museum"]


def memory_text(rng: random.Random, i: int) -> str:
    roll = rng.random()
    if roll < 0.35:
        return f"Alice {rng.choice(['loves', 'prefers', 'likes', 'enjoys'])} {rng.choice(LIKES)} (note {i})."
    if roll < 0.45:
        return f"Alice dislikes {rng.choice(LIKES)} today (note {i})."
    if roll < 0.55:
        return f"Alice usually {rng.choice(FILLER)} on Sundays (note {i})."
    return f"Alice {rng.choice(FILLER)} (note {i})."


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--provider", default="hash")
    args = parser.parse_args()
    setup_django(provider=args.provider)
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from memories.models import Tenant
    from memories.vectors import embed_items, refresh_planner_statistics
    from memories.writing import MemorySpec, memory_create_batch
    from reflection.engine import reflection_run

    rng = random.Random(5)
    tenant = Tenant.objects.create(name=f"reflect-{uuid.uuid4().hex[:8]}")
    results = memory_create_batch(tenant=tenant, actor="bench", enqueue_embedding=False, count_for_reflection=False,
                                  specs=[MemorySpec(user_id="alice", text=memory_text(rng, i)) for i in range(args.n)])
    embed_items([str(r.memory.id) for r in results])
    refresh_planner_statistics()
    with CaptureQueriesContext(connection) as queries:
        started = time.perf_counter()
        cycle = reflection_run(tenant=tenant, user_id="alice", trigger="scheduled")
        seconds = time.perf_counter() - started
    print_table(f"One reflection cycle, offline heuristic, {args.n:,} new memories of one user", [{
        "memories scanned": cycle.memories_scanned, "traits created": cycle.traits_created,
        "traits updated": cycle.traits_updated, "dissolved": cycle.traits_dissolved, "seconds": seconds,
        "SQL queries": len(queries), "status": cycle.status}],
        ["memories scanned", "traits created", "traits updated", "dissolved", "seconds", "SQL queries", "status"])
    refresh = time_decay_refresh(tenant, 5000)
    print_table("Refreshing decayed confidence (the beat job): a column updated in bulk", [
        {"traits": 5000, "seconds": refresh, "traits/s": 5000 / refresh}], ["traits", "seconds", "traits/s"])
    print(f"\nsummary: memories={cycle.memories_scanned} seconds={seconds:.2f} queries={len(queries)} "
          f"decay_refresh_5000_s={refresh:.2f}")


def time_decay_refresh(tenant, count: int) -> float:
    """Decayed confidence is a column the beat job recomputes in bulk; a
    materialized view would need a full refresh and go stale for the trait just
    changed. Time one refresh over `count` traits."""
    from django.utils import timezone

    from memories.writing import MemorySpec, memory_create_batch
    from traits.models import Trait
    from traits.services import traits_refresh_decay

    results = memory_create_batch(tenant=tenant, actor="bench", enqueue_embedding=False,
                                   count_for_reflection=False, specs=[
        MemorySpec(user_id=f"t-{i % 50}", text=f"Trait number {i}", memory_type="trait") for i in range(count)])
    now = timezone.now()
    Trait.objects.bulk_create([Trait(memory=r.memory, tenant=tenant, user_id=r.memory.user_id,
                                     subtype=("behavior", "preference", "core")[i % 3],
                                     stage="established", confidence=0.7, reinforcement_count=i % 7,
                                     last_reinforced_at=now) for i, r in enumerate(results)], batch_size=1000)
    started = time.perf_counter()
    traits_refresh_decay()
    return time.perf_counter() - started


if __name__ == "__main__":
    main()
