"""Trait benchmark: do paraphrases of one habit, preference or standing wish, said in several sessions in
English, Chinese or both, grow into one shown trait, and does nothing else?

    make bench-traits                    # every story of reflection/data, dev and held-out reported apart
    make bench-traits BENCH_ARGS="--only zh --show"

Each story's sessions go through the API as a client sends them (one POST /conversations per session,
user turns only, then POST /sessions/{id}/end: the session-end reflection cycle), offline default
extractor and reflector, local model. Then GET /users/{u}/traits (the shown stages) and each shown
trait's supporting memories, traced to the utterances they came from (memory sources), are scored by
reflection.stories.score_story: precision of shown traits, recall of families said in two or more sessions.
Stories are split dev / held-out by a hash of their id (reflection.stories.Story.held_out).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import uuid
from datetime import UTC, datetime, timedelta

from common import print_table, setup_django, unlimited_api_client, wait_for_cycles, wait_for_jobs

START = datetime(2026, 9, 1, 9, 0, tzinfo=UTC)


def dump_story(out, story, user: str, session_of: dict[str, int]) -> None:
    """One JSON line per memory of the story's user (dev stories only: held-out ones are not read while
    rules are chosen): its text, tags, the labelled utterances it came from and the traits it supports."""
    from memories.models import MemoryItem
    from traits.models import TraitEvidence

    if story.held_out:
        return
    for memory in MemoryItem.objects.filter(user_id=user).exclude(memory_type="trait").prefetch_related("sources"):
        said = []
        for source in memory.sources.all():
            for i in source.message_indices or []:
                s = session_of.get(source.session_id, 99)
                if s < len(story.sessions) and i < len(story.sessions[s]):
                    u = story.sessions[s][i]
                    said.append({"session": s, "index": i, "family": u.family, "kind": u.kind, "text": u.text})
        traits = [{"trait": e.trait.memory.text, "stage": e.trait.stage, "kind": e.kind}
                  for e in TraitEvidence.objects.filter(memory=memory).select_related("trait__memory")]
        out.write(json.dumps({"story": story.id, "memory": memory.text, "tags": memory.tags, "status": memory.status,
                              "said": said, "traits": traits}, ensure_ascii=False) + "\n")


def run_story(client, auth: dict, tenant, story, *, show: bool = False, dump=None):
    """One story through the API; returns (its TraitScore, the shown trait texts)."""
    from memories.models import MemorySource
    from reflection.stories import score_story
    from traits.models import EvidenceKind, Trait

    user = f"{story.id}-{uuid.uuid4().hex[:6]}"
    session_of: dict[str, int] = {}
    for number, session in enumerate(story.sessions):
        moment = START + timedelta(days=9 * number)
        sid = f"{story.id}-s{number}-{user}"
        session_of[sid] = number
        messages = [{"role": "user", "name": story.speaker, "content": u.text,
                     "created_at": (moment + timedelta(minutes=i)).isoformat()} for i, u in enumerate(session)]
        body = {"user_id": user, "session_id": sid, "messages": messages}
        response = client.post("/api/v1/conversations", json.dumps(body), content_type="application/json", **auth)
        if response.status_code != 202:
            raise RuntimeError(f"conversations: {response.status_code} {response.content[:300]!r}")
        wait_for_jobs(tenant)
        client.post(f"/api/v1/sessions/{sid}/end", json.dumps({"user_id": user}), content_type="application/json",
                    **auth)
    wait_for_cycles(tenant)
    shown = client.get(f"/api/v1/users/{user}/traits", **auth).json()
    ids = {t["id"] for rows in shown.values() for t in rows}
    support = []
    texts = []
    for trait in Trait.objects.filter(memory__user_id=user).select_related("memory"):
        positions = []
        for evidence in trait.evidence.filter(kind=EvidenceKind.SUPPORTING, withdrawn_at__isnull=True):
            for source in MemorySource.objects.filter(item_id=evidence.memory_id):
                positions += [(session_of.get(source.session_id, 99), i) for i in source.message_indices or [99]]
        if str(trait.memory_id) in ids:
            support.append(positions)
            texts.append(trait.memory.text)
        elif show:
            print(f"    (not shown: {trait.stage} {trait.confidence:.2f}) {trait.memory.text}  <- {positions}")
    score = score_story(story, support)
    if dump is not None:
        dump_story(dump, story, user, session_of)
    if show:
        print(f"--- {story.id}: repeated {sorted(story.repeated_families())}")
        for text, positions in zip(texts, support, strict=True):
            families = [story.sessions[s][u].family if s < len(story.sessions) and u < len(story.sessions[s])
                        else "?" for s, u in positions]
            print(f"    {text}  <- {families}")
    return score, texts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", default="", help="stories whose id starts with this (en, zh-0, mx)")
    parser.add_argument("--show", action="store_true", help="print each story's shown traits and their families")
    parser.add_argument("--dump", default="", help="write each dev story's memories, sources and traits here")
    args = parser.parse_args()
    setup_django(database="memory_bench_traits", provider="local")
    from reflection.stories import TraitScore, read_stories

    tenant, auth, client = unlimited_api_client("traits")
    stories = [s for s in read_stories() if s.id.startswith(args.only)]
    totals: dict[tuple[str, str], TraitScore] = {}
    dump = open(args.dump, "w", encoding="utf-8") if args.dump else None  # noqa: SIM115 (closed at exit)
    started = time.perf_counter()
    for number, story in enumerate(stories, start=1):
        score, _ = run_story(client, auth, tenant, story, show=args.show, dump=dump)
        split = "held-out" if story.held_out else "dev"
        for key in ((split, story.language), (split, "all")):
            totals.setdefault(key, TraitScore()).add(score)
        print(f"[{number}/{len(stories)}] {story.id} ({time.perf_counter() - started:.0f} s)", file=sys.stderr,
              flush=True)
    rows = [{"split": split, "language": language, "shown traits": s.shown, "precision": f"{s.precision:.3f}",
             "families in 2+ sessions": s.repeated, "shown for them": f"{s.recall:.3f}"}
            for (split, language), s in sorted(totals.items())]
    print_table("Traits from stories", rows, ["split", "language", "shown traits", "precision",
                                              "families in 2+ sessions", "shown for them"])
    from reflection.models import CycleTrigger, ReflectionCycle

    took = sorted((c.completed_at - c.started_at).total_seconds() * 1000 for c in ReflectionCycle.objects.filter(
        tenant=tenant, trigger=CycleTrigger.SESSION_END, completed_at__isnull=False, started_at__isnull=False))
    cost = f"{took[len(took) // 2]:.0f} ms median, {took[int(len(took) * 0.95)]:.0f} ms p95" if took else "-"
    print(f"\nreflection per session end: {cost} over {len(took)} cycles")
    held = totals.get(("held-out", "all"), TraitScore())
    dev = totals.get(("dev", "all"), TraitScore())
    print(f"\nsummary: held-out precision {held.precision:.3f}, families shown {held.recall:.3f}; "
          f"dev precision {dev.precision:.3f}, families shown {dev.recall:.3f}")


if __name__ == "__main__":
    main()
