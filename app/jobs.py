"""Crawl jobs across worker processes: one crawl per tenant whichever worker starts it (a flock on
DATA_DIR/tenants/<id>.crawl.lock held for the job's duration), and every worker answers for it:
the worker running a job keeps its JobInfo in DATA_DIR/tenants/<id>.crawl.json (progress every
SYNC_SECONDS, the final state at the end); a cancel that reaches another worker leaves
DATA_DIR/tenants/<id>.crawl.cancel for the running one to act on."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import msgspec

from app.leader import FileLock
from ingest.pipeline import CrawlOptions, CrawlProgress
from ingest.scheduler import JobInfo, Scheduler
from store.errors import JobRunning

log = logging.getLogger(__name__)

#: How often a running job's state is written for the other workers, and how often they look.
SYNC_SECONDS = 1.0


class CrawlFiles:
    """A tenant's crawl lock, state and cancel request files."""

    def __init__(self, data_dir: Path) -> None:
        self.directory = data_dir / "tenants"

    def lock(self, tenant_id: str) -> FileLock:
        return FileLock(self.directory / f"{tenant_id}.crawl.lock")

    def _state(self, tenant_id: str) -> Path:
        return self.directory / f"{tenant_id}.crawl.json"

    def _cancel(self, tenant_id: str) -> Path:
        return self.directory / f"{tenant_id}.crawl.cancel"

    def write(self, info: JobInfo) -> None:
        """The job's state, replaced atomically (a reader sees the old or the new, never half)."""
        path = self._state(info.tenant_id)
        partial = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        partial.write_bytes(msgspec.json.encode(info))
        partial.replace(path)

    def read(self, tenant_id: str) -> JobInfo | None:
        with contextlib.suppress(OSError, msgspec.DecodeError, msgspec.ValidationError):
            return msgspec.json.decode(self._state(tenant_id).read_bytes(), type=JobInfo)
        return None

    def request_cancel(self, tenant_id: str) -> None:
        self._cancel(tenant_id).touch()

    def take_cancel_request(self, tenant_id: str) -> bool:
        try:
            self._cancel(tenant_id).unlink()
        except FileNotFoundError:
            return False
        return True

    def claim(self, info: JobInfo) -> Callable[[], None]:
        """For Scheduler(claim=…): take the tenant's crawl lock for the job, or raise JobRunning (the
        refusal a second job in one process gets, with the running job's id)."""
        lock = self.lock(info.tenant_id)
        if not lock.acquire():
            running = self.read(info.tenant_id)
            raise JobRunning(f"a crawl of tenant {info.tenant_id} is already running",
                             job=running.id if running is not None and running.status == "running" else None)
        self.take_cancel_request(info.tenant_id)  # one left by a job that ended before it was seen
        try:
            self.write(info)
        except OSError:
            lock.release()
            raise

        def release() -> None:  # `info` is the job's own, finished by now
            with contextlib.suppress(OSError):
                self.write(info)
            lock.release()

        return release


class SharedScheduler(Scheduler):
    """The Scheduler as every worker sees it: its own jobs, and the job another worker runs."""

    def __init__(self, *args: Any, files: CrawlFiles, **kwargs: Any) -> None:
        super().__init__(*args, claim=files.claim, **kwargs)
        self.files = files
        self._sync: asyncio.Task | None = None

    def start_job(self, tenant_id: str, options: CrawlOptions | None = None) -> JobInfo:
        info = super().start_job(tenant_id, options)
        if self._sync is None or self._sync.done():
            self._sync = asyncio.create_task(self._share_while_running())
        return info

    async def _share_while_running(self) -> None:
        while self._jobs:
            await asyncio.sleep(SYNC_SECONDS)
            for tenant_id, job in list(self._jobs.items()):
                if self.files.take_cancel_request(tenant_id):
                    super().cancel(tenant_id)
                with contextlib.suppress(OSError):
                    self.files.write(job.info)

    def job(self, tenant_id: str) -> JobInfo | None:
        """This worker's running job, else the newest job any worker ran or runs."""
        own = super().job(tenant_id)
        if own is not None and own.status == "running":
            return own
        shared = self.files.read(tenant_id)
        if shared is None or (own is not None and own.started_at >= shared.started_at):
            return own
        if shared.status == "running" and not self.files.lock(tenant_id).held_elsewhere():
            shared.status, shared.error = "failed", "the worker running this crawl stopped"
        return shared

    def cancel(self, tenant_id: str) -> bool:
        if super().cancel(tenant_id):
            return True
        if self.files.lock(tenant_id).held_elsewhere():
            self.files.request_cancel(tenant_id)
            return True
        return False

    async def subscribe(self, tenant_id: str) -> AsyncIterator[CrawlProgress]:
        if tenant_id in self._jobs:
            async for progress in super().subscribe(tenant_id):
                yield progress
            return
        lock, last = self.files.lock(tenant_id), None
        while lock.held_elsewhere():
            shared = self.files.read(tenant_id)
            if shared is not None and shared.progress is not None and shared.progress != last:
                last = shared.progress
                yield last
            await asyncio.sleep(SYNC_SECONDS)

    async def stop(self) -> None:
        await super().stop()
        if self._sync is not None:
            self._sync.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._sync
