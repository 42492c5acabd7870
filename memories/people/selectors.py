"""Reading the people of a user: the list (`/people`), one person with the history of their facts and
relations (`/people/{id}`), the block's People section, the people a question names (their current facts
come with the answer), and who is within two hops of someone (a recursive CTE over graph_edges)."""

from __future__ import annotations

import re
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from django.db import connection
from django.db.models import F, Q, QuerySet, Window, prefetch_related_objects
from django.db.models.functions import RowNumber

from memories.errors import get_or_not_found
from memories.models import (
    CURRENT_STATUSES,
    EdgePredicate,
    MemoryItem,
    MemoryType,
    Person,
    PersonEdge,
    PersonHistory,
    PersonKind,
    PersonStatus,
    Tenant,
)
from memories.people.mentions import relation_words
from memories.people.resolve import alias_key
from memories.vocabulary import Tag

FACTS_PER_PERSON = 20  # a person's current facts on their page and in the list


def person_label(person: Person) -> str:
    """What a person is called where a line names them: their name, else the user's word for them (the
    user's own entity: their name, else their user id)."""
    if person.kind == PersonKind.USER:
        return person.name or person.user_id
    return person.name or person.relation_word or person.relation or "someone"


def current_facts(tenant: Tenant, user_id: str) -> QuerySet[MemoryItem]:
    """The user's current memories that can be a person's fact (no episodes, no traits)."""
    return (MemoryItem.objects.filter(tenant=tenant, user_id=user_id, expired_at__isnull=True,
                                      status__in=CURRENT_STATUSES)
            .exclude(memory_type__in=[MemoryType.TRAIT]).exclude(tags__contains=[Tag.EPISODE]))


@dataclass
class PersonView:
    """One person as the API and the block show them."""

    person: Person
    aliases: list[str] = field(default_factory=list)
    facts: list[MemoryItem] = field(default_factory=list)
    edges: list[PersonEdge] = field(default_factory=list)  # current: where they live, work, belong


def people_of(tenant: Tenant, user_id: str, *, kinds: Sequence[str] = (), facts: int = FACTS_PER_PERSON,
              with_user: bool = True) -> list[PersonView]:
    """The user's active entities (the user first, then by last mention), each with aliases, current edges
    and up to `facts` current facts (most important first; the rest are not read): four queries whatever the
    number, one when there is no one (`with_user=False`: the block's People section, which never shows the
    user, asks so; most users have no one)."""
    rows = Person.objects.filter(tenant=tenant, user_id=user_id, status=PersonStatus.ACTIVE)
    if kinds:
        rows = rows.filter(kind__in=kinds)
    if not with_user:
        rows = rows.exclude(kind=PersonKind.USER)
    found = list(rows)
    if not found:
        return []
    prefetch_related_objects(found, "aliases")
    people = sorted(found, key=lambda p: (
        p.kind != PersonKind.USER, -(p.last_mentioned_at or p.created_at).timestamp()))
    views = {p.id: PersonView(p, aliases=sorted({a.alias for a in p.aliases.all()})) for p in people}
    for edge in PersonEdge.objects.filter(source_id__in=list(views), invalid_at__isnull=True,
                                          expired_at__isnull=True).exclude(predicate=EdgePredicate.RELATION):
        views[edge.source_id].edges.append(edge)
    if facts > 0:
        ranked = current_facts(tenant, user_id).filter(subject_entity_id__in=list(views)).annotate(
            rank=Window(RowNumber(), partition_by=[F("subject_entity_id")],
                        order_by=[F("importance").desc(), F("created_at").desc()]))
        for memory in ranked.filter(rank__lte=facts).order_by("subject_entity_id", "rank"):
            views[memory.subject_entity_id].facts.append(memory)  # type: ignore[index]
    return list(views.values())


@dataclass
class PersonPage:
    """One person with the history of their facts and relations."""

    view: PersonView
    facts_history: list[MemoryItem]
    edges_history: list[PersonEdge]
    events: list[PersonHistory]
    connected: list[dict[str, Any]]


def person_page(tenant: Tenant, user_id: str, person_id: uuid.UUID | str) -> PersonPage:
    """A person of the user (404 for another user's or tenant's): current facts and edges, every fact about
    them that stopped holding (superseded, contradicted), every edge with its valid and invalid times, the
    history of changes, and who is within two hops."""
    person = get_or_not_found(Person.objects.filter(tenant=tenant, user_id=user_id), "person", id=person_id)
    if person.status == PersonStatus.MERGED and person.merged_into_id:
        person = Person.objects.get(id=person.merged_into_id)
    view = next(v for v in people_of(tenant, user_id) if v.person.id == person.id) \
        if person.status == PersonStatus.ACTIVE else PersonView(person)
    about = Q(subject_entity=person) | Q(object_entity=person)
    ended = (MemoryItem.objects.filter(about, tenant=tenant, user_id=user_id)
             .filter(Q(expired_at__isnull=False) | Q(invalid_at__isnull=False))
             .exclude(status="archived").order_by("-created_at")[:50])
    edges = PersonEdge.objects.filter(Q(source=person) | Q(target=person), tenant=tenant).order_by(
        "predicate", "valid_at", "created_at")
    events = PersonHistory.objects.filter(tenant=tenant, person_id=person.id).order_by("created_at")
    return PersonPage(view, list(ended), list(edges), list(events), connected_people(tenant, user_id, person.id))


# Two hops from a person over current edges, either direction (the user -> Mum -> York; Ana -> Google):
# named rows, parametrised.
CONNECTED_SQL = """
WITH RECURSIVE reach(person_id, depth, path) AS (
    SELECT %(start)s::uuid, 0, ARRAY[%(start)s::uuid]
  UNION ALL
    SELECT CASE WHEN e.source_id = r.person_id THEN e.target_id ELSE e.source_id END, r.depth + 1,
           r.path || CASE WHEN e.source_id = r.person_id THEN e.target_id ELSE e.source_id END
      FROM reach r
      JOIN graph_edges e ON (e.source_id = r.person_id OR e.target_id = r.person_id)
     WHERE r.depth < %(depth)s AND e.target_id IS NOT NULL AND e.tenant_id = %(tenant)s AND e.user_id = %(user)s
       AND e.invalid_at IS NULL AND e.expired_at IS NULL
       AND NOT (CASE WHEN e.source_id = r.person_id THEN e.target_id ELSE e.source_id END) = ANY(r.path)
)
SELECT DISTINCT ON (n.id) n.id AS person_id, n.name AS name, n.kind AS kind, n.relation AS relation,
       r.depth AS depth
  FROM reach r JOIN graph_nodes n ON n.id = r.person_id
 WHERE r.depth > 0 AND n.status = 'active'
 ORDER BY n.id, r.depth
"""


def connected_people(tenant: Tenant, user_id: str, person_id: uuid.UUID, depth: int = 2) -> list[dict[str, Any]]:
    """Who and what is within `depth` hops of a person over current edges (named rows)."""
    with connection.cursor() as cursor:
        cursor.execute(CONNECTED_SQL, {"start": str(person_id), "depth": depth, "tenant": tenant.id,
                                       "user": user_id})
        columns = [c.name for c in cursor.description]
        rows = [dict(zip(columns, row, strict=True)) for row in cursor.fetchall()]
    return sorted(({**row, "person_id": str(row["person_id"])} for row in rows),
                  key=lambda row: (row["depth"], row["name"]))


# --------------------------------------------------------------------------- the block and the question

def _words_of(view: PersonView) -> set[str]:
    words = {alias_key(a) for a in view.aliases} | ({alias_key(view.person.name)} if view.person.name else set())
    if view.person.relation and view.person.relation not in ("other",):
        words |= {alias_key(w) for w in relation_words(view.person.relation)}
    return {w for w in words if len(w) >= 2}


def named_in(query: str, views: Sequence[PersonView]) -> list[PersonView]:
    """The people a question names, by name, alias or any word for their relation ("how is my mother",
    "我妈最近怎么样", "what does Priya teach")."""
    text = alias_key(query)
    out = []
    for view in views:
        if view.person.kind == PersonKind.USER:
            continue
        for word in _words_of(view):
            pattern = re.escape(word) if re.search(r"[\u4e00-\u9fff]", word) else rf"\b{re.escape(word)}s?\b"
            if re.search(pattern, text):
                out.append(view)
                break
    return out


def people_lines(views: Sequence[PersonView], *, chinese: bool, facts: int = 1) -> list[str]:
    """The People section's lines: "Priya — wife; teaches maths at Leeds Grammar" / "王芳 — 妈妈；住在三亚"."""
    lines = []
    for view in views:
        person = view.person
        if person.kind == PersonKind.USER or person.kind in (PersonKind.PLACE, PersonKind.ORGANISATION):
            continue
        label = person.name or person.relation_word or person.relation
        relation = person.relation_word if person.name and person.relation_word else ""
        parts = [p for p in (relation, *_edge_phrases(view.edges, chinese)) if p]
        parts += [p for p in (_fact_phrase(m.text, view) for m in view.facts) if p][:facts]
        separator = "；" if chinese else "; "
        if parts:  # a bare "sister" tells the agent nothing a memory line does not
            lines.append(f"{label} — {separator.join(dict.fromkeys(p for p in parts if p))}")
    return lines


def _edge_phrases(edges: Sequence[PersonEdge], chinese: bool) -> list[str]:
    words = {EdgePredicate.LIVES_IN: ("lives in", "住在"), EdgePredicate.WORKS_AT: ("works at", "在")}
    out = []
    for edge in edges:
        en, zh = words.get(edge.predicate, ("", ""))  # type: ignore[call-overload]
        if en:
            out.append(f"{zh}{edge.value}{'工作' if edge.predicate == EdgePredicate.WORKS_AT else ''}" if chinese
                       else f"{en} {edge.value}")
    return out


def _fact_phrase(text: str, view: PersonView) -> str:
    """A fact's words after whom it names: after the run of their words that opens it ("Owen's partner Gwen
    runs a bakery" -> "runs a bakery", "周蕾的儿子豆豆今年上幼儿园了" -> "今年上幼儿园了"); "" when nothing is
    left (a fragment that only names them: "Gwen")."""
    lowered = text.casefold()
    found = sorted((at, at + len(word)) for word in _words_of(view) | {alias_key(a) for a in view.aliases}
                   if 0 <= (at := lowered.find(word)) <= 40)
    if not found:
        return text.rstrip("。.")
    end = found[0][1]
    for start, stop in found[1:]:  # "partner Gwen", "的儿子豆豆": words one after another name one person
        if start <= end + 3:
            end = max(end, stop)
    return text[end:].removeprefix("'s").strip(" ,，:：").rstrip("。.")


def relations_of(tenant: Tenant, user_id: str) -> list[dict[str, str]]:
    """The user's current relations as Mem0's graph memory answers them ({source, relationship, destination}):
    the user -> each person by relation, and where each lives or works."""
    label = {p.id: person_label(p) for p in Person.objects.filter(tenant=tenant, user_id=user_id,
                                                                   status=PersonStatus.ACTIVE)}
    out = []
    for edge in PersonEdge.objects.filter(tenant=tenant, user_id=user_id, invalid_at__isnull=True,
                                          expired_at__isnull=True).order_by("created_at"):
        if edge.source_id not in label:
            continue
        if edge.predicate == EdgePredicate.RELATION and edge.target_id in label:
            out.append({"source": label[edge.source_id], "relationship": edge.value,
                        "destination": label[edge.target_id]})
        elif edge.predicate != EdgePredicate.RELATION:
            out.append({"source": label[edge.source_id], "relationship": edge.predicate, "destination": edge.value})
    return out
