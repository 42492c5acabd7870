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


# Issue 52: a correction replaces the same person's memory about the same matter, and only it.
ME, SISTER, PARTNER = frozenset(), frozenset({"sister", "ana"}), frozenset({"partner"})
LEEDS = Neighbour("m-leeds", "Marcus lives in Leeds", 0.7, meaning=0.62, slot="home", about=ME)
NURSE = Neighbour("m-nurse", "Marcus works as a nurse at St James's", 0.6, meaning=0.58, slot="work", about=ME)
ANA_BRISTOL = Neighbour("m-ana", "Marcus's sister Ana lives in Bristol", 0.7, meaning=0.66, slot="home", about=SISTER)
SHORT = Neighbour("m-wish", "林晓雨对助手回答的要求：回答简短一点", 0.5, meaning=0.52, slot="answer_style", about=ME)
HANGZHOU = Neighbour("m-hz", "林晓雨住在杭州", 0.7, meaning=0.7, slot="home", about=ME)

REPLACEMENTS = [
    ("a job change never retires a home", Proposal("Marcus started at the Co-op warehouse", replaces=True,
                                                   slot="work", about=ME), [LEEDS, NURSE], INVALIDATE, "m-nurse"),
    ("a job change with no job remembered adds", Proposal("Marcus started at the Co-op warehouse", replaces=True,
                                                          slot="work", about=ME), [LEEDS], ADD, None),
    ("the user's move retires the user's home, not the sister's",
     Proposal("Marcus moved to York", replaces=True, slot="home", about=ME), [ANA_BRISTOL, LEEDS], INVALIDATE,
     "m-leeds"),
    ("the sister's move retires hers, not the user's",
     Proposal("Marcus's sister Ana moved to Glasgow", replaces=True, slot="home", about=SISTER), [LEEDS, ANA_BRISTOL],
     INVALIDATE, "m-ana"),
    ("the sister named alone is the sister", Proposal("Ana moved to Glasgow", replaces=True, slot="home",
                                                      about=frozenset({"ana"})), [LEEDS, ANA_BRISTOL], INVALIDATE,
     "m-ana"),
    ("a boyfriend's move never retires the user's home",
     Proposal("林晓雨的男朋友搬到上海了", replaces=True, slot="home", about=PARTNER), [HANGZHOU], ADD, None),
    ("a move never retires a wish about the answers",
     Proposal("所以林晓雨也搬到上海了", replaces=True, slot="home", about=ME), [SHORT], ADD, None),
    ("a move with an unread slot never retires a wish about the answers",
     Proposal("所以林晓雨也搬到上海了", replaces=True, slot="other", about=ME), [SHORT], ADD, None),
    ("a wish about the answers replaces the wish", Proposal("林晓雨对助手回答的要求：详细一点", replaces=True,
                                                         slot="answer_style", about=ME), [SHORT], INVALIDATE, "m-wish"),
    ("a routine said as a schedule is one matter",
     Proposal("Marcus swims at 7 now", replaces=True, slot="schedule", about=ME),
     [Neighbour("m-swim", "Marcus swims at 6 every morning", 0.8, meaning=0.8, slot="routine", about=ME)],
     INVALIDATE, "m-swim"),
    ("unread on either side: closeness decides as before",
     Proposal("Marcus moved to York", replaces=True, slot="home"), [ANA_BRISTOL], INVALIDATE, "m-ana"),
    ("a near duplicate of another person's fact is new",
     Proposal("Marcus's mum is diabetic", about=frozenset({"mother"})),
     [Neighbour("m-me", "Marcus is diabetic", 0.97, about=ME)], ADD, None),
]


@pytest.mark.parametrize("what, candidate, neighbours, operation, target", REPLACEMENTS,
                         ids=[c[0] for c in REPLACEMENTS])
def test_a_correction_replaces_the_same_persons_memory_about_the_same_matter(what, candidate, neighbours,
                                                                              operation, target):
    decision = decide(candidate, neighbours, near_duplicate=0.95)
    assert (decision.operation, decision.target) == (operation, target), decision.reason


WHOM = [
    ("Marcus lives in Leeds", set()),
    ("Marcus's sister Ana lives in Bristol", {"sister", "ana"}),
    ("Ana moved to Glasgow", {"ana"}),
    ("my boyfriend moved to Shanghai", {"partner"}),
    ("Big news: my mum is diabetic", {"mother"}),
    ("好消息：我妈出院了", {"mother"}),
    ("User's mum is diabetic", {"mother"}),
    ("My mother-in-law moved in with us", {"mother_in_law"}),
    ("Marcus's best friend Lena is a chef", {"friend", "lena"}),
    ("Marcus's wish for the answers: keep it short", set()),
    ("Priya is diabetic", set()),
    ("林晓雨的妈妈腿不好，走不了太远", {"mother"}),
    ("我婆婆住院了", {"mother_in_law"}),
    ("我老公换工作了", {"partner"}),
    ("所以林晓雨也搬到上海了", set()),
    ("林晓雨对助手回答的要求：简短", set()),
    ("林晓雨的哥们在深圳", {"friend"}),
    ("He's basically living here now", {"someone"}),
    ("她下个月搬走", {"someone"}),
    ("Dad's finally retired from the taxi", {"father"}),
    ("黄建国儿子从上海调回西安了", {"son"}),
    ("刘芳前夫再婚了", {"ex_partner"}),
]


@pytest.mark.parametrize("text, expected", WHOM, ids=[w[0] for w in WHOM])
def test_whom_a_text_is_about(text, expected):
    from memories.relations import whom

    assert set(whom(text, ["Marcus", "林晓雨", "Priya", "黄建国", "刘芳"])) == expected
