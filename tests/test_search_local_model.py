"""Search quality with the real bundled MiniLM model (not the hash embedder)."""

import pytest

from memories.embedding import LocalEmbedder
from memories.search import SearchQuery, memory_search
from memories.vectors import embed_items
from memories.writing import MemorySpec, memory_create_batch

FACTS = [
    "Alice adopted a golden retriever puppy named Biscuit.",
    "Alice is training for the Berlin marathon in September.",
    "Alice works as a pediatric nurse at the city hospital.",
    "Alice cannot eat gluten because she has celiac disease.",
    "Alice plays the violin in a community orchestra.",
    "Alice's sister Maria lives in Buenos Aires.",
]

PARAPHRASES = [
    ("What kind of dog does she have?", 0),
    ("Is she preparing for a long-distance running race?", 1),
    ("What is her job?", 2),
    ("Does she have any dietary restrictions?", 3),
    ("Which musical instrument does she play?", 4),
    ("Where does her sibling live?", 5),
]


@pytest.fixture(scope="module")
def local_embedder():
    return LocalEmbedder(backend="onnx")


def test_the_local_model_matches_torch(local_embedder):
    torch_model = LocalEmbedder(backend="torch")
    a = local_embedder.embed_documents(FACTS)
    b = torch_model.embed_documents(FACTS)
    assert float(abs(a - b).max()) < 1e-3


def test_large_batches_go_to_the_batch_backend_with_the_same_vectors(local_embedder):
    """Queries through ONNX, big batches through torch: a memory embedded in a
    batch must be found by a query embedded alone."""
    mixed = LocalEmbedder(backend="onnx", batch_backend="torch", batch_threshold=len(FACTS))
    batch = mixed.embed_documents(FACTS)
    assert mixed._batch_model is not None and mixed._batch_model is not mixed._model
    singles = [mixed.embed_query(text) for text in FACTS]
    assert float(abs(batch - singles).max()) < 1e-3
    assert float(abs(batch - local_embedder.embed_documents(FACTS)).max()) < 1e-3


@pytest.mark.parametrize("mode", ["semantic", "hybrid"])
def test_paraphrased_questions_find_the_right_memory(tenant_a, local_embedder, mode):
    results = memory_create_batch(tenant=tenant_a, specs=[MemorySpec(user_id="alice", text=t) for t in FACTS],
                                  actor="test")
    embed_items([str(r.memory.id) for r in results], embedder=local_embedder)
    hits = 0
    for question, expected in PARAPHRASES:
        found = memory_search(tenant=tenant_a, embedder=local_embedder,
                              query=SearchQuery(query=question, user_id="alice", mode=mode, limit=1))
        hits += found[0].memory.text == FACTS[expected]
    assert hits == len(PARAPHRASES)
