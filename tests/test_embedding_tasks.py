"""The embedding task's batch: waiting memories embedded together, fresh ones skipped, and an edit made
while a memory was being embedded never overwritten by the old text's vectors (memories/vectors.py)."""

from __future__ import annotations

import uuid

import pytest

from memories.embedding import get_embedder
from memories.models import EmbeddingState, MemoryItem, MemoryVector
from memories.vectors import embed_items, embed_waiting, stale_under_model, waiting_companions
from memories.writing import MemorySpec, memory_create_batch, memory_update


def _saved(tenant, *texts: str, user_id: str = "alice", memory_type: str = "fact") -> list[str]:
    """Memories saved as a request saves them, their embedding not yet run (state pending)."""
    results = memory_create_batch(tenant=tenant, actor="test", enqueue_embedding=False,
                                  specs=[MemorySpec(user_id=user_id, text=t, memory_type=memory_type) for t in texts])
    return [str(r.memory.id) for r in results]


def _vector_texts(memory_id: str) -> list[str]:
    return list(MemoryVector.objects.filter(item_id=uuid.UUID(memory_id), model=get_embedder().name)
                .order_by("chunk_index").values_list("chunk_text", flat=True))


@pytest.mark.django_db
def test_a_task_takes_the_tenants_waiting_memories_along_and_theirs_then_find_them_fresh(tenant_a, tenant_b):
    first, second, third = (_saved(tenant_a, text)[0]  # one save each, as three requests would
                            for text in ("Alice keeps bees.", "Alice sings in a choir.", "Alice rows at dawn."))
    (elsewhere,) = _saved(tenant_b, "Bob keeps bees too.", user_id="bob")
    assert waiting_companions([first], 5) == [third, second]  # newest first; another tenant's never
    assert waiting_companions([first], 1) == [third]

    report = embed_waiting([first], companions=5)
    assert (report.embedded, report.fresh) == (3, 0)
    states = dict(MemoryItem.objects.values_list("id", "embedding_state"))
    assert {str(k): v for k, v in states.items()} == {first: EmbeddingState.DONE, second: EmbeddingState.DONE,
                                                      third: EmbeddingState.DONE, elsewhere: EmbeddingState.PENDING}
    assert _vector_texts(second) == ["Alice sings in a choir."]

    again = embed_waiting([second], companions=5)  # second's own task, after the batch embedded it
    assert (again.embedded, again.fresh) == (0, 1)
    assert embed_waiting([first], companions=0).fresh == 1


@pytest.mark.django_db
def test_a_retexted_trait_is_stale_until_its_new_text_is_embedded(tenant_a):
    """A trait's text changes in place (its row is its identity); a fact's edit is a new row."""
    (memory_id,) = _saved(tenant_a, "Lives in Porto", memory_type="trait")
    embed_waiting([memory_id], companions=0)
    assert stale_under_model([memory_id], get_embedder().name) == ([], [memory_id])
    memory_update(tenant=tenant_a, memory_id=memory_id, actor="test", text="Lives in Lisbon")
    assert stale_under_model([memory_id], get_embedder().name) == ([memory_id], [])
    report = embed_waiting([memory_id], companions=0)
    assert report.embedded == 1 and _vector_texts(memory_id) == ["Lives in Lisbon"]
    assert MemoryItem.objects.get(id=memory_id).embedding_state == EmbeddingState.DONE


class _EditsWhileEmbedding:
    """The real embedder, with the trait retexted while the model runs (as reflection or a reviewer on
    another process would)."""

    def __init__(self, tenant, memory_id: str):
        self.inner, self.tenant, self.memory_id = get_embedder(), tenant, memory_id
        self.name, self.dimensions = self.inner.name, self.inner.dimensions

    def embed_documents(self, texts):
        memory_update(tenant=self.tenant, memory_id=self.memory_id, actor="test", text="Moved to Faro")
        return self.inner.embed_documents(texts)

    def embed_query(self, text):
        return self.inner.embed_query(text)


@pytest.mark.django_db
def test_a_retext_made_while_embedding_is_not_overwritten_by_the_old_texts_vectors(tenant_a):
    (memory_id,) = _saved(tenant_a, "Lives in Porto", memory_type="trait")
    report = embed_items([memory_id], embedder=_EditsWhileEmbedding(tenant_a, memory_id))
    assert (report.embedded, report.changed) == (0, 1)
    assert _vector_texts(memory_id) == []  # nothing of "Porto" was written
    assert MemoryItem.objects.get(id=memory_id).embedding_state == EmbeddingState.PENDING  # the edit's task embeds it
    assert embed_waiting([memory_id], companions=0).embedded == 1
    assert _vector_texts(memory_id) == ["Moved to Faro"]


@pytest.mark.django_db
def test_memories_waiting_longer_than_the_sweeps_delay_are_left_to_the_sweep(tenant_a, settings):
    from datetime import timedelta

    from django.utils import timezone

    first, old = _saved(tenant_a, "Alice keeps bees.", "Alice once lived in Goa.")
    long_ago = timezone.now() - timedelta(seconds=settings.EMBEDDING_SWEEP_AFTER + 5)
    MemoryItem.objects.filter(id=old).update(created_at=long_ago)
    assert waiting_companions([first], 5) == []
