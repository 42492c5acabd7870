"""The review queue: approve (optionally edited) or reject what the gate held."""

from __future__ import annotations

from contextvars import ContextVar

from django import forms
from django.conf import settings
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.db.models import Case, IntegerField, Q, Value, When
from django.http import Http404, HttpResponseRedirect
from django.urls import path, reverse
from django.utils import timezone
from django.utils.html import format_html, format_html_join
from django.utils.safestring import mark_safe

from memories import erasure, governance
from memories.admin.base import (
    TenantFilter,
    TenantScopedAdmin,
    actor_of,
    text_diff,
)
from memories.errors import ServiceError
from memories.models import (
    Candidate,
    CandidateStatus,
    ConversationJob,
)
from memories.text import bulk_summary

# --------------------------------------------------------------------------- review queue

LAST_DECISION = "review_last_decision"  # the session key of the reviewer's last decision (for Undo)
LAST_TYPED = "review_last_typed"  # what the reviewer typed with that decision: given back by Undo
GIVEN_BACK = "review_given_back"  # what Undo gives back to the candidate's card, shown once
REFUSED = "review_refused"  # the session key of a decision the service refused: shown in that candidate's card
# The refusal being shown while the queue renders (set per request by changelist_view, read by review_card).
_SHOWN_REFUSAL: ContextVar[dict | None] = ContextVar("shown_refusal", default=None)
_GIVEN_BACK: ContextVar[dict | None] = ContextVar("given_back", default=None)  # ... and what Undo gave back
# The list's approve buttons: the decision value and how the service approves sensitive data.
APPROVALS = {"approve": "", "approve_redacted": governance.REDACTED, "approve_as_written": governance.AS_WRITTEN}
CLOSED_BY_FORGET = "Closed: the user asked to forget what it said or the turn it came from; nothing to approve."


def sensitive_named(detail: str) -> str:
    """The kinds of sensitive data that held a candidate, read from its detail ("email", "health; card in
    tags"), "" when none did: the card names them, not just "sensitive". Pure."""
    start = detail.find("sensitive content")
    if start < 0:
        return ""
    tail = detail[start:]
    for end in ("; rejected: ", "; closed: "):
        tail = tail.split(end)[0]
    said = " (in what was said)" if tail.startswith("sensitive content in what was said") else ""
    kinds = tail.split(": ", 1)[1].strip() if ": " in tail else ""
    return (kinds + said) if kinds else ""


def given_back(typed: dict | None, candidate_id: str, text: str) -> tuple[str, str]:
    """What Undo puts back in a candidate's card, as (reason, text): the reason the reviewer had typed and
    their edit of the text, when the undone decision was this card's ("" and the candidate's text
    otherwise). Pure."""
    if not typed or typed.get("id") != candidate_id:
        return "", text
    return typed.get("reason") or "", typed.get("text") or text


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
    # One card per candidate holds what a reviewer reads and decides (the text once, editable in place;
    # the change word by word; the source turn; approve, reject with an optional reason): the list fits
    # a 1366 px screen without scrolling sideways.
    list_display = ("review_card", "reason_list", "submitted_by", "created_at")
    list_display_links = None
    list_filter = (TenantFilter, CandidateStatusFilter, "operation")
    change_list_template = "admin/memories/candidate_change_list.html"

    class Media:
        js = ("memories/review.js",)
    search_fields = ("text", "=user_id")
    list_select_related = ("tenant", "target", "api_key", "job")
    actions = ("approve_selected", "reject_selected")
    readonly_fields = ("status", "operation", "user_id", "memory_type", "confidence", "importance", "reason_list",
                       "reason_detail", "target_memory", "source_messages_view", "submitted_by", "resolved_by",
                       "resolved_at", "result_memory_link", "created_at")
    fields = ("text", *readonly_fields)

    def get_queryset(self, request):
        pending_first = Case(When(status=CandidateStatus.PENDING, then=Value(0)), default=Value(1),
                             output_field=IntegerField())
        return super().get_queryset(request).annotate(pending_first=pending_first).order_by("pending_first",
                                                                                            "created_at", "id")

    @admin.display(description="reasons")
    def reason_list(self, obj: Candidate) -> str:
        kinds = sensitive_named(obj.reason_detail)
        return ", ".join(f"sensitive ({kinds})" if reason == "sensitive" and kinds else reason
                         for reason in obj.reasons)

    @admin.display(description="submitted by")
    def submitted_by(self, obj: Candidate):
        """The key whose request made the candidate, and the conversation job when one did."""
        key = (f"key {obj.api_key_id} ({obj.api_key.name or obj.api_key.prefix}, {obj.api_key.role})"
               if obj.api_key_id and obj.api_key is not None else "the service")
        if not obj.job_id:
            return key
        return format_html('{}<br><a href="{}">conversation job</a>', key,
                           reverse("admin:memories_conversationjob_change", args=[obj.job_id]))

    @admin.display(description="candidate")
    def review_card(self, obj: Candidate):
        """The candidate as a reviewer decides on it: its text once (a multi-line box while pending), what
        it would change word by word, the turn it came from, and the decision buttons."""
        kinds = sensitive_named(obj.reason_detail)
        meta = format_html('<div class="review-meta"><a href="{}">{}</a> &middot; user <b>{}</b> &middot; {} '
                           '&middot; confidence {}{}</div>',
                           reverse("admin:memories_candidate_change", args=[obj.id]), obj.operation.lower(),
                           obj.user_id, obj.tenant.name, f"{obj.confidence:.2f}",
                           format_html(' &middot; <strong class="review-sensitive">sensitive: {}</strong>', kinds)
                           if kinds else "")
        form = f"review-{obj.id}"
        if obj.status == CandidateStatus.PENDING:
            reason, shown = given_back(_GIVEN_BACK.get(), str(obj.id), obj.text)
            rows = min(6, max(2, len(shown) // 70 + 1))  # the whole text in view, not a sliver of it
            text = format_html('<textarea name="text" form="{}" class="review-text" rows="{}" '
                               'aria-label="text to approve">{}</textarea>', form, rows, shown)
            sensitive = "sensitive" in obj.reasons
            extra = format_html(
                ' <button type="submit" name="decision" value="approve_redacted" form="{}" '
                'class="review-approve-redacted">Approve redacted</button> '
                '<button type="submit" name="decision" value="approve_as_written" form="{}" '
                'class="review-approve-as-written" title="keeps the sensitive data; give the reason">'
                'Approve as written</button>', form, form) if sensitive else ""
            buttons = format_html(
                '<div class="review-buttons">'
                '<button type="submit" name="decision" value="approve" form="{}" class="review-approve">Approve'
                '</button>{} <input type="text" name="reason" form="{}" class="review-reason" '
                'placeholder="{}" aria-label="reason" value="{}"> '
                '<button type="submit" name="decision" value="reject" form="{}" class="review-reject">Reject'
                '</button></div>', form, extra, form,
                "reason: to reject, or to keep it as written" if sensitive else "reason to reject (optional)",
                reason, form)
            refused = _SHOWN_REFUSAL.get()
            if refused and refused.get("id") == str(obj.id):
                buttons = format_html('<div class="review-refusal errornote" role="alert">Not applied: {}</div>{}',
                                      refused["message"], buttons)
        else:
            text = format_html('<div class="review-decided">{} <span class="review-status">({})</span></div>',
                               obj.text, obj.status)
            buttons = (format_html('<div class="review-closed">{}</div>', CLOSED_BY_FORGET)
                       if obj.resolved_by == erasure.FORGOTTEN_BY else mark_safe(""))
        change = (format_html('<div class="review-change">would change: <span class="review-diff">{}</span></div>',
                              text_diff(obj.target.text, obj.text)) if obj.target else "")
        return format_html('<div class="review-card" id="candidate-{}" tabindex="-1">{}{}{}{}{}</div>', obj.id,
                           meta, text, change, self._source_turn(obj), buttons)

    def _source_turn(self, obj: Candidate):
        job = obj.job if obj.job_id else None
        if job is None or not obj.source_messages or not 0 <= obj.source_messages[0] < len(job.messages):
            return ""
        message = job.messages[obj.source_messages[0]]
        content = message["content"] if len(message["content"]) <= 300 else message["content"][:297] + "..."
        return format_html('<div class="review-source">said: <b>{}</b>: {}</div>',
                           message.get("name") or message["role"], content)

    def get_urls(self):
        return [path("<uuid:candidate_id>/decide/", self.admin_site.admin_view(self.decide_view),
                     name="memories_candidate_decide"),
                path("<uuid:candidate_id>/undo/", self.admin_site.admin_view(self.undo_view),
                     name="memories_candidate_undo"), *super().get_urls()]

    def changelist_view(self, request, extra_context=None):
        """The queue, with an Undo button for this reviewer's last decision while it can be undone."""
        token = _SHOWN_REFUSAL.set(request.session.pop(REFUSED, None))
        given = _GIVEN_BACK.set(request.session.pop(GIVEN_BACK, None))
        try:
            response = super().changelist_view(request, {**(extra_context or {}), "undo": self._undoable(request)})
            if hasattr(response, "render"):
                response.render()  # while the refusal is set: the card that was refused shows why
            return response
        finally:
            _GIVEN_BACK.reset(given)
            _SHOWN_REFUSAL.reset(token)

    def _undoable(self, request) -> Candidate | None:
        last = request.session.get(LAST_DECISION)
        candidate = self.get_queryset(request).filter(id=last).first() if last else None
        if candidate is None or governance.undo_refusal(candidate=candidate, actor=actor_of(request),
                                                        now=timezone.now(),
                                                        window_seconds=settings.REVIEW_UNDO_SECONDS):
            return None
        return candidate

    def _next_in_queue(self, request, candidate: Candidate) -> Candidate | None:
        """The pending candidate after this one in the queue's order: where the reviewer goes next."""
        return (self.get_queryset(request).filter(status=CandidateStatus.PENDING)
                .filter(Q(created_at__gt=candidate.created_at) | Q(created_at=candidate.created_at,
                                                                     id__gt=candidate.id))
                .first())

    def _candidate_to_change(self, request, candidate_id) -> Candidate:
        """The candidate a list button acts on: in this operator's scope (else 404) and theirs to change."""
        candidate = self.get_queryset(request).filter(id=candidate_id).first()
        if candidate is None:
            raise Http404("no such candidate")
        if not self.has_change_permission(request, candidate):
            raise PermissionDenied
        return candidate

    def decide_view(self, request, candidate_id):
        """One decision from the list: approve (with the row's text, if edited) or reject (with the row's
        reason, if given); back to the list, on the next row."""
        if request.method != "POST":
            return HttpResponseRedirect(reverse("admin:memories_candidate_changelist"))
        candidate = self._candidate_to_change(request, candidate_id)
        decision, text = request.POST.get("decision"), (request.POST.get("text") or "").strip()
        following = self._next_in_queue(request, candidate)
        reason = (request.POST.get("reason") or "").strip()[:500]
        try:
            if decision in APPROVALS:
                governance.candidate_approve(tenant=candidate.tenant, candidate_id=candidate.id,
                                             actor=actor_of(request),
                                             edited_text=text if text and text != candidate.text else None,
                                             sensitive=APPROVALS[decision], sensitive_reason=reason)
                how = {"approve_redacted": ", redacted", "approve_as_written": f", as written: {reason}"}
                self.message_user(request, "Candidate approved" + how.get(decision, "") + (
                    " with your edit." if text and text != candidate.text else "."))
                request.session[LAST_DECISION] = str(candidate.id)
                request.session[LAST_TYPED] = {"id": str(candidate.id), "reason": reason,
                                               "text": text if text != candidate.text else ""}
            elif decision == "reject":
                governance.candidate_reject(tenant=candidate.tenant, candidate_id=candidate.id,
                                            actor=actor_of(request), reason=reason)
                self.message_user(request, "Candidate rejected" + (f": {reason}" if reason else "."))
                request.session[LAST_DECISION] = str(candidate.id)
                request.session[LAST_TYPED] = {"id": str(candidate.id), "reason": reason,
                                               "text": text if text != candidate.text else ""}
            else:
                self.message_user(request, "Choose approve or reject.", messages.ERROR)
                following = candidate
        except ServiceError as exc:
            self.message_user(request, f"Not applied: {exc}", messages.ERROR)
            request.session[REFUSED] = {"id": str(candidate.id), "message": str(exc)}  # and in its card
            following = candidate
        back = request.POST.get("next") or ""
        listed = reverse("admin:memories_candidate_changelist")
        target = back if back.startswith(listed) else listed
        return HttpResponseRedirect(target + (f"#candidate-{following.id}" if following is not None else ""))

    def undo_view(self, request, candidate_id):
        """Undo this reviewer's last decision (REVIEW_UNDO_SECONDS); the candidate waits in the queue again."""
        if request.method != "POST":
            return HttpResponseRedirect(reverse("admin:memories_candidate_changelist"))
        candidate = self._candidate_to_change(request, candidate_id)
        try:
            governance.candidate_undo(tenant=candidate.tenant, candidate_id=candidate.id, actor=actor_of(request))
            self.log_change(request, candidate, f"Undid the {candidate.status} decision; back in the queue.")
            typed = request.session.pop(LAST_TYPED, None)
            self.message_user(request, "Decision undone: the candidate is back in the queue" + (
                ", with the reason you typed." if given_back(typed, str(candidate.id), "")[0] else "."))
            request.session.pop(LAST_DECISION, None)
            request.session[GIVEN_BACK] = typed
        except ServiceError as exc:
            self.message_user(request, f"Not undone: {exc}", messages.ERROR)
        return HttpResponseRedirect(reverse("admin:memories_candidate_changelist") + f"#candidate-{candidate.id}")

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
        except ServiceError as exc:
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
        """Decide each selected pending candidate; say how many were and, counted by reason, why not."""
        done, why_not = 0, dict[tuple[str, str], int]()
        for candidate in queryset:
            if candidate.status != CandidateStatus.PENDING:
                phrase = ("was decided already", "were decided already")
                why_not[phrase] = why_not.get(phrase, 0) + 1
                continue
            try:
                decide(tenant=candidate.tenant, candidate_id=candidate.id, actor=actor_of(request))
                done += 1
            except ServiceError as exc:
                phrase = (f"was refused ({exc})", f"were refused ({exc})")
                why_not[phrase] = why_not.get(phrase, 0) + 1
        said, level = bulk_summary(done=done, verb=verb.lower(),
                                   why_not=why_not)
        self.message_user(request, said, messages.SUCCESS if level == "success" else messages.WARNING)

    @admin.action(description="Approve selected candidates", permissions=["change"])
    def approve_selected(self, request, queryset):
        self._decide(request, queryset, governance.candidate_approve, "Approved")

    @admin.action(description="Reject selected candidates", permissions=["change"])
    def reject_selected(self, request, queryset):
        self._decide(request, queryset, governance.candidate_reject, "Rejected")
