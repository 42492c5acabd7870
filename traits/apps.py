from django.apps import AppConfig


class TraitsConfig(AppConfig):
    name = "traits"
    default_auto_field = "django.db.models.BigAutoField"
