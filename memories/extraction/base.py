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
    source_messages: list[int] = field(default_factory=list)


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


_RELATIVE_EN = {
    "today": 0, "tonight": 0, "this morning": 0, "yesterday": -1, "tomorrow": 1, "last week": -7,
    "next week": 7, "last month": -30, "next month": 30, "last year": -365, "next year": 365,
    "last weekend": -7, "this weekend": 0,
}
_RELATIVE_ZH = {"今天": 0, "昨天": -1, "明天": 1, "前天": -2, "后天": 2, "上周": -7, "下周": 7, "上个月": -30,
                "下个月": 30, "去年": -365, "明年": 365}
_RELATIVE_EN_RE = re.compile(r"\b(" + "|".join(sorted(_RELATIVE_EN, key=len, reverse=True)) + r")\b", re.I)
_RELATIVE_ZH_RE = re.compile("(" + "|".join(sorted(_RELATIVE_ZH, key=len, reverse=True)) + ")")


def anchor_relative_dates(text: str, moment: datetime) -> tuple[str, datetime | None]:
    """Add the absolute date beside the first relative expression; return the
    text and the date the statement refers to (None if it names none)."""
    match = _RELATIVE_EN_RE.search(text)
    if match:
        when = moment + timedelta(days=_RELATIVE_EN[match.group(1).lower()])
        end = match.end()
        return f"{text[:end]} ({format_date(when)}){text[end:]}", when
    match = _RELATIVE_ZH_RE.search(text)
    if match:
        when = moment + timedelta(days=_RELATIVE_ZH[match.group(1)])
        end = match.end()
        return f"{text[:end]}（{when.year}年{when.month}月{when.day}日）{text[end:]}", when
    return text, None




@lru_cache(maxsize=4)
def load_prompt(name: str) -> str:
    return (PROMPTS_DIR / name).read_text(encoding="utf-8")
