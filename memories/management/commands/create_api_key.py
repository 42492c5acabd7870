from django.core.management.base import BaseCommand

from memories.keys import api_key_create


class Command(BaseCommand):
    help = "Create an API key for TENANT (created if new). The key is printed once; only its hash is stored."

    def add_arguments(self, parser):
        parser.add_argument("tenant")
        parser.add_argument("--name", default="", help="a label for the key")

    def handle(self, *args, tenant, name, **options):
        issued = api_key_create(tenant_name=tenant, name=name)
        self.stderr.write(f"API key for tenant {tenant!r} (prefix {issued.api_key.prefix}); store it now, "
                          "it is not shown again:")
        self.stdout.write(issued.raw_key)
