"""Celery beat's schedule, run inside the service when there is no broker (the embedded default).

With a broker, `make up` runs beat and a worker as their own processes. Without one (`make run`),
nothing would ever run the scheduled jobs: expired memories would stay active until read, the
reflection scan and idle-session ending would never happen, buffered read counts would never be
written. `manage.py run_schedule` runs CELERY_BEAT_SCHEDULE itself, each entry every `schedule`
seconds from its last run, kept in the database (ScheduledRun) across restarts; one never run goes
one interval after start, as beat does. gunicorn starts it beside the
workers under `make run` (gunicorn.conf.py, IN_PROCESS_SCHEDULE) and it dies with the master.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from django.db import DatabaseError
from django.utils import timezone

from memories.models import ScheduledRun
from memories.queue import enqueue

logger = logging.getLogger(__name__)


def due_entries(schedule: dict[str, dict], last_run: dict[str, float], now: float) -> list[str]:
    """The entries whose interval has passed since they last ran (or since the start, for one that
    never ran: `last_run` holds the start for it), in the schedule's order."""
    return [name for name, entry in schedule.items() if now - last_run[name] >= float(entry["schedule"])]


def run_entry(name: str, entry: dict) -> bool:
    """Run one entry's task now, in this process (Celery eager); a failure is logged, never raised:
    the schedule goes on."""
    try:
        enqueue(entry["task"], *entry.get("args", ()), on_commit=False)
        return True
    except Exception:  # noqa: BLE001 - one failing job must not stop the others
        logger.exception("scheduled job %s failed; it runs again at its next interval", name)
        return False


def run_schedule(schedule: dict[str, dict], *, stop: threading.Event, tick: float = 5.0,
                 clock: Callable[[], float] = time.monotonic,
                 on_run: Callable[[str, bool], None] | None = None) -> None:
    """Run the schedule until `stop` is set, checking every `tick` seconds."""
    started = clock()
    last_run = kept_last_runs(schedule, started)
    while not stop.is_set():
        now = clock()
        for name in due_entries(schedule, last_run, now):
            last_run[name] = now
            ok = run_entry(name, schedule[name])
            remember_run(name)
            if on_run is not None:
                on_run(name, ok)
        stop.wait(tick)


def kept_last_runs(schedule: dict[str, dict], started: float) -> dict[str, float]:
    """Each entry's last run on the loop's clock: the one kept in the database (ScheduledRun), moved
    onto that clock, or the start for one never run (beat's first interval). Kept in the database
    because under `make run` every restart had started each interval over, and a daily job never ran
    on a service restarted more often than daily (issue 43)."""
    try:
        kept = dict(ScheduledRun.objects.filter(name__in=list(schedule)).values_list("name", "ran_at"))
    except DatabaseError:
        logger.warning("the schedule's last runs could not be read; every interval starts now")
        kept = {}
    wall = timezone.now()
    return {name: min(started, started - (wall - kept[name]).total_seconds()) if name in kept else started
            for name in schedule}


def remember_run(name: str) -> None:
    """Keep when an entry ran (the database down only costs a rerun after a restart)."""
    try:
        ScheduledRun.objects.update_or_create(name=name, defaults={"ran_at": timezone.now()})
    except DatabaseError:
        logger.warning("could not record that %s ran", name)
