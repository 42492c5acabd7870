"""Changing the people of a user: every change an entity, an alias or an edge goes through here, with actor,
reason and a PersonHistory row, under the user's write lock (held by the caller: ingestion, the applier,
the API's and the admin's actions all take it first).

Edges are bitemporal (models.people): a move ends the current edge of the same predicate at the time the
user said it (invalid_at) and starts the new one, so "where did Mum live before" has an answer; a reviewer
taking an edge back retracts it (expired_at). A merge folds one entity into another (aliases, edges,
memories) and records what moved, so a split can put it back.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from memories.errors import InvalidOperation, get_or_not_found
from memories.models import (
    EdgePredicate,
    MemoryItem,
    Person,
    PersonAlias,
    PersonEdge,
    PersonEvent,
    PersonHistory,
    PersonKind,
    PersonStatus,
    Tenant,
)
from memories.people.mentions import Mention, StatedEdge, kind_of
from memories.people.resolve import Known, Resolution, alias_key, resolve, unnamed_twin
from memories.relations import relation_code
from memories.writing import memories_about_move, owners_write_lock

ACTOR = "people"
ORGANISATION_WORDS = ("Ltd", "Inc", "plc", "Bank", "University", "School", "Hospital", "College", "公司", "银行",
                      "大学", "医院", "学校", "集团")


def _history(person: Person, event: str, *, actor: str, reason: str = "", old: dict[str, Any] | None = None,
             new: dict[str, Any] | None = None, job_id: str = "") -> None:
    PersonHistory.objects.create(person_id=person.id, tenant_id=person.tenant_id, user_id=person.user_id,
                                 event=event, old_data=old, new_data=new, actor=actor, reason=reason,
                                 job_id=job_id)


def _snapshot(person: Person) -> dict[str, Any]:
    return {"name": person.name, "kind": person.kind, "relation": person.relation,
            "relation_word": person.relation_word, "status": person.status, "version": person.version}


def _bump(person: Person, now: datetime) -> None:
    person.version += 1
    person.updated_at = now


def user_entity(tenant: Tenant, user_id: str, name: str = "", *, actor: str = ACTOR) -> Person:
    """The user's own entity (made on first need); its name is the one the user gave."""
    person = Person.objects.filter(tenant=tenant, user_id=user_id, kind=PersonKind.USER,
                                   status=PersonStatus.ACTIVE).first()
    now = timezone.now()
    if person is None:
        person = Person.objects.create(tenant=tenant, user_id=user_id, kind=PersonKind.USER, name=name,
                                       created_at=now, updated_at=now)
        _history(person, PersonEvent.CREATE, actor=actor, reason="the user", new=_snapshot(person))
    elif name and person.name != name:
        person_rename(person, name, actor=actor, reason="the name the user gave")
    return person


def known_people(tenant: Tenant, user_id: str) -> list[Known]:
    """What resolution needs of the user's active entities (the user's own aside)."""
    rows = Person.objects.filter(tenant=tenant, user_id=user_id, status=PersonStatus.ACTIVE).exclude(
        kind=PersonKind.USER).prefetch_related("aliases")
    return [_known(p, [a.alias for a in p.aliases.all()], (p.last_mentioned_at or p.created_at).timestamp())
            for p in rows]


def _known(person: Person, aliases: Iterable[str], recency: float) -> Known:
    """What resolution needs of one entity: the keys it is matched on are its aliases and its name."""
    return Known(id=str(person.id), name=person.name, relation=person.relation, kind=person.kind,
                 keys=frozenset({alias_key(a) for a in aliases} | ({alias_key(person.name)} if person.name else set())),
                 recency=recency)


def _known_now(person: Person, now: datetime) -> Known:
    """`_known` of an entity just written, its aliases read again, mentioned now."""
    return _known(person, PersonAlias.objects.filter(person=person).values_list("alias", flat=True), now.timestamp())


def person_for_mention(tenant: Tenant, user_id: str, mention: Mention, known: list[Known], *, now: datetime,
                       actor: str = ACTOR, job_id: str = "", reason: str = "") -> Person | None:
    """The entity a mention is: found (aliases and name added, a relation change recorded) or made.
    `known` is updated in place so the next mention of the same job sees it."""
    resolution = resolve(mention, known)
    if resolution is None:
        return None
    if resolution.person is None:
        person = _person_create(tenant, user_id, mention, resolution, now=now, actor=actor, job_id=job_id,
                                reason=reason)
    else:
        person = Person.objects.get(id=resolution.person)
        _person_update(person, resolution, now=now, actor=actor, job_id=job_id, reason=reason)
    known[:] = [k for k in known if k.id != str(person.id)]
    known.append(_known_now(person, now))
    if twin := unnamed_twin(known[-1], known):  # the unnamed partner was this named one all along
        person = _merged(tenant, person, Person.objects.get(id=twin), actor=actor,
                         reason=f"one {person.relation} at a time: the unnamed entry is {person.name}")
        known[:] = [k for k in known if k.id not in (twin, str(person.id))]
        known.append(_known_now(person, now))
    return person


def _kind(mention: Mention) -> str:
    last = mention.word.split("'s ")[-1] if mention.word else ""
    return kind_of(relation_code(last) if last else mention.code)


def _person_create(tenant: Tenant, user_id: str, mention: Mention, resolution: Resolution, *, now: datetime,
                   actor: str, job_id: str, reason: str) -> Person:
    person = Person.objects.create(tenant=tenant, user_id=user_id, kind=_kind(mention), name=resolution.name,
                                   relation=resolution.relation, relation_word=resolution.word, created_at=now,
                                   updated_at=now, last_mentioned_at=now, maybe_same_as_id=resolution.maybe)
    _aliases_add(person, resolution.aliases)
    unsure = f"; maybe the same as {resolution.maybe} (the same name, another relation): a reviewer decides" \
        if resolution.maybe else ""
    _history(person, PersonEvent.CREATE, actor=actor, reason=(reason or "named by the user") + unsure,
             new={**_snapshot(person), "aliases": list(resolution.aliases)}, job_id=job_id)
    if resolution.relation and resolution.relation != "other":
        _relation_edge(person, resolution.relation, valid_at=now, actor=actor, reason=reason, job_id=job_id)
    return person


def _aliases_add(person: Person, aliases: tuple[str, ...]) -> list[str]:
    have = set(PersonAlias.objects.filter(person=person).values_list("key", flat=True))
    new = [a for a in dict.fromkeys(aliases) if alias_key(a) not in have]
    PersonAlias.objects.bulk_create([PersonAlias(person=person, tenant_id=person.tenant_id, user_id=person.user_id,
                                                 alias=a[:200], key=alias_key(a)[:200]) for a in new],
                                    ignore_conflicts=True)
    return new


def _person_update(person: Person, resolution: Resolution, *, now: datetime, actor: str, job_id: str,
                   reason: str) -> None:
    before = _snapshot(person)
    added = _aliases_add(person, resolution.aliases)
    person.last_mentioned_at = now
    named = bool(resolution.name and not person.name)
    related = bool(resolution.relation and resolution.relation != person.relation)
    if not (added or named or related):
        person.save(update_fields=["last_mentioned_at"])
        return
    if named:
        person.name = resolution.name
    if related:
        _relation_edge(person, resolution.relation, valid_at=now, actor=actor, reason=reason, job_id=job_id)
        person.relation, person.relation_word = resolution.relation, resolution.word
    _bump(person, now)
    person.save()
    event = PersonEvent.RELATION if related else PersonEvent.RENAME if named else PersonEvent.ALIAS
    _history(person, event, actor=actor, reason=reason or "named by the user", old=before,
             new={**_snapshot(person), "aliases_added": added}, job_id=job_id)


def _relation_edge(person: Person, code: str, *, valid_at: datetime, actor: str, reason: str, job_id: str) -> None:
    """The user's relation to `person` is now `code`: the current relation edge ends, a new one starts."""
    user = user_entity(person.tenant, person.user_id, actor=actor)
    for edge in PersonEdge.objects.filter(source=user, target=person, predicate=EdgePredicate.RELATION,
                                          invalid_at__isnull=True, expired_at__isnull=True):
        _edge_end(edge, valid_at, actor=actor, reason=reason or f"now {code}", job_id=job_id, about=person)
    _edge_add(user, EdgePredicate.RELATION, code, target=person, memory=None, valid_at=valid_at, actor=actor,
              reason=reason, job_id=job_id, about=person)


def _edge_add(source: Person, predicate: str, value: str, *, target: Person | None, memory: MemoryItem | None,
              valid_at: datetime | None, actor: str, reason: str, job_id: str, about: Person,
              invalid_at: datetime | None = None) -> PersonEdge:
    edge = PersonEdge.objects.create(tenant_id=source.tenant_id, user_id=source.user_id, source=source,
                                     predicate=predicate, value=value[:200], target=target, memory=memory,
                                     valid_at=valid_at, invalid_at=invalid_at, created_at=timezone.now(),
                                     actor=actor, reason=reason)
    _history(about, PersonEvent.EDGE_ADD, actor=actor, reason=reason, job_id=job_id,
             new={"edge": str(edge.id), "predicate": predicate, "value": value,
                  "valid_at": valid_at.isoformat() if valid_at else None,
                  "invalid_at": invalid_at.isoformat() if invalid_at else None})
    return edge


def _edge_end(edge: PersonEdge, at: datetime, *, actor: str, reason: str, job_id: str, about: Person) -> None:
    edge.invalid_at = at
    edge.save(update_fields=["invalid_at"])
    _history(about, PersonEvent.EDGE_END, actor=actor, reason=reason, job_id=job_id,
             old={"edge": str(edge.id), "predicate": edge.predicate, "value": edge.value},
             new={"edge": str(edge.id), "invalid_at": at.isoformat()})


def place_entity(tenant: Tenant, user_id: str, value: str, predicate: str, *, now: datetime, actor: str = ACTOR,
                 job_id: str = "") -> Person:
    """The place or organisation an edge points at, one entity per name per user."""
    found = Person.objects.filter(tenant=tenant, user_id=user_id, status=PersonStatus.ACTIVE,
                                  kind__in=[PersonKind.PLACE, PersonKind.ORGANISATION],
                                  aliases__key=alias_key(value)).first()
    if found is not None:
        return found
    organisation = predicate == EdgePredicate.WORKS_AT or any(w in value for w in ORGANISATION_WORDS)
    person = Person.objects.create(tenant=tenant, user_id=user_id, name=value[:200], created_at=now,
                                   updated_at=now, kind=PersonKind.ORGANISATION if organisation else PersonKind.PLACE)
    _aliases_add(person, (value,))
    _history(person, PersonEvent.CREATE, actor=actor, reason=f"named as where someone {predicate.replace('_', ' ')}",
             new=_snapshot(person), job_id=job_id)
    return person


def edge_from_memory(person: Person, stated: StatedEdge, memory: MemoryItem, *, actor: str = ACTOR,
                     job_id: str = "") -> PersonEdge | None:
    """What a memory says of where `person` lives or works: the same place again changes nothing; another
    ends the current edge at the memory's valid time and starts the new one (from then when said as a
    change, else from a time unknown); "moved from Leeds" with no edge known records Leeds as where they
    lived until then."""
    at = memory.valid_at or timezone.now()
    current = list(PersonEdge.objects.filter(source=person, predicate=stated.predicate, invalid_at__isnull=True,
                                             expired_at__isnull=True))
    if any(alias_key(edge.value) == alias_key(stated.value) for edge in current):
        return None
    reason = f"said: {memory.text}"[:500]
    for edge in current:  # never ended before it began (a move said "last month" after a later mention)
        _edge_end(edge, max(at, edge.valid_at) if edge.valid_at else at, actor=actor, reason=reason,
                  job_id=job_id, about=person)
    now = timezone.now()
    if stated.before and not current:
        before = place_entity(person.tenant, person.user_id, stated.before, stated.predicate, now=now, actor=actor)
        _edge_add(person, stated.predicate, stated.before, target=before, memory=memory, valid_at=None,
                  invalid_at=at, actor=actor, reason=reason, job_id=job_id, about=person)
    target = place_entity(person.tenant, person.user_id, stated.value, stated.predicate, now=now, actor=actor)
    # "Moved to York (October)" began then; "lives in Leeds" has held since a time nobody said.
    return _edge_add(person, stated.predicate, stated.value, target=target, memory=memory,
                     valid_at=at if stated.changed else None, actor=actor, reason=reason, job_id=job_id,
                     about=person)


def person_belongs_to(person: Person, owner_id: str, *, actor: str = ACTOR, job_id: str = "") -> None:
    """Someone of someone else's ("my friend's dog Rex", "Priya's mum"): a belongs_to edge to the owner,
    once (an edge already there changes nothing)."""
    owner = Person.objects.get(id=owner_id)
    if PersonEdge.objects.filter(source=person, predicate=EdgePredicate.BELONGS_TO, target=owner,
                                 invalid_at__isnull=True, expired_at__isnull=True).exists():
        return
    _edge_add(person, EdgePredicate.BELONGS_TO, owner.name or owner.relation_word or owner.relation, target=owner,
              memory=None, valid_at=None, actor=actor, reason="named as theirs", job_id=job_id, about=person)


# --------------------------------------------------------------------------- a reviewer's changes

def person_rename(person: Person, name: str, *, actor: str, reason: str) -> Person:
    """A new name (the caller holds the user's write lock): the old one stays an alias."""
    before = _snapshot(person)
    person.name = name[:200]
    _bump(person, timezone.now())
    person.save()
    _aliases_add(person, (name,))
    _history(person, PersonEvent.RENAME, actor=actor, reason=reason, old=before, new=_snapshot(person))
    return person


def person_relation_correct(tenant: Tenant, person_id: uuid.UUID | str, code: str, *, actor: str, reason: str,
                            word: str = "") -> Person:
    """A reviewer's correction of the relation: the current relation edge ends, the new one starts."""
    code = relation_code(code) or code
    if not code:
        raise InvalidOperation("relation: not a relation this service knows")
    with transaction.atomic():
        [person] = _locked(tenant, person_id)
        return person_relation_changed(person, code, word=word, actor=actor, reason=reason)


def person_relation_changed(person: Person, code: str, *, actor: str, reason: str, word: str = "",
                            job_id: str = "") -> Person:
    """The user's relation to a locked `person` is now `code` (the user said so, or a reviewer corrected
    it): the relation edge ends and a new one starts, the change in the person's history."""
    before = _snapshot(person)
    now = timezone.now()
    _relation_edge(person, code, valid_at=now, actor=actor, reason=reason, job_id=job_id)
    person.relation, person.relation_word = code, word or code
    _bump(person, now)
    person.save()
    _history(person, PersonEvent.RELATION, actor=actor, reason=reason, old=before, new=_snapshot(person),
             job_id=job_id)
    return person


def _locked(tenant: Tenant, *person_ids: uuid.UUID | str) -> list[Person]:
    """These entities locked for a change, their users' write locks taken first (the one lock order)."""
    owners_write_lock(Person.objects.filter(tenant=tenant, id__in=[str(i) for i in person_ids]))
    return [get_or_not_found(Person.objects.select_for_update().filter(tenant=tenant), "person", id=person_id)
            for person_id in person_ids]


def person_merge(tenant: Tenant, keep_id: uuid.UUID | str, other_id: uuid.UUID | str, *, actor: str,
                 reason: str) -> Person:
    """Two entries that are one person become one: `other`'s aliases, edges and memories move to `keep`,
    `other` stays as merged (what moved is recorded on its MERGE row, for person_split)."""
    with transaction.atomic():
        keep, other = _locked(tenant, keep_id, other_id)
        return _merged(tenant, keep, other, actor=actor, reason=reason)


def _merged(tenant: Tenant, keep: Person, other: Person, *, actor: str, reason: str) -> Person:
    if keep.id == other.id or keep.user_id != other.user_id:
        raise InvalidOperation("merge: two different entities of the same user")
    if PersonStatus.MERGED in (keep.status, other.status) or PersonKind.USER in (keep.kind, other.kind):
        raise InvalidOperation("merge: both must be active and neither the user")
    now = timezone.now()
    moved = _move(tenant, other, keep, actor=actor, reason=f"merged into {keep.id}: {reason}")
    before = _snapshot(other)
    other.status, other.merged_into = PersonStatus.MERGED, keep
    _bump(other, now)
    other.save()
    if not keep.name and other.name:
        keep.name = other.name
    keep.relation = keep.relation or other.relation
    _bump(keep, now)
    keep.save()
    _history(other, PersonEvent.MERGE, actor=actor, reason=reason, old=before,
             new={**_snapshot(other), "into": str(keep.id), **moved})
    _history(keep, PersonEvent.MERGE, actor=actor, reason=reason, new={**_snapshot(keep), "from": str(other.id),
                                                                      **moved})
    return keep


def _move(tenant: Tenant, source: Person, to: Person, *, actor: str, reason: str,
          only: dict[str, list[str]] | None = None) -> dict[str, list[str]]:
    aliases = PersonAlias.objects.filter(person=source)
    edges_out = PersonEdge.objects.filter(source=source)
    edges_in = PersonEdge.objects.filter(target=source)
    memories = MemoryItem.objects.filter(Q(subject_entity=source) | Q(object_entity=source), tenant=tenant,
                                         expired_at__isnull=True)
    if only is not None:
        aliases, edges_out = aliases.filter(id__in=only["aliases"]), edges_out.filter(id__in=only["edges_out"])
        edges_in, memories = edges_in.filter(id__in=only["edges_in"]), memories.filter(id__in=only["memories"])
    moved = {"aliases": [str(i) for i in aliases.values_list("id", flat=True)],
             "edges_out": [str(i) for i in edges_out.values_list("id", flat=True)],
             "edges_in": [str(i) for i in edges_in.values_list("id", flat=True)],
             "memories": [str(i) for i in memories.values_list("id", flat=True)]}
    taken = set(PersonAlias.objects.filter(person=to).values_list("key", flat=True))
    aliases.exclude(key__in=taken).update(person=to)
    edges_out.update(source=to)
    edges_in.update(target=to)
    memories_about_move(tenant, source.user_id, moved["memories"], {source.id}, to.id, actor=actor, reason=reason)
    return moved


def person_split(tenant: Tenant, merged_id: uuid.UUID | str, *, actor: str, reason: str) -> Person:
    """Undo a wrong merge: what moved comes back to the merged entity, which is active again."""
    with transaction.atomic():
        [merged] = _locked(tenant, merged_id)
        return _split(tenant, merged, actor=actor, reason=reason)


def _split(tenant: Tenant, merged: Person, *, actor: str, reason: str) -> Person:
    if merged.status != PersonStatus.MERGED or merged.merged_into_id is None:
        raise InvalidOperation("split: only an entity that was merged into another can be split off")
    row = PersonHistory.objects.filter(person_id=merged.id, event=PersonEvent.MERGE).order_by("-created_at").first()
    moved = (row.new_data or {}) if row else {}
    [keep] = _locked(tenant, merged.merged_into_id)
    only = {name: list(moved.get(name, [])) for name in ("aliases", "edges_out", "edges_in", "memories")}
    _move(tenant, keep, merged, actor=actor, reason=f"split from {keep.id}: {reason}", only=only)
    before = _snapshot(merged)
    merged.status, merged.merged_into = PersonStatus.ACTIVE, None
    _bump(merged, timezone.now())
    merged.save()
    _history(merged, PersonEvent.SPLIT, actor=actor, reason=reason, old=before,
             new={**_snapshot(merged), "from": str(keep.id)})
    _history(keep, PersonEvent.SPLIT, actor=actor, reason=reason, new={"split_off": str(merged.id)})
    return merged


def edge_retract(tenant: Tenant, edge_id: uuid.UUID | str, *, actor: str, reason: str) -> PersonEdge:
    """A reviewer takes back an edge that was never true: it stops being believed now (expired_at)."""
    with transaction.atomic():
        owners_write_lock(PersonEdge.objects.filter(tenant=tenant, id=edge_id))
        edge = get_or_not_found(PersonEdge.objects.select_for_update().filter(tenant=tenant), "edge", id=edge_id)
        return _retracted(edge, actor=actor, reason=reason)


def _retracted(edge: PersonEdge, *, actor: str, reason: str) -> PersonEdge:
    edge.expired_at = timezone.now()
    edge.save(update_fields=["expired_at"])
    _history(edge.source, PersonEvent.EDGE_RETRACT, actor=actor, reason=reason,
             old={"edge": str(edge.id), "predicate": edge.predicate, "value": edge.value})
    return edge

