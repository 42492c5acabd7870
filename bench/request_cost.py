"""What a request costs beyond its work, measured from outside as `make run` serves it.

Two gunicorn servers of this checkout share one database: a baseline with the per-process key cache
off (KEY_CACHE_SECONDS=0: the key looked up on every request, as before) and the default. One client
sends the same requests to both, interleaved round by round (each first in turn): an authenticated read
by id, a hybrid search and a /context, for one user of --memories memories (local model), and calls
the search and context service functions in this process between them (what HTTP wraps). Rate
limiting stays on with its counters (in the database without Redis, as under `make run`); its limits
are raised so that a benchmark is never refused.

    make bench-requests            # BENCH_ARGS="--rounds 300 --memories 600"
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import uuid

import httpx
from common import gunicorn_server, percentiles, print_table, setup_django

KINDS = ("read by id", "hybrid search", "context")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=300)
    parser.add_argument("--memories", type=int, default=600)
    parser.add_argument("--warmup", type=int, default=30)
    args = parser.parse_args()

    setup_django(database="memory_bench_requests", provider="local")
    from memories.keys import api_key_create
    from memories.models import MemoryItem
    from memories.vectors import embed_items
    from memories.writing import MemorySpec, memory_create_batch

    tenant_name = f"requests-{uuid.uuid4().hex[:8]}"
    issued = api_key_create(tenant_name=tenant_name)
    topics = ["tea", "running", "Lisbon", "cello", "bees", "nursing", "Porto", "peanuts", "jazz", "sailing"]
    specs = [MemorySpec(user_id="u", text=f"Memory {i}: the user talked about {topics[i % len(topics)]} "
                                          f"on day {i} and said something specific about it.")
             for i in range(args.memories)]
    results = memory_create_batch(tenant=issued.api_key.tenant, specs=specs, actor="bench", enqueue_embedding=False)
    ids = [str(r.memory.id) for r in results]
    for start in range(0, len(ids), 200):
        embed_items(ids[start:start + 200])
    print(f"{len(ids)} memories embedded; {MemoryItem.objects.filter(user_id='u').count()} rows", file=sys.stderr)

    headers = {"Authorization": f"Bearer {issued.raw_key}"}
    common_env = {"RATE_LIMIT_KEY_REQUESTS": "1000000", "RATE_LIMIT_TENANT_REQUESTS": "1000000",
                  "EMBEDDED_DB_NAME": "memory_bench_requests", "IN_PROCESS_SCHEDULE": "0"}
    variants = {"key looked up (before)": {"KEY_CACHE_SECONDS": "0"}, "key cached (now)": {"KEY_CACHE_SECONDS": "5"}}
    samples: dict[tuple[str, str], list[float]] = {(v, k): [] for v in (*variants, "service function")
                                                    for k in KINDS}
    with gunicorn_server({**common_env, **variants["key looked up (before)"]}, workers=1) as before_port, \
            gunicorn_server({**common_env, **variants["key cached (now)"]}, workers=1) as now_port:
        ports = dict(zip(variants, (before_port, now_port), strict=True))
        clients = {v: httpx.Client(base_url=f"http://127.0.0.1:{p}/api/v1", headers=headers, timeout=30)
                   for v, p in ports.items()}

        def one(variant: str, kind: str, round_number: int) -> float:
            client = clients[variant]
            started = time.perf_counter()
            if kind == "read by id":
                answer = client.get(f"memories/{ids[round_number % len(ids)]}")
            elif kind == "hybrid search":
                answer = client.post("memories/search", json={"user_id": "u", "query": f"what about "
                                                              f"{topics[round_number % len(topics)]}?"})
            else:
                answer = client.post("context", json={"user_id": "u", "query": f"tell me about "
                                                      f"{topics[round_number % len(topics)]}"})
            elapsed = (time.perf_counter() - started) * 1000
            if answer.status_code != 200:
                raise SystemExit(f"{variant} {kind}: {answer.status_code} {answer.text[:200]}")
            return elapsed

        from memories.context import ContextRequest, build_context
        from memories.search import SearchQuery, memory_search

        tenant = issued.api_key.tenant

        def service(kind: str, round_number: int) -> float:
            """The service function alone, in this process: what the HTTP request wraps."""
            topic = topics[round_number % len(topics)]
            started = time.perf_counter()
            if kind == "hybrid search":
                memory_search(tenant=tenant, query=SearchQuery(query=f"what about {topic}?", user_id="u"))
            else:
                build_context(tenant=tenant, request=ContextRequest(query=f"tell me about {topic}", user_id="u"))
            return (time.perf_counter() - started) * 1000

        for round_number in range(args.warmup + args.rounds):
            order = list(variants) if round_number % 2 else list(reversed(variants))
            for kind in KINDS:
                for variant in order:
                    elapsed = one(variant, kind, round_number)
                    if round_number >= args.warmup:
                        samples[(variant, kind)].append(elapsed)
                if kind != "read by id":
                    elapsed = service(kind, round_number)
                    if round_number >= args.warmup:
                        samples[("service function", kind)].append(elapsed)
            if round_number % 50 == 0:
                print(f"round {round_number}/{args.warmup + args.rounds}", file=sys.stderr)
    rows = [{"request": kind, "variant": variant, **percentiles(samples[(variant, kind)])}
            for kind in KINDS for variant in (*variants, "service function") if samples[(variant, kind)]]
    print_table(f"One client, {args.rounds} rounds interleaved, ms (gunicorn, 1 worker each, local model)", rows,
                ["request", "variant", "p50", "p95", "p99", "n"])
    ratios = {kind: statistics.median(samples[("key cached (now)", kind)])
              / statistics.median(samples[("key looked up (before)", kind)]) for kind in KINDS}
    overhead = {kind: percentiles(samples[("key cached (now)", kind)])["p95"]
                - percentiles(samples[("service function", kind)])["p95"] for kind in KINDS[1:]}
    print("\n" + " ".join(f"{kind.replace(' ', '_')}_p50_ratio={ratio:.2f}" for kind, ratio in ratios.items())
          + f" read_p50_ms={statistics.median(samples[('key cached (now)', 'read by id')]):.2f}"
          + "".join(f" {kind.replace(' ', '_')}_http_minus_service_p95_ms={ms:.2f}" for kind, ms in overhead.items()))


if __name__ == "__main__":
    main()
