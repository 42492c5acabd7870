"""API keys: issued once, stored as SHA-256, checked in constant time."""

from __future__ import annotations

import copy
import hashlib
import hmac
import secrets
import threading
import time
from dataclasses import dataclass
from datetime import datetime

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from memories import ratelimit
from memories.errors import InvalidOperation, get_or_not_found
from memories.models import ApiKey, KeyRole, Tenant
from memories.process_state import forgotten_on_reset

KEY_PREFIX = "mk_"


def _hash_key(raw_key: str) -> str:
    return hashlib.sha256(raw_key.encode("utf-8")).hexdigest()


@dataclass
class IssuedKey:
    api_key: ApiKey
    raw_key: str  # shown once, never stored


@transaction.atomic
def api_key_create(*, tenant_name: str, name: str = "", role: str = KeyRole.AGENT,
                   expires_at: datetime | None = None, can_erase: bool = False,
                   rotated_from: ApiKey | None = None) -> IssuedKey:
    """A new key for a tenant (made if new). The raw key is returned once. `can_erase`: the key may
    erase a whole user at once (reviewer keys always may)."""
    if role not in KeyRole.values:
        raise InvalidOperation(f"role must be one of {', '.join(KeyRole.values)}", field="role")
    if expires_at is not None and expires_at <= timezone.now():
        raise InvalidOperation("expires_at must be in the future", field="expires_at")
    tenant, _ = Tenant.objects.get_or_create(name=tenant_name)
    public = secrets.token_hex(4)
    raw = f"{KEY_PREFIX}{public}_{secrets.token_urlsafe(32)}"
    key = ApiKey.objects.create(tenant=tenant, name=name, role=role, prefix=public, key_hash=_hash_key(raw),
                                expires_at=expires_at, can_erase=can_erase, rotated_from=rotated_from)
    return IssuedKey(api_key=key, raw_key=raw)


def api_key_list(*, tenant_name: str | None = None, include_revoked: bool = False) -> list[ApiKey]:
    keys = ApiKey.objects.select_related("tenant").order_by("tenant__name", "id")
    if tenant_name:
        keys = keys.filter(tenant__name=tenant_name)
    return list(keys if include_revoked else keys.filter(revoked_at__isnull=True))


def api_key_revoke(*, key_id: int) -> ApiKey:
    """Revoke one key by id (prefixes are not unique). Revoking twice is a no-op."""
    with transaction.atomic():
        key = get_or_not_found(ApiKey.objects.select_for_update(), "api key", id=key_id)
        if key.revoked_at is None:
            key.revoked_at = timezone.now()
            key.save(update_fields=["revoked_at"])
    forget_cached_key(key.key_hash)
    return key


@transaction.atomic
def api_key_rotate(*, key_id: int, expires_at: datetime | None = None) -> IssuedKey:
    """A new key with the same tenant, name and role; the old one is revoked."""
    old = get_or_not_found(ApiKey.objects.select_for_update().select_related("tenant"), "api key", id=key_id)
    if old.revoked_at is not None:
        raise InvalidOperation(f"key {key_id} is already revoked", field="key_id")
    issued = api_key_create(tenant_name=old.tenant.name, name=old.name, role=old.role, can_erase=old.can_erase,
                            expires_at=expires_at or old.expires_at, rotated_from=old)
    api_key_revoke(key_id=old.id)
    return issued


def key_lineage(key: ApiKey) -> frozenset[int]:
    """The key's id and those of every key it was rotated from (one client's keys over time)."""
    ids, current = {key.id}, key.rotated_from_id
    while current is not None and current not in ids:
        ids.add(current)
        current = ApiKey.objects.filter(id=current).values_list("rotated_from_id", flat=True).first()
    return frozenset(ids)


def key_status(key: ApiKey, now: datetime | None = None) -> str:
    """live | expired | revoked"""
    now = now or timezone.now()
    if key.revoked_at is not None:
        return "revoked"
    return "expired" if key.expires_at is not None and key.expires_at <= now else "live"


# Keys found, per process: hash -> (the key with its tenant, when the entry stops counting; monotonic).
# A key revoked or rotated in this process leaves at once (forget_cached_key); one revoked in another
# process stops working within KEY_CACHE_SECONDS. Expiry is checked on every use.
_key_cache: dict[str, tuple[ApiKey, float]] = {}
_key_cache_lock = threading.Lock()
_KEY_CACHE_MAX = 10_000


def _cached_key(digest: str) -> ApiKey | None:
    seconds = settings.KEY_CACHE_SECONDS
    if seconds <= 0:
        return None
    with _key_cache_lock:
        found = _key_cache.get(digest)
    if found is None or found[1] <= time.monotonic():
        return None
    return copy.copy(found[0])  # each request its own instance (a tenant's fields are read, never shared writes)


def _remember_key(digest: str, key: ApiKey) -> None:
    seconds = settings.KEY_CACHE_SECONDS
    if seconds <= 0:
        return
    with _key_cache_lock:
        if len(_key_cache) >= _KEY_CACHE_MAX:
            _key_cache.clear()
        _key_cache[digest] = (copy.copy(key), time.monotonic() + seconds)


@forgotten_on_reset
def forget_cached_keys() -> None:
    """Every key found so far is looked up again."""
    with _key_cache_lock:
        _key_cache.clear()


def forget_cached_key(key_hash: str) -> None:
    """A key revoked or rotated here stops working here at once."""
    with _key_cache_lock:
        _key_cache.pop(key_hash, None)


def api_key_authenticate(raw_key: str) -> ApiKey | None:
    """The live key for `raw_key`, or None. The lookup is by hash (an index
    probe, skipped for KEY_CACHE_SECONDS after a key was found in this process);
    the final comparison is constant-time."""
    if not raw_key.startswith(KEY_PREFIX) or len(raw_key) > 200:
        return None
    digest = _hash_key(raw_key)
    key = _cached_key(digest)
    if key is None:
        key = ApiKey.objects.select_related("tenant").filter(key_hash=digest).first()
        if key is not None and key.revoked_at is None:
            _remember_key(digest, key)
    if key is None or not hmac.compare_digest(key.key_hash, digest):
        return None
    now = timezone.now()
    if key.revoked_at is not None or (key.expires_at is not None and key.expires_at <= now):
        return None
    if key.last_used_at is None or (now - key.last_used_at).total_seconds() > 60:
        ApiKey.objects.filter(pk=key.pk).update(last_used_at=now)
        key.last_used_at = now
        _remember_key(digest, key)
    return key


@dataclass(frozen=True)
class HeaderAuthentication:
    """What an Authorization header comes to: the key, or why not (and, for an address that keeps
    sending bad keys, how long until it may try again)."""

    key: ApiKey | None
    problem: str = ""  # "" | "missing" | "malformed" | "invalid" | "throttled"
    retry_after: float = 0.0


def authenticate_header(header: str, *, client_address: str,
                        schemes: tuple[str, ...] = ("bearer",)) -> HeaderAuthentication:
    """The one check every door runs (REST, the Mem0 routes, MCP over HTTP): a header of one of
    `schemes` carrying a live key; a client address that keeps sending bad keys is refused for a
    while (RATE_LIMIT_BAD_KEY_REQUESTS per window) before its next key is even looked up."""
    if not header:
        return HeaderAuthentication(None, "missing")
    scheme, _, raw = header.partition(" ")
    known_scheme = scheme.lower() in schemes and bool(raw.strip())
    key = api_key_authenticate(raw.strip()) if known_scheme else None
    if key is not None:
        return HeaderAuthentication(key)
    refused = ratelimit.hit(ratelimit.bad_key_bucket(client_address), ratelimit.bad_key_limit())
    if not refused.allowed:
        return HeaderAuthentication(None, "throttled", refused.retry_after)
    return HeaderAuthentication(None, "invalid" if known_scheme else "malformed")
