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

from memories import vocabulary

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
    vocabulary.CANDIDATE: (0.0, TREND_PROMOTION_OBSERVATIONS),
    # Seed 004 says (0.45, 3). Here two observations at quality B (a habit said as one, a wish asked for
    # outright) in two sessions are enough to show a trait (issue: traits for habits and wishes said in two
    # sessions); a plain "I like X" (quality C) still needs three.
    vocabulary.EMERGING: (0.4, 2),
    vocabulary.ESTABLISHED: (0.65, 5),
    vocabulary.CORE: (0.85, 10),
}
STAGE_ORDER = list(vocabulary.TRAIT_STAGE_ORDER)
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


# Stages that do not decay: a trend lives and dies by its observation window (seed 004, 5.1), and a dissolved
# trait is gone. A pinned trait does not decay either: an operator decided it holds.
UNDECAYED_STAGES = (vocabulary.TREND, vocabulary.DISSOLVED)


def decay_clock_start(last_reinforced_at: datetime | None, first_observed_at: datetime | None) -> datetime | None:
    """The one clock decay runs on (seed 004: NOW() - COALESCE(last reinforced, created)): the last
    reinforcement, or the first observation for a trait never reinforced."""
    return last_reinforced_at or first_observed_at


def trait_decayed_confidence(*, confidence: float, subtype: str, stage: str, pinned: bool, reinforcements: int,
                             last_reinforced_at: datetime | None, first_observed_at: datetime | None,
                             now: datetime) -> float:
    """A trait's confidence now: the write path, the periodic refresh (as SQL, decayed_confidence_sql) and
    the API all read it from here."""
    if pinned or stage in UNDECAYED_STAGES:
        return confidence
    started = decay_clock_start(last_reinforced_at, first_observed_at)
    return decayed_confidence(confidence, subtype, reinforcements, days_between(started, now))


def decayed_confidence_sql(now_param: str = "%s") -> str:
    """trait_decayed_confidence as SQL over the traits table, built from the same constants and the same
    clock (the bulk refresh runs it in one UPDATE); `now_param` appears twice."""
    lambdas = " ".join(f"WHEN '{subtype}' THEN {value!r}" for subtype, value in DECAY_LAMBDA.items())
    undecayed = ", ".join(f"'{stage}'" for stage in UNDECAYED_STAGES)
    days = (f"GREATEST(extract(epoch FROM ({now_param} - coalesce(last_reinforced_at, first_observed_at, "
            f"{now_param}))) / 86400.0, 0)")
    return (f"CASE WHEN pinned OR stage IN ({undecayed}) THEN confidence ELSE "
            f"confidence * exp(-(CASE subtype {lambdas} END) / (1 + 0.1 * reinforcement_count) * {days}) END")


def days_between(earlier: datetime | None, later: datetime) -> float:
    return 0.0 if earlier is None else (later - earlier).total_seconds() / 86400.0


def next_stage(*, stage: str, confidence: float, supporting: int, now: datetime,
               window_end: datetime | None) -> str:
    """The stage a trait should be in now (one step at a time, up or down)."""
    if stage == vocabulary.DISSOLVED:
        return stage
    if stage == vocabulary.TREND:
        if supporting >= TREND_PROMOTION_OBSERVATIONS:
            return vocabulary.CANDIDATE
        if window_end is not None and now > window_end:
            return vocabulary.DISSOLVED  # the window closed without enough reinforcement
        return stage
    if confidence < DISSOLVE_BELOW:
        return vocabulary.DISSOLVED
    position = STAGE_ORDER.index(stage)
    if position + 1 < len(STAGE_ORDER):
        upper = STAGE_ORDER[position + 1]
        minimum, evidence = STAGE_ENTRY[upper]
        if confidence >= minimum and supporting >= evidence:
            return upper
    entry_confidence, _ = STAGE_ENTRY.get(stage, (0.0, 0))
    if stage != vocabulary.CANDIDATE and confidence < entry_confidence - DEMOTION_MARGIN:
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
    state.stage = earned_stage(stage=state.stage, confidence=state.confidence, supporting=state.supporting,
                               now=now, window_end=state.window_end)
    return state


def earned_stage(*, stage: str, confidence: float, supporting: int, now: datetime,
                 window_end: datetime | None) -> str:
    """Every stage up that the evidence has earned at once (a trend with its second good observation may be
    shown, not wait for a third observation to climb one more step); down, one step at a time (next_stage)."""
    moved = next_stage(stage=stage, confidence=confidence, supporting=supporting, now=now, window_end=window_end)
    if not _above(moved, stage):
        return moved
    while _above(moved, stage):
        stage = moved
        moved = next_stage(stage=stage, confidence=confidence, supporting=supporting, now=now,
                           window_end=window_end)
    return stage


def _above(stage: str, other: str) -> bool:
    return stage in STAGE_ORDER and other in STAGE_ORDER and STAGE_ORDER.index(stage) > STAGE_ORDER.index(other)


# How strongly each way a supporting fact can stop holding speaks against the trait (seed 004's contradiction
# rule, contradict(), at this quality): a fact contradicted by a newer one is as strong as evidence gets; a
# fact the user asked to forget, or that was erased, is support withdrawn; a superseded fact whose new
# version no longer agrees with the trait is a correction.
WITHDRAWAL_QUALITY = {"invalidated": "A", "forgotten": "B", "erased": "B", "superseded": "C"}


def stage_for_support(*, stage: str, confidence: float, live_supporting: int,
                      margin: float = DEMOTION_MARGIN) -> str:
    """The stage a trait can still claim after support was withdrawn: dissolved with no live support or
    confidence under the floor; otherwise it steps down while its live support or confidence no longer meets
    its stage's entry (with the demotion margin). Never up: promotion is reflection's job. A trend stays a
    trend (its window decides), and a candidate is the floor for a trait that still has support."""
    if stage in (vocabulary.DISSOLVED, vocabulary.TREND):
        return stage if live_supporting > 0 or stage == vocabulary.DISSOLVED else vocabulary.DISSOLVED
    if live_supporting <= 0 or confidence < DISSOLVE_BELOW:
        return vocabulary.DISSOLVED
    while stage != vocabulary.CANDIDATE:
        entry_confidence, entry_evidence = STAGE_ENTRY[stage]
        if live_supporting >= entry_evidence and confidence >= entry_confidence - margin:
            break
        stage = STAGE_ORDER[STAGE_ORDER.index(stage) - 1]
    return stage


def withdraw_support(state: TraitState, *, withdrawn: int, cause: str, contradicting_quality: str | None,
                     now: datetime) -> TraitState:
    """Support withdrawn from a trait (facts invalidated, superseded, forgotten or erased): one contradiction
    step (at the contradicting memory's quality, else the cause's), the supporting count less what was
    withdrawn, and the stage the remaining support can claim."""
    quality = contradicting_quality or WITHDRAWAL_QUALITY[cause]
    supporting = max(state.supporting - withdrawn, 0)
    confidence = contradict(state.confidence, quality)
    # No hysteresis here: the margin keeps decay's small steps from flickering a stage, but support taken
    # back (a fact contradicted, forgotten, erased) is news, and the stage must be earned without it.
    stage = stage_for_support(stage=state.stage, confidence=confidence, live_supporting=supporting, margin=0.0)
    return TraitState(state.subtype, stage, confidence, state.reinforcements,
                      state.contradictions + (1 if contradicting_quality else 0), supporting,
                      state.last_reinforced_at, state.window_end)


def should_lift_to_preference(*, subtype: str, stage: str, reinforcements: int, depth: int) -> bool:
    """A behavior reinforced again and again becomes (the child of) a preference."""
    return (subtype == "behavior" and stage in (vocabulary.ESTABLISHED, vocabulary.CORE)
            and reinforcements >= LIFT_REINFORCEMENTS and depth < MAX_PARENT_DEPTH)


def should_split(contradictions_by_context: dict[str, int], trait_context: str) -> str | None:
    """Repeated contradictions in one other context: the trait holds there
    differently. Returns that context, or None."""
    for context, count in sorted(contradictions_by_context.items(), key=lambda kv: -kv[1]):
        if context != trait_context and count >= SPLIT_CONTRADICTIONS:
            return context
    return None


def stage_when_ended(stage: str) -> str:
    """The stage a trait falls to when the user says it ended ("I don't play chess any more", "现在不弹吉他了"):
    no longer shown (a candidate, with its history), not dissolved, so that said again it grows back; a
    trend or candidate keeps its stage (its window or support decides)."""
    return vocabulary.CANDIDATE if stage in vocabulary.TRAIT_STAGES_SHOWN else stage
