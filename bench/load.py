"""Load test through the real topology, this checkout beside a baseline commit: `make up`'s processes
(gunicorn web, a Celery worker and beat from the Procfile, on RabbitMQ, Redis for working memory and
rate-limit counters, the local model), mixed traffic — 20% saves, 60% searches, 20% context — from a
closed loop of client threads, at 10,000 memories (issue 46: 8 clients, 30% new questions).

Two codes are measured against the same database and data: this checkout and a baseline commit
(`--baseline`, default 3c11a52, the code before issue 46's latency work; `--baseline ''`: this
checkout alone), checked out in a git worktree beside this one (made and removed by the bench) and
run with this venv — its web, worker and beat all started from its directory, with the same
environment. Each round runs every web configuration (gunicorn workers x threads) for `--seconds`
for both codes, which goes first alternating round by round; medians across rounds are reported.
The saves a run made are deleted after it, so every run starts from the same data.

The default configuration is what `make up` starts: the Procfile's web is gunicorn with
gunicorn.conf.py, two sync workers per CPU (WEB_CONCURRENCY unset, WEB_THREADS 1: 4x1 on these
2-core machines), and a Celery worker of 2 processes (WORKER_CONCURRENCY) with beat.

Queries: with probability `--novel-queries` (default 0.3) a question the servers have not been asked
since they started — each question of LoCoMo's dev split and of the Chinese retrieval set
(tests/samples/zh_retrieval.json: Chinese, English and mixed), shuffled, handed out once (then
again with a counter appended: "... (2)"); otherwise one of a small fixed set, asked again and again
(the case the query-vector cache serves). Both codes get the same questions in the same order.

Beside the throughput and latency: the CPU each request cost, by part (web and worker: the processes
under this run's honcho; PostgreSQL: our server and its backends of this database; the clients; the
rest of the machine, other benches included, from /proc), the bound that gives (cores / CPU per
request), how often a query's vector came from the cache (/metrics), and the saves left unembedded.

    make bench-load                                        # 4x1, 8 clients, 30% new, 3 rounds x 20 s, vs 3c11a52
    make bench-load BENCH_ARGS="--rounds 2 --seconds 15 --memories 2000"
    make bench-load BENCH_ARGS="--configs 2x1,4x1,3x2 --baseline ''"   # configurations, this checkout only
    make bench-load BENCH_ARGS="--topology gunicorn"       # web only, Celery eager (the older runs)
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
from pathlib import Path

from common import ROOT, baseline_checkout, free_port, gunicorn_server, percentiles, print_table, setup_django
from locomo import DEFAULT_DATA

WORDS = ["tea", "hiking", "Lisbon", "guitar", "marathon", "sushi", "piano", "garden", "chess", "kayak", "yoga",
         "Berlin", "novels", "coffee", "cycling", "painting"]
ZH_SET = ROOT / "tests" / "samples" / "zh_retrieval.json"
# The repeated questions: a few, asked again and again, as an agent does within a conversation.
REPEATED = ("what does the user like?", "what has the user tried lately?", "what does the user plan to do?",
            "does the user like tea or coffee?", "what did the user buy?", "用户平时喜欢做什么？",
            "用户最近买了什么？", "what are the user's hobbies?")
BASELINE = "3c11a52"  # the code before issue 46's latency work
SHIPPED = f"{2 * (os.cpu_count() or 1)}x1"  # gunicorn.conf.py as make up runs it: two sync workers per CPU


def text(rng: random.Random) -> str:
    return f"User {rng.choice(['likes', 'tried', 'plans', 'bought'])} {rng.choice(WORDS)} and {rng.choice(WORDS)} " \
           f"({uuid.uuid4().hex[:6]})."


def new_questions(repeated: tuple[str, ...] = REPEATED) -> list[str]:
    """Every question of LoCoMo's dev split and of the Chinese set (zh, en, mix) but the `repeated` ones, once
    each, shuffled (seeded): the questions a bench asks as new (bench/request_cost.py's too). LoCoMo's data
    lies beside the clone (../shared/data); a clone without it (CI's smoke test) asks the Chinese set's only."""
    data = Path(DEFAULT_DATA)
    locomo = json.loads(data.read_text(encoding="utf-8")) if data.exists() else []
    zh = json.loads(ZH_SET.read_text(encoding="utf-8"))["topics"]
    questions = [qa["question"] for sample in locomo for qa in sample["qa"]]
    questions += [q for topic in zh for language in ("zh", "en", "mix") for q in topic[language]]
    questions = list(dict.fromkeys(q for q in questions if q not in repeated))
    random.Random(46).shuffle(questions)
    return questions


class Questions:
    """New questions for one start of the servers (warm-up and measurement), shared by the client threads:
    each handed out once; when all have been, again with a counter appended, so none repeats."""

    def __init__(self, questions: list[str]):
        self.questions, self.used, self._lock = questions, 0, threading.Lock()

    def take(self) -> str:
        with self._lock:
            index, self.used = self.used, self.used + 1
        question = self.questions[index % len(self.questions)]
        return question if index < len(self.questions) else f"{question} ({index // len(self.questions) + 1})"


PARTS = ("web", "worker", "postgres", "load generator", "other")


def postmaster_pid() -> int | None:
    """The embedded PostgreSQL server's pid (its data directory's postmaster.pid), if that is the database."""
    from django.conf import settings

    with contextlib.suppress(OSError, ValueError):
        return int((Path(settings.VAR_DIR) / "pgdata" / "postmaster.pid").read_text().split()[0])
    return None


def cpu_seconds_by_part(topology: int | None = None, postmaster: int | None = None,
                        database: str | None = None) -> dict[str, float]:
    """CPU seconds used so far, by the part of the topology that used them: gunicorn (web), Celery
    (worker and beat), PostgreSQL, this process (the clients), and the rest of the machine (from
    /proc/stat's busy time, so the parts add up to every core's work). With `topology` (honcho's pid)
    only the web and worker processes under it count, with `postmaster` only that server and its
    backends of `database`: another bench's processes on the machine go to "other". Linux only."""
    tick = os.sysconf("SC_CLK_TCK")
    parts = dict.fromkeys(PARTS, 0.0)
    processes: dict[int, tuple[int, str, bytes, float]] = {}
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
        processes[int(entry)] = (int(fields[1]), name, command, sum(int(x) for x in fields[11:15]) / tick)

    def under(pid: int, ancestor: int | None) -> bool:
        if ancestor is None:
            return True
        for _ in range(64):
            if pid == ancestor:
                return True
            if pid not in processes or pid <= 1:
                return False
            pid = processes[pid][0]
        return False

    for pid, (_, name, command, seconds) in processes.items():
        if pid == os.getpid():
            parts["load generator"] += seconds
        elif b"gunicorn" in command and under(pid, topology):
            parts["web"] += seconds
        elif b"celery" in command and under(pid, topology):
            parts["worker"] += seconds
        elif name.startswith("postgres") and under(pid, postmaster):
            words = command.replace(b"\0", b" ").split()  # a backend: "postgres: user database host activity"
            backend = len(words) >= 4 and (words[3].startswith(b"[local]") or b"(" in words[3])
            if not (backend and database and words[2].decode(errors="replace") != database):
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


def query(rng: random.Random, novel_share: float, questions: Questions) -> str:
    """A search's or a context's query: one of a few questions (asked again and again, as agents do), or
    with probability novel_share one the servers have not been asked (its vector must be embedded)."""
    if rng.random() < novel_share:
        return questions.take()
    return rng.choice(REPEATED)


def client_loop(port: int, key: str, users: int, deadline: float, max_requests: int, results: dict, lock,
                seed: int, novel_share: float, questions: Questions) -> None:
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
            op, path, body = "search", "/api/v1/memories/search", {
                "user_id": user, "query": query(rng, novel_share, questions)}
        else:
            op, path, body = "context", "/api/v1/context", {
                "user_id": user, "query": query(rng, novel_share, questions)}
        started = time.perf_counter()
        try:
            conn.request("POST", path, body=json.dumps(body), headers=headers)
            response = conn.getresponse()
            payload = response.read()
            ok = response.status < 400
            if not ok and not results.get("first_error"):
                results["first_error"] = f"{op} -> {response.status}: {payload[:300]!r}"
        except (OSError, http.client.HTTPException) as exc:
            ok = False
            if not results.get("first_error"):
                results["first_error"] = f"{op} -> {exc!r}"
            conn.close()
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        elapsed = (time.perf_counter() - started) * 1000
        sent += 1
        with lock:
            results.setdefault(op, []).append(elapsed)
            if not ok:
                results["errors"] = results.get("errors", 0) + 1


@contextlib.contextmanager
def topology_up(env: dict[str, str], workers: int, threads: int, tree: Path = ROOT):
    """`make up`'s processes (memory_project.up: honcho running the Procfile) on RabbitMQ, started in `tree`
    (this checkout or the baseline's worktree) with its code first on the path; yields (web port, honcho's
    pid) once the web answers and the worker pings."""
    port = free_port()
    metrics_dir = tempfile.mkdtemp(prefix="memory-load-metrics-")
    full_env = {**os.environ, "RATE_LIMIT_KEY_REQUESTS": "0", "RATE_LIMIT_TENANT_REQUESTS": "0", **env,
                "PORT": str(port), "WEB_CONCURRENCY": str(workers), "WEB_THREADS": str(threads),
                # The broker and Redis given to the bench (another engineer's run on the same machine keeps to
                # its own vhost and database), else RabbitMQ's default vhost and Redis database 11.
                "CELERY_BROKER_URL": env.get("CELERY_BROKER_URL", os.environ.get(
                    "CELERY_BROKER_URL", "amqp://guest:guest@127.0.0.1:5672//")),
                "REDIS_URL": env.get("REDIS_URL", os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/11")),
                "PROMETHEUS_MULTIPROC_DIR": metrics_dir,
                "PYTHONPATH": os.pathsep.join(filter(None, [str(tree), os.environ.get("PYTHONPATH")])),
                "LOG_LEVEL": "WARNING", "REQUEST_LOG_LEVEL": "WARNING"}
    celery = [str(ROOT / ".venv/bin/celery"), "-A", "memory_project"]
    # As `make up` does first: the tree's migrations (another engineer's new one in this checkout would
    # otherwise keep /ready at 503; a baseline's are already applied).
    subprocess.run([str(ROOT / ".venv/bin/python"), "manage.py", "migrate", "--noinput", "-v", "0"], cwd=tree,
                   env=full_env, check=True)
    # Tasks an earlier run left in the broker would land on this run's worker: drop them (the run that
    # made them deleted their memories).
    subprocess.run([*celery, "purge", "-f"], cwd=tree, env=full_env, check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    output = tempfile.TemporaryFile()  # honcho's (the processes') output: shown if they fail
    process = subprocess.Popen([str(ROOT / ".venv/bin/python"), "-m", "memory_project.up", "start", "-f", "Procfile"],
                               cwd=tree, env=full_env, stdout=output, stderr=subprocess.STDOUT,
                               start_new_session=True)

    def failed(what: str) -> RuntimeError:
        output.seek(0)
        return RuntimeError(f"{what} in {tree}:\n{output.read().decode(errors='replace')[-3000:]}")

    try:
        deadline = time.time() + 360  # four web workers and two Celery ones load the models: slow on a busy machine
        while True:
            with contextlib.suppress(OSError, http.client.HTTPException):
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
                conn.request("GET", "/api/v1/ready")
                if conn.getresponse().status == 200:
                    break
            if process.poll() is not None or time.time() > deadline:
                raise failed("make up's processes did not come up")
            time.sleep(0.5)
        # The worker answers a ping once its processes are up (each has loaded the model): measuring
        # before that counts the loading against the saves.
        while subprocess.run([*celery, "inspect", "ping", "-t", "5"], cwd=tree, env=full_env,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode:
            if process.poll() is not None or time.time() > deadline:
                raise failed("the Celery worker did not come up")
        yield port, process.pid
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(40)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        output.close()


@contextlib.contextmanager
def web_only(env: dict[str, str], workers: int, threads: int, tree: Path = ROOT):
    """The older topology: gunicorn alone, Celery eager; yields (port, None)."""
    with gunicorn_server({**env, "WEB_THREADS": str(threads)}, workers=workers, checkout=tree) as port:
        yield port, None


def run_load(port: int, key: str, args, seconds: float, seed: int, questions: Questions) -> tuple[dict, float]:
    results: dict = {}
    lock = threading.Lock()
    started = time.monotonic()
    deadline = started + seconds
    threads = [threading.Thread(target=client_loop, args=(port, key, args.users, deadline,
                                                          args.max_requests // args.clients, results, lock,
                                                          seed * 1000 + i, args.novel_queries, questions))
               for i in range(args.clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(seconds + 60)
    return results, time.monotonic() - started


def summarize(label: str, workers: int, threads: int, runs: list[tuple[dict, float]], cores: int) -> dict:
    """One table row: a code in one web configuration, over its rounds."""
    throughput = statistics.median(sum(len(v) for v in r.values() if isinstance(v, list)) / elapsed
                                   for r, elapsed in runs)
    merged: dict[str, list[float]] = {}
    for r, _ in runs:
        for op, samples in r.items():
            if isinstance(samples, list):
                merged.setdefault(op, []).extend(samples)
                merged.setdefault("all", []).extend(samples)
    requests = len(merged.get("all", [])) or 1
    cpu = {part: sum(r["cpu"][part] for r, _ in runs) * 1000 / requests for part in PARTS}
    cpu_ms = sum(cpu.values())
    hits, misses = (sum(r["cache"][o] for r, _ in runs) for o in ("hit", "miss"))
    return {"code": label, "web": f"{workers} workers x {threads} threads", "config": f"{workers}x{threads}",
            "requests": requests, "rps (median)": throughput, "errors": sum(r.get("errors", 0) for r, _ in runs),
            "first error": next((r["first_error"] for r, _ in runs if r.get("first_error")), None),
            "CPU ms / request": cpu_ms, "CPU bound rps": cores * 1000 / cpu_ms,
            **{f"{part} ms": cpu[part] for part in PARTS},
            "query vector hit rate": hits / (hits + misses) if hits + misses else float("nan"),
            "new questions asked (median)": statistics.median(r["novel"] for r, _ in runs),
            "saves unembedded at the end (median)": statistics.median(r["backlog"] for r, _ in runs),
            **{f"{op} p95": percentiles(merged[op])["p95"] for op in ("save", "search", "context") if op in merged},
            "all p50": percentiles(merged["all"])["p50"], "all p95": percentiles(merged["all"])["p95"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--users", type=int, default=200)
    parser.add_argument("--max-requests", type=int, default=1_000_000, help="upper bound on requests, all clients")
    parser.add_argument("--provider", default="local")
    parser.add_argument("--topology", choices=["up", "gunicorn"], default="up")
    parser.add_argument("--configs", default=SHIPPED,
                        help=f"gunicorn workers x threads to try (default {SHIPPED}: make up's, two workers per CPU)")
    parser.add_argument("--warmup", type=float, default=5.0, help="seconds of untimed load after each start")
    parser.add_argument("--novel-queries", type=float, default=0.3,
                        help="share of queries the servers were not asked before (LoCoMo dev and the Chinese "
                             "set's questions); the rest repeat a few")
    parser.add_argument("--baseline", default=BASELINE, help="the commit to compare with ('': none)")
    args = parser.parse_args()
    setup_django(database="memory_load", provider=args.provider)
    from django.conf import settings
    from django.db import transaction
    from django.utils import timezone

    from memories.keys import api_key_create
    from memories.models import MemoryItem, Tenant
    from memories.vectors import embed_items, refresh_planner_statistics
    from memories.writing import MemorySpec, memory_create_batch, writers_lock

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
    database = settings.DATABASES["default"]["NAME"]
    env = {"EMBEDDED_DB_NAME": database, "EMBEDDING_PROVIDER": args.provider,
           "MEMORY_VAR_DIR": str(settings.VAR_DIR)}
    configs = [tuple(int(x) for x in c.split("x")) for c in args.configs.split(",")]
    questions = new_questions()
    cores = os.cpu_count() or 1
    serve = topology_up if args.topology == "up" else web_only
    with contextlib.ExitStack() as stack:
        codes = [("this checkout", ROOT)]
        if args.baseline:
            codes.insert(0, (f"baseline ({args.baseline})", stack.enter_context(baseline_checkout(args.baseline))))
        per_run: dict[tuple, list[tuple[dict, float]]] = {(c, label): [] for c in configs for label, _ in codes}
        for round_number in range(args.rounds):
            for workers, threads in configs:
                # Interleaved: each round runs every configuration for each code, which goes first alternating.
                for label, tree in (codes if round_number % 2 == 0 else codes[::-1]):
                    served_from = timezone.now()
                    asked = Questions(questions)  # the same new questions, in the same order, for each run
                    with serve(env, workers, threads, tree) as (port, topology):
                        run_load(port, key, args, args.warmup, seed=99, questions=asked)
                        novel_before = asked.used
                        pids = {"topology": topology, "postmaster": postmaster_pid(), "database": database}
                        cpu_before, cache_before = cpu_seconds_by_part(**pids), query_vector_counts(port)
                        started_at = timezone.now()
                        results, elapsed = run_load(port, key, args, args.seconds, seed=round_number,
                                                    questions=asked)
                        cpu_after, cache_after = cpu_seconds_by_part(**pids), query_vector_counts(port)
                        results["cpu"] = {part: cpu_after[part] - cpu_before[part] for part in PARTS}
                        results["cache"] = {o: cache_after[o] - cache_before[o] for o in cache_after}
                        results["novel"] = asked.used - novel_before
                        # Saves the worker had not embedded when the clients stopped: a configuration that
                        # starves the worker would otherwise look faster than one that keeps up.
                        results["backlog"] = MemoryItem.objects.filter(tenant=tenant, embedding_state="pending",
                                                                       created_at__gte=started_at).count()
                        per_run[((workers, threads), label)].append((results, elapsed))
                    # The run's saves go: the next run (the other code) starts from the same data, and
                    # beat's sweep does not embed this run's leftovers in the next one's window.
                    with transaction.atomic():  # the users' write locks first, as every writer takes them
                        saved = MemoryItem.objects.filter(tenant=tenant, created_at__gte=served_from)
                        writers_lock(set(saved.values_list("tenant_id", "user_id")))
                        saved.delete()
                    latencies = [x for v in results.values() if isinstance(v, list) for x in v]
                    print(f"round {round_number + 1}: {workers}x{threads} {label}: {len(latencies) / elapsed:.1f} "
                          f"requests/s, p95 {percentiles(latencies)['p95']:.1f} ms; load average "
                          f"{os.getloadavg()[0]:.2f}", flush=True)

    rows = [summarize(label, workers, threads, runs, cores) for ((workers, threads), label), runs in per_run.items()]
    for row in rows:
        if row["first error"]:
            print(f"{row['code']} {row['config']} first error: {row['first error']}")
    print_table(f"Mixed load through `{args.topology}` ({args.provider} embedder), {args.clients} clients, "
                f"{args.novel_queries:.0%} new questions, {args.rounds} rounds x {args.seconds:.0f} s per "
                f"configuration and code (interleaved), {args.memories:,} memories; latencies ms",
                rows, ["web", "code", "rps (median)", "save p95", "search p95", "context p95", "all p50", "all p95",
                       "errors", "saves unembedded at the end (median)"])
    print_table(f"Where the CPU goes, ms per request (all rounds; {cores} cores): the bound is cores / CPU per "
                "request, what the machine could serve if nothing but CPU limited it; other: the rest of the "
                "machine, other benches included",
                rows, ["web", "code", "rps (median)", "CPU ms / request", "CPU bound rps", *[f"{p} ms" for p in PARTS],
                       "query vector hit rate", "new questions asked (median)"])
    now_rows = [r for r in rows if r["code"] == "this checkout"]
    best = max(now_rows, key=lambda r: r["rps (median)"])
    summary = {"requests": sum(r["requests"] for r in rows), "config": best["config"],
               "rps": f"{best['rps (median)']:.1f}", "p95_ms": f"{best['all p95']:.1f}",
               "cpu_ms": f"{best['CPU ms / request']:.2f}", "hit_rate": f"{best['query vector hit rate']:.3f}"}
    before = next((r for r in rows if r["code"] != "this checkout" and r["config"] == best["config"]), None)
    if before:
        summary |= {"baseline": args.baseline, "baseline_rps": f"{before['rps (median)']:.1f}",
                    "baseline_p95_ms": f"{before['all p95']:.1f}",
                    "baseline_cpu_ms": f"{before['CPU ms / request']:.2f}",
                    "baseline_hit_rate": f"{before['query vector hit rate']:.3f}",
                    "rps_ratio": f"{best['rps (median)'] / before['rps (median)']:.2f}",
                    "p95_ratio": f"{best['all p95'] / before['all p95']:.2f}"}
    summary |= {"errors": sum(r["errors"] for r in rows), "clients": args.clients,
                "novel_queries": args.novel_queries, "configs": args.configs,
                "topology": args.topology, "provider": args.provider}
    print("\nsummary: " + " ".join(f"{name}={value}" for name, value in summary.items()))


if __name__ == "__main__":
    main()
