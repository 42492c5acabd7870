"""Two indexes for a user's search.

The keyword side's: (tenant, user, text) in one GIN (btree_gin), instead of the text alone.

A user's search read every one of the user's rows to test the match (a bitmap AND of the
user's b-tree and the tenant-wide text index); now the GIN answers both conditions at
once and only the matching rows are read. The old index goes: the new one serves a
tenant-wide search too (its first column).

The profile name's: the rows whose data names the user (search.profile_name), partial, so
that looking the name up no longer filters every one of the user's rows by a JSON key.
"""

from django.contrib.postgres.indexes import GinIndex
from django.contrib.postgres.operations import BtreeGinExtension
from django.db import migrations, models
from django.db.models import Q


class Migration(migrations.Migration):
    dependencies = [
        ("memories", "0022_key_erase_permission"),
    ]

    operations = [
        BtreeGinExtension(),
        migrations.AddIndex(
            model_name="memoryitem",
            index=GinIndex(fields=["tenant", "user_id", "search_vector"], name="memory_user_search_vector"),
        ),
        migrations.RemoveIndex(model_name="memoryitem", name="memory_search_vector"),
        migrations.AddIndex(
            model_name="memoryitem",
            index=models.Index(fields=["tenant", "user_id", "-created_at"], name="memory_profile_name",
                               condition=Q(data__key="name")),
        ),
    ]
