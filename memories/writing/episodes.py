"""Episodes: a session's original turns kept as episodic memories (seed 002's
MemUnit), grown in place while they fit."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType
from typing import Any

from django.conf import settings
from django.db.models import Q, QuerySet

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


# What an episode's unit fields are computed from: (the episode's turns, its owner's id) -> {"title",
# "summary", "subject", "keywords", "language"} (memories.extraction.episode_unit.unit_of, given by the caller).
Digester = Callable[[Sequence[dict[str, Any]], str], dict[str, Any]]


def episode_unit(memory: MemoryItem) -> dict[str, Any] | None:
    """An episode's unit as it is shown (the API, the admin), None for other memories: the title (a
    narrative's, else the generated one; an episode written before units: its title line), the summary,
    the narrative, subject, keywords, language, the facts drawn from it and its part."""
    if Tag.EPISODE not in (memory.tags or []):
        return None
    return _shown(memory.data or {}, _title_line(memory.text))


def _title_line(text: str) -> str:
    """An episode's title line without its session and part (an episode written before units: its title)."""
    return re.sub(r"( · .*)?( \(part \d+\))?$", "", text.split("\n", 1)[0])


def _shown(data: dict[str, Any], title: str = "Conversation") -> dict[str, Any]:
    narratives = [n if isinstance(n, dict) else {"title": "", "content": n} for n in data.get("narratives", [])]
    return {"title": next((n["title"] for n in narratives if n.get("title")), "") or data.get("title") or title,
            "summary": data.get("summary", ""),
            "narrative": " ".join(n["content"] for n in narratives if n.get("content")),
            "subject": data.get("subject", ""), "keywords": list(data.get("keywords", [])),
            "language": data.get("language", ""), "facts": list(data.get("facts", [])),
            "part": int(data.get("part") or 1)}


def episode_text(data: dict[str, Any]) -> str:
    """An episode's text from its unit: the title ("(part n)"), one line per turn, and a "Summary:" line
    (the narratives, else the generated summary) when it fits."""
    shown = _shown(data)
    title, part, summary = shown["title"], shown["part"], shown["narrative"] or shown["summary"]
    lines = episode_lines(data.get("turns", []))
    # The session on the title line: two sessions that said the same are two episodes (one text, one hash).
    session = f" · {data['session_id']}" if data.get("session_id") else ""
    text = "\n".join(x for x in (title + session + (f" (part {part})" if part > 1 else ""), lines) if x)
    said = f"Summary: {' '.join(summary.split())[:500]}" if summary else ""
    return f"{text}\n{said}" if said and len(text) + len(said) < settings.MEMORY_MAX_TEXT_CHARS else text


def _unit(data: dict[str, Any], user_id: str, digest: Digester | None) -> dict[str, Any]:
    """The episode's data with its unit fields recomputed from its turns, and who else was heard in it."""
    voices = sorted({str(t["speaker_id"]) for t in data.get("turns", [])
                     if t.get("speaker_id") and t["speaker_id"] != user_id})
    return {**data, **(digest(data.get("turns", []), user_id) if digest else {}), "voices": voices}


def episode_append(*, tenant: Tenant, user_id: str, session_id: str, turns: Sequence[dict[str, Any]], actor: str,
                   job_id: str = "", agent_id: str = "", group_id: str = "", max_chars: int = 2000,
                   narrative: dict[str, str] | None = None, digest: Digester | None = None,
                   facts: Sequence[str] = ()) -> list[MemoryItem]:
    """Keep a participant's turns of a session (their own, and what was said to them) as episodic memories:
    seed 002's per-participant episode unit. Appended to the session's current episode (data.turns; a history
    UPDATE with the added lines; re-embedded) while it stays under max_chars, then in new parts. Each part's
    title, summary, subject and keywords are recomputed by `digest`; a narrative ({"title", "content"}, with
    an LLM) and the ids of the facts drawn from the turns go to the last part touched. Call under the user's
    write lock (ingestion holds it)."""
    longest = settings.MEMORY_MAX_TEXT_CHARS - 800  # a title, a summary and one very long turn still fit
    turns = [{**t, "text": t["text"][:longest]} for t in turns]
    episode = (MemoryItem.objects.select_for_update()
               .filter(vocabulary.is_current(), tenant=tenant, user_id=user_id, session_id=session_id,
                       memory_type=MemoryType.EPISODIC, tags__contains=[Tag.EPISODE])
               .order_by("-created_at").first())
    room = max_chars - len(episode_lines(episode.data.get("turns", []))) if episode is not None else 0
    touched: list[MemoryItem] = []
    groups = episode_groups(turns, room, max_chars)
    for index, group in enumerate(groups):
        if not group:
            continue
        last = index == len(groups) - 1
        extra = {"narratives": [{**narrative, "job_id": job_id}]} if narrative and last else {}
        extra_facts = list(facts) if last else []
        indices = [int(t["index"]) for t in group if "index" in t]
        if index == 0 and episode is not None:
            _grow(episode, group, actor=actor, job_id=job_id, digest=digest, narratives=extra.get("narratives", []),
                  facts=extra_facts, user_id=user_id)
            MemorySource.objects.create(item=episode, session_id=session_id, message_indices=indices, job_id=job_id)
            touched.append(episode)
            continue
        part = 1 + MemoryItem.objects.filter(tenant=tenant, user_id=user_id, session_id=session_id,
                                             tags__contains=[Tag.EPISODE], expired_at__isnull=True).count()
        data = _unit({"session_id": session_id, "part": part, "turns": list(group), "facts": extra_facts, **extra},
                     user_id, digest)
        spec = MemorySpec(user_id=user_id, text=episode_text(data), memory_type=MemoryType.EPISODIC,
                          importance=0.3, confidence=1.0, tags=[Tag.EPISODE], data=data, agent_id=agent_id,
                          session_id=session_id, group_id=group_id, source_session_id=session_id,
                          source_message_indices=indices)
        touched.append(create_batch_locked(tenant, [spec], actor, job_id, True)[0].memory)
    return touched


def _grow(episode: MemoryItem, group: list[dict[str, Any]], *, actor: str, job_id: str, digest: Digester | None,
          narratives: list[dict[str, str]], facts: list[str], user_id: str) -> None:
    """The current episode grown by a group of turns (and this job's narrative and facts), its unit redone."""
    lines = episode_lines(group)

    def grow(row: MemoryItem) -> None:
        data = row.data or {}
        row.data = _unit({**data, "turns": [*data.get("turns", []), *group],
                          "narratives": [*data.get("narratives", []), *narratives],
                          "facts": [*data.get("facts", []), *facts]}, user_id, digest)
        row.text = episode_text(row.data)
        row.content_hash = content_hash(row.text)
        row.embedding_state = EmbeddingState.PENDING

    apply_change(episode, grow, actor=actor, event=HistoryEvent.UPDATE, new_text=lines, job_id=job_id,
                 reason=f"episode grew by {len(group)} turn(s)", record_data=False,
                 fields=["text", "content_hash", "data", "embedding_state"])
    MemoryItem.objects.filter(id=episode.id).update(search_vector=search_document(episode.text))
    MemoryVector.objects.filter(item_id=episode.id).delete()
    enqueue_embedding_after_commit([episode.id])


def _heard(tenant: Tenant, speaker_id: str, spoke_in: Mapping[str, str]) -> QuerySet[MemoryItem]:
    """Other users' episodes that hold this user's turns, or (written before units, whose one narrative of
    the whole conversation was copied to every participant) a narrative of a session the user spoke in."""
    heard = Q(data__voices__contains=[speaker_id])
    if spoke_in:
        heard |= Q(session_id__in=sorted(set(spoke_in.values())), data__has_key="narratives")
    return (MemoryItem.objects.filter(heard, tenant=tenant, tags__contains=[Tag.EPISODE])
            .exclude(user_id=speaker_id))


def episodes_hearing(*, tenant: Tenant, speaker_id: str, spoke_in: Mapping[str, str] = MappingProxyType({})
                     ) -> list[str]:
    """The other users whose episodes hold turns this user said to them, or a shared narrative of a job the
    user spoke in (spoke_in: job id -> session id); erasure locks them first."""
    return sorted(set(_heard(tenant, speaker_id, spoke_in).values_list("user_id", flat=True)))


def episodes_unhear(*, tenant: Tenant, speaker_id: str, actor: str, job_ids: set[str] | None = None,
                    spoke_in: Mapping[str, str] = MappingProxyType({}), dry_run: bool = False) -> int:
    """Erasure of one participant, in the other participants' episodes: the turns they said there go (in
    `job_ids` only, for a narrower erasure), and so do the narratives of those jobs (the model read the
    turns) and, in an episode written before units, its narratives when it holds a job the user spoke in
    (spoke_in: job id -> session id; they were the whole conversation's). The unit's title, summary and
    keywords stay (they were made of the owner's own words). The episodes' audit rows keep their events,
    not the words; vectors and full text are redone. Call under the write locks of the episodes' owners
    (episodes_hearing). Returns the episodes changed."""
    rows = _heard(tenant, speaker_id, spoke_in).select_for_update()
    changed = 0
    for episode in rows:
        turns = list(episode.data.get("turns", []))
        gone = [t for t in turns if t.get("speaker_id") == speaker_id
                and (job_ids is None or str(t.get("job_id", "")) in job_ids)]
        shared = (any(isinstance(n, str) for n in episode.data.get("narratives", []))
                  and any(str(t.get("job_id", "")) in spoke_in for t in turns))
        if not gone and not shared:
            continue
        changed += 1
        if dry_run:
            continue
        jobs = {str(t.get("job_id", "")) for t in gone}

        def unhear(row: MemoryItem, gone: list[dict[str, Any]] = gone, jobs: set[str] = jobs,
                   shared: bool = shared) -> None:
            data = row.data or {}
            kept = [t for t in data.get("turns", []) if t not in gone]
            narratives = [n for n in data.get("narratives", [])
                          if (n.get("job_id") not in jobs if isinstance(n, dict) else not shared)]
            row.data = _unit({**data, "turns": kept, "narratives": narratives}, row.user_id, None)
            row.text = episode_text(row.data)
            row.content_hash = content_hash(row.text)
            row.embedding_state = EmbeddingState.PENDING

        MemoryHistory.objects.filter(memory_id=episode.id).update(old_text=None, new_text=None, old_data=None,
                                                                  new_data=None, reason="")
        apply_change(episode, unhear, actor=actor, event=HistoryEvent.UPDATE, record_data=False,
                     reason=f"{len(gone)} turn(s) of an erased participant removed"
                     + (", and the conversation's narrative" if shared else ""),
                     fields=["text", "content_hash", "data", "embedding_state"])
        MemoryItem.objects.filter(id=episode.id).update(search_vector=search_document(episode.text))
        MemoryVector.objects.filter(item_id=episode.id).delete()
        enqueue_embedding_after_commit([episode.id])
    return changed


def episode_forget_turns(*, tenant: Tenant, user_id: str, says_it: Callable[[str], bool], actor: str,
                         job_id: str = "", digest: Digester | None = None) -> int:
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
            title = _title_line(row.text)  # one written before units keeps its title
            narratives = [n for n in row.data.get("narratives", []) if not says_it(n if isinstance(n, str)
                                                                                  else n.get("content", ""))]
            row.data = _unit({"title": title, **row.data, "turns": kept, "narratives": narratives}, user_id, digest)
            row.text = episode_text(row.data)
            row.content_hash = content_hash(row.text)
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
