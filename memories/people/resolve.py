"""Which known entity a mention is, or that it is someone new: a pure decision with a table test.

A name the user already gave is that person (an alias), unless the relation said with it cannot be theirs
("my sister Ana" is not the friend Ana: two people, since merging two people is worse than keeping one
twice — a reviewer merges). A relation alone is the person of that relation the user spoke of last ("my
sister" with two sisters is the one talked about most recently). A name given to a relation known without
one names them ("my boss" then "my boss Dave"). A capitalised word that is only a candidate name counts
when it is someone's alias already. Relation codes are the same across languages, so "Mum", "my mother" and
"妈妈" are one person.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from memories.people.mentions import Mention, may_change


@dataclass(frozen=True)
class Known:
    """What the decision needs of a known entity."""

    id: str
    name: str = ""
    relation: str = ""
    keys: frozenset[str] = frozenset()
    recency: float = 0.0  # larger: mentioned later
    kind: str = "person"


@dataclass(frozen=True)
class Resolution:
    """What a mention is: `person` a known id (None: someone new), the name and relation it gives them (a
    relation that differs from the known one is a change), and the words to keep as aliases."""

    person: str | None
    name: str = ""
    relation: str = ""
    word: str = ""
    aliases: tuple[str, ...] = ()
    maybe: str | None = None  # someone new who may be this known one (a reviewer decides: merge or not)


def alias_key(text: str) -> str:
    """What an alias is matched on: case and spacing aside."""
    return " ".join(text.casefold().split())


def _aliases(mention: Mention) -> tuple[str, ...]:
    return tuple(dict.fromkeys(a for a in (mention.name, mention.word) if a))


def _latest(candidates: Sequence[Known]) -> Known:
    return max(candidates, key=lambda known: known.recency)


def resolve(mention: Mention, known: Sequence[Known]) -> Resolution | None:
    """The entity a mention is (see the module docstring); None when it names no one (a capitalised word
    nobody is called)."""
    code, aliases = mention.code, _aliases(mention)
    if mention.name:
        key = alias_key(mention.name)
        named = [k for k in known if key in k.keys]
        fitting = [k for k in named if not code or may_change(k.relation, code)]
        if fitting:
            best = _latest([k for k in fitting if k.relation == code] or fitting)
            return Resolution(best.id, name=best.name or mention.name, relation=code or best.relation,
                              word=mention.word, aliases=aliases)
        if mention.known_only or named:
            return None if mention.known_only else Resolution(None, mention.name, code, mention.word, aliases,
                                                                maybe=_latest(named).id)
        unnamed = [k for k in known if code and k.relation == code and not k.name and code != "other"]
        if unnamed:
            return Resolution(_latest(unnamed).id, name=mention.name, relation=code, word=mention.word,
                              aliases=aliases)
        return Resolution(None, name=mention.name, relation=code, word=mention.word, aliases=aliases)
    if not code:
        return None
    if code == "other":  # "my friend's dog": the same words again are the same one
        said = [k for k in known if alias_key(mention.word) in k.keys]
        return Resolution(_latest(said).id if said else None, relation=code, word=mention.word, aliases=aliases)
    same = [k for k in known if k.relation == code]
    if same:
        best = _latest(same)
        return Resolution(best.id, name=best.name, relation=code, word=mention.word, aliases=aliases)
    return Resolution(None, relation=code, word=mention.word, aliases=aliases)


# Relations a user has one of at a time: a named one and an unnamed one are the same person.
ONE_OF_A_KIND = frozenset({"mother", "father", "partner", "mother_in_law", "father_in_law"})


def unnamed_twin(person: Known, known: Sequence[Known]) -> str | None:
    """The entity a just-named person has been all along ("老公" kept unnamed, then "我老公刘洋"): the one
    other entity of a one-of-a-kind relation with no name, or None."""
    if not person.name or person.relation not in ONE_OF_A_KIND:
        return None
    twins = [k for k in known if k.id != person.id and k.relation == person.relation and not k.name]
    return twins[0].id if len(twins) == 1 else None
