"""The governance admin: review queue, memories (audit, supersede, merge,
archive, restore), history, and forgetting a user.

Every change goes through the service functions the API uses (the writing
package, governance) with the operator's username as actor. Tenant-scoped
operators (OperatorProfile.tenant) see only their tenant.

base      scope, tenant-scoped admins, filters, shown times and diffs
memory    memories: audit, edit, supersede, merge, archive, restore, search as the agent, forget a user
review    the review queue
people    people: aliases, edges over time, memories about them; merge, split, correct, retract
audit     history, conversation jobs, erasure receipts (read-only)
accounts  tenants, API keys, operator scopes, users and groups
"""

from memories.admin import accounts, audit, memory, people, review  # noqa: F401  (each registers its pages)
from memories.admin.base import (
    TenantFilter,
    TenantScopedAdmin,
    actor_of,
    operator_tenant,
    request_scope,
    shown_time,
    visible_tenants,
)

__all__ = ["TenantFilter", "TenantScopedAdmin", "actor_of", "operator_tenant", "request_scope", "shown_time",
           "visible_tenants"]
