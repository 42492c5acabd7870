"""Episodes: a session's original turns kept as episodic memories (seed 002's
MemUnit), grown in place while they fit."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from django.conf import settings

from memories import vocabulary
from memories.excerpts import FORGOTTEN_TURN as FORGOTTEN_TURN
from memories.models import (
    EmbeddingState,
    HistoryEvent,
    MemoryHistory,
    MemoryItem,
    MemorySource,
    MemoryType,
    MemoryVector,
    Tenant,
)
from memories.text import content_hash
from memories.vocabulary import Tag
from memories.writing.core import (
    MemorySpec,
    apply_change,
    enqueue_embedding_after_commit,
    search_document,
)
from memories.writing.create import create_batch_locked


def episode_lines(turns: Sequence[dict[str, Any]]) -> str:
    """One line per turn: "[2023-05-08 13:56] Caroline: I went to a support group yesterday"."""
    return "\n".join(f"[{t.get('at', '')[:16].replace('T', ' ')}] {t['speaker']}: {' '.join(t['text'].split())}"
                      for t in turns)


def episode_groups(turns: Sequence[dict[str, Any]], room: int, max_chars: int) -> list[list[dict[str, Any]]]:
    """Split turns into groups whose lines fit: the first into `room` (what the current
    episode has left), the others into max_chars each; a turn is never split."""
    groups: list[list[dict[str, Any]]] = [[]]
    left = room
    for turn in turns:
        size = len(episode_lines([turn])) + 1
        if size > left and (groups[-1] or left < max_chars):  # a fresh part takes even an oversized turn
            groups.append([])
            left = max_chars
        groups[-1].append(turn)
        left -= size
    return groups


def episode_append(*, tenant: Tenant, user_id: str, session_id: str, turns: Sequence[dict[str, Any]], actor: str,
                   job_id: str = "", agent_id: str = "", group_id: str = "", max_chars: int = 2000,
                   narrative: str | None = None) -> list[MemoryItem]:
    """Keep a speaker's original turns of a session as episodic memories (seed 002's MemUnit):
    appended to the session's current episode (text, full text, data.turns; a history UPDATE
    with the added lines; re-embedded) while it stays under max_chars, then in new parts.
    Call under the user's write lock (ingestion holds it). A narrative (with an LLM) is added
    to the last episode touched, as a "Summary:" line and in data.narratives."""
    longest = settings.MEMORY_MAX_TEXT_CHARS - 200  # a title and one very long turn still fit a memory
    turns = [{**t, "text": t["text"][:longest]} for t in turns]
    episode = (MemoryItem.objects.select_for_update()
               .filter(vocabulary.is_current(), tenant=tenant, user_id=user_id, session_id=session_id,
                       memory_type=MemoryType.EPISODIC, tags__contains=[Tag.EPISODE])
               .order_by("-created_at").first())
    room = max_chars - len(episode.text) if episode is not None else 0
    touched: list[MemoryItem] = []
    for index, group in enumerate(episode_groups(turns, room, max_chars)):
        if not group:
            continue
        lines = episode_lines(group)
        indices = [int(t["index"]) for t in group if "index" in t]
        if index == 0 and episode is not None:
            grown = episode

            def grow(row: MemoryItem, lines: str = lines, group: list[dict[str, Any]] = group) -> None:
                row.text = f"{row.text}\n{lines}"
                row.content_hash = content_hash(row.text)
                row.data = {**row.data, "turns": [*row.data.get("turns", []), *group]}
                row.embedding_state = EmbeddingState.PENDING

            apply_change(grown, grow, actor=actor, event=HistoryEvent.UPDATE, new_text=lines, job_id=job_id,
                         reason=f"episode grew by {len(group)} turn(s)", record_data=False,
                         fields=["text", "content_hash", "data", "embedding_state"])
            MemoryItem.objects.filter(id=grown.id).update(search_vector=search_document(grown.text))
            MemorySource.objects.create(item=grown, session_id=session_id, message_indices=indices, job_id=job_id)
            enqueue_embedding_after_commit([episode.id])
            touched.append(episode)
            continue
        part = 1 + MemoryItem.objects.filter(tenant=tenant, user_id=user_id, session_id=session_id,
                                             tags__contains=[Tag.EPISODE], expired_at__isnull=True).count()
        day = str(group[0].get("at", ""))[:10]
        title = f"Conversation {session_id}" + (f", {day}" if day else "") + (f" (part {part})" if part > 1 else "")
        spec = MemorySpec(user_id=user_id, text=f"{title}\n{lines}", memory_type=MemoryType.EPISODIC,
                          importance=0.3, confidence=1.0, tags=[Tag.EPISODE],
                          data={"session_id": session_id, "part": part, "turns": list(group)}, agent_id=agent_id,
                          session_id=session_id, group_id=group_id, source_session_id=session_id,
                          source_message_indices=indices)
        touched.append(create_batch_locked(tenant, [spec], actor, job_id, True)[0].memory)
    if narrative and touched:
        _add_narrative(touched[-1], narrative, actor=actor, job_id=job_id)
    return touched


def _add_narrative(last: MemoryItem, narrative: str, *, actor: str, job_id: str) -> None:
    """The LLM's narrative of the session, as a "Summary:" line of its last episode (and in
    data.narratives), when it still fits a memory."""
    summary = f"Summary: {' '.join(narrative.split())[:500]}"
    if len(last.text) + len(summary) >= settings.MEMORY_MAX_TEXT_CHARS:
        return

    def narrate(row: MemoryItem) -> None:
        row.text = f"{row.text}\n{summary}"
        row.content_hash = content_hash(row.text)
        row.data = {**row.data, "narratives": [*row.data.get("narratives", []), summary[9:]]}

    apply_change(last, narrate, actor=actor, event=HistoryEvent.UPDATE, new_text=summary, job_id=job_id,
                 reason="episode narrative", record_data=False, fields=["text", "content_hash", "data"])
    MemoryItem.objects.filter(id=last.id).update(search_vector=search_document(last.text))




def episode_forget_turns(*, tenant: Tenant, user_id: str, says_it: Callable[[str], bool], actor: str,
                         job_id: str = "") -> int:
    """Redact the turns of a user's episodes that say what they asked to forget: the turn's text becomes
    FORGOTTEN_TURN, the rest of the episode stays, and the history row says how many turns went without
    quoting them. An episode is never deleted to forget one sentence. Returns the turns redacted."""
    redacted = 0
    episodes = (MemoryItem.objects.select_for_update()
                .filter(vocabulary.is_current(), tenant=tenant, user_id=user_id, tags__contains=[Tag.EPISODE]))
    for episode in episodes:
        turns = list(episode.data.get("turns", []))
        hits = [i for i, turn in enumerate(turns) if turn.get("text") != FORGOTTEN_TURN and says_it(turn["text"])]
        if not hits:
            continue

        def forget(row: MemoryItem, turns: list[dict[str, Any]] = turns, hits: list[int] = hits) -> None:
            kept = [{**turn, "text": FORGOTTEN_TURN} if i in hits else turn for i, turn in enumerate(turns)]
            title = row.text.split("\n", 1)[0]
            summaries = [f"Summary: {n}" for n in row.data.get("narratives", [])]
            row.text = "\n".join([title, episode_lines(kept), *summaries])
            row.content_hash = content_hash(row.text)
            row.data = {**row.data, "turns": kept}
            row.embedding_state = EmbeddingState.PENDING

        # The episode's audit rows quoted its turns as they grew: they keep their events, not the words.
        # (Their reasons are the writer's own words: "episode grew by 2 turn(s)".)
        MemoryHistory.objects.filter(memory_id=episode.id).exclude(
            old_text=None, new_text=None, old_data=None, new_data=None).update(
            old_text=None, new_text=None, old_data=None, new_data=None)
        apply_change(episode, forget, actor=actor, event=HistoryEvent.UPDATE, job_id=job_id, record_data=False,
                     reason=f"{len(hits)} turn(s) forgotten at the user's request",
                     fields=["text", "content_hash", "data", "embedding_state"])
        MemoryItem.objects.filter(id=episode.id).update(search_vector=search_document(episode.text))
        MemoryVector.objects.filter(item_id=episode.id).delete()
        enqueue_embedding_after_commit([episode.id])
        redacted += len(hits)
    return redacted
