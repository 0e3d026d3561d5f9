"""Progress output for long CLI work: a bar on a terminal, one line per update otherwise (stderr)."""

from __future__ import annotations

import sys
import time
from typing import TextIO


class Progress:
    def __init__(self, label: str, total: int | None = None, stream: TextIO | None = None,
                 min_interval: float = 0.2) -> None:
        self.label = label
        self.total = total
        self.stream = stream or sys.stderr
        self.tty = self.stream.isatty()
        self.started = time.monotonic()
        self.min_interval = min_interval if self.tty else 2.0
        self._last = 0.0
        self.done = 0

    def update(self, done: int, total: int | None = None, detail: str = "", force: bool = False) -> None:
        self.done = done
        if total is not None:
            self.total = total
        now = time.monotonic()
        if not force and now - self._last < self.min_interval:
            return
        self._last = now
        elapsed = now - self.started
        rate = done / elapsed if elapsed > 0 else 0.0
        eta = ""
        if self.total and rate > 0 and done < self.total:
            eta = f" ETA {int((self.total - done) / rate)}s"
        count = f"{done}/{self.total}" if self.total else f"{done}"
        if self.tty:
            width = 28
            filled = int(width * done / self.total) if self.total else 0
            bar = "█" * filled + "·" * (width - filled) if self.total else ""
            self.stream.write(f"\r{self.label} {bar} {count} {rate:.1f}/s{eta} {detail}"[:160].ljust(100))
        else:
            self.stream.write(f"{self.label}: {count} ({rate:.1f}/s){eta} {detail}\n")
        self.stream.flush()

    def finish(self, detail: str = "") -> None:
        self.update(self.done, force=True, detail=detail)
        if self.tty:
            self.stream.write("\n")
            self.stream.flush()
