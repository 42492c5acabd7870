"""Issue 51's proof under load: overlapping group conversations sent session by session without waiting
(both speakers as participants and senders, the first speaker alternating, corrections and repeated
statements across sessions), as fast as a client can, under `make run`'s processes (gunicorn workers with
their background threads, Celery eager) and under `make up`'s (web, Celery worker and beat on RabbitMQ):
every acknowledged job finishes `done` with the facts it was sent. bench/replay.py drives the servers
(`make bench-replay` measures jobs per second and failures against the round's starting commit)."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import per_worker
from tests.figures import record

ROOT = Path(__file__).resolve().parent.parent


def _replay(topology: str, database: str) -> dict[str, int]:
    env = {**os.environ, "EMBEDDED_DB_NAME": database, "DJANGO_SETTINGS_MODULE": "memory_project.settings"}
    env.pop("EMBEDDING_PROVIDER", None)
    result = subprocess.run([sys.executable, "replay.py", "--workload", "synthetic", "--people", "6",
                             "--sessions", "4", "--topology", topology, "--provider", "hash", "--baseline", "",
                             "--timeout", "240"], cwd=ROOT / "bench", env=env, capture_output=True, text=True,
                            timeout=420)
    assert result.returncode == 0, result.stderr[-3000:]
    summary = result.stdout.strip().splitlines()[-1]
    counts = {key: int(value) for key, value in re.findall(r"(\w+)=(\d+)(?:\s|$)", summary)}
    assert {"jobs", "done", "failed", "unfinished", "refused", "missing"} <= set(counts), summary
    return counts


@pytest.mark.slow
@pytest.mark.parametrize("topology", ["run", "up"])
def test_every_acknowledged_job_of_overlapping_conversations_finishes_with_its_memories(topology):
    counts = _replay(topology, per_worker(f"memory_replay_{topology}"))
    record(f"replay under make {topology}: jobs / done / failed",
           f"{counts['jobs']} / {counts['done']} / {counts['failed']}")
    assert counts["jobs"] == 48 and counts["refused"] == 0  # 6 groups x 4 sessions x 2 senders, all 202
    assert counts["done"] == counts["jobs"], counts
    assert counts["failed"] == counts["unfinished"] == 0, counts
    assert counts["missing"] == 0, counts  # each session's new fact per speaker is stored
