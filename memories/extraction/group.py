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
    _SENTENCE_SPLIT,
    _SMALL_TALK,
    RulesExtractor,
)
from memories.models import MemoryType
from memories.text import has_han

# --------------------------------------------------------------------------- group profile

_GROUP_EN = re.compile(r"\b(we|our|ours|us)\b", re.I)
_GROUP_ZH = re.compile("我们|咱们|大家|本群|群里")
_ROLE_EN = re.compile(r"\bI(?:'m| am) (?:the|our|this group's|the group's) ((?:\w+ ){0,2}?(?:organi[sz]er|admin|"
                      r"administrator|host|lead|leader|captain|coach|owner|moderator|treasurer|secretary|"
                      r"manager|coordinator|chair))\b", re.I)
_ROLE_ZH = re.compile("我是(?:这个群的|本群的|我们的)?(群主|管理员|组长|队长|负责人|主持人|教练|会长|秘书|财务)")


def about_the_group(sentence: str) -> bool:
    """A statement about the group itself: first person plural, with some substance."""
    if has_han(sentence):
        return bool(_GROUP_ZH.search(sentence)) and len(sentence) >= 8
    return bool(_GROUP_EN.search(sentence)) and len(sentence.split()) >= 4


def group_profile_candidates(*, messages: list[Message], speakers: dict[str, str],
                             now: datetime) -> list[ExtractedStatement]:
    """Seed 002's group profile: who takes part, the roles people claim, and
    statements about the group itself ("we meet on Tuesdays", "我们每周二聚会").
    Each is a profile memory of its speaker, kept in the group's scope."""
    out: list[ExtractedStatement] = []
    seen: set[str] = set()
    for message in messages:
        subject = RulesExtractor._subject(message, speakers)
        if subject is None:
            continue
        moment = message.created_at or now
        chinese = has_han(message.content)
        if subject not in seen:
            seen.add(subject)
            out.append(ExtractedStatement(subject=subject, text=f"{subject}是群组成员" if chinese else
                                       f"{subject} is a member of the group", memory_type=MemoryType.PROFILE,
                                       importance=0.4, confidence=0.9, tags=["group", "member"], valid_at=moment,
                                       key=f"group_member:{subject}", value="yes", source_messages=[message.index]))
        for sentence in _SENTENCE_SPLIT.split(message.content):
            sentence = sentence.strip().rstrip(" .!。！")
            if len(sentence) < 6 or sentence.endswith(("?", "？")) or _SMALL_TALK.match(sentence):
                continue
            role = (_ROLE_ZH if has_han(sentence) else _ROLE_EN).search(sentence)
            if role:
                text = (f"{subject}是本群的{role.group(1)}" if has_han(sentence)
                        else f"{subject} is the group's {role.group(1).lower()}")
                out.append(ExtractedStatement(subject=subject, text=text, memory_type=MemoryType.PROFILE,
                                           importance=0.6, confidence=0.8, tags=["group", "role"], valid_at=moment,
                                           source_messages=[message.index]))
            elif about_the_group(sentence):
                text = (f"群组（{subject}说）：{sentence}" if has_han(sentence)
                        else f"The group ({subject} said): {sentence}")
                text, when = anchor_relative_dates(text, moment)
                out.append(ExtractedStatement(subject=subject, text=text, memory_type=MemoryType.PROFILE,
                                           importance=0.5, confidence=0.8, tags=["group"], valid_at=when or moment,
                                           source_messages=[message.index]))
    return out
