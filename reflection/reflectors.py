"""Reflectors: what a group of memories says about a user's traits. The
offline HeuristicReflector reads preferences and habits stated in the
memories (and writes trait texts as a reviewer would); the LLMReflector asks
an OpenAI-compatible chat endpoint (LLM_BASE_URL)."""

from __future__ import annotations

import json
import logging
import re
import uuid
from dataclasses import dataclass, field
from typing import Protocol

from django.conf import settings

from memories.extraction import (
    HABITUAL_PRESENT,
    ExtractionError,
    is_about_someone_else,
    load_prompt,
    third_person_verb,
)
from memories.models import MemoryItem
from memories.text import has_han, query_tokens
from traits.models import Trait

logger = logging.getLogger(__name__)


@dataclass
class TraitHint:
    text: str
    subtype: str
    context: str
    key: str
    quality: str
    positive: bool = True  # "likes X" (True) or "does not like X"
    supports: list[MemoryItem] = field(default_factory=list)
    contradicts: list[MemoryItem] = field(default_factory=list)
    existing_trait_id: uuid.UUID | None = None


class Reflector(Protocol):
    name: str

    def reflect(self, groups: list[list[MemoryItem]], traits: list[Trait]) -> list[TraitHint]: ...


# --------------------------------------------------------------------------- offline heuristic

_POSITIVE = re.compile(r"\b(?:prefers?|loves?|likes?|enjoys?|adores?|wants?|is (?:a )?fan of)\s+(.+)", re.I)
_NEGATIVE = re.compile(r"\b(?:dislikes?|hates?|doesn't like|does not like|don't like|do not like|can't stand|"
                       r"avoids?)\s+(.+)", re.I)
# How people say a habit: a frequency word or phrase anywhere in the statement.
_FREQUENCY = re.compile(
    r"\b(?:usually|often|always|regularly|normally|habitually|tends? to|as usual|every (?:single )?"
    r"(?:day|morning|evening|night|week|weekend|weekday|monday|tuesday|wednesday|thursday|friday|saturday|sunday)"
    r"|each (?:day|morning|evening|night|week)|daily|nightly|weekly|most (?:days|mornings|evenings|nights))\b",
    re.I)
_ZH_POSITIVE = re.compile(r"(?:喜欢|爱|偏好)(.+)")
_ZH_NEGATIVE = re.compile(r"(?:讨厌|不喜欢)(.+)")
_ZH_HABIT = re.compile(r"(?:习惯|经常|总是|每天|每周|每晚|通常|一般)(.+)")
# The subject a memory's text opens with: I, the user, or a name ("Alice always ..."); 我, 用户 or a name.
_SUBJECT = re.compile(r"^(?:I|the user|user|[A-Z][\w'-]*)(?::\s+(?i:another|one more|yet another)?|\s+)\s*(?=[A-Za-z])")
_ZH_SUBJECT = re.compile(r"^(?:我|用户)")
_CLAUSE_END = re.compile(r"[;.!?，；。！？]|,\s*(?=(?:it|that|this|which|and|but|so|because|i|my|he|she|they|we)\b)"
                         r"|\s(?:because|since|and it|but|which)\s", re.I)
_ADVERB = re.compile(r"^((?:(?:always|usually|often|never|sometimes|regularly|normally|really|also|still|"
                     r"generally)\s+)*)(.*)$", re.I)
_PLAIN_FREQUENCY = {"every morning": "most mornings", "every day": "most days", "each day": "most days",
                    "daily": "most days", "every evening": "most evenings", "every night": "most nights",
                    "nightly": "most nights", "every week": "most weeks", "weekly": "most weeks",
                    "every weekend": "most weekends", "each morning": "most mornings"}
_CONTEXT_WORDS = {
    "work": {"work", "office", "job", "meet", "boss", "colleagu", "deadlin", "project", "工作", "公司"},
    "learning": {"learn", "studi", "cours", "class", "lesson", "read", "学习", "课程"},
    "social": {"friend", "parti", "club", "team", "朋友", "聚会"},
    "personal": {"famili", "home", "wife", "husband", "kid", "dog", "cat", "cook", "家", "孩子"},
}
_QUALITY = {"prefer": "B", "love": "B", "hate": "B", "adore": "B"}


def _object_key(phrase: str) -> str:
    """The first two content words of the object, stemmed: 'green tea in the morning' -> 'green tea'."""
    return " ".join(query_tokens(phrase)[:2])


# An object that names nothing without the sentence around it: "definitely wants to go", "really loves it".
_NO_OBJECT = re.compile(r"^(?:to\s+)?(?:go|do|come|see|be|try|it|that|this|them|those|these|one|so|too|a lot)\b"
                        r"(?:\s+(?:it|that|this|there|too|so much|a lot|again))*\W*$", re.I)


def _preference_object(phrase: str) -> str:
    """The key of what a preference is about, up to its clause's end; empty when it names nothing."""
    clause = _CLAUSE_END.split(phrase, maxsplit=1)[0].strip()
    return "" if _NO_OBJECT.match(clause) else _object_key(clause)


def _context_of(text: str) -> str:
    tokens = set(query_tokens(text))
    for context, words in _CONTEXT_WORDS.items():
        if tokens & words or any(w in text for w in words if not w.isascii()):
            return context
    return "general"


def trait_is_positive(text: str) -> bool:
    """Whether a trait's text says the user does something or likes it ("Doesn't like X", "不喜欢X" do not)."""
    return not re.match(r"(?:does not|doesn't|dislikes|avoids|can't stand|不喜欢|讨厌|不)", text.strip(), re.I)


def memory_signal(memory: MemoryItem) -> tuple[str, str, str, str] | None:
    """(polarity +/-, key, subtype, quality) a memory gives about a trait, or None.
    A statement about someone else ("Alice's wife loves hiking") says nothing about the user's traits.
    A habit said as one (a frequency word: always, every morning, as usual, 每天) is quality B; a
    preference by a strong verb (prefer, love, hate) B, by a plain one C."""
    if is_about_someone_else(memory.text, memory.tags or []):
        return None
    text = memory.text
    for pattern, polarity in ((_NEGATIVE, "-"), (_POSITIVE, "+"), (_ZH_NEGATIVE, "-"), (_ZH_POSITIVE, "+")):
        match = pattern.search(text)
        if match and (key := _preference_object(match.group(1))):
            verb = re.findall(r"[a-z]+", match.group(0).lower())
            quality = _QUALITY.get((verb[0] if verb else "").rstrip("s"), "C")
            return polarity, key, "preference", quality
    if has_han(text):
        match = _ZH_HABIT.search(text)
        if match and _object_key(match.group(1)):
            return "+", _object_key(match.group(1)), "behavior", "B"
    elif _FREQUENCY.search(text):
        key = _object_key(_FREQUENCY.sub(" ", habitual(_predicate(text))))  # "had another run" is a run
        if key:
            return "+", key, "behavior", "B"
    if "wish" in (memory.tags or []) and _POSITIVE.search(text):  # asked for outright: as strong as a habit
        match = _POSITIVE.search(text)
        assert match is not None
        return "+", _object_key(match.group(1)), "preference", "B"
    if "trait_hint" in (memory.tags or []):
        return "+", _object_key(text), "behavior", "B"
    return None


def _third_person(predicate: str) -> str:
    """'have a flat white' -> 'has a flat white', 'always run' -> 'always runs' (the predicate of an
    'I ...' sentence)."""
    adverbs, predicate = _ADVERB.match(predicate).groups()  # type: ignore[union-attr]
    return adverbs + _third_person_verb(predicate)


def _third_person_verb(predicate: str) -> str:
    verb, _, rest = predicate.partition(" ")
    return f"{third_person_verb(verb)} {rest}".strip()


def _predicate(text: str) -> str:
    """What a statement says its subject does, without the subject, up to the clause's end, in the third
    person: 'I always run before work, it clears my head.' -> 'always runs before work'."""
    stripped = text.strip()
    first_person = bool(re.match(r"I\s", stripped))
    clause = _CLAUSE_END.split(_SUBJECT.sub("", stripped, count=1), maxsplit=1)[0].strip()
    return _third_person(clause) if first_person else clause


def _sentence(predicate: str) -> str:
    return (predicate[:1].upper() + predicate[1:]).strip()


# What ties a report to one occasion ("today", "this morning", "again", "another", an anchored date):
# a habit is what stays when they go.
_OCCASION = re.compile(r"\s*\([^)]*\)|\b(?:today|tonight|this (?:morning|evening|afternoon|week)|yesterday|"
                       r"again|another)\b\s*", re.I)


def habitual(predicate: str) -> str:
    """A reported occasion as the habit it shows: 'had another early morning run today, 6am as usual'
    -> 'has early morning run, 6am as usual' (the past verb in the habitual present, the occasion gone)."""
    words = predicate.split(" ", 1)
    if words and words[0].lower() in HABITUAL_PRESENT:
        predicate = " ".join([HABITUAL_PRESENT[words[0].lower()], *words[1:]])
    plain = _OCCASION.sub(" ", predicate)
    return re.sub(r"\s+,", ",", re.sub(r"\s{2,}", " ", plain)).strip(" ,")


def trait_text(memory_text: str, polarity: str, subtype: str) -> str:
    """The trait as a reviewer would write it, in the memory's language: "Has a flat white most mornings",
    "Usually runs before work", "Prefers tea over coffee", "Doesn't like loud music"; "每天早上喝咖啡",
    "喜欢绿茶"."""
    if has_han(memory_text):
        body = _ZH_SUBJECT.sub("", memory_text.strip()).rstrip(" 。.！!")
        if subtype == "behavior":
            match = _ZH_HABIT.search(body)
            return match.group(0) if match else f"经常{body}"
        match = (_ZH_POSITIVE if polarity == "+" else _ZH_NEGATIVE).search(body)
        what = match.group(1) if match else body
        return f"喜欢{what}" if polarity == "+" else f"不喜欢{what}"
    predicate = _predicate(memory_text)
    if subtype == "behavior":
        habit = habitual(predicate)
        plain = habit
        for phrase, most in _PLAIN_FREQUENCY.items():
            plain = re.sub(rf"\b{phrase}\b", most, plain, flags=re.I)
        had_most = plain != habit or re.search(r"\bmost \w+s\b", plain)
        plain = re.sub(r"\s+", " ", _FREQUENCY.sub(lambda m: m.group(0) if m.group(0).lower().startswith("most")
                                                    else "", plain)).strip()
        return _sentence(plain if had_most else f"usually {plain}")
    pattern = _POSITIVE if polarity == "+" else _NEGATIVE
    match = pattern.search(predicate)
    if match is None:  # said in a later clause: "hasn't been to Japan yet, but really wants to visit Kyoto"
        later = pattern.search(memory_text)
        if later is not None:
            return _sentence(_CLAUSE_END.split(later.group(0), maxsplit=1)[0].strip())
    return _sentence(match.group(0) if match else predicate)


class HeuristicReflector:
    """Offline: preferences and habits stated in the memories, keyed by what they are about."""

    name = "heuristic"

    def reflect(self, groups: list[list[MemoryItem]], traits: list[Trait]) -> list[TraitHint]:
        by_key = {t.memory.data.get("key"): t for t in traits if t.memory.data.get("key")}
        hints: dict[str, TraitHint] = {}
        for group in groups:
            for memory in group:
                signal = memory_signal(memory)
                if signal is None:
                    continue
                polarity, key, subtype, quality = signal
                hint = hints.get(key)
                if hint is None:
                    existing = by_key.get(key)
                    text = existing.memory.text if existing else self._text(memory, polarity, subtype)
                    positive = (polarity == "+") if existing is None else trait_is_positive(existing.memory.text)
                    hint = hints[key] = TraitHint(text=text, subtype=existing.subtype if existing else subtype,
                                                  context=_context_of(memory.text), key=key, quality=quality,
                                                  positive=positive,
                                                  existing_trait_id=existing.pk if existing else None)
                agrees = (polarity == "+") == hint.positive
                (hint.supports if agrees else hint.contradicts).append(memory)
        return list(hints.values())

    @staticmethod
    def _text(memory: MemoryItem, polarity: str, subtype: str) -> str:
        return trait_text(memory.text, polarity, subtype)


# --------------------------------------------------------------------------- LLM


class LLMReflector:
    name = "llm"

    def __init__(self):
        from memories.llm import chat_client

        self._client = chat_client()

    def reflect(self, groups: list[list[MemoryItem]], traits: list[Trait]) -> list[TraitHint]:
        from memories.llm import LLMError

        memories = [m for group in groups for m in group]
        prompt = load_prompt("reflect_user.md").format(
            traits="\n".join(f"- {t.pk}: {t.memory.text}" for t in traits) or "(none)",
            memories="\n".join(f"[{i}] {(m.valid_at or m.created_at).date()}: {m.text}"
                               for i, m in enumerate(memories)))
        try:
            response = self._client.chat.completions.create(
                model=settings.LLM_MODEL, temperature=0, response_format={"type": "json_object"},
                messages=[{"role": "system", "content": load_prompt("reflect_system.md")},
                          {"role": "user", "content": prompt}])
            payload = json.loads(response.choices[0].message.content or "")
        except (LLMError, ValueError) as exc:
            raise ExtractionError(f"reflection LLM failed: {exc}", retryable=True) from exc
        known = {str(t.pk) for t in traits}
        hints = []
        for item in payload.get("traits", []) if isinstance(payload, dict) else []:
            if not isinstance(item, dict) or not isinstance(item.get("text"), str) or not item["text"].strip():
                continue

            def pick(indices):
                return [memories[i] for i in indices or [] if isinstance(i, int) and 0 <= i < len(memories)]

            supports = pick(item.get("supports"))
            if not supports:
                continue
            subtype = str(item["subtype"]) if item.get("subtype") in ("behavior", "preference", "core") \
                else "behavior"
            context = str(item["context"]) if item.get("context") in ("work", "personal", "social", "learning",
                                                                       "general") else "general"
            existing = item.get("existing_trait_id")
            hints.append(TraitHint(
                text=item["text"].strip(), subtype=subtype, context=context, key=_object_key(item["text"]),
                quality=str(item["quality"]) if item.get("quality") in ("A", "B", "C", "D") else "C",
                supports=supports, contradicts=pick(item.get("contradicts")),
                existing_trait_id=uuid.UUID(existing) if isinstance(existing, str) and existing in known else None))
        return hints


def get_reflector() -> Reflector:
    provider = settings.EXTRACTION_PROVIDER or ("llm" if settings.LLM_BASE_URL else "rules")
    return LLMReflector() if provider == "llm" else HeuristicReflector()


