"""The people (and pets, places, organisations) in a user's life, and what holds between them over time.

Seed 004 §2.3 and §4.1: graph nodes and bitemporal graph edges as adjacency tables in PostgreSQL. A node is
one entity of one user (the user themself is one, kind "user"); an alias is every way the user named it
("my mum", "Mum", "妈妈", "Sheila"); an edge says where an entity lives, works or belongs, or how it relates
to the user, with world time (valid_at/invalid_at: when it held) and system time (created_at/expired_at:
when we believed it). A memory names its subject and object entity (memories.MemoryItem.subject_entity).

Rules about changing these rows live in memories/people/; nothing here has behaviour.
"""

from __future__ import annotations

import uuid

from django.db import models
from django.db.models import Q

from memories.models import MemoryItem, Tenant


class PersonKind(models.TextChoices):
    USER = "user"  # the user themself: every memory about the user names this entity
    PERSON = "person"
    PET = "pet"
    PLACE = "place"
    ORGANISATION = "organisation"


class PersonStatus(models.TextChoices):
    ACTIVE = "active"
    MERGED = "merged"  # folded into `merged_into` by a reviewer; kept so the merge can be split again


class Person(models.Model):
    """One entity of one user (seed 004 §4.1 graph_nodes)."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    tenant = models.ForeignKey(Tenant, on_delete=models.PROTECT, related_name="+", db_index=False)
    user_id = models.CharField(max_length=255)
    kind = models.CharField(max_length=16, choices=PersonKind.choices, default=PersonKind.PERSON)
    name = models.CharField(max_length=200, blank=True, default="",
                            help_text="The name the user gave (\"Sheila\"); empty while only a relation is known.")
    relation = models.CharField(max_length=32, blank=True, default="",
                                help_text="The relation to the user, normalised (mother, partner, friend, ...).")
    relation_word = models.CharField(max_length=64, blank=True, default="",
                                     help_text="The user's own word for the relation (\"mum\", \"婆婆\").")
    status = models.CharField(max_length=16, choices=PersonStatus.choices, default=PersonStatus.ACTIVE)
    merged_into = models.ForeignKey("self", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    maybe_same_as = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="+",
        help_text="Kept apart when first named (the same name with another relation): a reviewer merges or not.")
    version = models.PositiveIntegerField(default=1)
    created_at = models.DateTimeField()
    updated_at = models.DateTimeField()
    last_mentioned_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "graph_nodes"
        verbose_name = "person"
        verbose_name_plural = "people"
        indexes = [models.Index(fields=["tenant", "user_id", "status", "relation"], name="person_user_relation")]
        constraints = [
            models.CheckConstraint(condition=Q(kind__in=PersonKind.values), name="person_kind_known"),
            models.CheckConstraint(condition=Q(status__in=PersonStatus.values), name="person_status_known"),
            models.CheckConstraint(condition=~Q(user_id=""), name="person_user_id_not_empty"),
            models.UniqueConstraint(fields=["tenant", "user_id"], condition=Q(kind="user", status="active"),
                                    name="person_one_user_entity"),
        ]

    def __str__(self) -> str:
        return self.name or self.relation_word or self.relation or str(self.id)


class PersonAlias(models.Model):
    """One way the user named an entity; `key` is what a later mention is matched on."""

    person = models.ForeignKey(Person, on_delete=models.CASCADE, related_name="aliases")
    tenant = models.ForeignKey(Tenant, on_delete=models.PROTECT, related_name="+", db_index=False)
    user_id = models.CharField(max_length=255)
    alias = models.CharField(max_length=200)
    key = models.CharField(max_length=200)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "graph_node_aliases"
        indexes = [models.Index(fields=["tenant", "user_id", "key"], name="alias_user_key")]
        constraints = [models.UniqueConstraint(fields=["person", "key"], name="alias_unique_per_person")]

    def __str__(self) -> str:
        return self.alias


class EdgePredicate(models.TextChoices):
    RELATION = "relation"  # the user -> a person: value is the relation code
    LIVES_IN = "lives_in"
    WORKS_AT = "works_at"
    BELONGS_TO = "belongs_to"  # a pet to its owner, a person to a group


class PersonEdge(models.Model):
    """What holds between an entity and a place, an organisation, another entity or a relation code
    (seed 004 §4.1 graph_edges), bitemporal: valid_at/invalid_at world time, created_at/expired_at system
    time. An edge the user said changed gets invalid_at and stays as history; one a reviewer took back
    gets expired_at."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    tenant = models.ForeignKey(Tenant, on_delete=models.PROTECT, related_name="+", db_index=False)
    user_id = models.CharField(max_length=255)
    source = models.ForeignKey(Person, on_delete=models.CASCADE, related_name="edges_out")
    predicate = models.CharField(max_length=16, choices=EdgePredicate.choices)
    target = models.ForeignKey(Person, null=True, blank=True, on_delete=models.CASCADE, related_name="edges_in")
    value = models.CharField(max_length=200, blank=True, default="")
    memory = models.ForeignKey(MemoryItem, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    valid_at = models.DateTimeField(null=True, blank=True)
    invalid_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField()
    expired_at = models.DateTimeField(null=True, blank=True)
    actor = models.CharField(max_length=150)
    reason = models.TextField(blank=True, default="")

    class Meta:
        db_table = "graph_edges"
        indexes = [models.Index(fields=["tenant", "user_id", "source", "predicate"], name="edge_source_predicate",
                                condition=Q(expired_at__isnull=True)),
                   models.Index(fields=["memory"], name="edge_memory", condition=Q(memory__isnull=False))]
        constraints = [
            models.CheckConstraint(condition=Q(predicate__in=EdgePredicate.values), name="edge_predicate_known"),
        ]

    def __str__(self) -> str:
        return f"{self.source_id} {self.predicate} {self.value or self.target_id}"


class PersonEvent(models.TextChoices):
    CREATE = "CREATE"
    ALIAS = "ALIAS"
    RENAME = "RENAME"
    RELATION = "RELATION"
    MERGE = "MERGE"
    SPLIT = "SPLIT"
    EDGE_ADD = "EDGE_ADD"
    EDGE_END = "EDGE_END"
    EDGE_RETRACT = "EDGE_RETRACT"


class PersonHistory(models.Model):
    """Append-only audit of every change to an entity, its aliases and its edges: actor, reason, before
    and after. person_id is not a foreign key: rows outlive a deleted entity (with their content scrubbed
    on erasure)."""

    person_id = models.UUIDField(db_index=True)
    tenant = models.ForeignKey(Tenant, on_delete=models.PROTECT, related_name="+", db_index=False)
    user_id = models.CharField(max_length=255)
    event = models.CharField(max_length=16, choices=PersonEvent.choices)
    old_data = models.JSONField(null=True, blank=True)
    new_data = models.JSONField(null=True, blank=True)
    actor = models.CharField(max_length=150)
    reason = models.TextField(blank=True, default="")
    job_id = models.CharField(max_length=64, blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "graph_history"
        verbose_name = "person history event"
        verbose_name_plural = "person history"
        ordering = ["created_at", "id"]
        indexes = [models.Index(fields=["tenant", "user_id", "-created_at"], name="person_history_user")]
        constraints = [models.CheckConstraint(condition=Q(event__in=PersonEvent.values),
                                              name="person_history_event_known")]

    def __str__(self) -> str:
        return f"{self.event} {self.person_id} by {self.actor}"
