"""What the review gate reads of a conversation besides the statements' own words: the turns as they were
said, before any rewrite. A statement is held when the clause it came from carries sensitive data (issue 55:
"我是同性恋" rewritten "用户是同性恋", "I voted Green" rewritten "User voted Green" went past a detector that knew
the first person only), when its turn carries sensitive data no statement's clause explains (a number split
over clauses), or when its turn carries it only together with the speaker's next or previous turn ("my card
is 4111 1111" / "1111 1111"). An episode keeps the turns redacted, their neighbours in view."""

from __future__ import annotations

from collections.abc import Sequence

from memories.extraction import ExtractedStatement, Message
from memories.governance import redact_sensitive, redact_sensitive_turns, sensitive_across_turns, sensitive_kinds


def user_turns_by_speaker(messages: list[Message]) -> list[list[Message]]:
    """Each speaker's user turns, in order (the turns a number may be split over)."""
    by_speaker: dict[str, list[Message]] = {}
    for message in messages:
        if message.role == "user":
            by_speaker.setdefault(message.name, []).append(message)
    return list(by_speaker.values())


def split_sensitive(messages: list[Message]) -> dict[int, list[str]]:
    """Message index -> the kinds of sensitive data it carries only together with the speaker's next or
    previous turn ("my card is 4111 1111" / "1111 1111"): what is extracted from it waits for review."""
    found: dict[int, list[str]] = {}
    for turns in user_turns_by_speaker(messages):
        for position, kinds in sensitive_across_turns([t.content for t in turns]).items():
            found[turns[position].index] = kinds
    return found


# Kinds whose turn is held whole: a special category colours the clauses around it ("我哥有双相情感障碍，最近又
# 自己停药了": the second clause is his health too; "I'm a libertarian; taxation is theft"), and a secret spelled
# out over commas is cut into clauses ("T as in tango, I, G, E, R, seven seven").
TURN_WIDE = frozenset({"secret", "health", "sex_life", "religion", "politics", "ethnicity", "union"})


def said_sensitive(statements: Sequence[ExtractedStatement], messages: list[Message]) -> dict[int, list[str]]:
    """id(statement) -> the kinds the gate holds it for from what was said: its clause as said (`said`), the
    kinds of its source turns that no statement's clause from those turns carries, and its turns' TURN_WIDE
    kinds. A statement with no clause (an LLM's, an introduction) answers for its whole turns."""
    by_index = {message.index: message.content for message in messages}
    turn_kinds = {index: set(sensitive_kinds(text)) for index, text in by_index.items()}
    clause_kinds = {id(s): set(sensitive_kinds(s.said)) if s.said else None for s in statements}
    explained: dict[int, set[str]] = {}
    for statement in statements:
        for index in statement.source_messages:
            explained.setdefault(index, set()).update(clause_kinds[id(statement)] or ())
    out: dict[int, list[str]] = {}
    for statement in statements:
        sources = [index for index in statement.source_messages if index in turn_kinds]
        own = clause_kinds[id(statement)]
        kinds = set(own) if own is not None else {k for index in sources for k in turn_kinds[index]}
        kinds |= {k for index in sources for k in turn_kinds[index] - explained.get(index, set())}
        kinds |= {k for index in sources for k in turn_kinds[index] & TURN_WIDE}
        out[id(statement)] = sorted(kinds)
    return out


def redacted_turns(messages: list[Message]) -> dict[int, str]:
    """Message index -> the turn as an episode keeps it: user turns redacted with their neighbours in view."""
    redacted = {m.index: redact_sensitive(m.content) for m in messages if m.role != "user"}
    for turns in user_turns_by_speaker(messages):
        redacted.update(zip((t.index for t in turns), redact_sensitive_turns([t.content for t in turns]),
                            strict=True))
    return redacted


HELD = "[held for review]"


def shown_while_held(text: str, reasons: Sequence[str]) -> str:
    """What a conversation job's page shows of a statement the gate held: nothing of what it held it for
    (issue 55: the operations showed held statements verbatim, after a reject too). Held for sensitive
    data: the text with each finding replaced by its marker, or HELD when the finding was in what was said
    rather than in the statement; held for another reason (unsure, contradicting), the text."""
    if "sensitive" not in reasons:
        return text
    redacted = redact_sensitive(text)
    return redacted if redacted != text else HELD
