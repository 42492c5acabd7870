"""Bearer API-key authentication: every request is scoped to one tenant."""

from __future__ import annotations

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework import authentication, exceptions, permissions

from memories.keys import api_key_authenticate
from memories.models import Tenant


class ApiClient:
    """The authenticated caller: a tenant, through one of its keys."""

    is_authenticated = True
    is_anonymous = False

    def __init__(self, tenant: Tenant, key_prefix: str):
        self.tenant = tenant
        self.key_prefix = key_prefix

    @property
    def actor(self) -> str:
        return f"api:{self.key_prefix}"

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
        return ApiClient(key.tenant, key.prefix), key

    def authenticate_header(self, request) -> str:
        return self.keyword


class IsTenantClient(permissions.BasePermission):
    def has_permission(self, request, view) -> bool:
        return isinstance(request.user, ApiClient)


class ApiKeyAuthenticationScheme(OpenApiAuthenticationExtension):
    """Documents the bearer API key in the OpenAPI schema."""

    target_class = "memories.api.auth.ApiKeyAuthentication"
    name = "ApiKey"

    def get_security_definition(self, auto_schema):
        return {"type": "http", "scheme": "bearer", "description": "API key from `manage.py create_api_key`"}
