"""API keys: issued once, stored as SHA-256, checked in constant time."""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass
from datetime import datetime

from django.db import transaction
from django.utils import timezone

from memories.models import ApiKey, Tenant

KEY_PREFIX = "mk_"


def _hash_key(raw_key: str) -> str:
    return hashlib.sha256(raw_key.encode("utf-8")).hexdigest()


@dataclass
class IssuedKey:
    api_key: ApiKey
    raw_key: str  # shown once, never stored


@transaction.atomic
def api_key_create(*, tenant_name: str, name: str = "", expires_at: datetime | None = None) -> IssuedKey:
    tenant, _ = Tenant.objects.get_or_create(name=tenant_name)
    public = secrets.token_hex(4)
    raw = f"{KEY_PREFIX}{public}_{secrets.token_urlsafe(32)}"
    key = ApiKey.objects.create(tenant=tenant, name=name, prefix=public, key_hash=_hash_key(raw),
                                expires_at=expires_at)
    return IssuedKey(api_key=key, raw_key=raw)


def api_key_revoke(*, prefix: str) -> int:
    return ApiKey.objects.filter(prefix=prefix, revoked_at__isnull=True).update(revoked_at=timezone.now())


def api_key_authenticate(raw_key: str) -> ApiKey | None:
    """The live key for `raw_key`, or None. The lookup is by hash (an index
    probe); the final comparison is constant-time."""
    if not raw_key.startswith(KEY_PREFIX) or len(raw_key) > 200:
        return None
    digest = _hash_key(raw_key)
    key = ApiKey.objects.select_related("tenant").filter(key_hash=digest).first()
    if key is None or not hmac.compare_digest(key.key_hash, digest):
        return None
    now = timezone.now()
    if key.revoked_at is not None or (key.expires_at is not None and key.expires_at <= now):
        return None
    if key.last_used_at is None or (now - key.last_used_at).total_seconds() > 60:
        ApiKey.objects.filter(pk=key.pk).update(last_used_at=now)
    return key
