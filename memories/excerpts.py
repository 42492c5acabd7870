"""What of an episode the agent is shown: the turns that match the question,
with one neighbour either side, speaker-named, never the whole session.

Episodes are for finding (search ranks a session's raw turns well); pasting a
whole session into a context block spends its budget on chit-chat and pushes
the evidence out. A pure function, table-tested in tests/test_read_path.py.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from memories.text import han_pairs, query_tokens

FORGOTTEN_TURN = "[forgotten at the user's request]"  # writing.episodes redacts forgotten turns to this
BEST_TURNS = 2  # matching turns an excerpt shows at most, each with its neighbours
GAP = " … "


def _terms(text: str) -> set[str]:
    """Words (stemmed) and, for Chinese, character pairs: jieba may cut one word two ways."""
    return set(query_tokens(text)) | han_pairs(text)


def _turn(turn: dict[str, Any]) -> str:
    return f"{turn.get('speaker', '')}: {' '.join(str(turn.get('text', '')).split())}"


def matching_turns(turns: Sequence[dict[str, Any]], query: str) -> list[int]:
    """Indices of the turns that share most terms with the query, best first (at most BEST_TURNS); none
    when no turn shares any (the episode then has nothing to show for this question). Forgotten turns
    never match."""
    wanted = _terms(query)
    scored = sorted(((len(wanted & _terms(str(t.get("text", "")))), -i) for i, t in enumerate(turns)
                     if t.get("text") != FORGOTTEN_TURN), reverse=True)
    return [-i for score, i in scored[:BEST_TURNS] if score > 0]


def episode_excerpt(turns: Sequence[dict[str, Any]], query: str, max_chars: int) -> tuple[str, str]:
    """(the excerpt, the date of its best turn): the matching turns with one neighbour either side, in
    order, consecutive ones joined by " / " and gaps marked " … ", within max_chars. Neighbours go before
    the best turn is cut; a turn longer than the cap is cut with "…". ("", "") when no turn matches."""
    best = matching_turns(turns, query)
    if not best:
        return "", ""
    date = str(turns[best[0]].get("at", ""))[:10]
    for with_neighbours in (True, False):
        chosen = sorted({j for i in best for j in ((i - 1, i, i + 1) if with_neighbours else (i,))
                         if 0 <= j < len(turns) and turns[j].get("text") != FORGOTTEN_TURN})
        text = _joined(turns, chosen)
        if len(text) <= max_chars:
            return text, date
    text = _turn(turns[best[0]])
    return (text if len(text) <= max_chars else text[: max(max_chars - 1, 0)].rstrip() + "…"), date


def _joined(turns: Sequence[dict[str, Any]], chosen: list[int]) -> str:
    parts: list[str] = []
    for position, index in enumerate(chosen):
        if position:
            parts.append(" / " if index == chosen[position - 1] + 1 else GAP)
        parts.append(_turn(turns[index]))
    return "".join(parts)
