"""What extraction is given and answers (messages, extracted statements, errors), relative dates
made absolute, and the prompts the LLM path reads."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from functools import lru_cache
from pathlib import Path
from typing import Protocol

from memories.models import MemoryType

PROMPTS_DIR = Path(__file__).resolve().parent.parent / "prompts"


class ExtractionError(Exception):
    """Extraction failed. `retryable` errors (timeouts, 429, 5xx, bad JSON) are retried."""

    def __init__(self, message: str, *, retryable: bool):
        super().__init__(message)
        self.retryable = retryable


@dataclass
class Message:
    index: int
    role: str
    content: str
    name: str = ""
    created_at: datetime | None = None


@dataclass
class ExtractedStatement:
    subject: str  # participant name the memory is about
    text: str
    memory_type: str = MemoryType.FACT
    importance: float = 0.5
    confidence: float = 0.8
    tags: list[str] = field(default_factory=list)
    valid_at: datetime | None = None
    key: str = ""
    value: str = ""
    contradicts: str | None = None
    forget: bool = False  # the speaker asks to forget this (decide() makes it a DELETE)
    replaces: bool = False  # an update or correction: it replaces the current memory it is about
    slot: str = ""  # what it is about (intent.SLOTS: home, work, diet, routine, ...), when read
    source_messages: list[int] = field(default_factory=list)
    said: str = ""  # the clause as said, before any rewrite (the gate reads it too: memories/screening.py)


@dataclass
class ExistingMemory:
    id: str
    text: str


class Extractor(Protocol):
    name: str

    def extract(self, *, messages: list[Message], speakers: dict[str, str], existing: list[ExistingMemory],
                now: datetime) -> list[ExtractedStatement]: ...


# --------------------------------------------------------------------------- dates


_MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
           "November", "December"]


def format_date(moment: datetime) -> str:
    return f"{_MONTHS[moment.month - 1]} {moment.day}, {moment.year}"


# A relative expression -> (how many of its unit from the moment, the unit): "next month" is a month,
# not the day thirty days on ("December 2026", never "December 27, 2026").
_RELATIVE_EN = {
    "today": (0, "day"), "tonight": (0, "day"), "this morning": (0, "day"), "yesterday": (-1, "day"),
    "tomorrow": (1, "day"), "last week": (-1, "week"), "next week": (1, "week"), "last month": (-1, "month"),
    "next month": (1, "month"), "last year": (-1, "year"), "next year": (1, "year"),
    "last weekend": (-7, "day"), "this weekend": (0, "day"),
}
_RELATIVE_ZH = {"今天": (0, "day"), "昨天": (-1, "day"), "明天": (1, "day"), "前天": (-2, "day"),
                "后天": (2, "day"), "上周": (-1, "week"), "下周": (1, "week"), "上个月": (-1, "month"),
                "下个月": (1, "month"), "去年": (-1, "year"), "明年": (1, "year")}
_RELATIVE_EN_RE = re.compile(r"\b(" + "|".join(sorted(_RELATIVE_EN, key=len, reverse=True)) + r")\b", re.I)
_RELATIVE_ZH_RE = re.compile("(" + "|".join(sorted(_RELATIVE_ZH, key=len, reverse=True)) + ")")


def resolved_period(moment: datetime, count: int, unit: str) -> datetime:
    """The start of the day, week (Monday), month or year `count` units from `moment`."""
    if unit == "day":
        return moment + timedelta(days=count)
    if unit == "week":
        return moment + timedelta(days=7 * count - moment.weekday())
    if unit == "month":
        months = moment.year * 12 + moment.month - 1 + count
        return moment.replace(year=months // 12, month=months % 12 + 1, day=1)
    return moment.replace(year=moment.year + count, month=1, day=1)


def period_label(when: datetime, unit: str, chinese: bool) -> str:
    """A resolved period as a person writes it, no more precise than what was said."""
    if chinese:
        day = f"{when.year}年{when.month}月{when.day}日"
        return {"day": day, "week": f"{day}那一周", "month": f"{when.year}年{when.month}月",
                "year": f"{when.year}年"}[unit]
    return {"day": format_date(when), "week": f"the week of {format_date(when)}",
            "month": f"{_MONTHS[when.month - 1]} {when.year}", "year": str(when.year)}[unit]


def anchor_relative_dates(text: str, moment: datetime) -> tuple[str, datetime | None]:
    """Add the absolute date beside the first relative expression, at the expression's own
    precision (a day, a week, a month, a year); return the text and when the statement refers to
    (the start of that period; None if it names none)."""
    match = _RELATIVE_EN_RE.search(text)
    if match:
        count, unit = _RELATIVE_EN[match.group(1).lower()]
        when = resolved_period(moment, count, unit)
        end = match.end()
        return f"{text[:end]} ({period_label(when, unit, False)}){text[end:]}", when
    match = _RELATIVE_ZH_RE.search(text)
    if match:
        count, unit = _RELATIVE_ZH[match.group(1)]
        when = resolved_period(moment, count, unit)
        end = match.end()
        return f"{text[:end]}（{period_label(when, unit, True)}）{text[end:]}", when
    return text, None


@lru_cache(maxsize=4)
def load_prompt(name: str) -> str:
    return (PROMPTS_DIR / name).read_text(encoding="utf-8")
