"""In-process crawl jobs: at most one per tenant, started on demand (CLI, admin API, webhook) or
periodically (sitemap delta daily, full weekly by default), with progress fan-out to subscribers.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from collections.abc import AsyncIterator, Callable

import anyio
import msgspec

from ingest.crawl_report import CrawlProgress, CrawlSummary
from ingest.embed import Embedder
from ingest.pipeline import CrawlOptions, crawl
from store.errors import FrontdeskError, JobRunning
from store.tenants import Registry, Tenant

log = logging.getLogger(__name__)

#: How often the periodic loop looks for tenants that are due.
TICK_SECONDS = 60.0


class JobInfo(msgspec.Struct, kw_only=True):
    id: str
    tenant_id: str
    kind: str
    status: str  # running | done | cancelled | failed
    started_at: float
    finished_at: float | None = None
    progress: CrawlProgress | None = None
    summary: CrawlSummary | None = None
    error: str | None = None


class _Job:
    def __init__(self, info: JobInfo) -> None:
        self.info = info
        self.cancel = asyncio.Event()
        self.task: asyncio.Task | None = None
        self.subscribers: set[asyncio.Queue] = set()
        self.release: Callable[[], None] | None = None

    def publish(self, progress: CrawlProgress) -> None:
        self.info.progress = progress
        for queue in list(self.subscribers):
            with contextlib.suppress(asyncio.QueueFull):
                queue.put_nowait(progress)


class Scheduler:
    def __init__(self, registry: Registry, embedder_for: Callable[[Tenant], Embedder], *,
                 metrics=None, on_change: Callable[[str], object] | None = None, periodic: bool = True,
                 on_finish: Callable[[JobInfo], object] | None = None,
                 claim: Callable[[JobInfo], Callable[[], None]] | None = None, page_processes: int = 0) -> None:
        self.registry = registry
        self.embedder_for = embedder_for
        self.page_processes = page_processes
        """Child processes each crawl extracts and chunks its pages in (ingest/page_procs.py)."""
        self.metrics = metrics
        self.on_change = on_change
        self.on_finish = on_finish
        """Called with the JobInfo of every job that ended (outgoing webhooks)."""
        self.periodic = periodic
        self.claim = claim
        """`claim(info)` before a job starts: returns what releases the claim when it ends, or raises
        JobRunning while another process crawls the tenant (app/jobs.py)."""
        self.tick_seconds = TICK_SECONDS
        """How often the periodic loop looks for due jobs (FRONTDESK_SCHEDULER_TICK_SECONDS)."""
        self._jobs: dict[str, _Job] = {}
        self._last: dict[str, JobInfo] = {}
        self._loop_task: asyncio.Task | None = None

    async def start(self) -> None:
        if self.periodic and self._loop_task is None:
            self._loop_task = asyncio.create_task(self._run_periodically())

    async def stop(self) -> None:
        if self._loop_task is not None:
            self._loop_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._loop_task
            self._loop_task = None
        for job in list(self._jobs.values()):
            job.cancel.set()
        tasks = [j.task for j in self._jobs.values() if j.task is not None]
        if tasks:
            await asyncio.wait(tasks, timeout=30)

    def queue_depth(self) -> int:
        return len(self._jobs)

    def job(self, tenant_id: str) -> JobInfo | None:
        running = self._jobs.get(tenant_id)
        return running.info if running else self._last.get(tenant_id)

    def start_job(self, tenant_id: str, options: CrawlOptions | None = None) -> JobInfo:
        """Start a crawl now; refuses (JobRunning) while one runs for the tenant."""
        if tenant_id in self._jobs:
            raise JobRunning(f"a crawl of tenant {tenant_id} is already running", job=self._jobs[tenant_id].info.id)
        tenant = self.registry.get(tenant_id)
        options = options or CrawlOptions()
        kind = "reparse" if options.reparse else "refresh" if options.urls else "full" if options.full else "delta"
        info = JobInfo(id=uuid.uuid4().hex[:12], tenant_id=tenant_id, kind=kind, status="running",
                       started_at=time.time())
        job = _Job(info)
        if self.claim is not None:
            job.release = self.claim(info)
        self._jobs[tenant_id] = job
        if self.metrics is not None:
            self.metrics.queue_depth.set(len(self._jobs))
        job.task = asyncio.create_task(self._run(job, tenant, options))
        return info

    def cancel(self, tenant_id: str) -> bool:
        job = self._jobs.get(tenant_id)
        if job is None:
            return False
        job.cancel.set()
        return True

    async def wait(self, tenant_id: str) -> JobInfo | None:
        job = self._jobs.get(tenant_id)
        if job is not None and job.task is not None:
            await asyncio.wait([job.task])
        return self.job(tenant_id)

    async def subscribe(self, tenant_id: str) -> AsyncIterator[CrawlProgress]:
        """Progress of the tenant's running job until it ends (nothing if none runs)."""
        job = self._jobs.get(tenant_id)
        if job is None:
            return
        queue: asyncio.Queue = asyncio.Queue(maxsize=256)
        job.subscribers.add(queue)
        try:
            if job.info.progress is not None:
                yield job.info.progress
            while job.task is not None and not job.task.done():
                getter = asyncio.ensure_future(queue.get())
                done, _ = await asyncio.wait([getter, job.task], return_when=asyncio.FIRST_COMPLETED)
                if getter in done:
                    yield getter.result()
                else:
                    getter.cancel()
            while not queue.empty():
                yield queue.get_nowait()
        finally:
            job.subscribers.discard(queue)

    async def _run(self, job: _Job, tenant: Tenant, options: CrawlOptions) -> None:
        info = job.info
        try:
            embedder = await anyio.to_thread.run_sync(self.embedder_for, tenant)
            summary = await crawl(tenant, embedder, options, job_id=info.id, on_progress=job.publish,
                                  cancel=job.cancel, page_processes=self.page_processes)
            info.summary = summary
            info.status = summary.status
            if self.metrics is not None:
                self._count(summary)
        except FrontdeskError as exc:
            info.status, info.error = "failed", exc.message
        except Exception as exc:  # logged by the pipeline; the scheduler keeps running
            info.status, info.error = "failed", repr(exc)[:300]
        finally:
            info.finished_at = time.time()
            self._jobs.pop(info.tenant_id, None)
            if job.release is not None:
                job.release()
            self._last[info.tenant_id] = info
            if self.metrics is not None:
                self.metrics.queue_depth.set(len(self._jobs))
            if self.on_change is not None:
                self.on_change(info.tenant_id)
            if self.on_finish is not None:
                try:
                    self.on_finish(info)
                except Exception:  # a listener's failure never breaks the scheduler
                    log.exception("crawl end listener failed for tenant %s", info.tenant_id)

    def _count(self, summary: CrawlSummary) -> None:
        for outcome, value in (("fetched", summary.fetched), ("not_modified", summary.not_modified),
                               ("unchanged", summary.skipped_unchanged), ("failed", summary.failed),
                               ("removed", summary.removed)):
            if value:
                self.metrics.pages_crawled.inc(value, outcome=outcome)
        self.metrics.chunks_embedded.inc(summary.chunks_embedded)

    def due(self, tenant: Tenant, now: float) -> CrawlOptions | None:
        """The job a tenant needs now by its schedule, if any."""
        settings = tenant.config().crawl
        with tenant.reading() as conn:
            last: dict[str, float] = tenant.store.analytics.last_done(conn)
        last_full = last.get("full", 0.0)
        last_any = max([last_full, last.get("delta", 0.0)])
        if settings.full_every_days and now - last_full >= settings.full_every_days * 86400:
            return CrawlOptions(full=True)
        if settings.delta_every_hours and now - last_any >= settings.delta_every_hours * 3600:
            return CrawlOptions()
        return None

    async def _run_periodically(self) -> None:
        while True:
            await asyncio.sleep(self.tick_seconds)
            for tenant_id in self.registry.ids():
                if tenant_id in self._jobs:
                    continue
                try:
                    tenant = self.registry.get(tenant_id)
                    options = await anyio.to_thread.run_sync(self.due, tenant, time.time())
                    if options is not None:
                        self.start_job(tenant_id, options)
                except FrontdeskError as exc:
                    log.warning("scheduler skipped tenant %s: %s", tenant_id, exc.message)
