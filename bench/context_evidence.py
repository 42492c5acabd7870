"""What the agent is told: does a LoCoMo question's evidence reach the /context block?

The dev conversations go through the product's own path, as a chat app sends them:
one `POST /api/v1/conversations` per session, both speakers as participants, the
conversation as the group (the offline extractor, episodes on, the default local
model). Then, for every question, the `/context` block for the group at 1,000, 2,000
and 4,000 characters, and whether an evidence turn reaches it: a fact line sourced
from the turn, or an episode excerpt that quotes it. Baselines in the same run:
the raw turns stored one memory each (`make bench-quality`'s path) through the same
`/context`, and plain search's top 10 over the raw turns (the ceiling to approach).
Each conversation is reported on its own (nothing here is tuned per conversation:
the three are held-out folds of the rules, which were written before this bench).

    make bench-context-evidence
    make bench-context-evidence BENCH_ARGS=--quick     # one conversation
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
import uuid
from pathlib import Path

from common import ROOT, print_table, setup_django, wait_for_jobs

DEFAULT_DATA = ROOT.parent / "shared" / "data" / "locomo_dev.json"
BUDGETS = (1000, 2000, 4000)
QUOTE_CHARS = 40  # an excerpt quotes a turn when it holds the turn's first this many characters


def normalised(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip().casefold()


def sessions(sample: dict) -> list[tuple[str, list[dict]]]:
    from locomo import conversation_turns

    by_session: dict[str, list[dict]] = {}
    for turn in conversation_turns(sample):
        by_session.setdefault(turn["session"], []).append(turn)
    return list(by_session.items())


def session_messages(sample: dict) -> list[tuple[str, list[dict], list[dict]]]:
    """Each session of a LoCoMo conversation: its name, its turns, and its turns as a chat app sends them
    (every speaker a user, named, with the session's time)."""
    out = []
    for session, turns in sessions(sample):
        messages = []
        for turn in turns:
            speaker, text = turn["text"].split(": ", 1)
            messages.append({"role": "user", "name": speaker, "content": text,
                             "created_at": turn["valid_at"].isoformat()})
        out.append((session, turns, messages))
    return out


def carried(block: str, lines: list[dict], fact_turns: dict[str, set[str]], turn_text: dict[str, str],
            evidence: list[str]) -> bool:
    """An evidence turn reaches the block: a shown fact line sourced from it, or its words quoted."""
    shown = {line["id"] for section in lines for line in section}
    if any(fact_turns.get(memory_id, set()) & set(evidence) for memory_id in shown):
        return True
    text = normalised(block)
    return any(normalised(turn_text[e])[:QUOTE_CHARS] in text for e in evidence if e in turn_text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--quick", action="store_true", help="one conversation")
    args = parser.parse_args()
    if not args.data.exists():
        sys.exit(f"LoCoMo data not found at {args.data}")
    setup_django(database="memory_bench_context_evidence", provider="local")
    from django.conf import settings
    from django.test import Client
    from locomo import questions

    from memories.embedding import get_embedder
    from memories.keys import api_key_create
    from memories.models import MemoryItem, MemorySource, Tenant
    from memories.search import SearchQuery, memory_search
    from memories.vectors import embed_items
    from memories.writing import MemorySpec, memory_create_batch

    settings.EXTRACTION_PROVIDER, settings.CONVERSATION_EPISODES = "rules", True
    settings.RATE_LIMIT_KEY_REQUESTS = settings.RATE_LIMIT_TENANT_REQUESTS = 0
    settings.TENANT_MAX_PENDING_JOBS = 10_000  # a conversation's sessions are sent at once
    settings.ALLOWED_HOSTS = ["*"]
    embedder = get_embedder()
    run = uuid.uuid4().hex[:8]
    tenant = Tenant.objects.create(name=f"context-evidence-{run}")
    raw_tenant = Tenant.objects.create(name=f"context-evidence-raw-{run}")
    client = Client()
    auth = {"HTTP_AUTHORIZATION": f"Bearer {api_key_create(tenant_name=tenant.name).raw_key}"}
    raw_auth = {"HTTP_AUTHORIZATION": f"Bearer {api_key_create(tenant_name=raw_tenant.name).raw_key}"}

    def post(path: str, body: dict, headers: dict) -> dict:
        response = client.post(f"/api/v1/{path}", json.dumps(body), content_type="application/json", **headers)
        if response.status_code not in (200, 202):
            raise RuntimeError(f"{path}: {response.status_code} {response.content[:300]!r}")
        return response.json()

    samples = json.loads(args.data.read_text())[: 1 if args.quick else None]
    rows, pooled = [], {key: [0, 0] for key in ("search", *[f"{p} {b}" for p in ("raw", "ingested")
                                                             for b in BUDGETS])}
    started = time.perf_counter()
    for sample in samples:
        conv = sample["conversation"]
        group = sample["sample_id"]
        users = {conv["speaker_a"]: f"{group}-a", conv["speaker_b"]: f"{group}-b"}
        dia_of: dict[tuple[str, int], str] = {}
        turn_text: dict[str, str] = {}
        all_turns = []
        for session, turns, messages in session_messages(sample):
            for turn, message in zip(turns, messages, strict=True):
                turn_text[turn["dia_id"]] = message["content"]
                all_turns.append(turn)
            job = post("conversations", {"user_id": users[conv["speaker_a"]], "session_id": f"{group}-{session}",
                                         "group_id": group, "participants": users, "messages": messages}, auth)
            for index, turn in enumerate(turns):
                dia_of[(job["job_id"], index)] = turn["dia_id"]
        wait_for_jobs(tenant)
        fact_turns: dict[str, set[str]] = {}
        sources = MemorySource.objects.filter(item__tenant=tenant, item__user_id__in=list(users.values()))
        for item_id, job_id, indices in sources.values_list("item_id", "job_id", "message_indices"):
            fact_turns.setdefault(str(item_id), set()).update(
                dia_of[(job_id, i)] for i in indices or [] if (job_id, i) in dia_of)

        raw = memory_create_batch(tenant=raw_tenant, actor="bench", enqueue_embedding=False,
                                  count_for_reflection=False, specs=[
            MemorySpec(user_id=group, text=t["text"], memory_type="episodic", valid_at=t["valid_at"],
                       session_id=t["session"]) for t in all_turns])
        embed_items([str(r.memory.id) for r in raw if r.operation == "ADD"], embedder=embedder)
        raw_turns: dict[str, set[str]] = {}
        for turn, result in zip(all_turns, raw, strict=True):
            raw_turns.setdefault(str(result.memory.id), set()).add(turn["dia_id"])

        counts = {key: 0 for key in pooled}
        asked = questions(sample, set(turn_text))
        for q in asked:
            top = memory_search(tenant=raw_tenant, embedder=embedder,
                                query=SearchQuery(query=q["question"], user_id=group, limit=10))
            counts["search"] += any(raw_turns.get(str(r.memory.id), set()) & set(q["evidence"]) for r in top)
            for budget in BUDGETS:
                body = post("context", {"group_id": group, "query": q["question"], "max_chars": budget}, auth)
                counts[f"ingested {budget}"] += carried(body["context"], list(body["sections"].values()), fact_turns,
                                                        turn_text, q["evidence"])
                body = post("context", {"user_id": group, "query": q["question"], "max_chars": budget}, raw_auth)
                counts[f"raw {budget}"] += carried(body["context"], list(body["sections"].values()), raw_turns,
                                                   turn_text, q["evidence"])
        facts = MemoryItem.objects.filter(tenant=tenant, group_id=group).exclude(tags__contains=["episode"]).count()
        row = {"conversation": group, "questions": len(asked), "facts kept": facts,
               "search top 10 (raw turns)": counts["search"] / len(asked)}
        for budget in BUDGETS:
            row[f"raw turns {budget}"] = counts[f"raw {budget}"] / len(asked)
            row[f"product {budget}"] = counts[f"ingested {budget}"] / len(asked)
        rows.append(row)
        for key in pooled:
            pooled[key][0] += counts[key]
            pooled[key][1] += len(asked)
        print(f"{group}: {len(asked)} questions, {time.perf_counter() - started:.0f} s", file=sys.stderr, flush=True)

    total = {"conversation": "all", "questions": pooled["search"][1],
             "search top 10 (raw turns)": pooled["search"][0] / pooled["search"][1]}
    for budget in BUDGETS:
        total[f"raw turns {budget}"] = pooled[f"raw {budget}"][0] / pooled[f"raw {budget}"][1]
        total[f"product {budget}"] = pooled[f"ingested {budget}"][0] / pooled[f"ingested {budget}"][1]
    rows.append(total)
    print_table("Share of questions whose evidence turn reaches the /context block", rows,
                ["conversation", "questions", "facts kept", "search top 10 (raw turns)",
                 *[f"{p} {b}" for b in BUDGETS for p in ("raw turns", "product")]])
    print(f"\nsummary: product_1000={total['product 1000']:.3f} product_2000={total['product 2000']:.3f} "
          f"product_4000={total['product 4000']:.3f} raw_2000={total['raw turns 2000']:.3f} "
          f"search_top10={total['search top 10 (raw turns)']:.3f}")


if __name__ == "__main__":
    main()
