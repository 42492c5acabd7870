import time
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from memories.management.progress import Progress, command_stderr
from memories.models import Tenant
from memories.porting import ImportFailed
from traits.v1_import import import_v1


class Command(BaseCommand):
    help = ("Import a V1 store: its `embeddings` table and key-value profile, exported as embeddings.jsonl and "
            "key_values.jsonl in one directory (traits/v1_import.py says the shape and where each row goes). "
            "Resumable: an interrupted run continues after its last committed batch; a repeated run changes nothing.")

    def add_arguments(self, parser):
        parser.add_argument("--tenant", required=True)
        parser.add_argument("--dir", type=Path, required=True, help="the V1 export directory")
        parser.add_argument("--batch-size", type=int, default=500)
        parser.add_argument("--restart", action="store_true", help="ignore the checkpoints of an interrupted run")

    def handle(self, *args, tenant, dir, batch_size, restart, **options):
        tenant_row, _ = Tenant.objects.get_or_create(name=tenant)
        bars: dict[str, Progress] = {}
        started = time.monotonic()

        def progress(part: str, done: int, total: int) -> None:
            bar = bars.setdefault(part, Progress(f"v1 {part}", unit="records", stream=command_stderr(self)))
            bar.update(done, total or None)

        try:
            report = import_v1(tenant=tenant_row, directory=dir, batch_size=batch_size, restart=restart,
                               progress=progress)
        except ImportFailed as exc:
            raise CommandError(f"{exc} (nothing from that batch was written; a rerun continues after the last "
                               "committed batch)") from exc
        for bar in bars.values():
            bar.close()
        m = report.memories
        self.stdout.write(
            f"memories: read {m.read}, added {m.added}, unchanged {m.noop}, updated {m.updated}, "
            f"held for review (sensitive) {m.held}, vectors kept {m.vectors_kept}, re-embedded {m.reembedded}, "
            f"skipped (already imported) {m.skipped_resumed}\n"
            f"traits: read {report.traits_read}, added {report.traits_added}, unchanged {report.traits_unchanged}, "
            f"not imported (sensitive) {report.traits_sensitive}, skipped (already imported) {report.traits_resumed}\n"
            f"profile keys kept as configuration (not memories): {report.configuration}\n"
            f"{time.monotonic() - started:.1f} s")
