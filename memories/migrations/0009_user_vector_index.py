"""The per-user covering index for the configured embedding model's vectors,
so the exact per-user plan reads vectors from the index alone.

Raw SQL (through memories.vectors) because the index is partial on one model,
like the HNSW index of 0002; other models get theirs when their first vectors
are written.
"""

from django.db import migrations


def create_index(apps, schema_editor):
    from memories.embedding import configured_model_identity
    from memories.vectors import ensure_user_vector_index

    model, dimensions = configured_model_identity()
    ensure_user_vector_index(model, dimensions, using_connection=schema_editor.connection)


def drop_index(apps, schema_editor):
    from memories.embedding import configured_model_identity
    from memories.vectors import user_index_name

    model, _ = configured_model_identity()
    schema_editor.execute(f"DROP INDEX IF EXISTS {user_index_name(model)}")


class Migration(migrations.Migration):
    dependencies = [("memories", "0008_archived_at")]
    operations = [migrations.RunPython(create_index, drop_index)]
