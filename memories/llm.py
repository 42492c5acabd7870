"""The one module that imports `openai`: every OpenAI-compatible client the
service uses (chat for extraction, reflection and the condensed context;
embeddings) is built here, and their errors are named here. An import-linter
contract in pyproject.toml forbids `openai` anywhere else, so a new caller
cannot quietly build a client with other timeouts or retries.

Callers import this module inside the function that needs it: `openai` takes
a noticeable share of a process's start, and most processes never call an LLM.
"""

from __future__ import annotations

import openai
from django.conf import settings

LLMError = openai.OpenAIError  # what any call below may raise


def openai_client(*, base_url: str | None, api_key: str, timeout: float, max_retries: int = 0) -> openai.OpenAI:
    """A client of any OpenAI-compatible endpoint. No retries by default: they belong to the Celery task
    (bounded, with backoff), or to a caller that says so."""
    return openai.OpenAI(base_url=base_url or None, api_key=api_key, timeout=timeout, max_retries=max_retries)


def chat_client(*, timeout: float | None = None) -> openai.OpenAI:
    """The configured chat endpoint (LLM_BASE_URL, LLM_API_KEY; LLM_TIMEOUT unless told otherwise)."""
    return openai_client(base_url=settings.LLM_BASE_URL, api_key=settings.LLM_API_KEY,
                         timeout=settings.LLM_TIMEOUT if timeout is None else timeout)


def describe_failure(exc: Exception) -> tuple[str, bool]:
    """What a failed call says, and whether trying again may help: timeouts, 429, an unreachable
    endpoint, 5xx and 408 may pass; another status will not; an unreadable body may."""
    if isinstance(exc, openai.APITimeoutError):
        return f"LLM timed out: {exc}", True
    if isinstance(exc, openai.RateLimitError):
        return f"LLM rate limited (429): {exc}", True
    if isinstance(exc, openai.APIConnectionError):
        return f"LLM unreachable: {exc}", True
    if isinstance(exc, openai.APIStatusError):
        return f"LLM returned {exc.status_code}: {exc}", exc.status_code >= 500 or exc.status_code == 408
    if isinstance(exc, openai.APIResponseValidationError):
        return f"LLM sent an unreadable response: {exc}", True
    return f"LLM failed: {exc}", True
