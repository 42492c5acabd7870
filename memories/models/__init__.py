"""The memory record and its satellites (vectors, history, sources, review queue).

Rules about changing these rows live in memories/writing/; nothing here has
behaviour beyond field definitions and constraints.
"""

from __future__ import annotations

import uuid

from django.contrib.postgres.fields import ArrayField
from django.contrib.postgres.indexes import GinIndex
from django.contrib.postgres.search import SearchVectorField
from django.db import models
from django.db.models import Q
from pgvector.django import HalfVectorField


class Tenant(models.Model):
    """A customer: every memory, key and query belongs to exactly one."""

    name = models.SlugField(max_length=100, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)
    # A memory an operator approved is changed by an agent key only through review.
    protect_approved = models.BooleanField(
        default=True, help_text="Changes by agent keys to operator-approved memories go to the review queue.")
    # Storage quotas; empty means the settings' defaults (TENANT_MAX_MEMORIES, TENANT_MAX_BYTES), 0 no limit.
    max_memories = models.PositiveBigIntegerField(null=True, blank=True,
                                                  help_text="Current memories at most (empty: the default).")
    max_bytes = models.PositiveBigIntegerField(null=True, blank=True,
                                               help_text="Bytes of text and data at most (empty: the default).")

    class Meta:
        db_table = "tenants"

    def __str__(self) -> str:
        return self.name


class KeyRole(models.TextChoices):
    """What a key may do, chosen when it is made (see memories/permissions.py)."""

    AGENT = "agent"  # save, search, context, conversations, its own jobs
    REVIEWER = "reviewer"  # also the review queue and every job of the tenant


class ApiKey(models.Model):
    """A client credential. Only the SHA-256 of the key is stored."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="api_keys")
    name = models.CharField(max_length=100, blank=True)
    role = models.CharField(max_length=16, choices=KeyRole.choices, default=KeyRole.AGENT)
    # A key of any role that may erase a whole user (reviewer keys always may; permissions.key_may_erase_user).
    can_erase = models.BooleanField(default=False)
    prefix = models.CharField(max_length=16, db_index=True)
    key_hash = models.CharField(max_length=64, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    # The key this one replaced (keys.api_key_rotate): a rotated key is the same client, so it may not
    # approve what its predecessors submitted (permissions.key_may_resolve_candidate).
    rotated_from = models.ForeignKey("self", null=True, blank=True, on_delete=models.SET_NULL,
                                     related_name="rotated_to")

    class Meta:
        db_table = "api_keys"
        verbose_name = "API key"
        constraints = [models.CheckConstraint(condition=Q(role__in=KeyRole.values), name="api_key_role_known")]

    def __str__(self) -> str:
        return f"{self.tenant.name}:{self.prefix}"


class MemoryType(models.TextChoices):
    FACT = "fact"
    EPISODIC = "episodic"
    TRAIT = "trait"
    PROFILE = "profile"
    TASK = "task"
    DOCUMENT = "document"


class MemoryStatus(models.TextChoices):
    PENDING = "pending"
    ACTIVE = "active"
    ARCHIVED = "archived"
    REJECTED = "rejected"


# Current = not replaced and one of these (see memories/vocabulary.py).
CURRENT_STATUSES = (MemoryStatus.ACTIVE, MemoryStatus.PENDING)


class EmbeddingState(models.TextChoices):
    PENDING = "pending"
    DONE = "done"
    FAILED = "failed"


class MemoryItem(models.Model):
    """One memory: the single source of truth, versioned and bitemporal.

    valid_at/invalid_at are world time (when the fact held); created_at/
    expired_at are system time (when this row was the current version).
    """

    # Not a column: the memory's sources when a search loaded them with it (search.memories_by_id).
    loaded_sources: list[dict] | None = None

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    # No single-column index: every index below leads with tenant, and a bare
    # tenant_id index lured the planner into 40 ms loops on fresh statistics.
    tenant = models.ForeignKey(Tenant, on_delete=models.PROTECT, related_name="memories", db_index=False)
    user_id = models.CharField(max_length=255)
    agent_id = models.CharField(max_length=255, blank=True, default="")
    session_id = models.CharField(max_length=255, blank=True, default="")
    group_id = models.CharField(max_length=255, blank=True, default="")
    memory_type = models.CharField(max_length=16, choices=MemoryType.choices, default=MemoryType.FACT)
    text = models.TextField()
    data = models.JSONField(default=dict, blank=True)
    importance = models.FloatField(default=0.5)
    confidence = models.FloatField(default=1.0)
    tags = ArrayField(models.CharField(max_length=100), default=list, blank=True)
    content_hash = models.CharField(max_length=64)
    status = models.CharField(max_length=16, choices=MemoryStatus.choices, default=MemoryStatus.ACTIVE)
    valid_at = models.DateTimeField(null=True, blank=True)
    invalid_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField()
    expired_at = models.DateTimeField(null=True, blank=True)
    updated_at = models.DateTimeField()
    # When the row was archived (soft-deleted): status changes in place, so
    # as_of needs it to tell "archived since" from "archived at the time".
    archived_at = models.DateTimeField(null=True, blank=True)
    # When the memory stops being recalled (a TTL); search and context drop it at
    # that moment, and the beat job archives it with a history row soon after.
    expires_at = models.DateTimeField(null=True, blank=True)
    version = models.PositiveIntegerField(default=1)
    superseded_by = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="supersedes"
    )
    access_count = models.PositiveIntegerField(default=0)
    last_accessed_at = models.DateTimeField(null=True, blank=True)
    embedding_state = models.CharField(
        max_length=16, choices=EmbeddingState.choices, default=EmbeddingState.PENDING
    )
    embedding_error = models.TextField(blank=True, default="")
    # Whom it is about (seed 004 §2.3): the user's own entity for a memory about the user, the person's for
    # one about someone in their life ("Sheila is diabetic"), and the object where the fact has one.
    subject_entity = models.ForeignKey("memories.Person", null=True, blank=True, on_delete=models.SET_NULL,
                                       related_name="+", db_index=False)
    object_entity = models.ForeignKey("memories.Person", null=True, blank=True, on_delete=models.SET_NULL,
                                      related_name="+", db_index=False)
    # What the user felt saying it (seed 004 §2.3 metadata.emotion, memories/emotion.py): {valence -1..1,
    # arousal 0..1, label}; its own column, not `data`, so that a client's data stays theirs.
    emotion = models.JSONField(null=True, blank=True)
    # Full-text document: jieba-segmented, lower-cased text fed to to_tsvector('simple').
    search_vector = SearchVectorField(null=True, editable=False)

    class Meta:
        db_table = "memory_items"
        indexes = [
            models.Index(fields=["tenant", "user_id", "-created_at"], name="memory_user_created"),
            models.Index(fields=["tenant", "user_id", "memory_type"], name="memory_user_type"),
            models.Index(fields=["tenant", "status", "-created_at"], name="memory_status_created"),
            models.Index(fields=["tenant", "user_id", "valid_at", "invalid_at"], name="memory_user_valid"),
            models.Index(
                fields=["embedding_state"],
                name="memory_needs_embedding",
                condition=~Q(embedding_state="done"),
            ),
            # Group-scoped reads (a group's profile, a group turn) without a user.
            models.Index(fields=["tenant", "group_id", "-created_at"], name="memory_group_created",
                          condition=~Q(group_id="")),
            # Search's neighbour expansion: the memory after a hit in its session, one index probe.
            models.Index(fields=["tenant", "user_id", "session_id", "created_at", "id"], name="memory_session_order",
                         condition=~Q(session_id="")),
            # The expiry beat job: only rows that carry a TTL.
            models.Index(fields=["expires_at"], name="memory_expiring",
                         condition=Q(expires_at__isnull=False, expired_at__isnull=True, status="active")),
            # The keyword side: one GIN over the tenant, the user and the text (btree_gin), so that a user's
            # search reads only that user's matching rows (bench/results/2026-11-core.md: 9.5 -> 4.3 ms for BM25 on a
            # 1,000-memory user of a 100,000-row table); a tenant-wide search uses its first column.
            GinIndex(fields=["tenant", "user_id", "search_vector"], name="memory_user_search_vector"),
            # The user's profile name (search.profile_name, on every search of a user not asked about for a
            # minute): the few rows that hold one, instead of filtering all the user's rows by a JSON key.
            models.Index(fields=["tenant", "user_id", "-created_at"], name="memory_profile_name",
                         condition=Q(data__key="name")),
            GinIndex(fields=["tags"], name="memory_tags"),
            # A person's current facts (their page, a question naming them, search's person filter).
            models.Index(fields=["tenant", "user_id", "subject_entity"], name="memory_user_subject",
                         condition=Q(subject_entity__isnull=False)),
            models.Index(fields=["object_entity"], name="memory_object", condition=Q(object_entity__isnull=False)),
        ]
        constraints = [
            models.CheckConstraint(
                condition=Q(importance__gte=0) & Q(importance__lte=1), name="memory_importance_range"
            ),
            models.CheckConstraint(
                condition=Q(confidence__gte=0) & Q(confidence__lte=1), name="memory_confidence_range"
            ),
            models.CheckConstraint(condition=Q(memory_type__in=MemoryType.values), name="memory_type_known"),
            models.CheckConstraint(condition=Q(status__in=MemoryStatus.values), name="memory_status_known"),
            models.CheckConstraint(
                condition=Q(embedding_state__in=EmbeddingState.values), name="memory_embedding_state_known"
            ),
            models.CheckConstraint(condition=~Q(user_id=""), name="memory_user_id_not_empty"),
            models.CheckConstraint(condition=Q(version__gte=1), name="memory_version_positive"),
            models.CheckConstraint(condition=Q(archived_at__isnull=True) | Q(status="archived"),
                                   name="memory_archived_at_only_when_archived"),
            # One current row per text per user: the dedupe hash is enforced, not just checked.
            models.UniqueConstraint(
                fields=["tenant", "user_id", "content_hash"],
                condition=Q(expired_at__isnull=True, status__in=["active", "pending"]),
                name="memory_unique_current_hash",
            ),
        ]

    def __str__(self) -> str:
        return self.text[:80]

    @property
    def is_current(self) -> bool:
        return self.expired_at is None


class MemoryVector(models.Model):
    """One embedded chunk of a memory, under one model.

    tenant/user_id/memory_type/status are copied from the item (kept in step
    by memories/writing/) so per-user vector search needs no join.
    """

    item = models.ForeignKey(MemoryItem, on_delete=models.CASCADE, related_name="vectors", db_index=False)
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+", db_index=False)
    user_id = models.CharField(max_length=255)
    memory_type = models.CharField(max_length=16)
    status = models.CharField(max_length=16)
    chunk_index = models.PositiveSmallIntegerField(default=0)
    chunk_text = models.TextField()
    model = models.CharField(max_length=200)
    dimensions = models.PositiveSmallIntegerField()
    # Unsized halfvec: two models of different sizes can coexist during a
    # switch. The HNSW index is per model, on a sized cast (see vector_index.py).
    embedding = HalfVectorField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "memory_vectors"
        indexes = [
            models.Index(fields=["tenant", "user_id", "model"], name="vector_user_model"),
            models.Index(fields=["item", "model"], name="vector_item_model"),
        ]
        constraints = [
            models.UniqueConstraint(fields=["item", "model", "chunk_index"], name="vector_unique_chunk"),
        ]

    def __str__(self) -> str:
        return f"{self.item_id}#{self.chunk_index} ({self.model})"


class HistoryEvent(models.TextChoices):
    ADD = "ADD"
    UPDATE = "UPDATE"
    DELETE = "DELETE"
    SUPERSEDE = "SUPERSEDE"
    MERGE = "MERGE"
    APPROVE = "APPROVE"
    REJECT = "REJECT"
    RESTORE = "RESTORE"
    INVALIDATE = "INVALIDATE"
    ERASE = "ERASE"
    STAGE_CHANGE = "STAGE_CHANGE"


class MemoryHistory(models.Model):
    """Append-only audit of every change. memory_id is not a foreign key:
    rows outlive an erased memory (with their content scrubbed)."""

    memory_id = models.UUIDField(db_index=True)
    tenant = models.ForeignKey(Tenant, on_delete=models.PROTECT, related_name="+", db_index=False)
    user_id = models.CharField(max_length=255)
    event = models.CharField(max_length=16, choices=HistoryEvent.choices)
    # The memory's type when the change was made (seed 004 §2.6.2), written by the writer (record_history,
    # the erase rows): the audit reads by type without the memory, which erasure removes.
    memory_type = models.CharField(max_length=16, blank=True, default="")
    old_text = models.TextField(null=True, blank=True)
    new_text = models.TextField(null=True, blank=True)
    old_data = models.JSONField(null=True, blank=True)
    new_data = models.JSONField(null=True, blank=True)
    actor = models.CharField(max_length=150)
    reason = models.TextField(blank=True, default="")
    job_id = models.CharField(max_length=64, blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        db_table = "memory_history"
        verbose_name = "memory history event"
        verbose_name_plural = "memory history"
        ordering = ["created_at", "id"]
        indexes = [models.Index(fields=["tenant", "user_id", "-created_at"], name="history_user_created")]
        constraints = [
            models.CheckConstraint(condition=Q(event__in=HistoryEvent.values), name="history_event_known"),
        ]

    def __str__(self) -> str:
        return f"{self.event} {self.memory_id} by {self.actor}"


class MemorySource(models.Model):
    """Where a memory came from: a session and the message indices in it."""

    item = models.ForeignKey(MemoryItem, on_delete=models.CASCADE, related_name="sources")
    session_id = models.CharField(max_length=255, blank=True, default="")
    message_indices = ArrayField(models.PositiveIntegerField(), default=list, blank=True)
    job_id = models.CharField(max_length=64, blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "memory_sources"
        indexes = [models.Index(fields=["session_id"], name="source_session")]

    def __str__(self) -> str:
        return f"{self.session_id}{self.message_indices}"


class JobStatus(models.TextChoices):
    QUEUED = "queued"
    RUNNING = "running"
    RETRYING = "retrying"
    DONE = "done"
    FAILED = "failed"


class ConversationJob(models.Model):
    """One conversation sent for extraction. The messages are kept so a failed
    job can be re-run; the operations it took are its result."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    tenant = models.ForeignKey(Tenant, on_delete=models.PROTECT, related_name="jobs")
    user_id = models.CharField(max_length=255)
    session_id = models.CharField(max_length=255)
    agent_id = models.CharField(max_length=255, blank=True, default="")
    group_id = models.CharField(max_length=255, blank=True, default="")
    participants = models.JSONField(default=dict, blank=True)
    messages = models.JSONField()
    status = models.CharField(max_length=16, choices=JobStatus.choices, default=JobStatus.QUEUED)
    # The key that submitted the job (kept when the key is revoked).
    api_key = models.ForeignKey(ApiKey, null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    attempts = models.PositiveIntegerField(default=0)
    error = models.TextField(blank=True, default="")
    extractor = models.CharField(max_length=32, blank=True, default="")
    operations = models.JSONField(default=list, blank=True)
    counts = models.JSONField(default=dict, blank=True)
    warnings = models.JSONField(default=list, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    # When the raw turns were emptied (CONVERSATION_RAW_RETENTION_DAYS after the job finished): the
    # outcome, counts and the memories' sources stay.
    turns_dropped_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "conversation_jobs"
        indexes = [
            models.Index(fields=["tenant", "user_id", "-created_at"], name="job_user_created"),
            models.Index(fields=["tenant"], name="job_tenant_pending",
                         condition=Q(status__in=["queued", "running", "retrying"])),
        ]
        constraints = [models.CheckConstraint(condition=Q(status__in=JobStatus.values), name="job_status_known")]

    def __str__(self) -> str:
        return f"job {self.id} ({self.status})"


class CandidateStatus(models.TextChoices):
    PENDING = "pending"
    APPROVED = "approved"
    REJECTED = "rejected"


class CandidateOperation(models.TextChoices):
    ADD = "ADD"
    UPDATE = "UPDATE"
    INVALIDATE = "INVALIDATE"  # contradiction: the target stops holding, the proposal is added
    ARCHIVE = "ARCHIVE"  # an agent key asked to delete an operator-approved memory
    ERASE = "ERASE"  # a key that may not erase a whole user asked to (approval erases the user)


class Candidate(models.Model):
    """An extracted memory the governance gate held back for a person to decide."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    tenant = models.ForeignKey(Tenant, on_delete=models.PROTECT, related_name="candidates")
    user_id = models.CharField(max_length=255)
    job = models.ForeignKey(ConversationJob, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    operation = models.CharField(max_length=16, choices=CandidateOperation.choices)
    text = models.TextField()
    memory_type = models.CharField(max_length=16, choices=MemoryType.choices, default=MemoryType.FACT)
    importance = models.FloatField(default=0.5)
    confidence = models.FloatField(default=0.5)
    tags = ArrayField(models.CharField(max_length=100), default=list, blank=True)
    data = models.JSONField(default=dict, blank=True)
    valid_at = models.DateTimeField(null=True, blank=True)
    target = models.ForeignKey(MemoryItem, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    reasons = ArrayField(models.CharField(max_length=32), default=list)
    reason_detail = models.TextField(blank=True, default="")
    session_id = models.CharField(max_length=255, blank=True, default="")
    group_id = models.CharField(max_length=255, blank=True, default="")
    agent_id = models.CharField(max_length=255, blank=True, default="")
    source_messages = models.JSONField(default=list, blank=True)
    # A change an agent key asked for on an operator-approved memory: the fields it sets.
    changes = models.JSONField(default=dict, blank=True)
    # The key whose request made this candidate (directly or through its job): it may not approve it.
    api_key = models.ForeignKey(ApiKey, null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    status = models.CharField(max_length=16, choices=CandidateStatus.choices, default=CandidateStatus.PENDING)
    resolved_by = models.CharField(max_length=150, blank=True, default="")
    resolved_at = models.DateTimeField(null=True, blank=True)
    result_memory = models.ForeignKey(MemoryItem, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "review_candidates"
        indexes = [
            models.Index(fields=["tenant", "status", "created_at"], name="candidate_queue"),
            models.Index(fields=["tenant", "user_id"], name="candidate_user"),
        ]
        constraints = [
            models.CheckConstraint(condition=Q(status__in=CandidateStatus.values), name="candidate_status_known"),
            models.CheckConstraint(condition=Q(operation__in=CandidateOperation.values),
                                   name="candidate_operation_known"),
            models.CheckConstraint(condition=Q(confidence__gte=0) & Q(confidence__lte=1),
                                   name="candidate_confidence_range"),
        ]

    def __str__(self) -> str:
        return f"{self.operation} {self.text[:60]} ({self.status})"


class OperatorProfile(models.Model):
    """Scopes a staff user in the admin: a tenant, or every tenant when
    `all_tenants` is set by a superuser. Staff without a profile see nothing
    (see memories/permissions.py)."""

    user = models.OneToOneField("auth.User", on_delete=models.CASCADE, related_name="operator")
    # PROTECT: deleting a tenant must not silently unscope its operators.
    tenant = models.ForeignKey(Tenant, null=True, blank=True, on_delete=models.PROTECT, related_name="operators")
    all_tenants = models.BooleanField(default=False)

    class Meta:
        db_table = "operator_profiles"
        constraints = [models.CheckConstraint(condition=Q(tenant__isnull=True) | Q(all_tenants=False),
                                              name="operator_one_scope")]

    def __str__(self) -> str:
        return f"{self.user} @ {self.tenant or 'all tenants'}"


class ErasureReceipt(models.Model):
    """Proof that a user was erased: who, when, how many rows of each kind.
    Holds no content; also what a job queued before the erasure checks."""

    tenant = models.ForeignKey(Tenant, on_delete=models.PROTECT, related_name="+")
    user_id = models.CharField(max_length=255)
    # Set when only one agent's part of the user was erased.
    agent_id = models.CharField(max_length=255, blank=True, default="")
    # Set when only what one API key saved was erased (the rest proposed for review).
    api_key_id = models.BigIntegerField(null=True, blank=True)
    actor = models.CharField(max_length=150)
    reason = models.CharField(max_length=200, blank=True, default="")
    counts = models.JSONField(default=dict)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "erasure_receipts"
        indexes = [models.Index(fields=["tenant", "user_id", "-created_at"], name="erasure_user_created")]

    def __str__(self) -> str:
        return f"erasure of {self.user_id} by {self.actor}"


class RateCounter(models.Model):
    """Requests counted per bucket (a key, a tenant, a login) and fixed time
    window, when Redis is not configured: shared by every process, kept across
    restarts. Old windows are deleted as new ones are written."""

    bucket = models.CharField(max_length=200)
    window = models.BigIntegerField()  # epoch seconds // window length
    count = models.PositiveIntegerField(default=0)

    class Meta:
        db_table = "rate_counters"
        constraints = [models.UniqueConstraint(fields=["bucket", "window"], name="rate_counter_unique")]

    def __str__(self) -> str:
        return f"{self.bucket}@{self.window}: {self.count}"


class WorkingMemoryEntry(models.Model):
    """Seed 003's working-memory tier on the database, for a service without Redis (the
    embedded default): one row per recently extracted memory of a user, newest first, the
    same size and TTL as the Redis list. It holds the memory's id, never its words: the text
    is read from the memory, and the row goes with it (erasure, deletion)."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+", db_index=False)
    user_id = models.CharField(max_length=255)
    item = models.ForeignKey(MemoryItem, on_delete=models.CASCADE, related_name="+", db_index=False)
    pushed_at = models.DateTimeField()
    expires_at = models.DateTimeField()

    class Meta:
        db_table = "memory_working_entries"
        indexes = [models.Index(fields=["tenant", "user_id", "-pushed_at"], name="working_user_newest"),
                   models.Index(fields=["expires_at"], name="working_expiry"),
                   models.Index(fields=["item"], name="working_item")]

    def __str__(self) -> str:
        return f"{self.user_id}: {self.item_id}"


class ActiveEmbedding(models.Model):
    """Which embedding model search and new writes use, once an operator has
    switched with `reembed --activate` (a single row). Without a row the
    settings decide."""

    provider = models.CharField(max_length=16)
    model = models.CharField(max_length=200)
    dimensions = models.PositiveSmallIntegerField()
    base_url = models.CharField(max_length=500, blank=True, default="")
    activated_at = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = "active_embedding"

    def __str__(self) -> str:
        return f"{self.provider}:{self.model} ({self.dimensions})"


class ScheduledRun(models.Model):
    """When each job of the in-process schedule (`make run`, memories/schedule.py) last ran, so a restart
    does not start every interval over: a daily job needed 24 h of uptime to run at all."""

    name = models.CharField(max_length=100, unique=True)
    ran_at = models.DateTimeField()

    class Meta:
        db_table = "scheduled_runs"

    def __str__(self) -> str:
        return f"{self.name} at {self.ran_at}"


# The people in a user's life (issue 53): their own module, the same app and migrations.
from memories.models.people import (  # noqa: E402, F401
    EdgePredicate,
    Person,
    PersonAlias,
    PersonEdge,
    PersonEvent,
    PersonHistory,
    PersonKind,
    PersonStatus,
)

