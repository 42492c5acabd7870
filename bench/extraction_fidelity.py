"""Extraction fidelity on the LoCoMo dev split, through the product's own path: every session of
every conversation goes through POST /api/v1/conversations (one job per session, both speakers as
participants, the default offline extractor, episodes on). LoCoMo's own per-session observations
(what its authors say each speaker revealed, each with the turn it comes from) are the reference:

- recall: the share of observations for which a kept fact sourced from the observation's turn is
  among the top 5 facts the observation's own text finds (the speaker's memories; episodes, which hold
  every turn, are passed over rather than counted against the five);
- facts per observation: facts kept for the speakers / observations.

The extraction rules are not tuned per conversation, so each conversation is its own fold: the
table reports each one and all three (targets: recall >= 0.8, <= 1.5 facts per observation).

    make bench-fidelity                   # the dev split, local model
    make bench-fidelity BENCH_ARGS=--quick   # one conversation
"""

from __future__ import annotations

import argparse
import json
import re
import time
import uuid

from common import print_table, setup_django, wait_for_jobs
from locomo import DEFAULT_DATA, conversation_turns

TOP = 5
# What a fact is here: what extraction keeps about a speaker. Traits (reflection's, counted beside) and
# documents are not; episodes (the session's turns, tagged) are passed over below.
FACT_TYPES = ("fact", "profile", "episodic", "task")
EPISODES_PASSED = 10  # a search asks for this many more, so that the episodes it finds leave five facts


def sessions(sample: dict) -> list[tuple[str, list[dict]]]:
    """(session key, its turns in order), as the conversation was held."""
    by_session: dict[str, list[dict]] = {}
    for turn in conversation_turns(sample):
        by_session.setdefault(turn["session"], []).append(turn)
    return sorted(by_session.items(), key=lambda item: int(item[0].split("_")[1]))


def observations(sample: dict) -> list[tuple[str, str, str]]:
    """(speaker, observation text, dia id) for every observation with one evidence turn id."""
    out = []
    for key, per_speaker in sample.get("observation", {}).items():
        if not re.fullmatch(r"session_\d+_observation", key):
            continue
        for speaker, items in per_speaker.items():
            for text, evidence in items:
                for dia_id in ([evidence] if isinstance(evidence, str) else evidence)[:1]:
                    out.append((speaker, text, str(dia_id)))
    return out


def run_conversation(client, headers: dict, tenant, sample: dict, misses: list[dict] | None = None) -> dict:
    from memories.models import MemoryItem, MemorySource, MemoryType
    from memories.search import SearchQuery, memory_search
    from memories.vocabulary import Tag

    conv = sample["conversation"]
    users = {conv["speaker_a"]: f"{sample['sample_id']}-a", conv["speaker_b"]: f"{sample['sample_id']}-b"}
    dia_of: dict[tuple[str, int], str] = {}
    said: dict[str, str] = {}
    for key, turns in sessions(sample):
        session_id = f"{sample['sample_id']}-{key}"
        messages = []
        for index, turn in enumerate(turns):
            speaker, text = turn["text"].split(": ", 1)
            messages.append({"role": "user", "name": speaker, "content": text,
                             "created_at": turn["valid_at"].isoformat()})
            dia_of[(session_id, index)] = turn["dia_id"]
            said[turn["dia_id"]] = turn["text"]
        body = {"user_id": users[conv["speaker_a"]], "session_id": session_id, "participants": users,
                "messages": messages}
        response = client.post("/api/v1/conversations", json.dumps(body), content_type="application/json",
                               **headers)
        if response.status_code != 202:
            raise RuntimeError(f"{response.status_code}: {response.content[:300]!r}")
    wait_for_jobs(tenant)

    kept = MemoryItem.objects.filter(tenant=tenant, user_id__in=list(users.values()), expired_at__isnull=True,
                                     status="active")
    facts = kept.filter(memory_type__in=FACT_TYPES).exclude(tags__contains=[Tag.EPISODE])
    turns_of: dict[str, set[str]] = {}
    for item_id, session_id, indices in MemorySource.objects.filter(item__in=facts).values_list(
            "item_id", "session_id", "message_indices"):
        turns_of.setdefault(str(item_id), set()).update(dia_of.get((session_id, i), "") for i in indices or [])
    reference = observations(sample)
    found = 0
    for speaker, text, dia_id in reference:
        if speaker not in users:
            continue
        results = memory_search(tenant=tenant, query=SearchQuery(query=text, user_id=users[speaker],
                                                                  limit=TOP + EPISODES_PASSED,
                                                                  memory_types=list(FACT_TYPES)))
        ranked = [r for r in results if Tag.EPISODE not in (r.memory.tags or [])]
        top_facts = ranked[:TOP]  # top 5, facts only
        hit = any(dia_id in turns_of.get(str(r.memory.id), set()) for r in top_facts)
        found += hit
        if misses is not None and not hit:
            from_turn = [item.text for item in facts.filter(user_id=users[speaker])
                         if dia_id in turns_of.get(str(item.id), set())]
            misses.append({"conversation": sample["sample_id"], "observation": text, "turn": said.get(dia_id, ""),
                           "facts from the turn": from_turn, "found": [r.memory.text for r in top_facts],
                           "rank": next((n + 1 for n, r in enumerate(ranked)
                                         if dia_id in turns_of.get(str(r.memory.id), set())), None)})
    kept_facts = facts.count()
    return {"conversation": sample["sample_id"], "observations": len(reference), "facts kept": kept_facts,
            "traits": kept.filter(memory_type=MemoryType.TRAIT).count(),
            "recall@5": found / max(len(reference), 1), "facts per observation": kept_facts / max(len(reference), 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", default=str(DEFAULT_DATA))
    parser.add_argument("--quick", action="store_true", help="one conversation")
    parser.add_argument("--embedder", default="local", choices=["local", "hash"])
    parser.add_argument("--misses", metavar="FILE", help="write each missed observation, its turn, the facts that "
                        "turn left and the top five found, one JSON object a line")
    args = parser.parse_args()
    setup_django(provider=args.embedder)
    from django.conf import settings
    from django.test import Client

    from memories.keys import api_key_create
    from memories.models import Tenant

    settings.EXTRACTION_PROVIDER, settings.CONVERSATION_EPISODES = "rules", True
    settings.RATE_LIMIT_KEY_REQUESTS = settings.RATE_LIMIT_TENANT_REQUESTS = 0
    settings.CONVERSATION_SYNC_CHARS = 10_000_000  # each job runs inside its request: the table reads them at once
    settings.ALLOWED_HOSTS = ["*"]
    samples = json.loads(open(args.data, encoding="utf-8").read())[: 1 if args.quick else None]
    rows = []
    misses: list[dict] | None = [] if args.misses else None
    started = time.perf_counter()
    for sample in samples:
        tenant = Tenant.objects.create(name=f"fidelity-{uuid.uuid4().hex[:8]}")
        headers = {"HTTP_AUTHORIZATION": f"Bearer {api_key_create(tenant_name=tenant.name).raw_key}"}
        rows.append(run_conversation(Client(), headers, tenant, sample, misses))
        print(f"  {sample['sample_id']}: done, {time.perf_counter() - started:.0f} s", flush=True)
    if args.misses and misses is not None:
        with open(args.misses, "w", encoding="utf-8") as out:
            out.writelines(json.dumps(miss, ensure_ascii=False) + "\n" for miss in misses)
        print(f"  {len(misses)} misses written to {args.misses}")
    total_obs = sum(r["observations"] for r in rows)
    total = {"conversation": "all", "observations": total_obs, "facts kept": sum(r["facts kept"] for r in rows),
             "traits": sum(r["traits"] for r in rows),
             "recall@5": sum(r["recall@5"] * r["observations"] for r in rows) / max(total_obs, 1),
             "facts per observation": sum(r["facts kept"] for r in rows) / max(total_obs, 1)}
    print_table("Extraction fidelity against LoCoMo's observations (each conversation its own fold)",
                [*rows, total], ["conversation", "observations", "facts kept", "traits", "recall@5",
                                "facts per observation"])
    print(f"\nsummary: recall@5={total['recall@5']:.3f} facts_per_observation={total['facts per observation']:.2f} "
          f"(targets 0.8 / 1.5)")


if __name__ == "__main__":
    main()
