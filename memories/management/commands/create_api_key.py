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

    def handle(self, *args, tenant, name, role, expires, **options):
        try:
            issued = api_key_create(tenant_name=tenant, name=name, role=role, expires_at=parse_expiry(expires))
        except InvalidOperation as exc:
            raise CommandError(str(exc)) from None
        self.stderr.write(f"{role} key {issued.api_key.id} for tenant {tenant!r} (prefix {issued.api_key.prefix}); "
                          "store it now, it is not shown again:")
        self.stdout.write(issued.raw_key)
