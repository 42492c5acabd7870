"""A memory's vector is kept in its row, not in the TOAST table.

The default pair's vector (896 dimensions as halfvec, 1,796 bytes) and the chunk's text put a row
just over PostgreSQL's 2,032-byte threshold, so the vector was moved out of line: a user's exact
search read each of 650 vectors through the TOAST index (1,200 buffers, about 1 ms of a search's
statement). toast_tuple_target = 8160 keeps rows of up to a page inline. The rows already written
are rewritten once (their vector re-read as a new value), in batches so that a large table is not
locked as one long statement.
"""

from django.db import migrations

BATCH = 5000


def rewrite_out_of_line_vectors(apps, schema_editor):
    with schema_editor.connection.cursor() as cursor:
        last = 0
        while True:
            cursor.execute(
                "WITH batch AS (SELECT id FROM memory_vectors WHERE id > %s ORDER BY id LIMIT %s) "
                "UPDATE memory_vectors v SET embedding = v.embedding::text::halfvec FROM batch "
                "WHERE v.id = batch.id RETURNING v.id", [last, BATCH])
            ids = [row[0] for row in cursor.fetchall()]
            if not ids:
                return
            last = max(ids)


class Migration(migrations.Migration):
    dependencies = [
        ("memories", "0024_scheduled_runs"),
    ]

    operations = [
        migrations.RunSQL("ALTER TABLE memory_vectors SET (toast_tuple_target = 8160)",
                          reverse_sql="ALTER TABLE memory_vectors RESET (toast_tuple_target)"),
        migrations.RunPython(rewrite_out_of_line_vectors, migrations.RunPython.noop, elidable=True),
    ]
