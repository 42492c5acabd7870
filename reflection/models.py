"""Reflection cycles: one pass over a user's new memories that grows traits."""

from __future__ import annotations

from django.db import models
from django.db.models import Q

from memories.models import Tenant


class CycleTrigger(models.TextChoices):
    IMPORTANCE = "importance_accumulated"
    SCHEDULED = "scheduled"
    SESSION_END = "session_end"  # POST /sessions/{s}/end, or the session went idle (SESSION_IDLE_MINUTES)
    REQUESTED = "requested"  # POST /users/{u}/reflect
    CONTRADICTION = "contradiction"  # a fact that supports a trait stopped holding: that trait, at once


class CycleStatus(models.TextChoices):
    QUEUED = "queued"  # asked for through the API; a worker runs it
    RUNNING = "running"
    COMPLETED = "completed"
    FAILED = "failed"


class ReflectionCycle(models.Model):
    tenant = models.ForeignKey(Tenant, on_delete=models.PROTECT, related_name="+")
    user_id = models.CharField(max_length=255)
    # The session a session_end cycle reflects on ("" for every other trigger).
    session_id = models.CharField(max_length=255, blank=True, default="")
    trigger = models.CharField(max_length=32, choices=CycleTrigger.choices)
    trigger_value = models.FloatField(null=True, blank=True)
    watermark = models.DateTimeField(null=True, blank=True)
    memories_scanned = models.PositiveIntegerField(default=0)
    traits_created = models.PositiveIntegerField(default=0)
    traits_updated = models.PositiveIntegerField(default=0)
    traits_dissolved = models.PositiveIntegerField(default=0)
    started_at = models.DateTimeField(auto_now_add=True)
    completed_at = models.DateTimeField(null=True, blank=True)
    status = models.CharField(max_length=16, choices=CycleStatus.choices, default=CycleStatus.RUNNING)
    error = models.TextField(blank=True, default="")

    class Meta:
        db_table = "reflection_cycles"
        indexes = [models.Index(fields=["tenant", "user_id", "-started_at"], name="cycle_user_started")]
        constraints = [
            models.CheckConstraint(condition=Q(status__in=CycleStatus.values), name="cycle_status_known"),
            # Two cycles never run for one user at once: enforced by the database.
            models.UniqueConstraint(
                fields=["tenant", "user_id"], condition=Q(status="running"), name="cycle_one_running_per_user"
            ),
            # A request while one waits gets the waiting one (see engine.reflection_request).
            models.UniqueConstraint(
                fields=["tenant", "user_id"], condition=Q(status="queued", session_id=""),
                name="cycle_one_queued_per_user"
            ),
            # At most one session_end cycle per session, whether the client ended it or it went idle.
            models.UniqueConstraint(
                fields=["tenant", "user_id", "session_id"], condition=Q(trigger="session_end") & ~Q(session_id=""),
                name="cycle_one_per_ended_session"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.user_id} {self.trigger} {self.status}"
