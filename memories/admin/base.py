"""What every admin page shares: the operator's scope, tenant-scoped model admins, choice filters,
how times and text changes are shown."""

from __future__ import annotations

import difflib

from django.contrib import admin
from django.core.paginator import Paginator
from django.utils import timezone
from django.utils.formats import date_format
from django.utils.functional import cached_property
from django.utils.html import format_html
from django.utils.safestring import mark_safe

from memories.admin.lookups import SafeLookups
from memories.models import (
    Tenant,
)
from memories.permissions import AdminScope, admin_scope

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


# Page titles in the project's words where the model's name is not what a reviewer calls it.
TITLES = {"memoryitem": ("Memories", "Memory"), "candidate": ("Review queue", "Review candidate")}


class ProjectTitles(admin.ModelAdmin):
    """Lists and pages titled by what they hold ("Memories", "Review queue", "Conversation job"), not by
    Django's "Select memory item to change" / "Change candidate"."""

    def titles(self) -> tuple[str, str]:
        meta = self.model._meta
        return TITLES.get(meta.model_name, (str(meta.verbose_name_plural).capitalize(),
                                            str(meta.verbose_name).capitalize()))

    def changelist_view(self, request, extra_context=None):
        return super().changelist_view(request, {"title": self.titles()[0], **(extra_context or {})})

    def changeform_view(self, request, object_id=None, form_url="", extra_context=None):
        title = self.titles()[1] if object_id else f"New {self.titles()[1].lower()}"
        return super().changeform_view(request, object_id, form_url, {"title": title, **(extra_context or {})})


class TenantScopedAdmin(ProjectTitles, SafeLookups):
    """Limits every list, page and action to the operator's tenant; its lists take only safe lookups
    (memories/admin/lookups.py)."""

    tenant_field = "tenant"
    show_full_result_count = False
    paginator = CappedCountPaginator

    def get_queryset(self, request):
        return scoped(super().get_queryset(request), request_scope(request), self.tenant_field)

    def get_list_display(self, request):
        """No tenant column for an operator who sees one tenant: the room goes to the text."""
        shown = super().get_list_display(request)
        return shown if request_scope(request).all_tenants else [name for name in shown if name != "tenant"]

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
