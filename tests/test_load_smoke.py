"""The load script runs through make up's topology (web, worker, beat on RabbitMQ) and every request succeeds.
Throughput and latency are measured by `make bench-load`, not asserted here; nor is its comparison with a
baseline commit (`--baseline ''`: the old code's topology would double the test's time for no check of this
code)."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import per_worker
from tests.figures import record

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.slow
def test_a_short_mixed_load_has_no_errors():
    env = {**os.environ, "EMBEDDED_DB_NAME": per_worker("memory_load_smoke"),
           "DJANGO_SETTINGS_MODULE": "memory_project.settings"}
    env.pop("EMBEDDING_PROVIDER", None)
    result = subprocess.run([sys.executable, "load.py", "--seconds", "6", "--clients", "4", "--memories", "500",
                             "--users", "20", "--configs", "2x1", "--rounds", "1", "--warmup", "1",
                             "--provider", "hash", "--baseline", ""], cwd=ROOT / "bench", env=env,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    summary = result.stdout.strip().splitlines()[-1]
    match = re.search(r"requests=(\d+) .* errors=(\d+)", summary)
    assert match, summary
    record("load smoke: requests / errors", f"{match.group(1)} / {match.group(2)}")
    assert int(match.group(1)) > 0 and match.group(2) == "0"
