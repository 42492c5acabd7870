"""People in the admin: the entities of each user (memories.models.people), their aliases, edges over time,
the memories about them and their history; a reviewer merges two entries that are one person, splits a
wrong merge, corrects a relation and retracts an edge that was never true.

Pages are read-only: every change is a versioned change through memories.people.graph (person_merge,
person_split, person_relation_correct, edge_retract) with the operator as actor and a reason, asked on a
confirmation page. People are governed with the memories they come from: an operator who may view (change)
memories may view (govern) people.
"""

from __future__ import annotations

from contextvars import ContextVar
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.core.exceptions import PermissionDenied
from django.db.models import F, Q
from django.http import Http404, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.dateparse import parse_datetime
from django.utils.html import format_html, format_html_join
from django.utils.safestring import mark_safe

from memories.admin.base import ChoiceListFilter, TenantFilter, TenantScopedAdmin, actor_of, shown_time
from memories.errors import ServiceError
from memories.models import (
    EdgePredicate,
    MemoryItem,
    Person,
    PersonAlias,
    PersonEdge,
    PersonEvent,
    PersonHistory,
    PersonKind,
    PersonStatus,
)
from memories.people import graph
from memories.people.selectors import person_label
from memories.relations import RELATION_WORDS
from memories.text import counted

RELATION_CODES = [*RELATION_WORDS, "other"]
MEMORIES_SHOWN = 100  # the memories about one person listed on their page
ACTION_TEMPLATE = "admin/memories/person_action.html"
MOVED = ("aliases", "edges_out", "edges_in", "memories")  # what a MERGE row records as moved (ids)
PEOPLE_KEYS = ("into", "from", "split_off")  # the other entity a MERGE or SPLIT row names
# Whether the page being rendered may offer the change links (set per request by change_view).
_MAY_CHANGE: ContextVar[bool] = ContextVar("people_may_change", default=False)


def person_link(person: Person | None) -> str:
    if person is None:
        return "-"
    return format_html('<a href="{}">{}</a>', reverse("admin:memories_person_change", args=[person.id]),
                       person_label(person))


class ReasonForm(forms.Form):
    reason = forms.CharField(max_length=500, widget=forms.TextInput(attrs={"size": 80}),
                             help_text="Kept in the person's history with your name.")


class RelationForm(ReasonForm):
    relation = forms.ChoiceField(choices=[(code, code.replace("_", " ")) for code in RELATION_CODES])
    word = forms.CharField(required=False, max_length=64,
                           help_text="The user's own word for it (mum, 婆婆); empty: the relation itself.")

    field_order = ("relation", "word", "reason")


class GovernedWithMemories:
    """View and change permissions follow the memories' (people are read from and written with them); the
    change page is read-only: changes are the list's actions and the page's links, each confirmed."""

    def _may_change(self, request) -> bool:
        return (super().has_change_permission(request)  # type: ignore[misc]
                or request.user.has_perm("memories.change_memoryitem"))

    def has_view_permission(self, request, obj=None) -> bool:
        return (super().has_view_permission(request, obj)  # type: ignore[misc]
                or request.user.has_perm("memories.view_memoryitem") or self._may_change(request))

    def has_change_permission(self, request, obj=None) -> bool:
        return obj is None and self._may_change(request)  # the actions; never a form save on a page

    def _each(self, request, items, change, *, named, failed: str) -> int:
        """Apply one graph change to each item, an error message per refusal; how many were changed."""
        done = 0
        for item in items:
            try:
                change(item)
                done += 1
            except ServiceError as exc:
                self.message_user(request, f"{named(item)}: {failed}: {exc}", messages.ERROR)  # type: ignore[attr-defined]
        return done

    def _confirm(self, request, *, title: str, explanation: str, action: str, rows, headers, form,
                 submit: str, cancel: str):
        """The confirmation page of an action: what it acts on, the form (a reason at least), one button."""
        return TemplateResponse(request, ACTION_TEMPLATE, {
            **self.admin_site.each_context(request),  # type: ignore[attr-defined]
            "title": title, "explanation": explanation, "action": action, "headers": headers, "rows": rows,
            "selected": [row["pk"] for row in rows], "form": form, "submit": submit, "cancel_url": cancel,
            "post_url": reverse(f"admin:memories_{self.model._meta.model_name}_changelist"),  # type: ignore[attr-defined]
            "opts": self.model._meta, "action_checkbox_name": helpers.ACTION_CHECKBOX_NAME,  # type: ignore[attr-defined]
        })


# --------------------------------------------------------------------------- people


class RelationFilter(ChoiceListFilter):
    title = "relation"
    parameter_name = "relation"

    def lookups(self, request, model_admin):
        """The relations the operator's people have (in the vocabulary's order), and none."""
        present = set(model_admin.get_queryset(request).values_list("relation", flat=True).order_by().distinct())
        return [(code, code.replace("_", " ")) for code in RELATION_CODES if code in present] + [("none", "none")]

    def queryset(self, request, queryset):
        if not self.value():
            return queryset
        return queryset.filter(relation="" if self.value() == "none" else self.value())


class MaybeSameFilter(ChoiceListFilter):
    title = "to review"
    parameter_name = "maybe_same"

    def lookups(self, request, model_admin):
        return [("yes", "maybe the same as another")]

    def queryset(self, request, queryset):
        if self.value() != "yes":
            return queryset
        return queryset.filter(maybe_same_as__isnull=False, maybe_same_as__status=PersonStatus.ACTIVE,
                               status=PersonStatus.ACTIVE)


@admin.register(Person)
class PersonAdmin(GovernedWithMemories, TenantScopedAdmin):
    list_display = ("label", "kind", "relation", "relation_word", "user_id", "status", "version",
                    "last_mentioned_at")
    list_filter = (TenantFilter, "kind", "status", RelationFilter, MaybeSameFilter)
    search_fields = ("name", "aliases__alias", "relation_word", "=user_id")
    ordering = (F("last_mentioned_at").desc(nulls_last=True), "-created_at")
    actions = ("merge_selected", "split_selected", "correct_relation")
    readonly_fields = ("label", "kind", "relation", "relation_word", "user_id", "tenant", "status", "merged",
                       "maybe_same", "version", "id", "created_at", "updated_at", "last_mentioned_at", "alias_list",
                       "change_links", "memories_about", "current_edges", "past_edges", "history_timeline")
    fieldsets = (
        (None, {"fields": ("label", "kind", "relation", "relation_word", "user_id", "status", "merged",
                           "maybe_same", "alias_list", "change_links")}),
        ("Memories about this person", {"fields": ("memories_about",)}),
        ("Current edges", {"fields": ("current_edges",)}),
        ("Past edges (ended or retracted)", {"fields": ("past_edges",)}),
        ("History", {"fields": ("history_timeline",)}),
        ("Record", {"classes": ("collapse",),
                    "fields": ("id", "tenant", "version", "created_at", "updated_at", "last_mentioned_at")}),
    )
    HEADERS = ("person", "kind", "relation", "user", "status", "aliases", "")  # an action's confirmation page

    @admin.display(description="person", ordering="name")
    def label(self, obj: Person) -> str:
        return person_label(obj)

    @admin.display(description="aliases")
    def alias_list(self, obj: Person) -> str:
        return ", ".join(sorted(obj.aliases.values_list("alias", flat=True))) or "-"

    @admin.display(description="merged")
    def merged(self, obj: Person):
        """Into whom this entry was merged, or who was merged into it (either can be split off again)."""
        if obj.status == PersonStatus.MERGED and obj.merged_into_id:
            return format_html("into {}", person_link(obj.merged_into))
        folded = Person.objects.filter(merged_into=obj, status=PersonStatus.MERGED).order_by("created_at")
        return format_html_join(", ", "{}", ((person_link(p),) for p in folded)) if folded else "-"

    @admin.display(description="maybe the same as")
    def maybe_same(self, obj: Person):
        """Someone known by the same name under another relation when this entry was made: kept apart until
        a reviewer merges the two (or leaves them)."""
        other = obj.maybe_same_as
        return format_html("{} (merge them if they are one person)", person_link(other)) if other else "-"

    @admin.display(description="change")
    def change_links(self, obj: Person):
        if not _MAY_CHANGE.get():
            return "-"
        links = []
        if obj.kind != PersonKind.USER and obj.status == PersonStatus.ACTIVE:
            links.append(format_html('<a class="button" id="person-correct-relation" href="{}">Correct relation'
                                     "</a>", reverse("admin:memories_person_relation", args=[obj.id])))
        if obj.status == PersonStatus.MERGED:
            links.append(format_html('<a class="button" id="person-split" href="{}">Split off</a>',
                                     reverse("admin:memories_person_split", args=[obj.id])))
        return format_html_join(" ", "{}", ((link,) for link in links)) if links else "-"

    @admin.display(description="memories")
    def memories_about(self, obj: Person):
        """The memories that name this person as their subject (or object): current ones first."""
        rows = (MemoryItem.objects.filter(Q(subject_entity=obj) | Q(object_entity=obj), tenant_id=obj.tenant_id)
                .order_by(F("expired_at").desc(nulls_first=True), "-created_at")[:MEMORIES_SHOWN])
        body = format_html_join("", '<tr class="person-memory"><td><a href="{}">{}</a></td><td>{}</td><td>{}</td>'
                                    "<td>{}</td><td>{}</td><td>{}</td></tr>", (
            (reverse("admin:memories_memoryitem_change", args=[m.id]), m.text,
             "subject" if m.subject_entity_id == obj.id else "object", m.memory_type,
             m.status if m.expired_at is None else f"{m.status}, expired", m.version, shown_time(m.created_at))
            for m in rows))
        if not body:
            return "none"
        return format_html('<table class="person-memories"><thead><tr><th>memory</th><th>as</th><th>type</th>'
                           "<th>status</th><th>version</th><th>created</th></tr></thead><tbody>{}</tbody></table>",
                           body)

    def _edges(self, obj: Person, *, current: bool):
        edges = PersonEdge.objects.filter(Q(source=obj) | Q(target=obj), tenant_id=obj.tenant_id).select_related(
            "source", "target")
        held = Q(invalid_at__isnull=True, expired_at__isnull=True)
        edges = edges.filter(held) if current else edges.exclude(held)
        return edges.order_by("predicate", F("valid_at").asc(nulls_first=True), "created_at")

    def _edge_table(self, obj: Person, *, current: bool):
        rows = []
        for edge in self._edges(obj, current=current):
            retract = (format_html('<a href="{}" class="edge-retract">retract</a>',
                                   reverse("admin:memories_personedge_retract", args=[edge.id]))
                       if current and _MAY_CHANGE.get() else "")
            memory = (format_html('<a href="{}">memory</a>', reverse("admin:memories_memoryitem_change",
                                                                     args=[edge.memory_id]))
                      if edge.memory_id else "-")
            rows.append((edge_words(edge), shown_time(edge.valid_at), shown_time(edge.invalid_at),
                         shown_time(edge.created_at), edge.actor, shown_time(edge.expired_at), edge.reason or "-",
                         memory, retract))
        if not rows:
            return "none"
        body = format_html_join("", '<tr class="person-edge"><td>{}</td><td>{}</td><td>{}</td><td>{}<br>by {}</td>'
                                    "<td>{}</td><td>{}</td><td>{} {}</td></tr>", rows)
        return format_html('<table class="person-edges"><thead><tr><th>edge</th><th>valid from</th>'
                           "<th>valid until</th><th>recorded</th><th>retracted</th><th>reason</th><th>said in</th>"
                           "</tr></thead><tbody>{}</tbody></table>", body)

    @admin.display(description="edges holding now")
    def current_edges(self, obj: Person):
        return self._edge_table(obj, current=True)

    @admin.display(description="edges that ended (valid until) or were taken back (retracted)")
    def past_edges(self, obj: Person):
        return self._edge_table(obj, current=False)

    @admin.display(description="timeline")
    def history_timeline(self, obj: Person):
        rows = PersonHistory.objects.filter(tenant_id=obj.tenant_id, person_id=obj.id).order_by("created_at", "id")
        body = format_html_join(
            "", '<tr class="history-row"><td>{}</td><td><b>{}</b></td><td>{}</td><td>{}</td><td>{}</td></tr>',
            ((shown_time(h.created_at), h.event, h.actor, data_change(h), h.reason or "-") for h in rows))
        return format_html('<table class="history-timeline person-history"><thead><tr><th>when</th><th>event</th>'
                           "<th>actor</th><th>change</th><th>reason</th></tr></thead><tbody>{}</tbody></table>",
                           body)

    # ---- the page: read-only, with links to the confirmed changes

    def change_view(self, request, object_id, form_url="", extra_context=None):
        token = _MAY_CHANGE.set(self._may_change(request))
        try:
            response = super().change_view(request, object_id, form_url, extra_context)
            if hasattr(response, "render"):
                response.render()  # while the flag is set: the change links are drawn for who may use them
            return response
        finally:
            _MAY_CHANGE.reset(token)

    def get_urls(self):
        return [path("<uuid:person_id>/relation/", self.admin_site.admin_view(self.relation_view),
                     name="memories_person_relation"),
                path("<uuid:person_id>/split/", self.admin_site.admin_view(self.split_view),
                     name="memories_person_split"), *super().get_urls()]

    def _one(self, request, person_id):
        """One person of this operator's scope (else 404) as the queryset an action takes."""
        if not self._may_change(request):
            raise PermissionDenied
        queryset = self.get_queryset(request).filter(id=person_id)
        if not queryset.exists():
            raise Http404("no such person")
        return queryset

    def relation_view(self, request, person_id):
        return self.correct_relation(request, self._one(request, person_id))

    def split_view(self, request, person_id):
        return self.split_selected(request, self._one(request, person_id))

    # ---- the actions

    def _rows(self, people: list[Person], note=lambda person: "") -> list[dict[str, Any]]:
        aliases: dict[Any, list[str]] = {}
        for person_id, alias in PersonAlias.objects.filter(
                person__in=people).values_list("person_id", "alias"):
            aliases.setdefault(person_id, []).append(alias)
        return [{"pk": p.pk, "cells": [person_link(p), p.kind, p.relation or "-", p.user_id, p.status,
                                       ", ".join(sorted(aliases.get(p.id, []))) or "-", note(p)]}
                for p in people]

    def _back(self, people: list[Person]) -> str:
        return (reverse("admin:memories_person_change", args=[people[0].id]) if len(people) == 1
                else reverse("admin:memories_person_changelist"))

    @admin.action(description="Merge selected people into the first one", permissions=["change"])
    def merge_selected(self, request, queryset):
        people = list(queryset.select_related("tenant"))
        if len(people) < 2:
            self.message_user(request, "Select at least two people to merge.", messages.ERROR)
            return None
        if len({(p.tenant_id, p.user_id) for p in people}) > 1:
            self.message_user(request, "People of different users or tenants cannot be merged.", messages.ERROR)
            return None
        keep, others = people[0], people[1:]
        form = ReasonForm(request.POST if "apply" in request.POST else None)
        if form.is_valid():
            merged = 0
            for other in others:
                try:
                    graph.person_merge(keep.tenant, keep.id, other.id, actor=actor_of(request),
                                       reason=form.cleaned_data["reason"])
                    merged += 1
                except ServiceError as exc:
                    self.message_user(request, f"{person_label(other)} not merged: {exc}", messages.ERROR)
            if merged:
                self.message_user(request, f"Merged {counted(merged, 'people') if merged > 1 else '1 person'} "
                                           f"into {person_label(keep)}.")
            return HttpResponseRedirect(reverse("admin:memories_person_change", args=[keep.id]))
        return self._confirm(
            request, title=f"Merge {len(people)} people of {keep.user_id}", action="merge_selected",
            explanation=(f"The others' aliases, edges and memories move to {person_label(keep)}, who is kept; "
                         "each merged entry stays (status merged) and can be split off again."),
            rows=self._rows(people, lambda p: "kept" if p.id == keep.id else "merged into the first"),
            headers=self.HEADERS, form=form, submit=f"Merge into {person_label(keep)}",
            cancel=reverse("admin:memories_person_changelist"))

    @admin.action(description="Split off from the person they were merged into", permissions=["change"])
    def split_selected(self, request, queryset):
        people = list(queryset.select_related("tenant", "merged_into"))
        merged = [p for p in people if p.status == PersonStatus.MERGED and p.merged_into_id]
        for person in people:
            if person not in merged:
                self.message_user(request, f"{person_label(person)} was not merged into anyone: nothing to split.",
                                  messages.ERROR)
        if not merged:
            return None
        form = ReasonForm(request.POST if "apply" in request.POST else None)
        if form.is_valid():
            done = self._each(request, merged, lambda person: graph.person_split(
                person.tenant, person.id, actor=actor_of(request), reason=form.cleaned_data["reason"]),
                named=person_label, failed="not split")
            if done:
                self.message_user(request, f"Split off {counted(done, 'people') if done > 1 else '1 person'}: "
                                           "what moved in the merge is back.")
            return HttpResponseRedirect(self._back(merged))
        return self._confirm(
            request, title=f"Split off {len(merged)} merged {'person' if len(merged) == 1 else 'people'}",
            action="split_selected",
            explanation="Each is active again, and the aliases, edges and memories that moved in its merge move back.",
            rows=self._rows(merged, lambda p: format_html("merged into {}", person_link(p.merged_into))),
            headers=self.HEADERS, form=form, submit="Split off", cancel=self._back(merged))

    @admin.action(description="Correct relation", permissions=["change"])
    def correct_relation(self, request, queryset):
        people = list(queryset.select_related("tenant"))
        fit = [p for p in people if p.kind != PersonKind.USER and p.status == PersonStatus.ACTIVE]
        for person in people:
            if person not in fit:
                self.message_user(request, f"{person_label(person)}: " + (
                    "the user has no relation to themself." if person.kind == PersonKind.USER
                    else "merged: correct the person it was merged into."), messages.ERROR)
        if not fit:
            return None
        initial = {"relation": fit[0].relation} if fit[0].relation in RELATION_CODES else {}
        form = RelationForm(request.POST if "apply" in request.POST else None, initial=initial)
        if form.is_valid():
            done = self._each(request, fit, lambda person: graph.person_relation_correct(
                person.tenant, person.id, form.cleaned_data["relation"], actor=actor_of(request),
                reason=form.cleaned_data["reason"], word=form.cleaned_data["word"]),
                named=person_label, failed="not corrected")
            if done:
                self.message_user(request, f"Relation corrected to {form.cleaned_data['relation']} for "
                                           f"{counted(done, 'people') if done > 1 else '1 person'}.")
            return HttpResponseRedirect(self._back(fit))
        return self._confirm(
            request, title="Correct the relation", action="correct_relation",
            explanation="The current relation edge ends now and the corrected one starts; the change is kept in "
                        "the person's history.",
            rows=self._rows(fit), headers=self.HEADERS, form=form, submit="Correct relation",
            cancel=self._back(fit))


# --------------------------------------------------------------------------- edges


def edge_words(edge: PersonEdge):
    """An edge as a sentence, read the same from either end: "Sheila lives in York", "Sheila is alice's
    mother"."""
    if edge.predicate == EdgePredicate.RELATION:
        return format_html("{} is {}&rsquo;s {}", person_link(edge.target), person_link(edge.source),
                           edge.value.replace("_", " "))
    return format_html("{} {} {}", person_link(edge.source), edge.predicate.replace("_", " "),
                       person_link(edge.target) if edge.target_id else edge.value)


class EdgeStateFilter(ChoiceListFilter):
    title = "state"
    parameter_name = "state"

    def lookups(self, request, model_admin):
        return [("current", "holds now"), ("ended", "ended (valid until)"), ("retracted", "retracted")]

    def queryset(self, request, queryset):
        return {"current": lambda: queryset.filter(invalid_at__isnull=True, expired_at__isnull=True),
                "ended": lambda: queryset.filter(invalid_at__isnull=False, expired_at__isnull=True),
                "retracted": lambda: queryset.filter(expired_at__isnull=False),
                None: lambda: queryset}[self.value()]()


@admin.register(PersonEdge)
class PersonEdgeAdmin(GovernedWithMemories, TenantScopedAdmin):
    list_display = ("edge", "user_id", "valid_at", "invalid_at", "expired_at", "actor")
    list_filter = (TenantFilter, "predicate", EdgeStateFilter)
    search_fields = ("value", "source__name", "=user_id")
    list_select_related = ("source", "target")
    ordering = ("-created_at",)
    actions = ("retract_selected",)
    readonly_fields = ("edge", "source_link", "predicate", "value", "target_link", "memory_link", "user_id",
                       "tenant", "valid_at", "invalid_at", "created_at", "expired_at", "actor", "reason", "id")
    fields = readonly_fields

    @admin.display(description="edge")
    def edge(self, obj: PersonEdge) -> str:
        return edge_words(obj)

    @admin.display(description="source")
    def source_link(self, obj: PersonEdge) -> str:
        return person_link(obj.source)

    @admin.display(description="target")
    def target_link(self, obj: PersonEdge) -> str:
        return person_link(obj.target)

    @admin.display(description="said in")
    def memory_link(self, obj: PersonEdge):
        if not obj.memory_id:
            return "-"
        return format_html('<a href="{}">{}</a>', reverse("admin:memories_memoryitem_change", args=[obj.memory_id]),
                           MemoryItem.objects.filter(id=obj.memory_id).values_list("text", flat=True).first()
                           or obj.memory_id)

    def get_urls(self):
        return [path("<uuid:edge_id>/retract/", self.admin_site.admin_view(self.retract_view),
                     name="memories_personedge_retract"), *super().get_urls()]

    def retract_view(self, request, edge_id):
        if not self._may_change(request):
            raise PermissionDenied
        queryset = self.get_queryset(request).filter(id=edge_id)
        if not queryset.exists():
            raise Http404("no such edge")
        return self.retract_selected(request, queryset)

    @admin.action(description="Retract edge", permissions=["change"])
    def retract_selected(self, request, queryset):
        edges = list(queryset.select_related("tenant", "source", "target"))
        held = [e for e in edges if e.expired_at is None]
        for edge in edges:
            if edge not in held:
                self.message_user(request, f"{edge.id}: already retracted.", messages.ERROR)
        if not held:
            return None
        back = reverse("admin:memories_personedge_changelist")
        if len(held) == 1:  # back to the person the edge is about (a relation edge: its target)
            about = held[0].target_id if held[0].predicate == EdgePredicate.RELATION else held[0].source_id
            back = reverse("admin:memories_person_change", args=[about or held[0].source_id])
        form = ReasonForm(request.POST if "apply" in request.POST else None)
        if form.is_valid():
            done = self._each(request, held, lambda edge: graph.edge_retract(
                edge.tenant, edge.id, actor=actor_of(request), reason=form.cleaned_data["reason"]),
                named=lambda edge: str(edge.id), failed="not retracted")
            if done:
                self.message_user(request, f"Retracted {counted(done, 'edges') if done > 1 else '1 edge'}: "
                                           "kept as history, no longer believed.")
            return HttpResponseRedirect(back)
        rows = [{"pk": e.pk, "cells": [edge_words(e), shown_time(e.valid_at), shown_time(e.invalid_at), e.user_id,
                                       e.reason or "-"]} for e in held]
        return self._confirm(
            request, title=f"Retract {counted(len(held), 'edges') if len(held) > 1 else 'an edge'}",
            action="retract_selected",
            explanation="A retracted edge was never true: it stops being believed now (retracted) and stays as "
                        "history. An edge that held and then changed ends instead, when the user says so.",
            rows=rows, headers=("edge", "valid from", "valid until", "user", "reason"), form=form,
            submit="Retract", cancel=back)


# --------------------------------------------------------------------------- history rows as words


def data_change(row: PersonHistory):
    """What a history row changed, field by field ("relation: mother → aunt"), what it set, and on a merge
    how much moved; times in the admin's format, the people it names as links."""
    old, new = row.old_data or {}, row.new_data or {}
    named = {str(p.id): p for p in Person.objects.filter(tenant_id=row.tenant_id, id__in=[
        value for key, value in new.items() if key in PEOPLE_KEYS and isinstance(value, str)])}
    parts = []
    for key in dict.fromkeys([*old, *new]):
        if key == "edge":
            continue  # the edge's id: its predicate and value say which
        before, after = old.get(key), new.get(key)
        if row.event == PersonEvent.MERGE and key in MOVED and isinstance(after, list):
            parts.append(format_html("{} moved: {}", key.replace("_", " "), len(after)))
        elif key in PEOPLE_KEYS and after in named:
            parts.append(format_html("{}: {}", key.replace("_", " "), person_link(named[after])))
        elif key in old and key in new:
            if before != after:
                parts.append(format_html("{}: {} &rarr; {}", key, _shown(key, before), _shown(key, after)))
        elif key in new:
            parts.append(format_html("{}: {}", key, _shown(key, after)))
        else:
            parts.append(format_html("{} was {}", key, _shown(key, before)))
    return format_html_join(mark_safe("; "), "{}", ((p,) for p in parts)) if parts else "-"


def _shown(key: str, value) -> str:
    if value in (None, "", []):
        return "-"
    if key.endswith("_at") and isinstance(value, str) and (at := parse_datetime(value)) is not None:
        return shown_time(at)
    if isinstance(value, list):
        value = ", ".join(str(v) for v in value)
    text = str(value)
    return text if len(text) <= 120 else text[:117] + "..."
