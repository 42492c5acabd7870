"""A reviewer's corrections on a memory's page (issue 56): reinstate a wrongly retired memory (the memory
that retired it shown, alone or retiring the wrong replacement), say whom a memory is about, split a memory
that joined two facts; and the list's restore and archive actions saying what they did and why not. Every
change is the writer's (memories.writing.corrections) with the reviewer as actor and their reason."""

from __future__ import annotations

from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.http import HttpResponseRedirect
from django.urls import path, reverse
from django.utils.html import format_html, format_html_join
from django.utils.safestring import mark_safe

from memories import writing
from memories.admin.base import TenantScopedAdmin, actor_of
from memories.admin.people import person_label
from memories.errors import ServiceError
from memories.models import MemoryItem, MemoryStatus
from memories.models.people import Person, PersonStatus
from memories.selectors import memory_standing
from memories.text import bulk_summary

LEVELS = {"success": messages.SUCCESS, "warning": messages.WARNING}
# What the list's archive action could not do, worded to take a count (text.bulk_summary).
NOT_ARCHIVED = {"already": ("was archived already", "were archived already")}


def _reason_input(form: str, placeholder: str):
    return format_html('<input type="text" name="reason" form="{}" class="correction-reason" maxlength="500" '
                       'placeholder="{}" aria-label="reason">', form, placeholder)


class MemoryCorrections(TenantScopedAdmin):
    """Mixed into MemoryItemAdmin: the corrections panel (a read-only field whose inputs belong to forms
    outside the change form, as the review cards' do), the views they post to, the honest bulk actions."""

    @admin.display(description="correct")
    def corrections(self, obj: MemoryItem):
        if writing.memory_is_forgotten(obj):
            return "Forgotten at the user's request: nothing to correct."
        found = memory_standing(obj)
        if found.state in writing.RETIRED_STATES:
            return self._reinstate_panel(obj, found.replaced_by)
        if found.state != "current":
            return "Waiting for review or rejected: decide it in the review queue."
        return format_html('<div class="corrections">{}{}</div>', self._subject_panel(obj), self._split_panel(obj))

    def _reinstate_panel(self, obj: MemoryItem, replaced_by):
        replacement = MemoryItem.objects.filter(tenant_id=obj.tenant_id, id=replaced_by).first() if replaced_by \
            else None
        shown = (format_html('<p class="retired-by">Retired by <a href="{}" id="retired-by-link">{}</a> '
                             '<span class="retired-by-state">({})</span></p>',
                             reverse("admin:memories_memoryitem_change", args=[replacement.id]), replacement.text,
                             memory_standing(replacement).state) if replacement
                 else mark_safe('<p class="retired-by">No other memory retired it.</p>'))
        retire = (format_html(
            ' <button type="submit" name="choice" value="{}" form="reinstate-form" id="reinstate-retire-button" '
            'title="the replacement is wrong: archive it">Reinstate and retire the wrong replacement</button>',
            writing.RETIRE_REPLACEMENT)
            if replacement is not None and memory_standing(replacement).state == "current" else "")
        return format_html(
            '<div class="corrections correction-reinstate">{}<div class="correction-row">{} '
            '<button type="submit" name="choice" value="{}" form="reinstate-form" id="restore-button" '
            'class="default" title="the memory holds again; what replaced it stays">Reinstate alone</button>{}'
            '</div></div>', shown, _reason_input("reinstate-form", "why it still holds"), writing.ALONE, retire)

    def _subject_panel(self, obj: MemoryItem):
        people = Person.objects.filter(tenant_id=obj.tenant_id, user_id=obj.user_id,
                                       status=PersonStatus.ACTIVE).order_by("kind", "name", "relation")
        options = format_html_join("", '<option value="{}"{}>{}</option>', (
            (p.id, mark_safe(" selected") if p.id == obj.subject_entity_id else "", f"{person_label(p)} ({p.kind})")
            for p in people))
        if not options:
            return mark_safe('<p class="correction-row">No people known for this user yet.</p>')
        return format_html(
            '<div class="correction-row correction-subject"><label for="subject-person">About</label> '
            '<select name="person_id" id="subject-person" form="subject-form">{}</select> {} '
            '<button type="submit" form="subject-form" id="subject-button">Change whom it is about</button></div>',
            options, _reason_input("subject-form", "why (e.g. it was Ana, not mum)"))

    def _split_panel(self, obj: MemoryItem):
        return format_html(
            '<details class="correction-split"><summary>Split into two memories</summary>'
            '<textarea name="part" form="split-form" rows="2" id="split-first" aria-label="first memory">{}'
            '</textarea><textarea name="part" form="split-form" rows="2" id="split-second" '
            'aria-label="second memory"></textarea><div class="correction-row">{} '
            '<button type="submit" form="split-form" id="split-button">Split</button></div></details>',
            obj.text, _reason_input("split-form", "why (e.g. two facts in one)"))

    # ---- the views the panel posts to

    def _memory_to_correct(self, request, memory_id) -> MemoryItem | None:
        memory = self.get_queryset(request).filter(id=memory_id).first()
        if memory is not None and not self.has_change_permission(request, memory):
            raise PermissionDenied
        return memory if request.method == "POST" else None

    def _back(self, memory_id):
        return HttpResponseRedirect(reverse("admin:memories_memoryitem_change", args=[memory_id]))

    def reinstate_view(self, request, memory_id):
        memory = self._memory_to_correct(request, memory_id)
        if memory is None:
            return HttpResponseRedirect(reverse("admin:memories_memoryitem_changelist"))
        try:
            done = writing.memory_reinstate(tenant=memory.tenant, memory_id=memory.id,
                                            choice=request.POST.get("choice") or writing.ALONE, actor=actor_of(request),
                                            reason=(request.POST.get("reason") or "")[:500])
        except ServiceError as exc:
            self.message_user(request, f"Not restored: {exc}", messages.ERROR)
            return self._back(memory.id)
        retired = (f" The wrong replacement ({done.retired.text[:80]}) is archived."
                   if done.retired is not None else "")
        self.message_user(request, "Restored: the memory is current again." + retired)
        return self._back(memory.id)

    def subject_view(self, request, memory_id):
        memory = self._memory_to_correct(request, memory_id)
        if memory is None:
            return HttpResponseRedirect(reverse("admin:memories_memoryitem_changelist"))
        try:
            writing.memory_set_subject(tenant=memory.tenant, memory_id=memory.id,
                                       person_id=request.POST.get("person_id") or "", actor=actor_of(request),
                                       reason=(request.POST.get("reason") or "")[:500])
            self.message_user(request, "Changed whom the memory is about.")
        except ServiceError as exc:
            self.message_user(request, f"Not changed: {exc}", messages.ERROR)
        return self._back(memory.id)

    def split_view(self, request, memory_id):
        memory = self._memory_to_correct(request, memory_id)
        if memory is None:
            return HttpResponseRedirect(reverse("admin:memories_memoryitem_changelist"))
        try:
            parts = writing.memory_split(tenant=memory.tenant, memory_id=memory.id,
                                         parts=request.POST.getlist("part"), actor=actor_of(request),
                                         reason=(request.POST.get("reason") or "")[:500])
        except ServiceError as exc:
            self.message_user(request, f"Not split: {exc}", messages.ERROR)
            return self._back(memory.id)
        self.message_user(request, f"Split into {len(parts)} memories.")
        return self._back(memory.id)

    def correction_urls(self):
        view = self.admin_site.admin_view
        return [path("<uuid:memory_id>/reinstate/", view(self.reinstate_view), name="memories_memoryitem_reinstate"),
                path("<uuid:memory_id>/restore/", view(self.reinstate_view), name="memories_memoryitem_restore"),
                path("<uuid:memory_id>/subject/", view(self.subject_view), name="memories_memoryitem_subject"),
                path("<uuid:memory_id>/split/", view(self.split_view), name="memories_memoryitem_split")]

    # ---- the list's actions, honest about what they did

    def _say(self, request, done: int, verb: str, why_not: dict[tuple[str, str], int]) -> None:
        text, level = bulk_summary(done=done, verb=verb, why_not=why_not)
        self.message_user(request, text, LEVELS[level])

    @admin.action(description="Restore selected memories", permissions=["change"])
    def restore_selected(self, request, queryset):
        """Reinstate each selected memory alone (archived, invalidated or superseded); say how many were and,
        counted by reason, why the others were not."""
        done, why_not = 0, dict[tuple[str, str], int]()
        for memory in queryset:
            try:
                writing.memory_reinstate(tenant=memory.tenant, memory_id=memory.id, choice=writing.ALONE,
                                         actor=actor_of(request), reason="restored in the admin")
                done += 1
            except ServiceError as exc:
                phrase = writing.not_reinstated_phrase(str(exc))
                why_not[phrase] = why_not.get(phrase, 0) + 1
        self._say(request, done, "restored", why_not)

    @admin.action(description="Archive selected memories", permissions=["change"])
    def archive_selected(self, request, queryset):
        done, why_not = 0, dict[tuple[str, str], int]()
        for memory in queryset:
            try:
                result = writing.memory_set_status(tenant=memory.tenant, memory_id=memory.id,
                                                   status=MemoryStatus.ARCHIVED, actor=actor_of(request),
                                                   reason="archived in the admin")
            except ServiceError as exc:
                phrase = (f"was refused ({exc})", f"were refused ({exc})")
                why_not[phrase] = why_not.get(phrase, 0) + 1
                continue
            if result.operation == "NOOP":
                why_not[NOT_ARCHIVED["already"]] = why_not.get(NOT_ARCHIVED["already"], 0) + 1
            else:
                done += 1
        self._say(request, done, "archived", why_not)
