"""Request deadlines that count only time the crawler could run: ``StallMeter`` measures how long
the event loop was blocked (another thread holding the GIL, a starved process), and
``runnable_deadline`` is ``asyncio.timeout`` with that lost time given back. A busy machine is
not a slow server (README.md, "Crawling on a busy machine").
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator


class StallMeter:
    """How long the event loop could not run: the crawler's own lost time.

    A timer callback every ``TICK`` seconds notes how late it fired. Lateness means the loop
    thread was blocked (a synchronous call on the loop, another thread holding the GIL, the
    process starved of CPU); during that time no response could be read, whatever the server
    did. ``stalled()`` is the total so far, including a tick that is overdue right now.
    """

    TICK = 0.05
    #: Lateness below this is ordinary scheduling jitter, not a stall.
    TOLERANCE = 0.005

    def __init__(self) -> None:
        self._total = 0.0
        self._due = 0.0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._handle: asyncio.TimerHandle | None = None

    def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._arm()

    def stop(self) -> None:
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None

    def stalled(self) -> float:
        """Seconds the loop was blocked since ``start``."""
        if self._loop is None or self._handle is None:
            return self._total
        return self._total + max(0.0, self._loop.time() - self._due - self.TOLERANCE)

    def _arm(self) -> None:
        assert self._loop is not None
        self._due = self._loop.time() + self.TICK
        self._handle = self._loop.call_at(self._due, self._tick)

    def _tick(self) -> None:
        assert self._loop is not None
        self._total += max(0.0, self._loop.time() - self._due - self.TOLERANCE)
        self._arm()


@contextlib.asynccontextmanager
async def runnable_deadline(seconds: float, meter: StallMeter) -> AsyncIterator[None]:
    """Like ``asyncio.timeout(seconds)``, but time the loop spent blocked does not count.

    When the deadline comes, the time the loop was stalled since the block began is given
    back and the deadline moves on by that much; only a request that used ``seconds`` of
    time in which the crawler could have read its answer raises TimeoutError.
    """
    loop = asyncio.get_running_loop()
    started = loop.time()
    stalled_before = meter.stalled()
    handle: asyncio.TimerHandle | None = None
    async with asyncio.timeout(None) as timeout:

        def check() -> None:
            nonlocal handle
            used = loop.time() - started - (meter.stalled() - stalled_before)
            if used >= seconds:
                timeout.reschedule(loop.time())
            else:
                handle = loop.call_later(seconds - used, check)

        handle = loop.call_later(seconds, check)
        try:
            yield
        finally:
            handle.cancel()
