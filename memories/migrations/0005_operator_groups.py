"""The two operator groups: reviewers (review queue and edits) and auditors
(read everything, change nothing)."""

from django.db import migrations

READ_MODELS = [
    ("memories", "memoryitem"), ("memories", "memoryhistory"), ("memories", "memorysource"),
    ("memories", "memoryvector"), ("memories", "candidate"), ("memories", "conversationjob"),
    ("traits", "trait"), ("traits", "traitevidence"), ("reflection", "reflectioncycle"),
]
REVIEWER_CHANGES = [("memories", "memoryitem"), ("memories", "candidate"), ("traits", "trait")]


def create_groups(apps, schema_editor):
    from django.contrib.auth.management import create_permissions

    for app_config in apps.get_app_configs():
        app_config.models_module = True
        create_permissions(app_config, apps=apps, verbosity=0)
        app_config.models_module = None
    Group = apps.get_model("auth", "Group")
    Permission = apps.get_model("auth", "Permission")

    def perms(action, models):
        return [Permission.objects.get(content_type__app_label=app, content_type__model=model,
                                       codename=f"{action}_{model}") for app, model in models]

    auditors, _ = Group.objects.get_or_create(name="auditors")
    auditors.permissions.set(perms("view", READ_MODELS))
    reviewers, _ = Group.objects.get_or_create(name="reviewers")
    reviewers.permissions.set(perms("view", READ_MODELS) + perms("change", REVIEWER_CHANGES))


def drop_groups(apps, schema_editor):
    apps.get_model("auth", "Group").objects.filter(name__in=["auditors", "reviewers"]).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("memories", "0004_operator_profiles"),
        ("traits", "0001_initial"),
        ("reflection", "0001_initial"),
        ("auth", "0012_alter_user_first_name_max_length"),
        ("contenttypes", "0002_remove_content_type_name"),
    ]
    operations = [migrations.RunPython(create_groups, drop_groups)]
