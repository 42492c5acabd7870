"""Enqueue a Celery task by name, after commit.

Services name the task instead of importing the tasks module: tasks are the
interface layer and import services, never the other way round (the import
contract in pyproject.toml checks it). With no broker configured, Celery runs
the task in-process (eager), exactly as `.delay()` would.
"""

from __future__ import annotations

import logging

from django.db import transaction

logger = logging.getLogger(__name__)


def enqueue(task_name: str, *args, on_commit: bool = True, swallow_broker_errors: bool = False) -> None:
    """Send `task_name(*args)` (after the surrounding transaction commits, by default)."""

    def send() -> None:
        from celery import current_app as app  # the project's app (memory_project/celery.py)

        try:
            if task_name not in app.tasks:  # tasks modules are discovered lazily (worker start, or here)
                app.loader.import_default_modules()
            app.tasks[task_name].delay(*args)
        except Exception:
            if not swallow_broker_errors:
                raise
            logger.exception("could not enqueue %s; a sweep or backfill will pick the work up", task_name)

    if on_commit:
        transaction.on_commit(send)
    else:
        send()
