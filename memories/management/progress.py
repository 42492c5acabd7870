"""Progress for long commands: a tqdm bar (rate, time left) when stderr is a terminal,
a plain counter line every `every` seconds when it is a log."""

from __future__ import annotations

import sys
import time
from typing import TextIO, cast

from django.core.management.base import BaseCommand
from tqdm import tqdm


class Progress:
    def __init__(self, label: str, *, total: int | None = None, unit: str = "items", stream: TextIO | None = None,
                 every: float = 10.0, bar: bool | None = None):
        self.stream = stream or sys.stderr
        self.label, self.unit, self.total, self.every = label, unit, total, every
        self.done = 0
        self.started = self._last = time.monotonic()
        interactive = self.stream.isatty() if bar is None else bar
        self._bar = tqdm(total=total, desc=label, unit=f" {unit}", file=self.stream, dynamic_ncols=True) \
            if interactive else None

    def update(self, done: int, total: int | None = None, note: str = "") -> None:
        """Report `done` so far (absolute, not a step)."""
        if total is not None and total != self.total:
            self.total = total
            if self._bar is not None:
                self._bar.total = total
                self._bar.refresh()
        if self._bar is not None:
            self._bar.update(done - self.done)
            if note:
                self._bar.set_postfix_str(note, refresh=False)
        self.done = done
        now = time.monotonic()
        if self._bar is None and now - self._last >= self.every:
            self._last = now
            self.stream.write(self.line(now, note) + "\n")
            self.stream.flush()

    def line(self, now: float, note: str = "") -> str:
        elapsed = max(now - self.started, 1e-6)
        rate = self.done / elapsed
        text = f"{self.label}: {self.done}" + (f"/{self.total}" if self.total else "") + f" {self.unit} ({rate:.0f}/s"
        if self.total and rate > 0:
            text += f", {max(self.total - self.done, 0) / rate:.0f} s left"
        return text + ")" + (f" {note}" if note else "")

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
        elif self.done:
            self.stream.write(self.line(time.monotonic()) + "\n")


def command_stderr(command: BaseCommand) -> TextIO:
    """A management command's raw stderr (its OutputWrapper would end every progress line)."""
    return cast(TextIO, command.stderr._out)
