import signal
import threading

from django.conf import settings
from django.core.management.base import BaseCommand

from memories.schedule import run_entry, run_schedule


class Command(BaseCommand):
    help = ("Run the scheduled jobs (CELERY_BEAT_SCHEDULE) in this process, for a service without a broker: "
            "expiry, the reflection scan, idle sessions, read counts. `make run` starts it through gunicorn; "
            "--once runs every job now and exits.")

    def add_arguments(self, parser):
        parser.add_argument("--once", action="store_true", help="run every scheduled job once, now, and exit")
        parser.add_argument("--tick", type=float, default=5.0, help="seconds between checks for due jobs")

    def handle(self, *args, once, tick, **options):
        schedule = settings.CELERY_BEAT_SCHEDULE
        if once:
            failed = [name for name, entry in schedule.items() if not run_entry(name, entry)]
            self.stdout.write(f"{len(schedule) - len(failed)} of {len(schedule)} scheduled jobs ran"
                              + (f"; failed: {', '.join(failed)}" if failed else ""))
            return
        stop = threading.Event()
        for signum in (signal.SIGTERM, signal.SIGINT):
            signal.signal(signum, lambda *_: stop.set())
        self.stdout.write(f"running {len(schedule)} scheduled jobs in this process (every {tick:g} s a check)")
        run_schedule(schedule, stop=stop, tick=tick,
                     on_run=lambda name, ok: self.stdout.write(f"{name}: {'done' if ok else 'failed'}"))
