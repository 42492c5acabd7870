"""Celery app. With no CELERY_BROKER_URL set, tasks run eagerly in-process."""
import os

from celery import Celery, signals

from memories import metrics

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memory_project.settings")

app = Celery("memory_project")
app.config_from_object("django.conf:settings", namespace="CELERY")
if not app.conf.broker_url:
    # Eager mode: Celery still opens a producer per task; on kombu's in-memory transport it has no host to
    # look up (its default, amqp://, logged "No hostname was supplied" under `make run`).
    app.conf.broker_url = "memory://"
app.autodiscover_tasks()


@signals.task_success.connect
def _count_success(sender=None, **kwargs) -> None:
    metrics.observe_task(task=getattr(sender, "name", "unknown"), outcome="success")


@signals.task_failure.connect
def _count_failure(sender=None, **kwargs) -> None:
    metrics.observe_task(task=getattr(sender, "name", "unknown"), outcome="failure")


@signals.task_retry.connect
def _count_retry(sender=None, **kwargs) -> None:
    metrics.observe_task(task=getattr(getattr(sender, "task", None), "name", "unknown"), outcome="retry")
