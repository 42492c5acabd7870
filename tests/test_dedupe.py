"""decide(candidate, neighbours): the whole ADD / UPDATE / INVALIDATE / DELETE / NOOP rule, table-driven."""

import pytest

from memories.dedupe import ADD, DELETE, INVALIDATE, NOOP, UPDATE, Neighbour, Proposal, decide

TEA = Neighbour("m-tea", "Alice likes green tea in the morning.", 0.97)
PORTO = Neighbour("m-porto", "Alice lives in Porto.", 0.40, key="residence", value="porto")
KIDS = Neighbour("m-kids", "Alice has two kids.", 0.96)
JAZZ = Neighbour("m-jazz", "Alice loves jazz.", 0.55)
PEANUTS_ZH = Neighbour("m-zh", "爱丽丝对花生过敏", 0.62)

CASES = [
    # (what, candidate, neighbours, operation, target)
    ("new information", Proposal("Alice plays the cello."), [JAZZ], ADD, None),
    ("nothing near", Proposal("Alice plays the cello."), [], ADD, None),
    ("the same text", Proposal("Alice likes green tea in the morning."), [TEA], NOOP, "m-tea"),
    ("a restatement with nothing new", Proposal("Alice likes green tea."), [TEA], NOOP, "m-tea"),
    ("a richer near duplicate", Proposal("Alice likes green tea in the morning with honey."), [TEA], UPDATE, "m-tea"),
    ("a shorter correction", Proposal("Alice has three kids."), [KIDS], UPDATE, "m-kids"),
    ("a slot's same value", Proposal("Alice lives in Porto now.", key="residence", value="porto"), [PORTO], NOOP,
     "m-porto"),
    ("a slot's new value", Proposal("Alice lives in Lisbon.", key="residence", value="lisbon"), [PORTO], INVALIDATE,
     "m-porto"),
    ("a named contradiction", Proposal("Alice hates jazz.", contradicts="m-jazz"), [JAZZ], INVALIDATE, "m-jazz"),
    ("a named contradiction not among the neighbours", Proposal("Alice hates jazz.", contradicts="gone"), [JAZZ],
     ADD, None),
    ("forget what is remembered", Proposal("Alice loves jazz", forget=True), [TEA, JAZZ], DELETE, "m-jazz"),
    ("forget by shared words", Proposal("爱丽丝对花生过敏", forget=True), [PEANUTS_ZH], DELETE, "m-zh"),
    ("forget what is not remembered", Proposal("Alice owns a boat", forget=True),
     [Neighbour("m-x", "Alice visited Rome.", 0.2)], NOOP, None),
    ("forget with nothing remembered", Proposal("Alice owns a boat", forget=True), [], NOOP, None),
]


@pytest.mark.parametrize("what, candidate, neighbours, operation, target", CASES, ids=[c[0] for c in CASES])
def test_decide(what, candidate, neighbours, operation, target):
    decision = decide(candidate, neighbours, near_duplicate=0.95)
    assert (decision.operation, decision.target) == (operation, target), decision.reason
    assert decision.reason
