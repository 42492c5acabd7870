"""Read-only audit views: history, conversation jobs, erasure receipts."""

from __future__ import annotations

from django import forms
from django.contrib import admin
from django.db import models
from django.urls import reverse
from django.utils.html import format_html

from memories.admin.base import (
    TenantFilter,
    TenantScopedAdmin,
)
from memories.models import (
    ConversationJob,
    ErasureReceipt,
    MemoryHistory,
)

# --------------------------------------------------------------------------- read-only audit views


class ReadOnlyAdmin(TenantScopedAdmin):
    def has_change_permission(self, request, obj=None) -> bool:
        return False


@admin.register(MemoryHistory)
class MemoryHistoryAdmin(ReadOnlyAdmin):
    list_display = ("created_at", "event", "actor", "user_id", "memory_link", "short_new_text", "reason")
    list_filter = (TenantFilter, "event")
    search_fields = ("=memory_id", "=user_id", "actor")
    list_select_related = ("tenant",)
    ordering = ("-created_at",)

    @admin.display(description="memory")
    def memory_link(self, obj: MemoryHistory):
        return format_html('<a href="{}">{}</a>', reverse("admin:memories_memoryitem_change", args=[obj.memory_id]),
                           str(obj.memory_id)[:8])

    @admin.display(description="new text")
    def short_new_text(self, obj: MemoryHistory) -> str:
        return (obj.new_text or "")[:80]


@admin.register(ConversationJob)
class ConversationJobAdmin(ReadOnlyAdmin):
    list_display = ("created_at", "user_id", "session_id", "status", "attempts", "extractor", "counts", "error")
    list_filter = (TenantFilter, "status", "extractor")
    search_fields = ("=user_id", "=session_id")
    ordering = ("-created_at",)
    formfield_overrides = {models.JSONField: {"widget": forms.Textarea(attrs={"rows": 4})}}


@admin.register(ErasureReceipt)
class ErasureReceiptAdmin(ReadOnlyAdmin):
    """The audit log of erasures: who, when, rows per store; never content."""

    list_display = ("created_at", "tenant", "user_id", "actor", "reason", "counts")
    list_filter = (TenantFilter,)
    search_fields = ("=user_id", "=actor")
    ordering = ("-created_at",)
