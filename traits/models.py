"""Trait memories: behaviours, preferences and core values earned from evidence."""

from __future__ import annotations

from django.db import models
from django.db.models import Q

from memories import vocabulary
from memories.models import MemoryItem, Tenant


class TraitSubtype(models.TextChoices):
    BEHAVIOR = "behavior"
    PREFERENCE = "preference"
    CORE = "core"


class TraitStage(models.TextChoices):
    """The words are memories.vocabulary's (memories' own reads need them)."""

    TREND = vocabulary.TREND
    CANDIDATE = vocabulary.CANDIDATE
    EMERGING = vocabulary.EMERGING
    ESTABLISHED = vocabulary.ESTABLISHED
    CORE = vocabulary.CORE
    DISSOLVED = vocabulary.DISSOLVED


class TraitContext(models.TextChoices):
    WORK = "work"
    PERSONAL = "personal"
    SOCIAL = "social"
    LEARNING = "learning"
    GENERAL = "general"
    CONTEXTUAL = "contextual"


class TraitOrigin(models.TextChoices):
    REFLECTION = "reflection"
    TREND_PROMOTION = "trend_promotion"
    CONTRADICTION_SPLIT = "contradiction_split"
    REVIEWER_SPLIT = "reviewer_split"  # a reviewer moved statements that did not belong out of a trait


class Trait(models.Model):
    """Trait columns for a MemoryItem of type trait (1:1, same primary key)."""

    memory = models.OneToOneField(MemoryItem, on_delete=models.CASCADE, primary_key=True, related_name="trait")
    # Copied from the memory (seed 004 §2.5's per-user trait indexes need the user on this table): set once by
    # traits.services.trait_create, moved with the memory by normalize_ids; a trait never changes user.
    tenant = models.ForeignKey(Tenant, on_delete=models.PROTECT, related_name="+", db_index=False)
    user_id = models.CharField(max_length=255)
    subtype = models.CharField(max_length=16, choices=TraitSubtype.choices)
    stage = models.CharField(max_length=16, choices=TraitStage.choices, default=TraitStage.TREND)
    confidence = models.FloatField(default=0.0)
    context = models.CharField(max_length=16, choices=TraitContext.choices, default=TraitContext.GENERAL)
    parent = models.ForeignKey("self", null=True, blank=True, on_delete=models.SET_NULL, related_name="children")
    reinforcement_count = models.PositiveIntegerField(default=0)
    contradiction_count = models.PositiveIntegerField(default=0)
    first_observed_at = models.DateTimeField(null=True, blank=True)
    last_reinforced_at = models.DateTimeField(null=True, blank=True)
    window_start = models.DateTimeField(null=True, blank=True)
    window_end = models.DateTimeField(null=True, blank=True)
    derived_from = models.CharField(max_length=24, choices=TraitOrigin.choices, default=TraitOrigin.REFLECTION)
    pinned = models.BooleanField(default=False)
    # Precomputed by the beat job and on every update (a column, not a materialized
    # view: it stays exact for the trait just changed and costs one UPDATE per refresh).
    decayed_confidence = models.FloatField(default=0.0)
    decayed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "traits"
        indexes = [
            # Seed 004 §2.5, per user: a user's traits by stage and subtype (traits_of_user, the reflection
            # scan), the active ones by confidence, and by context.
            models.Index(fields=["tenant", "user_id", "stage", "subtype"], name="trait_user_stage"),
            models.Index(
                fields=["tenant", "user_id", "stage", "-decayed_confidence"],
                name="trait_user_active_confidence",
                condition=~Q(stage__in=[vocabulary.DISSOLVED, vocabulary.TREND]),
            ),
            models.Index(fields=["tenant", "user_id", "context"], name="trait_user_context"),
            models.Index(
                fields=["stage", "-confidence"],
                name="trait_active_confidence",
                condition=~Q(stage__in=[vocabulary.DISSOLVED, vocabulary.TREND]),
            ),
            models.Index(fields=["window_end"], name="trait_trend_window", condition=Q(stage="trend")),
            models.Index(fields=["parent"], name="trait_parent", condition=Q(parent__isnull=False)),
        ]
        constraints = [
            models.CheckConstraint(condition=Q(subtype__in=TraitSubtype.values), name="trait_subtype_known"),
            models.CheckConstraint(condition=Q(stage__in=TraitStage.values), name="trait_stage_known"),
            models.CheckConstraint(condition=Q(context__in=TraitContext.values), name="trait_context_known"),
            models.CheckConstraint(
                condition=Q(confidence__gte=0) & Q(confidence__lte=1), name="trait_confidence_range"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.subtype}/{self.stage}: {self.memory.text[:60]}"


class EvidenceKind(models.TextChoices):
    SUPPORTING = "supporting"
    CONTRADICTING = "contradicting"


class EvidenceQuality(models.TextChoices):
    A = "A"
    B = "B"
    C = "C"
    D = "D"


class TraitEvidence(models.Model):
    trait = models.ForeignKey(Trait, on_delete=models.CASCADE, related_name="evidence")
    memory = models.ForeignKey(MemoryItem, on_delete=models.CASCADE, related_name="trait_evidence")
    kind = models.CharField(max_length=16, choices=EvidenceKind.choices)
    quality = models.CharField(max_length=1, choices=EvidenceQuality.choices)
    context = models.CharField(max_length=16, choices=TraitContext.choices, default=TraitContext.GENERAL)
    created_at = models.DateTimeField(auto_now_add=True)
    # Supporting evidence whose fact stopped holding (invalidated, superseded, forgotten): kept for the
    # audit, no longer counted as support.
    withdrawn_at = models.DateTimeField(null=True, blank=True)
    # The reflection cycle that recorded this evidence, or withdrew it (reflection builds on traits, so an id).
    cycle_id = models.PositiveBigIntegerField(null=True, blank=True)
    # Why it joined the trait, in words a reviewer reads ("the user's words read as a habit, 0.52 close to
    # the trait's meaning"), and that closeness (None where meaning was not what joined it).
    reason = models.CharField(max_length=300, blank=True, default="")
    closeness = models.FloatField(null=True, blank=True)

    class Meta:
        db_table = "trait_evidence"
        verbose_name = "trait evidence"
        verbose_name_plural = "trait evidence"
        indexes = [models.Index(fields=["trait", "kind"], name="evidence_trait_kind")]
        constraints = [
            models.CheckConstraint(condition=Q(kind__in=EvidenceKind.values), name="evidence_kind_known"),
            models.CheckConstraint(condition=Q(quality__in=EvidenceQuality.values), name="evidence_quality_known"),
            models.UniqueConstraint(fields=["trait", "memory"], name="evidence_unique_memory"),
        ]

    def __str__(self) -> str:
        return f"{self.kind} {self.quality} for {self.trait_id}"
