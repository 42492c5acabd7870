"""memory_history.memory_type: the memory's type when each change was made (seed 004 §2.6.2).

The writer fills it from now on (writing.core.record_history, writing.erase). Rows written before
are backfilled from their memory's type today, or, for a memory no longer there (erased), from the
type the row's own data recorded; a row with neither stays blank.
"""

from django.db import migrations, models

BACKFILL = """
UPDATE memory_history h SET memory_type = m.memory_type
FROM memory_items m WHERE m.id = h.memory_id AND h.memory_type = '';
UPDATE memory_history SET memory_type = left(coalesce(new_data ->> 'memory_type', old_data ->> 'memory_type'), 16)
WHERE memory_type = '' AND coalesce(new_data ->> 'memory_type', old_data ->> 'memory_type') IS NOT NULL;
"""


class Migration(migrations.Migration):

    dependencies = [
        ("memories", "0030_api_key_rotated_from"),
    ]

    operations = [
        migrations.AddField(
            model_name="memoryhistory",
            name="memory_type",
            field=models.CharField(blank=True, default="", max_length=16),
        ),
        migrations.RunSQL(BACKFILL, migrations.RunSQL.noop),
    ]
