from django.contrib import admin

from memories.admin import TenantScopedAdmin
from traits.models import Trait, TraitEvidence


@admin.register(Trait)
class TraitAdmin(TenantScopedAdmin):
    tenant_field = "memory__tenant"
    list_display = ("memory", "subtype", "stage", "confidence", "context", "reinforcement_count",
                    "contradiction_count", "last_reinforced_at")
    list_filter = ("stage", "subtype", "context")
    list_select_related = ("memory",)
    readonly_fields = ("memory", "subtype", "stage", "confidence", "context", "parent", "reinforcement_count",
                       "contradiction_count", "first_observed_at", "last_reinforced_at", "window_start",
                       "window_end", "derived_from", "pinned")


@admin.register(TraitEvidence)
class TraitEvidenceAdmin(TenantScopedAdmin):
    tenant_field = "memory__tenant"
    list_display = ("trait", "memory", "kind", "quality", "created_at")
    list_filter = ("kind", "quality")
    list_select_related = ("trait__memory", "memory")

    def has_change_permission(self, request, obj=None) -> bool:
        return False
