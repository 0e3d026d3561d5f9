"""Which process does what when `frontdesk serve` runs several workers, decided by `flock`s the
kernel drops when their holder dies (kill -9 included): one process runs the periodic scheduler
(DATA_DIR/scheduler.lock, here); one crawl runs per tenant (app/jobs.py)."""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import logging
import os
from collections.abc import Callable
from pathlib import Path

log = logging.getLogger(__name__)

#: How often a worker without the scheduler tries to take it over.
RETRY_SECONDS = 10.0


class FileLock:
    """An exclusive, non-blocking flock on one file, which holds the holder's pid (for operators)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd: int | None = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def acquire(self) -> bool:
        """Take the lock if no process holds it; True when this object holds it now."""
        if self._fd is not None:
            return True
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return False
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode(), 0)
        self._fd = fd
        return True

    def held_elsewhere(self) -> bool:
        """Another process (or another FileLock) holds it now. A probe, so a claim racing it within
        microseconds may find the file busy."""
        if self._fd is not None or not self.path.exists():
            return False
        try:
            fd = os.open(self.path, os.O_RDONLY | os.O_CLOEXEC)
        except FileNotFoundError:
            return False
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        finally:
            os.close(fd)  # closing drops the probe's shared lock
        return False

    def release(self) -> None:
        if self._fd is not None:
            fd, self._fd = self._fd, None
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)


class SchedulerLeadership:
    """Runs `lead` (start the periodic scheduler) in the one process holding DATA_DIR/scheduler.lock;
    a process that lacks it tries again every RETRY_SECONDS, so a survivor takes over from a holder
    that died."""

    def __init__(self, data_dir: Path, lead: Callable[[], object], retry_seconds: float = RETRY_SECONDS) -> None:
        self.lock = FileLock(data_dir / "scheduler.lock")
        self._lead = lead
        self._retry = retry_seconds
        self._task: asyncio.Task | None = None

    @property
    def leading(self) -> bool:
        return self.lock.held

    async def start(self) -> None:
        if not await self._try():
            self._task = asyncio.create_task(self._keep_trying())

    async def _try(self) -> bool:
        if not self.lock.acquire():
            return False
        log.info("this worker (pid %d) runs the periodic scheduler", os.getpid())
        result = self._lead()
        if asyncio.iscoroutine(result):
            await result
        return True

    async def _keep_trying(self) -> None:
        while True:
            await asyncio.sleep(self._retry)
            if await self._try():
                return

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        self.lock.release()
