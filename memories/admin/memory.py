"""Memories in the admin: audit, edit, supersede, merge, archive, restore, search as the agent,
forget a user."""

from __future__ import annotations

from datetime import timedelta

from django import forms
from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.core.exceptions import PermissionDenied
from django.http import HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils import timezone
from django.utils.html import format_html, format_html_join
from django.utils.safestring import mark_safe

from memories import erasure, vocabulary, writing
from memories.admin.base import (
    ChoiceListFilter,
    TenantFilter,
    actor_of,
    shown_time,
    text_diff,
    visible_tenants,
)
from memories.admin.corrections import MemoryCorrections
from memories.admin.people import person_link
from memories.api.serializers import MemorySearchSerializer
from memories.context import ContextRequest, build_context
from memories.errors import InvalidOperation, MemoryNotFound, VersionConflict
from memories.identity import normalize_identifier
from memories.models import (
    MemoryHistory,
    MemoryItem,
    MemorySource,
    MemoryStatus,
    MemoryVector,
)
from memories.search import MODES, SearchPlan, memory_search
from memories.selectors import candidates_against, memory_lineage_ids, memory_standing
from memories.text import counted

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

    def clean_text(self) -> str:
        return _screened(self.cleaned_data["text"], "text")

    def clean_tags(self) -> list[str]:
        return [_screened(t.strip(), "tags") for t in self.cleaned_data["tags"].split(",") if t.strip()]


def _screened(value: str, field: str) -> str:
    """The admin's edits pass the same gate as every other door (writing.refuse_sensitive): the
    refusal is shown on the form, and nothing is stored."""
    try:
        writing.refuse_sensitive(field=field, text=value)
    except InvalidOperation as exc:
        raise forms.ValidationError(str(exc)) from None
    return value


class MergeForm(forms.Form):
    merged_text = forms.CharField(widget=forms.Textarea(attrs={"rows": 5, "cols": 90}))
    reason = forms.CharField(required=False)

    def clean_merged_text(self) -> str:
        return _screened(self.cleaned_data["merged_text"], "merged text")


@admin.register(MemoryItem)
class MemoryItemAdmin(MemoryCorrections):
    form = MemoryEditForm
    # Fits 1366 px: the embedding state is a filter (has embedding), the tenant a column only for who sees several.
    list_display = ("short_text", "about", "user_id", "tenant", "memory_type", "status", "version", "importance_shown",
                    "is_current", "created_at")
    list_filter = (TenantFilter, "memory_type", "status", CurrentFilter, EmbeddedFilter, ImportanceFilter,
                   CreatedFilter)
    search_fields = ("text", "=user_id", "=tags")
    list_select_related = ("tenant", "subject_entity", "object_entity")
    ordering = ("-created_at",)
    actions = ("archive_selected", "restore_selected", "merge_selected")
    readonly_fields = ("id", "tenant", "user_id", "agent_id", "session_id", "group_id", "memory_type", "status",
                       "version", "confidence", "data", "content_hash", "valid_at", "invalid_at", "created_at",
                       "expired_at", "updated_at", "archived_at", "expires_at", "access_count", "last_accessed_at",
                       "version_chain", "embedding_state", "embedding_error",
                       "vector_table", "source_table", "history_timeline", "standing", "waiting_candidates", "about",
                       "corrections", "episode_shown")
    change_form_template = "admin/memories/memoryitem/change_form.html"
    # What a reviewer decides on comes first: whether the memory holds (and what replaced it), its text,
    # what waits in review against it, its history; the rest below, folded.
    fieldsets = (
        ("Standing", {"fields": ("standing", "corrections")}),
        (None, {"fields": ("text", "importance", "tags", "expected_version")}),
        ("About", {"fields": ("about",)}),
        ("Episode", {"fields": ("episode_shown",)}),
        ("Waiting for review", {"fields": ("waiting_candidates",)}),
        ("History", {"fields": ("history_timeline",)}),
        ("Who and what", {"classes": ("collapse",),
                          "fields": ("id", "tenant", "user_id", "agent_id", "session_id", "group_id",
                                     "memory_type", "status", "confidence", "data", "content_hash")}),
        ("Time (bitemporal)", {"classes": ("collapse",),
                               "fields": ("valid_at", "invalid_at", "created_at", "expired_at", "updated_at",
                                          "archived_at", "expires_at", "version", "version_chain")}),
        ("Usage", {"classes": ("collapse",), "fields": ("access_count", "last_accessed_at")}),
        ("Sources", {"classes": ("collapse",), "fields": ("source_table",)}),
        ("Embedding", {"classes": ("collapse",), "fields": ("embedding_state", "embedding_error", "vector_table")}),
    )

    @admin.display(description="text")
    def short_text(self, obj: MemoryItem):
        # One line in the list (admin.css truncates it to the column); the whole text in the tooltip.
        return format_html('<span title="{}">{}</span>', obj.text, obj.text if len(obj.text) <= 300
                           else obj.text[:297] + "...")

    @admin.display(description="about")
    def about(self, obj: MemoryItem):
        """Whom the memory is about (memories.people): its subject and, when it names one, its object."""
        if not obj.subject_entity_id and not obj.object_entity_id:
            return "-"
        if not obj.object_entity_id:
            return person_link(obj.subject_entity)
        return format_html("{} &rarr; {}", person_link(obj.subject_entity), person_link(obj.object_entity))

    @admin.display(description="importance", ordering="importance")
    def importance_shown(self, obj: MemoryItem) -> str:
        return f"{obj.importance:.2f}"

    @admin.display(boolean=True, description="current")
    def is_current(self, obj: MemoryItem) -> bool:
        return obj.expired_at is None

    def _editable(self, request, obj) -> bool:
        """Only a current memory that still counts is edited here: an archived, rejected, superseded or
        invalidated one is read-only (an archived one is restored first)."""
        return (obj is not None and obj.expired_at is None and obj.status in (MemoryStatus.ACTIVE,
                                                                               MemoryStatus.PENDING)
                and self.has_change_permission(request, obj))

    def get_readonly_fields(self, request, obj=None):
        return self.readonly_fields if self._editable(request, obj) else (*self.readonly_fields, "text",
                                                                            "importance", "tags")

    def get_fieldsets(self, request, obj=None):
        fieldsets: tuple = self.fieldsets
        if obj is None or writing.episode_unit(obj) is None:  # the unit's fields, on an episode only
            fieldsets = tuple(f for f in self.fieldsets if f[0] != "Episode")
        if self._editable(request, obj):
            return fieldsets
        standing, _text, *rest = fieldsets
        return (standing, (None, {"fields": ("text", "importance", "tags")}), *rest)

    @admin.display(description="episode unit")
    def episode_shown(self, obj: MemoryItem):
        """Seed 002's unit of an episode: its title, summary, narrative, subject, keywords and the facts
        drawn from it (linked)."""
        unit = writing.episode_unit(obj)
        if unit is None:
            return "-"
        facts = format_html_join(", ", '<a href="{}">{}</a>', (
            (reverse("admin:memories_memoryitem_change", args=[fact]), fact[:8]) for fact in unit["facts"]))
        return format_html("<p><strong>{}</strong> ({}, part {})</p><p>{}</p>{}<p>Subject: {}; keywords: {}</p>"
                           "<p>Facts drawn from it: {}</p>", unit["title"], unit["language"] or "-", unit["part"],
                           unit["summary"] or "-",
                           format_html("<p>Narrative: {}</p>", unit["narrative"]) if unit["narrative"] else "",
                           unit["subject"] or "-", ", ".join(unit["keywords"]) or "-", facts or "-")

    def render_change_form(self, request, context, add=False, change=False, form_url="", obj=None):
        """No Save buttons on a read-only memory; a Restore button on an archived one."""
        if obj is not None and not self._editable(request, obj):
            context.update({"show_save": False, "show_save_and_continue": False,
                            "show_save_and_add_another": False, "show_delete": False})
        # The corrections panel's forms (reinstate; whom it is about, split), for who may change the memory.
        context["correctable"] = (obj is not None and not writing.memory_is_forgotten(obj)
                                  and self.has_change_permission(request, obj))
        return super().render_change_form(request, context, add, change, form_url, obj)

    @admin.display(description="standing")
    def standing(self, obj: MemoryItem):
        """Whether the memory still holds, said first: an invalidated or superseded memory says so and
        links to what replaced it; an archived one says it is read-only until restored."""
        found = memory_standing(obj)
        link = (format_html(' &mdash; replaced by <a href="{}">{}</a>',
                            reverse("admin:memories_memoryitem_change", args=[found.replaced_by]),
                            MemoryItem.objects.filter(id=found.replaced_by).values_list("text", flat=True).first()
                            or found.replaced_by) if found.replaced_by else "")
        since = format_html(" since {}", shown_time(found.since)) if found.since else ""
        if writing.memory_is_forgotten(obj):
            return format_html('<strong class="memory-standing memory-standing-forgotten">{}</strong>{}',
                               "Forgotten at the user's request: its words are gone and it cannot be restored.",
                               since)
        words = {"current": "Current: this memory holds and is what search and context use.",
                 "superseded": "Superseded: a newer version replaced it.",
                 "invalidated": "Invalidated: it stopped holding (a contradiction).",
                 "archived": "Archived: read-only, out of search and context. Restore it to edit it.",
                 "rejected": "Rejected in review.", "pending": "Waiting for review.",
                 "expired": "Expired: no longer current."}[found.state]
        return format_html('<strong class="memory-standing memory-standing-{}">{}</strong>{}{}', found.state,
                           words, since, link)

    @admin.display(description="candidates against this memory")
    def waiting_candidates(self, obj: MemoryItem):
        rows = [(reverse("admin:memories_candidate_change", args=[c.id]), c.operation.lower(),
                 ", ".join(c.reasons), c.text[:160]) for c in candidates_against(obj)]
        return format_html_join(mark_safe("<br>"), '<a href="{}">{}</a> ({}): {}', rows) if rows else "none"

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
            form = MergeForm(initial={"merged_text": writing.merged_text_of(memories)})
        return TemplateResponse(request, "admin/memories/merge.html", {
            **self.admin_site.each_context(request), "title": "Merge memories", "memories": memories,
            "form": form, "opts": self.model._meta, "action_checkbox_name": helpers.ACTION_CHECKBOX_NAME,
        })

    # ---- forget a user (erasure), behind a confirmation page

    def get_urls(self):
        return [path("forget/", self.admin_site.admin_view(self.forget_view), name="memories_forget_user"),
                *self.correction_urls(),
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
            # The API's own validation (bounds on the query, identifiers, mode): what an agent could not
            # ask, the operator cannot either.
            search = MemorySearchSerializer(data={**{k: v for k, v in asked.items() if v and k != "tenant"},
                                                  "mode": asked["mode"] if asked["mode"] in MODES else "hybrid",
                                                  "limit": 20})
            if not search.is_valid():
                context["error"] = "; ".join(f"{field}: {' '.join(str(m) for m in messages)}"
                                             for field, messages in search.errors.items())
            else:
                query = search.to_query(now=timezone.now())  # the mode's defaults, as the API fills them
                plan = SearchPlan()
                context["results"] = memory_search(tenant=tenant, plan=plan, query=query)
                context["plan"] = plan
                context["agent_context"] = build_context(tenant=tenant, request=ContextRequest(
                    query=query.query, user_id=query.user_id, agent_id=query.agent_id, session_id=query.session_id,
                    group_id=query.group_id))
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
        # The API's spelling of an id (NFKC, invisible characters refused): "ａｌｉｃｅ" typed here is the
        # "alice" the API stored, and erasing the raw spelling would find nothing and report success.
        try:
            user_id = context["user_id"] = normalize_identifier(user_id) if user_id else ""
        except InvalidOperation as exc:
            context["error"], user_id = str(exc), ""
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
