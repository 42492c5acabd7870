"""Every rule about a trait's confidence and stage, as pure functions.

Confidence moves with evidence weighted by quality (A strongest, D weakest);
stages rise with confidence and evidence and fall back when confidence
drops; confidence decays without reinforcement, more slowly for deeper
traits and for traits reinforced often (the spacing effect).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime, timedelta

QUALITY_WEIGHT = {"A": 1.0, "B": 0.7, "C": 0.4, "D": 0.2}
REINFORCE_RATE = 0.2  # share of the remaining gap to 1.0 closed by one A-quality observation
CONTRADICT_RATE = 0.3  # share of confidence removed by one A-quality contradiction
DECAY_LAMBDA = {"behavior": 0.005, "preference": 0.002, "core": 0.001}  # per day
DISSOLVE_BELOW = 0.05
TREND_WINDOW = timedelta(days=14)
TREND_CONFIDENCE = 0.2
TREND_PROMOTION_OBSERVATIONS = 2
MAX_PARENT_DEPTH = 3
LIFT_REINFORCEMENTS = 5
SPLIT_CONTRADICTIONS = 3

# stage: (minimum confidence, minimum supporting evidence) to enter it
STAGE_ENTRY = {
    "candidate": (0.0, TREND_PROMOTION_OBSERVATIONS),
    "emerging": (0.45, 3),
    "established": (0.65, 5),
    "core": (0.85, 10),
}
STAGE_ORDER = ["trend", "candidate", "emerging", "established", "core"]
DEMOTION_MARGIN = 0.1  # hysteresis: a stage is left only when confidence falls this far below its entry


def reinforce(confidence: float, quality: str) -> float:
    """One supporting observation: close part of the gap to 1."""
    return confidence + (1.0 - confidence) * REINFORCE_RATE * QUALITY_WEIGHT[quality]


def contradict(confidence: float, quality: str) -> float:
    """One contradicting observation: remove part of the confidence."""
    return confidence * (1.0 - CONTRADICT_RATE * QUALITY_WEIGHT[quality])


def effective_lambda(subtype: str, reinforcements: int) -> float:
    """lambda / (1 + 0.1 x reinforcements): often-reinforced traits fade slower."""
    return DECAY_LAMBDA[subtype] / (1.0 + 0.1 * reinforcements)


def decayed_confidence(confidence: float, subtype: str, reinforcements: int, days_since_reinforced: float) -> float:
    return confidence * math.exp(-effective_lambda(subtype, reinforcements) * max(days_since_reinforced, 0.0))


def decayed_confidence_sql(now_param: str = "%s") -> str:
    """The same formula as decayed_confidence, as SQL over the traits table,
    built from the same constants (the bulk refresh runs it in one UPDATE)."""
    lambdas = " ".join(f"WHEN '{subtype}' THEN {value!r}" for subtype, value in DECAY_LAMBDA.items())
    days = (f"GREATEST(extract(epoch FROM ({now_param} - coalesce(last_reinforced_at, first_observed_at, "
            f"{now_param}))) / 86400.0, 0)")
    return f"confidence * exp(-(CASE subtype {lambdas} END) / (1 + 0.1 * reinforcement_count) * {days})"


def days_between(earlier: datetime | None, later: datetime) -> float:
    return 0.0 if earlier is None else (later - earlier).total_seconds() / 86400.0


def next_stage(*, stage: str, confidence: float, supporting: int, now: datetime,
               window_end: datetime | None) -> str:
    """The stage a trait should be in now (one step at a time, up or down)."""
    if stage == "dissolved":
        return stage
    if stage == "trend":
        if supporting >= TREND_PROMOTION_OBSERVATIONS:
            return "candidate"
        if window_end is not None and now > window_end:
            return "dissolved"  # the window closed without enough reinforcement
        return stage
    if confidence < DISSOLVE_BELOW:
        return "dissolved"
    position = STAGE_ORDER.index(stage)
    if position + 1 < len(STAGE_ORDER):
        upper = STAGE_ORDER[position + 1]
        minimum, evidence = STAGE_ENTRY[upper]
        if confidence >= minimum and supporting >= evidence:
            return upper
    entry_confidence, _ = STAGE_ENTRY.get(stage, (0.0, 0))
    if stage != "candidate" and confidence < entry_confidence - DEMOTION_MARGIN:
        return STAGE_ORDER[position - 1]
    return stage


@dataclass
class TraitState:
    """The numbers a trait carries, for the pure rules below."""

    subtype: str
    stage: str
    confidence: float
    reinforcements: int
    contradictions: int
    supporting: int
    last_reinforced_at: datetime | None
    window_end: datetime | None


def apply_evidence(state: TraitState, *, kind: str, quality: str, now: datetime) -> TraitState:
    """A new observation: update counts and confidence, then the stage."""
    if kind == "supporting":
        confidence = reinforce(state.confidence, quality)
        state = TraitState(state.subtype, state.stage, confidence, state.reinforcements + 1, state.contradictions,
                           state.supporting + 1, now, state.window_end)
    else:
        confidence = contradict(state.confidence, quality)
        state = TraitState(state.subtype, state.stage, confidence, state.reinforcements, state.contradictions + 1,
                           state.supporting, state.last_reinforced_at, state.window_end)
    state.stage = next_stage(stage=state.stage, confidence=state.confidence, supporting=state.supporting, now=now,
                             window_end=state.window_end)
    return state


def should_lift_to_preference(*, subtype: str, stage: str, reinforcements: int, depth: int) -> bool:
    """A behavior reinforced again and again becomes (the child of) a preference."""
    return (subtype == "behavior" and stage in ("established", "core") and reinforcements >= LIFT_REINFORCEMENTS
            and depth < MAX_PARENT_DEPTH)


def should_split(contradictions_by_context: dict[str, int], trait_context: str) -> str | None:
    """Repeated contradictions in one other context: the trait holds there
    differently. Returns that context, or None."""
    for context, count in sorted(contradictions_by_context.items(), key=lambda kv: -kv[1]):
        if context != trait_context and count >= SPLIT_CONTRADICTIONS:
            return context
    return None
