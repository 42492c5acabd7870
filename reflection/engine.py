"""Reflection: one cycle scans a user's memories since the last watermark,
groups related ones by vector similarity, asks a reflector which traits they
support or contradict, and grows, reinforces, contradicts, promotes and
dissolves traits. Two cycles never run for one user at once (a unique index
on running cycles; a cycle older than REFLECTION_STALE_AFTER is abandoned).
"""

from __future__ import annotations

import json
import logging
import re
import uuid
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Protocol

import numpy as np
from django.conf import settings
from django.db import IntegrityError, connection, transaction
from django.db.models import Max, Sum
from django.utils import timezone

from memories import metrics, vocabulary
from memories.embedding import get_embedder
from memories.errors import get_or_not_found
from memories.extraction import ExtractionError, is_about_someone_else, load_prompt
from memories.models import MemoryItem, MemoryType, MemoryVector, Tenant
from memories.queue import enqueue
from memories.text import has_han, query_tokens
from memories.writing import EPISODE_TAG
from reflection.models import CycleStatus, CycleTrigger, ReflectionCycle
from traits import services
from traits.models import EvidenceKind, Trait, TraitStage

logger = logging.getLogger(__name__)
ACTOR = "reflection"


class ReflectionBusy(Exception):
    """A cycle for this user is already running."""


@dataclass
class TraitHint:
    text: str
    subtype: str
    context: str
    key: str
    quality: str
    positive: bool = True  # "likes X" (True) or "does not like X"
    supports: list[MemoryItem] = field(default_factory=list)
    contradicts: list[MemoryItem] = field(default_factory=list)
    existing_trait_id: uuid.UUID | None = None


class Reflector(Protocol):
    name: str

    def reflect(self, groups: list[list[MemoryItem]], traits: list[Trait]) -> list[TraitHint]: ...


# --------------------------------------------------------------------------- offline heuristic

_POSITIVE = re.compile(r"\b(?:prefers?|loves?|likes?|enjoys?|adores?|is (?:a )?fan of)\s+(.+)", re.I)
_NEGATIVE = re.compile(r"\b(?:dislikes?|hates?|doesn't like|does not like|can't stand|avoids?)\s+(.+)", re.I)
_HABIT = re.compile(r"\b(?:usually|often|always|regularly|tends to|every (?:day|morning|evening|night|week|weekend))"
                    r"\b\s*(.*)", re.I)
_ZH_POSITIVE = re.compile(r"(?:喜欢|爱|偏好)(.+)")
_ZH_NEGATIVE = re.compile(r"(?:讨厌|不喜欢)(.+)")
_ZH_HABIT = re.compile(r"(?:经常|总是|每天|通常)(.+)")
_CONTEXT_WORDS = {
    "work": {"work", "office", "job", "meet", "boss", "colleagu", "deadlin", "project", "工作", "公司"},
    "learning": {"learn", "studi", "cours", "class", "lesson", "read", "学习", "课程"},
    "social": {"friend", "parti", "club", "team", "朋友", "聚会"},
    "personal": {"famili", "home", "wife", "husband", "kid", "dog", "cat", "cook", "家", "孩子"},
}
_QUALITY = {"prefer": "B", "love": "B", "hate": "B", "adore": "B"}


def _object_key(phrase: str) -> str:
    """The first two content words of the object, stemmed: 'green tea in the morning' -> 'green tea'."""
    return " ".join(query_tokens(phrase)[:2])


def _context_of(text: str) -> str:
    tokens = set(query_tokens(text))
    for context, words in _CONTEXT_WORDS.items():
        if tokens & words or any(w in text for w in words if not w.isascii()):
            return context
    return "general"


def memory_signal(memory: MemoryItem) -> tuple[str, str, str, str] | None:
    """(polarity +/-, key, subtype, quality) a memory gives about a trait, or None.
    A statement about someone else ("Alice's wife loves hiking") says nothing about the user's traits."""
    if is_about_someone_else(memory.text, memory.tags or []):
        return None
    text = memory.text
    for pattern, polarity in ((_NEGATIVE, "-"), (_POSITIVE, "+"), (_ZH_NEGATIVE, "-"), (_ZH_POSITIVE, "+")):
        match = pattern.search(text)
        if match and _object_key(match.group(1)):
            verb = re.findall(r"[a-z]+", match.group(0).lower())
            quality = _QUALITY.get((verb[0] if verb else "").rstrip("s"), "C")
            return polarity, _object_key(match.group(1)), "preference", quality
    for pattern in (_HABIT, _ZH_HABIT):
        match = pattern.search(text)
        if match and _object_key(match.group(1)):
            return "+", _object_key(match.group(1)), "behavior", "C"
    if "trait_hint" in (memory.tags or []):
        return "+", _object_key(text), "behavior", "B"
    return None


class HeuristicReflector:
    """Offline: preferences and habits stated in the memories, keyed by what they are about."""

    name = "heuristic"

    def reflect(self, groups: list[list[MemoryItem]], traits: list[Trait]) -> list[TraitHint]:
        by_key = {t.memory.data.get("key"): t for t in traits if t.memory.data.get("key")}
        hints: dict[str, TraitHint] = {}
        for group in groups:
            for memory in group:
                signal = memory_signal(memory)
                if signal is None:
                    continue
                polarity, key, subtype, quality = signal
                hint = hints.get(key)
                if hint is None:
                    existing = by_key.get(key)
                    text = existing.memory.text if existing else self._text(memory, polarity, subtype)
                    positive = (polarity == "+") if existing is None else \
                        not existing.memory.text.startswith("Does not")
                    hint = hints[key] = TraitHint(text=text, subtype=existing.subtype if existing else subtype,
                                                  context=_context_of(memory.text), key=key, quality=quality,
                                                  positive=positive,
                                                  existing_trait_id=existing.pk if existing else None)
                agrees = (polarity == "+") == hint.positive
                (hint.supports if agrees else hint.contradicts).append(memory)
        return list(hints.values())

    @staticmethod
    def _text(memory: MemoryItem, polarity: str, subtype: str) -> str:
        """The trait in the memory's language: "Likes green tea", or "喜欢绿茶" for a Chinese memory."""
        if has_han(memory.text):
            match = ((_ZH_POSITIVE if polarity == "+" else _ZH_NEGATIVE).search(memory.text)
                     or _ZH_HABIT.search(memory.text))
            what = (match.group(1) if match else memory.text).rstrip(" 。.！!")
            if subtype == "behavior":
                return f"习惯{what}"
            return f"喜欢{what}" if polarity == "+" else f"不喜欢{what}"
        match = (_POSITIVE if polarity == "+" else _NEGATIVE).search(memory.text) or _HABIT.search(memory.text)
        what = (match.group(1) if match else memory.text).rstrip(" .")
        if subtype == "behavior":
            return f"Habitually {what}"
        return f"Likes {what}" if polarity == "+" else f"Does not like {what}"


# --------------------------------------------------------------------------- LLM


class LLMReflector:
    name = "llm"

    def __init__(self):
        from openai import OpenAI

        self._client = OpenAI(base_url=settings.LLM_BASE_URL, api_key=settings.LLM_API_KEY,
                              timeout=settings.LLM_TIMEOUT, max_retries=0)

    def reflect(self, groups: list[list[MemoryItem]], traits: list[Trait]) -> list[TraitHint]:
        import openai

        memories = [m for group in groups for m in group]
        prompt = load_prompt("reflect_user.md").format(
            traits="\n".join(f"- {t.pk}: {t.memory.text}" for t in traits) or "(none)",
            memories="\n".join(f"[{i}] {(m.valid_at or m.created_at).date()}: {m.text}"
                               for i, m in enumerate(memories)))
        try:
            response = self._client.chat.completions.create(
                model=settings.LLM_MODEL, temperature=0, response_format={"type": "json_object"},
                messages=[{"role": "system", "content": load_prompt("reflect_system.md")},
                          {"role": "user", "content": prompt}])
            payload = json.loads(response.choices[0].message.content or "")
        except (openai.OpenAIError, ValueError) as exc:
            raise ExtractionError(f"reflection LLM failed: {exc}", retryable=True) from exc
        known = {str(t.pk) for t in traits}
        hints = []
        for item in payload.get("traits", []) if isinstance(payload, dict) else []:
            if not isinstance(item, dict) or not isinstance(item.get("text"), str) or not item["text"].strip():
                continue

            def pick(indices):
                return [memories[i] for i in indices or [] if isinstance(i, int) and 0 <= i < len(memories)]

            supports = pick(item.get("supports"))
            if not supports:
                continue
            subtype = str(item["subtype"]) if item.get("subtype") in ("behavior", "preference", "core") \
                else "behavior"
            context = str(item["context"]) if item.get("context") in ("work", "personal", "social", "learning",
                                                                       "general") else "general"
            existing = item.get("existing_trait_id")
            hints.append(TraitHint(
                text=item["text"].strip(), subtype=subtype, context=context, key=_object_key(item["text"]),
                quality=str(item["quality"]) if item.get("quality") in ("A", "B", "C", "D") else "C",
                supports=supports, contradicts=pick(item.get("contradicts")),
                existing_trait_id=uuid.UUID(existing) if isinstance(existing, str) and existing in known else None))
        return hints


def get_reflector() -> Reflector:
    provider = settings.EXTRACTION_PROVIDER or ("llm" if settings.LLM_BASE_URL else "rules")
    return LLMReflector() if provider == "llm" else HeuristicReflector()


# --------------------------------------------------------------------------- grouping


def group_related(memories: list[MemoryItem], threshold: float = 0.6) -> list[list[MemoryItem]]:
    """Greedy clustering by cosine similarity of each memory's first chunk
    vector; memories not embedded yet form groups of their own."""
    if not memories:
        return []
    model = get_embedder().name
    vectors = dict(MemoryVector.objects.filter(item_id__in=[m.id for m in memories], model=model, chunk_index=0)
                   .values_list("item_id", "embedding"))
    groups: list[list[MemoryItem]] = []
    centroids: list[np.ndarray] = []
    for memory in memories:
        vector = vectors.get(memory.id)
        if vector is None:
            groups.append([memory])
            centroids.append(np.zeros(1))
            continue
        vector = np.asarray(vector.to_list() if hasattr(vector, "to_list") else vector, dtype=np.float32)
        best, best_similarity = None, threshold
        for index, centroid in enumerate(centroids):
            if centroid.shape == vector.shape:
                similarity = float(np.dot(centroid, vector) / (np.linalg.norm(centroid) or 1.0))
                if similarity >= best_similarity:
                    best, best_similarity = index, similarity
        if best is None:
            groups.append([memory])
            centroids.append(vector.copy())
        else:
            groups[best].append(memory)
            centroids[best] = centroids[best] + vector
    return groups


# --------------------------------------------------------------------------- the cycle


def _start_cycle(tenant: Tenant, user_id: str, trigger: str, trigger_value: float | None,
                 queued: ReflectionCycle | None = None) -> ReflectionCycle:
    """A new running cycle, or the queued one (from reflection_request) set running."""
    stale = timezone.now() - timedelta(seconds=settings.REFLECTION_STALE_AFTER)
    ReflectionCycle.objects.filter(tenant=tenant, user_id=user_id, status=CycleStatus.RUNNING,
                                   started_at__lt=stale).update(status=CycleStatus.FAILED,
                                                                error="abandoned (worker lost)",
                                                                completed_at=timezone.now())
    try:
        with transaction.atomic():
            if queued is None:
                return ReflectionCycle.objects.create(tenant=tenant, user_id=user_id, trigger=trigger,
                                                      trigger_value=trigger_value)
            ReflectionCycle.objects.filter(id=queued.id).update(status=CycleStatus.RUNNING, started_at=timezone.now())
            queued.refresh_from_db()
            return queued
    except IntegrityError:
        raise ReflectionBusy(f"a reflection cycle for {user_id} is already running") from None


def reflection_request(*, tenant: Tenant, user_id: str) -> ReflectionCycle:
    """Queue a cycle for a worker (POST /users/{u}/reflect): the caller gets its id at
    once. A cycle already waiting or running for the user is returned instead of a second."""
    waiting = ReflectionCycle.objects.filter(tenant=tenant, user_id=user_id,
                                             status__in=[CycleStatus.QUEUED, CycleStatus.RUNNING])
    stale = timezone.now() - timedelta(seconds=settings.REFLECTION_STALE_AFTER)
    existing = waiting.filter(started_at__gte=stale).order_by("-started_at").first()
    if existing is not None:
        return existing
    try:
        with transaction.atomic():
            cycle = ReflectionCycle.objects.create(tenant=tenant, user_id=user_id, trigger=CycleTrigger.REQUESTED,
                                                   status=CycleStatus.QUEUED)
            enqueue("reflection.tasks.run_requested_cycle", cycle.id, background=True)
            return cycle
    except IntegrityError:  # a concurrent request queued one first
        return waiting.order_by("-started_at").first() or reflection_request(tenant=tenant, user_id=user_id)


def reflection_cycle_get(*, tenant: Tenant, cycle_id: int) -> ReflectionCycle:
    return get_or_not_found(ReflectionCycle.objects.filter(tenant=tenant), "reflection cycle", id=cycle_id)


def reflection_run_queued(cycle_id: int) -> ReflectionCycle | None:
    """Run a queued cycle; None when it is no longer queued (a redelivery)."""
    cycle = ReflectionCycle.objects.filter(id=cycle_id, status=CycleStatus.QUEUED).select_related("tenant").first()
    if cycle is None:
        return None
    return reflection_run(tenant=cycle.tenant, user_id=cycle.user_id, trigger=cycle.trigger, queued=cycle)


def reflection_give_up(cycle_id: int, reason: str) -> None:
    ReflectionCycle.objects.filter(id=cycle_id, status=CycleStatus.QUEUED).update(
        status=CycleStatus.FAILED, error=reason[:4000], completed_at=timezone.now())


def last_watermark(tenant: Tenant, user_id: str):
    return ReflectionCycle.objects.filter(tenant=tenant, user_id=user_id, status=CycleStatus.COMPLETED).aggregate(
        w=Max("watermark"))["w"]


def memories_since_watermark(tenant: Tenant, user_id: str):
    """The current, active, non-trait memories a user's next cycle would scan."""
    watermark = last_watermark(tenant, user_id)
    queryset = MemoryItem.objects.filter(vocabulary.is_searchable(timezone.now()), tenant=tenant,
                                         user_id=user_id).exclude(memory_type=MemoryType.TRAIT).exclude(
        tags__contains=[EPISODE_TAG])  # raw turns are evidence for facts, not facts themselves
    return queryset.filter(created_at__gt=watermark) if watermark else queryset


WRITE_CLOCK_MARGIN = timedelta(seconds=5)
LONGEST_WRITE = timedelta(minutes=10)


def open_writes_started_at():
    """When the oldest write transaction still open (other than ours) began,
    less a margin for clock skew between app and database; None when none is.

    A memory's created_at is stamped inside its transaction, so a row not yet
    committed is younger than this moment. A cycle scans only older rows, so
    its watermark never passes a row that commits later. Transactions open
    for longer than LONGEST_WRITE are broken, not writing, and are ignored.
    """
    with connection.cursor() as cursor:
        cursor.execute(
            """SELECT min(xact_start) FROM pg_stat_activity
               WHERE datname = current_database() AND pid <> pg_backend_pid()
                 AND backend_xid IS NOT NULL AND xact_start > now() - %s""",
            [LONGEST_WRITE])
        started = cursor.fetchone()[0]
    return started - WRITE_CLOCK_MARGIN if started else None


def memories_to_scan(tenant: Tenant, user_id: str, cap: int) -> list[MemoryItem]:
    """The next cycle's memories, oldest first, at most about `cap` of them.

    The watermark is a created_at, and a batch of memories shares one, so a
    cut must not fall inside a batch: the rows after the watermark's moment
    would never be scanned. The cut moves back to the last whole moment (or,
    when one moment alone holds more than `cap`, takes all of it).
    """
    scan = memories_since_watermark(tenant, user_id).order_by("created_at", "id")
    horizon = open_writes_started_at()
    if horizon is not None:
        scan = scan.filter(created_at__lt=horizon)
    memories = list(scan[: cap + 1])
    if len(memories) <= cap:
        return memories
    boundary = memories[cap].created_at
    whole = [m for m in memories[:cap] if m.created_at != boundary]
    return whole or list(scan.filter(created_at=boundary))


def importance_since_watermark(tenant: Tenant, user_id: str) -> float:
    return memories_since_watermark(tenant, user_id).aggregate(s=Sum("importance"))["s"] or 0.0


def reflection_run(*, tenant: Tenant, user_id: str, trigger: str, trigger_value: float | None = None,
                   reflector: Reflector | None = None, queued: ReflectionCycle | None = None) -> ReflectionCycle:
    """Run one cycle for a user; raises ReflectionBusy if one is running."""
    cycle = _start_cycle(tenant, user_id, trigger, trigger_value, queued)
    try:
        memories = memories_to_scan(tenant, user_id, settings.REFLECTION_MAX_MEMORIES)
        traits = list(Trait.objects.filter(memory__tenant=tenant, memory__user_id=user_id)
                      .exclude(stage=TraitStage.DISSOLVED).select_related("memory"))
        hints = (reflector or get_reflector()).reflect(group_related(memories), traits) if memories else []
        created = updated = dissolved = 0
        for hint in hints:
            trait = Trait.objects.filter(memory_id=hint.existing_trait_id).select_related("memory").first() \
                if hint.existing_trait_id else None
            if trait is None:
                if not hint.supports:
                    continue
                trait = services.trait_create(tenant=tenant, user_id=user_id, text=hint.text, subtype=hint.subtype,
                                              context=hint.context, actor=ACTOR, data={"key": hint.key},
                                              evidence=[(m, hint.quality) for m in hint.supports])
                created += 1
                supports = []
            else:
                supports = hint.supports
                updated += 1
            observations = [services.Observation(m, EvidenceKind.SUPPORTING, hint.quality, hint.context)
                            for m in supports]
            observations += [services.Observation(m, EvidenceKind.CONTRADICTING, hint.quality, hint.context)
                             for m in hint.contradicts]
            if observations:
                change = services.trait_observe(trait_id=trait.pk, observations=observations, actor=ACTOR)
                dissolved += change.new_stage == TraitStage.DISSOLVED and change.stage_changed
            trait.refresh_from_db()
            if services.trait_split_by_context(trait=trait, actor=ACTOR):
                dissolved += 1
            services.trait_lift_to_preference(trait=trait, actor=ACTOR)
        cycle.memories_scanned = len(memories)
        cycle.traits_created, cycle.traits_updated, cycle.traits_dissolved = created, updated, dissolved
        cycle.watermark = memories[-1].created_at if memories else last_watermark(tenant, user_id)
        cycle.status = CycleStatus.COMPLETED
    except Exception as exc:
        logger.exception("reflection cycle %s failed", cycle.pk)
        cycle.status, cycle.error = CycleStatus.FAILED, f"{type(exc).__name__}: {exc}"[:4000]
    cycle.completed_at = timezone.now()
    cycle.save()
    if cycle.started_at:
        metrics.observe_reflection_cycle(status=cycle.status,
                                         seconds=(cycle.completed_at - cycle.started_at).total_seconds())
    return cycle


def maybe_reflect(tenant: Tenant, user_ids: set[str]) -> int:
    """Importance trigger: a cycle is queued for each user whose new memories'
    importance adds up past the threshold; returns how many were queued."""
    queued = 0
    for user_id in sorted(user_ids):
        total = importance_since_watermark(tenant, user_id)
        if total >= settings.REFLECTION_IMPORTANCE_THRESHOLD:
            enqueue("reflection.tasks.reflect_user", tenant.id, user_id, CycleTrigger.IMPORTANCE.value, total,
                    on_commit=False)
            queued += 1
    return queued
