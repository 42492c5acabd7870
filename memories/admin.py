"""The governance admin: review queue, memories (audit, supersede, merge,
archive, restore), history, and forgetting a user.

Every change goes through the service functions the API uses (writing.py,
governance.py) with the operator's username as actor. Tenant-scoped operators
(OperatorProfile.tenant) see only their tenant.
"""

from __future__ import annotations

import difflib
from datetime import timedelta

from django import forms
from django.conf import settings
from django.contrib import admin, messages
from django.contrib.auth.admin import GroupAdmin, UserAdmin
from django.contrib.auth.models import Group, User
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.db import models
from django.db.models import Case, IntegerField, Value, When
from django.http import Http404, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils import timezone
from django.utils.formats import date_format
from django.utils.functional import cached_property
from django.utils.html import format_html, format_html_join
from django.utils.safestring import mark_safe

from memories import erasure, governance, vocabulary, writing
from memories.context import ContextRequest, build_context
from memories.errors import InvalidOperation, MemoryError_, MemoryNotFound, VersionConflict
from memories.identity import normalize_identifier
from memories.keys import api_key_create, api_key_revoke, api_key_rotate, key_status
from memories.models import (
    ApiKey,
    Candidate,
    CandidateStatus,
    ConversationJob,
    ErasureReceipt,
    MemoryHistory,
    MemoryItem,
    MemorySource,
    MemoryStatus,
    MemoryVector,
    OperatorProfile,
    Tenant,
)
from memories.permissions import AdminScope, admin_may_manage_accounts, admin_scope
from memories.search import MODES, SearchPlan, SearchQuery, memory_search
from memories.selectors import memory_lineage_ids
from memories.text import counted, query_tokens

COUNT_CAP = 10_000


class CappedCountPaginator(Paginator):
    """Counts at most COUNT_CAP + 1 rows: a full COUNT(*) of a large table on
    every page view is what makes admin lists slow."""

    @cached_property
    def count(self) -> int:
        return self.object_list[: COUNT_CAP + 1].count()  # type: ignore[attr-defined]  # a QuerySet


def request_scope(request) -> AdminScope:
    """Which tenants this operator's pages show (fails closed: see permissions.admin_scope)."""
    user = request.user
    profile = getattr(user, "operator", None)
    return admin_scope(is_superuser=user.is_superuser, has_profile=profile is not None,
                       profile_tenant_id=profile.tenant_id if profile else None,
                       profile_all_tenants=profile.all_tenants if profile else False)


def scoped(queryset, scope: AdminScope, tenant_field: str = "tenant"):
    """The rows of `queryset` an operator with `scope` may see."""
    if scope.all_tenants:
        return queryset
    if scope.tenant_id is None:
        return queryset.none()
    return queryset.filter(**{f"{tenant_field}_id": scope.tenant_id})


def visible_tenants(request):
    scope, tenants = request_scope(request), Tenant.objects.order_by("name")
    if scope.all_tenants:
        return tenants
    return tenants.filter(id=scope.tenant_id) if scope.tenant_id else tenants.none()


def operator_tenant(request) -> Tenant | None:
    """The one tenant of a tenant-scoped operator, else None."""
    tenant_id = request_scope(request).tenant_id
    return Tenant.objects.filter(id=tenant_id).first() if tenant_id else None


def actor_of(request) -> str:
    return request.user.get_username()


class TenantScopedAdmin(admin.ModelAdmin):
    """Limits every list, page and action to the operator's tenant."""

    tenant_field = "tenant"
    show_full_result_count = False
    paginator = CappedCountPaginator

    def get_queryset(self, request):
        return scoped(super().get_queryset(request), request_scope(request), self.tenant_field)

    def has_add_permission(self, request) -> bool:
        return False  # records come in through the API, never hand-made

    def has_delete_permission(self, request, obj=None) -> bool:
        return False  # nothing is deleted here: archive, reject or forget


class ChoiceListFilter(admin.SimpleListFilter):
    """A list filter that takes only the values it offers: anything else in
    the query string (?importance=zzz, ?created=99999999999) is ignored, never
    a server error."""

    def value(self):
        raw = super().value()
        return raw if raw is not None and str(raw) in {str(key) for key, _ in self.lookup_choices} else None


class TenantFilter(ChoiceListFilter):
    """By tenant, through the admin's own path to it (`tenant_field`: traits reach it through their memory)."""

    title = "tenant"
    parameter_name = "tenant"

    def __init__(self, request, params, model, model_admin):
        self.tenant_field = getattr(model_admin, "tenant_field", "tenant")
        super().__init__(request, params, model, model_admin)

    def lookups(self, request, model_admin):
        return [(str(t.id), t.name) for t in visible_tenants(request)]

    def queryset(self, request, queryset):
        if not self.value():
            return queryset
        if not str(self.value()).isdigit():
            return queryset.none()
        return queryset.filter(**{f"{self.tenant_field}_id": int(self.value())})


# --------------------------------------------------------------------------- memories


class CurrentFilter(ChoiceListFilter):
    title = "version"
    parameter_name = "current"

    def lookups(self, request, model_admin):
        return [("yes", "current"), ("no", "superseded or invalidated")]

    def queryset(self, request, queryset):
        if self.value() == "yes":
            return queryset.filter(vocabulary.is_latest_version())
        if self.value() == "no":
            return queryset.exclude(vocabulary.is_latest_version())
        return queryset


class EmbeddedFilter(ChoiceListFilter):
    title = "has embedding"
    parameter_name = "embedded"

    def lookups(self, request, model_admin):
        return [("yes", "yes"), ("no", "not yet"), ("failed", "failed")]

    def queryset(self, request, queryset):
        states = {"yes": "done", "no": "pending", "failed": "failed"}
        return queryset.filter(embedding_state=states[self.value()]) if self.value() else queryset


class ImportanceFilter(ChoiceListFilter):
    title = "importance"
    parameter_name = "importance"

    def lookups(self, request, model_admin):
        return [("high", "0.7 and above"), ("mid", "0.3 to 0.7"), ("low", "under 0.3")]

    def queryset(self, request, queryset):
        ranges = {"high": (0.7, 1.01), "mid": (0.3, 0.7), "low": (0, 0.3)}
        if not self.value():
            return queryset
        low, high = ranges[self.value()]
        return queryset.filter(importance__gte=low, importance__lt=high)


class CreatedFilter(ChoiceListFilter):
    title = "created"
    parameter_name = "created"

    def lookups(self, request, model_admin):
        return [("1", "last 24 hours"), ("7", "last 7 days"), ("30", "last 30 days"), ("old", "older")]

    def queryset(self, request, queryset):
        if not self.value():
            return queryset
        if self.value() == "old":
            return queryset.filter(created_at__lt=timezone.now() - timedelta(days=30))
        return queryset.filter(created_at__gte=timezone.now() - timedelta(days=int(self.value())))


def shown_time(value) -> str:
    """The admin's one date format (memory_project/formats): 2026-11-26 13:51, in the site's time zone."""
    return date_format(timezone.localtime(value), "DATETIME_FORMAT") if value else "-"


def text_diff(old: str | None, new: str | None):
    """Word-level diff as HTML, every piece escaped."""
    old_words, new_words = (old or "").split(), (new or "").split()
    pieces = []
    for op in difflib.ndiff(old_words, new_words):
        if op.startswith("- "):
            pieces.append(format_html('<del class="diff-old">{}</del>', op[2:]))
        elif op.startswith("+ "):
            pieces.append(format_html('<ins class="diff-new">{}</ins>', op[2:]))
        elif op.startswith("  "):
            pieces.append(format_html("{}", op[2:]))
    return mark_safe(" ".join(pieces))


class MemoryEditForm(forms.ModelForm):
    """Edits become a new version through memory_update; the row is never overwritten."""

    expected_version = forms.IntegerField(widget=forms.HiddenInput)
    tags = forms.CharField(required=False, help_text="comma-separated")

    class Meta:
        model = MemoryItem
        fields = ("text", "importance")

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if self.instance.pk and "tags" in self.fields:  # absent when read-only (auditors)
            # self.initial, not field.initial: the admin's form puts the raw list there first.
            self.initial["expected_version"] = self.instance.version
            self.initial["tags"] = ", ".join(self.instance.tags)

    def clean_tags(self) -> list[str]:
        return [t.strip() for t in self.cleaned_data["tags"].split(",") if t.strip()]


class MergeForm(forms.Form):
    merged_text = forms.CharField(widget=forms.Textarea(attrs={"rows": 5, "cols": 90}))
    reason = forms.CharField(required=False)


@admin.register(MemoryItem)
class MemoryItemAdmin(TenantScopedAdmin):
    form = MemoryEditForm
    list_display = ("short_text", "user_id", "tenant", "memory_type", "status", "version", "importance_shown",
                    "is_current", "embedding_state", "created_at")
    list_filter = (TenantFilter, "memory_type", "status", CurrentFilter, EmbeddedFilter, ImportanceFilter,
                   CreatedFilter)
    search_fields = ("text", "=user_id", "=tags")
    list_select_related = ("tenant",)
    ordering = ("-created_at",)
    actions = ("archive_selected", "restore_selected", "merge_selected")
    readonly_fields = ("id", "tenant", "user_id", "agent_id", "session_id", "group_id", "memory_type", "status",
                       "version", "confidence", "data", "content_hash", "valid_at", "invalid_at", "created_at",
                       "expired_at", "updated_at", "archived_at", "expires_at", "access_count", "last_accessed_at",
                       "version_chain", "embedding_state", "embedding_error",
                       "vector_table", "source_table", "history_timeline")
    fieldsets = (
        (None, {"fields": ("text", "importance", "tags", "expected_version")}),
        ("Who and what", {"fields": ("id", "tenant", "user_id", "agent_id", "session_id", "group_id",
                                     "memory_type", "status", "confidence", "data", "content_hash")}),
        ("Time (bitemporal)", {"fields": ("valid_at", "invalid_at", "created_at", "expired_at", "updated_at",
                                          "archived_at", "expires_at", "version", "version_chain")}),
        ("Usage", {"fields": ("access_count", "last_accessed_at")}),
        ("Sources", {"fields": ("source_table",)}),
        ("Embedding", {"fields": ("embedding_state", "embedding_error", "vector_table")}),
        ("History", {"fields": ("history_timeline",)}),
    )

    @admin.display(description="text")
    def short_text(self, obj: MemoryItem):
        # One line in the list (admin.css truncates it to the column); the whole text in the tooltip.
        return format_html('<span title="{}">{}</span>', obj.text, obj.text if len(obj.text) <= 300
                           else obj.text[:297] + "...")

    @admin.display(description="importance", ordering="importance")
    def importance_shown(self, obj: MemoryItem) -> str:
        return f"{obj.importance:.2f}"

    @admin.display(boolean=True, description="current")
    def is_current(self, obj: MemoryItem) -> bool:
        return obj.expired_at is None

    def get_readonly_fields(self, request, obj=None):
        editable = obj is not None and obj.expired_at is None and self.has_change_permission(request, obj)
        return self.readonly_fields if editable else (*self.readonly_fields, "text", "importance", "tags")

    def get_fieldsets(self, request, obj=None):
        editable = obj is not None and obj.expired_at is None and self.has_change_permission(request, obj)
        if editable:
            return self.fieldsets
        first, *rest = self.fieldsets
        return ((None, {"fields": ("text", "importance", "tags")}), *rest)

    @admin.display(description="version chain")
    def version_chain(self, obj: MemoryItem):
        links = []
        for earlier in MemoryItem.objects.filter(superseded_by=obj).only("id", "version").order_by("version"):
            links.append(format_html('supersedes <a href="{}">v{} ({})</a>',
                                     reverse("admin:memories_memoryitem_change", args=[earlier.id]),
                                     earlier.version, earlier.id))
        if obj.superseded_by_id:
            links.append(format_html('superseded by <a href="{}">{}</a>',
                                     reverse("admin:memories_memoryitem_change", args=[obj.superseded_by_id]),
                                     obj.superseded_by_id))
        return format_html_join(mark_safe("<br>"), "{}", ((link,) for link in links)) if links else "-"

    @admin.display(description="vectors")
    def vector_table(self, obj: MemoryItem):
        rows = MemoryVector.objects.filter(item=obj).values_list("model", "dimensions", "chunk_index", "created_at")
        body = format_html_join("", "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                                ((model, dims, chunk, shown_time(at)) for model, dims, chunk, at in rows))
        return format_html("<table><tr><th>model</th><th>dims</th><th>chunk</th><th>embedded</th></tr>{}</table>",
                           body) if rows else "-"

    @admin.display(description="sources")
    def source_table(self, obj: MemoryItem):
        rows = MemorySource.objects.filter(item=obj).values_list("session_id", "message_indices", "job_id")
        body = format_html_join("", "<tr><td>{}</td><td>{}</td><td>{}</td></tr>", rows)
        return format_html("<table><tr><th>session</th><th>messages</th><th>job</th></tr>{}</table>",
                           body) if rows else "-"

    @admin.display(description="timeline")
    def history_timeline(self, obj: MemoryItem):
        rows = MemoryHistory.objects.filter(tenant_id=obj.tenant_id, memory_id__in=memory_lineage_ids(obj))
        body = format_html_join(
            "", '<tr class="history-row"><td>{}</td><td><b>{}</b></td><td>{}</td><td>{}</td><td>{}</td></tr>',
            ((shown_time(h.created_at), h.event, h.actor,
              text_diff(h.old_text, h.new_text) if (h.old_text or h.new_text) else "-", h.reason)
             for h in rows.order_by("created_at", "id")),
        )
        return format_html('<table class="history-timeline"><thead><tr><th>when</th><th>event</th><th>actor</th>'
                           "<th>text change</th><th>reason</th></tr></thead><tbody>{}</tbody></table>", body)

    def save_model(self, request, obj, form, change):
        try:
            result = writing.memory_update(
                tenant=obj.tenant, memory_id=obj.id, actor=actor_of(request), text=form.cleaned_data["text"],
                importance=form.cleaned_data["importance"], tags=form.cleaned_data["tags"],
                expected_version=form.cleaned_data["expected_version"], reason="edited in the admin")
        except VersionConflict as exc:
            self.message_user(request, f"Not saved: {exc}. Reload the page and try again.", messages.ERROR)
            request._memory_saved_as = None
            return
        request._memory_saved_as = result.memory

    def save_related(self, request, form, formsets, change):
        pass  # inlines are read-only; the service wrote everything

    def response_change(self, request, obj):
        saved = getattr(request, "_memory_saved_as", None)
        if saved is None:
            return HttpResponseRedirect(request.path)
        if saved.id != obj.id:
            self.message_user(request, f"Saved as version {saved.version}; the old version is kept and expired.")
        return HttpResponseRedirect(reverse("admin:memories_memoryitem_change", args=[saved.id]))

    def _each(self, request, queryset, status: str, verb: str) -> None:
        done = 0
        for memory in queryset:
            try:
                result = writing.memory_set_status(tenant=memory.tenant, memory_id=memory.id, status=status,
                                                   actor=actor_of(request), reason=f"{verb} in the admin")
                done += result.operation != "NOOP"
            except MemoryError_ as exc:
                self.message_user(request, f"{memory.id}: {exc}", messages.ERROR)
        self.message_user(request, f"{verb.capitalize()} {done} memories.")

    @admin.action(description="Archive selected memories", permissions=["change"])
    def archive_selected(self, request, queryset):
        self._each(request, queryset, MemoryStatus.ARCHIVED, "archived")

    @admin.action(description="Restore selected memories", permissions=["change"])
    def restore_selected(self, request, queryset):
        self._each(request, queryset, MemoryStatus.ACTIVE, "restored")

    @admin.action(description="Merge selected memories into one", permissions=["change"])
    def merge_selected(self, request, queryset):
        memories = list(queryset.order_by("created_at"))
        if len({(m.tenant_id, m.user_id) for m in memories}) > 1:
            self.message_user(request, "Memories of different users or tenants cannot be merged.", messages.ERROR)
            return None
        if len(memories) < 2:
            self.message_user(request, "Select at least two memories to merge.", messages.ERROR)
            return None
        if "apply" in request.POST:
            form = MergeForm(request.POST)
            if form.is_valid():
                try:
                    merged = writing.memory_merge(tenant=memories[0].tenant, memory_ids=[m.id for m in memories],
                                                  merged_text=form.cleaned_data["merged_text"],
                                                  actor=actor_of(request), reason=form.cleaned_data["reason"])
                except (InvalidOperation, VersionConflict, MemoryNotFound) as exc:
                    self.message_user(request, f"Not merged: {exc}", messages.ERROR)
                    return None
                self.message_user(request, f"Merged {len(memories)} memories into {merged.id}.")
                return HttpResponseRedirect(reverse("admin:memories_memoryitem_change", args=[merged.id]))
        else:
            form = MergeForm(initial={"merged_text": " ".join(m.text.rstrip(".") + "." for m in memories)})
        return TemplateResponse(request, "admin/memories/merge.html", {
            **self.admin_site.each_context(request), "title": "Merge memories", "memories": memories,
            "form": form, "opts": self.model._meta, "action_checkbox_name": admin.helpers.ACTION_CHECKBOX_NAME,
        })

    # ---- forget a user (erasure), behind a confirmation page

    def get_urls(self):
        return [path("forget/", self.admin_site.admin_view(self.forget_view), name="memories_forget_user"),
                path("search-as-agent/", self.admin_site.admin_view(self.search_as_agent_view),
                     name="memories_search_as_agent"),
                *super().get_urls()]

    # ---- search as the agent: the results with every score part, the plan, and the context block

    def search_as_agent_view(self, request):
        """What an agent of this tenant would get for a query, and why: an operator's read, so it is
        not counted as an agent's access."""
        if not self.has_view_permission(request):
            raise PermissionDenied
        tenants = list(visible_tenants(request))
        asked = {name: (request.GET.get(name) or "").strip()
                 for name in ("tenant", "user_id", "agent_id", "session_id", "group_id", "query", "mode")}
        tenant = next((t for t in tenants if str(t.id) == asked["tenant"]), tenants[0] if len(tenants) == 1 else None)
        context = {**self.admin_site.each_context(request), "title": "Search as the agent", "tenants": tenants,
                   "tenant": tenant, "asked": asked, "modes": MODES, "opts": self.model._meta}
        if tenant and asked["query"] and (asked["user_id"] or asked["group_id"]):
            try:
                scope = {name: normalize_identifier(asked[name], field=name)
                         for name in ("user_id", "agent_id", "session_id", "group_id") if asked[name]}
                if len(query_tokens(asked["query"])) > settings.SEARCH_MAX_QUERY_TERMS:
                    raise InvalidOperation("the query has too many distinct words", field="query")
                plan = SearchPlan()
                mode = asked["mode"] if asked["mode"] in MODES else "hybrid"
                context["results"] = memory_search(tenant=tenant, plan=plan, query=SearchQuery(
                    query=asked["query"][:settings.SEARCH_MAX_QUERY_CHARS], mode=mode, limit=20, **scope))
                context["plan"] = plan
                context["agent_context"] = build_context(tenant=tenant, request=ContextRequest(
                    query=asked["query"][:settings.SEARCH_MAX_QUERY_CHARS], **scope))
            except InvalidOperation as exc:
                context["error"] = f"{exc.field}: {exc}"
        return TemplateResponse(request, "admin/memories/search_as_agent.html", context)

    def forget_view(self, request):
        if not request.user.has_perm("memories.delete_memoryitem"):
            raise PermissionDenied
        tenants = list(visible_tenants(request))
        tenant_id, user_id = request.POST.get("tenant") or request.GET.get("tenant"), \
            (request.POST.get("user_id") or request.GET.get("user_id") or "").strip()
        tenant = next((t for t in tenants if str(t.id) == str(tenant_id)), None)
        context = {**self.admin_site.each_context(request), "title": "Forget a user", "tenants": tenants,
                   "tenant": tenant, "user_id": user_id, "opts": self.model._meta}
        if tenant and user_id:
            # The preview is the erasure's own dry run: the same function, the same counts.
            context["counts"] = erasure.user_erase(tenant=tenant, user_id=user_id, actor=actor_of(request),
                                                   dry_run=True).counts
            context["registry"] = erasure.REGISTRY
            if request.method == "POST" and request.POST.get("confirm") == "yes":
                result = erasure.user_erase(tenant=tenant, user_id=user_id, actor=actor_of(request),
                                            reason="erasure from the admin")
                erased = ", ".join(counted(n, name) for name, n in result.counts.items() if n)
                receipt = result.receipt.id if result.receipt else "-"
                self.message_user(request, f"Forgot {user_id} (receipt {receipt}): {erased or 'nothing held'}.")
                return HttpResponseRedirect(reverse("admin:memories_memoryitem_changelist"))
        return TemplateResponse(request, "admin/memories/forget.html", context)


# --------------------------------------------------------------------------- review queue


class CandidateForm(forms.ModelForm):
    class Meta:
        model = Candidate
        fields = ("text",)
        widgets = {"text": forms.Textarea(attrs={"rows": 3, "cols": 90})}


class CandidateStatusFilter(admin.SimpleListFilter):
    """The queue is a work list: pending unless the reviewer asks for decided ones (or all)."""

    title = "status"
    parameter_name = "status"
    DEFAULT = CandidateStatus.PENDING.value

    def lookups(self, request, model_admin):
        return [*CandidateStatus.choices, ("all", "all")]

    def value(self):
        return super().value() or self.DEFAULT

    def choices(self, changelist):
        for lookup, title in self.lookup_choices:
            yield {"selected": self.value() == str(lookup), "display": title,
                   "query_string": changelist.get_query_string({self.parameter_name: lookup})}

    def queryset(self, request, queryset):
        return queryset if self.value() == "all" else queryset.filter(status=self.value())


@admin.register(Candidate)
class CandidateAdmin(TenantScopedAdmin):
    form = CandidateForm
    change_form_template = "admin/memories/candidate_change_form.html"
    # What a reviewer reads and decides comes first; the rest scrolls to the right on narrow screens.
    list_display = ("short_text", "decide_inline", "reason_list", "change_words", "source_turn", "confidence_shown",
                    "operation", "user_id", "tenant", "status", "created_at")
    list_filter = (TenantFilter, CandidateStatusFilter, "operation")
    change_list_template = "admin/memories/candidate_change_list.html"

    class Media:
        js = ("memories/review.js",)
    search_fields = ("text", "=user_id")
    list_select_related = ("tenant", "target")
    actions = ("approve_selected", "reject_selected")
    readonly_fields = ("status", "operation", "user_id", "memory_type", "confidence", "importance", "reason_list",
                       "reason_detail", "target_memory", "source_messages_view", "resolved_by", "resolved_at",
                       "result_memory_link", "created_at")
    fields = ("text", *readonly_fields)

    def get_queryset(self, request):
        pending_first = Case(When(status=CandidateStatus.PENDING, then=Value(0)), default=Value(1),
                             output_field=IntegerField())
        return super().get_queryset(request).annotate(pending_first=pending_first).order_by("pending_first",
                                                                                            "created_at")

    @admin.display(description="text")
    def short_text(self, obj: Candidate) -> str:
        return obj.text if len(obj.text) <= 80 else obj.text[:77] + "..."

    @admin.display(description="reasons")
    def reason_list(self, obj: Candidate) -> str:
        return ", ".join(obj.reasons)

    @admin.display(description="would change")
    def target_text(self, obj: Candidate) -> str:
        return obj.target.text[:80] if obj.target else "-"

    @admin.display(description="confidence", ordering="confidence")
    def confidence_shown(self, obj: Candidate) -> str:
        return f"{obj.confidence:.2f}"

    @admin.display(description="change (word by word)")
    def change_words(self, obj: Candidate):
        """For an update or a contradiction: the memory it would change, and how, word by word."""
        if not obj.target:
            return "new memory"
        return format_html('<span class="review-diff">{}</span>', text_diff(obj.target.text, obj.text))

    @admin.display(description="source turn")
    def source_turn(self, obj: Candidate):
        job = ConversationJob.objects.filter(id=obj.job_id).only("messages").first() if obj.job_id else None
        if job is None or not obj.source_messages:
            return "-"
        index = obj.source_messages[0]
        if not 0 <= index < len(job.messages):
            return "-"
        message = job.messages[index]
        return format_html('<span title="{}">{}: {}</span>', message["content"],
                           message.get("name") or message["role"], message["content"][:120])

    @admin.display(description="decide")
    def decide_inline(self, obj: Candidate):
        """Edit-and-approve, approve or reject without leaving the list (the forms sit outside the
        changelist's own form: see candidate_change_list.html)."""
        if obj.status != CandidateStatus.PENDING:
            return obj.status
        form = f"review-{obj.id}"
        return format_html(
            '<input type="text" name="text" value="{}" form="{}" class="review-text" aria-label="text to approve">'
            '<button type="submit" name="decision" value="approve" form="{}" class="review-approve">Approve</button>'
            '<button type="submit" name="decision" value="reject" form="{}" class="review-reject">Reject</button>',
            obj.text, form, form, form)

    def get_urls(self):
        return [path("<uuid:candidate_id>/decide/", self.admin_site.admin_view(self.decide_view),
                     name="memories_candidate_decide"), *super().get_urls()]

    def decide_view(self, request, candidate_id):
        """One decision from the list: approve (with the row's text, if edited) or reject; back to the list."""
        if request.method != "POST":
            return HttpResponseRedirect(reverse("admin:memories_candidate_changelist"))
        candidate = self.get_queryset(request).filter(id=candidate_id).first()
        if candidate is None:
            raise Http404("no such candidate")
        if not self.has_change_permission(request, candidate):
            raise PermissionDenied
        decision, text = request.POST.get("decision"), (request.POST.get("text") or "").strip()
        try:
            if decision == "approve":
                governance.candidate_approve(tenant=candidate.tenant, candidate_id=candidate.id,
                                             actor=actor_of(request),
                                             edited_text=text if text and text != candidate.text else None)
                self.message_user(request, "Candidate approved" + (" with your edit." if text and
                                                                   text != candidate.text else "."))
            elif decision == "reject":
                governance.candidate_reject(tenant=candidate.tenant, candidate_id=candidate.id,
                                            actor=actor_of(request), reason=request.POST.get("reason", ""))
                self.message_user(request, "Candidate rejected.")
            else:
                self.message_user(request, "Choose approve or reject.", messages.ERROR)
        except MemoryError_ as exc:
            self.message_user(request, f"Not applied: {exc}", messages.ERROR)
        back = request.POST.get("next") or ""
        listed = reverse("admin:memories_candidate_changelist")
        return HttpResponseRedirect(back if back.startswith(listed) else listed)

    @admin.display(description="existing memory it would change")
    def target_memory(self, obj: Candidate):
        if not obj.target:
            return "- (a new memory)"
        return format_html('<a href="{}">{}</a> (v{}, {})',
                           reverse("admin:memories_memoryitem_change", args=[obj.target_id]), obj.target.text,
                           obj.target.version, obj.target.status)

    @admin.display(description="source messages")
    def source_messages_view(self, obj: Candidate):
        job = ConversationJob.objects.filter(id=obj.job_id).only("messages").first() if obj.job_id else None
        if job is None:
            return "-"
        lines = [(i, job.messages[i].get("name") or job.messages[i]["role"], job.messages[i]["content"])
                 for i in obj.source_messages if 0 <= i < len(job.messages)]
        return format_html_join(mark_safe("<br>"), "[{}] <b>{}</b>: {}", lines) if lines else "-"

    @admin.display(description="result")
    def result_memory_link(self, obj: Candidate):
        if not obj.result_memory_id:
            return "-"
        return format_html('<a href="{}">{}</a>', reverse("admin:memories_memoryitem_change",
                                                          args=[obj.result_memory_id]), obj.result_memory_id)

    def get_readonly_fields(self, request, obj=None):
        if obj is None or obj.status != CandidateStatus.PENDING or not self.has_change_permission(request, obj):
            return ("text", *self.readonly_fields)
        return self.readonly_fields

    def save_model(self, request, obj, form, change):
        decision = "approve" if "_approve" in request.POST else "reject" if "_reject" in request.POST else None
        request._review_decision = decision
        if decision is None:
            return  # the queue is changed only by a decision
        try:
            if decision == "approve":
                edited = form.cleaned_data["text"] if form.cleaned_data["text"] != form.initial.get("text") else None
                governance.candidate_approve(tenant=obj.tenant, candidate_id=obj.id, actor=actor_of(request),
                                             edited_text=edited)
            else:
                governance.candidate_reject(tenant=obj.tenant, candidate_id=obj.id, actor=actor_of(request))
        except MemoryError_ as exc:
            request._review_decision = None
            self.message_user(request, f"Not applied: {exc}", messages.ERROR)

    def save_related(self, request, form, formsets, change):
        pass

    def response_change(self, request, obj):
        decision = getattr(request, "_review_decision", None)
        if decision:
            self.message_user(request, {"approve": "Candidate approved.", "reject": "Candidate rejected."}[decision])
        return HttpResponseRedirect(reverse("admin:memories_candidate_changelist"))

    def _decide(self, request, queryset, decide, verb: str) -> None:
        done = 0
        for candidate in queryset.filter(status=CandidateStatus.PENDING):
            try:
                decide(tenant=candidate.tenant, candidate_id=candidate.id, actor=actor_of(request))
                done += 1
            except MemoryError_ as exc:
                self.message_user(request, f"{candidate.id}: {exc}", messages.ERROR)
        self.message_user(request, f"{verb} {done} candidates.")

    @admin.action(description="Approve selected candidates", permissions=["change"])
    def approve_selected(self, request, queryset):
        self._decide(request, queryset, governance.candidate_approve, "Approved")

    @admin.action(description="Reject selected candidates", permissions=["change"])
    def reject_selected(self, request, queryset):
        self._decide(request, queryset, governance.candidate_reject, "Rejected")


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


# --------------------------------------------------------------------------- tenants, keys, operators


def manages_accounts(request) -> bool:
    return admin_may_manage_accounts(is_superuser=request.user.is_superuser, scope=request_scope(request))


class AccountsOnlyForUnscopedSuperusers:
    """Users, groups and operator scopes: a tenant-scoped superuser could otherwise make a global superuser."""

    def has_module_permission(self, request) -> bool:
        return manages_accounts(request)

    def has_view_permission(self, request, obj=None) -> bool:
        return manages_accounts(request)

    def has_add_permission(self, request) -> bool:
        return manages_accounts(request)

    def has_change_permission(self, request, obj=None) -> bool:
        return manages_accounts(request)

    def has_delete_permission(self, request, obj=None) -> bool:
        return manages_accounts(request)


@admin.register(Tenant)
class TenantAdmin(AccountsOnlyForUnscopedSuperusers, admin.ModelAdmin):
    """Tenants: unscoped superusers create and change them; a tenant with
    operators or data cannot be deleted (PROTECT)."""

    list_display = ("name", "protect_approved", "created_at")
    search_fields = ("name",)

    def get_queryset(self, request):
        return visible_tenants(request)

    # Every operator sees the tenants of their scope; only unscoped superusers change them.
    def has_module_permission(self, request) -> bool:
        return request.user.is_active and request.user.is_staff

    def has_view_permission(self, request, obj=None) -> bool:
        return request.user.is_active and request.user.is_staff


class ApiKeyForm(forms.ModelForm):
    class Meta:
        model = ApiKey
        fields = ("tenant", "name", "role", "expires_at")


@admin.register(ApiKey)
class ApiKeyAdmin(admin.ModelAdmin):
    """Keys are made here (the raw key is shown once), rotated and revoked by
    id; only the hash is stored. Superusers of the key's tenant manage them."""

    form = ApiKeyForm
    list_display = ("id", "tenant", "name", "role", "prefix", "status", "expires_at", "last_used_at", "created_at")
    list_filter = ("role", TenantFilter)
    readonly_fields = ("prefix", "created_at", "revoked_at", "last_used_at")
    actions = ("revoke_keys", "rotate_keys")

    def get_queryset(self, request):
        return scoped(super().get_queryset(request).select_related("tenant"), request_scope(request))

    @admin.display(description="status")
    def status(self, obj: ApiKey) -> str:
        return key_status(obj)

    def _may_manage(self, request) -> bool:
        return request.user.is_superuser and not request_scope(request).sees_nothing

    def has_module_permission(self, request) -> bool:
        return self._may_manage(request)

    def has_view_permission(self, request, obj=None) -> bool:
        return self._may_manage(request)

    def has_add_permission(self, request) -> bool:
        return self._may_manage(request)

    def has_change_permission(self, request, obj=None) -> bool:
        return False  # a key is revoked or rotated, never edited

    def has_delete_permission(self, request, obj=None) -> bool:
        return False  # revoked keys stay: jobs and history point at them

    def formfield_for_foreignkey(self, db_field, request, **kwargs):
        if db_field.name == "tenant":
            kwargs["queryset"] = visible_tenants(request)
        return super().formfield_for_foreignkey(db_field, request, **kwargs)

    def save_model(self, request, obj, form, change):
        try:
            issued = api_key_create(tenant_name=obj.tenant.name, name=obj.name, role=obj.role,
                                    expires_at=obj.expires_at)
        except InvalidOperation as exc:
            raise PermissionDenied(str(exc)) from None
        obj.pk = issued.api_key.pk
        obj.__dict__.update({k: v for k, v in issued.api_key.__dict__.items() if not k.startswith("_")})
        self.message_user(request, f"Key {issued.api_key.id} created. Copy it now, it is not shown again: "
                                   f"{issued.raw_key}", messages.WARNING)

    @admin.action(description="Revoke selected keys")
    def revoke_keys(self, request, queryset):
        for key in queryset:
            api_key_revoke(key_id=key.id)
        self.message_user(request, f"Revoked {queryset.count()} keys.")

    @admin.action(description="Rotate selected keys (new key shown once, old one revoked)")
    def rotate_keys(self, request, queryset):
        for key in queryset.filter(revoked_at__isnull=True):
            issued = api_key_rotate(key_id=key.id)
            self.message_user(request, f"Key {key.id} revoked; replacement key {issued.api_key.id}: "
                                       f"{issued.raw_key} (copy it now, it is not shown again)", messages.WARNING)


@admin.register(OperatorProfile)
class OperatorProfileAdmin(AccountsOnlyForUnscopedSuperusers, admin.ModelAdmin):
    """Operator scopes: which tenant a staff user works on. Only unscoped superusers set them."""

    list_display = ("user", "tenant", "all_tenants")
    list_filter = ("all_tenants",)


for _model, _base in ((User, UserAdmin), (Group, GroupAdmin)):
    if admin.site.is_registered(_model):
        admin.site.unregister(_model)
    admin.site.register(_model, type(f"Guarded{_base.__name__}", (AccountsOnlyForUnscopedSuperusers, _base), {}))
