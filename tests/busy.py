"""Keeping the crawler from running, for tests of what a busy machine does to a crawl."""

from __future__ import annotations

import threading
import time


class GilHog:
    """A thread that holds the GIL in long stretches: ``sum(range(n))`` runs as one C call that
    never lets another thread in, so the event loop cannot run while it does."""

    def __init__(self, stretch: float = 0.6) -> None:
        started = time.perf_counter()
        sum(range(1_000_000))
        self.n = int(1_000_000 * stretch / max(time.perf_counter() - started, 1e-4))
        self.stop = threading.Event()
        self.stretches = 0
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self.stop.is_set():
            sum(range(self.n))
            self.stretches += 1
            time.sleep(0.01)  # lets the other threads have the GIL for a moment

    def __enter__(self) -> GilHog:
        self.thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop.set()
        self.thread.join()
