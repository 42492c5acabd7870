"""The default pair's vector stays in its row (migration 0025): out of line, a user's exact search read
each vector through the TOAST index."""

from __future__ import annotations

import numpy as np
import pytest
from django.db import connection
from pgvector import HalfVector

from memories.models import MemoryVector
from memories.writing import MemorySpec, memory_create


def _toasted_values() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT reltoastrelid::regclass::text FROM pg_class WHERE relname = 'memory_vectors'")
        toast = cursor.fetchone()[0]
        cursor.execute(f"SELECT count(DISTINCT chunk_id) FROM {toast}")  # noqa: S608 - a catalog name
        return cursor.fetchone()[0]


@pytest.mark.django_db
def test_a_vector_of_the_default_pair_with_a_long_chunk_is_kept_in_its_row(tenant_a):
    rng = np.random.default_rng(0)
    # About 480 characters that do not compress (a repeated sentence would, and fit in the row anyway).
    text = " ".join("".join(chr(97 + int(c)) for c in rng.integers(0, 26, 7)) for _ in range(60))
    memory = memory_create(tenant=tenant_a, spec=MemorySpec(user_id="diarist", text=text), actor="test").memory
    vector = rng.standard_normal(896).astype(np.float32)
    MemoryVector.objects.create(item=memory, tenant=tenant_a, user_id="diarist", memory_type=memory.memory_type,
                                status=memory.status, chunk_text=text, model="all-MiniLM-L6-v2+use-multilingual-v3",
                                dimensions=896, embedding=HalfVector(vector / np.linalg.norm(vector)))
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_column_size(v.*) FROM memory_vectors v WHERE v.item_id = %s AND v.dimensions = 896",
                       [memory.id])
        assert cursor.fetchone()[0] > 2032  # over the default threshold: it would have gone out of line
    assert _toasted_values() == 0
