"""How fast the admin's memory list opens on a large table (default: the
100k-memory tenant `make bench BENCH_ARGS="--n 100000"` loads), with the
query count, for the plain list and its common filters.

    make bench-admin
"""

from __future__ import annotations

import argparse
import statistics
import time

from common import print_table, setup_django


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()
    setup_django()
    from django.contrib.auth.models import User
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    from memories.models import MemoryItem

    total = MemoryItem.objects.count()
    user, _ = User.objects.get_or_create(username="bench-admin", defaults={"is_staff": True, "is_superuser": True})
    client = Client()
    client.force_login(user)
    rows = []
    for label, query in (("list", ""), ("filter: type + status", "?memory_type=fact&status=active"),
                         ("filter: current, has embedding", "?current=yes&embedded=yes"),
                         ("filter: created last 7 days", "?created=7"), ("search by user id", "?q=user-7"),
                         ("page 50", "?p=50")):
        url = "/admin/memories/memoryitem/" + query
        client.get(url)
        samples = []
        for _ in range(args.repeat):
            started = time.perf_counter()
            response = client.get(url)
            samples.append((time.perf_counter() - started) * 1000)
            assert response.status_code == 200
        with CaptureQueriesContext(connection) as queries:
            client.get(url)
        rows.append({"page": label, "p50 ms": statistics.median(samples), "max ms": max(samples),
                     "queries": len(queries)})
    print_table(f"Admin memory list, {total:,} memories in the database", rows, ["page", "p50 ms", "max ms",
                                                                                 "queries"])
    print(f"\nsummary: rows={total} list_p50_ms={rows[0]['p50 ms']:.0f} max_ms={max(r['max ms'] for r in rows):.0f}")


if __name__ == "__main__":
    main()
