"""LoCoMo through the product's own path (`make bench-quality BENCH_ARGS=--through-ingestion`):
every turn of the dev conversations is sent through POST /api/v1/conversations
(one job per turn, both speakers as participants, the default offline
extractor, episodes on), then every dev question is asked of both speakers'
memories (merged by score). Reported beside the raw turns stored one memory
each (the path `make bench-quality` measures), in one run:

- facts only: the extracted memories;
- episodes only: the speakers' original turns kept as episodes;
- both: what search answers by default.

hit@10 = an evidence turn is among the turns the top 10 memories hold (a fact
holds the turn it came from; an episode holds all of its turns); MRR by the
rank of the first memory holding one. coverage = share of questions whose
evidence turn left at least one fact.
"""

from __future__ import annotations

import json
import time
import uuid

from common import print_table, wait_for_jobs

RANKINGS = ("raw turns (one memory per turn)", "through ingestion: facts only", "through ingestion: episodes only",
            "through ingestion: facts and episodes")


class MemoryScores:
    """hit@10 and MRR over ranked memories, each holding a set of turn ids."""

    def __init__(self):
        self.rows: list[tuple[int, list[set[str]], list[str]]] = []

    def add(self, category: int, ranked: list[set[str]], evidence: list[str]) -> None:
        self.rows.append((category, ranked[:10], evidence))

    def metrics(self, category: int | None = None) -> dict:
        rows = [r for r in self.rows if category is None or r[0] == category]
        hits = rr = 0.0
        for _, ranked, evidence in rows:
            first = next((i for i, held in enumerate(ranked, start=1) if held & set(evidence)), None)
            hits += bool(first)
            rr += 1.0 / first if first else 0.0
        return {"hit@10": hits / max(len(rows), 1), "mrr": rr / max(len(rows), 1), "n": len(rows)}


def run(samples: list[dict]) -> None:
    from django.conf import settings
    from django.test import Client
    from locomo import CATEGORIES, conversation_turns, questions

    from memories.embedding import get_embedder
    from memories.keys import api_key_create
    from memories.models import ConversationJob, MemoryItem, MemorySource, Tenant
    from memories.search import SearchQuery, memory_search
    from memories.vectors import embed_items
    from memories.vocabulary import Tag
    from memories.writing import MemorySpec, memory_create_batch

    settings.EXTRACTION_PROVIDER, settings.CONVERSATION_EPISODES = "rules", True
    settings.RATE_LIMIT_KEY_REQUESTS = settings.RATE_LIMIT_TENANT_REQUESTS = 0
    settings.ALLOWED_HOSTS = ["*"]
    embedder = get_embedder()
    tenant = Tenant.objects.create(name=f"locomo-ingested-{uuid.uuid4().hex[:8]}")
    raw_tenant = Tenant.objects.create(name=f"locomo-raw-{uuid.uuid4().hex[:8]}")
    client = Client()
    headers = {"HTTP_AUTHORIZATION": f"Bearer {api_key_create(tenant_name=tenant.name).raw_key}"}
    scores = {name: MemoryScores() for name in RANKINGS}
    covered = asked = turns_sent = 0
    started = time.perf_counter()

    for sample in samples:
        conv = sample["conversation"]
        users = {conv["speaker_a"]: f"{sample['sample_id']}-a", conv["speaker_b"]: f"{sample['sample_id']}-b"}
        turns = conversation_turns(sample)
        dia_of_job: dict[str, str] = {}
        for turn in turns:
            speaker, text = turn["text"].split(": ", 1)
            body = {"user_id": users[speaker], "session_id": turn["dia_id"].split(":")[0], "participants": users,
                    "messages": [{"role": "user", "name": speaker, "content": text,
                                  "created_at": turn["valid_at"].isoformat()}]}
            response = client.post("/api/v1/conversations", json.dumps(body), content_type="application/json",
                                   **headers)
            if response.status_code != 202:
                raise RuntimeError(f"{response.status_code}: {response.content[:300]!r}")
            dia_of_job[response.json()["job_id"]] = turn["dia_id"]
            turns_sent += 1
        wait_for_jobs(tenant)
        print(f"  {sample['sample_id']}: {turns_sent} turns sent, {time.perf_counter() - started:.0f} s", flush=True)
        failed = ConversationJob.objects.filter(tenant=tenant, status="failed").count()
        if failed:
            print(f"  warning: {failed} failed jobs")

        # Which turns each current memory holds.
        held: dict[str, set[str]] = {}
        episode_ids: set[str] = set()
        for memory in MemoryItem.objects.filter(tenant=tenant, user_id__in=list(users.values()),
                                                expired_at__isnull=True):
            if Tag.EPISODE in memory.tags:
                episode_ids.add(str(memory.id))
                held[str(memory.id)] = {dia_of_job[t["job_id"]] for t in memory.data.get("turns", [])
                                        if t.get("job_id") in dia_of_job}
        for item_id, job_id in MemorySource.objects.filter(item__tenant=tenant, item__user_id__in=list(users.values()),
                                                           item__expired_at__isnull=True).values_list("item_id",
                                                                                                       "job_id"):
            if str(item_id) not in episode_ids and job_id in dia_of_job:
                held.setdefault(str(item_id), set()).add(dia_of_job[job_id])
        fact_turns = {dia for item, dias in held.items() if item not in episode_ids for dia in dias}

        # The raw-turn baseline, as `make bench-quality` stores it.
        results = memory_create_batch(tenant=raw_tenant, actor="locomo", enqueue_embedding=False,
                                      count_for_reflection=False, specs=[
            MemorySpec(user_id=sample["sample_id"], text=t["text"], memory_type="episodic", valid_at=t["valid_at"],
                       data={"dia_id": t["dia_id"]}) for t in turns])
        embed_items([str(r.memory.id) for r in results if r.operation == "ADD"], embedder=embedder)
        raw_held: dict[str, set[str]] = {}
        for turn, result in zip(turns, results, strict=True):
            raw_held.setdefault(str(result.memory.id), set()).add(turn["dia_id"])

        for q in questions(sample, {t["dia_id"] for t in turns}):
            asked += 1
            covered += any(e in fact_turns for e in q["evidence"])
            raw = memory_search(tenant=raw_tenant, embedder=embedder,
                                query=SearchQuery(query=q["question"], user_id=sample["sample_id"], limit=10))
            scores[RANKINGS[0]].add(q["category"], [raw_held.get(str(r.memory.id), set()) for r in raw],
                                    q["evidence"])
            found = []
            for user_id in users.values():
                found += memory_search(tenant=tenant, embedder=embedder,
                                       query=SearchQuery(query=q["question"], user_id=user_id, limit=30))
            found.sort(key=lambda r: -r.score)
            ranked = [(str(r.memory.id) in episode_ids, held.get(str(r.memory.id), set())) for r in found]
            scores[RANKINGS[1]].add(q["category"], [h for episode, h in ranked if not episode], q["evidence"])
            scores[RANKINGS[2]].add(q["category"], [h for episode, h in ranked if episode], q["evidence"])
            scores[RANKINGS[3]].add(q["category"], [h for _, h in ranked], q["evidence"])

    facts = MemoryItem.objects.filter(tenant=tenant, expired_at__isnull=True).exclude(tags__contains=[Tag.EPISODE])
    episodes = MemoryItem.objects.filter(tenant=tenant, expired_at__isnull=True, tags__contains=[Tag.EPISODE])
    rows = []
    for name, score in scores.items():
        overall = score.metrics()
        row = {"memories searched": name, "hit@10": overall["hit@10"], "mrr": overall["mrr"]}
        for category, label in CATEGORIES.items():
            row[f"{label} hit@10"] = score.metrics(category)["hit@10"]
        rows.append(row)
    print(f"\n{len(samples)} conversation(s), {turns_sent} turns through POST /conversations in "
          f"{time.perf_counter() - started:.0f} s: {facts.count()} current facts, {episodes.count()} episodes; "
          f"{asked} questions; fact coverage {covered / max(asked, 1):.3f}")
    print_table("LoCoMo through the product's path (top 10 memories)", rows,
                ["memories searched", "hit@10", "mrr", *[f"{c} hit@10" for c in CATEGORIES.values()]])
    both, raw = scores[RANKINGS[3]].metrics(), scores[RANKINGS[0]].metrics()
    print(f"\nsummary: through_ingestion_hit@10={both['hit@10']:.3f} mrr={both['mrr']:.3f} "
          f"raw_turns_hit@10={raw['hit@10']:.3f} fact_coverage={covered / max(asked, 1):.3f}")
