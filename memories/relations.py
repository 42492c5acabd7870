"""Whom a statement or a stored memory is about: the user, or someone in the user's life.

A memory is written with the user's name ("Marcus lives in Leeds", "林晓雨周末去滨江跑步"), and one about
someone else names them after it ("Marcus's sister Ana lives in Bristol", "林晓雨的妈妈腿不好") or opens with
their name ("Ana moved to Glasgow"). What someone said in the first person names them the same way ("my
boyfriend moved to Shanghai", "我婆婆住院了"). `whom` reads that into a set of identifiers (a relation code,
the same for every language and spelling, and the person's name when given): empty for the user. Two texts
are about the same person when both sets are empty or they share one identifier ("sister" and "ana").

Issue 52: a boyfriend's move retired the user's own move, a mother's health was the user's; a replacement
now needs the same person (dedupe.same_person).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

# Relation code -> the words for it (English, then Chinese). The code is what two texts compare.
RELATION_WORDS: dict[str, tuple[str, ...]] = {
    "mother": ("mother", "mom", "mum", "mommy", "mummy", "mama", "mam", "mammy", "妈妈", "母亲", "老妈", "妈",
               "妈咪"),
    "father": ("father", "dad", "daddy", "papa", "pops", "baba", "da", "爸爸", "父亲", "老爸", "爸", "老爹"),
    "parents": ("parents", "父母", "爸妈"),
    "partner": ("wife", "husband", "partner", "girlfriend", "boyfriend", "fiancé", "fiancée", "fiance", "fiancee",
                "spouse", "hubby", "missus", "妻子", "老婆", "丈夫", "老公", "爱人", "女朋友", "男朋友", "对象",
                "未婚夫", "未婚妻", "老伴", "媳妇", "另一半"),
    "ex_partner": ("ex", "ex-wife", "ex-husband", "ex-girlfriend", "ex-boyfriend", "ex-partner", "前夫", "前妻",
                   "前男友", "前女友", "前任"),
    "son": ("son", "儿子"),
    "daughter": ("daughter", "女儿", "闺女"),
    "child": ("kid", "kids", "child", "children", "baby", "孩子", "宝宝", "小孩"),
    "brother": ("brother", "哥哥", "弟弟", "哥", "弟"),
    "sister": ("sister", "姐姐", "妹妹", "姐", "妹"),
    "grandmother": ("grandmother", "grandma", "granny", "nan", "nana", "奶奶", "外婆", "姥姥"),
    "grandfather": ("grandfather", "grandpa", "grandad", "爷爷", "外公", "姥爷"),
    "mother_in_law": ("mother-in-law", "婆婆", "岳母", "丈母娘"),
    "father_in_law": ("father-in-law", "公公", "岳父", "老丈人"),
    "aunt": ("aunt", "auntie", "阿姨", "姑姑", "姨妈", "舅妈", "小姨", "大姨", "姑妈", "婶婶"),
    "uncle": ("uncle", "叔叔", "舅舅", "伯伯", "姑父", "姨夫"),
    "cousin": ("cousin", "表哥", "表姐", "表弟", "表妹", "堂哥", "堂姐", "堂弟", "堂妹"),
    "niece_nephew": ("niece", "nephew", "侄子", "侄女", "外甥", "外甥女"),
    "friend": ("friend", "best friend", "mate", "bestie", "朋友", "好朋友", "闺蜜", "哥们", "最好的朋友"),
    "boss": ("boss", "manager", "supervisor", "老板", "领导", "上司"),
    "colleague": ("colleague", "coworker", "co-worker", "同事"),
    "roommate": ("roommate", "flatmate", "housemate", "室友", "舍友"),
    "neighbour": ("neighbour", "neighbor", "邻居"),
    "pet": ("dog", "cat", "puppy", "kitten", "hamster", "rabbit", "bunny", "parrot", "budgie", "tortoise", "pony",
            "goldfish", "collie", "spaniel", "labrador", "terrier", "retriever", "greyhound", "whippet", "beagle",
            "狗", "猫", "狗狗", "狗子", "猫咪", "兔子", "仓鼠", "鹦鹉", "乌龟", "金毛", "柯基", "泰迪", "哈士奇",
            "布偶猫", "橘猫"),
}
CODE_OF: dict[str, str] = {word.casefold(): code for code, words in RELATION_WORDS.items() for word in words}

_EN_WORDS = sorted((w for w in CODE_OF if not re.search(r"[\u4e00-\u9fff]", w)), key=len, reverse=True)
_ZH_WORDS = sorted((w for w in CODE_OF if re.search(r"[\u4e00-\u9fff]", w)), key=len, reverse=True)
_EN_RELATION = "|".join(re.escape(w) + "s?" for w in _EN_WORDS)
_ZH_RELATION = "|".join(re.escape(w) for w in _ZH_WORDS)
# "my sister", "my older sister Ana", "Marcus's mum", "User's best friend Lena"
_EN_OWNED = re.compile(rf"^(?:(?:and|but|also|so|oh|btw|actually)[,]?\s+)*(?P<owner>my|[\w.-]+(?: [\w.-]+)?'s)\s+"
                       rf"(?:(?:older|younger|big|little|elder|twin|best|new|ex-?)\s+)?(?P<relation>{_EN_RELATION})\b"
                       rf"(?:,?\s+(?P<name>(?-i:[A-Z][a-z]+))\b)?", re.I)
_ZH_OWNED = re.compile(rf"^(?:其实|对了|还有|所以|但是|然后)?[，,]?(?P<owner>我的?|[^\s的，。,]{{1,8}}的)"
                       rf"(?P<relation>{_ZH_RELATION})")
SOMEONE = "someone"  # a person spoken of by a pronoun only: not the user, and no one in particular
_PRONOUN_SUBJECT = re.compile(r"^(?:he|she|they|him|her)(?:'s|'d|'ll|'re)?\b|^(?:他|她)(?!们)", re.I)
_ZH_RELATION_AT = re.compile(rf"(?:{_ZH_RELATION})")
# A text that opens with someone's name: "Ana moved to Glasgow", "Ana's new job".
_EN_NAMED = re.compile(r"^(?:(?:and|but|also|so|oh|btw|actually)[,]?\s+)*(?P<name>[A-Z][a-z]{1,})(?:'s\b|\s+(?=[a-z]))")
_NOT_A_NAME = frozenset("i the this that it my we you they he she there what when where why how yes yeah no ok okay "
                        "thanks sorry monday tuesday wednesday thursday friday saturday sunday today tomorrow "
                        "yesterday also but and so oh btw just please big quick one again actually user".split())


_LEAD_IN = re.compile(r"^[A-Za-z ]{2,15}:\s+(?=\S)|^[\u4e00-\u9fff]{1,6}[：:]\s*(?=\S)")  # "Big news: ", "好消息："


def relation_code(word: str) -> str:
    """The code of a relation word ("mum" -> "mother", "老公" -> "partner"), or "" for none."""
    word = word.casefold().strip()
    return CODE_OF.get(word) or CODE_OF.get(word.rstrip("s"), "")


def whom(text: str, names: Iterable[str] = ()) -> frozenset[str]:
    """Who the text is about: empty for the user (whose `names` the memories are written with), else the
    other person's relation code and, when given, their name (lower case)."""
    own = {n.casefold() for n in names if n}
    stripped = _LEAD_IN.sub("", text.strip())
    if match := _ZH_OWNED.match(stripped):  # "我婆婆…", "林晓雨的妈妈…": the relative, whoever's they are
        return frozenset({relation_code(match.group("relation"))})
    if match := _EN_OWNED.match(stripped):
        code, name = relation_code(match.group("relation")), match.group("name")
        return frozenset({code, name.casefold()} if name and name.casefold() not in _NOT_A_NAME else {code})
    if _PRONOUN_SUBJECT.match(stripped):  # "He's basically living here now": someone, not the user
        return frozenset({SOMEONE})
    for name in own:  # "林晓雨妈上个月…", "陈静婆婆回东北了": the relation right after the user's name
        if stripped.casefold().startswith(name) and (match := _ZH_RELATION_AT.match(stripped[len(name):])):
            return frozenset({relation_code(match.group(0))})
    if match := _EN_NAMED.match(stripped):
        name = match.group("name").casefold()
        if relation_code(name):  # "Dad's finally retired", "Mum is"
            return frozenset({relation_code(name)})
        if name not in own and name not in _NOT_A_NAME:
            return frozenset({name})
    return frozenset()


def opening_relation_zh(text: str) -> str:
    """The relation word a Chinese clause opens with as its subject ("我婆婆腰不好" -> "婆婆"), or ""."""
    match = _ZH_OWNED.match(_LEAD_IN.sub("", text.strip()))
    return match.group("relation") if match else ""


def same_person(a: frozenset[str], b: frozenset[str]) -> bool:
    """Whether two `whom` readings are one person: both the user, or one identifier in common."""
    return a == b or bool(a & b)
