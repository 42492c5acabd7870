"""The HNSW cosine index for the configured embedding model's vectors.

Raw SQL because the ORM cannot express an index on a sized cast with a
model predicate (see memories/vectors.py). Other models get theirs from
`reembed`, which calls the same function.
"""

from django.db import migrations


def create_index(apps, schema_editor):
    from memories.embedding import configured_model_identity
    from memories.vectors import ensure_hnsw_index

    model, dimensions = configured_model_identity()
    ensure_hnsw_index(model, dimensions, using_connection=schema_editor.connection)


def drop_index(apps, schema_editor):
    from memories.embedding import configured_model_identity
    from memories.vectors import hnsw_index_name

    model, _ = configured_model_identity()
    schema_editor.execute(f"DROP INDEX IF EXISTS {hnsw_index_name(model)}")


class Migration(migrations.Migration):
    dependencies = [("memories", "0001_initial")]
    operations = [migrations.RunPython(create_index, drop_index)]
