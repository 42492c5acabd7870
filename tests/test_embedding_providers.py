import numpy as np
import pytest

from memories.embedding import EmbeddingError, HashEmbedder, OpenAIEmbedder
from memories.models import MemoryItem, MemoryVector
from memories.search import SearchQuery, memory_search
from memories.vectors import embed_items
from memories.writing import MemorySpec, memory_create
from tests.fake_openai import Reply


def _openai(server, **kwargs) -> OpenAIEmbedder:
    return OpenAIEmbedder(base_url=server.base_url, model="test-embed", dimensions=8, api_key="k",
                          timeout=kwargs.pop("timeout", 5), **kwargs)


def test_the_hash_embedder_is_deterministic_and_normalised():
    embedder = HashEmbedder(64)
    a, b = embedder.embed_documents(["green tea", "green tea"])
    assert np.allclose(a, b) and np.isclose(np.linalg.norm(a), 1.0)


def test_the_openai_provider_embeds_through_the_real_client(fake_openai, tenant_a):
    embedder = _openai(fake_openai)
    result = memory_create(tenant=tenant_a, spec=MemorySpec(user_id="alice", text="Alice sails."), actor="t")
    embed_items([str(result.memory.id)], embedder=embedder)
    vector = MemoryVector.objects.get(item=result.memory)
    assert vector.model == "test-embed" and vector.dimensions == 8
    path, payload = fake_openai.requests[-1]
    assert path == "/v1/embeddings" and payload["model"] == "test-embed" and payload["input"] == ["Alice sails."]
    found = memory_search(tenant=tenant_a, embedder=embedder,
                          query=SearchQuery(query="Alice sails.", user_id="alice", mode="semantic"))
    assert [r.memory.id for r in found] == [result.memory.id]


def test_a_wrong_dimension_from_the_endpoint_is_an_error(fake_openai):
    fake_openai.dims = 5
    with pytest.raises(EmbeddingError, match="shape"):
        _openai(fake_openai).embed_documents(["x"])


def test_a_failing_endpoint_keeps_the_memory_and_marks_it(fake_openai, tenant_a):
    fake_openai.script("/v1/embeddings", *[Reply(status=500, body={"error": {"message": "boom"}})] * 5)
    result = memory_create(tenant=tenant_a, spec=MemorySpec(user_id="alice", text="Alice's flight is at 9."),
                           actor="t")
    with pytest.raises(EmbeddingError):
        embed_items([str(result.memory.id)], embedder=_openai(fake_openai))
    item = MemoryItem.objects.get(id=result.memory.id)
    assert item.embedding_state == "failed" and "500" in item.embedding_error
    assert not MemoryVector.objects.exists()
    found = memory_search(tenant=tenant_a, query=SearchQuery(query="flight", user_id="alice", mode="keyword"))
    assert [r.memory.id for r in found] == [item.id]
    # The endpoint recovers: re-embedding fixes the row.
    embed_items([str(item.id)], embedder=_openai(fake_openai))
    assert MemoryItem.objects.get(id=item.id).embedding_state == "done"


def test_a_failed_embedding_never_fails_the_save(api, settings):
    settings.EMBEDDING_PROVIDER = "openai"
    from memories.process_state import reset

    reset()
    settings.EMBEDDING_BASE_URL = "http://127.0.0.1:9/v1"  # nothing listens there
    settings.EMBEDDING_MODEL = "remote"
    settings.EMBEDDING_TIMEOUT = 0.5
    try:
        response = api.post("memories", {"user_id": "alice", "text": "Saved even when the embedder is down."})
    finally:
        reset()
    assert response.status_code == 201
    assert MemoryItem.objects.get(id=response.json()["memory"]["id"]).embedding_state == "failed"
