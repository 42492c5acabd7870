"""Bearer API-key authentication: every request is scoped to one tenant."""

from __future__ import annotations

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework import authentication, exceptions, permissions

from memories.keys import api_key_authenticate
from memories.models import ApiKey, Tenant
from memories.permissions import KeyAction, key_may


class ApiClient:
    """The authenticated caller: a tenant, through one of its keys (and that key's role)."""

    is_authenticated = True
    is_anonymous = False

    def __init__(self, tenant: Tenant, key: ApiKey):
        self.tenant = tenant
        self.key = key
        self.key_id: int = key.id
        self.role: str = key.role

    @property
    def actor(self) -> str:
        return f"api:key-{self.key_id}"

    def require(self, action: KeyAction) -> None:
        """403 unless this key's role allows the action."""
        if not key_may(self.role, action):
            raise exceptions.PermissionDenied(f"an {self.role} key may not {action.value.replace('_', ' ')}; "
                                              "use a reviewer key")

    def __str__(self) -> str:
        return self.actor


class ApiKeyAuthentication(authentication.BaseAuthentication):
    keyword = "Bearer"

    def authenticate(self, request):
        header = authentication.get_authorization_header(request).decode("latin-1")
        if not header:
            return None
        scheme, _, raw = header.partition(" ")
        if scheme.lower() != "bearer" or not raw.strip():
            raise exceptions.AuthenticationFailed("Authorization header must be 'Bearer <key>'.")
        key = api_key_authenticate(raw.strip())
        if key is None:
            raise exceptions.AuthenticationFailed("Invalid, revoked or expired API key.")
        return ApiClient(key.tenant, key), key

    def authenticate_header(self, request) -> str:
        return self.keyword


class IsTenantClient(permissions.BasePermission):
    def has_permission(self, request, view) -> bool:
        return isinstance(request.user, ApiClient)


class IsReviewerKey(IsTenantClient):
    """The review queue: reviewer keys only."""

    message = "only a reviewer key may use the review queue"

    def has_permission(self, request, view) -> bool:
        return super().has_permission(request, view) and key_may(request.user.role, KeyAction.REVIEW)


class ApiKeyAuthenticationScheme(OpenApiAuthenticationExtension):
    """Documents the bearer API key in the OpenAPI schema."""

    target_class = "memories.api.auth.ApiKeyAuthentication"
    name = "ApiKey"

    def get_security_definition(self, auto_schema):
        return {"type": "http", "scheme": "bearer", "description": "API key from `manage.py create_api_key`"}
