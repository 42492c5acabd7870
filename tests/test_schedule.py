"""The scheduled jobs run without a broker: the embedded default (`make run`) archives expired
memories, scans for reflection, ends idle sessions and writes read counts like `make up`'s beat."""

import io
import os
import subprocess
import sys
import threading
import time
from datetime import UTC, datetime, timedelta

import pytest
from django.conf import settings
from django.core.management import call_command
from django.utils import timezone

from memories.clock import ClockTime, clock_of_crontab, parse_job_schedules, parse_schedule
from memories.models import MemoryItem
from memories.schedule import clock_due, due_entries, run_schedule

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


# --- clock times beside intervals (issue 57 item 4; seed 004 §5.2: 03:00 daily, Monday 04:00)

@pytest.mark.parametrize(("spelling", "meaning"), [
    ("3600", 3600.0),
    (1800, 1800.0),
    ("0.5", 0.5),
    ("03:00", ClockTime(3, 0)),
    ("3:05", ClockTime(3, 5)),
    ("mon 04:00", ClockTime(4, 0, 0)),
    ("Monday 04:00", ClockTime(4, 0, 0)),
    ("sun  23:59", ClockTime(23, 59, 6)),
    ("0 3 * * *", ClockTime(3, 0)),
    ("0 4 * * 1", ClockTime(4, 0, 0)),
    ("30 5 * * 0", ClockTime(5, 30, 6)),
    ("30 5 * * 7", ClockTime(5, 30, 6)),
    ("15 2 * * fri", ClockTime(2, 15, 4)),
])
def test_a_schedule_is_an_interval_or_a_clock_time(spelling, meaning):
    assert parse_schedule(spelling) == meaning


@pytest.mark.parametrize(("spelling", "complaint"), [
    ("0", "positive"),
    ("-60", "positive"),
    ("24:00", "not a time of day"),
    ("03:60", "not a time of day"),
    ("noon", "neither seconds"),
    ("mon tue 04:00", "neither seconds"),
    ("someday 04:00", "not a day of the week"),
    ("0 3 1 * *", "only daily or weekly"),
    ("*/5 * * * *", "must be numbers"),
    ("0 4 * * 8", "not 0-7"),
])
def test_a_schedule_that_does_not_parse_is_refused_with_the_reason(spelling, complaint):
    with pytest.raises(ValueError, match=complaint):
        parse_schedule(spelling)


@pytest.mark.parametrize(("clock", "after", "next_time"), [
    (ClockTime(3, 0), datetime(2026, 11, 30, 2, 59, tzinfo=UTC), datetime(2026, 11, 30, 3, 0, tzinfo=UTC)),
    (ClockTime(3, 0), datetime(2026, 11, 30, 3, 0, tzinfo=UTC), datetime(2026, 12, 1, 3, 0, tzinfo=UTC)),
    (ClockTime(3, 0), datetime(2026, 12, 31, 23, 0, tzinfo=UTC), datetime(2027, 1, 1, 3, 0, tzinfo=UTC)),
    # Monday 04:00; 2026-11-30 is a Monday
    (ClockTime(4, 0, 0), datetime(2026, 11, 30, 3, 0, tzinfo=UTC), datetime(2026, 11, 30, 4, 0, tzinfo=UTC)),
    (ClockTime(4, 0, 0), datetime(2026, 11, 30, 4, 0, tzinfo=UTC), datetime(2026, 12, 7, 4, 0, tzinfo=UTC)),
    (ClockTime(4, 0, 0), datetime(2026, 11, 28, 17, 0, tzinfo=UTC), datetime(2026, 11, 30, 4, 0, tzinfo=UTC)),
])
def test_the_next_run_of_a_clock_time(clock, after, next_time):
    assert clock.next_after(after) == next_time


@pytest.mark.parametrize("clock", [ClockTime(3, 0), ClockTime(4, 0, 0), ClockTime(23, 59, 6), ClockTime(0, 0, 5)])
def test_beat_gets_the_same_clock_time(clock):
    beat = clock.to_crontab()
    assert clock_of_crontab(beat) == clock
    monday_night = datetime(2026, 11, 30, 0, 0, tzinfo=UTC)
    # beat's own reading of its crontab agrees on the day of week
    assert (beat.day_of_week == set(range(7))) == (clock.weekday is None)
    if clock.weekday is not None:
        assert clock.next_after(monday_night).isoweekday() % 7 in beat.day_of_week


def test_job_schedules_names_known_jobs_only():
    known = ["expire-trends", "dissolve-weak-traits", "consistency-check"]
    assert parse_job_schedules("expire-trends=03:00; dissolve-weak-traits=mon 04:00 ;consistency-check=7200",
                               known) == {"expire-trends": ClockTime(3, 0),
                                          "dissolve-weak-traits": ClockTime(4, 0, 0), "consistency-check": 7200.0}
    assert parse_job_schedules("", known) == {}
    with pytest.raises(ValueError, match="no scheduled job is called 'expire-trend'"):
        parse_job_schedules("expire-trend=03:00", known)
    with pytest.raises(ValueError, match="expire-trends: 25:00 is not a time of day"):
        parse_job_schedules("expire-trends=25:00", known)
    with pytest.raises(ValueError, match="is not name=when"):
        parse_job_schedules("expire-trends 03:00", known)


def test_a_clock_entry_is_due_once_at_its_time_however_long_it_waited():
    schedule = {"daily": {"task": "x", "schedule": ClockTime(3, 0).to_crontab()},
                "every": {"task": "y", "schedule": 60.0}}
    last = {"daily": datetime(2026, 11, 30, 3, 0, tzinfo=UTC), "every": datetime(2026, 11, 30, 3, 0, tzinfo=UTC)}
    assert clock_due(schedule, last, datetime(2026, 12, 1, 2, 59, tzinfo=UTC)) == []
    assert clock_due(schedule, last, datetime(2026, 12, 1, 3, 0, tzinfo=UTC)) == ["daily"]
    assert clock_due(schedule, last, datetime(2026, 12, 9, 11, 0, tzinfo=UTC)) == ["daily"]
    assert due_entries(schedule, {"daily": 0.0, "every": 0.0}, 60.0) == ["every"]  # intervals skip clock entries


def test_the_loop_runs_a_clock_entry_at_its_time(transactional_db):
    walls = iter([datetime(2026, 11, 30, 2, 58, tzinfo=UTC), datetime(2026, 11, 30, 2, 59, tzinfo=UTC),
                  datetime(2026, 11, 30, 3, 0, tzinfo=UTC), datetime(2026, 11, 30, 3, 1, tzinfo=UTC),
                  datetime(2026, 11, 30, 3, 2, tzinfo=UTC)])
    stop, ran, seen = threading.Event(), [], []

    def wall() -> datetime:
        now = next(walls, None)
        if now is None:
            stop.set()
            return datetime(2026, 11, 30, 3, 2, tzinfo=UTC)
        seen.append(now)
        return now

    schedule = {"nightly": {"task": "memories.tasks.flush_access_counts", "schedule": ClockTime(3, 0).to_crontab()}}
    run_schedule(schedule, stop=stop, tick=0.0, clock=lambda: 0.0, wall=wall,
                 on_run=lambda name, ok: ran.append((name, seen[-1])))
    assert ran == [("nightly", datetime(2026, 11, 30, 3, 0, tzinfo=UTC))]


def _beat_schedule_with(job_schedules: str) -> subprocess.CompletedProcess:
    code = ("import django; django.setup(); from django.conf import settings; "
            "s = settings.CELERY_BEAT_SCHEDULE; "
            "print(repr(s['expire-trends']['schedule']), repr(s['dissolve-weak-traits']['schedule']), "
            "s['consistency-check']['schedule'])")
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "JOB_SCHEDULES": job_schedules,
                               "DJANGO_SETTINGS_MODULE": "memory_project.settings"}, cwd=settings.BASE_DIR)


def test_job_schedules_reach_beat_and_a_typo_stops_the_start():
    done = _beat_schedule_with("expire-trends=03:00; dissolve-weak-traits=mon 04:00; consistency-check=7200")
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["<crontab:", "0", "3", "*", "*", "*", "(m/h/dM/MY/d)>",
                                   "<crontab:", "0", "4", "*", "*", "1", "(m/h/dM/MY/d)>", "7200.0"]
    refused = _beat_schedule_with("expire-trends=3 am")
    assert refused.returncode != 0 and "JOB_SCHEDULES: expire-trends: '3 am'" in refused.stderr
