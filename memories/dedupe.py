"""What a new statement does to what is already remembered: one pure function.

    decide(candidate, neighbours) -> Decision

ADD         new information
UPDATE      a refinement of one memory (richer, or a shorter correction that
            brings a word the memory lacks): the memory is superseded
INVALIDATE  a contradiction (a slot's new value, or a named contradiction):
            the memory stops holding and the candidate is added
DELETE      the user asks to forget ("forget that I ...", "别记住...", "我不再...了"):
            the memory it points at is archived, nothing is added
NOOP        nothing new (the same text, the same slot value, or a restatement
            whose words are all in a memory already)

Ingestion (conversations) and `POST /memories` with `infer: true` gather the
neighbours, call decide, and apply the decision through the writer.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal

from memories.text import han_pairs, has_han, normalize_text, query_tokens

Operation = Literal["ADD", "UPDATE", "INVALIDATE", "DELETE", "NOOP"]
ADD: Final = "ADD"
UPDATE: Final = "UPDATE"
INVALIDATE: Final = "INVALIDATE"
DELETE: Final = "DELETE"
NOOP: Final = "NOOP"
FORGET_MATCH = 0.6  # how closely a forget request must point at a memory (similarity or shared words)


@dataclass(frozen=True)
class Proposal:
    """A statement to remember (or, forget=True, to forget)."""

    text: str
    key: str = ""  # a slot (name, residence, ...) and its value, when a rule recognised one
    value: str = ""
    contradicts: str | None = None  # a memory the extractor named as contradicted
    forget: bool = False


@dataclass(frozen=True)
class Neighbour:
    """A current memory of the same user near the proposal."""

    id: str
    text: str
    similarity: float  # cosine, 0..1
    key: str = ""
    value: str = ""


@dataclass(frozen=True)
class Decision:
    operation: Operation
    target: str | None = None  # the neighbour it changes (UPDATE, INVALIDATE, DELETE, NOOP)
    reason: str = ""
    also: tuple[str, ...] = ()  # DELETE: every other neighbour the forget request points at as closely


def _words(text: str) -> set[str]:
    return set(query_tokens(text))


def says_forgotten(forgotten: str, text: str, *, names: frozenset[str] = frozenset()) -> bool:
    """Whether a text (an episode's turn) says what the user asked to forget: most of the forgotten
    statement's words, the speaker's name aside ("User plays the cello" vs "I play the cello in ...")."""
    if has_han(forgotten):  # jieba cuts the same words differently in two sentences: compare character pairs
        for name in names:
            forgotten = forgotten.replace(name, "")
        mine, theirs = han_pairs(forgotten), han_pairs(text)
    else:
        mine, theirs = _words(forgotten) - {name.casefold() for name in names}, _words(text)
    return bool(mine) and len(mine & theirs) / len(mine) >= FORGET_MATCH


def shared_words(a: str, b: str) -> float:
    """Share of a's words that b has too (0 when a has none)."""
    mine = _words(a)
    return len(mine & _words(b)) / len(mine) if mine else 0.0


def decide(candidate: Proposal, neighbours: list[Neighbour], *, near_duplicate: float = 0.95) -> Decision:
    """See the module docstring; neighbours are the user's current memories, closest first."""
    if candidate.forget:
        best, best_match = None, 0.0
        for neighbour in neighbours:
            match = max(neighbour.similarity, shared_words(candidate.text, neighbour.text))
            if match > best_match:
                best, best_match = neighbour, match
        if best is None or best_match < FORGET_MATCH:
            return Decision(NOOP, reason="asked to forget something not remembered")
        others = tuple(n.id for n in neighbours if n.id != best.id
                       and max(n.similarity, shared_words(candidate.text, n.text)) >= FORGET_MATCH)
        return Decision(DELETE, best.id, reason=f"the user asked to forget it (match {best_match:.2f})",
                        also=others)

    same = next((n for n in neighbours if normalize_text(n.text) == normalize_text(candidate.text)), None)
    if same is not None:
        return Decision(NOOP, same.id, reason="same content")

    if candidate.contradicts:
        named = next((n for n in neighbours if n.id == candidate.contradicts), None)
        if named is not None:
            return Decision(INVALIDATE, named.id, reason=f"contradicts {named.id}")

    if candidate.key and candidate.value:
        slot = next((n for n in neighbours if n.key == candidate.key), None)
        if slot is not None:
            if slot.value == candidate.value:
                return Decision(NOOP, slot.id, reason=f"same {candidate.key}")
            return Decision(INVALIDATE, slot.id, reason=f"new {candidate.key}: {slot.value} -> {candidate.value}")

    near = neighbours[0] if neighbours and neighbours[0].similarity >= near_duplicate else None
    if near is not None:
        if shared_words(candidate.text, near.text) >= 1.0:
            return Decision(NOOP, near.id, reason=f"near duplicate (cosine {near.similarity:.3f}) with nothing new")
        return Decision(UPDATE, near.id, reason=f"refines a near duplicate (cosine {near.similarity:.3f})")
    return Decision(ADD, reason="new information")
