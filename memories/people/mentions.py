"""Who a text names, and what it says holds of them: pure readings of one text, no database.

`mentions_in` finds the people (and pets) a user's turn or a stored memory names: "my mum", "Marcus's sister
Ana", "我婆婆", "林晓雨的妈妈", "my boss Dave", "Ana is my cousin", "我们领导叫老张". Each mention carries the
relation code (the same for "mum", "Mom" and "妈妈": relations.RELATION_WORDS), the user's own word, the name
when one is given, and whether it is the text's subject. A capitalised word elsewhere is only a candidate
name (`known_only`): it counts when the user already named someone so ("I had lunch with Ana"), because a
capitalised word is as often a place or a brand.

`stated_edges` reads where someone lives or works, and where they moved from ("moved from Leeds to York",
"从哈尔滨搬到了三亚", "跳槽去了腾讯"). `relation_change` reads a change of relation ("we broke up", "分手了").
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from lemminflect import getAllLemmas

from memories.relations import CODE_OF, RELATION_WORDS, relation_code
from memories.text import chinese_person_names
from memories.vocabulary import UNKNOWN_SPEAKER

_HAN = re.compile(r"[\u4e00-\u9fff]")
_EN_WORDS = sorted((w for w in CODE_OF if not _HAN.search(w)), key=len, reverse=True)
_ZH_WORDS = sorted((w for w in CODE_OF if _HAN.search(w)), key=len, reverse=True)
_EN_RELATION = "|".join(re.escape(w) + "s?" for w in _EN_WORDS)
_ZH_RELATION = "|".join(re.escape(w) for w in _ZH_WORDS)
_ADJECTIVE = r"(?:(?:older|younger|big|little|elder|twin|best|new|old|eldest|oldest|youngest|baby|ex-?|late)\s+)?"
_NAME = r"(?-i:[A-Z][a-z]+(?:-[A-Z][a-z]+)?)"
_ZH_NAME = r"(?:老|小|阿)[\u4e00-\u9fff]|[\u4e00-\u9fff]{2,3}"

# "my (older) sister (Ana)", "Marcus's mum", "my boss, Dave"
_EN_OWNED = re.compile(rf"\b(?P<owner>my|our|{_NAME}'s)\s+{_ADJECTIVE}(?P<relation>{_EN_RELATION})\b(?!')"
                       rf"(?:,?\s+(?P<name>{_NAME})\b(?!'s\s+(?:{_EN_RELATION})))?", re.I)
# "my friend's dog Rex", "my sister's husband": someone of a relative's, not the user's own
_EN_THEIRS = re.compile(rf"\b(?:my|our)\s+{_ADJECTIVE}(?P<owner>{_EN_RELATION})'s?\s+{_ADJECTIVE}"
                        rf"(?P<relation>{_EN_RELATION})\b(?:,?\s+(?P<name>{_NAME})\b)?", re.I)
# "Her brother Leo", "his dog Rex": someone of the person spoken of before
_THEIRS = re.compile(rf"\b(?P<owner>his|her|their)\s+{_ADJECTIVE}(?P<relation>{_EN_RELATION})\b(?!')"
                     rf"(?:,?\s+(?P<name>{_NAME})\b)?", re.I)
# "My 婆婆 is staying with us": English with the Chinese word for the relation
_MIXED_OWNED = re.compile(rf"\b(?:my|our)\s*(?P<relation>{_ZH_RELATION})", re.I)
# "Ana is my cousin", "Dave, my boss,"
_EN_NAME_IS = re.compile(rf"\b(?P<name>{_NAME})(?:\s+is|,)\s+(?:my|our)\s+{_ADJECTIVE}(?P<relation>{_EN_RELATION})\b",
                         re.I)
# "my mum is called Sheila", "my boss's name is Dave"
_EN_CALLED = re.compile(rf"\bmy\s+{_ADJECTIVE}(?P<relation>{_EN_RELATION})(?:'s name is|\s+is (?:called|named))\s+"
                        rf"(?P<name>{_NAME})", re.I)
# "Mum said", "Dad's retired": a relation word used as a name, capitalised
_EN_TITLE = re.compile(r"\b(?P<relation>(?-i:Mum|Mom|Mummy|Mommy|Mama|Mam|Dad|Daddy|Papa|Pops|Baba|Da|Grandma|"
                       r"Grandpa|Granny|Nana|Nan|Grandad))\b")
_ZH_OWNED = re.compile(rf"(?P<owner>我们?的?|[\u4e00-\u9fffA-Za-z]{{1,6}}的)(?P<relation>{_ZH_RELATION})"
                       rf"(?:叫|是)?\s?(?P<name>(?-i:[A-Z][a-z]+)(?![A-Za-z])|{_ZH_NAME})?")
_ZH_BARE = re.compile(rf"(?:^|[，。！？,.!?；;\s和跟与给陪带])(?P<relation>{_ZH_RELATION})")
# A surname and a title is a name: "Mr. Doyle", "Dr Patel", "王阿姨", "刘老师", "孙姐", "张总"
_EN_TITLED = re.compile(r"\b(?-i:(?:Mr|Mrs|Ms|Miss|Dr|Prof)\.?\s[A-Z][a-z]+)")
_ZH_SURNAMES = ("王李张刘陈杨黄赵周吴徐孙马胡朱郭何林罗高郑梁谢宋唐许邓冯韩曹曾彭萧蔡潘田董袁于余叶蒋杜苏魏"
                "程吕丁沈任姚卢傅钟姜崔谭廖范汪陆金石戴贾韦夏邱方侯邹熊孟秦白江阎薛尹段雷黎史龙陶贺顾毛郝龚邵"
                "万钱严赖覃洪武莫孔")
_ZH_TITLED = re.compile(rf"[{_ZH_SURNAMES}](?:阿姨|老师|医生|大夫|护士长|主任|经理|总|姐|哥|叔|婶|奶奶|爷爷)")
# "养了只仓鼠叫团子": a pet and its name, whoever's sentence it is
_ZH_PET_CALLED = re.compile(r"(?:只|条|一只|一条|我的?|我们家的?)?"
                            r"(?P<relation>仓鼠|兔子|猫|狗|狗狗|猫咪|狗子|鹦鹉|乌龟)(?:的名字)?叫(?P<name>[\u4e00-\u9fff]{2}|[A-Z][a-z]+)")
_ZH_FAMILY_NAME = re.compile(r"我们?家(?:的|那位)?(?P<name>(?:老|小|阿)[\u4e00-\u9fff])")  # "我们家老赵"
_ZH_NAME_IS = re.compile(rf"(?P<name>{_ZH_NAME})是我(?:的)?(?P<relation>{_ZH_RELATION})")
_ZH_CALLED = re.compile(rf"我(?:的)?(?P<relation>{_ZH_RELATION})(?:的名字)?叫(?P<name>{_ZH_NAME})")
_CAPITALISED = re.compile(r"(?<![A-Za-z'])(?-i:[A-Z][a-z]+(?:-[A-Z][a-z]+)?)(?![A-Za-z])")  # "Maria跟着…" too
_SUBJECT_START = re.compile(r"^(?:(?:and|but|also|so|oh|btw|actually|anyway|well|ugh|guess what)[,!]?\s+|"
                            r"(?:就是|其实|还有|然后|不过|但是|对了|而且|所以|哈哈|是啊|唉|嗯)[，,]?)*", re.I)
_LEAD_IN = re.compile(r"^[A-Za-z ]{2,15}:\s+(?=\S)|^[\u4e00-\u9fff]{1,6}[：:]\s*(?=\S)")
_PRONOUN_SUBJECT = re.compile(r"^(?:he|she|they)(?:'s|'d|'ll|'re)?\b|^(?:他|她)(?!们)", re.I)
NOT_A_NAME = frozenset(
    "i the this that it my we you they he she there what when where why how yes yeah no ok okay thanks sorry "
    "monday tuesday wednesday thursday friday saturday sunday today tomorrow yesterday also but and so oh btw "
    "just please big quick one again actually user hi hey hello well anyway ugh guess good great lol omg "
    "january february march april may june july august september october november december christmas easter "
    "english chinese mandarin french spanish german italian japanese korean her his our their its your "
    "hiya dr mr mrs ms valentine one two three four five six seven eight nine ten eleven twelve "
    "mum mom dad mummy mommy mama mam papa pops baba da daddy grandma grandpa granny nana nan grandad".split())
# A Chinese "name" that is a word of the sentence, not a name: what follows a relation word too often.
_ZH_NOT_A_NAME = re.compile(r"^(?:最近|现在|今天|昨天|明天|去年|今年|上周|下周|一直|已经|每天|经常|总是|"
                            r"也|都|还|又|就|说|在|是|要|会|的|了|和|跟|给|让|把|被|很|太|有|没|不|去|来|住|搬|找|做|身体|工作|上班|退休|生日|家|那边|这边|一起)")


@dataclass(frozen=True)
class Mention:
    """One person named in a text: the relation code and the user's word for it (empty when only a name is
    given), the name (empty when only a relation is), whether they are the text's subject, and whether the
    name alone counts only when the user already named someone so."""

    code: str = ""
    word: str = ""
    name: str = ""
    subject: bool = False
    known_only: bool = False
    owner: str = ""  # whose relative when not the user's ("Priya's mum": "Priya"); empty for the user's own


def _user_owned(owner: str, user_names: set[str]) -> bool:
    owner = owner.casefold().removesuffix("'s").removesuffix("的")
    return owner in ("my", "our", "我", "我们") or owner in user_names


# 老X / 小X / 阿X that are words, not names ("我们家老家" is no one)
_ZH_TITLE_WORDS = frozenset("老家 老师 老板 老公 老婆 老妈 老爸 老伴 老人 老大 小区 小学 小时 小孩 小姨 小朋 阿姨 老是 "
                            "小心 老了".split())


def _zh_name(raw: str | None) -> str:
    """A name after a Chinese relation word ("我们领导老张", "我女儿朵朵", "我老公David"), when it reads as one:
    老/小/阿 and a character, one character said twice, or a capitalised Latin name."""
    if not raw or _ZH_NOT_A_NAME.match(raw):
        return ""
    if re.fullmatch(r"[A-Z][a-z]+", raw):  # "我老公David", "同事Jessica"
        return "" if raw.casefold() in NOT_A_NAME else raw
    if raw.startswith(("老", "小", "阿")) and len(raw) >= 2 and raw[:2] not in _ZH_TITLE_WORDS:
        return raw[:2]
    return raw[:2] if len(raw) >= 2 and raw[0] == raw[1] else ""


@dataclass
class _Reading:
    """One text being read: what was found where (a span read once, by the first reader to claim it)."""

    body: str
    start: int  # where the text's subject starts (after "and", "btw", ...)
    own: set[str]
    found: list[tuple[int, Mention]]
    taken: list[tuple[int, int]]

    def add(self, span: tuple[int, int], mention: Mention) -> None:
        if any(a < span[1] and span[0] < b for a, b in self.taken):
            return
        self.taken.append(span)
        self.found.append((span[0], mention))

    def opens(self, at: int) -> bool:
        return at <= self.start


def mentions_in(text: str, user_names: Iterable[str] = (), known_names: Iterable[str] = ()) -> list[Mention]:
    """Every person (or pet) the text names, in order, the subject first marked (see the module docstring).
    `user_names`: the user's own names (a memory says "Marcus's sister" for the user Marcus); `known_names`:
    Chinese names the user gave before ("朵朵"), found wherever they are said."""
    user_names = (*user_names, *UNKNOWN_SPEAKER.values())  # "User's daughter": the user's, name or not
    body = as_first_person(_LEAD_IN.sub("", text.strip()), user_names)
    opening = _SUBJECT_START.match(body)
    reading = _Reading(body, len(opening.group(0)) if opening else 0, {n.casefold() for n in user_names if n},
                       [], [])
    _named_relatives(reading)
    _owned_relatives(reading)
    if _HAN.search(body):
        _chinese_names(reading, user_names, known_names)
    _capitalised_names(reading)
    return [mention for _, mention in sorted(reading.found, key=lambda item: item[0])]


def _named_relatives(reading: _Reading) -> None:
    """"my mum is called Sheila", "Ana is my cousin", "我老公叫刘洋", "王芳是我妈", "我们家老赵"; "my friend's dog
    Rex"."""
    for match in _ZH_PET_CALLED.finditer(reading.body):
        reading.add(match.span(), Mention(code="pet", word=match.group("relation"), name=match.group("name"),
                                          subject=reading.opens(match.start())))
    for pattern in (_EN_TITLED, _ZH_TITLED):
        for match in pattern.finditer(reading.body):
            reading.add(match.span(), Mention(name=match.group(0), subject=reading.opens(match.start())))
    for match in _ZH_FAMILY_NAME.finditer(reading.body):
        if match.group("name") not in _ZH_TITLE_WORDS:
            reading.add(match.span(), Mention(name=match.group("name"), subject=reading.opens(match.start())))
    for pattern in (_EN_CALLED, _EN_NAME_IS, _ZH_CALLED, _ZH_NAME_IS):
        for match in pattern.finditer(reading.body):
            word = match.group("relation")
            reading.add(match.span(), Mention(code=relation_code(word), word=word, name=match.group("name"),
                                              subject=reading.opens(match.start())))
    for match in _EN_THEIRS.finditer(reading.body):
        owner, word, name = match.group("owner"), match.group("relation"), match.group("name") or ""
        reading.add((match.end("owner") + 1, match.end()), Mention(
            code="other", word=f"{owner}'s {word}", name="" if name.casefold() in NOT_A_NAME else name,
            subject=reading.opens(match.start()), owner=owner))
        reading.add((match.start(), match.end("owner")), Mention(code=relation_code(owner), word=owner))


def _owned_relatives(reading: _Reading) -> None:
    """"my sister (Ana)", "Marcus's mum", "My 婆婆", "我婆婆", "林晓雨的妈妈", "Mum", "her brother Leo"."""
    body, own = reading.body, reading.own
    for match in _MIXED_OWNED.finditer(body):
        word = match.group("relation")
        reading.add(match.span(), Mention(code=relation_code(word), word=word, subject=reading.opens(match.start())))
    for match in _EN_OWNED.finditer(body):
        word, owner, name = match.group("relation"), match.group("owner"), match.group("name") or ""
        name = "" if name.casefold() in NOT_A_NAME or name.casefold() in own else name
        theirs = _user_owned(owner, own)
        reading.add(match.span(), Mention(code=relation_code(word) if theirs else "other", word=word if theirs else
                                          f"{owner} {word}", name=name, subject=reading.opens(match.start()),
                                          owner="" if theirs else owner.removesuffix("'s")))
    for match in _ZH_OWNED.finditer(body):
        word, owner = match.group("relation"), match.group("owner")
        theirs = _user_owned(owner, own) or owner.removesuffix("的") in own
        name = _zh_name(match.group("name"))
        reading.add((match.start(), match.end("name") if name else match.end("relation")), Mention(
            code=relation_code(word) if theirs else "other", word=word if theirs else f"{owner}{word}", name=name,
            subject=reading.opens(match.start()), owner="" if theirs else owner.removesuffix("的")))
    for match in _EN_TITLE.finditer(body):
        word = match.group("relation")
        reading.add(match.span(), Mention(code=relation_code(word), word=word, subject=reading.opens(match.start())))
    for match in _ZH_BARE.finditer(body):
        word = match.group("relation")
        if len(word) >= 2:  # "妈妈", "老公": a bare one-character word is too often part of another
            reading.add(match.span("relation"), Mention(code=relation_code(word), word=word,
                                                        subject=reading.opens(match.start("relation"))))
    for match in _THEIRS.finditer(body):  # "Her brother Leo", "his dog Rex": someone of someone else's
        word, name = match.group("relation"), match.group("name") or ""
        reading.add(match.span(), Mention(code="other", word=f"{match.group('owner').casefold()} {word}",
                                          name="" if name.casefold() in NOT_A_NAME else name,
                                          subject=reading.opens(match.start()), owner=match.group("owner").casefold()))


def _chinese_names(reading: _Reading, user_names: Iterable[str], known_names: Iterable[str]) -> None:
    """Names in Chinese text: jieba's person names and the names the user gave before; a name right after the
    user's own opens the statement ("林晓雨陈浩跟…")."""
    body = reading.body
    starts = {0, *(len(n) for n in user_names if n and body.startswith(n))}
    said = [(at, n) for n in known_names if len(n) >= 2 and _HAN.search(n) for at in [body.find(n)] if at >= 0]
    for at, name in sorted([*chinese_person_names(body), *said]):
        if any(own in name.casefold() for own in reading.own) or relation_code(name) or _ZH_NOT_A_NAME.match(name) \
                or name[-1] in "楼家里" or name in _ZH_TITLE_WORDS:
            continue
        reading.add((at, at + len(name)), Mention(name=name, subject=at in starts, known_only=at not in starts))


def _capitalised_names(reading: _Reading) -> None:
    """A capitalised word: a name when it opens the text and reads as one, else only a known name."""
    for match in _CAPITALISED.finditer(reading.body):
        name = match.group(0)
        if name.casefold() in NOT_A_NAME or name.casefold() in reading.own or relation_code(name):
            continue
        opening = reading.opens(match.start())
        reading.add(match.span(), Mention(name=name, subject=opening, known_only=not opening or not reads_as_a_name(
            name, reading.body[match.end():])))


_SAID_OF_SOMEONE = re.compile(r"^(?:'s\b|\s+(?:is|was|has|had|says|said|and I|thinks|wants|loves|got|just)\b)")


def reads_as_a_name(word: str, after: str) -> bool:
    """Whether a capitalised word opening a text is someone's name: not an English word ("Hannah", "Priya"),
    or one said of someone ("Rob is leaving", "Tom's daughter"); "Work's a lot", "Trying to…", "Total
    beginner" are not (lemminflect's lexicon says which words are English)."""
    if not getAllLemmas(word.casefold()):
        return True
    return bool(_SAID_OF_SOMEONE.match(after)) and not re.match(r"'s (?:a |an |the |[A-Z])", after)


def as_first_person(text: str, user_names: Iterable[str]) -> str:
    """A memory written with the user's name read as the user said it: "Marcus's sister" -> "my sister",
    "林晓雨婆婆" / "林晓雨的婆婆" -> "我婆婆" (the memory's own words are kept; this is only how they are read)."""
    for name in sorted({n for n in user_names if n}, key=len, reverse=True):
        if text[:len(name)].casefold() != name.casefold():
            continue
        name = text[:len(name)]  # as written ("alice" is the user id, "Alice" the text)
        if text.startswith(f"{name}'s "):
            return "my " + text[len(name) + 3:]
        if re.match(r"[A-Z]|my |I ", text[len(name):len(name) + 3]):
            return text[len(name):]  # a name glued to the next one ("LilyShe says", "用户Maria跟着过来了")
        if _HAN.match(text[len(name):len(name) + 1] or "x"):
            rest = text[len(name):].removeprefix("的")
            unfilled = rest[len(_SUBJECT_START.match(rest).group(0)):]  # type: ignore[union-attr]  # "就是老伴…"
            if re.match(_ZH_RELATION, unfilled):
                return "我" + unfilled
    return text


_CLAUSE_END = re.compile(r"[，,。.!！?？；;]")
_FIRST_PERSON = re.compile(r"\b(?:I|I'm|I've|my|me)\b|我(?!们)")


def said_before(statement: str, turn: str, user_names: Iterable[str]) -> str:
    """The clause of `turn` just before the one a statement was kept from, when that clause continues it
    ("我妈腿不好，走不了太远" -> "我妈腿不好" for "林晓雨走不了太远"): the statement's words after the user's
    name are found in the turn, say nothing of the speaker themself, and follow a clause; else ""."""
    rest = statement
    for name in sorted({n for n in user_names if n}, key=len, reverse=True):
        if rest.startswith(name):
            rest = rest[len(name):].removeprefix("的")
            break
    probe = rest.strip()[:6]
    at = turn.find(probe) if len(probe) >= 3 else -1
    if at <= 0 or _FIRST_PERSON.search(turn[at:at + len(rest)]):
        return ""
    before = _CLAUSE_END.split(turn[:at].rstrip())
    previous = [c for c in before if c.strip()]
    return previous[-1].strip() if previous and not turn[:at].rstrip()[-1:].isalnum() else ""


def pronoun_subject(text: str) -> bool:
    """Whether the text opens with "he"/"she"/"他"/"她": someone named before, not the user."""
    return bool(_PRONOUN_SUBJECT.match(_SUBJECT_START.sub("", _LEAD_IN.sub("", text.strip()))))


# --------------------------------------------------------------------------- where someone lives or works

@dataclass(frozen=True)
class StatedEdge:
    """Where the subject lives or works as the text says it; `before`: where they moved from, when said."""

    predicate: str  # "lives_in" | "works_at"
    value: str
    before: str = ""
    changed: bool = False  # said as a change ("moved to", "跳槽去了"): it began when said; else since unknown


_PLACE = r"(?P<value>(?-i:[A-Z][\w&'.-]*(?:\s+(?:of\s+|upon\s+|on\s+)?(?-i:[A-Z][\w&'.-]*))*))"
_FROM = r"(?:from\s+(?P<before>(?-i:[A-Z][\w'.-]*(?:\s+[A-Z][\w'.-]*)*))\s+)?"
_ZH_PLACE = r"(?P<value>[\u4e00-\u9fffA-Za-z]{2,10}?)"
_ZH_END = r"(?=了|工作|上班|实习|读书|住|去|那边|那里|附近|定居|生活|养老|，|。|！|,|\.|!|$|的|啦|呢|吧)"
# (predicate, said as a change, pattern)
_EN_EDGES: tuple[tuple[str, bool, re.Pattern[str]], ...] = (
    ("lives_in", True, re.compile(rf"\b(?:moved|moving|moves|relocated|relocating|move)\s+(?:back\s+)?{_FROM}"
                                  rf"(?:to|into)\s+{_PLACE}", re.I)),
    ("lives_in", False, re.compile(rf"\b(?:lives?|living|lived|based|settled|stays?|staying)\s+in\s+{_PLACE}",
                                   re.I)),
    ("works_at", False, re.compile(rf"\b(?:works?|working|worked)\s+(?:at|for)\s+{_PLACE}", re.I)),
    ("works_at", True, re.compile(rf"\b(?:job|position|role|internship|placement|post)\s+(?:at|with)\s+{_PLACE}",
                                  re.I)),
    ("works_at", True, re.compile(rf"\b(?:joined|joining|joins|started at|starting at|starts at|hired by)\s+"
                                  rf"{_PLACE}", re.I)),
)
_ZH_EDGES: tuple[tuple[str, bool, re.Pattern[str]], ...] = (
    ("lives_in", True, re.compile(rf"(?:从(?P<before>[\u4e00-\u9fff]{{2,6}}?))?搬(?:到|去|回|家到|家去)了?"
                                  rf"{_ZH_PLACE}{_ZH_END}")),
    ("lives_in", False, re.compile(rf"(?:住在|定居在|生活在|住到了?){_ZH_PLACE}{_ZH_END}")),
    ("works_at", True, re.compile(rf"(?:跳槽|入职|调)(?:到|去)?了?{_ZH_PLACE}{_ZH_END}")),
    ("works_at", False, re.compile(rf"在{_ZH_PLACE}(?:工作|上班|实习)")),
)
_GENERIC = re.compile(r"^(?:一家|一个|家里|公司|单位|那边|这边|新的|老家|那家|这家)")
_ZH_NOT_PLACE = re.compile(r"^(?:家|家里|公司|单位|这|那|一起|附近|外面|里面|上面|这里|那里|哪|新家|老家)$")


def stated_edges(text: str) -> list[StatedEdge]:
    """Where the text says someone lives or works (see the module docstring); nothing for a flat, "a new
    job" or a place not named."""
    out: list[StatedEdge] = []
    for predicate, changed, pattern in _EN_EDGES + _ZH_EDGES:
        for match in pattern.finditer(text):
            value = match.group("value").strip(" .,'")
            if not value or _ZH_NOT_PLACE.match(value) or _GENERIC.match(value):
                continue
            if value.casefold() in NOT_A_NAME:
                continue
            before = (match.groupdict().get("before") or "").strip()
            if all(edge.value != value for edge in out):
                out.append(StatedEdge(predicate, value, before, changed))
    return out


# --------------------------------------------------------------------------- a relation that changes

_BROKE_UP = re.compile(r"\b(?:broke up|broken up|split up|splitting up|divorced|divorcing|separated|dumped)\b|"
                       r"分手|离婚|离了婚|分开了", re.I)
_GOT_TOGETHER = re.compile(r"\b(?:got engaged|getting married|got married|are engaged|we're engaged|proposed|"
                           r"moved in together|is my (?:girlfriend|boyfriend|partner) now|started dating)\b|"
                           r"订婚|结婚|领证|在一起了", re.I)
# (from, to): what a relation may become without a person checking (a relation changed in any other way is a
# different person, or a slip for a reviewer: the relation stays and the mention is its own entity).
RELATION_CHANGES = frozenset({
    ("partner", "ex_partner"), ("ex_partner", "partner"), ("friend", "partner"), ("colleague", "boss"),
    ("boss", "colleague"), ("colleague", "friend"), ("friend", "roommate"), ("roommate", "friend"),
    ("friend", "colleague"), ("neighbour", "friend"),
})


def relation_change(text: str, current: str) -> str:
    """The relation a partner's text says they now have ("we broke up" -> ex_partner), or "" for none."""
    if current == "partner" and _BROKE_UP.search(text):
        return "ex_partner"
    if current in ("ex_partner", "friend") and _GOT_TOGETHER.search(text):
        return "partner"
    return ""


# (the owner's relation to the user, their relative's) -> the relative's relation to the user
COMPOSED_RELATIONS = {("partner", "mother"): "mother_in_law", ("partner", "father"): "father_in_law",
                      ("partner", "parents"): "parents"}


def composed_relation(owner_relation: str, relation: str) -> str:
    """A relative of a relative, when that is a relation of the user's own ("Kevin's mom", Kevin the
    husband: the mother-in-law), else ""."""
    return COMPOSED_RELATIONS.get((owner_relation, relation), "")


def may_change(current: str, new: str) -> bool:
    """Whether a relation may become another without review (RELATION_CHANGES; an unknown one may)."""
    return not current or current == new or (current, new) in RELATION_CHANGES


# --------------------------------------------------------------------------- kinds

PET_CODES = frozenset({"pet"})


def kind_of(code: str) -> str:
    """The kind of entity a relation names."""
    return "pet" if code in PET_CODES else "person"


def relation_words(code: str) -> tuple[str, ...]:
    """Every word for a relation code (English, then Chinese)."""
    return RELATION_WORDS.get(code, ())
