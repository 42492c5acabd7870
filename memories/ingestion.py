"""Conversation ingestion: extraction -> importance threshold -> decision
(NOOP / UPDATE / INVALIDATE+ADD / ADD) -> review gate -> one transaction per job.

A job keeps its messages so it can be re-run; a redelivered job that already
finished does nothing (its operations committed together with its status).
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime

import numpy as np
from django.conf import settings
from django.db import Error, transaction
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from memories import erasure, metrics, vocabulary
from memories.applier import Applied, Submitter, apply_decision, people_reader
from memories.closeness import read_by_meaning, said_with
from memories.dedupe import Neighbour, Proposal, decide, says_forgotten, turns_forgotten
from memories.embedding import Embedder, EmbeddingError, get_embedder
from memories.emotion import emotions_from_vectors, reads_emotion_from_vectors
from memories.episode_record import narratives, record_episodes
from memories.erasure import erased_since
from memories.errors import InvalidOperation, get_or_not_found
from memories.extraction import (
    UNKNOWN_SPEAKER,
    ExistingMemory,
    ExtractedStatement,
    ExtractionError,
    LLMExtractor,
    Message,
    get_extractor,
    group_profile_candidates,
    introduced_name,
)
from memories.extraction.episode_unit import unit_of
from memories.governance import sensitive_kinds
from memories.models import (
    CURRENT_STATUSES,
    ApiKey,
    ConversationJob,
    JobStatus,
    KeyRole,
    MemoryItem,
    MemorySource,
    MemoryStatus,
    MemoryType,
    Tenant,
)
from memories.people.reading import PeopleReader
from memories.queue import background_queue_full, enqueue
from memories.quota import refuse_when_busy
from memories.relations import whom
from memories.screening import said_sensitive, shown_while_held, split_sensitive
from memories.search import SearchQuery, memory_search, nearest_memories, profile_display_name
from memories.text import content_hash
from memories.transient import run_retrying, transient_cause
from memories.vectors import vectors_store_known
from memories.vocabulary import KEY_FACT_SLOTS, SLOT_KEY, Tag
from memories.working import WorkingMemoryUnavailable, working_memory_clear, working_memory_push
from memories.writing import (
    FORGOTTEN_TURN,
    MemorySpec,
    current_memories,
    episode_forget_turns,
    reflection_nudge,
    refuse_sensitive_identifiers,
    user_write_lock,
    users_write_lock,
)

logger = logging.getLogger(__name__)

# An extracted statement below this importance is dropped as trivia.
MEMORY_IMPORTANCE_THRESHOLD = 0.3
# Cosine at or above which a new statement is the same memory as a neighbour (memories/dedupe.py decides).
MEMORY_NEAR_DUPLICATE = 0.95
# An episode (a speaker's original turns of a session) starts a new part past this many characters.
EPISODE_MAX_CHARS = 2000
ACTOR = "extraction"
PENDING_JOB_STATUSES = vocabulary.PENDING_JOB_STATUSES


def conversation_job_create(*, tenant: Tenant, user_id: str, session_id: str, messages: list[dict],
                            agent_id: str = "", group_id: str = "", participants: dict | None = None,
                            api_key: ApiKey | None = None) -> ConversationJob:
    """Record the conversation (and the key that sent it) and enqueue its extraction after commit. Ids
    carrying sensitive data are refused before anything is kept (writing.refuse_sensitive_identifiers)."""
    refuse_sensitive_identifiers({"user_id": user_id, "session_id": session_id, "agent_id": agent_id,
                                  "group_id": group_id,
                                  **{f"participants.{name}": uid for name, uid in (participants or {}).items()}})
    if any(sensitive_kinds(name) for name in participants or {}):  # a name is shown as an id is: never quoted
        raise InvalidOperation("a participant's name carries sensitive data: name them as they are called, or "
                               "by a pseudonym", field="participants")
    refuse_when_busy(tenant.id, queue_full=_is_long(messages) and background_queue_full())
    job = ConversationJob.objects.create(
        tenant=tenant, user_id=user_id, session_id=session_id, agent_id=agent_id, group_id=group_id,
        participants=participants or {}, messages=messages, api_key=api_key,
    )
    _enqueue(job.id, background=_is_long(messages))
    return job


def _is_long(messages: list[dict]) -> bool:
    return sum(len(str(m.get("content", ""))) for m in messages) > settings.CONVERSATION_SYNC_CHARS


def _enqueue(job_id: uuid.UUID, *, background: bool = False) -> None:
    """Long conversations run in the background even without a broker: the request does not wait."""
    enqueue(vocabulary.TASK_RUN_CONVERSATION_JOB, str(job_id), background=background)


def conversation_job_retry(*, tenant: Tenant, job_id: uuid.UUID | str) -> ConversationJob:
    """Re-run a failed job from its kept conversation."""
    with transaction.atomic():
        job = get_or_not_found(ConversationJob.objects.select_for_update().filter(tenant=tenant), "job", id=job_id)
        if job.status != JobStatus.FAILED:
            raise InvalidOperation(f"only failed jobs can be retried; this one is {job.status}", field="status")
        if job.turns_dropped_at is not None:
            raise InvalidOperation("this job's turns were emptied after CONVERSATION_RAW_RETENTION_DAYS; "
                                   "send the conversation again", field="messages")
        job.status, job.error = JobStatus.QUEUED, ""
        job.save(update_fields=["status", "error"])
        _enqueue(job.id, background=_is_long(job.messages))
    job.refresh_from_db()
    return job


# --------------------------------------------------------------------------- running a job


@dataclass
class JobOutcome:
    operations: list[dict] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    added: list[MemoryItem] = field(default_factory=list)
    episodes: list[str] = field(default_factory=list)
    forgotten: dict[str, list[str]] = field(default_factory=dict)  # user id -> what they forgot (something went)
    asked_to_forget: dict[str, list[str]] = field(default_factory=dict)  # user id -> forgets that took no memory
    forgotten_ids: dict[str, set[str]] = field(default_factory=dict)  # user id -> the memories it archived
    forgotten_turns: dict[str, set[int]] = field(default_factory=dict)  # user id -> turns that said it

    def record(self, operation: str, *, user_id: str, text: str, reason: str = "", memory_id=None,
               candidate_id=None, turns: Sequence[int] = ()) -> None:
        entry = {"operation": operation, "user_id": user_id, "memory_id": str(memory_id) if memory_id else None,
                 "text": text, "reason": reason, "turns": list(turns)}  # turns: the job page shows it beside them
        if candidate_id:
            entry["candidate_id"] = str(candidate_id)
        self.operations.append(entry)
        self.count(operation)

    def count(self, name: str) -> None:
        self.counts[name] = self.counts.get(name, 0) + 1


def _messages(job: ConversationJob) -> list[Message]:
    """The job's turns. A speaker name carrying what the detector finds (an e-mail or SSN given as the
    name) is read as no name: the speaker is named as an unnamed one is, never by it."""
    out = []
    for index, raw in enumerate(job.messages):
        created, name = raw.get("created_at"), raw.get("name") or ""
        out.append(Message(index=index, role=raw["role"], content=raw["content"],
                           name="" if sensitive_kinds(name) else name,
                           created_at=parse_datetime(created) if isinstance(created, str) else None))
    return out


def _speakers(job: ConversationJob, messages: list[Message]) -> dict[str, str]:
    """Participant name -> user_id. Without participants the one user is named by their messages'
    `name`, else by the name they give in this conversation ("I'm Maria", "我叫小林") or gave before (their
    profile's name), else 'User'."""
    if job.participants:
        return dict(job.participants)
    name = (next((m.name for m in messages if m.role == "user" and m.name), None)
            or introduced_name([m.content for m in messages if m.role == "user"])
            or profile_display_name(job.tenant_id, job.user_id) or UNKNOWN_SPEAKER["en"])
    return {name: job.user_id}


def _speaker_of(message: Message, speakers: dict[str, str]) -> str | None:
    """The user who said a user turn: the one speaker, or the participant it names."""
    return next(iter(speakers.values())) if len(speakers) == 1 else speakers.get(message.name or "")


def _related(tenant: Tenant, speakers: dict[str, str], messages: list[Message]) -> list[ExistingMemory]:
    """Existing memories the LLM should see, so it can avoid repeats and name contradictions."""
    query = " ".join(m.content for m in messages if m.role == "user")[-2000:]
    related: list[ExistingMemory] = []
    for user_id in dict.fromkeys(speakers.values()):
        for result in memory_search(tenant=tenant, query=SearchQuery(query=query or "profile", user_id=user_id,
                                                                     limit=20)):
            related.append(ExistingMemory(id=str(result.memory.id), text=result.memory.text))
    return related


@dataclass
class Extracted:
    """What a job's extraction found, before anything is written (the LLM is called outside the transaction)."""

    extractor: str
    messages: list[Message]
    speakers: dict[str, str]
    statements: list[ExtractedStatement]
    narratives: dict[str, tuple[str, str]]  # user id -> the LLM's (title, content) of their episode
    outcome: JobOutcome
    now: datetime


def conversation_job_run(job_id: str) -> ConversationJob:
    """Extract and apply one job. Raises ExtractionError for the task to retry."""
    job = ConversationJob.objects.get(id=job_id)
    if job.status == JobStatus.DONE:
        return job
    deadline = time.monotonic() + settings.CONVERSATION_JOB_TIME_LIMIT
    ConversationJob.objects.filter(id=job.id).update(status=JobStatus.RUNNING, started_at=timezone.now(),
                                                     attempts=job.attempts + 1)
    extracted = _extract(job)
    job, extracted = _apply_retrying(job, extracted, deadline)
    for user_id, ids in extracted.outcome.forgotten_ids.items():  # Redis keeps recent texts: not these
        try:
            working_memory_clear(job.tenant.id, user_id, memory_ids=ids)
        except WorkingMemoryUnavailable as exc:
            logger.warning("working memory not cleared of forgotten memories: %s", exc)
    added = extracted.outcome.added
    if added:
        try:
            working_memory_push(added)
            _unpush_erased(added)
        except WorkingMemoryUnavailable as exc:
            job.warnings = [*job.warnings, f"working memory skipped: {exc}"]
            ConversationJob.objects.filter(id=job.id).update(warnings=job.warnings)
        # Reflection builds on memories: it is asked by task name, never imported from here.
        reflection_nudge(job.tenant.id, sorted({m.user_id for m in added}), on_commit=False)
    return job


def _apply_retrying(job: ConversationJob, extracted: Extracted, deadline: float) -> tuple[ConversationJob, Extracted]:
    """The job's one transaction, run again from the start when it fails for a transient reason (a
    deadlock, a serialization failure, a lost connection: memories.transient): it rolled back whole, so
    nothing is written twice. Each run starts from the extraction's own outcome. Transient failures that
    keep coming are raised as retryable ExtractionError (the task retries the job later, then fails it)."""
    tenant_id, job_id = job.tenant_id, job.id
    runs: list[Extracted] = []

    def apply_once() -> ConversationJob:
        attempt = replace(extracted, outcome=JobOutcome(warnings=list(extracted.outcome.warnings)))
        runs.append(attempt)
        with transaction.atomic():
            # The speakers' write locks first, then the job's row: a job waiting for a user's lock holds
            # no row another job's forget (erasure.forget_in_jobs) or writes would wait for.
            users_write_lock(tenant_id, extracted.speakers.values())
            locked = ConversationJob.objects.select_for_update().get(id=job_id)
            if locked.status != JobStatus.DONE:  # else a concurrent delivery finished first
                _apply_job(locked, attempt, deadline)
            return locked

    def count_retry(cause: str, _attempt: int) -> None:
        metrics.observe_job_retry(cause=cause)

    try:
        done = run_retrying(apply_once, attempts=settings.TRANSIENT_RETRIES, base=settings.TRANSIENT_RETRY_BACKOFF,
                            deadline=deadline, what=f"conversation job {job_id}", on_retry=count_retry)
    except Error as exc:  # Django's DatabaseError, and InterfaceError for a connection already closed
        cause = transient_cause(exc)
        if cause is None:
            raise
        raise ExtractionError(f"database {cause} {settings.TRANSIENT_RETRIES + 1} times running the job: {exc}",
                              retryable=True) from exc
    return done, runs[-1]


def _extract(job: ConversationJob) -> Extracted:
    """The statements worth keeping (and, with an LLM, the episode's narrative)."""
    extractor = get_extractor()
    messages = _messages(job)
    speakers = _speakers(job, messages)
    existing = _related(job.tenant, speakers, messages) if extractor.name == "llm" else []
    now = timezone.now()
    statements = extractor.extract(messages=messages, speakers=speakers, existing=existing, now=now)
    if job.group_id:  # a group turn also keeps the group's profile (members, roles, shared facts)
        statements += group_profile_candidates(messages=messages, speakers=speakers, now=now)
    outcome = JobOutcome(warnings=list(getattr(extractor, "notes", [])))
    narrated = {}
    if settings.CONVERSATION_EPISODES and isinstance(extractor, LLMExtractor):
        # seed 002: with an LLM, each participant's episode gets the narrative of what they saw
        narrated = narratives(job, extractor, messages, speakers, now, outcome.warnings)
    return Extracted(extractor.name, messages, speakers, statements, narrated, outcome, now)


def _apply_job(job: ConversationJob, extracted: Extracted, deadline: float) -> None:
    """Under the speakers' write locks (taken before the job's row): each statement decided and applied, the
    episodes kept, the job done."""
    speakers, outcome = extracted.speakers, extracted.outcome  # their write locks: taken by _apply_retrying
    # Under the same per-user lock erasure takes: a user erased after this job was queued gets nothing from it.
    erased = erased_since(job.tenant, set(speakers.values()), job.created_at, job.agent_id, job.api_key_id)
    embedder = get_embedder()
    split = split_sensitive(extracted.messages)
    said_kinds = said_sensitive(extracted.statements, extracted.messages)
    fresh: dict[str, list[tuple[np.ndarray, MemoryItem]]] = {}
    vectors, emotions = _statement_vectors(extracted.statements, embedder)
    people = {user_id: people_reader(job.tenant, user_id, ACTOR, names=(label, *speakers_of(job)), job_id=str(job.id))
              for label, user_id in speakers.items() if user_id not in erased}
    # Forget requests last: within one conversation they reach what was said in it, whatever the order the
    # extractor found things in.
    for statement in sorted(extracted.statements, key=lambda s: s.forget):
        if speakers[statement.subject] in erased:
            outcome.count("erased")
            continue
        if time.monotonic() > deadline:  # the transaction rolls back: nothing of the job is written
            raise ExtractionError(f"the job took longer than {settings.CONVERSATION_JOB_TIME_LIMIT} s "
                                  "(CONVERSATION_JOB_TIME_LIMIT); send the conversation in smaller parts",
                                  retryable=False)
        kinds = sorted({kind for index in statement.source_messages for kind in split.get(index, [])}
                       | set(said_kinds[id(statement)]))
        reader = people[speakers[statement.subject]]
        for index, message in enumerate(extracted.messages[:max(statement.source_messages, default=-1) + 1]):
            if message.role == "user" and _speaker_of(message, speakers) == reader.user_id:
                reader.hear(index, message.content, extracted.now)  # who "she" is, by the turn it was said in
        _apply_statement(job, statement, speakers[statement.subject], embedder, outcome, fresh, extracted.now,
                         split_sensitive=tuple(kinds), people=reader, emotion=emotions.get(statement.text),
                         vector=vectors.get(statement.text))
    # What deduplication embedded is the memory's vector: written here, not embedded again after commit.
    vectors_store_known([(memory.id, memory.text, vector) for pairs in fresh.values() for vector, memory in pairs],
                        embedder=embedder)
    _forget_held(job, speakers, outcome)
    for user_id, forgotten in sorted(outcome.forgotten.items()):  # what earlier episodes said of it goes too
        redacted = episode_forget_turns(tenant=job.tenant, user_id=user_id, actor=ACTOR, job_id=str(job.id),
                                        says_it=_forgotten_matcher(forgotten, speakers), digest=unit_of)
        outcome.counts["turns_forgotten"] = outcome.counts.get("turns_forgotten", 0) + redacted
        # ... and so does every conversation job's copy (this one's, then earlier ones'): turns, operations
        said = _forgotten_matcher(forgotten, speakers)
        ids = outcome.forgotten_ids.get(user_id, set())
        _blank_turns(job, forgotten, outcome.forgotten_turns.get(user_id, set()), speakers, outcome)
        outcome.operations = erasure.forget_in_operations(outcome.operations, said, ids)
        # held for review: before the jobs, whose turns tell which candidates came from what was forgotten
        held = erasure.forget_in_candidates(tenant=job.tenant, user_id=user_id, says_it=said)
        outcome.counts["candidates_forgotten"] = outcome.counts.get("candidates_forgotten", 0) + held
        jobs = erasure.forget_in_jobs(tenant=job.tenant, user_id=user_id, says_it=said, memory_ids=ids,
                              exclude_job_id=str(job.id))
        outcome.counts["jobs_forgotten_in"] = outcome.counts.get("jobs_forgotten_in", 0) + jobs
    if settings.CONVERSATION_EPISODES:
        _keep_episodes(job, extracted, erased)
    job.status = JobStatus.DONE
    job.extractor = extracted.extractor
    job.operations, job.counts, job.warnings = outcome.operations, outcome.counts, outcome.warnings
    job.finished_at = timezone.now()
    job.error = ""
    job.save()


def _keep_episodes(job: ConversationJob, extracted: Extracted, erased: set[str]) -> None:
    """Each participant's episode of the session (memories.episode_record), with the facts this job drew."""
    outcome, speakers = extracted.outcome, extracted.speakers
    episodes, idle = record_episodes(
        job, extracted.messages, speakers, erased, narrated=extracted.narratives, added=outcome.added,
        max_chars=EPISODE_MAX_CHARS,
        forgotten=lambda user_id: _forgotten_matcher(outcome.forgotten.get(user_id, []), speakers))
    outcome.episodes.extend(episodes)
    for _ in range(idle):
        outcome.count("nothing_worth_keeping")  # greetings and thanks only: not even an episode


def _blank_turns(job: ConversationJob, forgotten: list[str], said_in: set[int], speakers: dict[str, str],
                 outcome: JobOutcome) -> None:
    """This job's stored turns without what a forget took (dedupe.turns_forgotten); counted."""
    marked = turns_forgotten([str(m.get("content", "")) for m in job.messages], forgotten=forgotten,
                             said_in=said_in, names=_names(speakers))
    marked -= {i for i, m in enumerate(job.messages) if m.get("content") == FORGOTTEN_TURN}
    job.messages = [{**m, "content": FORGOTTEN_TURN} if i in marked else m for i, m in enumerate(job.messages)]
    outcome.counts["turns_forgotten"] += len(marked)  # this job's own turns count too


def _forget_held(job: ConversationJob, speakers: dict[str, str], outcome: JobOutcome) -> None:
    """A forget that took no memory may take a statement held for review: its candidate is closed with
    its words gone (erasure.forget_in_candidates), and the forget then counts as taken, so the turns that
    said it go from the episodes and jobs (issue 55: it was a NOOP, the candidate pending with its text)."""
    for user_id, asked in sorted(outcome.asked_to_forget.items()):
        for text in asked:
            closed = erasure.forget_in_candidates(tenant=job.tenant, user_id=user_id,
                                                  says_it=_forgotten_matcher([text], speakers))
            if closed:
                outcome.forgotten.setdefault(user_id, []).append(text)
                outcome.counts["candidates_forgotten"] = outcome.counts.get("candidates_forgotten", 0) + closed


def _forgotten_matcher(forgotten: list[str], speakers: dict[str, str]) -> Callable[[str], bool]:
    """Whether a turn says one of the things the user asked to forget (the speakers' names aside)."""
    names = _names(speakers)
    return lambda text: any(says_forgotten(item, text, names=names) for item in forgotten)


def _names(speakers: dict[str, str]) -> frozenset[str]:
    return frozenset({*speakers, *speakers.values(), "User", "用户"})


def _unpush_erased(pushed: list[MemoryItem]) -> None:
    """An erasure that committed between this job's commit and its push
    cleared Redis before the push: clear it again for users whose memories
    are gone (erasure clears after this check otherwise)."""
    alive = set(MemoryItem.objects.filter(id__in=[m.id for m in pushed]).values_list("id", flat=True))
    for tenant_id, user_id in {(m.tenant_id, m.user_id) for m in pushed if m.id not in alive}:
        working_memory_clear(tenant_id, user_id)


NEIGHBOURS = 5  # current memories decide() sees beside the slot and the named contradiction
# An update or forget request looks further: what it replaces or takes back may be said in other words
# (or another language) than the nearest stored vectors favour.
TARGET_NEIGHBOURS = 12


def gather_neighbours(tenant: Tenant, user_id: str, vector: np.ndarray, embedder: Embedder, *, key: str = "",
                      contradicts: str | None = None, text: str = "", forget: bool = False,
                      fresh: Sequence[tuple[np.ndarray, MemoryItem]] = (),
                      limit: int = NEIGHBOURS) -> tuple[list[Neighbour], dict]:
    """The user's current memories decide() weighs, closest first (stored vectors, this job's own
    additions not embedded yet, the slot's memory, a named contradiction), and the rows by id."""
    similarity: dict[str, float] = {}
    for memory_id, value in nearest_memories(tenant=tenant, user_id=user_id, vector=vector, model=embedder.name,
                                             dimensions=embedder.dimensions, limit=limit):
        similarity[memory_id] = value
    # Traits are reflection's conclusions, not statements: a new fact is never folded into one, and a
    # forget request never hits one (the trait is re-evaluated when the facts under it go).
    current = current_memories(tenant.id, user_id).exclude(memory_type=MemoryType.TRAIT)
    if forget:  # an episode is never forgotten whole for one sentence: its turns are redacted instead
        current = current.exclude(tags__contains=[Tag.EPISODE])
    rows = {str(m.id): m for m in current.filter(id__in=list(similarity))}
    for other_vector, memory in fresh:
        if memory.expired_at is None and memory.status in CURRENT_STATUSES:
            rows[str(memory.id)] = memory
            similarity[str(memory.id)] = max(similarity.get(str(memory.id), -1.0), float(np.dot(vector, other_vector)))
    extra = current_memories(tenant.id, user_id).filter(content_hash=content_hash(text)).first() if text else None
    slot = current.filter(data__key=key).order_by("-created_at").first() if key else None
    named = current.filter(id=contradicts).first() if contradicts else None
    for found in (extra, slot, named):
        if found is not None:
            rows.setdefault(str(found.id), found)
            similarity.setdefault(str(found.id), 0.0)
    neighbours = [Neighbour(id=memory_id, text=rows[memory_id].text, similarity=value,
                            key=str((rows[memory_id].data or {}).get("key", "")),
                            value=str((rows[memory_id].data or {}).get("value", "")))
                  for memory_id, value in sorted(similarity.items(), key=lambda item: -item[1]) if memory_id in rows]
    return neighbours, rows


def _statement_vectors(statements: Sequence[ExtractedStatement],
                       embedder: Embedder) -> tuple[dict[str, np.ndarray], dict[str, dict | None]]:
    """The document vector of each statement worth keeping, in one call of the model for the whole job: what
    deduplication compares, the vector the memory keeps (vectors_store_known), and what its emotion is read
    from (emotion.emotions_from_vectors: the encoders run once). Text -> vector, text -> emotion."""
    texts = list(dict.fromkeys(s.text for s in statements if s.importance >= MEMORY_IMPORTANCE_THRESHOLD))
    if not texts:
        return {}, {}
    try:
        matrix = embedder.embed_documents(texts)
    except Exception as exc:  # the transaction rolls back; the task retries the whole job with backoff
        raise ExtractionError(f"embedding failed: {type(exc).__name__}: {exc}", retryable=True) from exc
    emotions = emotions_from_vectors(texts, matrix, embedder) if settings.MEMORY_EMOTION else [None] * len(texts)
    return dict(zip(texts, matrix, strict=True)), dict(zip(texts, emotions, strict=True))


def _apply_statement(job: ConversationJob, statement: ExtractedStatement, user_id: str, embedder: Embedder,
                     outcome: JobOutcome, fresh: dict, now: datetime, *, split_sensitive: tuple[str, ...] = (),
                     people: PeopleReader | None = None, emotion: dict | None = None,
                     vector: np.ndarray | None = None) -> None:
    """Gather neighbours -> decide -> apply (applier.apply_decision); `vector`: from _statement_vectors."""
    if statement.importance < MEMORY_IMPORTANCE_THRESHOLD or vector is None:
        outcome.count("dropped")
        return
    targeted = statement.forget or statement.replaces
    neighbours, rows = gather_neighbours(job.tenant, user_id, vector, embedder, key=statement.key,
                                         contradicts=statement.contradicts, text=statement.text,
                                         forget=statement.forget, fresh=fresh.get(user_id, []),
                                         limit=TARGET_NEIGHBOURS if targeted else NEIGHBOURS)
    names = (statement.subject, *speakers_of(job))
    if targeted:
        neighbours = read_by_meaning(statement.text, neighbours, names=names)
    neighbours = [replace(n, about=whom(n.text, names)) for n in neighbours]
    decision = decide(Proposal(text=statement.text, key=statement.key, value=statement.value,
                               contradicts=statement.contradicts, forget=statement.forget,
                               replaces=statement.replaces, slot=statement.slot, names=names,
                               about=whom(statement.text, names)),
                      neighbours, near_duplicate=MEMORY_NEAR_DUPLICATE)
    target = rows.get(decision.target) if decision.target else None
    if statement.forget and target is not None and not decision.unclear:
        for sibling in said_with(job.tenant, user_id, target):
            rows.setdefault(str(sibling.id), sibling)
            decision = replace(decision, also=(*decision.also, str(sibling.id)))
    data = {"key": statement.key, "value": statement.value} if statement.key and statement.value else {}
    # The profile reads it: facts about who the user is, not habits (reflection's), plans or events.
    if statement.slot in KEY_FACT_SLOTS and Tag.HABIT not in statement.tags and \
            statement.memory_type in (MemoryType.PROFILE, MemoryType.FACT):
        data[SLOT_KEY] = statement.slot
    spec = MemorySpec(user_id=user_id, text=statement.text, memory_type=statement.memory_type,
                      importance=statement.importance, confidence=statement.confidence, tags=statement.tags,
                      data=data, agent_id=job.agent_id, session_id=job.session_id, group_id=job.group_id,
                      valid_at=statement.valid_at or now, source_session_id=job.session_id,
                      source_message_indices=statement.source_messages, emotion=emotion)
    applied = apply_decision(tenant=job.tenant, decision=decision, target=target, spec=spec,
                             confidence=statement.confidence, submitter=Submitter(
                                 actor=ACTOR, role=_job_role(job), api_key_id=job.api_key_id, job=job,
                                 source_messages=tuple(statement.source_messages), split_sensitive=split_sensitive,
                                 people=people),
                             also=[rows[i] for i in decision.unclear or decision.also if i in rows])
    if statement.forget and applied.operation != "REVIEW":  # what it took, the turns that say it go too
        _note_forget(job, statement, applied, user_id, outcome)
    _record_applied(outcome, applied, user_id, spec.text, statement.source_messages)
    if applied.superseded is not None:
        applied.superseded.expired_at = timezone.now()  # this job's own copy of it must stop matching
    if applied.invalidated is not None:
        applied.invalidated.expired_at = timezone.now()
    for memory in applied.forgotten:
        memory.status = MemoryStatus.ARCHIVED  # this job's own copy of it must stop matching
        outcome.forgotten_ids.setdefault(user_id, set()).add(str(memory.id))
    if applied.operation in ("ADD", "UPDATE") and applied.memory is not None:
        fresh.setdefault(user_id, []).append((vector, applied.memory))
        outcome.added.append(applied.memory)


def _note_forget(job: ConversationJob, statement: ExtractedStatement, applied: Applied, user_id: str,
                 outcome: JobOutcome) -> None:
    """What a forget took, in its words (the request's, each memory's before it went), and the turns known to
    say it (the request's, the memories' sources): dedupe.turns_forgotten blanks from these; nothing if none."""
    if not applied.forgotten:
        outcome.asked_to_forget.setdefault(user_id, []).append(statement.text)
        return
    outcome.forgotten.setdefault(user_id, []).extend([statement.text, *(m.text for m in applied.forgotten)])
    sources = MemorySource.objects.filter(item__in=applied.forgotten, job_id=str(job.id))
    outcome.forgotten_turns.setdefault(user_id, set()).update(
        [*statement.source_messages, *(i for source in sources for i in source.message_indices)])


def speakers_of(job: ConversationJob) -> tuple[str, ...]:
    """The names a job's memories may be written with (participants, the unknown speaker's words)."""
    return (*(job.participants or {}), *UNKNOWN_SPEAKER.values())


def _job_role(job: ConversationJob) -> str:
    """The role of the key that sent the job (agent when none: imports and internal jobs)."""
    return job.api_key.role if job.api_key_id and job.api_key is not None else KeyRole.AGENT


def _record_applied(outcome: JobOutcome, applied: Applied, user_id: str, text: str, turns: Sequence[int]) -> None:
    """The job's operations list: what the applier did, one entry per write (an INVALIDATE and its ADD)."""
    if applied.invalidated is not None:
        outcome.record("INVALIDATE", user_id=user_id, text=applied.invalidated.text,
                       memory_id=applied.invalidated.id, reason=f"contradicted by: {text}", turns=turns)
    memory_id = applied.memory.id if applied.memory is not None else None
    if applied.operation == "REVIEW":
        assert applied.candidate is not None
        outcome.record("REVIEW", user_id=user_id, reason=applied.reason, candidate_id=applied.candidate.id,
                       text=shown_while_held(applied.candidate.text, applied.candidate.reasons), memory_id=memory_id,
                       turns=turns)
    elif applied.operation == "DELETE":
        for memory in applied.forgotten:  # what was forgotten is not quoted, here either
            outcome.record("DELETE", user_id=user_id, text=FORGOTTEN_TURN, memory_id=memory.id,
                           reason=applied.reason, turns=turns)
    else:
        outcome.record(applied.operation, user_id=user_id, text=text, memory_id=memory_id,
                       reason="new information" if applied.operation == "ADD" and applied.invalidated is None
                       else applied.reason, turns=turns)


def memory_save_inferred(*, tenant: Tenant, spec: MemorySpec, actor: str, role: str = KeyRole.AGENT,
                         api_key_id: int | None = None) -> Applied:
    """`POST /memories` with `infer: true` (and MCP's add_memory): the conversation path's decision
    (dedupe.decide) against the user's near-duplicates, applied by the same applier: NOOP, UPDATE
    (supersede), INVALIDATE + ADD, ADD, or REVIEW when the gate holds it."""
    embedder = get_embedder()
    try:
        vector = embedder.embed_query(spec.text)
    except Exception as exc:
        raise EmbeddingError(f"infer needs the query embedding: {exc}") from exc
    # The vector is the memory's too (written with it, not embedded again after commit) when its emotion
    # can be read from it here (the default embedder) or is not read at all; else the task reads it.
    keep_vector = not settings.MEMORY_EMOTION or reads_emotion_from_vectors(embedder)
    if settings.MEMORY_EMOTION and keep_vector and spec.emotion is None:
        spec.emotion = emotions_from_vectors([spec.text], vector[None, :], embedder)[0]
    key, value = str(spec.data.get("key", "")), str(spec.data.get("value", ""))
    with transaction.atomic():
        user_write_lock(tenant.id, spec.user_id)
        neighbours, rows = gather_neighbours(tenant, spec.user_id, vector, embedder, key=key, text=spec.text)
        decision = decide(Proposal(text=spec.text, key=key, value=value), neighbours,
                          near_duplicate=MEMORY_NEAR_DUPLICATE)
        target = rows.get(decision.target) if decision.target else None
        applied = apply_decision(tenant=tenant, decision=decision, target=target, spec=spec,
                                 confidence=spec.confidence,
                                 submitter=Submitter(actor=actor, role=role, api_key_id=api_key_id))
        if keep_vector and applied.operation in ("ADD", "UPDATE") and applied.memory is not None:
            vectors_store_known([(applied.memory.id, spec.text, vector)], embedder=embedder)
        return applied
