"""Ingestion benchmark: LoCoMo conversations sent turn by turn to the
conversation job path (the offline meaning extractor, in-process Celery), then the
context endpoint timed on the result. Also what a turn costs: the extractor alone
(split, the intent model's encoder call, routing) and the whole job (extraction,
targets by meaning for updates and forget requests, the writes), per turn, in wall
time and in this process's CPU time (every thread: with Celery eager the job's
embedding and reflection tasks run here too, so it is the CPU a worker spends).

    make bench-ingest
    make bench-ingest BENCH_ARGS="--conversations 1 --provider hash"
"""

from __future__ import annotations

import argparse
import json
import time
import uuid
from collections import Counter

from common import percentiles, print_table, setup_django
from locomo import DEFAULT_DATA, conversation_turns


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", default=str(DEFAULT_DATA))
    parser.add_argument("--conversations", type=int, default=3)
    parser.add_argument("--provider", default="local")
    args = parser.parse_args()
    setup_django(provider=args.provider)
    from django.conf import settings
    from django.test import Client

    from memories.ingestion import conversation_job_create
    from memories.keys import api_key_create
    from memories.models import ConversationJob, MemoryItem, Tenant

    settings.EXTRACTION_PROVIDER = "meaning"
    from datetime import UTC, datetime

    from memories.extraction import Message, get_extractor

    extractor = get_extractor()
    extract_ms: list[float] = []
    job_ms: list[float] = []
    job_cpu_ms: list[float] = []  # this process's CPU (every thread): what a worker spends on the turn
    samples = json.load(open(args.data))[: args.conversations]
    tenant = Tenant.objects.create(name=f"ingest-{uuid.uuid4().hex[:8]}")
    counts: Counter = Counter()
    turns_total, started = 0, time.perf_counter()
    users = []
    for sample in samples:
        conv = sample["conversation"]
        participants = {conv["speaker_a"]: f"{sample['sample_id']}-a", conv["speaker_b"]: f"{sample['sample_id']}-b"}
        users += list(participants.values())
        for turn in conversation_turns(sample):
            speaker, text = turn["text"].split(": ", 1)
            t0 = time.perf_counter()
            extractor.extract(messages=[Message(index=0, role="user", content=text, name=speaker)],
                              speakers=participants, existing=[], now=datetime.now(UTC))
            extract_ms.append((time.perf_counter() - t0) * 1000)
            t0, cpu0 = time.perf_counter(), time.process_time()
            job = conversation_job_create(
                tenant=tenant, user_id=participants[speaker], session_id=turn["dia_id"].split(":")[0],
                participants=participants, group_id=sample["sample_id"],
                messages=[{"role": "user", "name": speaker, "content": text,
                           "created_at": turn["valid_at"].isoformat()}])
            job_ms.append((time.perf_counter() - t0) * 1000)
            job_cpu_ms.append((time.process_time() - cpu0) * 1000)
            job = ConversationJob.objects.get(id=job.id)
            counts.update(job.counts)
            counts["failed jobs"] += job.status != "done"
            turns_total += 1
        print(f"  {sample['sample_id']}: {turns_total} turns, {time.perf_counter() - started:.1f} s", flush=True)
    seconds = time.perf_counter() - started
    memories = MemoryItem.objects.filter(tenant=tenant, expired_at__isnull=True).count()

    client = Client()
    headers = {"HTTP_AUTHORIZATION": f"Bearer {api_key_create(tenant_name=tenant.name).raw_key}"}
    questions = [q["question"] for s in samples for q in s["qa"]][:300]
    samples_ms = []
    for index, question in enumerate(questions):
        body = json.dumps({"user_id": users[index % len(users)], "query": question, "max_chars": 2000})
        t0 = time.perf_counter()
        response = client.post("/api/v1/context", body, content_type="application/json", **headers)
        samples_ms.append((time.perf_counter() - t0) * 1000)
        assert response.status_code == 200, response.content
    latency = percentiles(samples_ms[10:])

    extract, whole, cpu = percentiles(extract_ms[10:]), percentiles(job_ms[10:]), percentiles(job_cpu_ms[10:])
    print_table("Cost per turn (ms, one core, the first 10 turns left out: models loading)", [
        {"what": "the extractor alone", **extract}, {"what": "the whole job (202 answered with Celery eager)",
                                                      **whole},
        {"what": "the whole job's CPU (the job, its embedding and reflection tasks, all threads)", **cpu}],
        ["what", "n", "p50", "p95", "p99"])
    print_table("Ingestion, meaning extractor, one job per turn", [{
        "conversations": len(samples), "turns": turns_total, "seconds": seconds, "turns/s": turns_total / seconds,
        "current memories": memories, **{k: counts.get(k, 0) for k in ("ADD", "UPDATE", "NOOP", "INVALIDATE",
                                                                        "REVIEW", "dropped", "failed jobs")},
    }], ["conversations", "turns", "seconds", "turns/s", "current memories", "ADD", "UPDATE", "NOOP", "INVALIDATE",
         "REVIEW", "dropped", "failed jobs"])
    print_table("POST /api/v1/context (in-process client, ms)", [{"requests": latency["n"], **latency}],
                ["requests", "p50", "p95", "p99"])
    print(f"\nsummary: extraction p95 {extract['p95']:.1f} ms a turn, job p95 {whole['p95']:.1f} ms, "
          f"job CPU p50 {cpu['p50']:.1f} p95 {cpu['p95']:.1f} ms; "
          f"turns_per_s={turns_total / seconds:.1f} memories={memories} "
          f"context_p50_ms={latency['p50']:.1f} context_p95_ms={latency['p95']:.1f}")


if __name__ == "__main__":
    main()
