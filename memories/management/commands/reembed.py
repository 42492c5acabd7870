import time

from django.core.management.base import BaseCommand, CommandError

from memories import maintenance
from memories.management.progress import Progress, command_stderr


class Command(BaseCommand):
    help = ("Write vectors of a new embedding model next to the old ones while search keeps using the old; "
            "--activate switches search once coverage is complete; --drop-old removes the other models' vectors.")

    def add_arguments(self, parser):
        parser.add_argument("--model", required=True, help="model name (all-MiniLM-L6-v2 for the local one)")
        parser.add_argument("--provider", default="", help="local, openai or hash (default: guessed from --model)")
        parser.add_argument("--dimensions", type=int, default=0)
        parser.add_argument("--base-url", default="")
        parser.add_argument("--batch-size", type=int, default=200)
        parser.add_argument("--activate", action="store_true")
        parser.add_argument("--drop-old", action="store_true")
        parser.add_argument("--dry-run", action="store_true")

    def handle(self, *args, model, provider, dimensions, base_url, batch_size, activate, drop_old, dry_run,
               **options):
        spec = maintenance.spec_for_model(model, provider=provider, dimensions=dimensions, base_url=base_url)
        started = time.monotonic()

        bar = Progress(f"re-embedding under {model}", unit="memories", stream=command_stderr(self))
        try:
            report = maintenance.reembed(spec=spec, batch_size=batch_size, dry_run=dry_run, progress=bar.update)
            bar.close()
            self.stdout.write(f"{model}: {report.embedded} memories embedded this run, coverage "
                              f"{report.covered}/{report.total} in {time.monotonic() - started:.1f} s")
            if activate and not dry_run:
                maintenance.activate_model(spec)
                self.stdout.write(f"search now uses {model}")
            if drop_old and not dry_run:
                self.stdout.write(f"dropped {maintenance.drop_other_models(spec)} vectors of other models")
        except maintenance.CoverageIncomplete as exc:
            raise CommandError(str(exc)) from exc
