"""When a scheduled job runs: every so many seconds (an interval), or at a clock time, daily or on one
weekday (seed 004 §5.2: trends expire at 03:00, weak traits dissolve on Monday at 04:00).

Pure: read by the settings (JOB_SCHEDULES, memory_project/settings/celery.py) to build Celery beat's
schedule, and by the in-process scheduler (memories/schedule.py) to know when a clock entry is due.
Clock times are in the service's TIME_ZONE (UTC unless changed).

Accepted spellings, one per job:
- an interval in seconds: `3600`, `1800.0`;
- a daily clock time: `03:00`, or crontab's `0 3 * * *`;
- a weekly clock time: `mon 04:00` (a day's first three letters or its full English name), or
  crontab's `0 4 * * 1` (0 or 7 is Sunday, as in cron).
Anything else is refused with the reason, so a typo stops the start instead of never running the job.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta

from celery.schedules import crontab

DAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")  # Python's weekday() order
_HH_MM = re.compile(r"^(\d{1,2}):(\d{2})$")


@dataclass(frozen=True)
class ClockTime:
    hour: int
    minute: int
    weekday: int | None = None  # Monday 0 .. Sunday 6 (Python's); None: every day

    def next_after(self, when: datetime) -> datetime:
        """The first moment strictly after `when` (aware, in its own zone) at this clock time."""
        at = when.replace(hour=self.hour, minute=self.minute, second=0, microsecond=0)
        if at <= when:
            at += timedelta(days=1)
        if self.weekday is not None:
            at += timedelta(days=(self.weekday - at.weekday()) % 7)
        return at

    def to_crontab(self) -> crontab:
        """Celery beat's spelling (its day_of_week counts from Sunday = 0)."""
        day = "*" if self.weekday is None else str((self.weekday + 1) % 7)
        return crontab(minute=str(self.minute), hour=str(self.hour), day_of_week=day)

    def __str__(self) -> str:
        day = "" if self.weekday is None else f"{DAYS[self.weekday]} "
        return f"{day}{self.hour:02d}:{self.minute:02d}"


def clock_of_crontab(schedule: crontab) -> ClockTime | None:
    """The ClockTime a crontab built by ClockTime.to_crontab stands for; None for any other crontab."""
    minutes, hours, days = sorted(schedule.minute), sorted(schedule.hour), sorted(schedule.day_of_week)
    if len(minutes) != 1 or len(hours) != 1 or len(days) not in (1, 7):
        return None
    return ClockTime(hours[0], minutes[0], None if len(days) == 7 else (days[0] - 1) % 7)


def _day(spelling: str) -> int:
    word = spelling.strip().lower()
    if word.isdigit():
        number = int(word)
        if number > 7:
            raise ValueError(f"day of week {spelling!r} is not 0-7")
        return (number - 1) % 7  # cron: 0 and 7 are Sunday, 1 is Monday
    for index, day in enumerate(DAYS):
        if word in (day, _FULL_DAYS[index]):
            return index
    raise ValueError(f"day {spelling!r} is not a day of the week (mon, tue, ... sun)")


_FULL_DAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")


def _clock(hour: str, minute: str, weekday: int | None) -> ClockTime:
    if not (hour.isdigit() and minute.isdigit()):
        raise ValueError("hour and minute must be numbers")
    h, m = int(hour), int(minute)
    if not (0 <= h <= 23 and 0 <= m <= 59):
        raise ValueError(f"{h:02d}:{m:02d} is not a time of day (00:00-23:59)")
    return ClockTime(h, m, weekday)


def parse_schedule(value: str | float | int) -> float | ClockTime:
    """An interval in seconds or a ClockTime; ValueError naming what is wrong."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        seconds = float(value)
    else:
        text = " ".join(str(value).split())
        try:
            seconds = float(text)
        except ValueError:
            return _parse_clock(text)
    if not seconds > 0:
        raise ValueError(f"an interval must be a positive number of seconds, got {value!r}")
    return seconds


def _parse_clock(text: str) -> ClockTime:
    fields = text.split(" ")
    if len(fields) == 5:  # crontab: minute hour day-of-month month day-of-week
        minute, hour, day_of_month, month, day_of_week = fields
        if day_of_month != "*" or month != "*":
            raise ValueError(f"{text!r}: only daily or weekly crontab times are accepted (day of month and "
                             "month must be *)")
        return _clock(hour, minute, None if day_of_week == "*" else _day(day_of_week))
    match = _HH_MM.match(fields[-1])
    if match is None or len(fields) > 2:
        raise ValueError(f"{text!r} is neither seconds, HH:MM, '<day> HH:MM' nor a crontab line 'M H * * D'")
    return _clock(match.group(1), match.group(2), _day(fields[0]) if len(fields) == 2 else None)


def parse_job_schedules(spec: str, known: list[str]) -> dict[str, float | ClockTime]:
    """JOB_SCHEDULES: `name=when; name=when`, each name one of `known` (the beat schedule's jobs)."""
    chosen: dict[str, float | ClockTime] = {}
    for part in (p.strip() for p in spec.split(";")):
        if not part:
            continue
        name, sep, when = part.partition("=")
        name = name.strip()
        if not sep:
            raise ValueError(f"JOB_SCHEDULES: {part!r} is not name=when")
        if name not in known:
            raise ValueError(f"JOB_SCHEDULES: no scheduled job is called {name!r} (one of {', '.join(known)})")
        try:
            chosen[name] = parse_schedule(when)
        except ValueError as exc:
            raise ValueError(f"JOB_SCHEDULES: {name}: {exc}") from None
    return chosen
