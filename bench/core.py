"""Core benchmark: batch ingest, per-user search latency (both vector plans),
HNSW recall against exact search, and HTTP end-to-end latency.

    make bench                       # N = 10,000 memories over 1,000 users
    make bench BENCH_ARGS="--n 100000"
    make bench BENCH_ARGS="--n 1000000 --skip-local"

Loading is resumable: rerunning with the same N continues where it stopped.
"""

from __future__ import annotations

import argparse
import http.client
import json
import random
import statistics
import time

from common import gunicorn_server, percentiles, print_table, setup_django

NAMES = ["Alice", "Bruno", "Chen", "Dana", "Emeka", "Farah", "Gosia", "Hiro", "Ines", "Jonas"]
VERBS = ["likes", "visited", "bought", "is learning", "plans to try", "dislikes", "cooked", "recommended",
         "lost", "borrowed", "painted", "repaired", "photographed", "wrote about", "sold"]
OBJECTS = ["a red bicycle", "Thai curry", "the Louvre", "a violin", "rock climbing", "Portuguese", "a vintage camera",
           "sourdough bread", "the Alps", "a chess set", "jazz records", "a sailing boat", "Kyoto temples",
           "a garden shed", "espresso machines", "marathon shoes", "a telescope", "board games", "yoga classes",
           "a ceramic vase", "electric guitars", "mountain huts", "green tea", "a puppy", "tax forms"]
WHEN = ["last week", "in 2019", "every Sunday", "yesterday", "during the holidays", "after work", "in spring",
        "on her birthday", "twice a month", "at university"]
PLACES = ["in Lisbon", "in Berlin", "at home", "near the lake", "in Osaka", "at the office", "in Nairobi",
          "downtown", "in Montreal", "at the market"]


def memory_text(i: int) -> str:
    rng = random.Random(i)
    return (f"{rng.choice(NAMES)} {rng.choice(VERBS)} {rng.choice(OBJECTS)} {rng.choice(PLACES)} "
            f"{rng.choice(WHEN)} (note {i}).")


def query_text(rng: random.Random) -> str:
    return f"{rng.choice(VERBS)} {rng.choice(OBJECTS)} {rng.choice(PLACES)}"


def load(tenant, n: int, users: int, embedder, batch: int = 1000, workers: int = 2, spec_for=None) -> dict:
    """Load through memory_create_batch as a deployment runs it: one writer
    (what the API acknowledges: rows, history, full text) while `workers`
    embedding workers (a Celery worker's default concurrency on two cores)
    embed each committed batch and COPY its vectors. Times the write path,
    each embedding call, and the wall clock until every memory is embedded."""
    import queue
    import threading

    from django.db import connection

    from memories.management.progress import Progress
    from memories.models import MemoryItem
    from memories.vectors import embed_items, refresh_planner_statistics
    from memories.writing import MemorySpec, memory_create_batch

    have = MemoryItem.objects.filter(tenant=tenant).count()
    if have >= n:
        print(f"tenant {tenant.name}: {have} memories already loaded (resumed)")
        return {"loaded": 0}
    print(f"loading {n - have} memories into {tenant.name} (from {have}), {workers} embedding workers...", flush=True)
    pending: queue.Queue = queue.Queue(maxsize=workers * 2)
    embed_times: list[float] = []
    errors: list[BaseException] = []

    def embed_worker() -> None:
        try:
            while (ids := pending.get()) is not None:
                started = time.perf_counter()
                embed_items(ids, embedder=embedder)
                embed_times.append(time.perf_counter() - started)
        except BaseException as exc:  # reported after the run
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=embed_worker) for _ in range(workers)]
    for thread in threads:
        thread.start()
    write_s = 0.0
    wall_started = time.perf_counter()
    bar = Progress("load", total=n, unit="memories")  # a bar in a terminal, counter lines in a log
    bar.update(have)
    for start in range(have, n, batch):
        end = min(start + batch, n)
        specs = [spec_for(i) if spec_for else MemorySpec(user_id=f"user-{i % users}", text=memory_text(i))
                 for i in range(start, end)]
        t0 = time.perf_counter()
        results = memory_create_batch(tenant=tenant, specs=specs, actor="bench", enqueue_embedding=False,
                                       count_for_reflection=False)
        write_s += time.perf_counter() - t0
        pending.put([str(r.memory.id) for r in results if r.operation == "ADD"])
        bar.update(end, note=f"write {(end - have) / write_s:.0f}/s")
    bar.close()
    for _ in threads:
        pending.put(None)
    for thread in threads:
        thread.join()
    wall_s = time.perf_counter() - wall_started
    if errors:
        raise errors[0]
    refresh_planner_statistics()
    return {"loaded": n - have, "write_s": write_s, "embed_s": sum(embed_times), "wall_s": wall_s,
            "workers": workers}


def insert_versus_bulk_create(tenant, rounds: int = 7, batch: int = 1000) -> list[dict]:
    """The write path's row insert against Django's bulk_create, interleaved in
    one process on the same 1,000 memories (rolled back each time)."""
    from django.db import transaction
    from django.utils import timezone

    from memories.models import MemoryItem
    from memories.writing import MemorySpec
    from memories.writing.core import insert_memories, new_item, search_document

    samples: dict[str, list[float]] = {"bulk_create": [], "insert_objects": []}
    for round_index in range(rounds):
        for name in samples:
            specs = [MemorySpec(user_id=f"user-{i % 1000}", text=f"{memory_text(i)} insert round {round_index}")
                     for i in range(batch)]
            now = timezone.now()
            items = [new_item(tenant, spec, now) for spec in specs]
            with transaction.atomic():
                started = time.perf_counter()
                if name == "bulk_create":  # the tsvector from the same document, as before
                    for item in items:
                        item.search_vector = search_document(item.text)
                    MemoryItem.objects.bulk_create(items)
                else:
                    insert_memories(items)
                samples[name].append((time.perf_counter() - started) * 1000)
                transaction.set_rollback(True)
    baseline = statistics.median(samples["bulk_create"])
    return [{"insert": name, "ms per 1,000 (median)": statistics.median(values),
             "vs bulk_create": statistics.median(values) / baseline} for name, values in samples.items()]


def ingest_rows(name: str, ingest: dict) -> list[dict]:
    if not ingest["loaded"]:
        return [{"embedder": name, "stage": "(resumed: nothing loaded)"}]
    n = ingest["loaded"]
    return [
        {"embedder": name, "stage": "write path (rows, history, full-text): what the API acknowledges",
         "memories": n, "seconds": ingest["write_s"], "memories/s": n / ingest["write_s"]},
        {"embedder": name, "stage": "embedding + vector COPY (HNSW kept), one worker", "memories": n,
         "seconds": ingest["embed_s"], "memories/s": n / ingest["embed_s"]},
        {"embedder": name, "stage": f"end to end: 1 writer + {ingest['workers']} embedding workers, all embedded",
         "memories": n, "seconds": ingest["wall_s"], "memories/s": n / ingest["wall_s"]},
    ]


def time_searches(tenant, queries: list[tuple[str, str]], mode: str, **kwargs) -> tuple[dict, str]:
    from memories.search import SearchPlan, SearchQuery, memory_search

    samples, plans = [], set()
    for user_id, text in queries[:20]:  # warm-up
        memory_search(tenant=tenant, query=SearchQuery(query=text, user_id=user_id, mode=mode), **kwargs)
    for user_id, text in queries:
        plan = SearchPlan()
        started = time.perf_counter()
        memory_search(tenant=tenant, query=SearchQuery(query=text, user_id=user_id, mode=mode), plan=plan, **kwargs)
        samples.append((time.perf_counter() - started) * 1000)
        plans.add(plan.vector_plan)
    return percentiles(samples), "/".join(sorted(plans))


def warm_every_user(tenant, users: int) -> float:
    """One hybrid search per user before anything is timed: these VMs reclaim cold pages
    (DAMON), so a large table is read back from disk unless each user's rows were touched
    recently. Returns the seconds it took."""
    from memories.search import SearchQuery, memory_search

    started = time.perf_counter()
    for index in range(users):
        memory_search(tenant=tenant, query=SearchQuery(query="likes", user_id=f"user-{index}"))
    return time.perf_counter() - started


def kept_versus_scanned(tenant, queries: list[tuple[str, str]]) -> tuple[list[dict], float]:
    """BM25 on the statistics the database keeps against counting them per query (the plan
    before), interleaved query by query (which goes first alternates), hybrid and keyword; and
    how often both give every keyword candidate the same BM25 score (to 1e-9). Whole answers
    are not compared: these templated memories tie, and a last-bit difference orders ties."""
    from django.utils import timezone

    from memories.search import SearchQuery, memory_search, tuning
    from memories.search.keyword import keyword_candidates

    samples: dict[tuple[str, str], list[float]] = {}
    saved = tuning.SEARCH_KEYWORD_STATISTICS
    for index, (user_id, text) in enumerate(queries):
        for mode in ("hybrid", "keyword"):
            order = ("kept", "scanned") if index % 2 else ("scanned", "kept")
            for counts in order:
                tuning.SEARCH_KEYWORD_STATISTICS = counts
                started = time.perf_counter()
                memory_search(tenant=tenant, query=SearchQuery(query=text, user_id=user_id, mode=mode))
                if index >= 20:  # warm-up
                    samples.setdefault((mode, counts), []).append((time.perf_counter() - started) * 1000)
    same = 0
    for user_id, text in queries:
        scores = []
        for counts in ("kept", "scanned"):
            tuning.SEARCH_KEYWORD_STATISTICS = counts
            found = keyword_candidates(tenant, SearchQuery(query=text, user_id=user_id), 50, timezone.now())
            scores.append(sorted(row.rank_value for row in found))
        same += len(scores[0]) == len(scores[1]) and all(abs(a - b) <= 1e-9 for a, b in zip(*scores, strict=True))
    tuning.SEARCH_KEYWORD_STATISTICS = saved
    rows = [{"path": "service function", "mode": mode, "keyword statistics": counts, **percentiles(values)}
            for (mode, counts), values in sorted(samples.items())]
    return rows, same / max(len(queries), 1)


def user_text_index_versus_text_only(tenant, queries: list[tuple[str, str]]) -> tuple[list[dict], float]:
    """The keyword side's index (migration 0023: one GIN over tenant, user and text) against
    the one before it (the text alone), interleaved query by query, which goes first
    alternating. Both indexes exist during the run; each query runs in a transaction that
    drops the other one and rolls back, so the planner sees one. Also how often both give
    every keyword candidate the same BM25 score (to 1e-9)."""
    from django.db import connection, transaction
    from django.utils import timezone

    from memories.search import SearchQuery, memory_search
    from memories.search.keyword import keyword_candidates

    with connection.cursor() as cursor:
        cursor.execute("CREATE INDEX IF NOT EXISTS bench_text_only ON memory_items USING gin (search_vector)")
        cursor.execute("ANALYZE memory_items")
    hide = {"user and text (now)": "bench_text_only", "text alone (before)": "memory_user_search_vector"}
    samples: dict[tuple[str, str], list[float]] = {}
    same = 0
    try:
        for index, (user_id, text) in enumerate(queries):
            scores = []
            for variant in (list(hide) if index % 2 else list(reversed(hide))):
                for mode in ("hybrid", "keyword"):
                    with transaction.atomic():
                        with connection.cursor() as cursor:
                            cursor.execute(f"DROP INDEX {hide[variant]}")
                        started = time.perf_counter()
                        memory_search(tenant=tenant, query=SearchQuery(query=text, user_id=user_id, mode=mode))
                        elapsed = (time.perf_counter() - started) * 1000
                        if mode == "keyword":
                            found = keyword_candidates(tenant, SearchQuery(query=text, user_id=user_id), 50,
                                                       timezone.now())
                            scores.append(sorted(row.rank_value for row in found))
                        transaction.set_rollback(True)
                    if index >= 20:  # warm-up
                        samples.setdefault((mode, variant), []).append(elapsed)
            same += len(scores[0]) == len(scores[1]) and all(abs(a - b) <= 1e-9
                                                             for a, b in zip(*scores, strict=True))
    finally:
        with connection.cursor() as cursor:
            cursor.execute("DROP INDEX IF EXISTS bench_text_only")
    rows = [{"path": "service function", "mode": mode, "keyword index": variant, **percentiles(values)}
            for (mode, variant), values in sorted(samples.items())]
    return rows, same / max(len(queries), 1)


def hnsw_recall(tenant, embedder, rng: random.Random, count: int = 100, k: int = 10) -> float:
    from django.utils import timezone

    from memories.search import SearchQuery, exact_tenant_neighbours, semantic_search

    total = 0.0
    for _ in range(count):
        text = query_text(rng)
        vector = embedder.embed_query(text)
        truth = exact_tenant_neighbours(tenant, vector, embedder.name, k)
        found, _ = semantic_search(tenant, SearchQuery(query=text, limit=k), vector, embedder.name,
                                    embedder.dimensions, k, timezone.now(), "hnsw")
        total += len({row.id for row in found[:k]} & set(truth)) / max(len(truth), 1)
    return total / count


def http_searches(port: int, key: str, queries: list[tuple[str, str]], mode: str) -> dict:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}
    samples = []
    for index, (user_id, text) in enumerate(queries):
        body = json.dumps({"user_id": user_id, "query": text, "mode": mode})
        started = time.perf_counter()
        conn.request("POST", "/api/v1/memories/search", body=body, headers=headers)
        response = conn.getresponse()
        payload = response.read()
        elapsed = (time.perf_counter() - started) * 1000
        if response.status != 200:
            raise RuntimeError(f"HTTP {response.status}: {payload[:300]!r}")
        if index >= 20:  # the first requests warm both workers
            samples.append(elapsed)
    return percentiles(samples)


def embedder_speed(texts: list[str]) -> list[dict]:
    """Plain torch, plain ONNX and what ships (ONNX for queries and small
    batches, torch for batches of 32+), in one process on the same texts."""
    from memories.embedding import MiniLMEmbedder

    candidates = [
        ("torch (plain sentence-transformers)", MiniLMEmbedder(backend="torch")),
        ("onnx", MiniLMEmbedder(backend="onnx", cache_dir=_models_dir())),
        ("shipped: onnx, batches of 32+ on torch",
         MiniLMEmbedder(backend="onnx", cache_dir=_models_dir(), batch_backend="torch")),
    ]
    for _, embedder in candidates:
        embedder.embed_documents(texts[:64])
    rates: dict[str, list[float]] = {name: [] for name, _ in candidates}
    singles: dict[str, list[float]] = {name: [] for name, _ in candidates}
    for _ in range(3):  # interleaved rounds: a noisy moment hits every backend alike
        for name, embedder in candidates:
            started = time.perf_counter()
            embedder.embed_documents(texts)
            rates[name].append(len(texts) / (time.perf_counter() - started))
            for text in texts[:100]:
                t0 = time.perf_counter()
                embedder.embed_query(text)
                singles[name].append((time.perf_counter() - t0) * 1000)
    return [{"backend": name, "batch sentences/s": statistics.median(rates[name]),
             "one query p50 ms": percentiles(singles[name])["p50"],
             "one query p95 ms": percentiles(singles[name])["p95"]} for name, _ in candidates]


def _models_dir():
    from django.conf import settings

    return settings.VAR_DIR / "models"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=10_000, help="memories to load (hash embedder)")
    parser.add_argument("--users", type=int, default=1_000)
    parser.add_argument("--queries", type=int, default=500)
    parser.add_argument("--local-n", type=int, default=2_000,
                        help="memories embedded with the local model for the HTTP/local runs (20 users)")
    parser.add_argument("--skip-local", action="store_true", help="skip the local-model runs")
    parser.add_argument("--skip-http", action="store_true")
    parser.add_argument("--only-keyword-index", action="store_true",
                        help="load, then only compare the keyword side's index with the one before it")
    args = parser.parse_args()

    setup_django()
    from django.conf import settings

    from memories import embedding
    from memories.embedding import HashEmbedder, MiniLMEmbedder
    from memories.keys import api_key_create
    from memories.models import Tenant
    from memories.search import tuning

    rng = random.Random(7)
    tenant, _ = Tenant.objects.get_or_create(name=f"bench-{args.n}")
    ingest = load(tenant, args.n, args.users, HashEmbedder(settings.EMBEDDING_DIMENSIONS))
    queries = [(f"user-{rng.randrange(args.users)}", query_text(rng)) for _ in range(args.queries)]
    print(f"warmed every user's rows in {warm_every_user(tenant, args.users):.0f} s", flush=True)
    index_rows, same_with_index = user_text_index_versus_text_only(tenant, queries)
    print_table(f"The keyword side's index: (tenant, user, text) vs the text alone, interleaved, "
                f"{args.n:,} memories over {args.users:,} users (ms)", index_rows,
                ["path", "mode", "keyword index", "p50", "p95", "p99", "n"])
    print(f"\nqueries whose BM25 candidates score the same (1e-9) with either index: {same_with_index:.3f}")
    if args.only_keyword_index:
        now_p95 = next(r["p95"] for r in index_rows if r["mode"] == "hybrid" and "now" in r["keyword index"])
        before_p95 = next(r["p95"] for r in index_rows if r["mode"] == "hybrid" and "before" in r["keyword index"])
        print(f"\nsummary: n={args.n} users={args.users} hybrid_p95_ms={now_p95:.2f} "
              f"hybrid_p95_text_index_only_ms={before_p95:.2f} same_answers={same_with_index:.3f}")
        return

    rows = []
    for mode in ("hybrid", "semantic", "keyword"):
        stats, plan = time_searches(tenant, queries, mode)
        rows.append({"path": "service function", "mode": mode, "plan": plan or "-", **stats})
    tuning.SEARCH_KEYWORD_RANKING = "ts_rank"
    for mode in ("hybrid", "keyword"):
        stats, plan = time_searches(tenant, queries, mode)
        rows.append({"path": "service function, ts_rank keyword ranking", "mode": mode, "plan": plan or "-",
                     **stats})
    tuning.SEARCH_KEYWORD_RANKING = "bm25"
    statistics_rows, same_answers = kept_versus_scanned(tenant, queries)
    exact_max = tuning.SEARCH_EXACT_MAX_ROWS
    tuning.SEARCH_EXACT_MAX_ROWS = 0  # force the filtered HNSW scan for per-user search
    hnsw_queries = queries[:200]
    for mode in ("hybrid", "semantic"):
        stats, plan = time_searches(tenant, hnsw_queries, mode)
        rows.append({"path": "service function", "mode": mode, "plan": plan, **stats})
    tuning.SEARCH_EXACT_MAX_ROWS = exact_max
    recall = hnsw_recall(tenant, HashEmbedder(settings.EMBEDDING_DIMENSIONS), random.Random(11))

    if not args.skip_http:
        key = api_key_create(tenant_name=tenant.name, name="bench").raw_key
        with gunicorn_server({"EMBEDDED_DB_NAME": settings.DATABASES["default"]["NAME"],
                              "EMBEDDING_PROVIDER": "hash"}) as port:
            for mode in ("hybrid", "semantic"):
                rows.append({"path": "HTTP (gunicorn, 2 workers)", "mode": mode, "plan": "exact",
                             **http_searches(port, key, queries, mode)})

    local_rows, speed_rows, local_ingest = [], [], None
    if not args.skip_local:
        local_tenant, _ = Tenant.objects.get_or_create(name=f"bench-local-{args.local_n}")
        local_users = max(args.local_n // 100, 1)
        embedder = MiniLMEmbedder(backend="onnx", cache_dir=_models_dir(),
                                 batch_backend=embedding.EMBEDDING_LOCAL_BATCH_BACKEND)
        settings.EMBEDDING_PROVIDER = "local"
        embedding.reset_embedders()
        local_ingest = load(local_tenant, args.local_n, local_users, embedder)
        local_queries = [(f"user-{rng.randrange(local_users)}", query_text(rng)) for _ in range(300)]
        stats, plan = time_searches(local_tenant, local_queries, "hybrid", embedder=embedder)
        local_rows.append({"path": "service function", "mode": "hybrid", "plan": plan, **stats})
        if not args.skip_http:
            key = api_key_create(tenant_name=local_tenant.name, name="bench").raw_key
            with gunicorn_server({"EMBEDDED_DB_NAME": settings.DATABASES["default"]["NAME"],
                                  "EMBEDDING_PROVIDER": "local"}) as port:
                local_rows.append({"path": "HTTP (gunicorn, 2 workers)", "mode": "hybrid", "plan": "exact",
                                   **http_searches(port, key, local_queries, "hybrid")})
        speed_rows = embedder_speed([memory_text(i) for i in range(1000)])

    # Last, in a scratch tenant: rolled-back inserts leave dead rows and full-text
    # index entries that slow the searches above until vacuum runs.
    scratch, _ = Tenant.objects.get_or_create(name=f"bench-{args.n}-insert-scratch")
    insert_rows = insert_versus_bulk_create(scratch)

    print_table(f"Search latency, hash embedder, {args.n:,} memories over {args.users:,} users (ms)", rows,
                ["path", "mode", "plan", "p50", "p95", "p99", "n"])
    print_table("BM25 statistics: kept by the database vs counted per query, interleaved (ms)", statistics_rows,
                ["path", "mode", "keyword statistics", "p50", "p95", "p99", "n"])
    print(f"\nqueries whose BM25 candidates score the same (1e-9), kept vs counted: {same_answers:.3f}")
    if local_rows:
        print_table(f"Search latency, local MiniLM (ONNX), {args.local_n:,} memories, ~100 per user (ms)",
                    local_rows, ["path", "mode", "plan", "p50", "p95", "p99", "n"])
    table = ingest_rows("hash", ingest) + (ingest_rows("local MiniLM (ONNX)", local_ingest) if local_ingest else [])
    print_table("Batch ingest through memory_create_batch, 1,000 per batch", table,
                ["embedder", "stage", "memories", "seconds", "memories/s"])
    print_table(f"Inserting 1,000 memory rows into the {args.n:,}-row table, 7 interleaved rounds", insert_rows,
                ["insert", "ms per 1,000 (median)", "vs bulk_create"])
    if speed_rows:
        print_table("Local model backends (1,000 sentences, median of 3 rounds; 300 single queries)",
                    speed_rows, ["backend", "batch sentences/s", "one query p50 ms", "one query p95 ms"])
    print(f"\nHNSW recall@10 against exact search, tenant-wide, 100 queries: {recall:.3f}")
    hybrid = rows[0]
    write_rate = ingest["loaded"] / ingest["write_s"] if ingest["loaded"] else 0
    end_to_end = ingest["loaded"] / ingest["wall_s"] if ingest["loaded"] else 0
    kept_p95 = next(r["p95"] for r in statistics_rows if r["mode"] == "hybrid" and r["keyword statistics"] == "kept")
    scanned_p95 = next(r["p95"] for r in statistics_rows
                       if r["mode"] == "hybrid" and r["keyword statistics"] == "scanned")
    print(f"\nsummary: n={args.n} hybrid_p95_ms={hybrid['p95']:.2f} hybrid_p95_kept_ms={kept_p95:.2f} "
          f"hybrid_p95_scanned_ms={scanned_p95:.2f} same_answers={same_answers:.3f} hnsw_recall@10={recall:.3f} "
          f"write_path_per_s={write_rate:.0f} end_to_end_per_s={end_to_end:.0f}")


if __name__ == "__main__":
    main()
