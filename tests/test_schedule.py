"""The scheduled jobs run without a broker: the embedded default (`make run`) archives expired
memories, scans for reflection, ends idle sessions and writes read counts like `make up`'s beat."""

import io
import threading
import time
from datetime import timedelta

import pytest
from django.conf import settings
from django.core.management import call_command
from django.utils import timezone

from memories.models import MemoryItem
from memories.schedule import due_entries, run_schedule

SCHEDULE = {"a": {"task": "x", "schedule": 300.0}, "b": {"task": "y", "schedule": 3600.0}}


@pytest.mark.parametrize(("last_run", "now", "due"), [
    ({"a": 0.0, "b": 0.0}, 0.0, []),  # nothing at the start: beat waits one interval too
    ({"a": 0.0, "b": 0.0}, 299.9, []),
    ({"a": 0.0, "b": 0.0}, 300.0, ["a"]),
    ({"a": 300.0, "b": 0.0}, 3600.0, ["a", "b"]),
    ({"a": 3600.0, "b": 3600.0}, 3700.0, []),
])
def test_an_entry_is_due_one_interval_after_it_last_ran(last_run, now, due):
    assert due_entries(SCHEDULE, last_run, now) == due


def test_run_schedule_once_archives_what_expired(api):
    api.remember("alice", "Alice is in Berlin this week.")
    MemoryItem.objects.filter(user_id="alice").update(expires_at=timezone.now() - timedelta(seconds=1))
    out = io.StringIO()
    call_command("run_schedule", "--once", stdout=out)
    assert out.getvalue().startswith(f"{len(settings.CELERY_BEAT_SCHEDULE)} of {len(settings.CELERY_BEAT_SCHEDULE)}"
                                      " scheduled jobs ran")
    assert MemoryItem.objects.get(user_id="alice").status == "archived"


def test_the_schedule_loop_runs_due_entries_and_stops(transactional_db):
    clock = iter(float(t) for t in range(0, 10_000, 100))
    ran: list[str] = []
    stop = threading.Event()

    def on_run(name: str, ok: bool) -> None:
        ran.append(name)
        if len(ran) >= 3:
            stop.set()

    schedule = {"flush": {"task": "memories.tasks.flush_access_counts", "schedule": 300.0}}
    started = time.monotonic()
    run_schedule(schedule, stop=stop, tick=0.0, clock=lambda: next(clock), on_run=on_run)
    assert ran == ["flush", "flush", "flush"] and time.monotonic() - started < 10


def test_a_restart_keeps_each_jobs_last_run(db):
    """Issue 43: under `make run` every restart started each interval over, so a daily job needed 24 h
    of uptime. The last runs are kept in the database: after a restart, a job whose interval passed
    while the service was down runs at the first check; one that ran recently still waits."""
    from memories.models import ScheduledRun

    ScheduledRun.objects.create(name="flush", ran_at=timezone.now() - timedelta(seconds=400))
    ScheduledRun.objects.create(name="daily", ran_at=timezone.now() - timedelta(hours=1))
    schedule = {"flush": {"task": "memories.tasks.flush_access_counts", "schedule": 300.0},
                "daily": {"task": "memories.tasks.flush_access_counts", "schedule": 86400.0},
                "fresh": {"task": "memories.tasks.flush_access_counts", "schedule": 60.0}}
    stop, ran, calls = threading.Event(), [], []

    def clock() -> float:  # a just-restarted process: its clock stands at its start for a few checks
        calls.append(1)
        if len(calls) > 4:
            stop.set()
        return 1000.0

    before = timezone.now()
    run_schedule(schedule, stop=stop, tick=0.0, clock=clock, on_run=lambda name, ok: ran.append(name))
    assert ran == ["flush"]  # "fresh" never ran: one interval after the start, as beat
    assert ScheduledRun.objects.get(name="flush").ran_at >= before
    assert set(ScheduledRun.objects.values_list("name", flat=True)) == {"flush", "daily"}
