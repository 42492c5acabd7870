"""The search defaults the seeds give against the measured ones (memories/search/defaults.py): on LoCoMo's dev
split, one memory per turn, the default local model, every question searched in each mode.

Seed 001 (§3.1) sets a minimum relevance of 0.5 for every mode; seed 002 (§8.2) per-mode top_k (keyword
10, vector 20, hybrid 15) and similarity radii (vector 0.7, hybrid 0.6). For each floor the script reports
hit@10, MRR, the answers' mean length and the share of questions answered with nothing. A floor on relevance
only removes results, so it is applied to one 50-long answer per question and mode; a cosine floor changes
hybrid's fusion, so hybrid is searched again with each.

    .venv/bin/python bench/search_defaults.py            # three conversations
    .venv/bin/python bench/search_defaults.py --quick    # one
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
import uuid

from common import print_table, setup_django
from locomo import DEFAULT_DATA, K, questions, store_conversation

MODES = ("hybrid", "semantic", "keyword")
SCORE_FLOORS = (None, 0.1, 0.2, 0.3, 0.4, 0.5)
SIMILARITY_FLOORS = (None, 0.2, 0.3, 0.5, 0.6, 0.7)


def rank_metrics(answers: list[tuple[list[list[str]], list[str]]], k: int = K) -> dict:
    """hit@k, MRR@k, mean answer length and empty share over (answer's dia ids per result, evidence)."""
    hits = rr = shown = empty = 0.0
    for ranked, evidence in answers:
        top = ranked[:k]
        first = next((i for i, dias in enumerate(top, start=1) if set(dias) & set(evidence)), None)
        hits += bool(first)
        rr += 1.0 / first if first else 0.0
        shown += len(top)
        empty += not top
    n = max(len(answers), 1)
    return {f"hit@{k}": hits / n, "mrr": rr / n, "mean shown": shown / n, "empty": empty / n}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="one conversation")
    args = parser.parse_args()
    setup_django(database="memory_quality", provider="local")
    from memories.embedding import get_embedder
    from memories.models import Tenant
    from memories.search import SearchQuery, memory_search
    from memories.vectors import refresh_planner_statistics

    embedder = get_embedder()
    samples = json.loads(DEFAULT_DATA.read_text())[: 1 if args.quick else None]
    tenant = Tenant.objects.create(name=f"defaults-{uuid.uuid4().hex[:8]}")
    long: dict[str, list] = {mode: [] for mode in MODES}  # (results as (dias, relevance, similarity), evidence)
    rerun: dict[float | None, list] = {s: [] for s in SIMILARITY_FLOORS}
    timing: dict[int, list[float]] = {10: [], 15: []}
    for sample in samples:
        user_id = sample["sample_id"]
        turns, dia_of = store_conversation(tenant, sample, embedder)
        refresh_planner_statistics()
        for q in questions(sample, {t["dia_id"] for t in turns}):
            for mode in MODES:
                found = memory_search(tenant=tenant, embedder=embedder,
                                      query=SearchQuery(query=q["question"], user_id=user_id, mode=mode, limit=50))
                long[mode].append(([(dia_of.get(str(r.memory.id), []), r.scores["relevance"], r.scores["semantic"])
                                    for r in found], q["evidence"]))
            for floor in SIMILARITY_FLOORS:
                found = memory_search(tenant=tenant, embedder=embedder, query=SearchQuery(
                    query=q["question"], user_id=user_id, mode="hybrid", limit=K, min_similarity=floor))
                rerun[floor].append(([dia_of.get(str(r.memory.id), []) for r in found], q["evidence"]))
            for limit in (10, 15):  # the seed's hybrid top_k against ours: the service function's time
                started = time.perf_counter()
                memory_search(tenant=tenant, embedder=embedder,
                              query=SearchQuery(query=q["question"], user_id=user_id, mode="hybrid", limit=limit))
                timing[limit].append((time.perf_counter() - started) * 1000)
        print(f"{user_id}: {len(turns)} turns", flush=True)

    rows = []
    for mode in MODES:
        for floor in SCORE_FLOORS:
            answers = [([dias for dias, relevance, _ in results if floor is None or relevance >= floor], evidence)
                       for results, evidence in long[mode]]
            rows.append({"mode": mode, "floor": f"min_score {floor}", **rank_metrics(answers)})
    for floor in SIMILARITY_FLOORS[1:]:
        answers = [([dias for dias, _, similarity in results if similarity is not None and similarity >= floor],
                     evidence) for results, evidence in long["semantic"]]
        rows.append({"mode": "semantic", "floor": f"min_similarity {floor}", **rank_metrics(answers)})
    for floor in SIMILARITY_FLOORS:
        rows.append({"mode": "hybrid", "floor": f"min_similarity {floor} (searched)", **rank_metrics(rerun[floor])})
    print_table(f"Floors, {len(long['hybrid'])} questions (hit@{K}, MRR@{K})", rows,
                ["mode", "floor", f"hit@{K}", "mrr", "mean shown", "empty"])
    deeper = []
    for mode, k in (("keyword", 10), ("semantic", 20), ("hybrid", 15), ("hybrid", 10), ("semantic", 10)):
        answers = [([dias for dias, _, _ in results], evidence) for results, evidence in long[mode]]
        deeper.append({"mode": mode, "top_k": k, **{("hit@k" if key.startswith("hit@") else key): value
                                                    for key, value in rank_metrics(answers, k).items()}})
    print_table("The seed's top_k per mode (no floor)", deeper, ["mode", "top_k", "hit@k", "mrr", "mean shown"])
    print("hybrid search, service function, p50 ms: limit 10 "
          f"{statistics.median(timing[10]):.2f}, limit 15 {statistics.median(timing[15]):.2f}")
    seed = {mode: next(r for r in rows if r["mode"] == mode and r["floor"] == "min_score 0.5") for mode in MODES}
    ours = {mode: next(r for r in rows if r["mode"] == mode and r["floor"] == "min_score None") for mode in MODES}
    print("summary: " + " ".join(f"{m}_hit@10 none={ours[m][f'hit@{K}']:.3f} seed0.5={seed[m][f'hit@{K}']:.3f}"
                                 for m in MODES))


if __name__ == "__main__":
    main()
