"""The one scorer, used by search and the prompt context alike:

final score = fusion x (1 + recency bonus + importance bonus + trait stage boost) x (1 + time match),

with each part returned so a person can see why a memory came back. Pure functions."""

from __future__ import annotations

import math
from typing import Any

from memories import vocabulary
from memories.search import tuning
from memories.search.query import CharacterFill
from memories.search.rows import RetrievedRow
from memories.text import han_share

RECENCY_WEIGHT = 0.15
RECENCY_SCALE_SECONDS = 30 * 24 * 3600.0
IMPORTANCE_WEIGHT = 0.15
# A boost for each stage shown to agents (vocabulary.TRAIT_STAGES_SHOWN; tests/test_one_home.py keeps them one set).
STAGE_BOOST = {vocabulary.CORE: 0.25, vocabulary.ESTABLISHED: 0.15, vocabulary.EMERGING: 0.05}
ACTIVE_TRAIT_STAGES = vocabulary.TRAIT_STAGES_SHOWN


def recency_seconds_bonus(age_seconds: float, arousal: float | str | None) -> float:
    """0..0.15, decaying with a 30-day scale; emotionally charged memories
    (the memory's emotion.arousal, 0..1: memories.emotion, or one a client saved in data.emotion) fade up to
    1.5x slower (seed 004's recall formula)."""
    age = max(age_seconds, 0.0)
    try:
        arousal_value = min(max(float(arousal or 0), 0.0), 1.0)
    except (TypeError, ValueError):
        arousal_value = 0.0
    return RECENCY_WEIGHT * math.exp(-age / (RECENCY_SCALE_SECONDS * (1 + arousal_value * 0.5)))


def semantic_weight(question: str, *, latin: float, han: float) -> float:
    """The semantic side's fusion weight for this question: `latin` for a question in Latin script,
    `han` for one in Chinese, blended by its Han share (a mixed question gets some of each)."""
    share = han_share(question)
    return latin + (han - latin) * share


def filling(scored: list[tuple[float, str, dict[str, Any]]], chars: dict[str, int],
            fill: CharacterFill) -> list[tuple[float, str, dict[str, Any]]]:
    """The best entries, in order, up to the first whose line fills `fill.budget`: a /context block
    loads only what it can show (an English block of 2,000 characters holds about 20 lines, a Chinese one
    60; a fixed count had to be the larger and loaded three times what English needs)."""
    kept: list[tuple[float, str, dict[str, Any]]] = []
    total = 0
    for entry in scored:
        if total >= fill.budget:
            break
        kept.append(entry)
        length = chars.get(entry[1], 0)
        total += (min(length, fill.line_max) if fill.line_max is not None else length) + fill.per_line
    return kept


def search_pool(limit: int) -> int:
    """How many candidates each side retrieves for `limit` answers: three times as many for a short list
    (the scorer reorders them by recency and importance), at least POOL_FLOOR, and beyond that only
    POOL_MARGIN more than the list (a 124-line /context search parsed 744 rows for three times 124)."""
    return max(POOL_FLOOR, min(limit * 3, limit + POOL_MARGIN))


POOL_FLOOR = 50
POOL_MARGIN = 60


def reciprocal_rank_fusion(ranked_lists: list[tuple[list[str], float]], k: int) -> dict[str, float]:
    """sum over lists of weight / (k + rank)."""
    fused: dict[str, float] = {}
    for ranked, weight in ranked_lists:
        for rank, memory_id in enumerate(ranked, start=1):
            fused[memory_id] = fused.get(memory_id, 0.0) + weight / (k + rank)
    return fused


def best_fusion(sides: list[float], k: int) -> float:
    """The fusion a memory ranked first on every side that ran would get: the top of the relevance scale."""
    return sum(weight / (k + 1) for weight in sides)


def relevance(fusion: float, best: float) -> float:
    """Fusion on a 0-1 scale that means the same in every mode (min_score applies to it)."""
    return min(fusion / best, 1.0) if best > 0 else 0.0


def score_candidate(row: RetrievedRow, fusion: float, best: float, now_seconds: float,
                    stage: str | None, time_match: float = 0.0) -> tuple[float, dict[str, Any]]:
    """The one scorer (search and context): fusion x (1 + recency + importance + stage boost)
    x (1 + time match: see search.temporal), times SEARCH_EPISODE_WEIGHT for an episode: a fact
    outranks the episode it came from."""
    recency = recency_seconds_bonus(now_seconds - row.moment, row.arousal)
    importance = IMPORTANCE_WEIGHT * (row.importance if row.importance is not None else 0.5)
    stage_boost = STAGE_BOOST.get(stage or "", 0.0)
    weight = tuning.SEARCH_EPISODE_WEIGHT if row.episode else 1.0
    return weight * fusion * (1.0 + recency + importance + stage_boost) * (1.0 + time_match), {
        "relevance": relevance(fusion, best), "fusion": fusion, "recency": recency, "importance": importance,
        "stage": stage_boost, **({"time": time_match} if time_match else {})}


def score_ceiling(*, timed: bool) -> float:
    """The most score_candidate multiplies a fusion by: every bonus at its top (recency, importance of 1, the
    highest stage boost), the time match at its top when the question names a time (a "when" question meeting
    a memory that says when, and both the month and the year it names), and the episode weight if above 1.
    A candidate whose fusion times this cannot reach the answer's last score is not scored."""
    time_top = tuning.SEARCH_TIME_MENTION_BONUS + 2 * tuning.SEARCH_TIME_PERIOD_BONUS if timed else 0.0
    return (max(tuning.SEARCH_EPISODE_WEIGHT, 1.0) * (1.0 + RECENCY_WEIGHT + IMPORTANCE_WEIGHT
                                                        + max(STAGE_BOOST.values())) * (1.0 + time_top))


def demote_episodes(scored: list[tuple[float, str, dict[str, Any]]], episodes: set[str],
                    jobs: dict[str, set[str]]) -> list[tuple[float, str, dict[str, Any]]]:
    """Pure rule over the answer's memories: an episode that ranks above the best fact in the
    answer that came from one of its turns moves just below that fact (the fact that holds the
    answer outranks the episode that holds the fact); other episodes keep their score. Nothing
    enters or leaves the answer, best first again after."""
    fact_scores = [(score, jobs.get(memory_id, set())) for score, memory_id, _ in scored if memory_id not in episodes]
    out = []
    for score, memory_id, parts in scored:
        if memory_id in episodes:
            mine = jobs.get(memory_id, set())
            ceiling = max((fact for fact, fact_jobs in fact_scores if fact_jobs & mine), default=None)
            if ceiling is not None and score >= ceiling:
                parts = {**parts, "below_fact": True}
                score = ceiling * 0.999
        out.append((score, memory_id, parts))
    out.sort(key=lambda entry: (-entry[0], entry[1]))
    return out
