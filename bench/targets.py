"""Do updates and forget requests find what they replace or take back? (make bench-targets)

Every update and forget clause of the intent corpus carries `earlier`: what the user said before
that it replaces or takes back. Each becomes a trial: the earlier statement, in the third person as
a memory, among nine other memories of the same "user" (earlier statements and facts of other
paraphrase families, the same language first), and the clause routed as its labelled intent
(the intent model is measured by `manage.py train_intent_model`; this measures what follows).
Closeness, slots and twins are measured as ingestion measures them (read_by_meaning's encoder,
the names left out), and dedupe.decide decides. Outcomes:

- right: the earlier memory is replaced / forgotten (alone or with its twins);
- review: a review candidate that names it among the candidates;
- wrong: another memory is replaced / forgotten, or a review that does not name it;
- missed: nothing is replaced / forgotten;
- false: the same clause with the earlier memory NOT among the ten (a change of something never
  said): a share that still replaces or forgets one of the others (it should add / do nothing);
  false review: a share that asks a person instead.

The thresholds are swept on the dev families and the shipped ones reported on dev and held out.
"""

from __future__ import annotations

import argparse
import hashlib
import itertools

from common import print_table, setup_django

SPEAKER = "Sam"
DISTRACTORS = 9


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--no-sweep", action="store_true")
    args = parser.parse_args()
    setup_django(database="memory_bench_targets", provider="hash")
    import numpy as np

    from memories import dedupe
    from memories.closeness import without_names
    from memories.dedupe import Neighbour, Proposal, decide
    from memories.extraction import intent
    from memories.extraction.meaning import ROUTES, People, SaidClause, third_person
    from memories.text import has_han

    clauses = intent.corpus_clauses(intent.read_corpus())
    trials = [c for c in clauses if c.intent in (intent.UPDATE, intent.FORGET) and c.earlier]
    pool = [c for c in clauses if c.intent in (intent.FACT_SELF, intent.HABIT, intent.PLAN)]

    def stable(text: str) -> int:
        return int(hashlib.sha1(text.encode()).hexdigest()[:8], 16)

    from datetime import UTC, datetime

    now = datetime(2026, 11, 20, tzinfo=UTC)
    statements, stores = [], []
    for trial in trials:
        reading = intent.Reading(trial.intent, 1.0, trial.slot)
        said = SaidClause(trial.text, SPEAKER, now, 0, reading)
        statement = ROUTES[trial.intent](said, People())
        chinese = has_han(trial.earlier)
        others = sorted((c for c in pool if c.group != trial.group and c.held_out == trial.held_out),
                        key=lambda c: (has_han(c.text) != chinese, stable(trial.text + c.text)))[:DISTRACTORS]
        memories = [third_person(trial.earlier, SPEAKER)[0], *(third_person(c.text, SPEAKER)[0] for c in others)]
        statements.append(statement)
        stores.append(memories)
    names = (SPEAKER, "User", "用户")
    texts = sorted({without_names(t, names) for s in statements if s for t in [s.text]}
                   | {without_names(t, names) for m in stores for t in m})
    encoder = intent.intent_encoder()
    vectors = dict(zip(texts, encoder.embed_documents(texts), strict=True))
    slot_of = dict(zip(texts, intent.read_slots(texts), strict=True))

    def neighbours_for(statement, memories: list[str]) -> list[Neighbour]:
        query = vectors[without_names(statement.text, names)]
        own = [vectors[without_names(m, names)] for m in memories]
        mutual = np.array(own) @ np.array(own).T
        out = []
        for i, memory in enumerate(memories):
            closeness = float(np.dot(query, own[i]))
            out.append(Neighbour(id=str(i), text=memory, similarity=closeness, meaning=closeness,
                                 slot=slot_of[without_names(memory, names)],
                                 twins=frozenset(str(j) for j in range(len(memories))
                                                 if j != i and mutual[i, j] >= dedupe.TWIN_CLOSENESS)))
        return sorted(out, key=lambda n: -n.similarity)

    prepared = [(trial, statement, neighbours_for(statement, memories) if statement else [])
                for trial, statement, memories in zip(trials, statements, stores, strict=True)]
    # The same trials without the earlier memory: nothing should be replaced or forgotten.
    without = {id(trial): [n for n in neighbours if n.id != "0"] for trial, _, neighbours in prepared}

    def outcome(statement, neighbours) -> str:
        if statement is None:
            return "missed"
        decision = decide(Proposal(text=statement.text, forget=statement.forget, replaces=statement.replaces,
                                   slot=statement.slot, names=names), neighbours)
        if decision.unclear:
            return "review" if "0" in decision.unclear or not any(n.id == "0" for n in neighbours) else "wrong"
        if decision.operation in ("INVALIDATE", "DELETE"):
            return "right" if decision.target == "0" else "wrong"
        return "missed"

    def score(split: str, kind: str) -> dict:
        picked = [(t, s, n) for t, s, n in prepared if (t.held_out == (split == "held-out")) and t.intent == kind]
        counts = {"right": 0, "review": 0, "wrong": 0, "missed": 0, "false": 0, "false review": 0}
        for trial, statement, neighbours in picked:
            counts[outcome(statement, neighbours)] += 1
            alone = outcome(statement, without[id(trial)])
            counts["false"] += alone == "wrong"
            counts["false review"] += alone == "review"
        total = max(len(picked), 1)
        return {"split": split, "kind": kind, "trials": len(picked),
                **{k: f"{v / total:.3f}" for k, v in counts.items()}}

    shipped = (dedupe.UPDATE_MATCH, dedupe.UPDATE_MARGIN, dedupe.FORGET_MATCH, dedupe.FORGET_UNSURE)
    if not args.no_sweep:
        def sweep(kind: str, title: str, grid: list[dict]) -> None:
            """Score `kind` on the dev families at each setting of the grid (names are dedupe's constants)."""
            rows = []
            for setting in grid:
                for name, value in setting.items():
                    setattr(dedupe, name, value)
                row = score("dev", kind)
                rows.append({**setting, **{k: row[k] for k in ("right", "review", "wrong", "missed", "false",
                                                               "false review")}})
            print_table(title, rows, list(rows[0]))

        sweep(intent.UPDATE, "Update thresholds on the dev families",
              [{"UPDATE_MATCH": m, "UPDATE_MARGIN": g} for m, g in itertools.product((0.3, 0.35, 0.4, 0.45, 0.5),
                                                                                    (0.03, 0.05))])
        sweep(intent.FORGET, "Forget thresholds on the dev families",
              [{"FORGET_MATCH": m, "FORGET_UNSURE": u} for m, u in itertools.product((0.45, 0.5, 0.55, 0.6),
                                                                                    (0.25, 0.3, 0.35, 0.4))
               if u < m])
        dedupe.UPDATE_MATCH, dedupe.UPDATE_MARGIN, dedupe.FORGET_MATCH, dedupe.FORGET_UNSURE = shipped
    rows = [score(split, kind) for split in ("dev", "held-out") for kind in (intent.UPDATE, intent.FORGET)]
    print_table(f"Shipped thresholds (UPDATE_MATCH {dedupe.UPDATE_MATCH}, UPDATE_MARGIN {dedupe.UPDATE_MARGIN}, "
                f"FORGET_MATCH {dedupe.FORGET_MATCH}, FORGET_UNSURE {dedupe.FORGET_UNSURE})", rows,
                ["split", "kind", "trials", "right", "review", "wrong", "missed", "false", "false review"])
    held = {r["kind"]: r for r in rows if r["split"] == "held-out"}
    print(f"\nsummary: held-out updates right {held['update']['right']} (review {held['update']['review']}, wrong "
          f"{held['update']['wrong']}); forget requests right {held['forget']['right']} (review "
          f"{held['forget']['review']}, wrong {held['forget']['wrong']})")


if __name__ == "__main__":
    main()
