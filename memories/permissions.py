"""Who may do what: API key roles and admin scopes, as pure decisions.

One table each, used by the API, the admin and the commands alike, and
tested cell by cell (tests/test_roles_and_scopes.py).
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Collection
from dataclasses import dataclass
from enum import StrEnum


class KeyAction(StrEnum):
    SAVE = "save"  # create, batch, update and archive memories
    SEARCH = "search"  # list, get, search, history, context, traits
    CONVERSATIONS = "conversations"  # send a conversation for extraction
    OWN_JOBS = "own_jobs"  # read and retry the jobs this key submitted
    ALL_JOBS = "all_jobs"  # read and retry any job of the tenant
    ERASE = "erase"  # forget a user
    REVIEW = "review"  # list, approve and reject review candidates
    REFLECT = "reflect"  # run a reflection cycle


AGENT_ACTIONS = frozenset({KeyAction.SAVE, KeyAction.SEARCH, KeyAction.CONVERSATIONS, KeyAction.OWN_JOBS,
                           KeyAction.REFLECT})
REVIEWER_ACTIONS = AGENT_ACTIONS | {KeyAction.ALL_JOBS, KeyAction.REVIEW, KeyAction.ERASE}
ROLE_ACTIONS: dict[str, frozenset[KeyAction]] = {"agent": AGENT_ACTIONS, "reviewer": REVIEWER_ACTIONS}


def key_may(role: str, action: KeyAction) -> bool:
    """An unknown role may do nothing (fails closed)."""
    return action in ROLE_ACTIONS.get(role, frozenset())


def key_may_erase_user(*, role: str, can_erase: bool) -> bool:
    """Erasing a whole user (or an agent's part of one) at once: a reviewer key, or a key given the
    explicit erase permission. Any other key erases only what it saved and proposes the rest."""
    return can_erase or key_may(role, KeyAction.ERASE)


def key_may_read_job(*, role: str, key_id: int, job_key_id: int | None) -> bool:
    """Agent keys see the jobs they submitted; reviewer keys every job of the tenant."""
    return key_may(role, KeyAction.ALL_JOBS) or (key_may(role, KeyAction.OWN_JOBS) and job_key_id == key_id)


def key_may_resolve_candidate(*, role: str, key_ids: Collection[int], submitted_by_key_id: int | None) -> bool:
    """A reviewer key, and never the key whose request made the candidate (no self-approval), nor a key
    rotated from it: `key_ids` are the key's own id and its predecessors' (keys.key_lineage)."""
    return key_may(role, KeyAction.REVIEW) and submitted_by_key_id not in key_ids


def change_needs_review(*, role: str, approved_by_operator: bool, tenant_protects_approved: bool) -> bool:
    """A memory an operator approved is changed by an agent key only through review."""
    return approved_by_operator and tenant_protects_approved and not key_may(role, KeyAction.REVIEW)


# Actors that are the service itself, shown to API clients as they are.
MACHINE_ACTORS = frozenset({"extraction", "reflection", "scheduler", "erasure", "seed_demo", "test"})
MACHINE_PREFIXES = ("api:", "import:")


def public_actor(actor: str, secret: str) -> str:
    """How an API client sees who made a change: keys and the service by
    name, operators by an opaque, stable id (never their username)."""
    if actor in MACHINE_ACTORS or actor.startswith(MACHINE_PREFIXES):
        return actor
    digest = hmac.new(secret.encode(), actor.encode(), hashlib.sha256).hexdigest()[:12]
    return f"operator:{digest}"


# --------------------------------------------------------------------------- admin scopes


@dataclass(frozen=True)
class AdminScope:
    """Which tenants an operator's admin pages show: every one, one, or none."""

    all_tenants: bool
    tenant_id: int | None

    @property
    def sees_nothing(self) -> bool:
        return not self.all_tenants and self.tenant_id is None


NO_TENANT = AdminScope(all_tenants=False, tenant_id=None)


def admin_scope(*, is_superuser: bool, has_profile: bool, profile_tenant_id: int | None,
                profile_all_tenants: bool) -> AdminScope:
    """Fails closed: staff without a profile see nothing until a superuser
    scopes them; a superuser without a profile sees every tenant."""
    if has_profile:
        if profile_tenant_id is not None:
            return AdminScope(all_tenants=False, tenant_id=profile_tenant_id)
        return AdminScope(all_tenants=True, tenant_id=None) if profile_all_tenants else NO_TENANT
    return AdminScope(all_tenants=True, tenant_id=None) if is_superuser else NO_TENANT


def admin_may_manage_accounts(*, is_superuser: bool, scope: AdminScope) -> bool:
    """Only unscoped superusers manage users, superusers and operator scopes
    (a tenant's superuser could otherwise make a global one)."""
    return is_superuser and scope.all_tenants
