"""Extraction through any OpenAI-compatible chat endpoint (memories.llm builds the client); prompts are
files in memories/prompts/. Malformed items are repaired or dropped one by one; a malformed reply as a
whole is a retryable error."""

from __future__ import annotations

import json
import re
from datetime import datetime

from django.conf import settings
from django.utils.dateparse import parse_date, parse_datetime
from django.utils.timezone import is_naive, make_aware

from memories.extraction.base import (
    ExistingMemory,
    ExtractedStatement,
    ExtractionError,
    Message,
    load_prompt,
)
from memories.extraction.forget import forget_cue, says_no_longer
from memories.extraction.golden import (
    examples_for_the_prompt,
)
from memories.models import MemoryType

# --------------------------------------------------------------------------- LLM




_TYPE_ALIASES = {"trait_hint": MemoryType.FACT, "trait hint": MemoryType.FACT, "semantic": MemoryType.FACT,
                 "event": MemoryType.EPISODIC, "plan": MemoryType.TASK, "preference": MemoryType.FACT,
                 "habit": MemoryType.FACT, "wish": MemoryType.FACT}


def _clamp(value, default: float) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return default
    return min(max(number, 0.0), 1.0)


def _parse_datetime(value) -> datetime | None:
    if not isinstance(value, str) or not value:
        return None

    try:
        parsed = parse_datetime(value)
        if parsed is None:
            day = parse_date(value)
            parsed = datetime(day.year, day.month, day.day) if day else None
    except ValueError:
        return None
    if parsed is not None and is_naive(parsed):
        parsed = make_aware(parsed)
    return parsed


def parse_llm_reply(content: str | None, *, speakers: dict[str, str], message_count: int,
                    existing_ids: set[str]) -> tuple[list[ExtractedStatement], list[str]]:
    """Turn the model's reply into candidates. Bad items are dropped with a
    note; a reply that is not JSON at all raises a retryable error."""
    if not content:
        raise ExtractionError("the model returned an empty reply", retryable=True)
    try:
        payload = json.loads(content)
    except json.JSONDecodeError:
        block = re.search(r"\{.*\}", content, re.S)  # repair: JSON wrapped in prose or fences
        try:
            payload = json.loads(block.group(0)) if block else None
        except json.JSONDecodeError:
            payload = None
        if payload is None:
            raise ExtractionError("the model's reply is not valid JSON", retryable=True) from None
    items = payload.get("memories") if isinstance(payload, dict) else payload
    if not isinstance(items, list):
        raise ExtractionError("the model's reply has no 'memories' list", retryable=True)
    candidates, notes = [], []
    for position, item in enumerate(items):
        if not isinstance(item, dict):
            notes.append(f"item {position}: not an object, dropped")
            continue
        text = item.get("text")
        if not isinstance(text, str) or not text.strip():
            notes.append(f"item {position}: no text, dropped")
            continue
        subject = item.get("subject")
        if not subject and len(speakers) == 1:
            subject = next(iter(speakers))  # only a missing subject defaults; a wrong one is dropped
        if subject not in speakers:
            notes.append(f"item {position}: subject {subject!r} is not a participant, dropped")
            continue
        raw_type = str(item.get("type", "fact")).lower()
        memory_type = _TYPE_ALIASES.get(raw_type, raw_type)
        if memory_type not in MemoryType.values or memory_type == MemoryType.TRAIT:
            memory_type = MemoryType.FACT
        tags = [str(t)[:100] for t in item.get("tags", []) if isinstance(t, (str, int))][:20] \
            if isinstance(item.get("tags"), list) else []
        if raw_type in ("trait_hint", "trait hint", "habit", "wish"):
            tags.append("trait_hint" if raw_type.startswith("trait") else raw_type)
        sources = [i for i in item.get("source_messages", []) if isinstance(i, int) and 0 <= i < message_count] \
            if isinstance(item.get("source_messages"), list) else []
        contradicts = item.get("contradicts")
        candidates.append(ExtractedStatement(
            subject=subject, text=text.strip()[: settings.MEMORY_MAX_TEXT_CHARS], memory_type=memory_type,
            importance=_clamp(item.get("importance"), 0.5), confidence=_clamp(item.get("confidence"), 0.5),
            tags=tags, valid_at=_parse_datetime(item.get("valid_at")),
            key=str(item.get("key") or "")[:100], value=str(item.get("value") or "")[:500].lower(),
            contradicts=str(contradicts) if contradicts and str(contradicts) in existing_ids else None,
            source_messages=sources, forget=item.get("forget") is True,
        ))
    return candidates, notes


def extraction_system_prompt() -> str:
    """The extraction prompt with the golden cases as its examples (memories/extraction/golden.py)."""
    return f"{load_prompt('extract_system.md')}\n\nExamples:\n\n{examples_for_the_prompt()}\n"


class LLMExtractor:
    """Extraction through any OpenAI-compatible chat endpoint."""

    name = "llm"

    def __init__(self, *, base_url: str, model: str, api_key: str, timeout: float):
        from memories.llm import openai_client  # lazily: openai takes ~0.5 s to import

        self.model = model
        # Retries belong to the Celery task (bounded, with backoff), not the client.
        self._client = openai_client(base_url=base_url, api_key=api_key, timeout=timeout)
        self.notes: list[str] = []

    def extract(self, *, messages: list[Message], speakers: dict[str, str], existing: list[ExistingMemory],
                now: datetime) -> list[ExtractedStatement]:
        from memories.llm import LLMError, describe_failure  # lazily, as in __init__

        conversation = "\n".join(
            f"[{m.index}] {(m.created_at or now).date().isoformat()} {m.name or m.role} ({m.role}): {m.content}"
            for m in messages
        )
        user_prompt = load_prompt("extract_user.md").format(
            today=now.date().isoformat(),
            participants="\n".join(f"- {name}" for name in speakers) or "- (none)",
            existing="\n".join(f"- {m.id}: {m.text}" for m in existing) or "(none)",
            conversation=conversation,
        )
        try:
            response = self._client.chat.completions.create(
                model=self.model, temperature=0, response_format={"type": "json_object"},
                messages=[{"role": "system", "content": extraction_system_prompt()},
                          {"role": "user", "content": user_prompt}],
            )
        except LLMError as exc:
            message, retryable = describe_failure(exc)
            raise ExtractionError(message, retryable=retryable) from exc
        except ValueError as exc:  # an HTTP body that is not JSON
            raise ExtractionError(f"LLM sent an unreadable response: {exc}", retryable=True) from exc
        content = response.choices[0].message.content if response.choices else None
        candidates, self.notes = parse_llm_reply(content, speakers=speakers, message_count=len(messages),
                                                 existing_ids={m.id for m in existing})
        for candidate in candidates:  # a forget acts on a confident reading: the turn asks in a request's words
            if candidate.forget and not any(forget_cue(messages[i].content) or says_no_longer(messages[i].content)
                                            for i in candidate.source_messages):
                candidate.forget = False
                self.notes.append(f"{candidate.text!r}: read as a forget, but its turn asks nothing; kept as said")
        return candidates

    def narrate(self, *, messages: list[Message], now: datetime, owner: str) -> str:
        """Seed 002's narrative of one participant's episode, as the model's JSON {"title", "content"}: what
        happened, from `owner`'s point of view, read from the turns their episode holds only."""
        return _narrate(self._client, self.model, messages, now, owner)


def _narrate(client, model: str, messages: list[Message], now: datetime, owner: str) -> str:
    from memories.llm import LLMError  # lazily, as in __init__

    conversation = f"Participant: {owner}\n" + "\n".join(
        f"{(m.created_at or now).date().isoformat()} {m.name or m.role}: {m.content}" for m in messages)
    try:
        response = client.chat.completions.create(
            model=model, temperature=0,
            messages=[{"role": "system", "content": load_prompt("episode_system.md")},
                      {"role": "user", "content": conversation}])
    except LLMError as exc:
        raise ExtractionError(f"LLM failed: {exc}", retryable=True) from exc
    text = (response.choices[0].message.content or "").strip() if response.choices else ""
    if not text:
        raise ExtractionError("the model returned an empty narrative", retryable=True)
    return text
