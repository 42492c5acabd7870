"""Who the user is, always at hand: habits said in other words across sessions grow into one shown trait
(by meaning, in English and Chinese), and every context block opens with the user's standing wishes and key
facts, within a quarter of its budget, whatever the question."""

from __future__ import annotations

import pytest

from memories.models import MemoryItem
from memories.writing import MemorySpec, memory_create
from reflection.reflectors import MeaningReflector, said_by_the_user, without_the_user
from tests.conftest import converse, end_session


def _sessions(api, said: list[str], prefix: str, user_id: str = "alice") -> None:
    for number, text in enumerate(said, start=1):
        converse(api, [text, {"role": "assistant", "content": "OK!"}], user_id=user_id,
                 session_id=f"{prefix}-{number}")
        end_session(api, f"{prefix}-{number}", user_id)


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("said, question, words", [
    (["I usually go for a run along the river before work.", "Did my 6am jog along the river again today.",
      "I never skip my morning run by the river, rain or shine."],
     "Any tips for a good breakfast?", ("run", "jog")),
    (["我每天晚上都会去小区楼下散步。", "吃完晚饭我一般都要出去散散步。",
      "饭后散步还是雷打不动，今天走了四十分钟。"],
     "周末有什么好电影推荐吗？", ("散步",)),
], ids=["english", "chinese"])
def test_a_habit_said_in_other_words_in_three_sessions_is_a_trait_agents_see(api, said, question, words):
    _sessions(api, said, "habit")
    behaviours = api.get("users/alice/traits").json()["behavior"]
    shown = [t for t in behaviours if any(w in t["text"] for w in words)]
    assert len(shown) == 1 and shown[0]["supporting"] >= 2, behaviours
    block = api.post("context", {"user_id": "alice", "query": question}).json()["context"]
    assert shown[0]["text"] in block, block


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("wish, fact, later, question, expected", [
    ("Please keep your answers short, bullet points if possible.", "I'm allergic to shellfish.",
     ["We had pizza at Luigi's last Friday.", "My sister recommended a new ramen place downtown.",
      "I tried a Thai curry recipe last weekend.", "Dinner with my colleagues is usually on Thursdays."],
     "Can you suggest a place for dinner tonight?", ("short", "shellfish")),
    ("以后回答简短一点。", "我对花生过敏。",
     ["上周末我们带孩子去了动物园。", "孩子最近很喜欢去科技馆。", "我们家附近新开了一个游乐场。",
      "孩子的学校周六有兴趣班。"],
     "周末带孩子去哪里玩比较好？", ("简短", "花生")),
], ids=["english", "chinese"])
def test_a_wish_and_a_health_fact_said_once_head_the_next_block_whatever_the_question(
        api, wish, fact, later, question, expected):
    converse(api, [wish, {"role": "assistant", "content": "OK"}, fact], session_id="first")
    converse(api, later, session_id="second")  # what the search would rank first for the question
    small = api.post("context", {"user_id": "alice", "query": question, "max_chars": 400}).json()["context"]
    assert all(word in small for word in expected), small  # a quarter of 400 holds one of them
    text = api.post("context", {"user_id": "alice", "query": question, "max_chars": 1000}).json()["context"]
    heading = "### 基本情况" if "### 基本情况" in text else "### Profile"
    profile = text.split(heading + "\n", 1)[1].split("\n###", 1)[0] if heading in text else ""
    assert all(word in profile for word in expected), text


def _remember(tenant, text: str, *, tags: list[str], session_id: str) -> MemoryItem:
    return memory_create(tenant=tenant, actor="t", spec=MemorySpec(
        user_id="alice", text=text, tags=tags, session_id=session_id)).memory


@pytest.mark.parametrize("first, second, together", [
    ("Alice usually runs along the river before work", "Alice did her 6am jog along the river again", True),
    ("Alice usually runs along the river before work", "Alice swims at the lido every Saturday", False),
    ("周梅每天晚上都会去小区楼下散步", "周梅吃完晚饭一般都要出去走一走", True),
    ("周梅每天早上七点带狗下楼遛一圈", "周梅每天晚上看电视的时候给猫梳毛", False),
    ("Alice usually walks after dinner", "周梅吃完晚饭一般都要出去走一走", True),  # one habit, two languages
], ids=["paraphrase", "another habit", "Chinese paraphrase", "Chinese near miss", "across languages"])
def test_evidence_is_grouped_by_meaning(tenant_a, first, second, together):
    memories = [_remember(tenant_a, first, tags=["habit"], session_id="s1"),
                _remember(tenant_a, second, tags=["habit"], session_id="s2")]
    hints = MeaningReflector().reflect([memories], [])
    assert (len(hints) == 1) == together, [(h.text, [m.text for m in h.supports]) for h in hints]


def test_support_counts_once_per_session(tenant_a):
    memories = [_remember(tenant_a, "Alice usually runs before work", tags=["habit"], session_id="s1"),
                _remember(tenant_a, "Alice always runs before work, it clears her head", tags=["habit"],
                          session_id="s1")]
    (hint,) = MeaningReflector().reflect([memories], [])
    assert hint.supports == memories[:1] and hint.repeats == memories[1:]


def test_the_profile_stays_within_a_quarter_of_the_block(api):
    said = ["My name is Alice.", "I live in Porto.", "I work as a nurse at the city hospital.",
            "I'm allergic to peanuts.", "I'm vegetarian.", "My husband Tom is a teacher.",
            "Please keep your answers short.", "Please answer in English even when I write Portuguese.",
            "Please don't recommend anything from Amazon."]
    converse(api, said, session_id="facts")
    for budget in (400, 1000, 2000):
        block = api.post("context", {"user_id": "alice", "query": "What should I cook tonight?",
                                     "max_chars": budget}).json()
        text = block["context"]
        assert len(text) <= budget
        profile = text.split("### Profile\n", 1)[1].split("\n###", 1)[0] if "### Profile" in text else ""
        assert profile and len("### Profile\n" + profile) <= budget // 4, text


def test_a_chinese_block_fills_its_budget_as_an_english_one_does(api):
    people = ("表哥", "舅舅", "姑姑", "同事小王", "大学室友", "邻居老李", "前老板", "师兄", "发小", "堂妹")
    cities = ("杭州", "苏州", "南京", "成都", "西安", "厦门", "青岛", "昆明", "长沙", "武汉")
    doings = ("开了一家面馆", "在医院当护士", "养了两只猫", "正在学开车", "刚买了新房", "每周踢足球",
              "在银行上班", "准备考研", "开出租车", "教小学数学")
    facts = [f"我{people[i]}住在{cities[(i + k) % 10]}，{doings[(i + 3 * k) % 10]}"
             for i in range(10) for k in range(6)]
    saved = api.post("memories/batch", {"memories": [{"user_id": "alice", "text": t} for t in facts]})
    assert saved.status_code in (200, 201, 207), saved.content
    block = api.post("context", {"user_id": "alice", "query": "我出差的时候一般住哪家酒店？",
                                 "max_chars": 2000}).json()["context"]
    # 16 lines (max_chars / 125, before) used about a quarter of it; near-duplicates still fold together.
    assert len(block) >= 0.75 * 2000, (len(block), block)


@pytest.mark.parametrize("text, expected", [
    ("Usually swims at the pool before User's shift", "Usually swims at the pool before their shift"),
    ("Usually Saturdays User cycles out to the Mendips", "Usually Saturdays cycles out to the Mendips"),
    ("每个周日早上用户都去人民公园打羽毛球", "每个周日早上都去人民公园打羽毛球"),
    ("经常陪用户的女儿练琴", "经常陪自己的女儿练琴"),
])
def test_a_trait_has_no_placeholder_for_the_user(text, expected):
    assert without_the_user(text) == expected


@pytest.mark.parametrize("text, names, expected", [
    ("Maria usually runs at dawn", ("Maria",), "User usually runs at dawn"),
    ("I just take a look at the sunset", ("u",), "I just take a look at the sunset"),  # the user id "u"
    ("u likes tea", ("u",), "User likes tea"),
    ("Annabel told Ann about tea", ("Ann",), "Annabel told User about tea"),
    ("刘国栋每天游泳", ("刘国栋",), "用户每天游泳"),
])
def test_the_users_name_is_replaced_as_a_whole_word(text, names, expected):
    assert said_by_the_user(text, names) == expected


@pytest.mark.parametrize("text, expected", [
    ("User is allergic to cats", "Maria is allergic to cats"),
    ("User's wish for the answers: keep them short", "Maria's wish for the answers: keep them short"),
    ("Maria read them on User's phone", "Maria read them on Maria's phone"),
    ("Users of the app like it", "Users of the app like it"),  # the word, not the placeholder
    ("用户周末去滨江跑步", "Maria周末去滨江跑步"),
    ("用户的妈妈腿不好", "Maria的妈妈腿不好"),
    ("她在做用户体验设计", "她在做用户体验设计"),  # the word "user experience", not the placeholder
])
def test_a_line_kept_before_the_name_was_given_reads_with_the_name(text, expected):
    from memories.context import with_the_users_name

    assert with_the_users_name(text, "Maria") == expected


@pytest.mark.parametrize("text, alone", [("Maria's name is Maria", True), ("Maria叫Maria", True),
                                         ("Maria's name is on the lease", False), ("Maria is Maria's friend", False)])
def test_a_line_that_only_repeats_the_title_s_name_is_left_out(text, alone):
    from memories.context import only_names

    assert only_names(text, "Maria") is alone


def test_the_block_calls_the_user_by_the_name_given_later(api):
    converse(api, ["I'm allergic to cats."], user_id="alice", session_id="before-the-name")
    converse(api, ["My name is Maria."], user_id="alice", session_id="the-name")
    assert MemoryItem.objects.filter(user_id="alice", text__startswith="User").exists()  # kept as said then
    block = api.post("context", {"user_id": "alice", "query": "Can I get a kitten?"}).json()["context"]
    assert "Maria" in block and "allergic to cats" in block and "User" not in block, block


def test_the_profile_shows_one_line_per_person_for_a_slot_that_holds_one_value():
    from memories.profile import profile_order
    from memories.vocabulary import SLOT_KEY

    def fact(text: str, slot: str) -> MemoryItem:
        return MemoryItem(text=text, data={SLOT_KEY: slot}, tags=[])

    newest_first = [fact("Marcus lives in York now", "home"), fact("Marcus's sister Ana lives in Bristol", "home"),
                    fact("Marcus lives in Leeds", "home"), fact("Marcus works at the Co-op warehouse", "work"),
                    fact("Marcus works as a nurse at St James's", "work"), fact("Marcus is vegetarian", "diet"),
                    fact("Marcus avoids dairy", "diet")]
    assert [m.text for m in profile_order(newest_first)] == [
        "Marcus is vegetarian", "Marcus avoids dairy",  # diet holds more than one thing
        "Marcus lives in York now", "Marcus's sister Ana lives in Bristol",
        "Marcus works at the Co-op warehouse"]
