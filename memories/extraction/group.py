"""The group's profile: statements about the group and roles in it."""

from __future__ import annotations

import re
from datetime import datetime

from memories.extraction.base import (
    ExtractedStatement,
    Message,
    anchor_relative_dates,
)
from memories.extraction.rules import (
    RULES_SENTENCE_SPLIT,
    SMALL_TALK,
    RulesExtractor,
)
from memories.models import MemoryType
from memories.text import has_han
from memories.vocabulary import Tag

# --------------------------------------------------------------------------- group profile

# A statement about the group itself: the group is its subject ("We meet ...", "Our book club reads ...",
# "The team decided ...", "我们每周二聚会", "群里规定 ...") and it says something that stands: a routine, a plan,
# an agreement, a rule, a fact of the group. "They are always there for us", "We had so much fun
# yesterday" or "Crazy things happened to Joanna" are not.
_GROUP_SUBJECT_EN = re.compile(
    r"^(?:so |ok |and )?(?:we(?:'re|'ll| are| will)?|our (?:\w+ ){0,2}?(?:group|team|club|class|band|crew|circle|"
    r"choir|society|squad|meetups?|meetings?|rehearsals?|dues|rules?|budget)|the (?:\w+ )?(?:group|team|club|class|"
    r"band|choir|squad)(?: chat)?|(?:everyone|everybody|all of us|each of us) in (?:the|our|this) (?:group|team|club))"
    r"\b", re.I)
_STANDING_EN = re.compile(
    r"\b(?:every|each|usually|always|normally|weekly|monthly|daily|on (?:mon|tues|wednes|thurs|fri|satur|sun)days?|"
    r"(?:mon|tues|wednes|thurs|fri|satur|sun)days|next (?:week|month|year|weekend|meetup|season)|will|going to|"
    r"plan(?:s|ning|ned)?|agreed|decided|vote|rule|dues|fees?|costs?|budget|founded|started in|members?|meets?|"
    r"meetings?|meetups?|rehearsals?|is for|are for|books the|a (?:week|month|year)|at \d|in \d{4})\b", re.I)
_GROUP_SUBJECT_ZH = re.compile(r"^(?:我们|咱们|大家|本群|群里|我们群|我们组"
                               r"|我们的?(?:\w{0,4})(?:群|组|队|会|乐队|俱乐部|读书会|球队|班))")
_STANDING_ZH = re.compile("每|下周|下个月|明年|计划|决定|约定|规定|聚会|开会|活动|群费|会费|成立|集合|见面|打算|投票|"
                          "上课|排练|团建|现在有|轮流")
_ROLE_EN = re.compile(r"\bI(?:'m| am) (?:the|our|this group's|the group's) ((?:\w+ ){0,2}?(?:organi[sz]er|admin|"
                      r"administrator|host|lead|leader|captain|coach|owner|moderator|treasurer|secretary|"
                      r"manager|coordinator|chair))\b", re.I)
_ROLE_ZH = re.compile("我是(?:这个群的|本群的|我们的)?(群主|管理员|组长|队长|负责人|主持人|教练|会长|秘书|财务)")
_NOT_A_STATEMENT = re.compile(r"^(?:if|imagine|suppose|what if|let'?s say|should|can|could|would|shall)\b|"
                              r"\b(?:should|might|maybe|probably|i think)\b|^(?:如果|要是|假如|假设)|吗$|呢$", re.I)


def about_the_group(sentence: str) -> bool:
    """A statement about the group itself (the group is its subject, and it says something that stands)."""
    if _NOT_A_STATEMENT.search(sentence):
        return False
    if has_han(sentence):
        return bool(_GROUP_SUBJECT_ZH.match(sentence) and _STANDING_ZH.search(sentence))
    return bool(_GROUP_SUBJECT_EN.match(sentence) and _STANDING_EN.search(sentence))


def group_profile_candidates(*, messages: list[Message], speakers: dict[str, str],
                             now: datetime) -> list[ExtractedStatement]:
    """Seed 002's group profile: who takes part, the roles people claim, and
    statements about the group itself ("we meet on Tuesdays", "我们每周二聚会").
    Each is a profile memory of its speaker, kept in the group's scope."""
    out: list[ExtractedStatement] = []
    seen: set[str] = set()
    for message in messages:
        subject = RulesExtractor.speaker_of(message, speakers)
        if subject is None:
            continue
        moment = message.created_at or now
        chinese = has_han(message.content)
        if subject not in seen:
            seen.add(subject)
            out.append(ExtractedStatement(subject=subject, text=f"{subject}是群组成员" if chinese else
                                       f"{subject} is a member of the group", memory_type=MemoryType.PROFILE,
                                       importance=0.4, confidence=0.9, tags=[Tag.GROUP, Tag.MEMBER], valid_at=moment,
                                       key=f"group_member:{subject}", value="yes", source_messages=[message.index]))
        for sentence in RULES_SENTENCE_SPLIT.split(message.content):
            sentence = sentence.strip().rstrip(" .!。！")
            if len(sentence) < 3 or sentence.endswith(("?", "？")) or SMALL_TALK.match(sentence):
                continue
            role = (_ROLE_ZH if has_han(sentence) else _ROLE_EN).search(sentence)
            if role:
                text = (f"{subject}是本群的{role.group(1)}" if has_han(sentence)
                        else f"{subject} is the group's {role.group(1).lower()}")
                out.append(ExtractedStatement(subject=subject, text=text, memory_type=MemoryType.PROFILE,
                                           importance=0.6, confidence=0.8, tags=[Tag.GROUP, Tag.ROLE], valid_at=moment,
                                           source_messages=[message.index]))
            elif about_the_group(sentence):
                text = (f"群组（{subject}说）：{sentence}" if has_han(sentence)
                        else f"The group ({subject} said): {sentence}")
                text, when = anchor_relative_dates(text, moment)
                out.append(ExtractedStatement(subject=subject, text=text, memory_type=MemoryType.PROFILE,
                                           importance=0.5, confidence=0.8, tags=[Tag.GROUP], valid_at=when or moment,
                                           source_messages=[message.index]))
    return out
