"""Reads of traits for the API, the admin and the context block (active_trait_lines, registered with
memories.trait_lines from TraitsConfig.ready)."""

from __future__ import annotations

from datetime import datetime

from django.db.models import Count, Q
from django.utils import timezone

from memories import vocabulary
from memories.errors import get_or_not_found
from memories.models import HistoryEvent, MemoryHistory, MemoryType, Tenant
from memories.search.filters import db
from memories.search.rows import named
from memories.trait_lines import TraitLineRow
from traits.lifecycle import MAX_PARENT_DEPTH, trait_decayed_confidence
from traits.models import Trait

ACTIVE_STAGES = vocabulary.TRAIT_STAGES_SHOWN  # what an agent is shown: the one list, in memories.vocabulary
# Evidence that counts: support still standing (withdrawn support stays for the audit), and contradictions.
LIVE_SUPPORT = Q(evidence__kind="supporting", evidence__withdrawn_at__isnull=True)
CONTRADICTING = Q(evidence__kind="contradicting")


_meta = Trait._meta
_TRAIT_LINES_SQL = """SELECT m.id, m.text, t.{subtype} AS subtype, t.{stage} AS stage,
  t.{confidence} AS decayed_confidence
FROM memory_items m JOIN {table} t ON t.{memory} = m.id
WHERE {searchable} AND m.tenant_id = %s AND m.user_id = %s AND m.memory_type = %s
  AND t.{stage} = ANY(%s) AND t.{confidence} > %s
ORDER BY coalesce(array_position(%s::text[], t.{subtype}::text), 99), t.{confidence} DESC, m.id
LIMIT %s""".format(table=_meta.db_table, memory=_meta.get_field("memory").column,
                   subtype=_meta.get_field("subtype").column, stage=_meta.get_field("stage").column,
                   confidence=_meta.get_field("decayed_confidence").column,
                   searchable=vocabulary.sql_searchable("m"))


_TRAIT_STAGES_SQL = """SELECT t.{memory} AS id, t.{stage} AS stage, t.{confidence} AS decayed_confidence
FROM {table} t WHERE t.{memory} = ANY(%s::uuid[])""".format(
    table=_meta.db_table, memory=_meta.get_field("memory").column, stage=_meta.get_field("stage").column,
    confidence=_meta.get_field("decayed_confidence").column)


def trait_stages_of(ids: list[str]) -> dict[str, tuple[str, float]]:
    """Memory id -> (stage, decayed confidence) for those of `ids` that are traits: what the search's scorer
    boosts by. One primary-key statement on the search's read connection (the ORM's join through the
    reverse relation cost 0.7-2.7 ms of Python a search with a trait among its candidates)."""
    if not ids:
        return {}
    with db().cursor() as cursor:
        cursor.execute(_TRAIT_STAGES_SQL, [list(ids)])
        return {str(row["id"]): (row["stage"], row["decayed_confidence"]) for row in named(cursor)}


def active_trait_lines(tenant: Tenant, user_id: str, stages: tuple[str, ...], order: tuple[str, ...],
                       min_confidence: float, limit: int) -> list[TraitLineRow]:
    """Seed 004's trait recall in one statement: searchable trait memories whose trait is at one of
    `stages` with decayed confidence above the floor, by subtype in `order`, then most confident. One
    parametrised statement on the search's read connection: through the ORM (a join and a CASE for the
    order) it cost 2.1 ms in Python for a 0.4 ms query, on every /context."""
    with db().cursor() as cursor:
        cursor.execute(_TRAIT_LINES_SQL, [timezone.now(), tenant.id, user_id, MemoryType.TRAIT, list(stages),
                                          min_confidence, list(order), limit])
        return [TraitLineRow(id=str(row["id"]), text=row["text"], subtype=row["subtype"], stage=row["stage"],
                             decayed_confidence=row["decayed_confidence"]) for row in named(cursor)]


def trait_confidence_now(trait: Trait, now: datetime | None = None) -> float:
    """The trait's decayed confidence at this moment, by the one decay rule (the stored column is as of
    the last write or refresh)."""
    return trait_decayed_confidence(
        confidence=trait.confidence, subtype=trait.subtype, stage=trait.stage, pinned=trait.pinned,
        reinforcements=trait.reinforcement_count, last_reinforced_at=trait.last_reinforced_at,
        first_observed_at=trait.first_observed_at, now=now or timezone.now())


def traits_of_user(*, tenant: Tenant, user_id: str, stages: list[str] | None = None) -> dict[str, list[Trait]]:
    """A user's traits by subtype, most confident first: the active stages unless `stages` says otherwise."""
    queryset = (Trait.objects.filter(tenant=tenant, user_id=user_id,
                                     stage__in=list(stages or ACTIVE_STAGES)).select_related("memory")
                .annotate(supporting=Count("evidence", filter=LIVE_SUPPORT),
                          contradicting=Count("evidence", filter=CONTRADICTING))
                .prefetch_related("children")
                .order_by("-decayed_confidence", "pk"))
    grouped: dict[str, list[Trait]] = {"behavior": [], "preference": [], "core": []}
    for trait in queryset:
        grouped[trait.subtype].append(trait)
    return grouped


def trait_get(*, tenant: Tenant, trait_id) -> Trait:
    return get_or_not_found(
        Trait.objects.select_related("memory", "parent__memory").filter(memory__tenant=tenant)
        .annotate(supporting=Count("evidence", filter=LIVE_SUPPORT),
                  contradicting=Count("evidence", filter=CONTRADICTING)),
        "trait", pk=trait_id)


def trait_children(trait: Trait) -> list[Trait]:
    """Traits split from or lifted out of this one (their parent is this trait)."""
    return list(Trait.objects.filter(parent=trait).select_related("memory").order_by("-decayed_confidence", "pk"))


def trait_parent_chain(trait: Trait) -> list[Trait]:
    """A trait's ancestors, nearest first, at most MAX_PARENT_DEPTH: the one walk up the chain (the API and
    admin show it; lifting a behaviour counts it, traits.services.trait_depth)."""
    chain: list[Trait] = []
    current = trait
    while current.parent_id and len(chain) < MAX_PARENT_DEPTH:
        current = Trait.objects.select_related("memory").get(pk=current.parent_id)
        chain.append(current)
    return chain


def trait_confidence_history(trait: Trait) -> list[dict]:
    """Confidence over time, from the STAGE_CHANGE events."""
    rows = MemoryHistory.objects.filter(memory_id=trait.memory_id, event=HistoryEvent.STAGE_CHANGE).order_by(
        "created_at")
    return [{"at": row.created_at, "stage": (row.new_data or {}).get("stage"),
             "confidence": (row.new_data or {}).get("confidence")} for row in rows]


def trait_evidence_by_session(trait: Trait) -> list[dict]:
    """A trait's evidence grouped by the conversation session it was said in (the first session first; a
    memory saved outside any session is its own group, ""): what a reviewer reads to see whether one habit
    was said again, session after session, or one day's report was counted as a habit."""
    groups: dict[str, list] = {}
    for evidence in trait.evidence.select_related("memory").order_by("created_at"):
        groups.setdefault(evidence.memory.session_id, []).append(evidence)
    return [{"session_id": session, "evidence": rows} for session, rows in groups.items()]
