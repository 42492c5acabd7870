"""The original turns behind the memories a search found (seed 002 §5.7's original_data): the turns of the
conversation job each memory was drawn from, as its sources cite them.

What a turn shows is what an episode keeps of it: sensitive data replaced by its marker (a user's turns
redacted together with their neighbours, as a number split over two turns is found), a turn the user asked
to forget as the marker that replaced it, a speaker name that carries sensitive data left out. A job whose
turns were dropped after their retention (`turns_dropped_at`), or a memory saved without a conversation,
has none. Erasure empties the jobs of everyone who spoke in them, so an erased participant's words are
not here either.
"""

from __future__ import annotations

import uuid
from typing import Any

from django.conf import settings

from memories.models import ConversationJob, MemoryItem
from memories.sensitive import redact, redact_turns, sensitive_kinds_in

TURNS_PER_MEMORY = 10  # an episode cites a whole session; its first turns are shown, `turns_total` says how many


def shown_turns(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A job's turns as a search shows them (pure): {index, role, speaker, content, created_at}."""
    detectors = settings.SENSITIVE_DETECTORS
    contents = [str(m.get("content") or "") for m in messages]
    shown = {i: redact(text, detectors) for i, text in enumerate(contents) if messages[i].get("role") != "user"}
    by_speaker: dict[str, list[int]] = {}
    for i, message in enumerate(messages):
        if message.get("role") == "user":
            by_speaker.setdefault(str(message.get("name") or ""), []).append(i)
    for indices in by_speaker.values():
        shown.update(zip(indices, redact_turns([contents[i] for i in indices], detectors), strict=True))
    out = []
    for i, message in enumerate(messages):
        name = str(message.get("name") or "")
        out.append({"index": i, "role": str(message.get("role") or ""),
                    "speaker": "" if name and sensitive_kinds_in(name, detectors) else name,
                    "content": shown[i], "created_at": message.get("created_at")})
    return out


def _is_id(value: str) -> bool:
    try:
        uuid.UUID(value)
    except ValueError:
        return False
    return True


def turns_behind(tenant_id: int, memories: list[MemoryItem]) -> dict[str, dict[str, Any]]:
    """Memory id -> {"turns": the cited turns (at most TURNS_PER_MEMORY, in order), "turns_total"}, from the
    sources the search loaded with the memories (`loaded_sources`) and one read of their jobs."""
    cited: dict[str, list[tuple[str, int]]] = {}
    for memory in memories:
        sources = getattr(memory, "loaded_sources", None) or []
        cited[str(memory.id)] = [(str(s.get("job_id") or ""), int(index)) for s in sources
                                 for index in s.get("message_indices") or [] if s.get("job_id")]
    wanted = {job for pairs in cited.values() for job, _ in pairs if _is_id(job)}
    jobs = ({str(job_id): shown_turns(messages or []) for job_id, messages in ConversationJob.objects.filter(
        tenant_id=tenant_id, id__in=sorted(wanted), turns_dropped_at__isnull=True).values_list("id", "messages")}
        if wanted else {})
    out: dict[str, dict[str, Any]] = {}
    for memory_id, pairs in cited.items():
        turns = [{"job_id": job, **jobs[job][index]} for job, index in dict.fromkeys(pairs)
                 if job in jobs and 0 <= index < len(jobs[job])]
        out[memory_id] = {"turns": turns[:TURNS_PER_MEMORY], "turns_total": len(turns)}
    return out
