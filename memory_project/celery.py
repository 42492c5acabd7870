"""Celery app. With no CELERY_BROKER_URL set, tasks run eagerly in-process."""
import logging
import os

from celery import Celery, signals
from django.db import close_old_connections

from memories import metrics
from memories.process_state import reset

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


@signals.task_postrun.connect
def _connections_back_to_the_pool(sender=None, **kwargs) -> None:
    """After a task on a worker, each connection goes back to the pool, or is closed if it broke (the
    database restarted): what Django does after each request. Celery's own handler would close the
    whole pool instead (CELERY_DB_REUSE_MAX in settings/celery.py). Not for an eager task: it runs inside a
    request, whose connection is still in use."""
    if getattr(getattr(sender, "request", None), "is_eager", False):
        return
    close_old_connections()


@signals.worker_process_init.connect
def _start_afresh_with_the_model_loaded(**kwargs) -> None:
    """Each worker process forgets what it inherited from the process it was forked from (memories.
    process_state: pools without their threads, Redis sockets, buffered read counts), then loads the
    local embedding model before it takes a task, as each gunicorn worker does before it takes a request
    (gunicorn.conf.py): under load, a first task that loaded it took 10-20 s and the saves behind it
    waited (`make bench-load`). Loading takes seconds, so CELERY_WORKER_PROC_ALIVE_TIMEOUT is raised
    (settings/celery.py). A failure is logged, not fatal: the task that needs the model retries."""
    from memories.embedding import prepare_local_embedder_for_a_worker

    reset()
    failure = prepare_local_embedder_for_a_worker()
    if failure:
        logging.getLogger(__name__).warning("the embedder is not ready: %s", failure)
