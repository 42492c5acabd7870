from django.core.management.base import BaseCommand, CommandError

from memories.errors import InvalidOperation
from memories.keys import api_key_create
from memories.management.commands.api_keys import parse_expiry
from memories.models import KeyRole


class Command(BaseCommand):
    help = ("Create an API key for TENANT (created if new). The key is printed once; only its hash is stored. "
            "Same as `api_keys create`.")

    def add_arguments(self, parser):
        parser.add_argument("tenant")
        parser.add_argument("--name", default="", help="a label for the key")
        parser.add_argument("--role", choices=KeyRole.values, default=KeyRole.AGENT,
                            help="agent: save, search, context, conversations, its own jobs (default); "
                                 "reviewer: also the review queue and every job")
        parser.add_argument("--expires", default=None, help="ISO date/time or a duration like 90d or 12h")
        parser.add_argument("--can-erase", action="store_true",
                            help="the key may erase a whole user at once (reviewer keys always may; other keys "
                                 "erase what they saved and propose the rest for review)")

    def handle(self, *args, tenant, name, role, expires, can_erase=False, **options):
        try:
            issued = api_key_create(tenant_name=tenant, name=name, role=role, expires_at=parse_expiry(expires),
                                    can_erase=can_erase)
        except InvalidOperation as exc:
            raise CommandError(str(exc)) from None
        self.stderr.write(f"{role} key {issued.api_key.id} for tenant {tenant!r} (prefix {issued.api_key.prefix}); "
                          "store it now, it is not shown again:")
        self.stdout.write(issued.raw_key)
