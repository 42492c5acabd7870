import time

from django.core.management.base import BaseCommand

from memories.embedding import EmbeddingError, prepare_embedder


class Command(BaseCommand):
    help = ("Prepare the embedding model search uses (MiniLM's ONNX export and its int8 copy, and the multilingual "
            "USE's int8 query graph, under var/models, made once), so that the first request does not pay for it. "
            "Without it, the first `make run` makes them in its workers while it already serves (search from "
            "keywords until then).")

    def handle(self, *args, **options):
        started = time.monotonic()
        try:
            embedder = prepare_embedder()
        except EmbeddingError as exc:
            self.stderr.write(f"the embedder is not ready: {exc} (search answers from keywords until it is)")
            return
        self.stdout.write(f"{embedder.name} ready in {time.monotonic() - started:.1f} s")
