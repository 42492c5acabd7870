"""List, create, rotate and revoke API keys (by id: prefixes are not unique)."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from memories.errors import InvalidOperation, MemoryNotFound
from memories.keys import api_key_create, api_key_list, api_key_revoke, api_key_rotate, key_status
from memories.models import KeyRole

_DURATION = re.compile(r"^(\d+)([dh])$")


def parse_expiry(value: str | None) -> datetime | None:
    """'90d', '12h' or an ISO date/time (UTC when naive); None for no expiry."""
    if not value:
        return None
    match = _DURATION.match(value.strip())
    if match:
        amount, unit = int(match.group(1)), match.group(2)
        return timezone.now() + (timedelta(days=amount) if unit == "d" else timedelta(hours=amount))
    parsed = parse_datetime(value) or parse_datetime(f"{value}T00:00:00")
    if parsed is None:
        raise CommandError(f"--expires: {value!r} is neither a duration (90d, 12h) nor an ISO date/time")
    return parsed if timezone.is_aware(parsed) else timezone.make_aware(parsed, UTC)


class Command(BaseCommand):
    help = "Manage API keys: list, create, rotate, revoke. Only hashes are stored; a new key is printed once."

    def add_arguments(self, parser):
        sub = parser.add_subparsers(dest="action", required=True)
        listing = sub.add_parser("list", help="keys with id, tenant, role, status and dates")
        listing.add_argument("--tenant")
        listing.add_argument("--all", action="store_true", help="include revoked keys")
        create = sub.add_parser("create", help="a new key for a tenant (made if new)")
        create.add_argument("tenant")
        create.add_argument("--name", default="")
        create.add_argument("--role", choices=KeyRole.values, default=KeyRole.AGENT)
        create.add_argument("--expires", help="ISO date/time or a duration like 90d or 12h")
        create.add_argument("--can-erase", action="store_true", help="the key may erase a whole user at once")
        rotate = sub.add_parser("rotate", help="a new key with the same tenant, name and role; the old is revoked")
        rotate.add_argument("key_id", type=int)
        rotate.add_argument("--expires", help="ISO date/time or a duration like 90d or 12h")
        revoke = sub.add_parser("revoke", help="revoke one key by id")
        revoke.add_argument("key_id", type=int)

    def handle(self, *args, action, **options):
        try:
            getattr(self, f"_{action}")(**options)
        except (InvalidOperation, MemoryNotFound) as exc:
            raise CommandError(str(exc)) from None

    def _list(self, *, tenant=None, all=False, **_):
        keys = api_key_list(tenant_name=tenant, include_revoked=all)
        self.stdout.write(f"{'id':>5}  {'tenant':<20} {'name':<16} {'role':<8} {'prefix':<8} {'status':<8} "
                          f"{'expires':<20} last used")
        for key in keys:
            expires = key.expires_at.strftime("%Y-%m-%d %H:%M") if key.expires_at else "-"
            used = key.last_used_at.strftime("%Y-%m-%d %H:%M") if key.last_used_at else "never"
            self.stdout.write(f"{key.id:>5}  {key.tenant.name:<20} {key.name[:16]:<16} {key.role:<8} "
                              f"{key.prefix:<8} {key_status(key):<8} {expires:<20} {used}")
        self.stderr.write(f"{len(keys)} keys")

    def _create(self, *, tenant, name="", role=KeyRole.AGENT, expires=None, can_erase=False, **_):
        issued = api_key_create(tenant_name=tenant, name=name, role=role, expires_at=parse_expiry(expires),
                                can_erase=can_erase)
        self.stderr.write(f"{role} key {issued.api_key.id} for {tenant!r}; store it now, it is not shown again:")
        self.stdout.write(issued.raw_key)

    def _rotate(self, *, key_id, expires=None, **_):
        issued = api_key_rotate(key_id=key_id, expires_at=parse_expiry(expires))
        self.stderr.write(f"key {key_id} revoked; its replacement is key {issued.api_key.id} "
                          f"({issued.api_key.role}); store it now, it is not shown again:")
        self.stdout.write(issued.raw_key)

    def _revoke(self, *, key_id, **_):
        key = api_key_revoke(key_id=key_id)
        self.stdout.write(f"key {key.id} ({key.tenant.name}, {key.prefix}) revoked at {key.revoked_at:%Y-%m-%d %H:%M}")
