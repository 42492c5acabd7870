"""Operations throughput: import of N memories with vectors (JSONL, vectors
that fit the active model are kept), and re-embedding with the local model.

    make bench-ops                      # N = 100,000 import; 2,000 re-embedded with the local model
"""

from __future__ import annotations

import argparse
import json
import random
import tempfile
import time
import uuid
from pathlib import Path

from common import print_table, setup_django
from core import memory_text


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--reembed", type=int, default=2_000)
    args = parser.parse_args()
    setup_django(database="memory_ops")
    from django.conf import settings

    from memories import embedding
    from memories.embedding import HashEmbedder, MiniLMEmbedder
    from memories.management.progress import Progress
    from memories.models import MemoryItem, Tenant
    from memories.porting import import_records, map_memory_items
    from memories.vectors import embed_items

    embedder = HashEmbedder(384)
    tenant = Tenant.objects.create(name=f"ops-{uuid.uuid4().hex[:8]}")
    rng = random.Random(3)
    path = Path(tempfile.mkdtemp()) / "memory_items.jsonl"
    with path.open("w") as handle:
        for start in range(0, args.n, 1000):
            texts = [memory_text(10_000_000 + i) for i in range(start, min(start + 1000, args.n))]
            vectors = embedder.embed_documents(texts)
            for offset, (text, vector) in enumerate(zip(texts, vectors, strict=True)):
                handle.write(json.dumps({"id": str(uuid.uuid4()), "user_id": f"user-{rng.randrange(1000)}",
                                         "type": "FACT", "text": text, "importance": 0.5, "status": 1,
                                         "created_at": "2024-01-01T00:00:00+00:00", "tags": [],
                                         "embedding": {"vector": [round(float(x), 5) for x in vector]},
                                         "line": start + offset}) + "\n")
    started = time.perf_counter()

    def records():
        for number, row in enumerate(open(path), start=1):
            data = json.loads(row)
            yield map_memory_items(data, {"embedding": data["embedding"], "metadata": {"model": "hash-384"}}, number)

    bar = Progress("import", total=args.n, unit="memories")
    report = import_records(tenant=tenant, records=records(), actor="bench", batch_size=1000, embedder=embedder,
                            progress=lambda r: bar.update(r.read))
    bar.close()
    import_seconds = time.perf_counter() - started
    ids = list(MemoryItem.objects.filter(tenant=tenant).values_list("id", flat=True)[: args.reembed])
    local = MiniLMEmbedder("onnx", cache_dir=settings.VAR_DIR / "models",
                          batch_backend=embedding.EMBEDDING_LOCAL_BATCH_BACKEND)
    local.embed_documents(["warm-up"] * 64)  # model loads are not re-embedding throughput
    started = time.perf_counter()
    for start in range(0, len(ids), 200):
        embed_items([str(i) for i in ids[start:start + 200]], embedder=local, mark_state=False)
    reembed_seconds = time.perf_counter() - started
    print_table("Operations throughput", [
        {"operation": f"import_memories (memory-items JSONL, vectors kept), {report.added:,} memories",
         "seconds": import_seconds, "memories/s": report.added / import_seconds},
        {"operation": f"reembed with the local MiniLM (as shipped), {len(ids):,} memories", "seconds": reembed_seconds,
         "memories/s": len(ids) / reembed_seconds},
    ], ["operation", "seconds", "memories/s"])
    print(f"\nsummary: import_per_s={report.added / import_seconds:.0f} reembed_per_s={len(ids) / reembed_seconds:.0f} "
          f"kept={report.vectors_kept}")


if __name__ == "__main__":
    main()
