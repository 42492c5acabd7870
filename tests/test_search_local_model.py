"""Search quality with the real bundled MiniLM model (not the hash embedder)."""

import numpy as np
import pytest
from django.conf import settings

from memories.embedding import EmbeddingError, MiniLMEmbedder, OnnxQuerySession, embed_query
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
    return MiniLMEmbedder(backend="onnx")


@pytest.fixture(scope="module")
def query_embedders():
    """Queries straight through ONNX Runtime, at both precisions (the export cached under var/models)."""
    return {precision: MiniLMEmbedder(backend="onnx", cache_dir=settings.VAR_DIR / "models", threads=1,
                                     query_precision=precision) for precision in ("fp32", "int8")}


def test_the_local_model_matches_torch(local_embedder):
    torch_model = MiniLMEmbedder(backend="torch")
    a = local_embedder.embed_documents(FACTS)
    b = torch_model.embed_documents(FACTS)
    assert float(abs(a - b).max()) < 1e-3


def test_large_batches_go_to_the_batch_backend_with_the_same_vectors(local_embedder):
    """Queries through ONNX, big batches through torch: a memory embedded in a
    batch must be found by a query embedded alone."""
    mixed = MiniLMEmbedder(backend="onnx", batch_backend="torch", batch_threshold=len(FACTS))
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


def test_the_direct_query_path_gives_sentence_transformers_vectors(query_embedders, local_embedder):
    fp32 = query_embedders["fp32"]
    assert isinstance(fp32._query_session, OnnxQuerySession)
    questions = [question for question, _ in PARAPHRASES] + ["x", "一个中文的问题：她住在哪里？", "word " * 400]
    direct = np.stack([fp32.embed_query(text) for text in questions])
    assert direct.dtype == np.float32 and direct.shape == (len(questions), 384)
    assert float(abs(direct - local_embedder.embed_documents(questions)).max()) < 1e-5  # truncation alike too


def test_int8_search_queries_stay_close_to_fp32_and_are_made_once(query_embedders):
    int8, fp32 = query_embedders["int8"], query_embedders["fp32"]
    assert int8._search_session.precision == "int8" and int8._query_session.precision == "fp32"
    quantized = settings.VAR_DIR / "models" / "all-MiniLM-L6-v2-onnx-qint8-matmul.onnx"
    made = quantized.stat().st_mtime_ns
    MiniLMEmbedder(backend="onnx", cache_dir=settings.VAR_DIR / "models", query_precision="int8")
    assert quantized.stat().st_mtime_ns == made
    for question, _ in PARAPHRASES:
        assert float(int8.embed_search_query(question) @ fp32.embed_search_query(question)) > 0.98
        # what deduplication compares with stored vectors stays the stored model's own
        assert float(abs(int8.embed_query(question) - fp32.embed_query(question)).max()) == 0.0
        # the search's cache keeps the precisions apart
        assert float(abs(embed_query(question, int8) - int8.embed_search_query(question)).max()) < 1e-5
        assert float(abs(embed_query(question, fp32) - fp32.embed_search_query(question)).max()) < 1e-5


def test_an_unknown_query_precision_is_refused():
    with pytest.raises(EmbeddingError, match="int4"):
        MiniLMEmbedder(backend="onnx", query_precision="int4")


@pytest.mark.parametrize("precision", ["fp32", "int8"])
def test_queries_at_either_precision_find_memories_embedded_in_fp32(tenant_a, local_embedder, query_embedders,
                                                                     precision):
    results = memory_create_batch(tenant=tenant_a, specs=[MemorySpec(user_id="alice", text=t) for t in FACTS],
                                  actor="test")
    embed_items([str(r.memory.id) for r in results], embedder=local_embedder)
    for question, expected in PARAPHRASES:
        found = memory_search(tenant=tenant_a, embedder=query_embedders[precision],
                              query=SearchQuery(query=question, user_id="alice", mode="semantic", limit=1))
        assert found[0].memory.text == FACTS[expected], question
