"""A search's query vector at fp32 or int8 (EMBEDDING_LOCAL_QUERY_PRECISION), and the
sentence-transformers path it replaced: on the LoCoMo dev split, in one process, every
question embedded by each path in turn (interleaved), then searched with each
precision against the same fp32-embedded turns.

    make bench-query-precision
    make bench-query-precision BENCH_ARGS="--quick"     # one conversation
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
import uuid

from common import percentiles, print_table, setup_django
from locomo import CATEGORIES, DEFAULT_DATA, K, Scores, questions, store_conversation

PRECISIONS = ("fp32", "int8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="one conversation")
    args = parser.parse_args()
    setup_django(database="memory_quality", provider="local")
    import numpy as np
    from django.conf import settings

    from memories.embedding import MiniLMEmbedder
    from memories.models import Tenant
    from memories.search import SearchQuery, memory_search
    from memories.vectors import refresh_planner_statistics

    models = settings.VAR_DIR / "models"
    embedders = {p: MiniLMEmbedder("onnx", cache_dir=models, threads=settings.EMBEDDING_LOCAL_THREADS,
                                  query_precision=p) for p in PRECISIONS}
    paths = {"sentence-transformers encode (before)": lambda text: embedders["fp32"].embed_documents([text])[0],
             "direct ONNX, fp32": embedders["fp32"].embed_search_query,
             "direct ONNX, int8": embedders["int8"].embed_search_query}
    samples = json.loads(DEFAULT_DATA.read_text())[: 1 if args.quick else None]
    tenant = Tenant.objects.create(name=f"precision-{uuid.uuid4().hex[:8]}")
    embed_ms: dict[str, list[float]] = {name: [] for name in paths}
    cosines: list[float] = []
    scores = {(p, mode): Scores() for p in PRECISIONS for mode in ("semantic", "hybrid")}
    asked = 0
    for number, sample in enumerate(samples, start=1):
        user_id = sample["sample_id"]
        turns, dia_of = store_conversation(tenant, sample, embedders["fp32"])
        refresh_planner_statistics()
        qs = questions(sample, {t["dia_id"] for t in turns})
        for q in qs:
            vectors = {}
            for name, embed in paths.items():  # interleaved: a noisy moment hits every path alike
                started = time.perf_counter()
                vectors[name] = embed(q["question"])
                embed_ms[name].append((time.perf_counter() - started) * 1000)
            cosines.append(float(vectors["direct ONNX, int8"] @ vectors["direct ONNX, fp32"]))
            for (precision, mode), score in scores.items():
                found = memory_search(tenant=tenant, embedder=embedders[precision],
                                      query=SearchQuery(query=q["question"], user_id=user_id, mode=mode, limit=K))
                score.add(q["category"], [d for r in found for d in dia_of.get(str(r.memory.id), [])],
                          q["evidence"])
        asked += len(qs)
        print(f"conversation {number}/{len(samples)}: {len(turns)} turns, {len(qs)} questions", flush=True)

    base = statistics.median(embed_ms["sentence-transformers encode (before)"])
    print_table(f"One query's vector, {asked} questions, paths interleaved (ms)", [
        {"path": name, **percentiles(samples_ms), "vs before": base / statistics.median(samples_ms)}
        for name, samples_ms in embed_ms.items()], ["path", "p50", "p95", "p99", "n", "vs before"])
    rows = []
    for (precision, mode), score in scores.items():
        overall = score.metrics()
        rows.append({"search": f"{mode}, {precision} query", **{k: overall[k] for k in ("hit@10", "mrr",
                                                                                       "session R@5")},
                     **{f"{label} hit@10": score.metrics(c).get("hit@10", float("nan"))
                        for c, label in CATEGORIES.items()}})
    print_table("Retrieval with each query precision (turns embedded in fp32)", rows,
                ["search", "hit@10", "mrr", "session R@5", *[f"{label} hit@10" for label in CATEGORIES.values()]])
    hybrid = {p: scores[(p, "hybrid")].metrics() for p in PRECISIONS}
    semantic = {p: scores[(p, "semantic")].metrics() for p in PRECISIONS}
    print(f"\nsummary: int8_query_p50_ms={statistics.median(embed_ms['direct ONNX, int8']):.2f} "
          f"fp32_query_p50_ms={statistics.median(embed_ms['direct ONNX, fp32']):.2f} "
          f"before_p50_ms={base:.2f} min_cosine={min(cosines):.4f} mean_cosine={np.mean(cosines):.4f} "
          f"hybrid_hit@10 fp32={hybrid['fp32']['hit@10']:.3f} int8={hybrid['int8']['hit@10']:.3f} "
          f"hybrid_mrr fp32={hybrid['fp32']['mrr']:.3f} int8={hybrid['int8']['mrr']:.3f} "
          f"semantic_hit@10 fp32={semantic['fp32']['hit@10']:.3f} int8={semantic['int8']['hit@10']:.3f} "
          f"questions={asked}")


if __name__ == "__main__":
    main()
