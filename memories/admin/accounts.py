"""Tenants, API keys, operator scopes, users and groups: for unscoped superusers only."""

from __future__ import annotations

from django import forms
from django.contrib import admin, messages
from django.contrib.auth.admin import GroupAdmin, UserAdmin
from django.contrib.auth.models import Group, User
from django.core.exceptions import PermissionDenied

from memories.admin.base import (
    ProjectTitles,
    TenantFilter,
    request_scope,
    scoped,
    visible_tenants,
)
from memories.admin.lookups import SafeLookups
from memories.errors import InvalidOperation
from memories.keys import api_key_create, api_key_revoke, api_key_rotate, key_status
from memories.models import (
    ApiKey,
    OperatorProfile,
    Tenant,
)
from memories.permissions import admin_may_manage_accounts

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
class TenantAdmin(AccountsOnlyForUnscopedSuperusers, ProjectTitles, SafeLookups):
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
        fields = ("tenant", "name", "role", "can_erase", "expires_at")


@admin.register(ApiKey)
class ApiKeyAdmin(ProjectTitles, SafeLookups):
    """Keys are made here (the raw key is shown once), rotated and revoked by
    id; only the hash is stored. Superusers of the key's tenant manage them."""

    form = ApiKeyForm
    list_display = ("id", "tenant", "name", "role", "can_erase", "prefix", "status", "expires_at", "last_used_at",
                    "created_at")
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
                                    expires_at=obj.expires_at, can_erase=obj.can_erase)
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
class OperatorProfileAdmin(AccountsOnlyForUnscopedSuperusers, ProjectTitles, SafeLookups):
    """Operator scopes: which tenant a staff user works on. Only unscoped superusers set them."""

    list_display = ("user", "tenant", "all_tenants")
    list_filter = ("all_tenants",)


for _model, _base in ((User, UserAdmin), (Group, GroupAdmin)):
    if admin.site.is_registered(_model):
        admin.site.unregister(_model)
    admin.site.register(_model, type(f"Guarded{_base.__name__}", (AccountsOnlyForUnscopedSuperusers, SafeLookups,
                                                                  _base), {}))
