import time

from django.core.management.base import BaseCommand

from memories import maintenance
from memories.management.progress import Progress, command_stderr


class Command(BaseCommand):
    help = ("Fill what is missing, in batches: embeddings (memories not embedded under the active model), "
            "hashes, search-vectors (full-text), sources (from session ids). Resumable: it only ever picks up "
            "what is still missing.")

    def add_arguments(self, parser):
        parser.add_argument("--what", required=True, choices=maintenance.BACKFILLS)
        parser.add_argument("--batch-size", type=int, default=200)
        parser.add_argument("--rate", type=float, default=0.0,
                            help="at most this many batches per second (for remote embedders); 0 = no limit")
        parser.add_argument("--dry-run", action="store_true", help="count what is missing, change nothing")

    def handle(self, *args, what, batch_size, rate, dry_run, **options):
        started = time.monotonic()

        bar = Progress(what, unit="memories", stream=command_stderr(self))
        report = maintenance.backfill(what=what, batch_size=batch_size, rate=rate, dry_run=dry_run,
                                      progress=bar.update)
        bar.close()
        if dry_run:
            self.stdout.write(f"{what}: missing {report.total}")
            return
        self.stdout.write(f"{what}: filled {report.done} of {report.total} in {time.monotonic() - started:.1f} s"
                          + (f", {report.failed} failed" if report.failed else ""))
