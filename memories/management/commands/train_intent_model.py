"""Train the intent model (memories/extraction/intent.py) from the corpus the repository owns."""

from __future__ import annotations

import time

import numpy as np
from django.core.management.base import BaseCommand, CommandError

from memories.extraction.intent import (
    INTENT_L2,
    INTENT_MODEL_PATH,
    INTENTS,
    SLOT_L2,
    SLOTS,
    CorpusError,
    corpus_clauses,
    features,
    fit,
    intent_encoders,
    macro_f1,
    per_class_scores,
    read_corpus,
)
from memories.vocabulary import Slot


class Command(BaseCommand):
    help = ("Train the intent model on the dev part of memories/extraction_data/intents/*.jsonl (two paraphrase "
            "families in three), report it on the held-out third, and write "
            "memories/extraction_data/intent_model.npz. The same corpus gives the same weights.")

    def add_arguments(self, parser):
        parser.add_argument("--sweep", action="store_true",
                            help="cross-validate the regularisation on the dev part first (prints a table)")
        parser.add_argument("--dry-run", action="store_true", help="report only; write nothing")

    def handle(self, *args, sweep, dry_run, **options):
        try:
            utterances = read_corpus()
        except CorpusError as exc:
            raise CommandError(str(exc)) from exc
        clauses = corpus_clauses(utterances)
        if not clauses:
            raise CommandError("the corpus is empty (memories/extraction_data/intents/*.jsonl)")
        dev = [c for c in clauses if not c.held_out]
        held = [c for c in clauses if c.held_out]
        self.stdout.write(f"{len(utterances)} utterances, {len(clauses)} clauses: {len(dev)} dev, {len(held)} "
                          f"held out; embedding with the multilingual encoder...")
        started = time.monotonic()
        encoders = intent_encoders()
        x_all = np.vstack([features([c.text for c in clauses[i:i + 256]], encoders)
                           for i in range(0, len(clauses), 256)])
        self.stdout.write(f"  embedded in {time.monotonic() - started:.1f} s")
        dev_rows = np.array([not c.held_out for c in clauses])
        x_dev, x_held = x_all[dev_rows], x_all[~dev_rows]
        intent_l2, slot_l2 = INTENT_L2, SLOT_L2
        if sweep:
            intent_l2 = self._sweep(x_dev, dev)
        model = fit(x_dev, [c.intent for c in dev], [c.slot for c in dev],
                    encoder="use-multilingual-v3+all-MiniLM-L6-v2",
                    intent_l2=intent_l2, slot_l2=slot_l2)
        self._report("dev (trained on)", model, x_dev, dev)
        if held:
            self._report("held out", model, x_held, held)
        if not dry_run:
            model.save(INTENT_MODEL_PATH)
            self.stdout.write(f"wrote {INTENT_MODEL_PATH} ({INTENT_MODEL_PATH.stat().st_size} bytes)")

    def _sweep(self, x: np.ndarray, rows: list) -> float:
        """Five-fold cross-validation over whole paraphrase families of the dev part."""
        groups = sorted({c.group for c in rows})
        fold_of = {g: i % 5 for i, g in enumerate(groups)}
        best, best_f1 = INTENT_L2, -1.0
        for l2 in (0.008, 0.016, 0.03, 0.06):
            truth, predicted = [], []
            for fold in range(5):
                test = np.array([fold_of[c.group] == fold for c in rows])
                model = fit(x[~test], [c.intent for c, t in zip(rows, test, strict=True) if not t],
                            [c.slot for c, t in zip(rows, test, strict=True) if not t], encoder="cv",
                            intent_l2=l2)
                probabilities = model.intent_probabilities(x[test])
                truth += [c.intent for c, t in zip(rows, test, strict=True) if t]
                predicted += [INTENTS[i] for i in probabilities.argmax(axis=1)]
            score = macro_f1(per_class_scores(truth, predicted, INTENTS))
            self.stdout.write(f"  l2 {l2:<7} cross-validated macro-F1 {score:.3f}")
            if score > best_f1:
                best, best_f1 = l2, score
        self.stdout.write(f"  chosen l2 {best}")
        return best

    def _report(self, title: str, model, x: np.ndarray, rows: list) -> None:
        truth = [c.intent for c in rows]
        predicted = [INTENTS[i] for i in model.intent_probabilities(x).argmax(axis=1)]
        scores = per_class_scores(truth, predicted, INTENTS)
        self.stdout.write(f"\n{title}: {len(rows)} clauses")
        self.stdout.write(f"  {'intent':<11} {'precision':>9} {'recall':>7} {'F1':>6} {'support':>8}")
        for s in scores:
            self.stdout.write(f"  {s.label:<11} {s.precision:>9.3f} {s.recall:>7.3f} {s.f1:>6.3f} {s.support:>8}")
        self.stdout.write(f"  macro-F1 {macro_f1(scores):.3f}")
        for language in ("en", "zh", "mixed"):
            picked = [i for i, c in enumerate(rows) if c.language == language]
            if picked:
                f1 = macro_f1(per_class_scores([truth[i] for i in picked], [predicted[i] for i in picked], INTENTS))
                self.stdout.write(f"  {language:<6} {len(picked):>5} clauses, macro-F1 {f1:.3f}")
        slot_rows = [i for i, c in enumerate(rows) if c.slot != Slot.NONE]
        if slot_rows:
            slot_predicted = model.slot_probabilities(x[slot_rows]).argmax(axis=1)
            accuracy = float(np.mean([SLOTS[p] == rows[i].slot for p, i in zip(slot_predicted, slot_rows,
                                                                                strict=True)]))
            self.stdout.write(f"  slot accuracy {accuracy:.3f} over {len(slot_rows)} clauses")
