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

--query-precisions runs each model at several query precisions as candidates of
its own: the memories are stored and embedded once per model (documents are fp32
at every precision), and each question is embedded and searched by every
precision in turn. A precision is `fp32`, `int8`, or MiniLM's/USE's (`int8/fp32`:
MiniLM's query int8, USE's numpy fp32, the pair's default before USE's int8 graph).

    make bench-multilingual                                   # 12 users, LoCoMo dev split, three models
    make bench-multilingual BENCH_ARGS="--users 4 --skip-locomo --models all-MiniLM-L6-v2+use-multilingual-v3"
    make bench-multilingual BENCH_ARGS="--models all-MiniLM-L6-v2+use-multilingual-v3 \\
        --query-precisions fp32,int8/fp32,int8"          # the pair at three query precisions
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


def store_chinese_user(tenant, embedder, user: dict) -> dict[str, str]:
    """The user's memories saved and embedded; returns the topic of each memory id."""
    from memories.vectors import embed_items
    from memories.writing import MemorySpec, memory_create_batch

    results = memory_create_batch(tenant=tenant, actor="bench", enqueue_embedding=False, count_for_reflection=False,
                                  specs=[MemorySpec(user_id=user["user_id"], text=m["text"]) for m in user["memories"]])
    embed_items([str(r.memory.id) for r in results], embedder=embedder)
    return {str(r.memory.id): m["topic"] for r, m in zip(results, user["memories"], strict=True)}


def ask_chinese_question(tenant, embedder, user: dict, question: dict, topic_of: dict[str, str], scores: dict,
                         query_ms: list[float]) -> None:
    from memories.embedding import search_query_vector
    from memories.search import SearchQuery, memory_search

    started = time.perf_counter()
    search_query_vector(embedder, question["text"])
    query_ms.append((time.perf_counter() - started) * 1000)
    for mode in MODES:
        found = memory_search(tenant=tenant, embedder=embedder, query=SearchQuery(
            query=question["text"], user_id=user["user_id"], mode=mode, limit=K_ZH))
        ranked = [topic_of.get(str(r.memory.id), "") for r in found]
        scores[(question["language"], mode)].add(first_rank(ranked, {question["topic"]}))


def run_chinese_user(tenant, embedders: dict, user: dict, scores: dict, query_ms: dict, flip: bool) -> None:
    """One user's memories, stored once, and every question asked by each candidate (one model at
    its query precisions) in turn, the order flipping question by question."""
    topic_of = store_chinese_user(tenant, next(iter(embedders.values())), user)
    for number, question in enumerate(user["questions"]):
        order = list(embedders) if (number % 2) != flip else list(reversed(embedders))
        for label in order:
            ask_chinese_question(tenant, embedders[label], user, question, topic_of, scores[label], query_ms[label])


def run_locomo_conversation(tenant, embedders: dict, sample: dict, scores: dict, flip: bool) -> None:
    from locomo import questions, store_conversation

    from memories.search import SearchQuery, memory_search
    from memories.vectors import refresh_planner_statistics

    turns, dia_of = store_conversation(tenant, sample, next(iter(embedders.values())))
    refresh_planner_statistics()
    for number, q in enumerate(questions(sample, {t["dia_id"] for t in turns})):
        order = list(embedders) if (number % 2) != flip else list(reversed(embedders))
        for label in order:
            for mode in ("semantic", "hybrid"):
                found = memory_search(tenant=tenant, embedder=embedders[label], query=SearchQuery(
                    query=q["question"], user_id=sample["sample_id"], mode=mode, limit=K_LOCOMO))
                ranked = [d for r in found for d in dia_of.get(str(r.memory.id), [])]
                scores[label][mode].add(first_rank(ranked, set(q["evidence"])))


def local_at_precision(model: str, precision: str):
    """The local `model` with its search queries at `precision` ("fp32", "int8", or "MINILM/USE"),
    built here rather than from the settings (which hold one precision per process)."""
    from django.conf import settings

    from memories import embedding
    from memories.embedding import MiniLMEmbedder, ScriptWeightedEmbedder, UseEmbedder

    minilm_precision, _, use_precision = precision.partition("/")
    threads, models = settings.EMBEDDING_LOCAL_THREADS, settings.VAR_DIR / "models"
    minilm = (MiniLMEmbedder(embedding.EMBEDDING_LOCAL_BACKEND, cache_dir=models, threads=threads,
                             query_precision=minilm_precision) if MiniLMEmbedder.name in model else None)
    use = (UseEmbedder(threads=threads, cache_dir=models, query_precision=use_precision or minilm_precision)
           if UseEmbedder.name in model else None)
    if minilm is not None and use is not None:
        return ScriptWeightedEmbedder(minilm, use)
    return minilm or use


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--users", type=int, default=12, help="users dealt from the Chinese set (30 topics each)")
    parser.add_argument("--models", default="all-MiniLM-L6-v2,use-multilingual-v3,"
                                            "all-MiniLM-L6-v2+use-multilingual-v3",
                        help="local models, comma-separated (the last is the one the summary line reports)")
    parser.add_argument("--query-precisions", default="",
                        help="each model at these query precisions, comma-separated (fp32, int8, or MiniLM's/USE's "
                             "as int8/fp32), interleaved on the same stored memories; default: the settings' one")
    parser.add_argument("--skip-locomo", action="store_true", help="the Chinese set only")
    parser.add_argument("--locomo", type=Path, default=ROOT.parent / "shared" / "data" / "locomo_dev.json")
    args = parser.parse_args()

    setup_django(database="memory_bench_multilingual", provider="local")
    from memories.embedding import build_embedder
    from memories.maintenance import spec_for_model
    from memories.models import Tenant

    models = [m.strip() for m in args.models.split(",") if m.strip()]
    precisions = [p.strip() for p in args.query_precisions.split(",") if p.strip()]
    groups: dict[str, dict] = {}  # model -> {candidate label: embedder}, one tenant and one storing per model
    for model in models:
        started = time.perf_counter()
        groups[model] = ({f"{model} @ {p}": local_at_precision(spec_for_model(model).model, p) for p in precisions}
                         if precisions else {model: build_embedder(spec_for_model(model))})
        print(f"loaded {model} in {time.perf_counter() - started:.1f} s", file=sys.stderr)
    candidates = [label for group in groups.values() for label in group]
    run = uuid.uuid4().hex[:8]
    tenants = {model: Tenant.objects.create(name=f"multilingual-{run}-{index}") for index, model in enumerate(models)}

    users = deal(json.loads(SET.read_text())["topics"], args.users)
    zh_scores = {c: {(lang, mode): Ranks() for lang in LANGUAGES for mode in MODES} for c in candidates}
    query_ms: dict[str, list[float]] = {c: [] for c in candidates}
    for position, user in enumerate(users, start=1):
        order = models if position % 2 else list(reversed(models))  # interleaved, each model first in turn
        for model in order:
            run_chinese_user(tenants[model], groups[model], user, zh_scores, query_ms, flip=position % 2 == 0)
        print(f"Chinese set: user {position}/{len(users)}", file=sys.stderr)

    locomo_scores = {c: {"semantic": Ranks(), "hybrid": Ranks()} for c in candidates}
    samples = [] if args.skip_locomo or not args.locomo.exists() else json.loads(args.locomo.read_text())
    for position, sample in enumerate(samples, start=1):
        order = models if position % 2 else list(reversed(models))
        for model in order:
            run_locomo_conversation(tenants[model], groups[model], sample, locomo_scores, flip=position % 2 == 0)
        print(f"LoCoMo: conversation {position}/{len(samples)}", file=sys.stderr)
    models = candidates  # the tables below report each candidate

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
    for model in models:  # one line per candidate, the last (the summary's) last
        zh = zh_scores[model]
        summary = " ".join(f"{lang}_{mode}_hit@3={zh[(lang, mode)].hit(K_ZH):.3f} "
                           f"{lang}_{mode}_mrr={zh[(lang, mode)].mrr():.3f}"
                           for lang in LANGUAGES for mode in ("semantic", "hybrid"))
        locomo = "".join(f" locomo_{mode}_hit@10={locomo_scores[model][mode].hit(K_LOCOMO):.3f}"
                         f" locomo_{mode}_mrr={locomo_scores[model][mode].mrr():.3f}"
                         for mode in ("semantic", "hybrid")) if samples else ""
        print(f"\nmodel={model} {summary}{locomo} query_p50_ms={statistics.median(query_ms[model]):.2f}")

if __name__ == "__main__":
    main()
