"""A new model's first vectors, embedded by several workers at once, create
its indexes exactly once (the race crashed `make bench` on a fresh database)."""

import threading

import pytest
from django.db import connection, connections

from memories import vectors


@pytest.mark.django_db(transaction=True)
def test_parallel_workers_create_a_new_models_indexes_once():
    model, dimensions, workers = "race-test-model", 8, 8
    barrier, errors = threading.Barrier(workers), []

    def worker():
        try:
            barrier.wait()
            vectors.ensure_hnsw_index(model, dimensions)
            vectors.ensure_user_vector_index(model, dimensions)
        except Exception as exc:  # collected: the test asserts there are none
            errors.append(repr(exc))
        finally:
            connections.close_all()

    threads = [threading.Thread(target=worker) for _ in range(workers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert errors == []
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_indexes WHERE indexname = ANY(%s)",
                       [[vectors.hnsw_index_name(model), vectors.user_index_name(model)]])
        assert cursor.fetchone()[0] == 2
        cursor.execute(f"DROP INDEX {vectors.hnsw_index_name(model)}")
        cursor.execute(f"DROP INDEX {vectors.user_index_name(model)}")
