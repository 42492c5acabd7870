"""Does the service know who each thing a user says is about? (issue 53: the people in a user's life)

bench/people_cases_en.json and bench/people_cases_zh.json hold 32 personas (English, Chinese, mixed) written by
someone who had not read the extractor: multi-session chats, every user turn labelled with the people it
mentions, the facts it states and whom each is about, its emotion; each persona's people with their relation
to the user and every word the user calls them by. Odd personas are dev (rules are chosen on them), even
ones held out. Each persona's sessions go through `POST /conversations` one after another as a chat app
sends them (the offline default extractor, the local model), into a fresh user; then its people are read.

- person recall: labelled people (person or pet) matched by an entity (a shared alias, else the same
  relation when the relation names one person);
- relation right: matched people whose entity has the labelled relation (the last one, after changes);
- alias precision: pairs of aliases one entity holds that belong to one labelled person (words that name
  two labelled people are left out);
- subject right: memories kept from a labelled turn whose subject is one of whom that turn's facts are about;
- emotion sign: the emotion model's valence sign on each labelled turn (memories.emotion.sign: a band round
  zero is neutral).

    make bench-people
    make bench-people BENCH_ARGS="--split dev --show"
"""

from __future__ import annotations

import argparse
import json
import sys
import uuid
from pathlib import Path

from common import print_table, setup_django, unlimited_api_client

CASES = [Path(__file__).resolve().parent / f"people_cases_{lang}.json" for lang in ("en", "zh")]


_POSSESSIVE = ("my ", "our ", "我们的", "我的", "我们", "我")


def word_key(word: str) -> str:
    """A labelled word as an alias is kept: "my mum" is the alias "mum", "我妈" is "妈"."""
    from memories.people.resolve import alias_key

    key = alias_key(word)
    for prefix in _POSSESSIVE:
        if key.startswith(prefix) and len(key) > len(prefix):
            return key[len(prefix):]
    return key


def match_people(labelled: list[dict], entities: list) -> dict[str, object]:
    """Labelled person id -> the entity that is them (a shared alias first, else the one entity of the
    labelled relation)."""
    from memories.people.resolve import alias_key

    keys = {e.id: {alias_key(a.alias) for a in e.aliases.all()} | ({alias_key(e.name)} if e.name else set())
            for e in entities}
    out: dict[str, object] = {}
    for person in labelled:
        words = {word_key(w) for w in person["words"]} | ({alias_key(person["name"])} if person.get("name") else set())
        by_alias = sorted((e for e in entities if keys[e.id] & words), key=lambda e: -len(keys[e.id] & words))
        by_relation = [e for e in entities if e.relation == person["relation"] and person["relation"] != "other"]
        found = by_alias[0] if by_alias else by_relation[0] if len(by_relation) == 1 else None
        if found is not None:
            out[person["id"]] = found
    return out


def alias_pairs(labelled: list[dict], entities: list) -> tuple[int, int]:
    """(pairs of one person, pairs) over the aliases each entity holds that name exactly one labelled person."""
    from memories.people.resolve import alias_key

    owner: dict[str, set[str]] = {}
    for person in labelled:
        for word in [*person["words"], *([person["name"]] if person.get("name") else [])]:
            owner.setdefault(word_key(word), set()).add(person["id"])
    good = total = 0
    for entity in entities:
        owners = [next(iter(owner[k])) for a in entity.aliases.all()
                  if len(owner.get(k := alias_key(a.alias), ())) == 1]
        for i in range(len(owners)):
            for j in range(i + 1, len(owners)):
                total += 1
                good += owners[i] == owners[j]
    return good, total


def run_persona(persona: dict, tenant, post) -> dict:
    from memories.models import MemoryItem, MemorySource, Person, PersonKind, PersonStatus

    user = "p-" + uuid.uuid4().hex[:12].translate(str.maketrans("0123456789", "ghijklmnop"))
    jobs = []
    for number, session in enumerate(persona["sessions"]):
        job = post("conversations", {"user_id": user, "session_id": f"{user}-s{number}",
                                     "messages": session["messages"]})
        jobs.append(str(job.get("job_id", "")))
    entities = list(Person.objects.filter(tenant=tenant, user_id=user, status=PersonStatus.ACTIVE)
                    .prefetch_related("aliases"))
    me = next((e for e in entities if e.kind == PersonKind.USER), None)
    others = [e for e in entities if e.kind != PersonKind.USER]
    labelled = [p for p in persona["people"] if p["kind"] in ("person", "pet")]
    matched = match_people(labelled, others)
    relation_right = sum(1 for p in labelled if p["id"] in matched and matched[p["id"]].relation == p["relation"])
    wrong: list[str] = [f"relation: {p['name'] or p['words'][:2]} is {p['relation']}, kept as "
                        f"{matched[p['id']].relation or 'none'} ({matched[p['id']]})"
                        for p in labelled if p["id"] in matched and matched[p["id"]].relation != p["relation"]]
    wrong += [f"missed: {p['name']} {p['relation']} {p['words'][:3]}" for p in labelled if p["id"] not in matched]
    good, pairs = alias_pairs(persona["people"], others)
    subject_right = subject_total = 0
    for turn in persona["turns"]:
        abouts = {fact["about"] for fact in turn["facts"]}
        if not abouts:
            continue
        job_id = jobs[turn["session"]]
        ids = MemorySource.objects.filter(job_id=job_id, message_indices__contains=[turn["index"]]).values_list(
            "item_id", flat=True)
        for memory in MemoryItem.objects.filter(id__in=list(ids)).exclude(tags__contains=["episode"]):
            expected = {me.id if about == "user" and me else getattr(matched.get(about), "id", None)
                        for about in abouts}
            subject_total += 1
            if memory.subject_entity_id in expected:
                subject_right += 1
            else:
                given = next((str(e) for e in entities if e.id == memory.subject_entity_id), "?")
                wrong.append(f"{memory.text} -> {given} (said about {sorted(abouts)})")
    return {"people": len(labelled), "matched": len(matched), "relation_right": relation_right,
            "alias_good": good, "alias_pairs": pairs, "subject_right": subject_right, "subject_total": subject_total,
            "wrong": wrong, "entities": len(others)}


def emotion_signs(personas: list[dict]) -> tuple[int, int]:
    from memories.emotion import emotions_of, sign

    turns = [t for p in personas for t in p["turns"] if t.get("emotion")]
    read = emotions_of([t["text"] for t in turns])
    right = sum(1 for turn, emotion in zip(turns, read, strict=True)
                if emotion is not None and sign(emotion["valence"]) == turn["emotion"]["valence"])
    return right, len(turns)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--split", choices=["dev", "heldout", "both"], default="both")
    parser.add_argument("--show", action="store_true", help="print each wrong subject")
    args = parser.parse_args()
    personas = [p for path in CASES if path.exists() for p in json.loads(path.read_text())["personas"]]
    if not personas:
        sys.exit(f"no personas at {CASES}")
    setup_django(database="memory_bench_people", provider="local")
    from django.conf import settings

    settings.EXTRACTION_PROVIDER, settings.CONVERSATION_EPISODES = "", True
    tenant, auth, client = unlimited_api_client("people")

    def post(path: str, body: dict) -> dict:
        response = client.post(f"/api/v1/{path}", json.dumps(body), content_type="application/json", **auth)
        if response.status_code not in (200, 201, 202):
            raise RuntimeError(f"{path}: {response.status_code} {response.content[:300]!r}")
        return response.json()

    rows = []
    splits = ["dev", "heldout"] if args.split == "both" else [args.split]
    for split in splits:
        chosen = [p for p in personas if p["split"] == split]
        total: dict[str, int] = {}
        for number, persona in enumerate(chosen, 1):
            result = run_persona(persona, tenant, post)
            for key, value in result.items():
                if isinstance(value, int):
                    total[key] = total.get(key, 0) + value
            if args.show:
                for line in result["wrong"]:
                    print(f"{split} {persona['id']}: {line}", file=sys.stderr)
            print(f"{split}: {number}/{len(chosen)} personas", file=sys.stderr, flush=True)
        emotion_right, emotion_total = emotion_signs(chosen)
        rows.append({"split": split, "personas": len(chosen), "people": total["people"],
                     "entities": total["entities"],
                     "person recall": f"{total['matched'] / total['people']:.3f}",
                     "relation right": f"{total['relation_right'] / max(total['matched'], 1):.3f}",
                     "alias precision": f"{total['alias_good'] / max(total['alias_pairs'], 1):.3f}"
                                        f" ({total['alias_pairs']})",
                     "subject right": f"{total['subject_right'] / max(total['subject_total'], 1):.3f}"
                                      f" ({total['subject_total']})",
                     "emotion sign": f"{emotion_right / max(emotion_total, 1):.3f} ({emotion_total})"})
    columns = ["split", "personas", "people", "entities", "person recall", "relation right", "alias precision",
               "subject right", "emotion sign"]
    print_table("The people in a user's life: who each thing said is about", rows, columns)
    print("\nsummary: " + "; ".join(f"{r['split']}: person recall {r['person recall']}, relation right "
                                     f"{r['relation right']}, alias precision {r['alias precision']}, subject right "
                                     f"{r['subject right']}, emotion sign {r['emotion sign']}" for r in rows))


if __name__ == "__main__":
    main()
