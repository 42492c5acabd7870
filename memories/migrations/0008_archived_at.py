from django.db import migrations, models
from django.db.models import F, OuterRef, Subquery
from django.db.models.functions import Coalesce


def stamp_archived_rows(apps, schema_editor):
    """Rows archived before this column existed: the time of their last DELETE
    event in the history, else their last update."""
    MemoryItem = apps.get_model("memories", "MemoryItem")
    MemoryHistory = apps.get_model("memories", "MemoryHistory")
    last_delete = (MemoryHistory.objects.filter(memory_id=OuterRef("id"), event="DELETE")
                   .order_by("-created_at").values("created_at")[:1])
    MemoryItem.objects.filter(status="archived").update(
        archived_at=Coalesce(Subquery(last_delete), F("updated_at")))


class Migration(migrations.Migration):

    dependencies = [
        ("memories", "0007_active_embedding"),
    ]

    operations = [
        migrations.AddField(
            model_name="memoryitem",
            name="archived_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.RunPython(stamp_archived_rows, migrations.RunPython.noop),
        migrations.AddConstraint(
            model_name="memoryitem",
            constraint=models.CheckConstraint(
                condition=models.Q(("archived_at__isnull", True), ("status", "archived"), _connector="OR"),
                name="memory_archived_at_only_when_archived",
            ),
        ),
    ]
