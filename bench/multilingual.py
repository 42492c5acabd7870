"""Chinese, English and across them: which local embedding model serves both.

Two sets, every candidate model on each, interleaved (user by user, conversation
by conversation, the models in turn), each model in its own tenant, through the
service's own write path (memory_create_batch, embed_items) and its search:

- The Chinese set the tests own (tests/samples/zh_retrieval.json, written for this
  project): 60 topics, each with memory templates, values, and questions that
  paraphrase the memory without its words, in Chinese, in English and in mixed
  Chinese-English. Every user is dealt 30 topics (a seeded draw) and one memory
  per topic; every question of the user's topics is asked against that user's
  memories only: hit@3 and MRR, by question language, for semantic, keyword and
  hybrid search.
- LoCoMo's dev split (English conversation; bench/locomo.py's path: one memory per
  turn): hybrid and semantic hit@10 and MRR, so that English stays as good.

Query embedding time (a search's query vector, as search computes it) is timed
for every model on the same questions, interleaved.

    make bench-multilingual                                   # 12 users, LoCoMo dev split, three models
    make bench-multilingual BENCH_ARGS="--users 4 --skip-locomo --models all-MiniLM-L6-v2+use-multilingual-v3"
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
import uuid
from pathlib import Path

from common import ROOT, percentiles, print_table, setup_django

SET = ROOT / "tests" / "samples" / "zh_retrieval.json"
LANGUAGES = ("zh", "en", "mix")
MODES = ("semantic", "keyword", "hybrid")
TOPICS_PER_USER = 30
K_ZH = 3
K_LOCOMO = 10


def deal(topics: list[dict], users: int) -> list[dict]:
    """Each user's memories (one per topic, a seeded draw of topic, template and value)
    and questions (every question of the user's topics, in every language)."""
    dealt = []
    for index in range(users):
        rng = random.Random(index)
        chosen = rng.sample(topics, TOPICS_PER_USER)
        memories = [{"topic": t["topic"], "text": rng.choice(t["memory"]).format(rng.choice(t["values"]))}
                    for t in chosen]
        questions = [{"topic": t["topic"], "language": language, "text": text}
                     for t in chosen for language in LANGUAGES for text in t[language]]
        dealt.append({"user_id": f"zh-user-{index:02d}", "memories": memories, "questions": questions})
    return dealt


class Ranks:
    """First rank of the wanted item per question (None when not in the top k)."""

    def __init__(self):
        self.firsts: list[int | None] = []

    def add(self, first: int | None) -> None:
        self.firsts.append(first)

    def hit(self, k: int) -> float:
        return sum(1 for f in self.firsts if f is not None and f <= k) / max(len(self.firsts), 1)

    def mrr(self) -> float:
        return sum(1.0 / f for f in self.firsts if f) / max(len(self.firsts), 1)


def first_rank(ranked: list[str], wanted: set[str]) -> int | None:
    return next((i for i, key in enumerate(ranked, start=1) if key in wanted), None)


def run_chinese_user(tenant, embedder, user: dict, scores: dict, query_ms: list[float]) -> None:
    from memories.embedding import search_query_vector
    from memories.search import SearchQuery, memory_search
    from memories.vectors import embed_items
    from memories.writing import MemorySpec, memory_create_batch

    results = memory_create_batch(tenant=tenant, actor="bench", enqueue_embedding=False, count_for_reflection=False,
                                  specs=[MemorySpec(user_id=user["user_id"], text=m["text"]) for m in user["memories"]])
    embed_items([str(r.memory.id) for r in results], embedder=embedder)
    topic_of = {str(r.memory.id): m["topic"] for r, m in zip(results, user["memories"], strict=True)}
    for question in user["questions"]:
        started = time.perf_counter()
        search_query_vector(embedder, question["text"])
        query_ms.append((time.perf_counter() - started) * 1000)
        for mode in MODES:
            found = memory_search(tenant=tenant, embedder=embedder, query=SearchQuery(
                query=question["text"], user_id=user["user_id"], mode=mode, limit=K_ZH))
            ranked = [topic_of.get(str(r.memory.id), "") for r in found]
            scores[(question["language"], mode)].add(first_rank(ranked, {question["topic"]}))


def run_locomo_conversation(tenant, embedder, sample: dict, scores: dict) -> None:
    from locomo import questions, store_conversation

    from memories.search import SearchQuery, memory_search
    from memories.vectors import refresh_planner_statistics

    turns, dia_of = store_conversation(tenant, sample, embedder)
    refresh_planner_statistics()
    for q in questions(sample, {t["dia_id"] for t in turns}):
        for mode in ("semantic", "hybrid"):
            found = memory_search(tenant=tenant, embedder=embedder, query=SearchQuery(
                query=q["question"], user_id=sample["sample_id"], mode=mode, limit=K_LOCOMO))
            ranked = [d for r in found for d in dia_of.get(str(r.memory.id), [])]
            scores[mode].add(first_rank(ranked, set(q["evidence"])))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--users", type=int, default=12, help="users dealt from the Chinese set (30 topics each)")
    parser.add_argument("--models", default="all-MiniLM-L6-v2,use-multilingual-v3,"
                                            "all-MiniLM-L6-v2+use-multilingual-v3",
                        help="local models, comma-separated (the last is the one the summary line reports)")
    parser.add_argument("--skip-locomo", action="store_true", help="the Chinese set only")
    parser.add_argument("--locomo", type=Path, default=ROOT.parent / "shared" / "data" / "locomo_dev.json")
    args = parser.parse_args()

    setup_django(database="memory_bench_multilingual", provider="local")
    from memories.embedding import build_embedder
    from memories.maintenance import spec_for_model
    from memories.models import Tenant

    models = [m.strip() for m in args.models.split(",") if m.strip()]
    embedders = {}
    for model in models:
        started = time.perf_counter()
        embedders[model] = build_embedder(spec_for_model(model))
        print(f"loaded {model} in {time.perf_counter() - started:.1f} s", file=sys.stderr)
    run = uuid.uuid4().hex[:8]
    tenants = {model: Tenant.objects.create(name=f"multilingual-{run}-{index}") for index, model in enumerate(models)}

    users = deal(json.loads(SET.read_text())["topics"], args.users)
    zh_scores = {model: {(lang, mode): Ranks() for lang in LANGUAGES for mode in MODES} for model in models}
    query_ms: dict[str, list[float]] = {model: [] for model in models}
    for position, user in enumerate(users, start=1):
        order = models if position % 2 else list(reversed(models))  # interleaved, each model first in turn
        for model in order:
            run_chinese_user(tenants[model], embedders[model], user, zh_scores[model], query_ms[model])
        print(f"Chinese set: user {position}/{len(users)}", file=sys.stderr)

    locomo_scores = {model: {"semantic": Ranks(), "hybrid": Ranks()} for model in models}
    samples = [] if args.skip_locomo or not args.locomo.exists() else json.loads(args.locomo.read_text())
    for position, sample in enumerate(samples, start=1):
        order = models if position % 2 else list(reversed(models))
        for model in order:
            run_locomo_conversation(tenants[model], embedders[model], sample, locomo_scores[model])
        print(f"LoCoMo: conversation {position}/{len(samples)}", file=sys.stderr)

    asked = {lang: sum(q["language"] == lang for u in users for q in u["questions"]) for lang in LANGUAGES}
    print(f"\nChinese set: {len(users)} users, {len(users) * TOPICS_PER_USER} memories, {sum(asked.values())} "
          f"questions ({', '.join(f'{lang} {count}' for lang, count in asked.items())})")
    rows = []
    for model in models:
        for mode in MODES:
            row = {"model": model, "mode": mode}
            for lang in LANGUAGES:
                ranks = zh_scores[model][(lang, mode)]
                row[f"{lang} hit@3"], row[f"{lang} mrr"] = ranks.hit(K_ZH), ranks.mrr()
            rows.append(row)
    print_table("Chinese set: hit@3 and MRR by question language", rows,
                ["model", "mode", *[f"{lang} {m}" for lang in LANGUAGES for m in ("hit@3", "mrr")]])
    timing = [{"model": model, **percentiles(query_ms[model])} for model in models]
    print_table("Query embedding (a search's query vector), ms, interleaved", timing,
                ["model", "p50", "p95", "p99", "n"])
    if samples:
        rows = [{"model": model, "mode": mode, "hit@10": locomo_scores[model][mode].hit(K_LOCOMO),
                 "mrr": locomo_scores[model][mode].mrr(), "n": len(locomo_scores[model][mode].firsts)}
                for model in models for mode in ("semantic", "hybrid")]
        print_table(f"LoCoMo ({len(samples)} conversations): top {K_LOCOMO}", rows,
                    ["model", "mode", "hit@10", "mrr", "n"])
    last = models[-1]
    summary = " ".join(f"{lang}_{mode}_hit@3={zh_scores[last][(lang, mode)].hit(K_ZH):.3f}"
                       for lang in LANGUAGES for mode in MODES)
    locomo = (f" locomo_hybrid_hit@10={locomo_scores[last]['hybrid'].hit(K_LOCOMO):.3f}"
              f" locomo_hybrid_mrr={locomo_scores[last]['hybrid'].mrr():.3f}") if samples else ""
    print(f"\nmodel={last} {summary}{locomo} query_p50_ms={statistics.median(query_ms[last]):.2f}")


if __name__ == "__main__":
    main()
