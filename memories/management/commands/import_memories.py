import time
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from memories.management.progress import Progress, command_stderr
from memories.models import Tenant
from memories.porting import SOURCES, ImportFailed, checkpoint_path, import_records, read_records


class Command(BaseCommand):
    help = ("Import memories from another store (memory-items, agent-memories, mem0) or our own JSONL export. "
            "Resumable: an interrupted run continues after its last committed batch; a repeated run is all NOOPs.")

    def add_arguments(self, parser):
        parser.add_argument("--tenant", required=True)
        parser.add_argument("--source", required=True, choices=SOURCES)
        where = parser.add_mutually_exclusive_group(required=True)
        where.add_argument("--file", type=Path, help="CSV, JSONL or JSON dump (companion tables beside it)")
        where.add_argument("--dsn", help="a PostgreSQL DSN holding the source tables")
        parser.add_argument("--batch-size", type=int, default=500)
        parser.add_argument("--dry-run", action="store_true", help="read and validate everything, write nothing")
        parser.add_argument("--restart", action="store_true", help="ignore a checkpoint from an interrupted run")

    def handle(self, *args, tenant, source, file, dsn, batch_size, dry_run, restart, **options):
        tenant_row, _ = Tenant.objects.get_or_create(name=tenant)
        checkpoint = checkpoint_path(tenant, source, dsn or str(file.resolve()))
        if restart:
            checkpoint.unlink(missing_ok=True)
        started = time.monotonic()

        bar = Progress("import", unit="records", stream=command_stderr(self))

        def progress(report):
            bar.update(report.read, note=f"{report.added} added, {report.noop} unchanged")

        try:
            report = import_records(tenant=tenant_row, records=read_records(source, path=file, dsn=dsn),
                                    actor=f"import:{source}", batch_size=batch_size, dry_run=dry_run,
                                    checkpoint=checkpoint, progress=progress)
        except ImportFailed as exc:
            raise CommandError(f"{exc} (nothing from that batch was written; rerun continues after the last "
                               "committed batch)") from exc
        bar.close()
        self.stdout.write(
            f"{'dry run: ' if dry_run else ''}read {report.read}, added {report.added}, unchanged {report.noop}, "
            f"updated {report.updated}, vectors kept {report.vectors_kept}, re-embedded {report.reembedded}, "
            f"skipped (already imported) {report.skipped_resumed}, held for review (sensitive) {report.held}, "
            f"batches {report.batches}, "
            f"{time.monotonic() - started:.1f} s")
