"""The abuse runs of issue 13, re-measured against gunicorn on loopback:
answer sizes with maximal `data`, history growth under one-field PATCHes,
big conversations, and another tenant's search latency while one tenant
floods ingestion (quiet and flood phases interleaved, same process).

    make bench-abuse                     # hash embedder; BENCH_ARGS="--provider local" for the bundled model
"""

from __future__ import annotations

import argparse
import json
import statistics
import threading
import time
import uuid
from urllib.error import HTTPError
from urllib.request import Request, urlopen

from common import gunicorn_server, percentiles, print_table, setup_django


def call(port: int, key: str, method: str, path: str, body=None) -> tuple[int, bytes, float]:
    data = json.dumps(body).encode() if body is not None else None
    request = Request(f"http://127.0.0.1:{port}/api/v1/{path}", data=data, method=method,
                      headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"})
    started = time.perf_counter()
    try:
        with urlopen(request, timeout=120) as response:
            return response.status, response.read(), (time.perf_counter() - started) * 1000
    except HTTPError as error:
        return error.code, error.read(), (time.perf_counter() - started) * 1000


def server_rss_mb(port: int) -> float:
    import psutil

    total = 0
    for process in psutil.process_iter(["cmdline", "memory_info"]):
        cmdline = " ".join(process.info["cmdline"] or [])
        if "gunicorn" in cmdline and f"127.0.0.1:{port}" in cmdline:
            total += process.info["memory_info"].rss
    return total / 2 ** 20


def sentence(i: int) -> str:
    return f"I have a hobby number {i}: I collect stamps from country {i % 97} and I love blue teapots. "


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--provider", default="hash")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--searches", type=int, default=60, help="searches of the quiet tenant per phase")
    args = parser.parse_args()
    setup_django(database="memory_abuse", provider=args.provider)
    from django.conf import settings

    from memories.keys import api_key_create

    run = uuid.uuid4().hex[:6]
    flood_key = api_key_create(tenant_name=f"flood-{run}").raw_key
    quiet_key = api_key_create(tenant_name=f"quiet-{run}").raw_key
    env = {"EMBEDDED_DB_NAME": settings.DATABASES["default"]["NAME"], "EMBEDDING_PROVIDER": args.provider}
    with gunicorn_server(env) as port:
        # 1. Answer sizes: 20 memories with data at its bound.
        blob = "x" * (settings.MEMORY_MAX_DATA_BYTES - 100)
        for i in range(20):
            call(port, flood_key, "POST", "memories", {"user_id": "big", "text": f"Big memory {i}.",
                                                        "data": {"blob": blob}})
        over = call(port, flood_key, "POST", "memories", {"user_id": "big", "text": "Too big.",
                                                           "data": {"blob": blob * 2}})
        sizes = []
        for label, method, path, body in [
            ("list", "GET", "memories?user_id=big&page_size=500", None),
            ("list ?include=data", "GET", "memories?user_id=big&page_size=500&include=data", None),
            ("search", "POST", "memories/search", {"user_id": "big", "query": "big memory", "limit": 100}),
            ("search ?include=data", "POST", "memories/search?include=data",
             {"user_id": "big", "query": "big memory", "limit": 100}),
            ("context", "POST", "context", {"user_id": "big", "query": "big memory"}),
        ]:
            code, content, _ = call(port, flood_key, method, path, body)
            sizes.append({"answer": label, "status": code, "bytes": len(content)})
        # 2. History growth: ten one-field PATCHes of a memory with data at its bound.
        _, created, _ = call(port, flood_key, "POST", "memories", {"user_id": "hist", "text": "Patched memory.",
                                                                    "data": {"blob": blob, "n": 0}})
        memory_id = json.loads(created)["memory"]["id"]
        for n in range(1, 11):
            call(port, flood_key, "PATCH", f"memories/{memory_id}", {"data": {"blob": blob, "n": n}})
        from django.db import connection

        with connection.cursor() as cursor:
            cursor.execute("SELECT coalesce(sum(pg_column_size(old_data) + pg_column_size(new_data)), 0) "
                           "FROM memory_history WHERE memory_id = %s AND event = 'UPDATE'", [memory_id])
            history_bytes = cursor.fetchone()[0]
        _, history_page, _ = call(port, flood_key, "GET", f"memories/{memory_id}/history")
        # 3. A big conversation: answered at once (a background job) or refused.
        long_turns = [{"role": "user", "content": sentence(i)} for i in range(80)]  # ~7,000 characters
        code_long, body_long, ms_long = call(port, flood_key, "POST", "conversations",
                                             {"user_id": "talk", "session_id": "s", "messages": long_turns})
        too_long = [{"role": "user", "content": "y" * 7000} for _ in range(6)]
        code_too_long, _, _ = call(port, flood_key, "POST", "conversations",
                                   {"user_id": "talk", "session_id": "s2", "messages": too_long})
        # 4. The quiet tenant's searches, with and without a flood of conversations from the other tenant.
        for i in range(200):
            call(port, quiet_key, "POST", "memories", {"user_id": f"q{i % 10}", "text": f"Quiet fact {i} about tea."})
        phases: dict[str, list[float]] = {"quiet": [], "flood": []}
        flood_sent = [0]
        peak_rss = server_rss_mb(port)
        for _ in range(args.rounds):
            for phase in ("quiet", "flood"):
                stop = threading.Event()
                flooders = []
                if phase == "flood":
                    def flood(stop: threading.Event = stop) -> None:
                        n = 0
                        while not stop.is_set():
                            code, _, _ = call(port, flood_key, "POST", "conversations",
                                              {"user_id": f"f{n % 5}", "session_id": f"s{n}",
                                               "messages": long_turns})
                            flood_sent[0] += 1
                            if code == 429:  # a client that honours Retry-After (the answer says 5 s)
                                stop.wait(5)
                            n += 1
                    flooders = [threading.Thread(target=flood) for _ in range(4)]
                    for thread in flooders:
                        thread.start()
                    time.sleep(1.0)
                for i in range(args.searches):
                    code, _, ms = call(port, quiet_key, "POST", "memories/search",
                                       {"user_id": f"q{i % 10}", "query": "tea fact"})
                    phases[phase].append(ms)
                    peak_rss = max(peak_rss, server_rss_mb(port))
                stop.set()
                for thread in flooders:
                    thread.join(120)
        status_counts = {}
        from memories.models import ConversationJob

        for status in ConversationJob.objects.filter(tenant__name=f"flood-{run}").values_list("status", flat=True):
            status_counts[status] = status_counts.get(status, 0) + 1

    print_table("Answer sizes (20 memories with data at the 16 KB bound)", sizes, ["answer", "status", "bytes"])
    print_table("Other bounds", [
        {"probe": "data over its bound", "outcome": f"{over[0]} {over[1][:80].decode(errors='replace')}"},
        {"probe": "10 one-field PATCHes of a 16 KB-data memory: history bytes", "outcome": history_bytes},
        {"probe": "its history, first page, bytes", "outcome": len(history_page)},
        {"probe": "80-turn conversation (~7,000 chars)",
         "outcome": f"{code_long} in {ms_long:.0f} ms, job {json.loads(body_long).get('status')}"},
        {"probe": "42,000-char conversation", "outcome": code_too_long},
    ], ["probe", "outcome"])
    rows = [{"phase": name, **percentiles(values)} for name, values in phases.items()]
    print_table("Quiet tenant's search latency (ms), phases interleaved", rows, ["phase", "n", "p50", "p95", "p99"])
    ratio = statistics.median(phases["flood"]) / statistics.median(phases["quiet"])
    print(f"\nflood: {flood_sent[0]} conversations sent by 4 clients (each waits out a 429); "
          f"jobs by status {status_counts}; "
          f"peak server RSS {peak_rss:.0f} MB")
    print(f"summary: quiet p95 {rows[0]['p95']:.1f} ms, under flood p95 {rows[1]['p95']:.1f} ms "
          f"(median ratio {ratio:.2f}); largest answer {max(s['bytes'] for s in sizes):,} bytes; "
          f"history of 10 PATCHes {history_bytes:,} bytes; peak RSS {peak_rss:.0f} MB")


if __name__ == "__main__":
    main()
