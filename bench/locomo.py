"""LoCoMo retrieval benchmark (Maharana et al., 2024, "Evaluating Very
Long-Term Conversational Memory of LLM Agents"; data CC BY-NC 4.0, read from
../shared/data, never copied into this repository).

Each conversation goes into a fresh user through the service's own write
path: one memory per dialogue turn, "Speaker: utterance" (plus the image
caption), in its session (session_id), valid_at from the session date, no
extraction; a conversation is one batch, in the order it was said. Every question with
evidence (category 5 excluded) is asked through the service's search and
scored: hit@5, hit@10 (any evidence turn in the top k), session R@5 / R@10 (an evidence turn's
session among the first 5 / 10 distinct sessions of the top 10 turns), full recall@10 (all
evidence turns), MRR@10 — overall and per category — beside BM25 (rank-bm25)
and exact dense cosine on the same data and embedder.

    make bench-quality                      # the dev split (3 conversations, 383 questions)
    make bench-quality BENCH_ARGS=--quick   # one conversation (the smoke test in `make test`)
    make bench-quality BENCH_ARGS=--through-ingestion   # the turns through POST /conversations instead
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path

from common import ROOT, gunicorn_server, percentiles, print_table, setup_django

DEFAULT_DATA = ROOT.parent / "shared" / "data" / "locomo_dev.json"
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
K = 10


def parse_session_date(raw: str) -> datetime:
    """'1:56 pm on 8 May, 2023' -> an aware datetime."""
    return datetime.strptime(raw.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)


def conversation_turns(sample: dict) -> list[dict]:
    conv = sample["conversation"]
    turns = []
    for key in sorted((k for k in conv if re.fullmatch(r"session_\d+", k)), key=lambda k: int(k.split("_")[1])):
        when = parse_session_date(conv[f"{key}_date_time"])
        for turn in conv[key]:
            text = f"{turn['speaker']}: {turn['text']}"
            if turn.get("blip_caption"):
                text += f" [shares {turn['blip_caption']}]"
            turns.append({"dia_id": turn["dia_id"], "text": text, "valid_at": when, "session": key})
    return turns


def store_conversation(tenant, sample: dict, embedder) -> tuple[list[dict], dict[str, list[str]]]:
    """One conversation's turns saved in their sessions and embedded; returns the turns and,
    per memory id, the dia ids it stands for (identical turns dedupe into one memory)."""
    from memories.vectors import embed_items
    from memories.writing import MemorySpec, memory_create_batch

    turns = conversation_turns(sample)
    results = memory_create_batch(tenant=tenant, actor="locomo", enqueue_embedding=False,
                                  count_for_reflection=False, specs=[
        MemorySpec(user_id=sample["sample_id"], text=t["text"], memory_type="episodic", valid_at=t["valid_at"],
                   session_id=t["session"], data={"dia_id": t["dia_id"]}) for t in turns])
    embed_items([str(r.memory.id) for r in results if r.operation == "ADD"], embedder=embedder)
    dia_of: dict[str, list[str]] = {}
    for turn, result in zip(turns, results, strict=True):
        dia_of.setdefault(str(result.memory.id), []).append(turn["dia_id"])
    return turns, dia_of


def evidence_ids(raw: list, known: set[str]) -> list[str]:
    """Repair the malformed ids the data's README lists; drop ids naming no turn."""
    out = []
    for entry in raw:
        for piece in re.split(r"[;\s]+", str(entry)):
            piece = piece.replace("D:", "D")
            match = re.fullmatch(r"D(\d+):0*(\d+)", piece)
            if match:
                dia = f"D{int(match.group(1))}:{int(match.group(2))}"
                if dia in known and dia not in out:
                    out.append(dia)
    return out


def questions(sample: dict, known: set[str]) -> list[dict]:
    out = []
    for qa in sample["qa"]:
        if qa.get("category") == 5:
            continue
        evidence = evidence_ids(qa.get("evidence", []), known)
        if evidence:
            out.append({"question": qa["question"], "category": qa["category"], "evidence": evidence})
    return out


def session_of(dia_id: str) -> str:
    """LoCoMo's turn ids are "D<session>:<turn>": the session part."""
    return dia_id.split(":", 1)[0]


class Scores:
    def __init__(self):
        self.rows: list[tuple[int, list[str], list[str]]] = []  # category, ranked dia ids, evidence
        self.latency_ms: list[float] = []

    def add(self, category: int, ranked: list[str], evidence: list[str], latency_ms: float | None = None):
        self.rows.append((category, ranked, evidence))
        if latency_ms is not None:
            self.latency_ms.append(latency_ms)

    def metrics(self, category: int | None = None) -> dict:
        rows = [r for r in self.rows if category is None or r[0] == category]
        if not rows:
            return {}
        hit5 = hit10 = full10 = rr = session5 = session10 = 0.0
        for _, ranked, evidence in rows:
            top = ranked[:K]
            first = next((i for i, dia in enumerate(top, start=1) if dia in evidence), None)
            hit5 += bool(first and first <= 5)
            hit10 += bool(first)
            full10 += all(e in top for e in evidence)
            rr += 1.0 / first if first else 0.0
            sessions = list(dict.fromkeys(session_of(dia) for dia in top))  # distinct, in rank order
            wanted = {session_of(e) for e in evidence}
            session5 += bool(wanted & set(sessions[:5]))
            session10 += bool(wanted & set(sessions[:10]))
        n = len(rows)
        return {"hit@5": hit5 / n, "hit@10": hit10 / n, "recall@10": full10 / n, "mrr": rr / n,
                "session R@5": session5 / n, "session R@10": session10 / n, "n": n}


SWEEP = [(k, semantic, 1.0) for k in (10, 30, 60) for semantic in (0.25, 0.5, 0.75, 1.0)]


def sweep(tenant, embedder, user_id, qs, dia_of, memory_search, SearchQuery) -> list[dict]:
    """Hybrid scores for each fusion setting on one conversation."""
    from memories.search import tuning

    saved = (tuning.SEARCH_RRF_K, tuning.SEARCH_SEMANTIC_WEIGHT, tuning.SEARCH_KEYWORD_WEIGHT)
    rows = []
    for k, semantic, keyword in SWEEP:
        tuning.SEARCH_RRF_K, tuning.SEARCH_SEMANTIC_WEIGHT, tuning.SEARCH_KEYWORD_WEIGHT = k, semantic, keyword
        scores = Scores()
        for q in qs:
            found = memory_search(tenant=tenant, embedder=embedder,
                                  query=SearchQuery(query=q["question"], user_id=user_id, mode="hybrid", limit=K))
            scores.add(q["category"], [d for r in found for d in dia_of.get(str(r.memory.id), [])], q["evidence"])
        m = scores.metrics()
        rows.append({"conversation": user_id, "k": k, "semantic weight": semantic, "keyword weight": keyword,
                     "hit@10": m["hit@10"], "mrr": m["mrr"], "n": m["n"]})
    tuning.SEARCH_RRF_K, tuning.SEARCH_SEMANTIC_WEIGHT, tuning.SEARCH_KEYWORD_WEIGHT = saved
    return rows


RULES = ("SEARCH_NEIGHBOUR_WEIGHT", "SEARCH_TIME_MENTION_BONUS", "SEARCH_TIME_PERIOD_BONUS")
RULE_GRID = [(neighbour, mention, period) for neighbour in (0.0, 0.5, 0.7, 0.9) for mention in (0.0, 0.3, 0.5)
             for period in (0.0, 0.5)]


def rule_scores(tenant, embedder, user_id, qs, dia_of, memory_search, SearchQuery) -> dict[tuple, dict]:
    """Hybrid metrics on one conversation for every setting of the conversation rules (RULE_GRID)."""
    from memories.search import tuning

    saved = tuple(getattr(tuning, name) for name in RULES)
    out = {}
    for values in RULE_GRID:
        for name, value in zip(RULES, values, strict=True):
            setattr(tuning, name, value)
        scores = Scores()
        for q in qs:
            found = memory_search(tenant=tenant, embedder=embedder,
                                  query=SearchQuery(query=q["question"], user_id=user_id, mode="hybrid", limit=K))
            scores.add(q["category"], [d for r in found for d in dia_of.get(str(r.memory.id), [])], q["evidence"])
        out[values] = scores
    for name, value in zip(RULES, saved, strict=True):
        setattr(tuning, name, value)
    return out


def fold_rows(per_conversation: dict[str, dict[tuple, Scores]]) -> list[dict]:
    """Tune on all conversations but one (the setting with the best hit@10 + MRR over their
    questions), score that setting on the one left out; every fold, then the shipped setting."""
    from memories.search import tuning

    def pooled(conversations, values):
        merged = Scores()
        for conversation in conversations:
            merged.rows += per_conversation[conversation][values].rows
        return merged.metrics()

    rows = []
    names = list(per_conversation)
    for held in names:
        tune = [c for c in names if c != held]
        best = max(RULE_GRID, key=lambda v: (pooled(tune, v)["hit@10"] + pooled(tune, v)["mrr"], v))
        off, chosen = pooled([held], (0.0, 0.0, 0.0)), pooled([held], best)
        rows.append({"held out": held, "tuned on": "+".join(tune), "chosen (neighbour, when, period)": str(best),
                     "tuning hit@10": pooled(tune, best)["hit@10"], "held-out hit@10": chosen["hit@10"],
                     "held-out mrr": chosen["mrr"], "rules off: hit@10": off["hit@10"], "rules off: mrr": off["mrr"]})
    shipped = tuple(getattr(tuning, name) for name in RULES)
    if shipped in RULE_GRID:
        every, off = pooled(names, shipped), pooled(names, (0.0, 0.0, 0.0))
        rows.append({"held out": "(all, shipped)", "chosen (neighbour, when, period)": str(shipped),
                     "held-out hit@10": every["hit@10"], "held-out mrr": every["mrr"],
                     "rules off: hit@10": off["hit@10"], "rules off: mrr": off["mrr"]})
    return rows


def http_latency(tenant, asked: list[tuple[str, str]]) -> dict:
    """Every question once more through POST /api/v1/memories/search (gunicorn, 2 workers, local model)."""
    import http.client

    from django.conf import settings

    from memories.keys import api_key_create

    key = api_key_create(tenant_name=tenant.name, name="bench").raw_key
    samples = []
    with gunicorn_server({"EMBEDDED_DB_NAME": settings.DATABASES["default"]["NAME"],
                          "EMBEDDING_PROVIDER": settings.EMBEDDING_PROVIDER}) as port:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}
        for index, (user_id, question) in enumerate(asked):
            body = json.dumps({"user_id": user_id, "query": question, "mode": "hybrid", "limit": K})
            started = time.perf_counter()
            conn.request("POST", "/api/v1/memories/search", body=body, headers=headers)
            response = conn.getresponse()
            payload = response.read()
            if response.status != 200:
                raise RuntimeError(f"HTTP {response.status}: {payload[:300]!r}")
            if index >= 20:  # the first requests load the model in both workers
                samples.append((time.perf_counter() - started) * 1000)
    return percentiles(samples)


def tokenize(text: str) -> list[str]:
    return re.findall(r"\w+", text.lower())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--quick", action="store_true", help="one conversation (smoke test)")
    parser.add_argument("--provider", default="local", help="embedder for the run: local (default) or hash")
    parser.add_argument("--through-ingestion", action="store_true",
                        help="send every turn through POST /conversations and ask the questions of what it kept "
                             "(facts, episodes, both) beside the raw turns (bench/locomo_ingested.py)")
    parser.add_argument("--sweep", action="store_true",
                        help="also score fusion settings per conversation, to choose on some and check on others")
    parser.add_argument("--folds", action="store_true",
                        help="choose the conversation rules (neighbours, time) on all conversations but one and "
                             "score them on that one, every fold")
    parser.add_argument("--skip-http", action="store_true", help="skip the HTTP latency run")
    args = parser.parse_args()
    if not args.data.exists():
        sys.exit(f"LoCoMo data not found at {args.data}")

    setup_django(provider=args.provider)
    import numpy as np
    from rank_bm25 import BM25Okapi

    from memories.embedding import get_embedder
    from memories.models import Tenant
    from memories.search import SearchQuery, memory_search, tuning
    from memories.vectors import refresh_planner_statistics

    samples = json.loads(args.data.read_text())
    if args.quick:
        samples = samples[:1]
    if args.through_ingestion:
        from locomo_ingested import run

        run(samples)
        return
    embedder = get_embedder()
    tenant = Tenant.objects.create(name=f"locomo-{uuid.uuid4().hex[:8]}")
    methods = {name: Scores() for name in ("BM25 (rank-bm25)", "dense exact cosine",
                                           "plain RRF of the two (k=60)", "service hybrid, ts_rank keyword",
                                           "service keyword",
                                           "service semantic", "service hybrid")}
    load_seconds, total_turns, total_questions = 0.0, 0, 0
    sweep_rows: list[dict] = []
    rule_runs: dict[str, dict] = {}
    asked: list[tuple[str, str]] = []

    for sample in samples:
        user_id = sample["sample_id"]
        started = time.perf_counter()
        turns, dia_of = store_conversation(tenant, sample, embedder)
        load_seconds += time.perf_counter() - started
        refresh_planner_statistics()
        total_turns += len(turns)

        qs = questions(sample, {t["dia_id"] for t in turns})
        total_questions += len(qs)
        bm25 = BM25Okapi([tokenize(t["text"]) for t in turns])
        turn_vectors = embedder.embed_documents([t["text"] for t in turns])
        if args.sweep:
            sweep_rows += sweep(tenant, embedder, user_id, qs, dia_of, memory_search, SearchQuery)
        if args.folds:
            rule_runs[user_id] = rule_scores(tenant, embedder, user_id, qs, dia_of, memory_search, SearchQuery)
        asked += [(user_id, q["question"]) for q in qs]
        for q in qs:
            sparse = list(np.argsort(-bm25.get_scores(tokenize(q["question"]))))
            methods["BM25 (rank-bm25)"].add(q["category"], [turns[i]["dia_id"] for i in sparse[:K]], q["evidence"])
            qv = embedder.embed_query(q["question"])
            dense = list(np.argsort(-(turn_vectors @ qv)))
            methods["dense exact cosine"].add(q["category"], [turns[i]["dia_id"] for i in dense[:K]], q["evidence"])
            fused: dict[int, float] = {}
            for ranking in (sparse, dense):
                for rank, index in enumerate(ranking, start=1):
                    fused[index] = fused.get(index, 0.0) + 1.0 / (60 + rank)
            top = sorted(fused, key=lambda i: -fused[i])[:K]
            methods["plain RRF of the two (k=60)"].add(q["category"], [turns[i]["dia_id"] for i in top],
                                                       q["evidence"])
            for mode, ranking, name in (("keyword", "bm25", "service keyword"),
                                        ("semantic", "bm25", "service semantic"),
                                        ("hybrid", "ts_rank", "service hybrid, ts_rank keyword"),
                                        ("hybrid", "bm25", "service hybrid")):
                tuning.SEARCH_KEYWORD_RANKING = ranking
                t0 = time.perf_counter()
                found = memory_search(tenant=tenant, embedder=embedder,
                                      query=SearchQuery(query=q["question"], user_id=user_id, mode=mode, limit=K))
                elapsed = (time.perf_counter() - t0) * 1000
                ranked_dia = [d for r in found for d in dia_of.get(str(r.memory.id), [])]
                methods[name].add(q["category"], ranked_dia, q["evidence"], elapsed)

    rows = []
    for name, scores in methods.items():
        overall = scores.metrics()
        row = {"method": name, **{k: overall[k] for k in ("hit@5", "hit@10", "recall@10", "mrr", "session R@5",
                                                          "session R@10")}}
        for category, label in CATEGORIES.items():
            per = scores.metrics(category)
            row[f"{label} hit@10"] = per.get("hit@10", float("nan"))
        if scores.latency_ms:
            lat = percentiles(scores.latency_ms)
            row["p50 ms"], row["p95 ms"] = lat["p50"], lat["p95"]
        rows.append(row)
    print(f"\nLoCoMo: {len(samples)} conversation(s), {total_turns} turns loaded in {load_seconds:.1f} s "
          f"({total_turns / load_seconds:.0f} turns/s with {embedder.name}), {total_questions} questions")
    print_table("Retrieval on LoCoMo (top 10)", rows, ["method", "hit@5", "hit@10", "recall@10", "mrr",
                                                      "session R@5", "session R@10",
                                                      *[f"{c} hit@10" for c in CATEGORIES.values()],
                                                      "p50 ms", "p95 ms"])
    if sweep_rows:
        print_table("Fusion sweep: hybrid per conversation (hit@10 / MRR)", sweep_rows,
                    ["conversation", "k", "semantic weight", "keyword weight", "hit@10", "mrr", "n"])
    if rule_runs:
        print_table("Conversation rules, tuned on two conversations and checked on the third", fold_rows(rule_runs),
                    ["held out", "tuned on", "chosen (neighbour, when, period)", "tuning hit@10", "held-out hit@10",
                     "held-out mrr", "rules off: hit@10", "rules off: mrr"])
    http_p95 = ""
    if not args.skip_http:
        over_http = http_latency(tenant, asked)
        print_table("Hybrid search over HTTP (gunicorn, 2 workers, every question once, ms)",
                    [{"path": "POST /api/v1/memories/search", **over_http}], ["path", "p50", "p95", "p99", "n"])
        http_p95 = f" http_p95_ms={over_http['p95']:.1f}"
    hybrid = methods["service hybrid"].metrics()
    print(f"\nrecall@10={hybrid['hit@10']:.3f} full_recall@10={hybrid['recall@10']:.3f} mrr={hybrid['mrr']:.3f} "
          f"session_R@5={hybrid['session R@5']:.3f} session_R@10={hybrid['session R@10']:.3f} "
          f"p95_ms={statistics.quantiles(methods['service hybrid'].latency_ms, n=20)[18]:.1f}{http_p95}")


if __name__ == "__main__":
    main()
