"""The offline extractor, by meaning: every user clause is read by the intent model, and what it
does decides what is kept; patterns only rewrite what is kept (person, tense, dates).

The stages, in this order (MeaningExtractor.extract):

1. split: each user turn into sentences and each sentence into clauses (clauses.py), so a
   compound statement gives one memory per fact;
2. read: every clause of the job in one encoder call (intent.read_texts): intent and slot;
3. route: one function per intent (ROUTES) turns a clause into a statement, or nothing:
   facts about the speaker and plans -> a fact in the third person; facts about another person ->
   the same, the pronoun resolved to the person named before (or dropped when no one was);
   habits and wishes -> tagged facts (traits grow from them); updates -> a fact that replaces the
   current memory it is about (ingestion finds which, by meaning); forget requests -> a forget
   statement (never a fact); small talk and requests -> nothing;
4. tidy: what would read as noise in a context block is dropped (a clause that names nothing but
   "it" or "them").
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime

from memories.extraction import intent as intents
from memories.extraction.base import ExistingMemory, ExtractedStatement, Message, anchor_relative_dates
from memories.extraction.clauses import clauses, sentences, word_lemmas
from memories.extraction.forget import asks_to_forget, forget_is_confident, forget_topic, names_no_matter
from memories.extraction.rewrite_en import (
    DISCOURSE,
    GREETING_LEAD,
    to_third_person,
    with_its_subject,
    without_address,
)
from memories.extraction.rewrite_zh import RELATION_ZH, chinese_third_person
from memories.extraction.rules import (
    ABOUT_OTHER_EN,
    ABOUT_OTHER_ZH,
    HEDGE,
    RELATION_EN,
    UNKNOWN_SPEAKER,
    RulesExtractor,
    speaker_name,
    with_continuations,
)
from memories.models import MemoryType
from memories.relations import SOMEONE, opening_relation_zh, whom
from memories.text import has_han
from memories.vocabulary import Slot, Tag

# Slots that say who the speaker is: their memories are profile memories.
PROFILE_TYPE_SLOTS = frozenset({Slot.NAME, Slot.AGE, Slot.HOME, Slot.WORK, Slot.EDUCATION, Slot.LANGUAGE})


@dataclass
class SaidClause:
    """One clause of one user turn, with who said it and when."""

    text: str
    subject: str
    moment: datetime
    index: int
    reading: intents.Reading | None = None

    @property
    def chinese(self) -> bool:
        return has_han(self.text)


@dataclass
class People:
    """The other people a speaker has named so far in the conversation, latest last: "he" and "她"
    mean the latest one."""

    latest: dict[str, str] = field(default_factory=dict)  # speaker -> how the latest person is named

    def note(self, clause: SaidClause) -> None:
        named = named_person(clause.text, speaker_name(clause.subject, clause.chinese))
        if named:
            self.latest[clause.subject] = named


_NAMED_RELATION_EN = re.compile(rf"\b(?i:my (?:\w+ )?(?:{RELATION_EN})),? ([A-Z][a-z]+)\b")
_RELATION_ONLY_EN = re.compile(rf"\bmy ((?:\w+ )?(?:{RELATION_EN}))\b", re.I)
_NAME_AS_SUBJECT_EN = re.compile(r"^(?:(?:and|but|oh|so|btw|also)\s+)?([A-Z][a-z]{2,})(?:'s|\s+(?:is|was|has|had|just|"
                                 r"got|works|lives|loves|hates|can't|doesn't|isn't|will|moved|started|finally|"
                                 r"recently|always|never|still))\b")
_NOT_NAMES = frozenset({"I", "The", "This", "That", "It", "My", "We", "You", "They", "He", "She", "There", "What",
                        "When", "Where", "Why", "How", "Yes", "Yeah", "No", "Ok", "Okay", "Thanks", "Sorry",
                        "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday", "Today",
                        "Tomorrow", "Yesterday", "Also", "But", "And", "So", "Oh", "Btw", "Just", "Please"})
_RELATION_ZH_RE = re.compile(rf"我的?((?:{RELATION_ZH}))")


def named_person(text: str, speaker: str) -> str:
    """How the latest other person the text names is called: "my sister Ana" -> "Ana", "my boss" ->
    "Maria's boss", "Lena just got ..." -> "Lena", "我老公" -> "小林的老公"; "" when it names no one."""
    if has_han(text):
        found = _RELATION_ZH_RE.findall(text)
        return f"{speaker}的{found[-1]}" if found else ""
    if match := _NAMED_RELATION_EN.search(text):
        return match.group(1)
    if (match := _NAME_AS_SUBJECT_EN.match(text)) and match.group(1) not in _NOT_NAMES:
        return match.group(1)
    if match := _RELATION_ONLY_EN.search(text):
        return f"{speaker}'s {match.group(1)}"
    return ""


_PRONOUN_SUBJECT_EN = [(re.compile(r"^(?:he|she)(?:'s| is)\b", re.I), "{who} is"),
                       (re.compile(r"^(?:he|she)(?:'d| would)\b", re.I), "{who} would"),
                       (re.compile(r"^(?:he|she)(?:'ll| will)\b", re.I), "{who} will"),
                       (re.compile(r"^(?:he|she) has\b", re.I), "{who} has"),
                       (re.compile(r"^(?:he|she)\b", re.I), "{who}")]
_PRONOUN_ELSEWHERE_EN = re.compile(r"\b(?:he|she|him|his|hers)\b", re.I)
_PRONOUN_ZH = re.compile("^(?:他|她)(?!们)")
_SPEAKER_NAMED = re.compile(r"\b(?:I|I'm|I've|my|me)\b|我(?!们)")
# A clause said without its "I" that opens with what the speaker does ("Never miss my evening swim").
_OPENING_ADVERBS = frozenset("never always usually often still just rarely sometimes also".split())
_WHAT_A_VERB_TAKES = frozenset("this that these those it them my his her your their our the a an to".split())


def with_antecedent(text: str, who: str) -> str | None:
    """A clause about "he"/"she"/"他"/"她" with the person named instead; None when it speaks of someone by
    a pronoun and no one was named before (a memory must not say "he" to a reader who cannot know who)."""
    if has_han(text):
        if _PRONOUN_ZH.match(text):
            return _PRONOUN_ZH.sub(who, text, count=1) if who else None
        return text
    for pattern, words in _PRONOUN_SUBJECT_EN:
        if pattern.match(text):
            return pattern.sub(words.format(who=who), text, count=1) if who else None
    return text


# "remember that I ...", "记得我...": an instruction to keep the fact that follows; the fact is the memory.
_KEEP_THIS_EN = re.compile(r"^(?:please\s+)?(?:remember|note|keep in mind|don't forget|fyi)(?:\s+that)?[,:]?\s+",
                           re.I)
_KEEP_THIS_ZH = re.compile("^(?:请)?(?:你)?(?:记得|记住|记一下|记着|别忘了)(?:一下)?[，,：:]?")
# Chinese clauses said without their subject ("最近在学意大利语") get the speaker's name in front.
_ZH_HAS_SUBJECT = re.compile("^(?:我|他|她|它|我们|咱们|用户)|^[\u4e00-\u9fff]{1,4}(?:的(?:妻子|老婆|丈夫|老公|孩子|"
                             "女儿|儿子|妈妈|爸爸))")


# What closes a clause and is no part of what it says: ", by the way", " though", " lol", "哈哈".
_TRAILER = re.compile(r"(?:[,\s]+(?:by the way|btw|though|lol|haha|tbh|fyi|anyway|too|as well|ok|okay))+[.!]*$"
                      r"|[，,\s]*(?:哈哈+|嘿嘿|呵呵|啊|呀|哦|嘛|啦)+[。！!~～]*$", re.I)


def as_said(text: str, addressees: list[str]) -> str:
    """The clause without what opens it and is no part of what it says (greetings, "oh and", the
    addressee's name, "remember that", a closing "by the way")."""
    text = _TRAILER.sub("", GREETING_LEAD.sub("", text.strip())) or text.strip()
    if not has_han(text):
        text = without_address(text, addressees)
        text = _KEEP_THIS_EN.sub("", text)
        return with_its_subject(DISCOURSE.sub("", text)).strip(" ,")
    text = DISCOURSE.sub("", text)
    return _KEEP_THIS_ZH.sub("", text).strip(" ，,")


def with_the_speaker(text: str) -> str:
    """An English clause that opens with a verb, its "I" left out ("Never miss my evening swim", "Love
    this city"), with it. Whether the word is a verb in its base form is lemminflect's call; a word that
    can be a noun too counts as a verb after an adverb or before what a verb takes ("this", "my")."""
    words = text.split()
    if has_han(text) or len(words) < 2:
        return text
    at = 0
    while at < len(words) - 1 and words[at].lower() in _OPENING_ADVERBS:
        at += 1
    word = words[at].lower().strip(",.!")
    lemmas = word_lemmas(word)
    if word not in lemmas.get("VERB", ()):
        return text
    following = words[at + 1].lower() if at + 1 < len(words) else ""
    if "NOUN" in lemmas and at == 0 and following not in _WHAT_A_VERB_TAKES:
        return text
    return f"I {text[0].lower()}{text[1:]}"


def third_person(text: str, subject: str) -> tuple[str, list[str]]:
    """The clause in the third person with the speaker's name (one name in a Chinese line: never 用户
    beside 我), and the tags that say whom it is about."""
    rewritten, tags = RulesExtractor.rewrite(with_the_speaker(text), subject)
    if has_han(rewritten):
        name = speaker_name(subject, True)
        rewritten = rewritten.replace("我们", "\0").replace("我", name).replace("\0", "我们")
        if not _ZH_HAS_SUBJECT.match(rewritten) and not rewritten.startswith(name):
            rewritten = name + rewritten
    return rewritten.rstrip(" .!。！~"), tags


def _confidence(clause: SaidClause) -> float:
    """How sure it is that the speaker meant it: lower when they hedge ("maybe", "可能"), which sends it to
    review. The model's certainty about what the clause does is another matter (the route it took)."""
    return 0.4 if HEDGE.search(clause.text) else 0.8


def _statement(clause: SaidClause, text: str, *, memory_type: str, importance: float, tags: list[str],
               **extra) -> ExtractedStatement:
    text, when = anchor_relative_dates(text, clause.moment)
    slot = clause.reading.slot if clause.reading else intents.NO_SLOT
    return ExtractedStatement(subject=clause.subject, text=text, memory_type=memory_type, importance=importance,
                              confidence=_confidence(clause), tags=tags, valid_at=when or clause.moment,
                              source_messages=[clause.index], slot=slot, **extra)


def _about_the_speaker(clause: SaidClause, people: People, *, replaces: bool = False) -> ExtractedStatement | None:
    """A fact about the speaker (or, replaces=True, one that changes what was known): a slot rule's
    key and value when one reads it (name, home, work), else the clause in the third person. "I'm
    Maria" is left to the introduction (MeaningExtractor.extract), which names the speaker."""
    if re.fullmatch(r"(?:I'm|I am|我是|我叫)\s*" + re.escape(clause.subject) + r"[.!。！]?", clause.text):
        return None
    ruled = RulesExtractor()._sentence(clause.text, clause.subject, clause.moment)
    slot = clause.reading.slot if clause.reading else intents.NO_SLOT
    memory_type = MemoryType.PROFILE if slot in PROFILE_TYPE_SLOTS else MemoryType.FACT
    if ruled is not None and Tag.ABOUT_OTHER not in ruled.tags:
        ruled.source_messages, ruled.slot, ruled.replaces = [clause.index], slot, replaces
        ruled.confidence = min(ruled.confidence, _confidence(clause))
        return ruled
    text, tags = third_person(clause.text, clause.subject)
    if Tag.ABOUT_OTHER in tags:
        return _about_someone_else(clause, people)
    return _statement(clause, text, memory_type=memory_type, importance=0.7 if replaces else 0.6,
                      tags=["update" if replaces else "fact"], replaces=replaces)


def _about_someone_else(clause: SaidClause, people: People) -> ExtractedStatement | None:
    """A fact about another person: it names them (a relation, a name, a pronoun for the one named
    before); a clause that names no one but the speaker is the speaker's ("我在一家律所做助理")."""
    if not named_person(clause.text, clause.subject) and not _PRONOUN_ELSEWHERE_EN.search(clause.text) \
            and not _PRONOUN_ZH.match(clause.text) and _SPEAKER_NAMED.search(clause.text):
        return _about_the_speaker(clause, people)
    latest = people.latest.get(clause.subject, "")
    resolved = with_antecedent(clause.text, latest)
    if resolved is None:
        return None
    text, _ = third_person(resolved, clause.subject)
    return _statement(clause, text, memory_type=MemoryType.FACT, importance=0.6, tags=[Tag.PERSON, Tag.ABOUT_OTHER])


def _update(clause: SaidClause, people: People) -> ExtractedStatement | None:
    if (ABOUT_OTHER_ZH if clause.chinese else ABOUT_OTHER_EN).match(clause.text):
        statement = _about_someone_else(clause, people)  # "my sister moved to Leeds": hers, replacing hers
        if statement is not None:
            statement.replaces = True
        return statement
    return _about_the_speaker(clause, people, replaces=True)


def _habit(clause: SaidClause, people: People) -> ExtractedStatement | None:
    found = RulesExtractor()._habit(clause.text, clause.subject)
    text, tags = (found[0], found[1]) if found else third_person(clause.text, clause.subject)
    return _statement(clause, text.rstrip(" .!。！~"), memory_type=MemoryType.FACT, importance=0.7,
                      tags=list(dict.fromkeys([Tag.HABIT, *tags])))


# A wish said in no form the wish rules know is kept only when the model is at least this sure: a wish goes
# to the head of every context block, so a misread one ("I'm doing the crossword", read as a wish at 0.45 in
# the persona benchmark's dev conversations) is noise in every answer. On the intent corpus's held-out third,
# wish precision 0.98 -> 1.0, recall 0.81 -> 0.72 (the rules keep most of what the floor drops).
WISH_SURE = 0.6
# The words a wish is introduced with, which it shows in every block if kept ("Quick thing: keep it short",
# "One request: please…", "also please:", "跟你说个事，…", "还是那句话，…").
_WISH_LEAD = re.compile(r"^(?:(?:oh\s+)?(?:and|also|quick thing|one (?:more )?(?:thing|request)|btw|by the way|"
                        r"ps|p\.s\.|again)\b[:,]?\s*)*(?:please[:,]?\s+)?|^(?:跟你说个事|还是那句话|说好了|先说好|"
                        r"对了|另外|还有)[，,：:]?\s*", re.I)


def _wish(clause: SaidClause, people: People) -> ExtractedStatement | None:
    found = RulesExtractor()._wish(clause.text, clause.subject)
    if found:
        text = found[0]
    elif clause.reading is not None and clause.reading.confidence < WISH_SURE:
        return None
    else:  # said some other way: the wish in the speaker's words, said of them
        name = speaker_name(clause.subject, clause.chinese)
        said = _WISH_LEAD.sub("", clause.text).rstrip(" .!。！~") or clause.text
        text = f"{name}对助手回答的要求：{chinese_third_person(said, name)}" if clause.chinese else \
            f"{name}'s wish for the answers: {to_third_person(said, name)}"
    return _statement(clause, text, memory_type=MemoryType.FACT, importance=0.8, tags=[Tag.WISH])


# A correction's lead-in ("I got that wrong before", "上次说错了"): it says only that what follows corrects
# something said before. It is never a memory itself; the clauses after it in the same turn replace.
_CORRECTION_LEAD_EN = re.compile(
    r"^(?:(?:oh|ok|okay|btw|actually|sorry|wait|hmm)[,!]?\s+)*(?:i (?:got|had) (?:that|it|this) wrong|i was wrong|"
    r"i (?:said|told you) (?:that |it )?wrong|i made a mistake|i misspoke|correction|my (?:bad|mistake))"
    r"(?:\s+(?:before|earlier|last time))?[\s,:;.!—-]*", re.I)
_CORRECTION_LEAD_ZH = re.compile(r"^(?:其实|对了|哦|不好意思|抱歉)?[，,]?(?:我)?(?:上次|之前|刚才|前面)?(?:我)?"
                                 r"(?:说错了|记错了|讲错了|搞错了|弄错了)[，,。！!：:\s]*")
# What a correction says the old value was not ("not Dalston", "不是建设银行"): a fragment, never a memory.
_ONLY_NOT = re.compile(r"^(?:and |but )?not (?:in |at |on )?[\w' -]{1,40}[.!]?$|"
                       r"^(?:我[\u4e00-\u9fff]{0,3}?)?(?:而)?不是[^，,。]{1,12}[。！!]?$", re.I)
# A restatement ("Still loving Leeds", "工作还是原来那家"): it confirms what is known, it changes nothing.
_STILL = re.compile(r"\b(?:still|as before|same as before|no change)\b|还是|仍然|依然|照旧|没变", re.I)


# A fact said as a change ("I've just moved to York", "I started at the Co-op", "我也搬到上海了"): it replaces
# what was known about the same matter, if anything is (dedupe.replacement_decision: the same person, the same
# matter, close in meaning), though the intent model read a plain fact. Only for slots that hold one value.
_CHANGE_EN = re.compile(r"\b(?:now|just moved|moved (?:to|in|back|out)|moving to|started (?:at|as|in|a new)|"
                        r"started working|new job|switched|changed|quit|left (?:the|my|his|her)|no longer|any ?more|"
                        r"these days|from now on|broke up|split up|got (?:engaged|married|divorced)|retired|"
                        r"passed away|pushed|moved (?:it|the)|rescheduled|put (?:\w+ )?down)\b", re.I)
_CHANGE_ZH = re.compile(r"搬到|搬去|搬回|搬家|换了|换工作|跳槽|辞职|离职|现在|不再|改成|改到|推迟|提前|分手|结婚|"
                        r"离婚|退休|迷上了|调回|调到|去世|走了|回来了|关了")
CHANGEABLE_SLOTS = frozenset({Slot.HOME, Slot.WORK, Slot.EDUCATION, Slot.PARTNER, Slot.FAMILY, Slot.PET, Slot.DIET,
                              Slot.HOBBY, Slot.SPORT, Slot.ROUTINE, Slot.SCHEDULE, Slot.TRAVEL, Slot.HEALTH,
                              Slot.ANSWER_STYLE, Slot.LANGUAGE})


def said_as_a_change(text: str, slot: str) -> bool:
    """Whether a fact is said as a change of something that holds one value (see _CHANGE_EN)."""
    return slot in CHANGEABLE_SLOTS and bool((_CHANGE_ZH if has_han(text) else _CHANGE_EN).search(text))


# A Chinese clause that opens with its own subject (a person, "这"/"那", someone's something).
_ZH_OPENS_WITH_SUBJECT = re.compile("^(?:我|你|他|她|它|咱|用户|这|那|[\u4e00-\u9fff]{1,4}的)")


def continues_a_relative(text: str, before: str) -> str:
    """A Chinese clause said without its subject right after a clause about a relative continues the
    relative ("我婆婆腰不好，走不了太远": the mother-in-law cannot walk far, not the user): the clause with
    the relative as its subject ("我婆婆走不了太远"), else the clause as it was. (The clause splitter does
    the same where it puts the elided subject back: clauses._chinese_clauses.)"""
    relation = opening_relation_zh(before) if has_han(text) and has_han(before) else ""
    if not relation or _ZH_OPENS_WITH_SUBJECT.match(text) or opening_relation_zh(text):
        return text
    return f"我{relation}{text}"


def is_a_replacement(reading: intents.Reading, text: str, *, announced: bool, correcting: bool) -> bool:
    """Whether a statement replaces what was known though its intent is not an update: the change announced
    in the clause before ("I moved! Got a studio on Regent Street"), the first statement after a correction's
    lead-in, or a fact said as a change (said_as_a_change)."""
    if announced and reading.intent in (intents.FACT_SELF, intents.PLAN):
        return True
    if correcting and reading.intent in (intents.FACT_SELF, intents.FACT_OTHER, intents.PLAN, intents.UPDATE):
        return True
    return reading.intent in (intents.FACT_SELF, intents.FACT_OTHER) and said_as_a_change(text, reading.slot)


def correction_lead(text: str) -> str:
    """The correction's lead-in at the start of a clause ("" when none)."""
    match = (_CORRECTION_LEAD_ZH if has_han(text) else _CORRECTION_LEAD_EN).match(text.strip())
    return match.group(0) if match else ""


def only_what_it_is_not(text: str) -> bool:
    """A clause that says only what something is not ("not Dalston", "不是滨江")."""
    return bool(_ONLY_NOT.match(text.strip()))


def restates(text: str) -> bool:
    """An update read in a clause that only says something still holds."""
    return bool(_STILL.search(text))


def announces_a_change(text: str) -> bool:
    """An update that says only that something changed ("I moved!", "我换工作了"): what changed is said in
    the clauses after it, which replace what was known."""
    han = len(re.findall(r"[\u4e00-\u9fff]", text))
    return han <= 6 if han else len(text.split()) <= 4


def _forget(clause: SaidClause, people: People) -> ExtractedStatement | None:
    ruled = RulesExtractor()._forget(clause.text, clause.subject, clause.moment, clause.index)
    if ruled is not None:
        ruled.slot = clause.reading.slot if clause.reading else intents.NO_SLOT
        return ruled
    topic = forget_topic(clause.text) or clause.text
    text, tags = third_person(topic, clause.subject)
    return _statement(clause, text, memory_type=MemoryType.FACT, importance=1.0, tags=["forget", *tags],
                      forget=True)


def _nothing(clause: SaidClause, people: People) -> ExtractedStatement | None:
    return None


Route = Callable[[SaidClause, People], ExtractedStatement | None]
ROUTES: dict[str, Route] = {
    intents.FACT_SELF: _about_the_speaker,
    intents.FACT_OTHER: _about_someone_else,
    intents.HABIT: _habit,
    intents.WISH: _wish,
    intents.UPDATE: _update,
    intents.FORGET: _forget,
    intents.PLAN: _about_the_speaker,
    intents.SMALLTALK: _nothing,
    intents.REQUEST: _nothing,
}

# A statement that names nothing but a pronoun for what it is about ("User read them on User's phone"):
# its reader cannot know what.
_DANGLING_EN = re.compile(r"\b(?:them|it|those|these|that one)\b", re.I)
_CONTENT_WORD = re.compile(r"[A-Za-z]{4,}")


_FUNCTION_WORDS = frozenset("with from that this have been about into just really also when then they them your "
                            "their what were will would could should there here very much".split())


def reads_as_memory(clause: SaidClause, statement: ExtractedStatement) -> bool:
    """Whether a statement reads on its own: not a short clause whose object is only "it" or "them"
    ("I read them on my phone")."""
    if clause.chinese or statement.forget:
        return True
    if not _DANGLING_EN.search(clause.text):
        return True
    content = [w for w in _CONTENT_WORD.findall(_DANGLING_EN.sub(" ", clause.text))
               if w.lower() not in _FUNCTION_WORDS]
    return len(content) >= 3


_KEPT_APART = frozenset({Tag.WISH, Tag.HABIT, Tag.IDENTITY, Tag.CONTACT, Tag.ABOUT_OTHER})


def one_memory_per_matter(statements: list[ExtractedStatement]) -> list[ExtractedStatement]:
    """The facts one turn says about the same thing (the same speaker and slot), as one memory: "Painting's
    a fun way to express my feelings. It's a great way to relax after a long day" is one thing told. Facts
    about different things stay apart ("I'm allergic to peanuts and I live in Porto": health and home), and
    so do updates, forget requests, habits, wishes, facts about others and slot facts with a key. A memory
    per clause had doubled what LoCoMo's conversations kept (961 -> 2,029 facts) and pushed evidence out of
    the context block (0.768 -> 0.715 at 2,000 characters)."""
    out: list[ExtractedStatement] = []
    joined: dict[tuple[str, tuple[int, ...], str], ExtractedStatement] = {}
    for statement in statements:
        apart = statement.forget or statement.replaces or statement.key or _KEPT_APART & set(statement.tags) \
            or not statement.source_messages
        matter = (statement.subject, tuple(statement.source_messages), statement.slot)
        first = None if apart else joined.get(matter)
        if first is None:
            if not apart:
                joined[matter] = statement
            out.append(statement)
            continue
        chinese = has_han(first.text)
        first.text = f"{first.text}{'，' if chinese else '. '}{statement.text}"
        first.tags = list(dict.fromkeys([*first.tags, *statement.tags]))
        first.importance = max(first.importance, statement.importance)
        first.confidence = min(first.confidence, statement.confidence)
        first.said = f"{first.said} {statement.said}".strip()
    return out


def about_others_marked(statements: list[ExtractedStatement]) -> list[ExtractedStatement]:
    """A statement whose text opens with a relative of the speaker ("Sam婆婆腰不好", "Sam's mum is…") is about
    them, whichever route wrote it: tagged so (never the speaker's trait, profile or habit)."""
    for statement in statements:
        about = whom(statement.text, [statement.subject, speaker_name(statement.subject, has_han(statement.text))])
        if about and SOMEONE not in about and Tag.ABOUT_OTHER not in statement.tags and not statement.forget:
            statement.tags = [*statement.tags, Tag.ABOUT_OTHER]
    return statements


class MeaningExtractor:
    """Offline extraction by meaning (see the module docstring)."""

    name = "meaning"

    def extract(self, *, messages: list[Message], speakers: dict[str, str], existing: list[ExistingMemory],
                now: datetime) -> list[ExtractedStatement]:
        said = self.split(messages, speakers, now)
        readings = intents.read_texts([c.text for c in said])
        people = People()
        out: list[ExtractedStatement] = []
        before: SaidClause | None = None
        corrected_turn = -1  # the turn a correction's lead-in opened: its statements replace
        with_an_assistant = any(message.role != "user" for message in messages) or len(speakers) < 2
        for clause, reading in zip(said, readings, strict=True):
            clause.reading, as_said_first = reading, clause.text
            if reading.intent != intents.FORGET and asks_to_forget(clause.text):
                reading = clause.reading = intents.Reading(intents.FORGET, reading.confidence, reading.slot)
            elif reading.intent == intents.FORGET and not forget_is_confident(clause.text, reading.confidence):
                # a guess at a forget ("if you need to restart it"): it removes nothing and keeps nothing
                reading = clause.reading = intents.Reading(intents.REQUEST, reading.confidence, reading.slot)
            if reading.intent == intents.WISH and not with_an_assistant:
                # between people with no assistant no one answers: a wish about answers is a misreading of
                # what the speaker says of themselves
                reading = clause.reading = intents.Reading(intents.FACT_SELF, reading.confidence, reading.slot)
            if reading.intent == intents.FORGET and before is not None and before.index == clause.index \
                    and names_no_matter(forget_topic(clause.text)):
                # "上次说的网贷那个事，你别记了": the request names its matter in the clause before it
                out = [s for s in out if s.source_messages != [before.index] or s.forget]
                clause = SaidClause(before.text.rstrip(" .!。！"), clause.subject, clause.moment, clause.index, reading)
                if out and out[-1].forget and out[-1].source_messages == [clause.index]:
                    out.pop()
            announced = before is not None and before.index == clause.index and before.reading is not None \
                and before.reading.intent == intents.UPDATE and announces_a_change(before.text)
            if lead := correction_lead(clause.text):  # "上次说错了，其实我住在上城区": the rest corrects
                corrected_turn, clause.text = clause.index, as_said(clause.text[len(lead):], [])
            if before is not None and before.index == clause.index:
                clause.text = continues_a_relative(clause.text, before.text)
            if len(clause.text) < 2 or only_what_it_is_not(clause.text):
                before = clause
                continue
            if reading.intent == intents.UPDATE and restates(clause.text):
                reading = clause.reading = intents.Reading(intents.FACT_SELF, reading.confidence, reading.slot)
            statement = ROUTES[reading.intent](clause, people)
            if statement is not None:  # the gate reads the clause as said, too (memories/screening.py)
                statement.said = as_said_first
            correcting = corrected_turn == clause.index
            if statement is not None and not statement.forget and is_a_replacement(
                    reading, clause.text, announced=announced, correcting=correcting):
                statement.replaces = True
                corrected_turn = -1 if correcting else corrected_turn  # the first statement is the correction
            people.note(clause)
            before = clause
            if statement is not None and reads_as_memory(clause, statement):
                out.append(statement)
        out = one_memory_per_matter(about_others_marked(out))
        for message in messages:
            subject = RulesExtractor.speaker_of(message, speakers)
            if subject is not None:
                introduction = RulesExtractor.introduction_of(message, subject, message.created_at or now, out)
                if introduction is not None:
                    out.append(introduction)
        if any(message.role != "user" for message in messages):
            return out
        return RulesExtractor.addressed_by_name(out, speakers)

    @staticmethod
    def split(messages: list[Message], speakers: dict[str, str], now: datetime) -> list[SaidClause]:
        """Every user clause of the conversation, in order (assistant turns say nothing of the user)."""
        out: list[SaidClause] = []
        for message in messages:
            subject = RulesExtractor.speaker_of(message, speakers)
            if subject is None:
                continue
            addressees = [name for name in speakers if name != subject]
            for sentence in with_continuations(sentences(message.content)):
                for raw in clauses(sentence):
                    text = as_said(raw, addressees)
                    if len(text) >= 2 and not RulesExtractor.small_talk(text):
                        out.append(SaidClause(text, subject, message.created_at or now, message.index))
        return out


__all__ = ["MeaningExtractor", "ROUTES", "UNKNOWN_SPEAKER", "forget_topic", "named_person", "with_antecedent",
           "to_third_person"]
