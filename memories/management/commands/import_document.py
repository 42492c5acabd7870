from collections import Counter
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from memories.documents import document_save
from memories.models import Tenant


class Command(BaseCommand):
    help = ("Save a text file as a user's document: one memory of type document per chunk, each naming the file "
            "(file id, file name, chunk index). Saving the same file again under its --file-id changes nothing.")

    def add_arguments(self, parser):
        parser.add_argument("--tenant", required=True)
        parser.add_argument("--user", required=True)
        parser.add_argument("--file", type=Path, required=True, help="a UTF-8 text file")
        parser.add_argument("--file-name", help="the name to keep (default: the file's own)")
        parser.add_argument("--file-id", help="the file's id (default: a new one)")

    def handle(self, *args, tenant, user, file, file_name, file_id, **options):
        try:
            text = file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise CommandError(f"{file}: {exc}") from exc
        tenant_row, _ = Tenant.objects.get_or_create(name=tenant)
        try:
            saved = document_save(tenant=tenant_row, user_id=user, file_name=file_name or file.name, text=text,
                                  file_id=file_id, actor="import:document")
        except ValueError as exc:
            raise CommandError(str(exc)) from exc
        counts = Counter(chunk["operation"] for chunk in saved.chunks)
        self.stdout.write(f"file {saved.file_id} ({saved.file_name}): {len(saved.chunks)} chunks, "
                          + ", ".join(f"{op} {n}" for op, n in sorted(counts.items())))
