"""Named rows: what the retrievers' SQL returns, read by column name, never by position."""

from __future__ import annotations

from typing import Any, NamedTuple

from django.db.backends.utils import CursorWrapper

from memories.models import MemoryItem
from memories.vocabulary import Tag

# What the scorer needs, read in the same statement as the candidates (alias m = memory_items).
# The moment as epoch seconds: parsing two timestamps per candidate cost 2.4 ms a search.
SCORE_COLUMNS = ("m.memory_type AS memory_type, m.importance AS importance, "
                 "extract(epoch FROM coalesce(m.valid_at, m.created_at))::float8 AS moment, "
                 "COALESCE(m.emotion ->> 'arousal', m.data #>> '{emotion,arousal}') AS arousal, "
                 f"'{Tag.EPISODE}' = ANY(m.tags) AS episode, m.session_id <> '' AS in_session, "
                 "char_length(m.text) AS chars")


class RetrievedRow(NamedTuple):
    """One candidate from a retriever, with what the scorer needs."""

    id: str
    rank_value: float  # cosine distance (semantic side) or rank score (keyword side)
    memory_type: str
    importance: float | None
    moment: float  # valid_at (else created_at) in epoch seconds
    arousal: str | None
    episode: bool = False  # a session's original turns (writing.episode_append), ranked below facts
    in_session: bool = False  # saved with a session_id: it may have a neighbour (search.neighbours)
    chars: int = 0  # the text's length: a /context search stops loading once its budget is full


def named(cursor: CursorWrapper) -> list[dict[str, Any]]:
    """The cursor's rows as dicts keyed by column name."""
    names = [column.name for column in cursor.description]
    return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


def candidate(row: dict[str, Any]) -> RetrievedRow:
    """A named SQL row (SCORE_COLUMNS plus id and rank_value) as the scorer's row."""
    return RetrievedRow(id=str(row["id"]), rank_value=float(row["rank_value"]), memory_type=row["memory_type"],
                        importance=row["importance"], moment=row["moment"], arousal=row["arousal"],
                        episode=bool(row["episode"]), in_session=bool(row["in_session"]), chars=int(row["chars"] or 0))


def candidate_row(memory: MemoryItem, rank_value: float = 0.0) -> RetrievedRow:
    """A loaded memory as the scorer's row: the same columns SCORE_COLUMNS reads in SQL."""
    emotion = memory.emotion or (memory.data.get("emotion") if isinstance(memory.data, dict) else None)
    return RetrievedRow(id=str(memory.id), rank_value=rank_value, memory_type=memory.memory_type,
                        importance=memory.importance, moment=(memory.valid_at or memory.created_at).timestamp(),
                        arousal=emotion.get("arousal") if isinstance(emotion, dict) else None,
                        episode=Tag.EPISODE in (memory.tags or []), in_session=bool(memory.session_id),
                        chars=len(memory.text))
