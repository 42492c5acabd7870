"""The lifecycle rules with hand-computed numbers."""

import math
from datetime import UTC, datetime, timedelta

import pytest

from traits.lifecycle import (
    TraitState,
    apply_evidence,
    contradict,
    decayed_confidence,
    earned_stage,
    effective_lambda,
    next_stage,
    reinforce,
    should_lift_to_preference,
    should_split,
)

NOW = datetime(2025, 1, 31, tzinfo=UTC)


@pytest.mark.parametrize(("subtype", "expected"), [
    # 0.8 * exp(-lambda * 30) with no reinforcements
    ("behavior", 0.8 * math.exp(-0.15)),    # 0.68857
    ("preference", 0.8 * math.exp(-0.06)),  # 0.75341
    ("core", 0.8 * math.exp(-0.03)),        # 0.77635
])
def test_decay_after_30_days_per_subtype(subtype, expected):
    assert decayed_confidence(0.8, subtype, 0, 30) == pytest.approx(expected)
    assert round(decayed_confidence(0.8, subtype, 0, 30), 4) == {"behavior": 0.6886, "preference": 0.7534,
                                                                 "core": 0.7764}[subtype]


def test_the_spacing_effect_slows_decay():
    assert effective_lambda("behavior", 10) == pytest.approx(0.0025)  # 0.005 / (1 + 0.1 * 10)
    assert decayed_confidence(0.8, "behavior", 10, 30) == pytest.approx(0.8 * math.exp(-0.075))  # 0.7422


def test_reinforcement_and_contradiction_weigh_quality():
    assert reinforce(0.5, "A") == pytest.approx(0.6)    # 0.5 + 0.5 * 0.2 * 1.0
    assert reinforce(0.5, "D") == pytest.approx(0.52)   # 0.5 + 0.5 * 0.2 * 0.2
    assert contradict(0.5, "A") == pytest.approx(0.35)  # 0.5 * (1 - 0.3)
    assert contradict(0.5, "C") == pytest.approx(0.44)  # 0.5 * (1 - 0.3 * 0.4)


def test_two_good_observations_in_its_window_make_a_trend_a_shown_trait():
    """Every stage the evidence earned at once: the second B observation makes a trend a candidate and,
    with confidence 0.41 and two supports, emerging (docs/reflection.md: emerging at (0.4, 2))."""
    state = TraitState("behavior", "trend", 0.2, 0, 0, 0, None, NOW + timedelta(days=14))
    state = apply_evidence(state, kind="supporting", quality="B", now=NOW)
    assert state.stage == "trend" and state.confidence == pytest.approx(0.312)  # 0.2 + 0.8*0.2*0.7
    state = apply_evidence(state, kind="supporting", quality="B", now=NOW)
    assert state.stage == "emerging" and state.supporting == 2


def test_two_plain_observations_make_only_a_candidate():
    state = TraitState("preference", "trend", 0.2, 0, 0, 0, None, NOW + timedelta(days=14))
    for _ in range(2):
        state = apply_evidence(state, kind="supporting", quality="C", now=NOW)
    assert state.stage == "candidate" and state.confidence < 0.4


@pytest.mark.parametrize("stage, confidence, supporting, expected", [
    ("trend", 0.41, 2, "emerging"),     # climbs as far as its evidence goes
    ("trend", 0.7, 5, "established"),
    ("trend", 0.3, 2, "candidate"),
    ("trend", 0.5, 1, "trend"),
    ("emerging", 0.2, 3, "candidate"),  # down: one step at a time
])
def test_earned_stage(stage, confidence, supporting, expected):
    assert earned_stage(stage=stage, confidence=confidence, supporting=supporting, now=NOW,
                        window_end=NOW + timedelta(days=1)) == expected


def test_a_trend_whose_window_ends_dissolves():
    assert next_stage(stage="trend", confidence=0.3, supporting=1, now=NOW,
                      window_end=NOW - timedelta(seconds=1)) == "dissolved"
    assert next_stage(stage="trend", confidence=0.3, supporting=1, now=NOW,
                      window_end=NOW + timedelta(days=1)) == "trend"


def test_promotion_needs_confidence_and_evidence():
    assert next_stage(stage="candidate", confidence=0.5, supporting=2, now=NOW, window_end=None) == "emerging"
    assert next_stage(stage="candidate", confidence=0.39, supporting=2, now=NOW, window_end=None) == "candidate"
    assert next_stage(stage="candidate", confidence=0.5, supporting=1, now=NOW, window_end=None) == "candidate"
    assert next_stage(stage="emerging", confidence=0.7, supporting=5, now=NOW, window_end=None) == "established"
    assert next_stage(stage="established", confidence=0.9, supporting=10, now=NOW, window_end=None) == "core"
    assert next_stage(stage="established", confidence=0.9, supporting=9, now=NOW, window_end=None) == "established"


def test_demotion_has_hysteresis_and_weak_traits_dissolve():
    assert next_stage(stage="established", confidence=0.60, supporting=6, now=NOW, window_end=None) == "established"
    assert next_stage(stage="established", confidence=0.54, supporting=6, now=NOW, window_end=None) == "emerging"
    assert next_stage(stage="emerging", confidence=0.04, supporting=6, now=NOW, window_end=None) == "dissolved"


def test_a_reinforced_behavior_lifts_into_a_preference_within_depth():
    assert should_lift_to_preference(subtype="behavior", stage="established", reinforcements=5, depth=0)
    assert not should_lift_to_preference(subtype="behavior", stage="emerging", reinforcements=9, depth=0)
    assert not should_lift_to_preference(subtype="preference", stage="core", reinforcements=9, depth=0)
    assert not should_lift_to_preference(subtype="behavior", stage="core", reinforcements=9, depth=3)


def test_repeated_contradictions_in_one_context_split_the_trait():
    assert should_split({"work": 3, "personal": 1}, "personal") == "work"
    assert should_split({"work": 2, "personal": 2}, "general") is None
    assert should_split({"general": 5}, "general") is None
