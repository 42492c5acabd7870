"""Trait admin: traits by stage, their evidence and parent chain, confidence
over time, and the operator's dissolve / pin / split — through traits.services."""

from django.contrib import admin, messages
from django.urls import reverse
from django.utils.html import format_html, format_html_join
from django.utils.safestring import mark_safe

from memories.admin import TenantFilter, TenantScopedAdmin, actor_of, shown_time
from memories.errors import InvalidOperation
from traits import selectors, services
from traits.models import Trait, TraitEvidence, TraitStage

ONE_TRAIT = "trait__memory__id__exact"  # the evidence list of one trait (the trait page links to it)


def memory_link(memory_id, text: str):
    return format_html('<a href="{}">{}</a>', reverse("admin:memories_memoryitem_change", args=[memory_id]), text)


@admin.register(Trait)
class TraitAdmin(TenantScopedAdmin):
    tenant_field = "memory__tenant"
    # The first column links to the trait's own page (evidence, timeline); its memory is a link there.
    # Fits 1366 px: confidence with its decayed value, and reinforcements with contradictions, one column each.
    list_display = ("trait_title", "user", "subtype", "stage", "confidence_listed", "context", "evidence_counts",
                    "pinned", "last_reinforced_at")
    list_filter = (TenantFilter, "stage", "subtype", "context", "pinned", "derived_from")
    search_fields = ("memory__text", "=memory__user_id")
    list_select_related = ("memory",)
    ordering = ("-decayed_confidence",)
    actions = ("dissolve_selected", "pin_selected", "unpin_selected")
    readonly_fields = ("trait_text", "user", "subtype", "stage", "confidence_shown", "decayed_shown", "context",
                       "parent_chain", "reinforcement_count", "contradiction_count", "first_observed_at",
                       "last_reinforced_at", "window_start", "window_end", "derived_from", "pinned",
                       "evidence_table", "confidence_over_time")
    fields = readonly_fields

    @admin.display(description="trait")
    def trait_text(self, obj: Trait):
        return memory_link(obj.memory_id, obj.memory.text)

    @admin.display(description="trait", ordering="memory__text")
    def trait_title(self, obj: Trait) -> str:
        return obj.memory.text

    @admin.display(description="confidence", ordering="confidence")
    def confidence_shown(self, obj: Trait) -> str:
        return f"{obj.confidence:.2f}"

    @admin.display(description="confidence (decayed)", ordering="decayed_confidence")
    def confidence_listed(self, obj: Trait) -> str:
        return f"{obj.confidence:.2f} ({obj.decayed_confidence:.2f})"

    @admin.display(description="reinforced / contradicted", ordering="reinforcement_count")
    def evidence_counts(self, obj: Trait) -> str:
        return f"{obj.reinforcement_count} / {obj.contradiction_count}"

    @admin.display(description="decayed confidence", ordering="decayed_confidence")
    def decayed_shown(self, obj: Trait) -> str:
        return f"{obj.decayed_confidence:.2f}"

    @admin.display(description="user")
    def user(self, obj: Trait) -> str:
        return obj.memory.user_id

    @admin.display(description="parent chain")
    def parent_chain(self, obj: Trait):
        chain = selectors.trait_parent_chain(obj)
        return format_html_join(mark_safe(" &rarr; "), '<a href="{}">{}</a> ({}, {})', (
            (reverse("admin:traits_trait_change", args=[p.pk]), p.memory.text, p.subtype, p.stage) for p in chain
        )) if chain else "-"

    @admin.display(description="evidence, by session")
    def evidence_table(self, obj: Trait):
        rows = [(group["session_id"] or "(no session)", e) for group in selectors.trait_evidence_by_session(obj)
                for e in group["evidence"]]
        body = format_html_join("", "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>", (
            (session, shown_time(e.created_at), e.kind + (" (withdrawn)" if e.withdrawn_at else ""), e.quality,
             memory_link(e.memory_id, e.memory.text), e.reason or "-") for session, e in rows))
        split = reverse("admin:traits_traitevidence_changelist") + f"?{ONE_TRAIT}={obj.pk}"
        return format_html('<table class="trait-evidence"><tr><th>session</th><th>when</th><th>kind</th>'
                           "<th>quality</th><th>memory</th><th>why it joined</th></tr>{}</table>"
                           '<p>Pin or dissolve it with the actions of the trait list; <a href="{}">split</a> '
                           "statements that say something else into a trait of their own.</p>", body, split)

    @admin.display(description="confidence over time")
    def confidence_over_time(self, obj: Trait):
        points = selectors.trait_confidence_history(obj)
        return format_html_join(mark_safe("<br>"), "{}: {} (confidence {})", (
            (shown_time(p["at"]), p["stage"], f"{p['confidence']:.2f}" if p["confidence"] is not None else "-")
            for p in points)) or "-"

    def has_change_permission(self, request, obj=None) -> bool:
        return super().has_change_permission(request, obj)  # reviewers may dissolve and pin

    @admin.action(description="Dissolve selected traits", permissions=["change"])
    def dissolve_selected(self, request, queryset):
        count = sum(services.trait_set_stage(trait=t, stage=TraitStage.DISSOLVED, actor=actor_of(request),
                                             reason="dissolved by an operator").stage_changed
                    for t in queryset.select_related("memory"))
        self.message_user(request, f"Dissolved {count} traits.", messages.SUCCESS)

    @admin.action(description="Pin selected traits (no decay, no dissolving)", permissions=["change"])
    def pin_selected(self, request, queryset):
        for trait in queryset.select_related("memory"):
            services.trait_pin(trait=trait, pinned=True, actor=actor_of(request))
        self.message_user(request, f"Pinned {queryset.count()} traits.")

    @admin.action(description="Unpin selected traits", permissions=["change"])
    def unpin_selected(self, request, queryset):
        for trait in queryset.select_related("memory"):
            services.trait_pin(trait=trait, pinned=False, actor=actor_of(request))
        self.message_user(request, f"Unpinned {queryset.count()} traits.")


@admin.register(TraitEvidence)
class TraitEvidenceAdmin(TenantScopedAdmin):
    tenant_field = "memory__tenant"
    list_display = ("trait", "memory", "kind", "quality", "reason", "created_at", "withdrawn_at", "cycle_id")
    list_filter = (TenantFilter, "kind", "quality", "context")
    list_select_related = ("trait__memory", "memory")
    actions = ("split_selected",)

    def lookup_allowed(self, lookup, value, request=None) -> bool:
        return lookup == ONE_TRAIT or super().lookup_allowed(lookup, value, request)

    @admin.action(description="Split the selected statements into a trait of their own")
    def split_selected(self, request, queryset):
        if not request.user.has_perm("traits.change_trait"):
            self.message_user(request, "Nothing split: you may not change traits.", level=messages.ERROR)
            return
        traits = {e.trait_id for e in queryset}
        if len(traits) != 1:
            self.message_user(request, f"Nothing split: choose statements of one trait ({len(traits)} chosen).",
                              level=messages.ERROR)
            return
        trait = Trait.objects.select_related("memory").get(pk=traits.pop())
        try:
            split = services.trait_split(trait=trait, memory_ids=[str(e.memory_id) for e in queryset],
                                         actor=actor_of(request),
                                         reason="statements that say something else")
        except InvalidOperation as exc:
            self.message_user(request, f"Nothing split: {exc}", level=messages.ERROR)
            return
        self.message_user(request, f"Split {queryset.count()} statement(s) into the trait \"{split.memory.text}\".")

    def has_change_permission(self, request, obj=None) -> bool:
        return False
