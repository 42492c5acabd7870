"""How a trait is worded from what the user said: which statement of a habit reads best, and a Chinese turn
as a trait sentence. Pure functions (table tests in tests/test_trait_wording.py).

A trait's text had been its first evidence's rewrite, whatever that was: one day's report ("Usually finished
the Times crossword at breakfast again, took 40 minutes today"), a fragment ("Usually usual routine"), the
extractor's Chinese rewrite with a name for every 我 ("林静每天晚上睡前我都要看半个小时书"). The best
statement of a habit says how often and no day's detail; a wish is worded as the user last asked for it.
"""

from __future__ import annotations

import re

from memories.extraction.habits import HABIT_OR_AGAIN_EN, HABITUAL_ZH

# What ties a statement to one day: a report of an occasion, not the habit ("today", "this morning",
# "yesterday", "again", "even in the pouring rain", "今天", "今早", "昨晚", "这周", "又").
_ONE_DAY_EN = re.compile(r"\b(?:today|tonight|yesterday|this (?:morning|evening|afternoon|week|weekend)|last "
                         r"(?:night|week|weekend)|again|another|even (?:in|on|with|after|though)|just now)\b", re.I)
_ONE_DAY_ZH = re.compile("今天|今早|今晚|昨天|昨晚|前天|这周|上周|刚才|刚刚|又")
_HABIT_CUE_EN = re.compile(r"\b(?:usually|always|never miss|every|each|most (?:days|mornings|evenings|nights|"
                           r"weekends)|daily|weekly|routine|habit|religiously|without fail|as usual)\b", re.I)


def says_how_often(words: str) -> bool:
    return bool(_HABIT_CUE_EN.search(words) or HABIT_OR_AGAIN_EN.search(words) and not _ONE_DAY_EN.search(words)
                or re.search(HABITUAL_ZH, words))


def ties_to_one_day(words: str) -> bool:
    return bool(_ONE_DAY_EN.search(words) or _ONE_DAY_ZH.search(words))


def wording_rank(words: str) -> tuple[int, int, int]:
    """How well a statement words a habit or liking (higher is better): it says how often, it is not tied to
    one day, and, of the rest, it is short (a sentence, not a story)."""
    return (says_how_often(words), not ties_to_one_day(words), -len(words))


# The opening of a Chinese turn that belongs to the conversation, not to the habit: a greeting, a filler, a
# day ("今天…", "说真的，").
_ZH_OPENING = re.compile(r"^(?:(?:嗯|哈哈|哎|唉|对了|其实|说真的|老实说|话说|跟你说|顺便说一下|"
                         r"今天|今早|今晚|昨天|昨晚|这周|最近)[，,、\s]*)+")
_ZH_CLAUSE = re.compile(r"[，,；;。！!？?~～]+")
_ZH_CUE = re.compile(f"{HABITUAL_ZH}|喜欢|爱|讨厌|受不了|不喜欢|最爱|离不开|坚持|从来|从不|雷打不动|照例|照常|习惯|"
                     "准时|一直|每")


def chinese_trait_text(turn: str) -> str:
    """A Chinese turn as a trait: the clause that says the habit or liking (the one with a word of how often
    or of liking, else the first), without the speaker (a trait has no subject: "我每天坐地铁…" ->
    "每天坐地铁…", "晚上七点半我准时去广场跳舞" -> "晚上七点半准时去广场跳舞"), "我的" as "自己的"."""
    clauses = [c.strip() for c in _ZH_CLAUSE.split(turn) if c.strip()]
    if not clauses:
        return turn.strip()
    chosen = next((c for c in clauses if _ZH_CUE.search(c)), clauses[0])
    chosen = _ZH_OPENING.sub("", chosen) or chosen
    chosen = chosen.replace("我们", "\0").replace("我的", "自己的").replace("我自己", "自己")
    chosen = re.sub(r"^我|(?<=[\u4e00-\u9fff\d点半])我(?=[\u4e00-\u9fff])", "", chosen)
    return chosen.replace("\0", "我们").strip(" ，,")


_ZH_WISH_FRAME = re.compile(r"^.{0,12}?对助手回答的要求[：:]\s*")


def chinese_wish_text(text: str) -> str:
    """A Chinese wish as a trait: "林静对助手回答的要求：别用太多术语" -> "希望回答：别用太多术语"."""
    body = _ZH_WISH_FRAME.sub("", text.strip()).rstrip(" 。.！!")
    return f"希望回答：{body}" if body else text.strip()
