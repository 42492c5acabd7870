"""Train the trait evidence model (reflection/evidence.py) on the dev stories of reflection/data."""

from __future__ import annotations

from django.core.management.base import BaseCommand

from reflection.evidence import EVIDENCE_MODEL_PATH, train
from reflection.stories import read_stories


class Command(BaseCommand):
    help = ("Train the trait evidence model on the dev stories of reflection/data (the held-out third is never "
            "read), report its five-fold cross-validated figures, and write reflection/data/evidence_model.npz.")

    def add_arguments(self, parser):
        parser.add_argument("--dry-run", action="store_true", help="report only; write nothing")

    def handle(self, *args, dry_run, **options):
        stories = read_stories()
        self.stdout.write(f"{sum(not s.held_out for s in stories)} dev stories of {len(stories)}; encoding…")
        model = train(stories)
        self.stdout.write("cross-validated on the dev stories: " + ", ".join(f"{k} {v}"
                                                                             for k, v in model.scores.items()))
        if not dry_run:
            model.save(EVIDENCE_MODEL_PATH)
            self.stdout.write(f"wrote {EVIDENCE_MODEL_PATH}")
