"""The user's own words behind each memory a reflection cycle reads: the turn of its conversation job (the
clause of it the memory came from, when one turn gave several memories).

A trait grows from what the user said, not from the extractor's rewrite of it: the turn is in the first
person, carries no name substituted for "I" and no day's anchored date, and reads the same way from session
to session, which is what lets paraphrases of one habit meet (issue: one habit, one trait). A memory saved
without a conversation (POST /memories) has no turn: its own text stands for it. A turn the user asked to
forget reads as the marker that replaced it, which is no evidence of anything.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence

from memories.extraction.clauses import turn_clauses
from memories.models import ConversationJob, MemoryItem, MemorySource
from memories.text import has_han

USER_ROLE = "user"


def _overlap(clause: str, text: str) -> float:
    """How much of a clause a memory's text repeats: characters for Chinese, words otherwise."""
    if has_han(clause):
        said, kept = set(clause), set(text)
    else:
        said, kept = set(re.findall(r"\w+", clause.lower())), set(re.findall(r"\w+", text.lower()))
    return len(said & kept) / max(len(said), 1)


def clause_behind(turn: str, memory_text: str) -> str:
    """The clause of a turn a memory's text was written from: the one it repeats most of."""
    parts = turn_clauses(turn) or [turn]
    return max(parts, key=lambda clause: _overlap(clause, memory_text))


def said_of(memories: Sequence[MemoryItem]) -> dict[str, str]:
    """Memory id -> the user's words it came from, for memories drawn from one user turn of a conversation
    job whose turns are still kept (a job's turns are dropped after their retention)."""
    ids = [m.id for m in memories]
    turn_of: dict[str, tuple[str, int]] = {}
    for item_id, job_id, indices in MemorySource.objects.filter(item_id__in=ids).exclude(job_id="").values_list(
            "item_id", "job_id", "message_indices"):
        if len(indices or []) == 1:
            turn_of.setdefault(str(item_id), (job_id, indices[0]))
    jobs = {str(job_id): messages for job_id, messages in ConversationJob.objects.filter(
        id__in={job for job, _ in turn_of.values()}, turns_dropped_at__isnull=True).values_list("id", "messages")}
    shared = Counter(turn_of.values())
    out: dict[str, str] = {}
    for memory in memories:
        job_id, index = turn_of.get(str(memory.id), ("", -1))
        messages = jobs.get(job_id) or []
        if not 0 <= index < len(messages) or messages[index].get("role") != USER_ROLE:
            continue
        turn = str(messages[index].get("content") or "").strip()
        if turn:
            out[str(memory.id)] = clause_behind(turn, memory.text) if shared[(job_id, index)] > 1 else turn
    return out
