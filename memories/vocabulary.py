"""The words for a memory's state, named once and used everywhere, raw SQL included.

latest      not replaced by a newer version (expired_at is null), whatever the status
current     not replaced (expired_at is null) and active or pending: what a new
            text is deduplicated against (the unique hash index covers exactly these)
searchable  not replaced, active, not invalidated by now and not expired by
            now (expires_at): what search, context and reflection read
expired     active and past its expires_at: what the expiry job archives
embeddable  not replaced and not rejected: what the embedding backfill fills
waiting     (a conversation job) queued, running or retrying: counted against TENANT_MAX_PENDING_JOBS
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from enum import StrEnum

from django.db.models import Q

from memories.models import CURRENT_STATUSES, JobStatus, MemoryStatus

ACTIVE = MemoryStatus.ACTIVE.value

class Tag(StrEnum):
    """The tags the service itself puts on memories and reads back (a client's own tags are any words): the
    only spelling of each, tests/test_one_spelling.py finds none written out elsewhere. The slot rules' topic
    words (extraction/rules.py, RULES) are written once in their table and never read back."""

    EPISODE = "episode"  # a session's original turns (seed 002's MemUnit)
    GROUP = "group"  # what the group extractor keeps about a group (members, roles, plans): the group profile
    MEMBER = "member"  # ... a member of the group
    ROLE = "role"  # ... a member's role in it
    # A standing wish about how the assistant answers ("keep it short", "回答用中文"), and a habit the user has:
    # what the profile at the head of every context block and reflection read.
    WISH = "wish"
    HABIT = "habit"
    IDENTITY = "identity"  # who the speaker is: a name, an age, an origin
    CONTACT = "contact"  # how to reach the speaker
    PERSON = "person"  # a fact about someone the speaker named
    ABOUT_OTHER = "about-other"  # a statement about someone else: never the speaker's trait


class Slot(StrEnum):
    """What a fact is about: the intent model's slot heads, in the order its weights index them (a model
    file names them; extraction/intent.py refuses one whose order differs). The only spelling of each."""

    NAME = "name"
    AGE = "age"
    HOME = "home"
    WORK = "work"
    EDUCATION = "education"
    PARTNER = "partner"
    FAMILY = "family"
    PET = "pet"
    HEALTH = "health"
    DIET = "diet"
    HOBBY = "hobby"
    SPORT = "sport"
    ROUTINE = "routine"
    TRAVEL = "travel"
    MONEY = "money"
    POSSESSION = "possession"
    PREFERENCE = "preference"
    LANGUAGE = "language"
    SCHEDULE = "schedule"
    ANSWER_STYLE = "answer_style"
    OTHER = "other"
    NONE = "none"


# What a fact is about, kept in a memory's data under this key.
SLOT_KEY = "slot"
# The key facts every context block opens with, in the order shown: who the user is, what they cannot eat
# or must avoid (what an answer must never get wrong, so it comes before the rest when the budget is small),
# where they live and work, who their people are.
KEY_FACT_SLOTS = (Slot.NAME, Slot.HEALTH, Slot.DIET, Slot.HOME, Slot.WORK, Slot.PARTNER, Slot.FAMILY)

# A trait's stages, in order of growth, and the end of one (traits.models.TraitStage uses these words;
# memories' own reads, context and the search's stage boost, need them and may not import traits).
TREND, CANDIDATE, EMERGING, ESTABLISHED, CORE, DISSOLVED = (
    "trend", "candidate", "emerging", "established", "core", "dissolved")
TRAIT_STAGE_ORDER = (TREND, CANDIDATE, EMERGING, ESTABLISHED, CORE)
TRAIT_STAGES_SHOWN = (EMERGING, ESTABLISHED, CORE)  # what an agent is shown (context, the traits API)

# Tasks queued by name (memories.queue.enqueue): services sit below the task modules, so they name a task
# instead of importing it. tests/test_celery_worker.py checks that each name is a registered task.
TASK_EMBED_MEMORIES = "memories.tasks.embed_memories"
TASK_RUN_CONVERSATION_JOB = "memories.tasks.run_conversation_job"
TASK_REFLECT_IF_IMPORTANT = "reflection.tasks.reflect_if_important"
TASK_REFLECT_USER = "reflection.tasks.reflect_user"
TASK_RUN_QUEUED_CYCLE = "reflection.tasks.run_requested_cycle"
TASK_REEVALUATE_TRAITS = "reflection.tasks.reevaluate_traits"
TASK_END_IDLE_SESSIONS = "reflection.tasks.end_idle_sessions"
QUEUED_TASKS = (TASK_EMBED_MEMORIES, TASK_RUN_CONVERSATION_JOB, TASK_REFLECT_IF_IMPORTANT, TASK_REFLECT_USER,
                TASK_RUN_QUEUED_CYCLE, TASK_REEVALUATE_TRAITS, TASK_END_IDLE_SESSIONS)
# The positions of a queued task's arguments that name a person (a user id, or a list of them): Celery's
# log lines show them as a keyed digest (memory_project.observability.TaskArgumentsFilter), as request
# logs do, never as written.
PERSONAL_TASK_ARGUMENTS: dict[str, tuple[int, ...]] = {
    TASK_REFLECT_IF_IMPORTANT: (1,), TASK_REFLECT_USER: (1,), TASK_REEVALUATE_TRAITS: (1,)}
PENDING_JOB_STATUSES = (JobStatus.QUEUED, JobStatus.RUNNING, JobStatus.RETRYING)


def is_latest_version() -> Q:
    """Not replaced by a newer version (any status): the admin's "current version" filter, exports."""
    return Q(expired_at__isnull=True)


def is_current() -> Q:
    return is_latest_version() & Q(status__in=CURRENT_STATUSES)


def is_searchable(now: datetime) -> Q:
    return (is_latest_version() & Q(status=ACTIVE) & (Q(invalid_at__isnull=True) | Q(invalid_at__gt=now))
            & (Q(expires_at__isnull=True) | Q(expires_at__gt=now)))


def is_expired(now: datetime) -> Q:
    return is_latest_version() & Q(status=ACTIVE) & Q(expires_at__lte=now)


def is_embeddable() -> Q:
    return is_latest_version() & ~Q(status=MemoryStatus.REJECTED)


def sql_not_replaced(alias: str = "m") -> str:
    return f"{alias}.expired_at IS NULL"


def sql_searchable(alias: str = "m") -> str:
    """The SQL of is_searchable; takes one parameter: now. LEAST skips NULLs:
    the earlier of invalid_at and expires_at, when either is set, must be later than now."""
    return (f"{sql_not_replaced(alias)} AND {alias}.status = '{ACTIVE}' AND "
            f"coalesce(least({alias}.invalid_at, {alias}.expires_at), 'infinity'::timestamptz) > %s")


def sql_keyword_counted(alias: str = "m") -> str:
    """Which memories the kept per-user keyword statistics count (migration 0017's triggers
    spell the same condition): searchable without its clock-dependent part."""
    return f"{sql_not_replaced(alias)} AND {alias}.status = '{ACTIVE}'"


def sql_vector_searchable(alias: str = "v") -> str:
    """Vectors carry their memory's status (kept in step by memories/writing/)."""
    return f"{alias}.status = '{ACTIVE}'"


def sql_model_is(model: str, alias: str = "") -> str:
    """Vectors of one embedding model, the model's name written as a literal. Each model's partial
    indexes (HNSW, the per-user covering one) are made with this predicate; a statement that passes
    the name as a parameter cannot use them once PostgreSQL keeps a generic plan of it (the exact
    scan then read the heap: 2.4 -> 5.3 ms p95 at 1,000 memories a user, bench/results/2026-11-core.md)."""
    column = f"{alias}.model" if alias else "model"
    return f"{column} = '{model.replace(chr(39), chr(39) * 2)}'"


def sql_status_in(statuses: Iterable[str], alias: str = "m") -> str:
    return f"{alias}.status IN ({', '.join(repr(str(s)) for s in statuses)})"


# What a memory says for the user until they give their name (extraction writes it; the block and the
# people reader read it as the user).
UNKNOWN_SPEAKER = {"en": "User", "zh": "用户"}
