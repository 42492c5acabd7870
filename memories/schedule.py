"""Celery beat's schedule, run inside the service when there is no broker (the embedded default).

With a broker, `make up` runs beat and a worker as their own processes. Without one (`make run`),
nothing would ever run the scheduled jobs: expired memories would stay active until read, the
reflection scan and idle-session ending would never happen, buffered read counts would never be
written. `manage.py run_schedule` runs CELERY_BEAT_SCHEDULE itself, each entry every `schedule`
seconds from its last run, or at its clock time (JOB_SCHEDULES, memories/clock.py), kept in the
database (ScheduledRun) across restarts; one never run goes one interval after start (a clock-time one
at its next time), as beat does. gunicorn starts it beside the
workers under `make run` (gunicorn.conf.py, IN_PROCESS_SCHEDULE) and it dies with the master.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from datetime import datetime

from celery.schedules import crontab
from django.db import DatabaseError
from django.utils import timezone

from memories.clock import ClockTime, clock_of_crontab
from memories.models import ScheduledRun
from memories.queue import enqueue

logger = logging.getLogger(__name__)


def clock_of(entry: dict) -> ClockTime | None:
    """The clock time an entry runs at (JOB_SCHEDULES made its schedule a crontab), None for an interval."""
    return clock_of_crontab(entry["schedule"]) if isinstance(entry["schedule"], crontab) else None


def due_entries(schedule: dict[str, dict], last_run: dict[str, float], now: float) -> list[str]:
    """The interval entries whose interval has passed since they last ran (or since the start, for one
    that never ran: `last_run` holds the start for it), in the schedule's order."""
    return [name for name, entry in schedule.items()
            if clock_of(entry) is None and now - last_run[name] >= float(entry["schedule"])]


def clock_due(schedule: dict[str, dict], last_wall: dict[str, datetime], wall_now: datetime) -> list[str]:
    """The clock-time entries whose next time after their last run (or the start) has come: one run
    however long the service was down, as beat does."""
    return [name for name, entry in schedule.items()
            if (clock := clock_of(entry)) is not None and clock.next_after(last_wall[name]) <= wall_now]


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
                 clock: Callable[[], float] = time.monotonic, wall: Callable[[], datetime] = timezone.localtime,
                 on_run: Callable[[str, bool], None] | None = None) -> None:
    """Run the schedule until `stop` is set, checking every `tick` seconds: intervals on the monotonic
    `clock`, clock times on the `wall` clock (in TIME_ZONE)."""
    started, started_wall = clock(), wall()
    kept = kept_runs(schedule)
    last_run = interval_last_runs(schedule, kept, started)
    last_wall = {name: timezone.localtime(kept[name]) if name in kept else started_wall for name in schedule}
    while not stop.is_set():
        now, wall_now = clock(), wall()
        for name in due_entries(schedule, last_run, now) + clock_due(schedule, last_wall, wall_now):
            last_run[name], last_wall[name] = now, wall_now
            ok = run_entry(name, schedule[name])
            remember_run(name)
            if on_run is not None:
                on_run(name, ok)
        stop.wait(tick)


def kept_runs(schedule: dict[str, dict]) -> dict[str, datetime]:
    """When each entry last ran, kept in the database (ScheduledRun): under `make run` every restart had
    started each interval over, and a daily job never ran on a service restarted more often than daily
    (issue 43)."""
    try:
        return dict(ScheduledRun.objects.filter(name__in=list(schedule)).values_list("name", "ran_at"))
    except DatabaseError:
        logger.warning("the schedule's last runs could not be read; every interval starts now")
        return {}


def interval_last_runs(schedule: dict[str, dict], kept: dict[str, datetime], started: float) -> dict[str, float]:
    """Each entry's last run on the loop's monotonic clock: the kept one moved onto that clock, or the
    start for one never run (beat's first interval)."""
    wall = timezone.now()
    return {name: min(started, started - (wall - kept[name]).total_seconds()) if name in kept else started
            for name in schedule}


def remember_run(name: str) -> None:
    """Keep when an entry ran (the database down only costs a rerun after a restart)."""
    try:
        ScheduledRun.objects.update_or_create(name=name, defaults={"ran_at": timezone.now()})
    except DatabaseError:
        logger.warning("could not record that %s ran", name)
