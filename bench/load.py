"""Load test: the service under gunicorn (2 workers) on loopback, mixed
traffic — 20% saves, 60% searches, 20% context — from a bounded pool of
client threads for a fixed time, at 10,000 memories.

    make bench-load                               # 60 s, 8 clients, 10,000 memories
    make bench-load BENCH_ARGS="--seconds 10 --memories 1000"
"""

from __future__ import annotations

import argparse
import http.client
import json
import random
import threading
import time
import uuid

from common import gunicorn_server, percentiles, print_table, setup_django

WORDS = ["tea", "hiking", "Lisbon", "guitar", "marathon", "sushi", "piano", "garden", "chess", "kayak", "yoga",
         "Berlin", "novels", "coffee", "cycling", "painting"]


def text(rng: random.Random) -> str:
    return f"User {rng.choice(['likes', 'tried', 'plans', 'bought'])} {rng.choice(WORDS)} and {rng.choice(WORDS)} " \
           f"({uuid.uuid4().hex[:6]})."


def client_loop(port: int, key: str, users: int, deadline: float, max_requests: int, results: dict, lock,
                seed: int) -> None:
    rng = random.Random(seed)
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}
    sent = 0
    while time.monotonic() < deadline and sent < max_requests:
        user = f"user-{rng.randrange(users)}"
        roll = rng.random()
        if roll < 0.2:
            op, path, body = "save", "/api/v1/memories", {"user_id": user, "text": text(rng)}
        elif roll < 0.8:
            op, path, body = "search", "/api/v1/memories/search", {"user_id": user, "query": rng.choice(WORDS)}
        else:
            op, path, body = "context", "/api/v1/context", {"user_id": user, "query": rng.choice(WORDS)}
        started = time.perf_counter()
        try:
            conn.request("POST", path, body=json.dumps(body), headers=headers)
            response = conn.getresponse()
            payload = response.read()
            ok = response.status < 400
            if not ok and not results.get("first_error"):
                results["first_error"] = f"{op} -> {response.status}: {payload[:300]!r}"
        except (OSError, http.client.HTTPException):
            ok = False
            conn.close()
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        elapsed = (time.perf_counter() - started) * 1000
        sent += 1
        with lock:
            results.setdefault(op, []).append(elapsed)
            if not ok:
                results["errors"] = results.get("errors", 0) + 1


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--users", type=int, default=200)
    parser.add_argument("--max-requests", type=int, default=200_000, help="upper bound on requests, all clients")
    parser.add_argument("--provider", default="hash")
    args = parser.parse_args()
    setup_django(database="memory_load", provider=args.provider)
    from memories.keys import api_key_create
    from memories.models import MemoryItem, Tenant
    from memories.vectors import refresh_planner_statistics
    from memories.writing import MemorySpec, memory_create_batch

    tenant, _ = Tenant.objects.get_or_create(name="load")
    have = MemoryItem.objects.filter(tenant=tenant).count()
    rng = random.Random(1)
    for start in range(have, args.memories, 1000):
        memory_create_batch(tenant=tenant, actor="load", count_for_reflection=False, specs=[
            MemorySpec(user_id=f"user-{i % args.users}", text=text(rng))
            for i in range(start, min(start + 1000, args.memories))])
    refresh_planner_statistics()
    key = api_key_create(tenant_name="load").raw_key
    results: dict = {}
    lock = threading.Lock()
    from django.conf import settings

    database = settings.DATABASES["default"]["NAME"]
    with gunicorn_server({"EMBEDDED_DB_NAME": database, "EMBEDDING_PROVIDER": args.provider}) as port:
        started = time.monotonic()
        deadline = started + args.seconds
        threads = [threading.Thread(target=client_loop, args=(port, key, args.users, deadline,
                                                              args.max_requests // args.clients, results, lock, i))
                   for i in range(args.clients)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(args.seconds + 60)
        elapsed = time.monotonic() - started
    first_error = results.pop("first_error", None)
    if first_error:
        print(f"first error: {first_error}")
    total = sum(len(v) for k, v in results.items() if k != "errors")
    errors = results.get("errors", 0)
    rows = [{"operation": op, "requests": len(samples), **{k: v for k, v in percentiles(samples).items() if k != "n"}}
            for op, samples in sorted(results.items()) if op != "errors"]
    print_table(f"Mixed load, {args.clients} clients, {elapsed:.0f} s, {args.memories:,} memories, gunicorn 2 workers "
                f"({args.provider} embedder)", rows, ["operation", "requests", "p50", "p95", "p99"])
    all_ms = [x for k, v in results.items() if k != "errors" for x in v]
    overall = percentiles(all_ms)
    print(f"\nsummary: requests={total} throughput_rps={total / elapsed:.1f} p50_ms={overall['p50']:.1f} "
          f"p95_ms={overall['p95']:.1f} p99_ms={overall['p99']:.1f} errors={errors}")


if __name__ == "__main__":
    main()
