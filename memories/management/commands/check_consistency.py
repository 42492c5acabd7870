from django.core.management.base import BaseCommand

from memories.consistency import consistency_check
from memories.management.progress import Progress, command_stderr


class Command(BaseCommand):
    help = ("Report orphan vectors, evidence, history and sources; memories without vectors; superseded chains "
            "that loop or dangle; content hashes that don't match the text. --fix repairs what is safe.")

    def add_arguments(self, parser):
        parser.add_argument("--fix", action="store_true")

    def handle(self, *args, fix, **options):
        bar = Progress("hash scan", unit="memories", stream=command_stderr(self))
        report = consistency_check(fix=fix, progress=bar.update)
        bar.close()
        for name, ids in report.problems.items():
            line = f"{name}: {len(ids)}"
            if ids and not fix:
                line += f" (e.g. {', '.join(ids[:5])})"
            self.stdout.write(line)
        for name, count in report.fixed.items():
            if count:
                self.stdout.write(f"fixed {name}: {count}")
        for note in report.left:
            self.stdout.write(f"left: {note}")
        self.stdout.write("consistent" if report.clean else ("repaired what is safe" if fix else "problems found"))
