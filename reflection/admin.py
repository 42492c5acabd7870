from django.contrib import admin

from memories.admin import TenantFilter, TenantScopedAdmin
from reflection.models import ReflectionCycle


@admin.register(ReflectionCycle)
class ReflectionCycleAdmin(TenantScopedAdmin):
    list_display = ("started_at", "user_id", "tenant", "trigger", "session_id", "status", "memories_scanned",
                    "traits_created", "traits_updated", "traits_dissolved", "error")
    list_filter = (TenantFilter, "status", "trigger")
    list_select_related = ("tenant",)

    def has_change_permission(self, request, obj=None) -> bool:
        return False
