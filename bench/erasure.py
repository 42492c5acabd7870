"""Erasure of one user with N memories (vectors, sources, history with edits),
their conversation jobs and review candidates: time, rows touched per store,
and a scan of every text/JSON/array/tsvector column for what should be gone.

    make bench-erasure                  # N = 10,000 memories, 200 jobs, 200 candidates
    make bench-erasure BENCH_ARGS="--n 1000"
"""

from __future__ import annotations

import argparse
import time
import uuid

from common import print_table, setup_django

MARKER = "qzxerasuremark"  # in every text the user gave; must be found nowhere afterwards


def columns_holding(word: str) -> list[tuple[str, str, int]]:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("""SELECT table_name, column_name FROM information_schema.columns
                          WHERE table_schema = 'public'
                            AND data_type IN ('text', 'character varying', 'json', 'jsonb', 'ARRAY', 'tsvector')""")
        found = []
        for table, column in cursor.fetchall():
            cursor.execute(f'SELECT count(*) FROM "{table}" WHERE "{column}"::text ILIKE %s', [f"%{word}%"])
            count = cursor.fetchone()[0]
            if count:
                found.append((table, column, count))
        return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=10_000)
    parser.add_argument("--jobs", type=int, default=200)
    parser.add_argument("--candidates", type=int, default=200)
    args = parser.parse_args()
    setup_django(database="memory_erasure")
    from memories.embedding import HashEmbedder
    from memories.erasure import user_erase
    from memories.models import Candidate, ConversationJob, MemorySource, Tenant
    from memories.vectors import embed_items
    from memories.writing import MemorySpec, memory_create_batch, memory_update

    tenant = Tenant.objects.create(name=f"erasure-{uuid.uuid4().hex[:8]}")
    user = "erasure-user"
    started = time.perf_counter()
    results = []
    for start in range(0, args.n, 1000):
        specs = [MemorySpec(user_id=user, text=f"Memory {i} of the user: {MARKER} likes item {i}.",
                            tags=["bench"], data={"note": f"{MARKER} {i}"})
                 for i in range(start, min(start + 1000, args.n))]
        results += memory_create_batch(tenant=tenant, specs=specs, actor="bench", enqueue_embedding=False,
                                       count_for_reflection=False)
    ids = [str(r.memory.id) for r in results]
    for start in range(0, len(ids), 1000):
        embed_items(ids[start:start + 1000], embedder=HashEmbedder(384))
    MemorySource.objects.bulk_create(MemorySource(item_id=i, session_id=f"s-{MARKER}", message_indices=[0])
                                     for i in ids[: args.n // 2])
    for memory_id in ids[: args.n // 10]:  # edits: history rows with old and new text
        memory_update(tenant=tenant, memory_id=memory_id, actor="bench", text=f"Edited: {MARKER} {memory_id}")
    jobs = ConversationJob.objects.bulk_create(
        ConversationJob(tenant=tenant, user_id=user, session_id=f"s{j}", status="done",
                        messages=[{"role": "user", "content": f"I said {MARKER} number {j}."}],
                        operations=[{"operation": "ADD", "text": f"{MARKER} {j}"}], counts={"ADD": 1})
        for j in range(args.jobs))
    Candidate.objects.bulk_create(
        Candidate(tenant=tenant, user_id=user, job=jobs[c % len(jobs)], operation="ADD",
                  text=f"My card {MARKER} is 4111 1111 1111 1111 ({c})", reasons=["sensitive"])
        for c in range(args.candidates))
    setup_seconds = time.perf_counter() - started
    before = columns_holding(MARKER)

    dry = user_erase(tenant=tenant, user_id=user, actor="bench", dry_run=True)
    started = time.perf_counter()
    done = user_erase(tenant=tenant, user_id=user, actor="bench")
    seconds = time.perf_counter() - started
    started = time.perf_counter()
    again = user_erase(tenant=tenant, user_id=user, actor="bench")
    second_seconds = time.perf_counter() - started
    after = columns_holding(MARKER)

    print_table(f"Erasure of one user ({args.n:,} memories, {args.jobs} jobs, {args.candidates} candidates; "
                f"set-up {setup_seconds:.1f} s)",
                [{"store": name, "dry run": dry.counts[name], "erased or scrubbed": done.counts[name],
                  "second run": again.counts[name]} for name in done.counts],
                ["store", "dry run", "erased or scrubbed", "second run"])
    print_table("Columns holding the user's words",
                [{"column": f"{t}.{c}", "rows before": n, "rows after": next((m for tt, cc, m in after
                                                                               if (tt, cc) == (t, c)), 0)}
                 for t, c, n in before], ["column", "rows before", "rows after"])
    left = sum(n for _, _, n in after)
    print(f"\nerasure: {args.n:,} memories in {seconds:.2f} s (second run {second_seconds:.3f} s, all zeros: "
          f"{not any(again.counts.values())}); rows with the user's words left: {left}")


if __name__ == "__main__":
    main()
