"""Does a correction replace the right memory, and only it? (issue 52: "a job change retired the user's home")

bench/replacement_cases.json holds labelled cases written by someone who had not read the extractor, split by
persona into dev (rules are chosen on it) and held-out (reported, never tuned on). Each case: a user's stored
memories (third person, as the service writes them: theirs, a relative's, a wish about the answers), then one to
three things the user says in a new session, and which stored memories that must retire (`replaces`) and which
must stay (`must_stay`: the trap, another person's fact or another slot that shares the topic).

The memories are saved through the writer as written (as if a reviewer had approved a relative's health);
the turns go through `POST /conversations` as a chat app sends them (the offline default extractor, the
local model), in a fresh user per case. Outcomes:

- right: every memory to replace is replaced (invalidated, superseded or archived), and nothing else is;
- wrong: a memory that had to stay was replaced, or one the case did not name (the failure this bench is for);
- missed: a memory to replace is still current and nothing wrong happened;
- review: neither, but a review candidate was held for the case (a person picks);
- kept both: a trap or no-change case where nothing was replaced (right for those cases).

    make bench-replacements
    make bench-replacements BENCH_ARGS="--split dev --show-wrong"
"""

from __future__ import annotations

import argparse
import json
import sys
import uuid
from pathlib import Path

from common import print_table, setup_django, unlimited_api_client

CASES = Path(__file__).resolve().parent / "replacement_cases.json"


def run_case(case: dict, tenant, post) -> dict:
    from memories.models import Candidate, ConversationJob, MemoryItem
    from memories.vectors import embed_items
    from memories.vocabulary import is_current
    from memories.writing import MemorySpec, memory_create_batch

    user = "case-" + uuid.uuid4().hex[:12].translate(str.maketrans("0123456789", "ghijklmnop"))  # no digit runs
    # Saved as the service keeps them once written (a relative's health too, as if a reviewer approved it).
    saved = memory_create_batch(tenant=tenant, actor="bench", enqueue_embedding=False, count_for_reflection=False,
                                specs=[MemorySpec(user_id=user, text=text) for text in case["memories"]])
    ids = [str(result.memory.id) for result in saved]
    embed_items(ids)
    # The user's name is known (a profile line), as it is once they said it.
    post("conversations", {"user_id": user, "session_id": f"{user}-s2", "messages": [
        {"role": "user", "name": case["user"], "content": turn} for turn in case["turns"]]})
    current = set(str(i) for i in MemoryItem.objects.filter(is_current(), tenant=tenant, user_id=user,
                                                             id__in=ids).values_list("id", flat=True))
    replaced = {index for index, memory_id in enumerate(ids) if memory_id not in current}
    expected = set(case["replaces"])
    held = Candidate.objects.filter(tenant=tenant, user_id=user).exists()
    job = ConversationJob.objects.filter(tenant=tenant, user_id=user).first()
    operations = [f"{o['operation']} {o['text']} ({o.get('reason', '')[:60]})" for o in (job.operations if job else [])]
    if replaced - expected:
        outcome = "wrong"
    elif expected and replaced == expected:
        outcome = "right"
    elif not expected:
        outcome = "kept both"
    elif held:
        outcome = "review"
    else:
        outcome = "missed"
    return {"outcome": outcome, "replaced": sorted(replaced), "held": held, "operations": operations}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--split", choices=["dev", "heldout", "both"], default="both")
    parser.add_argument("--show-wrong", action="store_true", help="print every wrong or missed case")
    args = parser.parse_args()
    if not CASES.exists():
        sys.exit(f"no cases at {CASES}")
    setup_django(database="memory_bench_replacements", provider="local")
    from django.conf import settings

    settings.EXTRACTION_PROVIDER, settings.CONVERSATION_EPISODES = "", True
    corpus = json.loads(CASES.read_text())
    tenant, auth, client = unlimited_api_client("replacements")

    def post(path: str, body: dict) -> dict:
        response = client.post(f"/api/v1/{path}", json.dumps(body), content_type="application/json", **auth)
        if response.status_code not in (200, 201, 202):
            raise RuntimeError(f"{path}: {response.status_code} {response.content[:300]!r}")
        return response.json()

    rows, splits = [], ["dev", "heldout"] if args.split == "both" else [args.split]
    for split in splits:
        by_kind: dict[str, dict[str, int]] = {}
        for number, case in enumerate(corpus[split], 1):
            result = run_case(case, tenant, post)
            counts = by_kind.setdefault(case["kind"], {})
            counts[result["outcome"]] = counts.get(result["outcome"], 0) + 1
            if args.show_wrong and result["outcome"] in ("wrong", "missed"):
                print(f"{split} {case['id']} {case['kind']} {result['outcome']}: replaced {result['replaced']} "
                      f"expected {case['replaces']}\n  said: {case['turns']}\n  "
                      + "\n  ".join(f"{i}: {m}" for i, m in enumerate(case["memories"]))
                      + "\n  operations: " + " | ".join(result["operations"]), file=sys.stderr)
            if number % 20 == 0:
                print(f"{split}: {number}/{len(corpus[split])}", file=sys.stderr, flush=True)
        total: dict[str, int] = {}
        for kind, counts in sorted(by_kind.items()):
            rows.append({"split": split, "kind": kind, "cases": sum(counts.values()), **counts})
            for outcome, n in counts.items():
                total[outcome] = total.get(outcome, 0) + n
        rows.append({"split": split, "kind": "all", "cases": sum(total.values()), **total})
    outcomes = ["right", "kept both", "review", "missed", "wrong"]
    print_table("Corrections and traps: what a new session replaced", rows, ["split", "kind", "cases", *outcomes])
    summary = []
    for row in (r for r in rows if r["kind"] == "all"):
        kept = row.get("right", 0) + row.get("kept both", 0)
        summary.append(f"{row['split']}: wrong {row.get('wrong', 0)}/{row['cases']} "
                       f"({row.get('wrong', 0) / row['cases']:.1%}), right+kept {kept}, "
                       f"missed {row.get('missed', 0)}, review {row.get('review', 0)}")
    print("\nsummary: " + "; ".join(summary))


if __name__ == "__main__":
    main()
