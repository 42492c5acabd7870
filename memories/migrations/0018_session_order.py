"""Search's neighbour expansion reads the memory saved right after a hit in its session:
(tenant, user, session, created_at, id) makes that one index probe instead of reading every
later memory of the user. Partial: memories without a session have no neighbours.
Reversible (drops the index)."""

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('memories', '0017_keyword_statistics'),
    ]

    operations = [
        migrations.AddIndex(
            model_name='memoryitem',
            index=models.Index(condition=models.Q(('session_id', ''), _negated=True), fields=['tenant', 'user_id', 'session_id', 'created_at', 'id'], name='memory_session_order'),
        ),
    ]
