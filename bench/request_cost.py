"""What a request costs beyond its work, measured from outside as `make run` serves it.

Two gunicorn servers (`make run`'s gunicorn.conf.py, one worker each, the local model) share one
database: a baseline — another commit of this project, checked out beside it (`--baseline`, a git
worktree made and removed by the bench) — and this checkout. One client sends the same requests to
both, interleaved round by round (each first in turn): an authenticated read by id, a save, a hybrid
search, a /context and a conversation submit, for one user of --memories memories; and calls the
search and context service functions in this process between them (what HTTP wraps). Rate limiting
stays on with its counters where `make run` keeps them (the database without Redis); its limits are
raised so that a benchmark is never refused.

This checkout answers with a Server-Timing header (SERVER_TIMING=1): the second table is where each
request's milliseconds go inside Django (memories/timing.py), medians by phase.

    make bench-requests            # BENCH_ARGS="--rounds 300 --memories 600 --baseline a21ba95"
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

from common import ROOT, gunicorn_server, percentiles, print_table, setup_django

# Reads first, interleaved round by round; then the writes (their background work — embedding, a
# conversation's job — would otherwise land in the middle of the reads' timings).
READ_KINDS = ("read by id", "hybrid search", "context")
WRITE_KINDS = ("save", "conversation submit")
KINDS = READ_KINDS + WRITE_KINDS
SERVICE_KINDS = ("hybrid search", "context")
TOPICS = ["tea", "running", "Lisbon", "cello", "bees", "nursing", "Porto", "peanuts", "jazz", "sailing"]


class Answer:
    def __init__(self, status: int, headers: dict[str, str], text: str):
        self.status_code, self.headers, self.text = status, headers, text


def send(port: int, method: str, path: str, headers: dict[str, str], body: dict | None = None) -> Answer:
    """One request on a new connection (make run's sync workers close each one), with the standard
    library's client: httpx adds about 0.5 ms of its own per request on these machines."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        payload = json.dumps(body).encode() if body is not None else None
        connection.request(method, f"/api/v1/{path}", body=payload,
                           headers={**headers, **({"Content-Type": "application/json"} if payload else {})})
        response = connection.getresponse()
        return Answer(response.status, dict(response.getheaders()), response.read().decode())
    finally:
        connection.close()


@contextlib.contextmanager
def baseline_checkout(commit: str):
    """A worktree of `commit` (removed afterwards): the baseline server runs its code on this venv."""
    folder = Path(tempfile.mkdtemp(prefix="bench-baseline-"))
    subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(folder), commit], check=True,
                   capture_output=True)
    try:
        yield folder
    finally:
        subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(folder)], check=False,
                       capture_output=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=300)
    parser.add_argument("--memories", type=int, default=600)
    parser.add_argument("--warmup", type=int, default=30)
    parser.add_argument("--baseline", default="a21ba95",
                        help="the commit to compare with (default: the code before the lean request path's "
                             "second round)")
    parser.add_argument("--just-loaded", action="store_true",
                        help="measure straight after the load, before VACUUM (ANALYZE)")
    args = parser.parse_args()

    setup_django(database="memory_bench_requests", provider="local")
    from django.conf import settings

    from memories.keys import api_key_create
    from memories.models import MemoryItem
    from memories.timing import PHASES, parse_server_timing
    from memories.vectors import embed_items
    from memories.writing import MemorySpec, memory_create_batch

    tenant_name = f"requests-{uuid.uuid4().hex[:8]}"
    issued = api_key_create(tenant_name=tenant_name)
    specs = [MemorySpec(user_id="u", text=f"Memory {i}: the user talked about {TOPICS[i % len(TOPICS)]} "
                                          f"on day {i} and said something specific about it.")
             for i in range(args.memories)]
    results = memory_create_batch(tenant=issued.api_key.tenant, specs=specs, actor="bench", enqueue_embedding=False)
    ids = [str(r.memory.id) for r in results]
    for start in range(0, len(ids), 200):
        embed_items(ids[start:start + 200])
    print(f"{len(ids)} memories embedded; {MemoryItem.objects.filter(user_id='u').count()} rows", file=sys.stderr)
    if not args.just_loaded:
        # The load measured as a service serves it once autovacuum has been by: statistics kept and the
        # visibility map set. Straight after the load the same user's search took 12 ms in the bench and
        # 3.6 ms in one process minutes later, and runs differed twofold (bench/README.md).
        from django.db import connection

        with connection.cursor() as cursor:
            cursor.execute("VACUUM (ANALYZE) memory_items")
            cursor.execute("VACUUM (ANALYZE) memory_vectors")

    headers = {"Authorization": f"Bearer {issued.raw_key}"}
    common_env = {"RATE_LIMIT_KEY_REQUESTS": "1000000", "RATE_LIMIT_TENANT_REQUESTS": "1000000",
                  "EMBEDDED_DB_NAME": "memory_bench_requests", "IN_PROCESS_SCHEDULE": "0",
                  "MEMORY_VAR_DIR": str(settings.VAR_DIR), "SERVER_TIMING": "1"}
    variants = (f"baseline ({args.baseline})", "this checkout")
    samples: dict[tuple[str, str], list[float]] = {(v, k): [] for v in (*variants, "service function") for k in KINDS}
    samples.update({("floor", "HTTP"): [], ("floor", "SQL"): []})
    phases: dict[str, dict[str, list[float]]] = {kind: {} for kind in KINDS}
    with baseline_checkout(args.baseline) as before_tree, \
            gunicorn_server(common_env, workers=1, checkout=before_tree, as_make_run=True) as before_port, \
            gunicorn_server(common_env, workers=1, as_make_run=True) as now_port, \
            gunicorn_server({}, workers=1, checkout=Path(__file__).parent, app="floor_app:application") as floor_port:
        ports = dict(zip(variants, (before_port, now_port), strict=True))

        def one(variant: str, kind: str, round_number: int) -> tuple[float, Answer]:
            port = ports[variant]
            topic = TOPICS[round_number % len(TOPICS)]
            started = time.perf_counter()
            if kind == "read by id":
                answer = send(port, "GET", f"memories/{ids[round_number % len(ids)]}", headers)
            elif kind == "save":
                answer = send(port, "POST", "memories", headers, {
                    "user_id": f"saver-{variant[:4]}", "text": f"Note {round_number}: the user mentioned {topic}."})
            elif kind == "hybrid search":
                answer = send(port, "POST", "memories/search", headers, {"user_id": "u",
                                                                          "query": f"what about {topic}?"})
            elif kind == "context":
                answer = send(port, "POST", "context", headers, {"user_id": "u", "query": f"tell me about {topic}"})
            else:
                answer = send(port, "POST", "conversations", headers, {
                    "user_id": f"talker-{variant[:4]}", "session_id": f"s{round_number}",
                    "messages": [{"role": "user", "content": f"I went sailing near {topic} today."},
                                 {"role": "assistant", "content": "That sounds lovely."}]})
            elapsed = (time.perf_counter() - started) * 1000
            if answer.status_code >= 300:
                raise SystemExit(f"{variant} {kind}: {answer.status_code} {answer.text[:200]}")
            return elapsed, answer

        def timed_floor(round_number: int) -> tuple[float, Answer]:
            started = time.perf_counter()
            answer = send(floor_port, "GET", f"memories/{ids[round_number % len(ids)]}", headers)
            return (time.perf_counter() - started) * 1000, answer

        from django.db import connection

        def sql_floor(round_number: int) -> float:
            """The read's one statement by hand, in this process: what the database costs."""
            started = time.perf_counter()
            with connection.cursor() as cursor:
                cursor.execute("SELECT * FROM memory_items WHERE id = %s AND tenant_id = %s",
                               [ids[round_number % len(ids)], issued.api_key.tenant_id])
                cursor.fetchall()
            return (time.perf_counter() - started) * 1000

        from memories.context import ContextRequest, build_context
        from memories.search import SearchQuery, memory_search

        tenant = issued.api_key.tenant

        def service(kind: str, round_number: int) -> float:
            """The service function alone, in this process: what the HTTP request wraps."""
            topic = TOPICS[round_number % len(TOPICS)]
            started = time.perf_counter()
            if kind == "hybrid search":
                memory_search(tenant=tenant, query=SearchQuery(query=f"what about {topic}?", user_id="u"))
            else:
                build_context(tenant=tenant, request=ContextRequest(query=f"tell me about {topic}", user_id="u"))
            return (time.perf_counter() - started) * 1000

        for kinds in (READ_KINDS, WRITE_KINDS):
            for round_number in range(args.warmup + args.rounds):
                order = list(variants) if round_number % 2 else list(reversed(variants))
                measured = round_number >= args.warmup
                for kind in kinds:
                    for variant in order:
                        elapsed, answer = one(variant, kind, round_number)
                        if measured:
                            samples[(variant, kind)].append(elapsed)
                            if variant == variants[1]:
                                for name, ms in parse_server_timing(answer.headers.get("Server-Timing", "")).items():
                                    phases[kind].setdefault(name, []).append(ms)
                    if kind in SERVICE_KINDS:
                        elapsed = service(kind, round_number)
                        if measured:
                            samples[("service function", kind)].append(elapsed)
                if kinds is READ_KINDS:
                    elapsed, _ = timed_floor(round_number)
                    if measured:
                        samples[("floor", "HTTP")].append(elapsed)
                        samples[("floor", "SQL")].append(sql_floor(round_number))
                if round_number % 50 == 0:
                    print(f"{kinds[0]}...: round {round_number}/{args.warmup + args.rounds}", file=sys.stderr)
    rows = [{"request": kind, "variant": variant, **percentiles(samples[(variant, kind)])}
            for kind in KINDS for variant in (*variants, "service function") if samples[(variant, kind)]]
    rows += [{"request": "floor: HTTP (a WSGI app answering {} under gunicorn)", "variant": "floor",
              **percentiles(samples[("floor", "HTTP")])},
             {"request": "floor: SQL (the read's row by hand, in this process)", "variant": "floor",
              **percentiles(samples[("floor", "SQL")])}]
    print_table(f"One client, {args.rounds} rounds interleaved, ms (make run's gunicorn, 1 worker each, "
                f"local model)", rows, ["request", "variant", "p50", "p95", "p99", "n"])
    names = ["request", "client", "total", *PHASES, "db"]
    phase_rows = []
    for kind in KINDS:
        outside = statistics.median(samples[(variants[1], kind)])
        row: dict = {"request": kind, "client": outside}
        row.update({name: statistics.median(values) for name, values in phases[kind].items()})
        phase_rows.append(row)
    print_table("Where the time goes in this checkout: medians by phase, ms (client: as the client measured it; "
                "total: inside Django; db: SQL time, part of the phases)", phase_rows, names)
    ratios = {kind: statistics.median(samples[(variants[1], kind)]) / statistics.median(samples[(variants[0], kind)])
              for kind in KINDS}
    overhead = {kind: percentiles(samples[(variants[1], kind)])["p95"]
                - percentiles(samples[("service function", kind)])["p95"] for kind in SERVICE_KINDS}
    print("\n" + " ".join(f"{kind.replace(' ', '_')}_p50_ratio={ratio:.2f}" for kind, ratio in ratios.items())
          + f" read_p50_ms={statistics.median(samples[(variants[1], 'read by id')]):.2f}"
          + "".join(f" {kind.replace(' ', '_')}_http_minus_service_p95_ms={ms:.2f}" for kind, ms in overhead.items()))


if __name__ == "__main__":
    main()
