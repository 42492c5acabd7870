"""Whom each memory is about, read while a conversation job or a save is applied.

One `PeopleReader` per user per job: it hears the user's turns in order (every person named becomes or
finds their entity; the last one named is who a following "she"/"他" is), gives each statement its subject
and object entity before it is written (a fact about Sheila is Sheila's; one about no one else is the
user's own entity), and after it is written records what it says of where the subject lives or works and a
relation that changed ("Tom and I broke up"). The caller holds the user's write lock.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime

from django.utils import timezone

from memories.models import MemoryItem, Person, PersonKind, Tenant
from memories.people.graph import (
    ACTOR,
    edge_from_memory,
    known_people,
    person_belongs_to,
    person_for_mention,
    person_relation_changed,
    person_rename,
    user_entity,
)
from memories.people.mentions import (
    Mention,
    composed_relation,
    mentions_in,
    pronoun_subject,
    relation_change,
    said_before,
    stated_edges,
)
from memories.people.resolve import Known, alias_key
from memories.relations import relation_code
from memories.vocabulary import Tag

PRONOUN_OWNERS = ("his", "her", "their")


def users_own(mention: Mention) -> Mention:
    """A relative a pronoun owns ("her brother") in a statement about the user is the user's own."""
    if mention.owner not in PRONOUN_OWNERS:
        return mention
    word = mention.word.split()[-1]
    return replace(mention, code=relation_code(word), word=word, owner="")


@dataclass(frozen=True)
class About:
    """Whom a statement is about: its subject entity (the user's own when no one else) and its object."""

    subject: Person
    obj: Person | None = None


@dataclass
class PeopleReader:
    """One user's people while one job or save is applied (see the module docstring)."""

    tenant: Tenant
    user_id: str
    names: Sequence[str] = ()
    given_name: str = ""  # the name the user gave (their profile's: search.profile_display_name, read by the caller)
    job_id: str = ""
    actor: str = ACTOR
    _known: list[Known] | None = None
    _user: Person | None = None
    last: Person | None = None
    heard_until: int = -1
    turns: dict[int, str] = field(default_factory=dict)  # the turns heard, by index (what a statement continues)
    _all_names: tuple[str, ...] = field(default=())

    @property
    def known(self) -> list[Known]:
        if self._known is None:
            self._known = known_people(self.tenant, self.user_id)
        return self._known

    @property
    def user(self) -> Person:
        if self._user is None:
            self._user = user_entity(self.tenant, self.user_id, self.given_name, actor=self.actor)
            # The user id is one of their names too: "Alice is allergic to peanuts" saved for "alice" is hers.
            self._all_names = tuple(dict.fromkeys(
                n for n in (*self.names, self.given_name, self._user.name, self.user_id) if n))
        return self._user

    @property
    def user_names(self) -> tuple[str, ...]:
        _ = self.user
        return self._all_names

    @property
    def known_names(self) -> list[str]:
        """The names the user gave the people they know (read in Chinese text wherever said)."""
        return [k.name for k in self.known if k.name]

    def _person(self, mention: Mention, now: datetime) -> Person | None:
        owner = next((k for k in self.known if alias_key(mention.owner) in k.keys), None) \
            if mention.owner and mention.code == "other" else None
        code = composed_relation(owner.relation, relation_code(mention.word.split()[-1])) if owner else ""
        if code:  # "Kevin's mom", Kevin the husband: the mother-in-law
            mention, owner = replace(mention, code=code, word=mention.word.split()[-1], owner=""), None
        person = person_for_mention(self.tenant, self.user_id, mention, self.known, now=now, actor=self.actor,
                                    job_id=self.job_id)
        if person is not None and owner is not None and str(person.id) != owner.id:  # "my friend's dog Rex"
            person_belongs_to(person, owner.id, actor=self.actor, job_id=self.job_id)
        return person

    def hear(self, index: int, text: str, now: datetime | None = None) -> None:
        """A user turn (its index in the conversation): the people it names, once; the last one named is
        who a pronoun after it is."""
        if index <= self.heard_until:
            return
        self.heard_until = index
        self.turns[index] = text
        for mention in mentions_in(text, self.user_names, self.known_names):
            person = self._person(mention, now or timezone.now())
            if person is not None and (mention.code != "other" or mention.subject):
                self.last = person

    def continued(self, text: str, sources: Sequence[int], now: datetime) -> Person | None:
        """The relative a statement continues: the clause before it in its turn opens with them ("我妈腿不好，
        走不了太远" kept as "林晓雨走不了太远")."""
        for index in sources:
            clause = said_before(text, self.turns.get(index, ""), self.user_names)
            mentions = mentions_in(clause, self.user_names, self.known_names) if clause else []
            if mentions and mentions[0].subject and mentions[0].code not in ("", "other"):
                return self._person(mentions[0], now)
        return None

    def about(self, text: str, now: datetime | None = None, tags: Sequence[str] = (),
              sources: Sequence[int] = ()) -> About:
        """Whom a statement is about (see the module docstring). `tags`: the extractor's; one it read as about
        someone else ("林晓雨走不了太远" from "我妈腿不好，走不了太远") whose words name no one is the person
        named last."""
        now = now or timezone.now()
        mentions = mentions_in(text, self.user_names, self.known_names)
        subject: Person | None = None
        if mentions and mentions[0].subject:
            subject = self._person(mentions[0], now)
        elif (pronoun_subject(text) or Tag.ABOUT_OTHER in tags) and self.last is not None:
            subject = self.last
        elif not mentions and sources:
            subject = self.continued(text, sources, now)
        if subject is None:  # "Alice plays tennis with her brother": the user's brother
            mentions = [users_own(m) for m in mentions]
        others = [m for m in mentions if not m.subject]
        obj = next((p for p in (self._person(m, now) for m in others) if p is not None), None)
        if subject is None:
            return About(self.user, obj)
        self.last = subject
        return About(subject, obj if obj is not None and obj.id != subject.id else None)

    def said(self, memory: MemoryItem, about: About) -> None:
        """What a written memory says of where its subject lives or works, and of a relation that changed
        ("Tom and I broke up", "我和男朋友分手了": the partner named, subject or object)."""
        if (memory.data or {}).get("key") == "name" and about.subject.kind == PersonKind.USER and (
                name := str((memory.data or {}).get("value") or "")):
            person_rename(about.subject, name, actor=self.actor, reason="the name the user gave")
            self._all_names = (*self._all_names, name)
        for stated in stated_edges(memory.text):
            edge_from_memory(about.subject, stated, memory, actor=self.actor, job_id=self.job_id)
        for person in (about.subject, about.obj):
            if person is not None and person.kind == PersonKind.PERSON and (
                    new := relation_change(memory.text, person.relation)):
                person_relation_changed(person, new, actor=self.actor, reason=f"said: {memory.text}"[:500],
                                        job_id=self.job_id)
                self._known = None
                break
