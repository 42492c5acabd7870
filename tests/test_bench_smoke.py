"""The LoCoMo benchmark's quick mode runs to the end and prints its summary.
It asserts that the benchmark works, not any number: numbers are measured,
not asserted."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import per_worker

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT.parent / "shared" / "data" / "locomo_dev.json"


@pytest.mark.slow
@pytest.mark.skipif(not DATA.exists(), reason="LoCoMo data (../shared/data) is not beside this checkout")
def test_the_locomo_benchmark_completes_in_quick_mode():
    env = {**os.environ, "EMBEDDED_DB_NAME": per_worker("memory_bench_smoke"),
           "DJANGO_SETTINGS_MODULE": "memory_project.settings"}
    env.pop("EMBEDDING_PROVIDER", None)
    result = subprocess.run([sys.executable, "locomo.py", "--quick"], cwd=ROOT / "bench", env=env,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    last = result.stdout.strip().splitlines()[-1]
    assert re.fullmatch(r"recall@10=\d\.\d{3} full_recall@10=\d\.\d{3} mrr=\d\.\d{3} "
                        r"session_R@5=\d\.\d{3} session_R@10=\d\.\d{3} p95_ms=[\d.]+ http_p95_ms=[\d.]+", last), last
