"""The review queue: approve (optionally edited) or reject what the gate held."""

from __future__ import annotations

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.db.models import Case, IntegerField, Value, When
from django.http import Http404, HttpResponseRedirect
from django.urls import path, reverse
from django.utils.html import format_html, format_html_join
from django.utils.safestring import mark_safe

from memories import governance
from memories.admin.base import (
    TenantFilter,
    TenantScopedAdmin,
    actor_of,
    text_diff,
)
from memories.errors import MemoryError_
from memories.models import (
    Candidate,
    CandidateStatus,
    ConversationJob,
)

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
