import json
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from memories.management.progress import Progress, command_stderr
from memories.models import Tenant
from memories.porting import export_rows


class Command(BaseCommand):
    help = "Export a tenant's (or one user's) current memories to JSONL, one memory a line with its sources."

    def add_arguments(self, parser):
        parser.add_argument("--tenant", required=True)
        parser.add_argument("--user")
        parser.add_argument("--agent", help="only this agent's memories and those saved with no agent")
        parser.add_argument("--session", help="only this session's memories")
        parser.add_argument("--group", help="this group's memories (with --user: plus the user's outside groups)")
        parser.add_argument("--include-history", action="store_true")
        parser.add_argument("--output", type=Path, required=True)

    def handle(self, *args, tenant, user, include_history, output, agent=None, session=None, group=None,
               **options):
        try:
            tenant_row = Tenant.objects.get(name=tenant)
        except Tenant.DoesNotExist:
            raise CommandError(f"no tenant named {tenant!r}") from None
        temporary = output.with_suffix(output.suffix + ".part")
        count = 0
        bar = Progress("export", unit="memories", stream=command_stderr(self))
        with temporary.open("w", encoding="utf-8") as handle:
            for row in export_rows(tenant=tenant_row, user_id=user, include_history=include_history,
                                   agent_id=agent, session_id=session, group_id=group):
                handle.write(json.dumps(row, ensure_ascii=False) + "\n")
                count += 1
                if count % 100 == 0:
                    bar.update(count)
        bar.update(count)
        bar.close()
        temporary.replace(output)  # a reader never sees half a file
        self.stdout.write(f"exported {count} memories to {output}")
