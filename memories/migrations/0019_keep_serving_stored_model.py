"""The default local model changed from all-MiniLM-L6-v2 to the script-weighted
pair all-MiniLM-L6-v2+use-multilingual-v3 (Chinese and cross-language search).
A store whose vectors were written under another model keeps searching with that
model until an operator moves it (`reembed --model ... --activate`, no downtime):
without an activation on record, this pins the model most of its vectors are in.
A new store has no vectors and follows the settings."""

from django.db import migrations
from django.db.models import Count


def pin_stored_model(apps, schema_editor):
    from memories.embedding import LOCAL_MODELS, configured_model_identity

    ActiveEmbedding = apps.get_model("memories", "ActiveEmbedding")
    MemoryVector = apps.get_model("memories", "MemoryVector")
    if ActiveEmbedding.objects.exists():
        return
    stored = (MemoryVector.objects.values("model", "dimensions").annotate(vectors=Count("id"))
              .order_by("-vectors").first())
    configured, _ = configured_model_identity()
    if stored is None or stored["model"] == configured or stored["model"] not in LOCAL_MODELS:
        return
    ActiveEmbedding.objects.create(provider="local", model=stored["model"], dimensions=stored["dimensions"])


class Migration(migrations.Migration):
    dependencies = [("memories", "0018_session_order")]
    operations = [migrations.RunPython(pin_stored_model, migrations.RunPython.noop)]
