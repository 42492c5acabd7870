"""Train the durable-statement classifier on the tuning part of the labelled utterances."""

from __future__ import annotations

import numpy as np
from django.core.management.base import BaseCommand

from memories.durable import DURABLE_MODEL_PATH, features, fit, labelled_utterances
from memories.embedding import EmbedderSpec, MiniLMEmbedder, build_embedder


class Command(BaseCommand):
    help = ("Train the durable-statement classifier (memories/durable.py) on the tuning part of "
            "memories/extraction_data/ and write it to memories/extraction_data/durable_classifier.npz. "
            "The held-out part is never read here.")

    def add_arguments(self, parser):
        parser.add_argument("--folds", type=int, default=5)
        parser.add_argument("--max-junk", type=float, default=0.03,
                            help="the threshold is the lowest whose cross-validated junk share stays under this")
        parser.add_argument("--l2", type=float, default=0.01)

    def handle(self, *args, folds, max_junk, l2, **options):
        rows = [row for row in labelled_utterances() if row.split == "tune"]
        self.stdout.write(f"{len(rows)} tuning utterances ({sum(r.keep for r in rows)} to keep); embedding...")
        minilm = build_embedder(EmbedderSpec("local", MiniLMEmbedder.name, MiniLMEmbedder.dimensions))
        x = features([r.text for r in rows], minilm)
        keep = np.array([r.keep for r in rows])
        types = [r.memory_type for r in rows]
        # Cross-validated probabilities choose the threshold (the held-out part stays unseen).
        order = np.random.default_rng(7).permutation(len(rows))
        probability = np.zeros(len(rows))
        for fold in range(folds):
            test = order[fold::folds]
            train = np.setdiff1d(order, test)
            model = fit(x[train], keep[train], [types[i] for i in train], l2=l2)
            probability[test] = model.scores(x[test])[0]
        chosen = 0.5
        for threshold in np.arange(0.2, 0.9, 0.02):
            kept = probability >= threshold
            junk = (kept & ~keep).sum() / max(kept.sum(), 1)
            if junk <= max_junk:
                chosen = float(threshold)
                break
        kept = probability >= chosen
        recall = (kept & keep).sum() / keep.sum()
        junk = (kept & ~keep).sum() / max(kept.sum(), 1)
        self.stdout.write(f"cross-validated ({folds} folds) at threshold {chosen:.2f}: recall {recall:.3f}, "
                          f"junk {junk:.3f}")
        model = fit(x, keep, types, l2=l2, threshold=chosen)
        model.save(DURABLE_MODEL_PATH)
        self.stdout.write(f"wrote {DURABLE_MODEL_PATH} ({DURABLE_MODEL_PATH.stat().st_size} bytes)")
