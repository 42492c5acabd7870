"""Conversation turns -> extracted statements.

Two extractors behind one interface (base.Extractor):
- rules.RulesExtractor: offline; keeps first-person statements of preference,
  identity, plans, facts and events (English and Chinese), rewritten in the
  third person with the speaker's name, with absolute dates beside relative
  ones; drops greetings, questions and small talk.
- llm_extractor.LLMExtractor: any OpenAI-compatible chat endpoint.
group.group_profile_candidates keeps a group chat's profile.
"""

from __future__ import annotations

from django.conf import settings

from memories.extraction.base import (
    PROMPTS_DIR,
    ExistingMemory,
    ExtractedStatement,
    ExtractionError,
    Extractor,
    Message,
    anchor_relative_dates,
    format_date,
    load_prompt,
)
from memories.extraction.group import (
    about_the_group,
    group_profile_candidates,
)
from memories.extraction.llm_extractor import (
    LLMExtractor,
    parse_llm_reply,
)
from memories.extraction.meaning import MeaningExtractor
from memories.extraction.rewrite_en import HABITUAL_PRESENT, third_person_verb, to_third_person
from memories.extraction.rules import (
    UNKNOWN_SPEAKER,
    RulesExtractor,
    chinese_third_person,
    introduced_name,
    is_about_someone_else,
    speaker_name,
)


def extraction_provider() -> str:
    """Who reads conversations, for extraction and reflection alike: EXTRACTION_PROVIDER, else the LLM when
    LLM_BASE_URL is set, else the offline reader ("meaning"; "rules" is the name it had before it read meaning)."""
    provider = settings.EXTRACTION_PROVIDER or ("llm" if settings.LLM_BASE_URL else "meaning")
    return "meaning" if provider == "rules" else provider


def get_extractor() -> Extractor:
    """The configured extractor (extraction_provider)."""
    provider = extraction_provider()
    if provider == "meaning":
        return MeaningExtractor()
    if provider == "llm":
        if not settings.LLM_BASE_URL:
            raise ExtractionError("EXTRACTION_PROVIDER=llm needs LLM_BASE_URL", retryable=False)
        return LLMExtractor(base_url=settings.LLM_BASE_URL, model=settings.LLM_MODEL, api_key=settings.LLM_API_KEY,
                            timeout=settings.LLM_TIMEOUT)
    raise ExtractionError(f"unknown EXTRACTION_PROVIDER {provider!r} (llm or meaning)", retryable=False)


__all__ = [
    "ExistingMemory",
    "ExtractedStatement",
    "ExtractionError",
    "Extractor",
    "LLMExtractor",
    "MeaningExtractor",
    "Message",
    "PROMPTS_DIR",
    "RulesExtractor",
    "UNKNOWN_SPEAKER",
    "about_the_group",
    "anchor_relative_dates",
    "chinese_third_person",
    "format_date",
    "group_profile_candidates",
    "introduced_name",
    "is_about_someone_else",
    "load_prompt",
    "parse_llm_reply",
    "speaker_name",
    "HABITUAL_PRESENT",
    "third_person_verb",
    "to_third_person",
    "extraction_provider",
    "get_extractor",
]
