"""Table tests for the pure parts of people (issue 53): mentions, relation normalisation, alias matching,
edges and relation changes, and the emotion model's manifest."""

import pytest

from memories.emotion import EMOTION_LINES, EMOTION_MODEL_PATH, EmotionModel, corpus_hash, cue_balance
from memories.people.mentions import (
    Mention,
    composed_relation,
    may_change,
    mentions_in,
    relation_change,
    said_before,
    stated_edges,
)
from memories.people.resolve import Known, resolve, unnamed_twin
from memories.relations import relation_code


@pytest.mark.parametrize("word, code", [
    ("mum", "mother"), ("Mom", "mother"), ("妈妈", "mother"), ("老公", "partner"), ("wife", "partner"),
    ("婆婆", "mother_in_law"), ("mother-in-law", "mother_in_law"), ("sons", "son"), ("闺蜜", "friend"),
    ("领导", "boss"), ("table", ""),
])
def test_relation_words_are_one_code_in_every_language(word, code):
    assert relation_code(word) == code


@pytest.mark.parametrize("text, expected", [
    ("My mum moved from Leeds to York", [("mother", "", True)]),
    ("Marcus's sister Ana lives in Bristol", [("sister", "Ana", True)]),
    ("I had lunch with my boss Dave", [("boss", "Dave", False)]),
    ("Priya is my cousin", [("cousin", "Priya", True)]),
    ("我婆婆腰不好，每天都要吃药", [("mother_in_law", "", True)]),
    ("林晓雨婆婆腰不好", [("mother_in_law", "", True)]),
    ("我们领导老张人挺好的", [("boss", "老张", True)]),
    ("My 婆婆 is staying with us", [("mother_in_law", "", True)]),
    ("My friend's dog Rex is hilarious", [("friend", "", False), ("other", "Rex", True)]),
    ("I live in Leeds", []),
    ("刘芳就是老伴不爱出门", [("partner", "", True)]),  # a filler after the user's name
    ("我们家老赵以前最爱钓鱼", [("", "老赵", True)]),
    ("Lilymy mom and 婆婆 under one roof", [("mother", "", True), ("mother_in_law", "", False)]),
    ("Three kilos down already", []),
    ("我老公David在南山做游戏", [("partner", "David", True)]),
    ("Mr. Doyle wrote me a reference", [("", "Mr. Doyle", True)]),
    ("楼下王阿姨说她女儿在华西当医生", [("", "王阿姨", False)]),
    ("我在宿舍养了只仓鼠叫团子", [("pet", "团子", False)]),
])
def test_mentions(text, expected):
    found = [(m.code, m.name, m.subject) for m in mentions_in(text, ["Marcus", "林晓雨", "刘芳", "Lily"])
             if not m.known_only]
    assert found == expected


@pytest.mark.parametrize("text, expected", [
    ("Mum moved from Leeds to York last month", [("lives_in", "York", "Leeds")]),
    ("My sister lives in Bristol", [("lives_in", "Bristol", "")]),
    ("He got a job at Google", [("works_at", "Google", "")]),
    ("我哥跳槽去了腾讯", [("works_at", "腾讯", "")]),
    ("我爸妈去年从哈尔滨搬到了三亚", [("lives_in", "三亚", "哈尔滨")]),
    ("我们搬到了新家", []),
    ("I moved to a new flat", []),
])
def test_stated_edges(text, expected):
    assert [(e.predicate, e.value, e.before) for e in stated_edges(text)] == expected


@pytest.mark.parametrize("text, current, expected", [
    ("Tom and I broke up last week", "partner", "ex_partner"),
    ("我和男朋友分手了", "partner", "ex_partner"),
    ("We got engaged!", "friend", "partner"),
    ("We broke up", "friend", ""),
    ("Tom is doing well", "partner", ""),
])
def test_relation_changes(text, current, expected):
    assert relation_change(text, current) == expected


@pytest.mark.parametrize("current, new, allowed", [
    ("partner", "ex_partner", True), ("", "sister", True), ("sister", "sister", True), ("friend", "sister", False),
    ("mother", "boss", False),
])
def test_which_relation_changes_need_no_reviewer(current, new, allowed):
    assert may_change(current, new) is allowed


MUM = Known("m", name="Sheila", relation="mother", keys=frozenset({"sheila", "mum"}), recency=1)
ANA_FRIEND = Known("a", name="Ana", relation="friend", keys=frozenset({"ana"}), recency=2)
BOSS = Known("b", relation="boss", keys=frozenset({"boss"}), recency=3)
SISTERS = [Known("s1", name="Ana", relation="sister", keys=frozenset({"ana"}), recency=1),
           Known("s2", name="Bea", relation="sister", keys=frozenset({"bea"}), recency=5)]


@pytest.mark.parametrize("mention, known, person, name", [
    (Mention(code="mother", word="Mom"), [MUM], "m", "Sheila"),  # another word, another language: the same
    (Mention(code="mother", word="妈妈"), [MUM], "m", "Sheila"),
    (Mention(name="Sheila", subject=True), [MUM], "m", "Sheila"),
    (Mention(code="sister", word="sister", name="Ana"), [ANA_FRIEND], None, "Ana"),  # not the friend Ana
    (Mention(code="boss", word="boss", name="Dave"), [BOSS], "b", "Dave"),  # the boss gets a name
    (Mention(code="sister", word="sister"), SISTERS, "s2", "Bea"),  # the sister spoken of last
    (Mention(code="brother", word="brother"), [MUM], None, ""),
])
def test_resolution(mention, known, person, name):
    resolution = resolve(mention, known)
    assert resolution is not None and resolution.person == person and resolution.name == name


def test_the_same_name_with_another_relation_is_someone_new_a_reviewer_may_merge():
    resolution = resolve(Mention(code="sister", word="sister", name="Ana"), [ANA_FRIEND])
    assert resolution is not None and resolution.person is None and resolution.maybe == "a"


def test_a_capitalised_word_nobody_is_called_is_no_one():
    assert resolve(Mention(name="York", known_only=True), [MUM]) is None


def test_the_emotion_model_was_trained_on_the_corpus_it_ships_with():
    """Fails when emotion_lines.jsonl changed without `manage.py train_emotion_model`."""
    model = EmotionModel.load(EMOTION_MODEL_PATH)
    assert model.corpus == corpus_hash(EMOTION_LINES)
    assert model.scores["held_out_lines"] > 100


@pytest.mark.parametrize("owner, relation, expected", [
    ("partner", "mother", "mother_in_law"), ("partner", "father", "father_in_law"), ("friend", "mother", ""),
    ("sister", "partner", ""),
])
def test_a_relatives_relative(owner, relation, expected):
    assert composed_relation(owner, relation) == expected


def test_a_name_glued_to_the_next_is_read_as_the_next():
    assert [(m.name, m.subject) for m in mentions_in("LilyShe says she has time", ["Lily"])] == []
    assert [m.name for m in mentions_in("用户Maria跟着过来了", [])][:1] == ["Maria"]


@pytest.mark.parametrize("text, balance", [
    ("Sophie got into Oxford!! So proud 🎉", 2), ("My mum is in hospital, I'm so worried", -2),
    ("我妈最近身体不太好，有点担心", -1), ("太好了，终于搬家了", 2), ("My sister lives in Bristol", 0),
])
def test_words_of_feeling(text, balance):
    assert cue_balance(text) == balance


@pytest.mark.parametrize("person, known, twin", [
    (Known("n", name="刘洋", relation="partner"), [Known("u", relation="partner")], "u"),
    (Known("n", name="刘洋", relation="partner"), [Known("u", name="Tom", relation="partner")], None),
    (Known("n", name="Ana", relation="sister"), [Known("u", relation="sister")], None),  # two sisters may be
    (Known("n", relation="partner"), [Known("u", relation="partner")], None),
])
def test_a_named_one_of_a_kind_and_an_unnamed_one_are_one(person, known, twin):
    assert unnamed_twin(person, [person, *known]) == twin


@pytest.mark.parametrize("statement, turn, clause", [
    ("林晓雨走不了太远", "我妈腿不好，走不了太远", "我妈腿不好"),
    ("林晓雨每天都要吃药", "我婆婆腰不好，每天都要吃药，最近又说疼得睡不着", "我婆婆腰不好"),
    ("林晓雨最近很累", "我妈腿不好，我最近很累", ""),  # the speaker's own
    ("林晓雨喜欢跑步", "林晓雨喜欢跑步", ""),  # nothing before it
    ("User can't walk far", "My mum has a bad knee, can't walk far", "My mum has a bad knee"),
])
def test_the_clause_a_statement_continues(statement, turn, clause):
    assert said_before(statement, turn, ["林晓雨", "User"]) == clause


def _view(name, relation, word, aliases):
    from memories.models import Person
    from memories.people.selectors import PersonView
    return PersonView(Person(name=name, relation=relation, relation_word=word), aliases=aliases)


@pytest.mark.parametrize("text, view, phrase", [
    ("Owen's partner Gwen runs a bakery in Penarth", _view("Gwen", "partner", "partner", ["Gwen"]),
     "runs a bakery in Penarth"),
    ("周蕾的儿子豆豆今年上幼儿园了", _view("豆豆", "son", "儿子", ["豆豆", "儿子"]), "今年上幼儿园了"),
    ("Marcus's mum Sheila is diabetic.", _view("Sheila", "mother", "mum", ["Sheila", "mum"]), "is diabetic"),
    ("Sheila teaches maths to her mum's friends", _view("Sheila", "mother", "mum", ["Sheila"]),
     "teaches maths to her mum's friends"),
    ("Gwen", _view("Gwen", "partner", "partner", ["Gwen"]), ""),  # a fragment that only names her: no line part
])
def test_what_a_people_line_says_of_a_fact(text, view, phrase):
    from memories.people.selectors import _fact_phrase
    assert _fact_phrase(text, view) == phrase
