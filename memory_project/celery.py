"""Celery app. With no CELERY_BROKER_URL set, tasks run eagerly in-process."""
import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memory_project.settings")

app = Celery("memory_project")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
