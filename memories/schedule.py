"""Celery beat's schedule, run inside the service when there is no broker (the embedded default).

With a broker, `make up` runs beat and a worker as their own processes. Without one (`make run`),
nothing would ever run the scheduled jobs: expired memories would stay active until read, the
reflection scan and idle-session ending would never happen, buffered read counts would never be
written. `manage.py run_schedule` runs CELERY_BEAT_SCHEDULE itself, each entry every `schedule`
seconds, the first time one interval after start as beat does; gunicorn starts it beside the
workers under `make run` (gunicorn.conf.py, IN_PROCESS_SCHEDULE) and it dies with the master.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

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
    last_run = dict.fromkeys(schedule, started)
    while not stop.is_set():
        now = clock()
        for name in due_entries(schedule, last_run, now):
            last_run[name] = now
            ok = run_entry(name, schedule[name])
            if on_run is not None:
                on_run(name, ok)
        stop.wait(tick)
