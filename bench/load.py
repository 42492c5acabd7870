"""Load test through the real topology: `make up`'s processes (gunicorn web,
a Celery worker and beat from the Procfile, on RabbitMQ, Redis for working
memory and rate-limit counters, the local model), mixed traffic — 20% saves,
60% searches, 20% context — from a bounded pool of client threads, at 10,000
memories. Each web configuration (gunicorn workers x threads) is run for
`--seconds` per round, the configurations interleaved over `--rounds`
rounds; medians across rounds are reported. Beside the throughput: the CPU each request cost, by part
(web, worker, PostgreSQL, the clients, the rest of the machine, from /proc), the bound that gives
(cores / CPU per request), and how often a query's vector came from the cache (/metrics).

    make bench-load                                        # 2x1,4x1,3x2 x 3 rounds of 20 s, 16 clients
    make bench-load BENCH_ARGS="--configs 4x1 --rounds 1 --seconds 10 --memories 1000"
    make bench-load BENCH_ARGS="--topology gunicorn"       # web only, Celery eager (the older runs)
    make bench-load BENCH_ARGS="--novel-queries 0.3"       # 30% of queries never asked before
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import os
import random
import signal
import statistics
import subprocess
import tempfile
import threading
import time
import uuid

from common import ROOT, free_port, gunicorn_server, percentiles, print_table, setup_django

WORDS = ["tea", "hiking", "Lisbon", "guitar", "marathon", "sushi", "piano", "garden", "chess", "kayak", "yoga",
         "Berlin", "novels", "coffee", "cycling", "painting"]


def text(rng: random.Random) -> str:
    return f"User {rng.choice(['likes', 'tried', 'plans', 'bought'])} {rng.choice(WORDS)} and {rng.choice(WORDS)} " \
           f"({uuid.uuid4().hex[:6]})."


PARTS = ("web", "worker", "postgres", "load generator", "other")


def cpu_seconds_by_part() -> dict[str, float]:
    """CPU seconds used so far, by the part of the topology that used them: gunicorn (web), Celery
    (worker and beat), PostgreSQL, this process (the clients), and the rest of the machine (from
    /proc/stat's busy time, so the parts add up to every core's work). Linux only."""
    tick = os.sysconf("SC_CLK_TCK")
    parts = dict.fromkeys(PARTS, 0.0)
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as stat, open(f"/proc/{entry}/cmdline", "rb") as cmdline:
                raw, command = stat.read(), cmdline.read()
        except OSError:  # gone since the listing
            continue
        name, fields = raw[raw.index("(") + 1: raw.rindex(")")], raw[raw.rindex(")") + 2:].split()
        # utime, stime, and cutime, cstime: a child that exited (a PostgreSQL backend, a pool process) is
        # counted in its parent from then on, so what it used in the window is not lost.
        seconds = sum(int(x) for x in fields[11:15]) / tick
        if int(entry) == os.getpid():
            parts["load generator"] += seconds
        elif b"gunicorn" in command:
            parts["web"] += seconds
        elif b"celery" in command:
            parts["worker"] += seconds
        elif name.startswith("postgres"):
            parts["postgres"] += seconds
    with open("/proc/stat") as stat:
        ticks = [int(x) for x in stat.readline().split()[1:]]
    busy = (sum(ticks) - ticks[3] - ticks[4]) / tick  # less idle and iowait
    parts["other"] = busy - sum(parts.values())  # what the parts do not claim
    return parts


def query_vector_counts(port: int) -> dict[str, float]:
    """memory_query_vector_cache_total by outcome, summed over the web processes (/metrics)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    conn.request("GET", "/metrics")
    counts = {"hit": 0.0, "miss": 0.0}
    for line in conn.getresponse().read().decode().splitlines():
        for outcome in counts:
            if line.startswith(f'memory_query_vector_cache_total{{outcome="{outcome}"}}'):
                counts[outcome] += float(line.split()[-1])
    return counts


def query(rng: random.Random, novel_share: float) -> str:
    """A search's or a context's query: one of a few topics (asked again and again, as agents do), or
    with probability novel_share one never asked before (its vector must be embedded)."""
    if rng.random() < novel_share:
        return f"{rng.choice(WORDS)} and {rng.choice(WORDS)} on day {rng.randrange(10 ** 9)}"
    return rng.choice(WORDS)


def client_loop(port: int, key: str, users: int, deadline: float, max_requests: int, results: dict, lock,
                seed: int, novel_share: float = 0.0) -> None:
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
            op, path, body = "search", "/api/v1/memories/search", {"user_id": user, "query": query(rng, novel_share)}
        else:
            op, path, body = "context", "/api/v1/context", {"user_id": user, "query": query(rng, novel_share)}
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


@contextlib.contextmanager
def topology_up(env: dict[str, str], workers: int, threads: int):
    """`make up`'s three processes (honcho, the Procfile) on RabbitMQ; yields the web port once ready."""
    port = free_port()
    metrics_dir = tempfile.mkdtemp(prefix="memory-load-metrics-")
    full_env = {**os.environ, "RATE_LIMIT_KEY_REQUESTS": "0", "RATE_LIMIT_TENANT_REQUESTS": "0", **env,
                "PORT": str(port), "WEB_CONCURRENCY": str(workers), "WEB_THREADS": str(threads),
                "CELERY_BROKER_URL": env.get("CELERY_BROKER_URL", "amqp://guest:guest@127.0.0.1:5672//"),
                "REDIS_URL": env.get("REDIS_URL", "redis://127.0.0.1:6379/11"), "PROMETHEUS_MULTIPROC_DIR": metrics_dir,
                "LOG_LEVEL": "WARNING", "REQUEST_LOG_LEVEL": "WARNING"}
    # Tasks an earlier run left in the broker would land on this configuration's worker: drop them (their
    # memories stay pending for the sweep, as after any outage).
    subprocess.run([str(ROOT / ".venv/bin/celery"), "-A", "memory_project", "purge", "-f"], cwd=ROOT, env=full_env,
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    process = subprocess.Popen([str(ROOT / ".venv/bin/honcho"), "start", "-f", "Procfile"], cwd=ROOT, env=full_env,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.time() + 180
        while True:
            with contextlib.suppress(OSError, http.client.HTTPException):
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
                conn.request("GET", "/api/v1/ready")
                if conn.getresponse().status == 200:
                    break
            if process.poll() is not None or time.time() > deadline:
                raise RuntimeError("make up's processes did not come up")
            time.sleep(0.5)
        # The worker answers a ping once its processes are up (each has loaded the model): measuring
        # before that counts the loading against the saves.
        while subprocess.run([str(ROOT / ".venv/bin/celery"), "-A", "memory_project", "inspect", "ping", "-t", "5"],
                             cwd=ROOT, env=full_env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode:
            if process.poll() is not None or time.time() > deadline:
                raise RuntimeError("the Celery worker did not come up")
        yield port
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)


def run_load(port: int, key: str, args, seconds: float, seed: int) -> tuple[dict, float]:
    results: dict = {}
    lock = threading.Lock()
    started = time.monotonic()
    deadline = started + seconds
    threads = [threading.Thread(target=client_loop, args=(port, key, args.users, deadline,
                                                          args.max_requests // args.clients, results, lock,
                                                          seed * 1000 + i, args.novel_queries))
               for i in range(args.clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(seconds + 60)
    return results, time.monotonic() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--users", type=int, default=200)
    parser.add_argument("--max-requests", type=int, default=1_000_000, help="upper bound on requests, all clients")
    parser.add_argument("--provider", default="local")
    parser.add_argument("--topology", choices=["up", "gunicorn"], default="up")
    parser.add_argument("--configs", default="2x1,4x1,3x2", help="gunicorn workers x threads to try")
    parser.add_argument("--warmup", type=float, default=5.0, help="seconds of untimed load after each start")
    parser.add_argument("--novel-queries", type=float, default=0.0,
                        help="share of queries never asked before (the rest repeat 16 topics)")
    args = parser.parse_args()
    setup_django(database="memory_load", provider=args.provider)
    from django.utils import timezone

    from memories.keys import api_key_create
    from memories.models import MemoryItem, Tenant
    from memories.vectors import embed_items, refresh_planner_statistics
    from memories.writing import MemorySpec, memory_create_batch

    tenant, _ = Tenant.objects.get_or_create(name="load")
    have = MemoryItem.objects.filter(tenant=tenant).count()
    rng = random.Random(1)
    for start in range(have, args.memories, 1000):
        results = memory_create_batch(tenant=tenant, actor="load", count_for_reflection=False,
                                      enqueue_embedding=False, specs=[
                                          MemorySpec(user_id=f"user-{i % args.users}", text=text(rng))
                                          for i in range(start, min(start + 1000, args.memories))])
        embed_items([str(r.memory.id) for r in results])
    refresh_planner_statistics()
    key = api_key_create(tenant_name="load").raw_key
    from django.conf import settings

    env = {"EMBEDDED_DB_NAME": settings.DATABASES["default"]["NAME"], "EMBEDDING_PROVIDER": args.provider}
    configs = [tuple(int(x) for x in c.split("x")) for c in args.configs.split(",")]
    per_config: dict[tuple, list[tuple[dict, float]]] = {c: [] for c in configs}
    cores = os.cpu_count() or 1
    for round_number in range(args.rounds):
        for workers, threads in configs:  # interleaved: each round runs every configuration once
            if args.topology == "up":
                serving = topology_up(env, workers, threads)
            else:
                serving = gunicorn_server({**env, "WEB_THREADS": str(threads)}, workers=workers)
            with serving as port:
                run_load(port, key, args, args.warmup, seed=99)
                cpu_before, cache_before = cpu_seconds_by_part(), query_vector_counts(port)
                started_at = timezone.now()
                results, elapsed = run_load(port, key, args, args.seconds, seed=round_number)
                cpu_after, cache_after = cpu_seconds_by_part(), query_vector_counts(port)
                results["cpu"] = {part: cpu_after[part] - cpu_before[part] for part in PARTS}
                results["cache"] = {o: cache_after[o] - cache_before[o] for o in cache_after}
                # Saves the worker had not embedded when the clients stopped: a configuration that starves the
                # worker would otherwise look faster than one that keeps up.
                results["backlog"] = MemoryItem.objects.filter(tenant=tenant, embedding_state="pending",
                                                               created_at__gte=started_at).count()
                per_config[(workers, threads)].append((results, elapsed))
            print(f"round {round_number + 1}: {workers}x{threads} done", flush=True)

    rows, best = [], None
    for (workers, threads), runs in per_config.items():
        throughput = statistics.median(sum(len(v) for k, v in r.items() if isinstance(v, list)) / elapsed
                                       for r, elapsed in runs)
        merged: dict[str, list[float]] = {}
        errors = 0
        for r, _ in runs:
            errors += r.get("errors", 0)
            for op, samples in r.items():
                if isinstance(samples, list):
                    merged.setdefault(op, []).extend(samples)
                    merged.setdefault("all", []).extend(samples)
        first_error = next((r["first_error"] for r, _ in runs if r.get("first_error")), None)
        requests = sum(len(v) for r, _ in runs for v in r.values() if isinstance(v, list))
        cpu = {part: sum(r["cpu"][part] for r, _ in runs) * 1000 / requests for part in PARTS}
        cpu_ms = sum(cpu.values())
        hits, misses = (sum(r["cache"][o] for r, _ in runs) for o in ("hit", "miss"))
        row = {"web": f"{workers} workers x {threads} threads", "rps (median)": throughput, "errors": errors,
               "CPU ms / request": cpu_ms, "CPU bound rps": cores * 1000 / cpu_ms,
               **{f"{part} ms": cpu[part] for part in PARTS},
               "query vector hit rate": hits / (hits + misses) if hits + misses else float("nan"),
               "saves unembedded at the end (median)": statistics.median(r["backlog"] for r, _ in runs),
               **{f"{op} p95": percentiles(merged[op])["p95"] for op in ("save", "search", "context") if op in merged},
               "all p50": percentiles(merged["all"])["p50"], "all p95": percentiles(merged["all"])["p95"]}
        rows.append(row)
        if first_error:
            print(f"{workers}x{threads} first error: {first_error}")
        if best is None or row["rps (median)"] > best["rps (median)"]:
            best = row
    print_table(f"Mixed load through `{args.topology}` ({args.provider} embedder), {args.clients} clients, "
                f"{args.rounds} rounds x {args.seconds:.0f} s per configuration, {args.memories:,} memories",
                rows, ["web", "rps (median)", "save p95", "search p95", "context p95", "all p50", "all p95", "errors",
                       "saves unembedded at the end (median)"])
    print_table(f"Where the CPU goes, per request (all rounds; {cores} cores): the bound is cores / CPU per request, "
                "what the machine could serve if nothing but CPU limited it",
                rows, ["web", "rps (median)", "CPU ms / request", "CPU bound rps", *[f"{p} ms" for p in PARTS],
                       "query vector hit rate"])
    assert best is not None
    total = sum(len(v) for runs in per_config.values() for r, _ in runs for v in r.values() if isinstance(v, list))
    print(f"\nsummary: requests={total} best={best['web'].replace(' ', '')} throughput_rps={best['rps (median)']:.1f} "
          f"p95_ms={best['all p95']:.1f} cpu_bound_rps={best['CPU bound rps']:.1f} "
          f"query_vector_hit_rate={best['query vector hit rate']:.3f} "
          f"errors={sum(r['errors'] for r in rows)} configs={args.configs} "
          f"topology={args.topology} provider={args.provider} novel_queries={args.novel_queries}")


if __name__ == "__main__":
    main()
