"""Seed 004's storage details for the trait table (§2.4, §2.5).

Fillfactor 80 and early autovacuum: a trait row is updated in place on every observation, every
decay refresh and every stage change (confidence, counts, decayed_confidence); 20% free space in
each page lets those updates stay on the page (HOT updates: no new index entries), and vacuum and
analyze start after 5% and 2% of rows changed instead of PostgreSQL's 20% and 10%. The table's
existing pages keep their fill until they are rewritten; new pages honour it at once.

The user on the trait row (tenant, user_id, copied from its memory) so that the per-user indexes
the seed lists can exist: by stage and subtype, the active ones by confidence, by context.
"""

import django.db.models.deletion
from django.db import migrations, models
from django.db.models import Q

TRAIT_STORAGE = ("ALTER TABLE traits SET (fillfactor = 80, autovacuum_vacuum_scale_factor = 0.05, "
                 "autovacuum_analyze_scale_factor = 0.02)")
TRAIT_STORAGE_RESET = ("ALTER TABLE traits RESET (fillfactor, autovacuum_vacuum_scale_factor, "
                       "autovacuum_analyze_scale_factor)")
BACKFILL_USER = ("UPDATE traits t SET tenant_id = m.tenant_id, user_id = m.user_id FROM memory_items m "
                 "WHERE m.id = t.memory_id")


class Migration(migrations.Migration):

    dependencies = [
        ("memories", "0030_api_key_rotated_from"),
        ("traits", "0005_evidence_reason"),
    ]

    operations = [
        migrations.RunSQL(TRAIT_STORAGE, TRAIT_STORAGE_RESET),
        migrations.AddField(
            model_name="trait",
            name="tenant",
            field=models.ForeignKey(null=True, db_index=False, on_delete=django.db.models.deletion.PROTECT,
                                    related_name="+", to="memories.tenant"),
        ),
        migrations.AddField(
            model_name="trait",
            name="user_id",
            field=models.CharField(max_length=255, null=True),
        ),
        migrations.RunSQL(BACKFILL_USER, migrations.RunSQL.noop),
        migrations.AlterField(
            model_name="trait",
            name="tenant",
            field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.PROTECT,
                                    related_name="+", to="memories.tenant"),
        ),
        migrations.AlterField(
            model_name="trait",
            name="user_id",
            field=models.CharField(max_length=255),
        ),
        migrations.AddIndex(
            model_name="trait",
            index=models.Index(fields=["tenant", "user_id", "stage", "subtype"], name="trait_user_stage"),
        ),
        migrations.AddIndex(
            model_name="trait",
            index=models.Index(condition=~Q(stage__in=["dissolved", "trend"]),
                               fields=["tenant", "user_id", "stage", "-decayed_confidence"],
                               name="trait_user_active_confidence"),
        ),
        migrations.AddIndex(
            model_name="trait",
            index=models.Index(fields=["tenant", "user_id", "context"], name="trait_user_context"),
        ),
    ]
