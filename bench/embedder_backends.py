"""The local model's batch backend, re-decided: each candidate embeds in a fresh
process (nothing else loaded, as a Celery worker starts), the candidates
interleaved over rounds; medians reported.

    make bench-embedder                                   # 5 rounds, 1,000 sentences
    make bench-embedder BENCH_ARGS="--rounds 3 --sentences 500"
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys

from common import ROOT, print_table

CANDIDATES = {
    "onnx": {"backend": "onnx", "batch_backend": ""},
    "torch": {"backend": "torch", "batch_backend": ""},
    "onnx, batches of 32+ on torch": {"backend": "onnx", "batch_backend": "torch"},
}

ONE_RUN = r"""
import json, sys, time
sys.path.insert(0, {root!r})
import os
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memory_project.settings")
os.environ["EMBEDDED_DB_NAME"] = "memory_bench"
import django
django.setup()
from django.conf import settings
from memories.embedding import MiniLMEmbedder
texts = [f"Sentence number {{i}} about a user who likes tea, hiking and Lisbon in the spring." for i in range({n})]
started = time.perf_counter()
embedder = MiniLMEmbedder({backend!r}, cache_dir=settings.VAR_DIR / "models", batch_backend={batch!r} or None)
embedder.embed_documents(texts[:64])  # the first batch loads what the path needs
load = time.perf_counter() - started
rates = []
for _ in range(2):
    t0 = time.perf_counter()
    embedder.embed_documents(texts)
    rates.append(len(texts) / (time.perf_counter() - t0))
singles = []
for text in texts[:100]:
    t0 = time.perf_counter()
    embedder.embed_query(text)
    singles.append((time.perf_counter() - t0) * 1000)
singles.sort()
print(json.dumps({{"rate": max(rates), "query_p50": singles[50], "load_s": load}}))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--sentences", type=int, default=1000)
    args = parser.parse_args()
    runs: dict[str, list[dict]] = {name: [] for name in CANDIDATES}
    for round_number in range(args.rounds):
        for name, spec in CANDIDATES.items():  # interleaved: a noisy moment hits every candidate alike
            code = ONE_RUN.format(root=str(ROOT), n=args.sentences, backend=spec["backend"],
                                  batch=spec["batch_backend"])
            done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600,
                                  cwd=ROOT)
            if done.returncode != 0:
                raise SystemExit(f"{name} failed:\n{done.stderr[-3000:]}")
            runs[name].append(json.loads(done.stdout.strip().splitlines()[-1]))
            print(f"round {round_number + 1}: {name}: {runs[name][-1]['rate']:.0f} sentences/s", flush=True)
    baseline = statistics.median(r["rate"] for r in runs["onnx, batches of 32+ on torch"])
    rows = [{"backend": name, "batch sentences/s (median)": statistics.median(r["rate"] for r in results),
             "vs shipped": statistics.median(r["rate"] for r in results) / baseline,
             "one query p50 ms": statistics.median(r["query_p50"] for r in results),
             "first batch incl. load s": statistics.median(r["load_s"] for r in results)}
            for name, results in runs.items()]
    print_table(f"Local model batch backends, a fresh process each, {args.rounds} interleaved rounds, "
                f"{args.sentences} sentences", rows,
                ["backend", "batch sentences/s (median)", "vs shipped", "one query p50 ms", "first batch incl. load s"])
    best = max(rows, key=lambda r: r["batch sentences/s (median)"])
    print(f"\nsummary: fastest_batches={best['backend']!r} rate={best['batch sentences/s (median)']:.0f}/s "
          f"shipped={baseline:.0f}/s rounds={args.rounds}")


if __name__ == "__main__":
    main()
