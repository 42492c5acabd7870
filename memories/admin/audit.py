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
from memories.selectors import Produced, job_reading

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
    list_display = ("created_at", "user_id", "session_id", "status", "attempts", "extractor", "counts_shown",
                    "error")
    list_filter = (TenantFilter, "status", "extractor")
    search_fields = ("=user_id", "=session_id")
    ordering = ("-created_at",)
    formfield_overrides = {models.JSONField: {"widget": forms.Textarea(attrs={"rows": 4})}}
    readonly_fields = ("conversation", "status", "user_id", "session_id", "agent_id", "group_id", "participants",
                       "attempts", "extractor", "counts_table", "warnings", "error", "api_key", "created_at",
                       "started_at", "finished_at", "turns_dropped_at", "operations_table")
    # What a reviewer reads first: the conversation, each turn once with what it produced beside it.
    fieldsets = (
        (None, {"fields": ("status", "user_id", "session_id", "counts_table", "error")}),
        ("Conversation", {"fields": ("conversation",)}),
        ("Details", {"classes": ("collapse",),
                     "fields": ("agent_id", "group_id", "participants", "attempts", "extractor", "warnings",
                                "api_key", "created_at", "started_at", "finished_at", "turns_dropped_at",
                                "operations_table")}),
    )

    @admin.display(description="counts")
    def counts_shown(self, obj: ConversationJob) -> str:
        return ", ".join(f"{name.replace('_', ' ')} {count}" for name, count in (obj.counts or {}).items()
                         if count) or "-"

    @admin.display(description="counts")
    def counts_table(self, obj: ConversationJob):
        rows = [(name.replace("_", " "), count) for name, count in (obj.counts or {}).items() if count]
        if not rows:
            return "-"
        return format_html('<table class="job-counts"><tbody>{}</tbody></table>',
                           format_html_join("", "<tr><th>{}</th><td>{}</td></tr>", rows))

    @admin.display(description="turns and what each produced")
    def conversation(self, obj: ConversationJob):
        """The job as the conversation it was: each turn once, the operations it produced beside it (linked
        to their memory or candidate); the episodes that keep the turns, once; operations naming no turn."""
        if obj.turns_dropped_at:
            return format_html("The raw turns were emptied on {} (CONVERSATION_RAW_RETENTION_DAYS).",
                               obj.turns_dropped_at)
        reading = job_reading(obj)
        body = format_html_join("", '<tr><td>{}</td><td><b>{}</b></td><td class="turn-text">{}</td><td>{}</td></tr>',
                                ((turn.turn, turn.speaker, turn.content, _produced(turn.produced))
                                 for turn in reading.turns))
        parts = [format_html('<table class="job-conversation"><thead><tr><th>#</th><th>speaker</th><th>said</th>'
                             "<th>what it produced</th></tr></thead><tbody>{}</tbody></table>", body)]
        if reading.episodes:
            parts.append(format_html('<table class="job-episodes"><tr><th>kept whole as</th><td>{}</td></tr></table>',
                                     _produced(reading.episodes)))
        if reading.unplaced:
            parts.append(format_html('<table class="job-unplaced"><tr><th>recorded against no turn</th><td>{}</td>'
                                     "</tr></table>", _produced(reading.unplaced)))
        return format_html_join("", "{}", ((part,) for part in parts))

    @admin.display(description="operations")
    def operations_table(self, obj: ConversationJob):
        rows = [(op.get("operation", ""), _linked(op.get("candidate_id") and f"candidate:{op['candidate_id']}"
                                                  or op.get("memory_id") and f"memory:{op['memory_id']}" or "",
                                                  str(op.get("text", ""))),
                 op.get("reason") or "-", ", ".join(str(t) for t in op.get("turns") or []) or "-")
                for op in obj.operations or []]
        return format_html('<table class="job-operations"><thead><tr><th>operation</th><th>text</th><th>why</th>'
                           "<th>turns</th></tr></thead><tbody>{}</tbody></table>",
                           format_html_join("", "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>", rows)
                           ) if rows else "-"


def _produced(items: list[Produced]):
    if not items:
        return "-"
    return format_html('<ul class="turn-produced">{}</ul>', format_html_join("", (
        '<li><span class="job-op job-op-{}">{}</span> {}{}</li>'), (
        (item.operation.lower(), item.operation, _linked(item.link, item.text),
         f" ({item.note})" if item.note else "") for item in items)))


def _linked(link: str, text: str):
    if not link:
        return text
    model, _, object_id = link.partition(":")
    return format_html('<a href="{}">{}</a>', reverse(
        f"admin:memories_{'memoryitem' if model == 'memory' else 'candidate'}_change", args=[object_id]), text)


@admin.register(ErasureReceipt)
class ErasureReceiptAdmin(ReadOnlyAdmin):
    """The audit log of erasures: who, when, rows per store; never content."""

    list_display = ("created_at", "tenant", "user_id", "actor", "reason", "counts")
    list_filter = (TenantFilter,)
    search_fields = ("=user_id", "=actor")
    ordering = ("-created_at",)
