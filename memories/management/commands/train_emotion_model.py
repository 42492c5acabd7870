"""Train the emotion model (memories/emotion.py) from the labelled lines the repository owns."""

from __future__ import annotations

from django.core.management.base import BaseCommand

from memories.embedding import local_minilm, local_use
from memories.emotion import EMOTION_LINES, EMOTION_MODEL_PATH, corpus_hash, emotion_features, read_lines, train


class Command(BaseCommand):
    help = ("Train the emotion model on memories/extraction_data/emotion_lines.jsonl (four lines in five), report "
            "it on the held-out fifth, and write memories/extraction_data/emotion_model.npz with its manifest.")

    def add_arguments(self, parser):
        parser.add_argument("--dry-run", action="store_true", help="report only; write nothing")

    def handle(self, *args, dry_run, **options):
        lines = read_lines()
        self.stdout.write(f"{len(lines)} labelled lines in {EMOTION_LINES.name}; encoding…")
        vectors = emotion_features([line["text"] for line in lines])
        model = train(lines, vectors, corpus=corpus_hash(), encoder=f"{local_use().name}+{local_minilm().name}")
        self.stdout.write("held out: " + ", ".join(f"{k} {v}" for k, v in model.scores.items()))
        if not dry_run:
            model.save(EMOTION_MODEL_PATH)
            self.stdout.write(f"wrote {EMOTION_MODEL_PATH}")
