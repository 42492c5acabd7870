"""Read-only audit views: history, conversation jobs, erasure receipts."""

from __future__ import annotations

from django import forms
from django.contrib import admin
from django.db import models
from django.urls import reverse
from django.utils.html import format_html, format_html_join

from memories.admin.base import (
    TenantFilter,
    TenantScopedAdmin,
)
from memories.models import (
    ConversationJob,
    ErasureReceipt,
    MemoryHistory,
)
from memories.selectors import job_turn_outcomes

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
    readonly_fields = ("conversation", "status", "user_id", "session_id", "agent_id", "group_id", "participants",
                       "attempts", "extractor", "counts", "warnings", "error", "api_key", "created_at",
                       "started_at", "finished_at", "turns_dropped_at", "operations")
    fieldsets = (
        (None, {"fields": ("status", "user_id", "session_id", "counts", "error")}),
        ("Conversation", {"fields": ("conversation",)}),
        ("Details", {"classes": ("collapse",),
                     "fields": ("agent_id", "group_id", "participants", "attempts", "extractor", "warnings",
                                "api_key", "created_at", "started_at", "finished_at", "turns_dropped_at",
                                "operations")}),
    )

    @admin.display(description="turns and what each produced")
    def conversation(self, obj: ConversationJob):
        """The job as the conversation it was: each turn, and the memories and review candidates citing it."""
        if obj.turns_dropped_at:
            return format_html("The raw turns were emptied on {} (CONVERSATION_RAW_RETENTION_DAYS).",
                               obj.turns_dropped_at)
        rows = []
        for turn in job_turn_outcomes(obj):
            produced = format_html_join("", '<li><b>{}</b>: <a href="{}">{}</a></li>', (
                (operation, _admin_link(kind), text) for operation, text, kind in turn.produced))
            rows.append((turn.turn, turn.speaker, turn.content,
                         format_html('<ul class="turn-produced">{}</ul>', produced) if turn.produced else "-"))
        body = format_html_join("", '<tr><td>{}</td><td><b>{}</b></td><td class="turn-text">{}</td><td>{}</td></tr>',
                                rows)
        return format_html('<table class="job-conversation"><thead><tr><th>#</th><th>speaker</th><th>said</th>'
                           "<th>produced</th></tr></thead><tbody>{}</tbody></table>", body)


def _admin_link(kind: str) -> str:
    model, _, object_id = kind.partition(":")
    return reverse(f"admin:memories_{'memoryitem' if model == 'memory' else 'candidate'}_change", args=[object_id])


@admin.register(ErasureReceipt)
class ErasureReceiptAdmin(ReadOnlyAdmin):
    """The audit log of erasures: who, when, rows per store; never content."""

    list_display = ("created_at", "tenant", "user_id", "actor", "reason", "counts")
    list_filter = (TenantFilter,)
    search_fields = ("=user_id", "=actor")
    ordering = ("-created_at",)
