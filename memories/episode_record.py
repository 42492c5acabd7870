"""A conversation job's episodes (seed 002's per-participant episode units): which turns each participant's
episode holds (memories.extraction.episode_unit.perspectives: their own, the assistant's answers to them,
others' turns addressed to them by name), the narrative an LLM writes of each participant's view, and the
writing of the episodes with the facts the job drew for that participant."""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from typing import Any

from memories.extraction import UNKNOWN_SPEAKER, ExtractionError, LLMExtractor, Message, RulesExtractor
from memories.extraction.episode_unit import Seen, perspectives, read_narrative, unit_of
from memories.governance import redact_sensitive
from memories.models import ConversationJob, MemoryItem
from memories.screening import redacted_turns
from memories.text import has_han
from memories.writing import FORGOTTEN_TURN, episode_append


def turns_seen(job: ConversationJob, messages: Sequence[Message], speakers: dict[str, str],
               erased: Collection[str] = ()) -> dict[str, list[int]]:
    """Each participant's turns (message indices): a user turn whose speaker is unknown is no one's, and
    nothing an erased participant said is kept anywhere."""
    seen = []
    for message in messages:
        if not message.content.strip():
            continue
        if message.role == "user":
            name = RulesExtractor.speaker_of(message, speakers)
            if name is None or speakers[name] in erased:
                continue
            seen.append(Seen(message.index, speakers[name], message.content))
        else:
            seen.append(Seen(message.index, "", message.content))
    return {user_id: indices for user_id, indices in perspectives(seen, speakers, job.user_id).items()
            if user_id not in erased}


def worth_an_episode(texts: Sequence[str]) -> bool:
    """An episode is kept for a participant who said more than greetings and thanks."""
    return any(not RulesExtractor.small_talk(text) for text in texts)


def narratives(job: ConversationJob, extractor: LLMExtractor, messages: Sequence[Message],
               speakers: dict[str, str], now: Any, warnings: list[str]) -> dict[str, tuple[str, str]]:
    """With an LLM, seed 002's narrative of each participant's episode ({"title", "content"}), written from
    the turns that episode holds only: a participant's narrative never reads what was not said to them.
    A failure skips that narrative (never required) with a warning."""
    out: dict[str, tuple[str, str]] = {}
    names = {user_id: name for name, user_id in speakers.items()}
    for user_id, indices in sorted(turns_seen(job, messages, speakers).items()):
        own = [messages[i].content for i in indices if messages[i].role == "user"
               and RulesExtractor.speaker_of(messages[i], speakers) == names.get(user_id)]
        if not worth_an_episode(own):
            continue
        try:
            title, content = read_narrative(extractor.narrate(messages=[messages[i] for i in indices], now=now,
                                                              owner=names.get(user_id, UNKNOWN_SPEAKER["en"])))
        except ExtractionError as exc:
            warnings.append(f"episode narrative skipped: {exc}")
            continue
        if content:
            out[user_id] = (title, content)
    return out


def record_episodes(job: ConversationJob, messages: Sequence[Message], speakers: dict[str, str], erased: set[str],
                    *, forgotten: Callable[[str], Callable[[str], bool]], narrated: dict[str, tuple[str, str]],
                    added: Sequence[MemoryItem], max_chars: int) -> tuple[list[str], int]:
    """Each participant's episode of the session (their own turns and what was said to them), with their
    narrative and the facts drawn for them. forgotten(user_id) tells the turns that user asked to forget.
    Returns the episode ids and how many participants said nothing worth an episode."""
    redacted = redacted_turns(list(messages))
    episodes: list[str] = []
    idle = 0
    for user_id, indices in sorted(turns_seen(job, messages, speakers, erased).items()):
        turns = [_turn(job, messages[i], speakers, redacted[i], forgotten, user_id) for i in indices]
        if not worth_an_episode([t["text"] for t in turns if t["speaker_id"] == user_id]):
            idle += 1  # greetings and thanks only: not even an episode
            continue
        title, content = narrated.get(user_id, ("", ""))
        if any(t["text"] == FORGOTTEN_TURN for t in turns):
            content = ""  # the model read what was just asked to be forgotten
        narrative = {"title": redact_sensitive(title), "content": redact_sensitive(content)} if content else None
        facts = [str(m.id) for m in added if m.user_id == user_id]
        for episode in episode_append(tenant=job.tenant, user_id=user_id, session_id=job.session_id, turns=turns,
                                      actor="extraction", job_id=str(job.id), agent_id=job.agent_id,
                                      group_id=job.group_id, max_chars=max_chars, narrative=narrative,
                                      digest=unit_of, facts=facts):
            episodes.append(str(episode.id))
    return episodes, idle


def _turn(job: ConversationJob, message: Message, speakers: dict[str, str], text: str,
          forgotten: Callable[[str], Callable[[str], bool]], owner: str) -> dict[str, Any]:
    """One kept turn of `owner`'s episode: who said it (their name as said, their user id; "" for the
    assistant) and when; blanked when its speaker or the episode's owner asked to forget what it says, or
    when the job's forget blanked the stored turn (dedupe.turns_forgotten)."""
    if message.role == "user":
        speaker = RulesExtractor.speaker_of(message, speakers) or UNKNOWN_SPEAKER["en"]
        speaker_id = speakers.get(speaker, "")
    else:
        speaker, speaker_id = message.name or message.role, ""
    if has_han(message.content):  # speakers named in the conversation's language
        speaker = {UNKNOWN_SPEAKER["en"]: UNKNOWN_SPEAKER["zh"], "assistant": "助手"}.get(speaker, speaker)
    if forgotten(owner)(message.content) or (speaker_id and forgotten(speaker_id)(message.content)) \
            or job.messages[message.index].get("content") == FORGOTTEN_TURN:  # the job's forget blanked it
        text = FORGOTTEN_TURN
    return {"speaker": speaker, "speaker_id": speaker_id, "role": message.role, "text": text,
            "index": message.index, "job_id": str(job.id), "at": (message.created_at or job.created_at).isoformat()}
