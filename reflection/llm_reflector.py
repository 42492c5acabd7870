"""The LLM reflector (LLMReflector: an OpenAI-compatible chat endpoint, LLM_BASE_URL, reads a user's memories
and says which traits they support or contradict) and the choice between it and the offline MeaningReflector
(get_reflector), by the same provider setting the extractor reads."""

from __future__ import annotations

import json
import uuid

from django.conf import settings

from memories.extraction import ExtractionError, extraction_provider, load_prompt
from memories.models import MemoryItem
from reflection.reflectors import MeaningReflector, Reflector, TraitHint, object_key
from traits.models import Trait


class LLMReflector:
    name = "llm"

    def __init__(self):
        from memories.llm import chat_client  # lazily: memories.llm imports openai (~0.5 s)

        self._client = chat_client()

    def reflect(self, groups: list[list[MemoryItem]], traits: list[Trait]) -> list[TraitHint]:
        from memories.llm import LLMError  # lazily, as in __init__

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
                text=item["text"].strip(), subtype=subtype, context=context, key=object_key(item["text"]),
                quality=str(item["quality"]) if item.get("quality") in ("A", "B", "C", "D") else "C",
                supports=supports, contradicts=pick(item.get("contradicts")),
                existing_trait_id=uuid.UUID(existing) if isinstance(existing, str) and existing in known else None))
        return hints


def get_reflector() -> Reflector:
    """The reflector of the configured reader (memories.extraction.extraction_provider): the LLM's, else meaning's."""
    return LLMReflector() if extraction_provider() == "llm" else MeaningReflector()


