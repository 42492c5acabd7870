"""What a search asks when the caller leaves it out: per mode, the number of answers and the floors (pure).

Seed 001 (§3.1) gives every mode a minimum relevance of 0.5 and seed 002 (§8.2) per-mode top_k and
similarity radii (keyword 10; vector 20 and 0.7; hybrid 15 and 0.6). Measured on LoCoMo's dev split
(`bench/search_defaults.py`, docs/search.md "Defaults"), those floors cost hit@10 where they cut anything, so
the defaults below are the measured ones, the reason beside them.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from memories.search.query import MODES, SearchMode, SearchQuery


@dataclass(frozen=True)
class SearchDefaults:
    limit: int
    min_score: float | None  # on the 0-1 relevance scale (scores.relevance)
    min_similarity: float | None  # the cosine floor of the semantic side


# Measured on LoCoMo's dev split (docs/search.md, "Defaults"): seed 002's radii emptied answers (semantic at 0.7:
# 87% empty, hit@10 0.580 -> 0.04; hybrid at 0.6: 0.796 -> 0.77) and seed 001's 0.5, on this relevance scale a
# rank cut for one side, cost hybrid 0.796 -> 0.778; so no mode has a floor. The seed's top_k (hybrid 15,
# semantic 20) shows more rather than ranks better (same MRR) for 50-100% more to load and read: every mode
# answers 10 unless asked.
MODE_DEFAULTS: dict[SearchMode, SearchDefaults] = {
    "hybrid": SearchDefaults(limit=10, min_score=None, min_similarity=None),
    "semantic": SearchDefaults(limit=10, min_score=None, min_similarity=None),
    "keyword": SearchDefaults(limit=10, min_score=None, min_similarity=None),
}


def search_defaults(mode: SearchMode) -> SearchDefaults:
    """The defaults of one mode (a ValueError for a mode that does not exist)."""
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}")
    return MODE_DEFAULTS[mode]


def start_of_range(days: int, now: datetime) -> datetime:
    """The start of "the last `days` days" (seed 001's time_range_days): now minus that many days."""
    return now - timedelta(days=days)


def search_query(*, now: datetime, time_range_days: int | None = None, **fields: Any) -> SearchQuery:
    """A SearchQuery from what a caller gave (the validated fields of any interface): what it left out
    comes from its mode's defaults, and `time_range_days` becomes the start of the window (the later of
    it and a start_time, should both come)."""
    mode: SearchMode = fields.get("mode") or "hybrid"
    defaults = search_defaults(mode)
    for name in ("limit", "min_score", "min_similarity"):
        if fields.get(name) is None:
            fields[name] = getattr(defaults, name)
    if time_range_days is not None:
        start = start_of_range(time_range_days, now)
        given = fields.get("start_time")
        fields["start_time"] = max(start, given) if given is not None else start
    return SearchQuery(**{**fields, "mode": mode})
