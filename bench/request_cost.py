"""What a client feels: requests to `make run` as shipped, with questions it has not asked before.

Two servers share one database, each exactly as `make run` starts it (gunicorn.conf.py: its workers,
two per CPU unless --workers says otherwise; the local model; Celery eager): a baseline — another
commit of this project, checked out beside it (`--baseline`, a git worktree made and removed by the
bench) — and this checkout. One client sends the same requests to both, interleaved round by round
(each first in turn), for one realistic user of --memories memories: LoCoMo's longest dev
conversation, one memory per turn, and Chinese facts from the tests' retrieval set (tests/samples).

Each read is sent two ways: on one kept-alive connection per server (what an SDK or `requests.Session`
does; a server that closes it after each answer makes the client reconnect, and that is counted) and
on a new connection per request (urllib, curl). Searches and /context are asked
- a new question: each question of LoCoMo's dev split and of the Chinese set (Chinese, English and
  mixed) is asked once per server, so its vector is never in a cache; and
- a repeated question: one of a few, asked again and again (the case the cache serves).

Printed: p50/p95/p99 by request, server and connection; where this checkout's time goes (medians by
phase from its Server-Timing header, the query embedding's `embed` included, beside the client's
time); the query-vector cache's hit rate on each server (/metrics); the floors (a bare WSGI app under
gunicorn, the read's SQL by hand). Writes (a save, a conversation) come last: their background work
would otherwise land in the reads' timings.

    make bench-requests                                       # BENCH_ARGS="--rounds 200 --baseline 3c11a52"
    make bench-requests BENCH_ARGS="--rounds 60 --workers 1"  # quicker; one worker each
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import statistics
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from common import baseline_checkout, gunicorn_server, percentiles, print_table, setup_django
from load import ZH_SET, new_questions, query_vector_counts
from locomo import DEFAULT_DATA, conversation_turns

CONNECTIONS = ("keep-alive", "new connection")
READ_KINDS = ("read by id", "search, new question", "search, repeated", "context, new question",
              "context, repeated")
WRITE_KINDS = ("save", "conversation submit")
REPEATED = ("what does the user like to eat?", "tell me about the user's family", "where does the user work?",
            "用户平时喜欢做什么？", "what are the user's hobbies?")
BASELINE = "3c11a52"  # the code before this round's latency work (issue 46)


class Answer:
    def __init__(self, status: int, headers: dict[str, str], text: str):
        self.status_code, self.headers, self.text = status, headers, text


@dataclass
class Client:
    """One server's client side: a kept-alive connection (reopened when the server closes it, as
    http.client and requests do) or none (a new connection per request)."""

    port: int
    headers: dict[str, str]
    kept: http.client.HTTPConnection | None = None
    reconnects: int = 0

    def send(self, method: str, path: str, body: dict | None, *, keep_alive: bool) -> tuple[float, Answer]:
        payload = json.dumps(body).encode() if body is not None else None
        headers = {**self.headers, **({"Content-Type": "application/json"} if payload else {})}
        started = time.perf_counter()
        connection = self._connection(keep_alive)
        try:
            connection.request(method, f"/api/v1/{path}", body=payload, headers=headers)
            response = connection.getresponse()
            answer = Answer(response.status, dict(response.getheaders()), response.read().decode())
        finally:
            if not keep_alive:
                connection.close()
        elapsed = (time.perf_counter() - started) * 1000
        if keep_alive and answer.headers.get("Connection", "").lower() == "close":
            self.reconnects += 1  # http.client opens a new one on the next request
        return elapsed, answer

    def _connection(self, keep_alive: bool) -> http.client.HTTPConnection:
        if not keep_alive:
            return http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        if self.kept is None:
            self.kept = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        return self.kept


@dataclass
class Questions:
    """New questions, each handed out once (both servers get the same one), and the repeated few."""

    new: list[str]
    used: int = 0
    rounds_possible: int = field(init=False)

    def __post_init__(self) -> None:
        self.rounds_possible = len(self.new) // 4  # search and context, on two kinds of connection

    def take(self) -> str:
        question = self.new[self.used]
        self.used += 1
        return question


def realistic_user(count: int) -> tuple[list[dict], list[str]]:
    """The user's memories (LoCoMo's longest dev conversation, a memory per turn, and a Chinese fact
    for each topic of the set, dated in order) and the new questions (load.new_questions)."""
    locomo = json.loads(Path(DEFAULT_DATA).read_text(encoding="utf-8"))
    zh = json.loads(ZH_SET.read_text(encoding="utf-8"))["topics"]
    rng = random.Random(46)
    chinese = [rng.choice(t["memory"]).format(rng.choice(t["values"])) for t in zh]
    longest = max(locomo, key=lambda sample: len(conversation_turns(sample)))
    turns = [t["text"] for t in conversation_turns(longest)][: max(count - len(chinese), 0)]
    texts = (turns + chinese)[:count]
    return [{"text": text} for text in texts], new_questions(REPEATED)


def request_for(kind: str, round_number: int, ids: list[str], questions: Questions,
                asked: dict[str, str]) -> tuple[str, str, dict | None]:
    """(method, path, body) of one request; a new question is taken once per (kind, connection) and
    round, and `asked` hands the same one to the second server."""
    if kind == "read by id":
        return "GET", f"memories/{ids[round_number % len(ids)]}", None
    if kind == "save":
        return "POST", "memories", {"user_id": "saver", "text": f"Note {round_number}: the user mentioned tea."}
    if kind == "conversation submit":
        return "POST", "conversations", {"user_id": "talker", "session_id": f"s{round_number}", "messages": [
            {"role": "user", "content": f"I went sailing near Porto today, trip {round_number}."},
            {"role": "assistant", "content": "That sounds lovely."}]}
    if kind.endswith("repeated"):
        question = REPEATED[round_number % len(REPEATED)]
    else:
        if kind not in asked:
            asked[kind] = questions.take()
        question = asked[kind]
    if kind.startswith("search"):
        return "POST", "memories/search", {"user_id": "u", "query": question}
    return "POST", "context", {"user_id": "u", "query": question}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--write-rounds", type=int, default=100)
    parser.add_argument("--memories", type=int, default=600)
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--workers", type=int, default=None, help="gunicorn workers (default: make run's)")
    parser.add_argument("--baseline", default=BASELINE, help="the commit to compare with")
    args = parser.parse_args()

    database = os.environ.get("EMBEDDED_DB_NAME", "memory_bench_requests")
    setup_django(database=database, provider="local")
    from django.conf import settings

    from memories.embedding import prepare_embedder
    from memories.keys import api_key_create
    from memories.models import MemoryItem
    from memories.timing import PHASES, parse_server_timing
    from memories.vectors import embed_items
    from memories.writing import MemorySpec, memory_create_batch

    prepare_embedder()  # the model files under var/models, made once before the servers load them
    memories, new_questions = realistic_user(args.memories)
    questions = Questions(new_questions)
    rounds = min(args.rounds, questions.rounds_possible - args.warmup)
    if rounds < args.rounds:
        print(f"{len(new_questions)} new questions: {rounds} rounds", file=sys.stderr)
    issued = api_key_create(tenant_name=f"requests-{uuid.uuid4().hex[:8]}")
    results = memory_create_batch(tenant=issued.api_key.tenant, actor="bench", enqueue_embedding=False,
                                  specs=[MemorySpec(user_id="u", text=m["text"]) for m in memories])
    ids = [str(r.memory.id) for r in results]
    for start in range(0, len(ids), 200):
        embed_items(ids[start:start + 200])
    print(f"{len(ids)} memories embedded; {MemoryItem.objects.filter(user_id='u').count()} rows", file=sys.stderr)
    from django.db import connection

    # As autovacuum leaves a table a while after a load (bench/results/2026-11-requests.md).
    with connection.cursor() as cursor:
        cursor.execute("VACUUM (ANALYZE) memory_items")
        cursor.execute("VACUUM (ANALYZE) memory_vectors")

    headers = {"Authorization": f"Bearer {issued.raw_key}"}
    env = {"RATE_LIMIT_KEY_REQUESTS": "1000000", "RATE_LIMIT_TENANT_REQUESTS": "1000000",
           "EMBEDDED_DB_NAME": database, "IN_PROCESS_SCHEDULE": "0",
           "MEMORY_VAR_DIR": str(settings.VAR_DIR), "SERVER_TIMING": "1"}
    variants = (f"baseline ({args.baseline})", "this checkout")
    samples: dict[tuple, list[float]] = {}
    phases: dict[tuple, dict[str, list[float]]] = {}
    # Each server counts its workers' samples together (/metrics), as make run does.
    metrics = [tempfile.mkdtemp(prefix="bench-requests-metrics-") for _ in variants]
    with baseline_checkout(args.baseline) as before_tree, \
            gunicorn_server({**env, "PROMETHEUS_MULTIPROC_DIR": metrics[0]}, workers=args.workers,
                            checkout=before_tree, as_make_run=True) as before_port, \
            gunicorn_server({**env, "PROMETHEUS_MULTIPROC_DIR": metrics[1]}, workers=args.workers,
                            as_make_run=True) as now_port, \
            gunicorn_server({}, workers=1, checkout=Path(__file__).parent, app="floor_app:application") as floor_port:
        clients = {variants[0]: Client(before_port, headers), variants[1]: Client(now_port, headers)}
        for client in clients.values():
            every_worker_ready(client.port, args.workers)
        cpu = {variant: ServerCpu(client.port) for variant, client in clients.items()}
        counts_before = {v: query_vector_counts(c.port) for v, c in clients.items()}
        floor = Client(floor_port, headers)

        def measure(kinds: tuple[str, ...], total_rounds: int, connections: tuple[str, ...]) -> None:
            for round_number in range(total_rounds):
                order = list(variants) if round_number % 2 else list(reversed(variants))
                measured = round_number >= args.warmup
                for kind in kinds:
                    for connection_kind in connections:
                        asked: dict[str, str] = {}
                        for variant in order:
                            method, path, body = request_for(kind, round_number, ids, questions, asked)
                            before_cpu = cpu[variant].seconds()
                            elapsed, answer = clients[variant].send(method, path, body,
                                                                     keep_alive=connection_kind == "keep-alive")
                            spent = (cpu[variant].seconds() - before_cpu) * 1000
                            if answer.status_code >= 300:
                                raise SystemExit(f"{variant} {kind}: {answer.status_code} {answer.text[:200]}")
                            if measured:
                                samples.setdefault((kind, connection_kind, variant), []).append(elapsed)
                                samples.setdefault((kind, "server CPU", variant), []).append(spent)
                                timing = parse_server_timing(answer.headers.get("Server-Timing", ""))
                                bucket = phases.setdefault((kind, variant), {"client": []})
                                bucket["client"].append(elapsed)
                                for name, ms in timing.items():
                                    bucket.setdefault(name, []).append(ms)
                if kinds == READ_KINDS:
                    elapsed, _ = floor.send("GET", f"memories/{ids[round_number % len(ids)]}", None,
                                            keep_alive=False)
                    if measured:
                        samples.setdefault(("floor: HTTP (a bare WSGI app under gunicorn)", "new connection",
                                            "floor"), []).append(elapsed)
                        samples.setdefault(("floor: SQL (the read's row by hand)", "", "floor"), []).append(
                            sql_floor(ids[round_number % len(ids)], issued.api_key.tenant_id))
                if round_number % 25 == 0:
                    print(f"{kinds[0]}...: round {round_number}/{total_rounds}", file=sys.stderr)

        measure(READ_KINDS, args.warmup + rounds, CONNECTIONS)
        counts_after = {v: query_vector_counts(c.port) for v, c in clients.items()}
        measure(WRITE_KINDS, args.warmup + args.write_rounds, ("keep-alive",))
    report(samples, phases, variants, clients, counts_before, counts_after, PHASES, rounds)


class ServerCpu:
    """The CPU time a server's processes (gunicorn's master and workers, every thread) have used, in
    nanoseconds from the scheduler (/proc/<pid>/task/<tid>/schedstat; the tick-counted cpu_times are 10 ms
    steps). Read before and after a request, one request in flight, it is what the request cost the server
    (the database's own CPU aside). On a shared, noisy machine CPU time is steadier than the time the client
    waits. Linux only."""

    def __init__(self, port: int):
        import psutil

        master = next(psutil.Process(c.pid) for c in psutil.net_connections(kind="tcp")
                      if c.laddr and c.laddr.port == port and c.status == psutil.CONN_LISTEN and c.pid)
        self.master = master
        self.pids = [master.pid, *(child.pid for child in master.children(recursive=True))]

    def seconds(self) -> float:
        total = 0
        for pid in self.pids:
            for task in Path(f"/proc/{pid}/task").glob("*"):
                try:
                    total += int((task / "schedstat").read_text().split()[0])
                except (OSError, ValueError, IndexError):  # a thread that ended meanwhile
                    continue
        return total / 1e9


def every_worker_ready(port: int, workers: int | None) -> None:
    """Wait until the workers answer: gunicorn listens before its workers have loaded the models, and a
    first request would time the loading. Asks for the health of many connections, so that each
    worker takes one."""
    import os

    deadline = time.monotonic() + 300
    for _ in range(4 * (workers or 2 * (os.cpu_count() or 1))):
        while True:
            try:
                connection = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
                connection.request("GET", "/api/v1/health")
                connection.getresponse().read()
                connection.close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(1)


def sql_floor(memory_id: str, tenant_id: int) -> float:
    """The read's one statement by hand, in this process: what the database costs."""
    from django.db import connection

    started = time.perf_counter()
    with connection.cursor() as cursor:
        cursor.execute("SELECT * FROM memory_items WHERE id = %s AND tenant_id = %s", [memory_id, tenant_id])
        cursor.fetchall()
    return (time.perf_counter() - started) * 1000


def report(samples: dict, phases: dict, variants: tuple[str, str], clients: dict, counts_before: dict,
           counts_after: dict, phase_names: tuple[str, ...], rounds: int) -> None:
    rows = [{"request": kind, "connection": connection_kind, "server": variant, **percentiles(values)}
            for (kind, connection_kind, variant), values in samples.items()]
    print_table(f"One client, {rounds} rounds, the servers interleaved, ms (make run as shipped, local model)",
                rows, ["request", "connection", "server", "p50", "p95", "p99", "n"])
    names = ["request", "server", "client", "total", *phase_names, "db", "embed-alongside"]
    phase_rows = [{"request": kind, "server": variant,
                   **{name: statistics.median(values) for name, values in by_name.items()}}
                  for (kind, variant), by_name in phases.items()]
    print_table("Where the time goes: medians by phase, ms, both connections (client: as the client measured "
                "it; total: inside Django; embed: the query's vector; db: SQL time, part of the phases; "
                "embed-alongside: /context's query vector, on a thread while the request reads the profile)",
                phase_rows, names)
    cache_rows = []
    for variant in variants:
        hits = counts_after[variant]["hit"] - counts_before[variant]["hit"]
        misses = counts_after[variant]["miss"] - counts_before[variant]["miss"]
        cache_rows.append({"server": variant, "query vectors": int(hits + misses), "cache hits": int(hits),
                           "hit rate": hits / max(hits + misses, 1),
                           "keep-alive reconnects": clients[variant].reconnects})
    print_table("The query-vector cache during the reads (/metrics), and how often a kept-alive connection "
                "was closed by the server", cache_rows,
                ["server", "query vectors", "cache hits", "hit rate", "keep-alive reconnects"])
    now, before = variants[1], variants[0]

    def p(kind: str, connection_kind: str, variant: str, q: str) -> float:
        return percentiles(samples[(kind, connection_kind, variant)])[q]

    summary = {
        "search_new_keepalive_p95_ms": p("search, new question", "keep-alive", now, "p95"),
        "context_new_keepalive_p95_ms": p("context, new question", "keep-alive", now, "p95"),
        "read_keepalive_p50_ms": p("read by id", "keep-alive", now, "p50"),
        "search_new_fresh_p95_ms": p("search, new question", "new connection", now, "p95"),
        "context_new_fresh_p95_ms": p("context, new question", "new connection", now, "p95"),
        "embed_new_p50_ms": statistics.median(phases[("search, new question", now)].get("embed", [0.0])),
        "embed_new_p50_ms_baseline": statistics.median(phases[("search, new question", before)].get("embed", [0.0])),
        "cache_hit_rate": (counts_after[now]["hit"] - counts_before[now]["hit"])
        / max(sum(counts_after[now].values()) - sum(counts_before[now].values()), 1),
    }
    ratios = {f"{kind.split(',')[0].replace(' ', '_')}{'_new' if 'new' in kind else ''}_{q}_ratio":
              p(kind, "keep-alive", now, q) / p(kind, "keep-alive", before, q)
              for kind in ("read by id", "search, new question", "context, new question") for q in ("p50", "p95")}
    ratios.update({f"{kind.split(',')[0]}{'_new' if 'new' in kind else ''}_server_cpu_mean_ratio":
                   statistics.mean(samples[(kind, "server CPU", now)])
                   / max(statistics.mean(samples[(kind, "server CPU", before)]), 1e-9)
                   for kind in ("read by id", "search, new question", "context, new question")})
    print("\n" + " ".join(f"{name}={value:.2f}" for name, value in {**summary, **ratios}.items()))


if __name__ == "__main__":
    main()
