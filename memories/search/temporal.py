"""Time in the question, time in the memory. Pure functions.

A "when" question ("When did she go camping?", "How long ago...", "什么时候")
prefers memories that say when something happened ("yesterday", "last week",
"two years ago", "上周"): on LoCoMo the evidence turn of a temporal question
nearly always carries such a phrase, and the session date turns it into an
answer. A question that names a month or a year ("camping in June", "in 2022")
prefers memories that were true then (valid_at, else created_at).
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from datetime import UTC, datetime

MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
          "november", "december")
_WEEKDAYS = "monday|tuesday|wednesday|thursday|friday|saturday|sunday"
_UNITS = "days?|weeks?|weekends?|months?|years?|nights?|decades?"
_NUMBER = r"\d+|a|an|one|two|three|four|five|six|seven|eight|nine|ten|few|couple of|several"

# "may" is mostly the verb: the month only as "May" with a day, a year or a preposition before it.
_MAY = ("(?:" + "|".join(f"(?<={word} )" for base in ("in", "of", "early", "late", "mid", "since", "until", "by")
                         for word in (base, base.capitalize())) + r")May\b|\bMay(?= \d)")

_ASKS_WHEN = re.compile(
    r"\bwhen\b|\bhow long\b|\bwhat (year|month|date|day|time)\b|\bwhich (year|month|day)\b"
    r"|\bhow many (years|months|weeks|days)\b"
    r"|什么时候|何时|哪年|哪一年|几月|哪个月|哪天|哪一天|多久|多长时间|几年|几号", re.IGNORECASE)

# Saying when, read word by word (a regex of these alternatives cost 2.8 ms over a search's candidates).
_WEEKDAY_WORDS = frozenset(_WEEKDAYS.split("|"))
_UNIT_WORDS = frozenset({"day", "days", "week", "weeks", "weekend", "weekends", "month", "months", "year", "years",
                         "night", "nights", "decade", "decades"})
_ALONE = frozenset({"yesterday", "today", "tonight", "tomorrow", "recently", "lately", "ago", "since"}
                   | {m for m in MONTHS if m != "may"})
_AFTER_RELATIVE = _WEEKDAY_WORDS | _UNIT_WORDS | {"summer", "winter", "spring", "fall", "autumn", "morning"}
_COUNTS = frozenset({"a", "an", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "few",
                     "several"})
_MAY_BEFORE = frozenset({"in", "of", "early", "late", "mid", "since", "until", "by"})
_WORDS = re.compile(r"\w+(?:[-'’]\w+)*")  # "one-year-old" stays one word
_HAN = re.compile(r"[\u4e00-\u9fff]")
_CHINESE_TIME = re.compile(r"昨天|今天|明天|前天|后天|上周|下周|本周|这周|上个?月|下个?月|去年|前年|今年|明年|最近|周末"
                           r"|星期.|礼拜.|\d+\s*年|\d+\s*月|\d+\s*[日号]")


def _says_when(words: list[str]) -> bool:
    """The English rule over a text's words (original case: "May" the month is capitalised)."""
    lower = [w.lower() for w in words]
    for i, word in enumerate(lower):
        after = lower[i + 1] if i + 1 < len(lower) else ""
        if word in _ALONE or (len(word) == 4 and word[:2] in ("19", "20") and word.isdigit()):
            return True
        if word in ("last", "this", "next", "past") and after in _AFTER_RELATIVE:
            return True
        if word in ("on", "every") and after in _WEEKDAY_WORDS:
            return True
        if (word.isdigit() or word in _COUNTS) and after in _UNIT_WORDS:
            return True
        if word == "couple" and after == "of" and i + 2 < len(lower) and lower[i + 2] in _UNIT_WORDS:
            return True
        if words[i] == "May" and ((i > 0 and lower[i - 1] in _MAY_BEFORE) or after.isdigit()):
            return True
    return False


_MONTH_NAMES = re.compile(r"\b(?i:(" + "|".join(m for m in MONTHS if m != "may") + r"))\b|(" + _MAY + ")")
_CHINESE_MONTH = re.compile(r"(\d{1,2}|[一二三四五六七八九十]{1,3})月")
_YEAR = re.compile(r"\b((?:19|20)\d\d)\b|((?:19|20)\d\d)年")
_CHINESE_NUMBERS = {"一": 1, "二": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8, "九": 9, "十": 10,
                    "十一": 11, "十二": 12}


@dataclass(frozen=True)
class TimeIntent:
    """What a query asks about time: whether it asks when, and the months and years it names."""

    asks_when: bool = False
    months: frozenset[int] = frozenset()
    years: frozenset[int] = frozenset()

    @property
    def any(self) -> bool:
        return self.asks_when or bool(self.months) or bool(self.years)


def time_intent(query: str) -> TimeIntent:
    text = unicodedata.normalize("NFKC", query)
    months = {MONTHS.index((named or "may").lower()) + 1 for named, _ in _MONTH_NAMES.findall(text)}
    for raw in _CHINESE_MONTH.findall(text):
        number = int(raw) if raw.isdigit() else _CHINESE_NUMBERS.get(raw, 0)
        if 1 <= number <= 12:
            months.add(number)
    years = {int(a or b) for a, b in _YEAR.findall(text)}
    return TimeIntent(asks_when=bool(_ASKS_WHEN.search(text)), months=frozenset(months), years=frozenset(years))


def mentions_time(text: str) -> bool:
    """Does the memory say when ("yesterday", "last week", "in May", "2 years ago", "上周")?"""
    text = unicodedata.normalize("NFKC", text)
    words = [w[:-2] if w[-2:] in ("'s", "’s") else w for w in _WORDS.findall(text)]  # "tomorrow's"
    return _says_when(words) or bool(_HAN.search(text) and _CHINESE_TIME.search(text))


def time_match(intent: TimeIntent, says_when: bool, moment_seconds: float, *, mention_bonus: float,
               period_bonus: float) -> float:
    """The time part of a memory's score: mention_bonus when a "when" question meets a memory
    that says when; period_bonus for each of the named month and year the memory was true in."""
    bonus = mention_bonus if intent.asks_when and says_when else 0.0
    if intent.months or intent.years:
        moment = datetime.fromtimestamp(moment_seconds, tz=UTC)
        bonus += period_bonus * ((moment.month in intent.months) + (moment.year in intent.years))
    return bonus
