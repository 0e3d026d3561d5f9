"""Crawl jobs across worker processes and nodes: one crawl per tenant whichever process starts it,
and every process answers for it. Two boards keep that:

- `CrawlFiles` (the SQLite files, one machine): a flock on DATA_DIR/tenants/<id>.crawl.lock held
  for the job's duration; the worker running a job keeps its JobInfo in
  DATA_DIR/tenants/<id>.crawl.json (progress every SYNC_SECONDS, the final state at the end); a
  cancel that reaches another worker leaves DATA_DIR/tenants/<id>.crawl.cancel for the running
  one to act on.
- `CrawlLeaseBoard` (PostgreSQL, any number of nodes): the tenant's crawl lease
  (store/pg/leases.py) instead of the flock, renewed every SYNC_SECONDS while the job runs (a
  job whose lease was lost stops), the state and the cancel request in the database. A process
  killed mid-crawl stops renewing; once its lease expires, any node's scheduler finds the job
  left "running" with nobody holding it and starts it again (a delta crawl: what the dead one
  wrote is committed and kept, nothing is half-written)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import msgspec

from app.leader import FileLock
from ingest.crawl_report import CrawlProgress
from ingest.pipeline import CrawlOptions
from ingest.scheduler import JobInfo, Scheduler
from store.errors import FrontdeskError, JobRunning
from store.tenants import Tenant

if TYPE_CHECKING:
    from store.pg.leases import CrawlLeases, Lease

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

    def running_elsewhere(self, tenant_id: str) -> bool:
        """Whether another process runs the tenant's crawl now."""
        return self.lock(tenant_id).held_elsewhere()

    def keep(self, tenant_id: str) -> bool:
        """Whether this process still holds the tenant's crawl (a flock lasts as long as it)."""
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


class CrawlLeaseBoard:
    """A tenant's crawl across nodes on one PostgreSQL database (the module docstring)."""

    def __init__(self, leases: CrawlLeases, *, node: str | None = None, ttl_s: float = 30.0) -> None:
        self.leases = leases
        self.node = node or f"{socket.gethostname()}:{os.getpid()}"
        self.ttl_s = ttl_s
        self._held: dict[str, Lease] = {}

    def write(self, info: JobInfo) -> None:
        self.leases.write_state(info.tenant_id, msgspec.json.encode(info).decode())

    def read(self, tenant_id: str) -> JobInfo | None:
        state = self.leases.read_state(tenant_id)
        with contextlib.suppress(msgspec.DecodeError, msgspec.ValidationError):
            return None if state is None else msgspec.json.decode(state, type=JobInfo)
        return None

    def request_cancel(self, tenant_id: str) -> None:
        self.leases.request_cancel(tenant_id)

    def take_cancel_request(self, tenant_id: str) -> bool:
        return self.leases.take_cancel(tenant_id)

    def running_elsewhere(self, tenant_id: str) -> bool:
        return tenant_id not in self._held and self.leases.holder(tenant_id) is not None

    def keep(self, tenant_id: str) -> bool:
        """Renew this process's lease on the tenant's crawl; False when it was lost (it expired
        and another node took it over): the job must stop."""
        lease = self._held.get(tenant_id)
        renewed = self.leases.renew(lease) if lease is not None else None
        if renewed is None:
            self._held.pop(tenant_id, None)
            return False
        self._held[tenant_id] = renewed
        return True

    def claim(self, info: JobInfo) -> Callable[[], None]:
        lease = self.leases.claim(info.tenant_id, self.node, self.ttl_s)
        if lease is None:
            running = self.read(info.tenant_id)
            raise JobRunning(f"a crawl of tenant {info.tenant_id} is already running",
                             job=running.id if running is not None and running.status == "running" else None)
        self._held[info.tenant_id] = lease
        self.take_cancel_request(info.tenant_id)
        try:
            self.write(info)
        except FrontdeskError:
            self._release(info.tenant_id)
            raise

        def release() -> None:
            with contextlib.suppress(FrontdeskError):
                self.write(info)
            self._release(info.tenant_id)

        return release

    def _release(self, tenant_id: str) -> None:
        lease = self._held.pop(tenant_id, None)
        if lease is not None:
            with contextlib.suppress(FrontdeskError):
                self.leases.release(lease)


class SharedScheduler(Scheduler):
    """The Scheduler as every worker sees it: its own jobs, and the job another worker runs."""

    def __init__(self, *args: Any, files: CrawlFiles | CrawlLeaseBoard, **kwargs: Any) -> None:
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
                try:
                    kept = await anyio.to_thread.run_sync(self._sync_job, tenant_id, job.info)
                except (OSError, FrontdeskError):
                    log.warning("could not share the state of tenant %s's crawl", tenant_id, exc_info=True)
                    continue
                if not kept:
                    log.error("tenant %s's crawl lease was lost (another node took it over): stopping", tenant_id)
                    job.info.error = "this node lost the crawl's lease"
                    super().cancel(tenant_id)

    def _sync_job(self, tenant_id: str, info: JobInfo) -> bool:
        """Act on a cancel from another process, share the job's state, keep its claim."""
        if self.files.take_cancel_request(tenant_id):
            super().cancel(tenant_id)
        self.files.write(info)
        return self.files.keep(tenant_id)

    def due(self, tenant: Tenant, now: float) -> CrawlOptions | None:
        """By the schedule, or a job another process left running when it died (its claim
        expired with nobody running it): started again, as a delta crawl."""
        left = self.files.read(tenant.id)
        if (left is not None and left.status == "running" and tenant.id not in self._jobs
                and not self.files.running_elsewhere(tenant.id)):
            log.warning("tenant %s's crawl %s stopped with its process; crawling again", tenant.id, left.id)
            # A full crawl: a delta one takes an unchanged page's 304 and does not read its links
            # again, so the pages the dead crawl had not reached yet would stay unfound. Pages
            # whose text is unchanged are not embedded again either way.
            return CrawlOptions(full=True)
        return super().due(tenant, now)

    def job(self, tenant_id: str) -> JobInfo | None:
        """This worker's running job, else the newest job any worker ran or runs."""
        own = super().job(tenant_id)
        if own is not None and own.status == "running":
            return own
        shared = self.files.read(tenant_id)
        if shared is None or (own is not None and own.started_at >= shared.started_at):
            return own
        if shared.status == "running" and not self.files.running_elsewhere(tenant_id):
            shared.status, shared.error = "failed", "the worker running this crawl stopped"
        return shared

    def cancel(self, tenant_id: str) -> bool:
        if super().cancel(tenant_id):
            return True
        if self.files.running_elsewhere(tenant_id):
            self.files.request_cancel(tenant_id)
            return True
        return False

    async def subscribe(self, tenant_id: str) -> AsyncIterator[CrawlProgress]:
        if tenant_id in self._jobs:
            async for progress in super().subscribe(tenant_id):
                yield progress
            return
        last = None
        while await anyio.to_thread.run_sync(self.files.running_elsewhere, tenant_id):
            shared = await anyio.to_thread.run_sync(self.files.read, tenant_id)
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
