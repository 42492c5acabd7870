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
from django.db.models import Exists, Max, OuterRef, Sum
from django.utils import timezone

from memories import metrics, vocabulary
from memories.embedding import get_embedder
from memories.errors import MemoryNotFound, get_or_not_found
from memories.extraction import ExtractionError, is_about_someone_else, load_prompt
from memories.models import ConversationJob, MemoryItem, MemoryType, MemoryVector, Tenant
from memories.queue import enqueue
from memories.text import has_han, query_tokens
from memories.withdrawals import Withdrawal
from memories.writing import EPISODE_TAG
from reflection.models import CycleStatus, CycleTrigger, ReflectionCycle
from traits import services
from traits.models import EvidenceKind, Trait, TraitEvidence, TraitStage

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

_POSITIVE = re.compile(r"\b(?:prefers?|loves?|likes?|enjoys?|adores?|wants?|is (?:a )?fan of)\s+(.+)", re.I)
_NEGATIVE = re.compile(r"\b(?:dislikes?|hates?|doesn't like|does not like|don't like|do not like|can't stand|"
                       r"avoids?)\s+(.+)", re.I)
# How people say a habit: a frequency word or phrase anywhere in the statement.
_FREQUENCY = re.compile(
    r"\b(?:usually|often|always|regularly|normally|habitually|tends? to|as usual|every (?:single )?"
    r"(?:day|morning|evening|night|week|weekend|weekday|monday|tuesday|wednesday|thursday|friday|saturday|sunday)"
    r"|each (?:day|morning|evening|night|week)|daily|nightly|weekly|most (?:days|mornings|evenings|nights))\b",
    re.I)
_ZH_POSITIVE = re.compile(r"(?:喜欢|爱|偏好)(.+)")
_ZH_NEGATIVE = re.compile(r"(?:讨厌|不喜欢)(.+)")
_ZH_HABIT = re.compile(r"(?:习惯|经常|总是|每天|每周|每晚|通常|一般)(.+)")
# The subject a memory's text opens with: I, the user, or a name ("Alice always ..."); 我, 用户 or a name.
_SUBJECT = re.compile(r"^(?:I|the user|user|[A-Z][\w'-]*)\s+(?=[a-z])")
_ZH_SUBJECT = re.compile(r"^(?:我|用户)")
_CLAUSE_END = re.compile(r"[;.!?，；。！？]|,\s*(?=(?:it|that|this|which|and|but|so|because|i|my|he|she|they|we)\b)"
                         r"|\s(?:because|since|and it|but|which)\s", re.I)
_ADVERB = re.compile(r"^((?:(?:always|usually|often|never|sometimes|regularly|normally|really|also|still|"
                     r"generally)\s+)*)(.*)$", re.I)
_PLAIN_FREQUENCY = {"every morning": "most mornings", "every day": "most days", "each day": "most days",
                    "daily": "most days", "every evening": "most evenings", "every night": "most nights",
                    "nightly": "most nights", "every week": "most weeks", "weekly": "most weeks",
                    "every weekend": "most weekends", "each morning": "most mornings"}
_FIRST_PERSON_VERB = {"have": "has", "do": "does", "go": "goes", "am": "is", "don't": "doesn't",
                      "do not": "does not", "can't": "can't"}
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


def trait_is_positive(text: str) -> bool:
    """Whether a trait's text says the user does something or likes it ("Doesn't like X", "不喜欢X" do not)."""
    return not re.match(r"(?:does not|doesn't|dislikes|avoids|can't stand|不喜欢|讨厌|不)", text.strip(), re.I)


def memory_signal(memory: MemoryItem) -> tuple[str, str, str, str] | None:
    """(polarity +/-, key, subtype, quality) a memory gives about a trait, or None.
    A statement about someone else ("Alice's wife loves hiking") says nothing about the user's traits.
    A habit said as one (a frequency word: always, every morning, as usual, 每天) is quality B; a
    preference by a strong verb (prefer, love, hate) B, by a plain one C."""
    if is_about_someone_else(memory.text, memory.tags or []):
        return None
    text = memory.text
    for pattern, polarity in ((_NEGATIVE, "-"), (_POSITIVE, "+"), (_ZH_NEGATIVE, "-"), (_ZH_POSITIVE, "+")):
        match = pattern.search(text)
        if match and _object_key(match.group(1)):
            verb = re.findall(r"[a-z]+", match.group(0).lower())
            quality = _QUALITY.get((verb[0] if verb else "").rstrip("s"), "C")
            return polarity, _object_key(match.group(1)), "preference", quality
    if has_han(text):
        match = _ZH_HABIT.search(text)
        if match and _object_key(match.group(1)):
            return "+", _object_key(match.group(1)), "behavior", "B"
    elif _FREQUENCY.search(text):
        key = _object_key(_FREQUENCY.sub(" ", _predicate(text)))
        if key:
            return "+", key, "behavior", "B"
    if "trait_hint" in (memory.tags or []):
        return "+", _object_key(text), "behavior", "B"
    return None


def _third_person(predicate: str) -> str:
    """'have a flat white' -> 'has a flat white', 'always run' -> 'always runs' (the predicate of an
    'I ...' sentence)."""
    adverbs, predicate = _ADVERB.match(predicate).groups()  # type: ignore[union-attr]
    return adverbs + _third_person_verb(predicate)


def _third_person_verb(predicate: str) -> str:
    for first, third in _FIRST_PERSON_VERB.items():
        if predicate.lower().startswith(first + " "):
            return third + predicate[len(first):]
    verb, _, rest = predicate.partition(" ")
    if not verb.isalpha() or verb.lower().endswith("s"):
        return predicate
    if re.search(r"(?:sh|ch|x|o)$", verb):
        verb += "es"
    elif re.search(r"[^aeiou]y$", verb):
        verb = verb[:-1] + "ies"
    else:
        verb += "s"
    return f"{verb} {rest}".strip()


def _predicate(text: str) -> str:
    """What a statement says its subject does, without the subject, up to the clause's end, in the third
    person: 'I always run before work, it clears my head.' -> 'always runs before work'."""
    stripped = text.strip()
    first_person = bool(re.match(r"I\s", stripped))
    clause = _CLAUSE_END.split(_SUBJECT.sub("", stripped, count=1), maxsplit=1)[0].strip()
    return _third_person(clause) if first_person else clause


def _sentence(predicate: str) -> str:
    return (predicate[:1].upper() + predicate[1:]).strip()


def trait_text(memory_text: str, polarity: str, subtype: str) -> str:
    """The trait as a reviewer would write it, in the memory's language: "Has a flat white most mornings",
    "Usually runs before work", "Prefers tea over coffee", "Doesn't like loud music"; "每天早上喝咖啡",
    "喜欢绿茶"."""
    if has_han(memory_text):
        body = _ZH_SUBJECT.sub("", memory_text.strip()).rstrip(" 。.！!")
        if subtype == "behavior":
            match = _ZH_HABIT.search(body)
            return match.group(0) if match else f"经常{body}"
        match = (_ZH_POSITIVE if polarity == "+" else _ZH_NEGATIVE).search(body)
        what = match.group(1) if match else body
        return f"喜欢{what}" if polarity == "+" else f"不喜欢{what}"
    predicate = _predicate(memory_text)
    if subtype == "behavior":
        plain = predicate
        for phrase, most in _PLAIN_FREQUENCY.items():
            plain = re.sub(rf"\b{phrase}\b", most, plain, flags=re.I)
        had_most = plain != predicate or re.search(r"\bmost \w+s\b", plain)
        plain = re.sub(r"\s+", " ", _FREQUENCY.sub(lambda m: m.group(0) if m.group(0).lower().startswith("most")
                                                    else "", plain)).strip()
        return _sentence(plain if had_most else f"usually {plain}")
    match = (_POSITIVE if polarity == "+" else _NEGATIVE).search(predicate)
    return _sentence(_third_person(match.group(0)) if match else predicate)


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
                    positive = (polarity == "+") if existing is None else trait_is_positive(existing.memory.text)
                    hint = hints[key] = TraitHint(text=text, subtype=existing.subtype if existing else subtype,
                                                  context=_context_of(memory.text), key=key, quality=quality,
                                                  positive=positive,
                                                  existing_trait_id=existing.pk if existing else None)
                agrees = (polarity == "+") == hint.positive
                (hint.supports if agrees else hint.contradicts).append(memory)
        return list(hints.values())

    @staticmethod
    def _text(memory: MemoryItem, polarity: str, subtype: str) -> str:
        return trait_text(memory.text, polarity, subtype)


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
            enqueue(vocabulary.TASK_RUN_QUEUED_CYCLE, cycle.id, background=True)
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
        if cycle.session_id:
            memories = session_memories(tenant, user_id, cycle.session_id, settings.REFLECTION_MAX_MEMORIES)
        else:
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
                                              evidence=[(m, hint.quality) for m in hint.supports],
                                              cycle_id=cycle.pk)
                created += 1
                supports = []
            else:
                supports = hint.supports
            observations = [services.Observation(m, EvidenceKind.SUPPORTING, hint.quality, hint.context)
                            for m in supports]
            observations += [services.Observation(m, EvidenceKind.CONTRADICTING, hint.quality, hint.context)
                             for m in hint.contradicts]
            if observations:
                change = services.trait_observe(trait_id=trait.pk, observations=observations, actor=ACTOR,
                                                cycle_id=cycle.pk)
                dissolved += change.new_stage == TraitStage.DISSOLVED and change.stage_changed
                # Updated means changed: new evidence or a new stage, not a match that added nothing.
                updated += hint.existing_trait_id is not None and (change.evidence_added > 0
                                                                    or change.stage_changed)
            trait.refresh_from_db()
            if services.trait_split_by_context(trait=trait, actor=ACTOR):
                dissolved += 1
            services.trait_lift_to_preference(trait=trait, actor=ACTOR)
        cycle.memories_scanned = len(memories)
        cycle.traits_created, cycle.traits_updated, cycle.traits_dissolved = created, updated, dissolved
        # A session's cycle reads that session only: the user's watermark is not its to move.
        cycle.watermark = None if cycle.session_id else (memories[-1].created_at if memories
                                                         else last_watermark(tenant, user_id))
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
            enqueue(vocabulary.TASK_REFLECT_USER, tenant.id, user_id, CycleTrigger.IMPORTANCE.value, total,
                    on_commit=False)
            queued += 1
    return queued


# --------------------------------------------------------------------------- a session's end


def session_memories(tenant: Tenant, user_id: str, session_id: str, cap: int) -> list[MemoryItem]:
    """What a session_end cycle reads: the session's current, non-trait memories (episodes aside), oldest
    first, whatever the user's watermark says (a later scheduled cycle counts none of them twice: a memory
    is evidence for a trait once)."""
    return list(MemoryItem.objects.filter(vocabulary.is_searchable(timezone.now()), tenant=tenant, user_id=user_id,
                                          session_id=session_id).exclude(memory_type=MemoryType.TRAIT)
                .exclude(tags__contains=[EPISODE_TAG]).order_by("created_at", "id")[:cap])


def session_end_request(*, tenant: Tenant, user_id: str, session_id: str) -> tuple[ReflectionCycle, bool]:
    """Queue the session_end cycle of one session (POST /sessions/{s}/end, or idle detection): at most one
    per session, so a second end, or an end after the session went idle, returns the first cycle (False).
    A session the user never had (no memory, no conversation) is not found."""
    ended = ReflectionCycle.objects.filter(tenant=tenant, user_id=user_id, session_id=session_id,
                                           trigger=CycleTrigger.SESSION_END)
    existing = ended.first()
    if existing is not None:
        return existing, False
    if not (MemoryItem.objects.filter(tenant=tenant, user_id=user_id, session_id=session_id).exists()
            or ConversationJob.objects.filter(tenant=tenant, user_id=user_id, session_id=session_id).exists()):
        raise MemoryNotFound(f"user {user_id!r} has no session {session_id!r}")
    try:
        with transaction.atomic():
            cycle = ReflectionCycle.objects.create(tenant=tenant, user_id=user_id, session_id=session_id,
                                                   trigger=CycleTrigger.SESSION_END, status=CycleStatus.QUEUED)
            enqueue(vocabulary.TASK_RUN_QUEUED_CYCLE, cycle.id, background=True)
    except IntegrityError:  # ended twice at once: the other request queued it
        return ended.get(), False
    return cycle, True


def sessions_gone_idle(*, now, idle: timedelta, lookback: timedelta) -> list[tuple[int, str, str]]:
    """(tenant id, user id, session id) of every session whose last memory is older than `idle` (but newer
    than idle + lookback, so a first run does not end every session ever held) and that has no
    session_end cycle yet."""
    ended = ReflectionCycle.objects.filter(tenant_id=OuterRef("tenant_id"), user_id=OuterRef("user_id"),
                                           session_id=OuterRef("session_id"), trigger=CycleTrigger.SESSION_END)
    rows = (MemoryItem.objects.filter(created_at__gt=now - idle - lookback).exclude(session_id="")
            .exclude(memory_type=MemoryType.TRAIT)
            .values("tenant_id", "user_id", "session_id").annotate(last=Max("created_at"))
            .filter(last__lte=now - idle).filter(~Exists(ended)).order_by("last"))
    return [(r["tenant_id"], r["user_id"], r["session_id"]) for r in rows]


def sessions_end_idle(*, now=None) -> int:
    """Idle detection (SESSION_IDLE_MINUTES): queue the session_end cycle of every session gone quiet."""
    now = now or timezone.now()
    queued = 0
    tenants: dict[int, Tenant] = {}
    for tenant_id, user_id, session_id in sessions_gone_idle(
            now=now, idle=timedelta(minutes=settings.SESSION_IDLE_MINUTES),
            lookback=timedelta(hours=settings.SESSION_IDLE_LOOKBACK_HOURS)):
        tenant = tenants.setdefault(tenant_id, Tenant.objects.get(id=tenant_id))
        queued += session_end_request(tenant=tenant, user_id=user_id, session_id=session_id)[1]
    return queued


# --------------------------------------------------------------------------- contradiction-focused reflection


def on_evidence_withdrawn(withdrawal: Withdrawal) -> None:
    """The writer's announcement (memories.withdrawals): facts stopped holding. When any of them supports
    a live trait, queue that trait's re-evaluation after commit; the trait ids and the lost memory ids are
    read now, while an erased fact's evidence rows still exist."""
    lost: dict[str, list[str]] = {}
    rows = (TraitEvidence.objects.filter(memory_id__in=[uuid.UUID(m) for m in withdrawal.memory_ids],
                                         kind=EvidenceKind.SUPPORTING,
                                         withdrawn_at__isnull=True, trait__memory__tenant_id=withdrawal.tenant_id)
            .exclude(trait__stage=TraitStage.DISSOLVED).values_list("trait_id", "memory_id"))
    for trait_id, memory_id in rows:
        lost.setdefault(str(trait_id), []).append(str(memory_id))
    if lost:
        enqueue(vocabulary.TASK_REEVALUATE_TRAITS, withdrawal.tenant_id, withdrawal.user_id, withdrawal.cause, lost,
                withdrawal.replaced_by, background=True)


def _agrees(trait: Trait, memory: MemoryItem) -> bool:
    """Whether a memory says the same as the trait (same key, same polarity)."""
    signal = memory_signal(memory)
    if signal is None:
        return False
    polarity, key, _subtype, _quality = signal
    return key == trait.memory.data.get("key") and (polarity == "+") == trait_is_positive(trait.memory.text)


def _reevaluate_trait(trait: Trait, memory_ids: list[str], cause: str, replacements: dict[str, MemoryItem],
                      replaced_by: dict[str, str], cycle: ReflectionCycle) -> services.TraitChange:
    """One trait against what replaced its lost support: a new version that still agrees carries the
    support over; anything else weakens the trait (services.trait_withdraw_support)."""
    replacing = [replacements[replaced_by[m]] for m in memory_ids if replaced_by.get(m) in replacements]
    agreeing = [m for m in replacing if _agrees(trait, m)]
    if cause == "superseded" and agreeing and len(agreeing) == len(memory_ids):
        return services.trait_carry_support(trait_id=trait.pk, from_memory_ids=memory_ids, to=agreeing,
                                            actor=ACTOR, cycle_id=cycle.pk)
    contradicting = next((m for m in replacing if m not in agreeing), None)
    quality = None
    if contradicting is not None:
        signal = memory_signal(contradicting)
        quality = "A" if cause == "invalidated" or signal is None else signal[3]
    return services.trait_withdraw_support(
        trait_id=trait.pk, actor=ACTOR, cycle_id=cycle.pk,
        withdrawn=services.Withdrawn(memory_ids=tuple(memory_ids), cause=cause, contradicting=contradicting,
                                     quality=quality))


def reflection_reevaluate(*, tenant: Tenant, user_id: str, cause: str, lost: dict[str, list[str]],
                          replaced_by: dict[str, str]) -> ReflectionCycle:
    """A cycle with trigger `contradiction` over the traits whose supporting facts stopped holding (seed
    004: a contradicted trait may be reflected on at once). Raises ReflectionBusy while another cycle of
    the user runs (the task retries)."""
    cycle = _start_cycle(tenant, user_id, CycleTrigger.CONTRADICTION, None)
    try:
        replacements = {str(m.id): m for m in MemoryItem.objects.filter(tenant=tenant,
                                                                         id__in=set(replaced_by.values()))}
        updated = dissolved = 0
        for trait_id, memory_ids in lost.items():
            trait = Trait.objects.filter(pk=uuid.UUID(trait_id), memory__tenant=tenant).select_related("memory").first()
            if trait is None or trait.stage == TraitStage.DISSOLVED:
                continue
            change = _reevaluate_trait(trait, memory_ids, cause, replacements, replaced_by, cycle)
            updated += change.evidence_added > 0 or change.stage_changed
            dissolved += change.stage_changed and change.new_stage == TraitStage.DISSOLVED
        cycle.memories_scanned = len({m for ids in lost.values() for m in ids})
        cycle.traits_updated, cycle.traits_dissolved = updated, dissolved
        cycle.status = CycleStatus.COMPLETED
    except Exception as exc:
        logger.exception("reflection cycle %s failed", cycle.pk)
        cycle.status, cycle.error = CycleStatus.FAILED, f"{type(exc).__name__}: {exc}"[:4000]
    cycle.completed_at = timezone.now()
    cycle.save()
    return cycle


def cycles_erase(tenant: Tenant, user_id: str, dry_run: bool, agent_id: str | None) -> dict[str, int]:
    """Erasure's step for reflection (registered from ReflectionConfig.ready): a cycle's error text may
    quote the user; counts and times stay. Cycles belong to the user, not to an agent."""
    if agent_id is not None:
        return {"reflection_cycles": 0}
    rows = ReflectionCycle.objects.filter(tenant=tenant, user_id=user_id).exclude(error="")
    return {"reflection_cycles": rows.count() if dry_run else rows.update(error="")}
