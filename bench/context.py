"""The agent's read path: POST /context over HTTP with traits, scopes and
working memory in play, and per-user search with and without scope filters.

    make bench-context                                  # 100,000 memories, local model
    make bench-context BENCH_ARGS="--n 20000 --embedder hash"

Memories are spread over 1,000 users, three agent scopes (two agents and
none) and 50 groups; each user has traits at every stage and five fresh
working-memory items in Redis. Variants run interleaved, query by query.
Loading is resumable: rerunning with the same N continues where it stopped.
"""

from __future__ import annotations

import argparse
import http.client
import json
import random
import time

from common import gunicorn_server, percentiles, print_table, setup_django
from core import load, memory_text, query_text

AGENTS = ["", "planner", "coach"]
GROUPS = 50
TRAITS = [("Values honesty above comfort", "core", "core", 0.9),
          ("Prefers mornings for hard work", "preference", "established", 0.7),
          ("Habitually walks after lunch", "behavior", "emerging", 0.5),
          ("Might enjoy opera", "preference", "trend", 0.3),
          ("Used to like loud bars", "preference", "established", 0.2)]


def spec_for(users: int):
    from memories.writing import MemorySpec

    def make(i: int) -> MemorySpec:
        user = i % users
        in_group = i % 5 == 0
        return MemorySpec(user_id=f"user-{user}", text=memory_text(i), agent_id=AGENTS[i % 3],
                          group_id=f"team-{user % GROUPS}" if in_group else "",
                          memory_type="profile" if in_group and i % 10 == 0 else "fact")
    return make


def ensure_traits(tenant, users: int) -> int:
    from traits import services
    from traits.models import Trait

    have = Trait.objects.filter(memory__tenant=tenant).count()
    if have >= users * len(TRAITS):
        return 0
    made = 0
    done_users = set(Trait.objects.filter(memory__tenant=tenant).values_list("memory__user_id", flat=True))
    for user in range(users):
        if f"user-{user}" in done_users:
            continue
        for text, subtype, stage, confidence in TRAITS:
            trait = services.trait_create(tenant=tenant, user_id=f"user-{user}", text=text, subtype=subtype,
                                          actor="bench", stage=stage, confidence=confidence)
            Trait.objects.filter(pk=trait.pk).update(decayed_confidence=confidence)
            made += 1
        if user % 100 == 99:
            print(f"  traits for {user + 1}/{users} users", flush=True)
    return made


def fill_working_memory(tenant, users: int) -> None:
    from memories.models import MemoryItem
    from memories.working import working_memory_push

    for user in range(users):
        working_memory_push(list(MemoryItem.objects.filter(tenant=tenant, user_id=f"user-{user}")
                                 .order_by("-created_at")[:5]))


def context_bodies(rng: random.Random, users: int) -> list[tuple[str, dict]]:
    """One request of each kind, each with its own user and query: none rides on another's cached query vector."""
    def user() -> int:
        return rng.randrange(users)

    one, two, three, four, five = user(), user(), user(), user(), user()
    return [("search (POST /memories/search, for scale)", {"user_id": f"user-{five}", "query": query_text(rng)}),
            ("user", {"user_id": f"user-{one}", "query": query_text(rng)}),
            ("user + agent", {"user_id": f"user-{two}", "query": query_text(rng), "agent_id": "planner"}),
            ("user + group (a group turn)", {"user_id": f"user-{three}", "query": query_text(rng),
                                             "group_id": f"team-{three % GROUPS}"}),
            ("group only", {"group_id": f"team-{four % GROUPS}", "query": query_text(rng)})]


def http_contexts(port: int, key: str, rounds: list[list[tuple[str, dict]]]) -> dict[str, list[float]]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}
    samples: dict[str, list[float]] = {}
    for index, variants in enumerate(rounds):
        for name, body in variants:
            path = "/api/v1/memories/search" if name.startswith("search") else "/api/v1/context"
            started = time.perf_counter()
            conn.request("POST", path, body=json.dumps(body), headers=headers)
            response = conn.getresponse()
            payload = response.read()
            elapsed = (time.perf_counter() - started) * 1000
            if response.status != 200:
                raise RuntimeError(f"HTTP {response.status}: {payload[:300]!r}")
            if index >= 10:  # warm-up
                samples.setdefault(name, []).append(elapsed)
    return samples


def query_embedding(embedder, rng: random.Random, count: int) -> dict[str, float]:
    """The floor under every row: one query vector from the model, in this run."""
    samples = []
    for index in range(count):
        text = query_text(rng)
        started = time.perf_counter()
        embedder.embed_query(text)
        if index >= 10:
            samples.append((time.perf_counter() - started) * 1000)
    return percentiles(samples)


def context_service(tenant, users: int, rng: random.Random, count: int) -> dict[str, float]:
    """build_context itself, without HTTP: what the service adds to a search."""
    from memories.context import ContextRequest, build_context

    samples = []
    for index in range(count):
        request = ContextRequest(query=query_text(rng), user_id=f"user-{rng.randrange(users)}", agent_id="planner")
        started = time.perf_counter()
        build_context(tenant=tenant, request=request)
        if index >= 10:
            samples.append((time.perf_counter() - started) * 1000)
    return percentiles(samples)


def scoped_searches(tenant, users: int, rng: random.Random, count: int, embedder) -> dict[str, list[float]]:
    from memories.search import SearchQuery, memory_search

    samples: dict[str, list[float]] = {}
    for index in range(count):
        for name, scope in (("no scope (baseline)", {}), ("agent_id", {"agent_id": "planner"}),
                            ("group_id", {"group_id": "team-{group}"}),
                            ("agent_id + session_id", {"agent_id": "coach", "session_id": ""})):
            user = rng.randrange(users)  # each variant its own user and query: no shared cached query vector
            scope = {k: v.format(group=user % GROUPS) for k, v in scope.items()}
            query = SearchQuery(query=query_text(rng), user_id=f"user-{user}", **scope)
            started = time.perf_counter()
            memory_search(tenant=tenant, query=query, embedder=embedder)
            if index >= 10:
                samples.setdefault(name, []).append((time.perf_counter() - started) * 1000)
    return samples


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--users", type=int, default=1_000)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--embedder", choices=["local", "hash"], default="local")
    parser.add_argument("--redis", default="redis://127.0.0.1:6379/13", help="working memory ('' for off)")
    args = parser.parse_args()

    setup_django(database="memory_bench_context", provider=args.embedder)
    from django.conf import settings

    from memories import embedding
    from memories.embedding import HashEmbedder, MiniLMEmbedder
    from memories.keys import api_key_create
    from memories.models import Tenant

    settings.REDIS_URL = args.redis
    tenant, _ = Tenant.objects.get_or_create(name=f"bench-context-{args.n}-{args.embedder}")
    embedder = (MiniLMEmbedder(backend="onnx", cache_dir=settings.VAR_DIR / "models",
                              batch_backend=embedding.EMBEDDING_LOCAL_BATCH_BACKEND)
                if args.embedder == "local" else HashEmbedder(settings.EMBEDDING_DIMENSIONS))
    load(tenant, args.n, args.users, embedder, spec_for=spec_for(args.users))
    print(f"traits made: {ensure_traits(tenant, args.users)}", flush=True)
    if args.redis:
        fill_working_memory(tenant, args.users)
    from django.db import connection

    with connection.cursor() as cursor:  # steady state: statistics and the visibility map, as autovacuum leaves them
        cursor.execute("VACUUM (ANALYZE) memory_items")
        cursor.execute("VACUUM (ANALYZE) memory_vectors")

    rng = random.Random(5)
    search_samples = scoped_searches(tenant, args.users, rng, args.queries, embedder)
    search_rows = [{"scope": name, **percentiles(values)} for name, values in search_samples.items()]
    search_rows.append({"scope": "(the query embedding alone)", **query_embedding(embedder, rng, args.queries)})
    search_rows.append({"scope": "(build_context, user + agent, no HTTP)",
                        **context_service(tenant, args.users, rng, args.queries)})

    key = api_key_create(tenant_name=tenant.name, name="bench-context").raw_key
    rounds = [context_bodies(rng, args.users) for _ in range(args.queries)]
    env = {"EMBEDDED_DB_NAME": settings.DATABASES["default"]["NAME"], "EMBEDDING_PROVIDER": args.embedder,
           "REDIS_URL": args.redis}
    with gunicorn_server(env) as port:
        context_samples = http_contexts(port, key, rounds)
    context_rows = [{"request": name, **percentiles(values)} for name, values in context_samples.items()]

    print_table(f"POST /api/v1/context over HTTP (gunicorn, 2 workers), {args.embedder} model, {args.n:,} memories "
                f"over {args.users:,} users, traits and working memory in play (ms)", context_rows,
                ["request", "p50", "p95", "p99", "n"])
    print_table("Per-user hybrid search through the service function, with and without scope filters (ms)",
                search_rows, ["scope", "p50", "p95", "p99", "n"])
    worst = max(context_rows, key=lambda row: row["p95"])
    baseline = percentiles(search_samples["no scope (baseline)"])["p50"]
    scoped = percentiles(search_samples["agent_id"])["p50"]
    print(f"\nsummary: n={args.n} embedder={args.embedder} context_p95_ms_worst={worst['p95']:.2f} "
          f"({worst['request']}) search_p50_agent_vs_none={scoped / baseline:.2f}x")


if __name__ == "__main__":
    main()
