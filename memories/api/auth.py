"""Bearer API-key authentication: every request is scoped to one tenant."""

from __future__ import annotations

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework import authentication, exceptions, permissions, throttling

from memories import ratelimit
from memories.keys import authenticate_header
from memories.models import ApiKey, Tenant
from memories.network import client_of
from memories.permissions import KeyAction, key_may
from memories.timing import timed


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

    def __str__(self) -> str:
        return self.actor


class ApiKeyAuthentication(authentication.BaseAuthentication):
    keyword = "Bearer"
    schemes: tuple[str, ...] = ("bearer",)  # lower case; the Mem0 routes also take "Token"

    @timed("auth")
    def authenticate(self, request):
        header = authentication.get_authorization_header(request).decode("latin-1")
        if not header:
            return None
        found = authenticate_header(header, client_address=client_of(request.META).address,
                                    schemes=self.schemes)
        if found.problem == "throttled":  # a client address that keeps sending bad keys gets 429s
            raise exceptions.Throttled(wait=found.retry_after, detail="Too many bad API keys from this "
                                                                      "address; wait and retry.")
        if found.problem == "malformed":
            raise exceptions.AuthenticationFailed(f"Authorization header must be '{self.keyword} <key>'.")
        if found.key is None:
            raise exceptions.AuthenticationFailed("Invalid, revoked or expired API key.")
        return ApiClient(found.key.tenant, found.key), found.key

    def authenticate_header(self, request) -> str:
        return self.keyword


class ApiKeyRateThrottle(throttling.BaseThrottle):
    """Per-key and per-tenant request rates (memories/ratelimit.py): 429 with Retry-After."""

    @timed("ratelimit")
    def allow_request(self, request, view) -> bool:
        if not isinstance(request.user, ApiClient):
            return True
        decision = ratelimit.api_request_allowed(key_id=request.user.key_id, tenant_id=request.user.tenant.id)
        self._wait = decision.retry_after
        return decision.allowed

    def wait(self) -> float | None:
        return getattr(self, "_wait", None)


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
