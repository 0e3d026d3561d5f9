"""One crawl job: discover → fetch (conditional) → extract → index, with the delta rules that keep
recrawls cheap, progress events, and a summary (their shapes: ingest/crawl_report.py).

Two stages run side by side (issue 15): fetching writes each page with its chunks at once, so it
is searchable by its text as soon as it is fetched, and the embedding stage (ingest/embed_stage.py)
gives the new chunks their vectors in the gaps the page path leaves. The page path's CPU-bound
half (extraction, cleaning, chunking, the raw cache's scrub) runs in a child process where the
machine has a core for it (ingest/page_procs.py), so fetching and writing keep this one. Once
every page's text is written the full-text index is merged; the job ends when both stages are done; a
cancelled job says how many chunks still wait for vectors (`chunks_pending`), and the next crawl,
or `frontdesk serve` opening the tenant, embeds them.

Delta rules (README.md, "CLI": `crawl`): a page whose sitemap lastmod is unchanged is not fetched; a
re-fetch sends If-None-Match / If-Modified-Since and a 304 costs no parsing; the content hash
decides whether a page changed; only chunks whose text is new are embedded, once each; pages that are gone
(404/410, now noindex, dropped from a sitemap that did load) are tombstoned. Each page is one
transaction and its validators are stored with it, so a crash leaves no half page and a re-run
picks up where it stopped.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections import Counter
from collections.abc import Callable
from functools import partial
from typing import cast
from urllib.parse import urljoin

import anyio
import msgspec

from ingest.crawl.fetch import Fetcher, FetchResult, is_transient
from ingest.crawl.frontier import Frontier
from ingest.crawl.junk import JunkDetector
from ingest.crawl.robots import fetch_robots
from ingest.crawl.sitemaps import load_sitemaps
from ingest.crawl.urls import normalize_url
from ingest.crawl_report import CrawlProgress, CrawlSummary
from ingest.embed import Embedder
from ingest.embed_stage import EmbedStage
from ingest.extract import extract
from ingest.facts.read import load_extruct
from ingest.indexer import PageIndexer
from ingest.manifest import refresh_manifests
from ingest.page_procs import PageProcesses
from ingest.render import RenderStage
from store.config import SiteConfig
from store.errors import FetchError, FrontdeskError, StoreError
from store.pages import PageState
from store.tenants import Tenant

log = logging.getLogger(__name__)

#: Fetch/extract workers; writes are serialised behind them (one writer per tenant), embedding runs
#: beside them (ingest/embed_stage.py).
WORKERS = 4

#: A crawl of fewer listed URLs than this (`crawl --url`) starts no page process.
FEW_PAGES = 10

#: How long after a page was written the page path still counts as busy (`_Job.page_path_busy`):
#: with politeness off the next page is already on its way, at the default 2 requests a second
#: there is a gap of ~0.4 s for the embedding stage.
PAGE_GAP_S = 0.2


class CrawlOptions(msgspec.Struct, kw_only=True):
    full: bool = False
    """Ignore sitemap lastmod and validators: fetch every page (content hashes still decide)."""
    reparse: bool = False
    """Rebuild chunks from the cached HTML, without the network."""
    max_pages: int | None = None
    rate: float | None = None
    urls: list[str] | None = None
    """Refresh only these URLs (the webhook); no discovery, no removals beyond them."""


ProgressCallback = Callable[[CrawlProgress], None]


class _Job:
    """Mutable state of one running crawl, shared by its workers."""

    def __init__(self, tenant: Tenant, indexer: PageIndexer, config: SiteConfig, job_id: str,
                 on_progress: ProgressCallback | None, cancel: asyncio.Event,
                 pages: PageProcesses | None = None) -> None:
        self.tenant = tenant
        self.indexer = indexer
        self.pages = pages or PageProcesses(0, "")
        self.config = config
        self.summary = CrawlSummary()
        self.progress = CrawlProgress(job=job_id)
        self.on_progress = on_progress
        self.cancel = cancel
        self.started = time.monotonic()
        self.errors: list[tuple[str, str, str]] = []
        self.skipped: Counter[str] = Counter()
        self.index_lock = asyncio.Lock()
        self.states: dict[str, PageState] = {}
        self.sitemap: dict[str, str | None] = {}
        self.reached: set[str] = set()
        self.canonicals_there: dict[str, bool] = {}
        """Canonical URLs other pages named, and whether each answered 2xx when asked (`_identity`)."""
        self.manifest_hints: set[str] = set()  # actions.json files pages point at (<link rel="actions">)
        self.junk = JunkDetector(enabled=False)  # made for the crawl once page states are read
        self.render: RenderStage | None = None
        self.stopped_by: StoreError | None = None  # the tenant file could not be written: the job ends
        self.stage: EmbedStage | None = None
        self._last_emit = 0.0
        self.pages_in_hand = 0  # fetched pages being extracted and written right now
        self.page_done_at = 0.0

    def page_path_busy(self) -> bool:
        """Whether fetched pages are being extracted and written, or one was a moment ago (the
        next is likely on its way): the embedding stage waits for a gap (embed_stage.py)."""
        return self.pages_in_hand > 0 or time.monotonic() - self.page_done_at < PAGE_GAP_S

    def emit(self, url: str = "", force: bool = False) -> None:
        s, p = self.summary, self.progress
        p.fetched, p.not_modified, p.unchanged = s.fetched, s.not_modified, s.skipped_unchanged
        p.failed, p.removed, p.found = s.failed, s.removed, s.pages_found
        p.chunks_added = s.chunks_added
        p.chunks_embedded = s.chunks_embedded = self.stage.embedded if self.stage is not None else 0
        p.elapsed_s = round(time.monotonic() - self.started, 2)
        done = s.fetched + s.not_modified + s.skipped_unchanged + s.failed + sum(self.skipped.values())
        rate = done / p.elapsed_s if p.elapsed_s > 0 else 0
        p.eta_s = round(p.queued / rate, 1) if rate and p.queued else None
        p.url = url
        now = time.monotonic()
        if self.on_progress and (force or now - self._last_emit > 0.25):
            self._last_emit = now
            self.on_progress(msgspec.structs.replace(p))

    def fail(self, url: str, reason: str, message: str = "") -> None:
        self.summary.failed += 1
        self.errors.append((url, reason, message[:500]))

    def embedded_batch(self, pending: int) -> None:
        """The embedding stage wrote a batch of vectors; `pending` chunks are left."""
        self.progress.chunks_pending = pending
        self.emit(self.progress.url)

    async def index(self, doc, **kwargs) -> None:
        # Made ready in a page process while other pages are written (ingest/page_procs.py);
        # without one, in the write's thread.
        prepared = await self.pages.prepare(doc, self.indexer.clean, self.indexer.target_tokens,
                                            html=kwargs.get("html"), encoding=kwargs.get("encoding"),
                                            previous_hash=kwargs.get("previous_hash"))
        async with self.index_lock:  # one writer at a time (the vectors come later: embed_stage.py)
            stats = await anyio.to_thread.run_sync(lambda: self.indexer.index(doc, prepared=prepared, **kwargs))
        if not stats.changed and kwargs.get("previous_hash"):
            self.summary.skipped_unchanged += 1  # fetched, but the content hash says: same page
            return
        self.summary.fetched += 1
        self.summary.chunks_added += stats.chunks_added
        self.summary.chunks_deleted += stats.chunks_deleted
        self.progress.chunks_pending += stats.chunks_pending

    async def remove(self, url: str, reason: str, status: int | None = None, *, junk: bool = False) -> None:
        state = self.states.get(url)
        if state is None or state.status != "active":
            return
        async with self.index_lock:
            deleted = await anyio.to_thread.run_sync(lambda: self.indexer.remove(url, reason, status))
        state.status = "gone"
        self.summary.removed += not junk  # junk is counted in skipped_junk, not as gone from the site
        self.summary.chunks_deleted += deleted


def _start_run(tenant: Tenant, kind: str) -> int:
    with tenant.write() as conn:
        return int(tenant.store.crawls.start_run(conn, kind))


def _finish_run(tenant: Tenant, run_id: int, summary: CrawlSummary, errors: list[tuple[str, str, str]]) -> None:
    with tenant.write() as conn:
        tenant.store.crawls.finish_run(conn, run_id, summary.status, msgspec.json.encode(summary).decode(), errors)


def _store_junk(job: _Job, run_id: int, complete: bool) -> None:
    """Record why each junk URL was kept out. A full crawl reads every page it reaches, so its
    list replaces the last one; other runs add to it."""
    records = job.junk.records()
    if not records and not complete:
        return
    indexed = [url for url, state in job.states.items() if state.status == "active"]
    with job.tenant.write() as conn:
        job.tenant.store.pages.record_junk(conn, run_id, records, indexed, replace=complete)


def _compact_text_index(job: _Job) -> None:
    """Merge the full-text index's segments once fetching has written every page's text. A
    failure (a full disk) leaves the index as it was: complete, a little slower to read."""
    try:
        job.indexer.compact()
    except FrontdeskError as exc:
        log.warning("the text index of tenant %s stays unmerged: %s", job.tenant.id, exc.message,
                    extra={"trace_id": job.progress.job})


def _store_sitemap(tenant: Tenant, sitemap: dict[str, str | None]) -> None:
    with tenant.write() as conn:
        tenant.store.crawls.replace_sitemap(conn, sitemap)


async def _process(job: _Job, fetcher: Fetcher, frontier: Frontier, url: str, depth: int,
                   options: CrawlOptions) -> None:
    state = job.states.get(url)
    lastmod = job.sitemap.get(url)
    if (not options.full and not options.urls and state is not None and state.status == "active"
            and lastmod is not None and state.sitemap_lastmod == lastmod):
        job.summary.skipped_unchanged += 1  # the sitemap says it has not changed: no request at all
        job.reached.add(url)
        return
    # Only a page already indexed is asked for "changed since"; a full crawl asks for everything.
    known = state if state is not None and state.status == "active" and not options.full else None
    try:
        result = await fetcher.get(url, etag=known.etag if known else None,
                                   last_modified=known.last_modified if known else None)
    except FetchError as exc:
        job.reached.add(url)  # an error is not evidence that the page is gone: keep it
        # A busy machine or a hiccuping server: try once more after the rest had its turn.
        if is_transient(exc) and frontier.defer(url, depth, cast(float | None, exc.details.get("retry_after"))):
            job.summary.retried_later += 1
            log.info("will retry %s later (%s)", url, exc.reason, extra={"trace_id": job.progress.job})
            return
        job.fail(url, exc.reason, exc.message)
        return
    job.reached.add(url)
    if frontier.rounds[url]:
        job.summary.recovered_later += 1
    job.pages_in_hand += 1
    try:
        await _take_page(job, fetcher, frontier, url, depth, options, result, state, lastmod)
    finally:
        job.pages_in_hand -= 1
        job.page_done_at = time.monotonic()


async def _take_page(job: _Job, fetcher: Fetcher, frontier: Frontier, url: str, depth: int,
                     options: CrawlOptions, result: FetchResult, state: PageState | None,
                     lastmod: str | None) -> None:
    """What a fetched response does to the index: a page written, marked unchanged or removed."""
    if result.status == 304:
        job.summary.not_modified += 1
        await anyio.to_thread.run_sync(lambda: _mark(job, url, result.headers, lastmod))
        return
    if result.status in (404, 410):
        if state is not None and state.status == "active":
            await job.remove(url, f"http_{result.status}", result.status)
        else:
            job.fail(url, f"http_{result.status}", "not found")
        return
    if not result.body.strip():
        job.fail(url, "empty", "the page has no content")
        return
    try:  # the HTML as served, or rendered in a browser when crawl.render and the page call for it
        page = await job.render.prepare(result) if job.render is not None else None
    except FetchError as exc:
        job.fail(url, exc.reason, exc.message)
        return
    body, encoding = (page.html, page.encoding) if page is not None else (result.body, result.encoding)
    doc = page.doc if page is not None else await job.pages.extract(result.body, result.final_url,
                                                                     result.headers, result.encoding)
    identity = await _identity(job, doc.canonical_url, result.final_url, fetcher)
    doc.canonical_url = identity
    if doc.actions_manifest:
        job.manifest_hints.add(doc.actions_manifest)
    if not doc.nofollow and not options.urls:
        for link in doc.links:
            frontier.add(link, depth + 1)
    job.progress.queued = len(frontier)
    if doc.noindex:
        job.skipped["noindex"] += 1
        await job.remove(identity, "noindex")
        if identity != url:
            await job.remove(url, "noindex")
        return
    if identity != url:
        job.reached.add(identity)
        if identity in job.states and url in job.states and job.states[url].status == "active":
            await job.remove(url, "canonical_elsewhere")  # an alias of another page's identity
    verdict = await anyio.to_thread.run_sync(job.junk.observe, url, depth, doc)
    for record in verdict.retract:  # earlier members of a family judged junk only now
        await job.remove(record.url, record.reason, junk=True)
    if verdict.exclude is not None:
        await job.remove(url, verdict.exclude.reason, junk=True)  # never the canonical target: it is real
        return
    known = job.states.get(identity)
    previous = known.content_hash if known is not None and known.status == "active" else None
    await job.index(doc, html=body, encoding=encoding, etag=result.headers.get("etag"),
                    last_modified=result.headers.get("last-modified"),
                    sitemap_lastmod=job.sitemap.get(identity, lastmod), http_status=result.status,
                    previous_hash=previous)
    job.states[identity] = PageState(id=0, url=identity, status="active", etag=None, last_modified=None,
                                     sitemap_lastmod=None, content_hash=None)
    if (late := job.junk.excluded(url)) is not None:  # its family was judged junk meanwhile
        await job.remove(url, late.reason, junk=True)


async def _identity(job: _Job, canonical: str, fetched: str, fetcher: Fetcher) -> str:
    """rel=canonical is the page's identity when it points at an allowed host and that page is
    there; else the URL. A canonical that names a missing page (a template's wrong path, a saved
    copy's file name) would leave the page's citations leading nowhere: it is asked for once per
    crawl (unless the crawl may not ask for it), and a page that does not answer 2xx is not the
    identity."""
    own = normalize_url(fetched) or fetched
    normalized = normalize_url(canonical) if canonical else None
    if (not normalized or normalized == own or fetcher.policy.allows(normalized) is not None
            or fetcher.robots_reason(normalized) is not None):
        return own  # off the site, or a page this crawl may not ask for: not known to be there
    there = job.canonicals_there.get(normalized)
    if there is None:
        try:
            there = 200 <= (await fetcher.get(normalized)).status < 300
        except FetchError:
            there = False  # unknown: the page stays reachable under its own URL
        job.canonicals_there[normalized] = there
    return normalized if there else own


def _mark(job: _Job, url: str, headers: dict[str, str], lastmod: str | None) -> None:
    with job.tenant.write() as conn:
        job.tenant.store.pages.mark_fetched(conn, url, etag=headers.get("etag"),
                                            last_modified=headers.get("last-modified"), sitemap_lastmod=lastmod)


async def _discover(job: _Job, fetcher: Fetcher, frontier: Frontier, options: CrawlOptions) -> bool:
    """Robots, sitemaps and seeds into the frontier. Returns whether a sitemap loaded."""
    config = job.config
    site = config.site
    robots = await fetch_robots(fetcher, site)
    if options.urls:
        for url in options.urls:
            normalized = normalize_url(url)
            if normalized is None or not frontier.add(normalized, 0):
                job.skipped["refused"] += 1
        return False
    candidates = [urljoin(site, "/sitemap.xml"), *robots.sitemaps, *config.crawl.sitemaps]
    job.sitemap = await load_sitemaps(fetcher, dict.fromkeys(candidates))
    for url in job.sitemap:
        frontier.add(url, 0)
    for seed in [site, *config.crawl.seeds]:
        frontier.add(seed, 0)
    await anyio.to_thread.run_sync(_store_sitemap, job.tenant, job.sitemap)
    return bool(job.sitemap)


async def _remove_vanished(job: _Job, sitemap_loaded: bool) -> None:
    """Pages that were in the sitemap, are not any more, and were not reached by links: gone."""
    if not sitemap_loaded:
        return  # a sitemap that failed to load says nothing about what exists
    for url, state in list(job.states.items()):
        if state.status == "active" and state.sitemap_lastmod is not None and url not in job.sitemap and url not in job.reached:
            await job.remove(url, "removed_from_sitemap")


async def crawl(tenant: Tenant, embedder: Embedder, options: CrawlOptions | None = None, *,
                job_id: str = "", on_progress: ProgressCallback | None = None,
                cancel: asyncio.Event | None = None, page_processes: int = 0) -> CrawlSummary:
    """Run one crawl of a tenant's site and return its summary. Never raises for a bad page.
    `page_processes`: child processes that extract and chunk pages beside this one
    (ingest/page_procs.py); 0 does it in threads here. A model that needs its weights to count
    tokens always does it here."""
    options = options or CrawlOptions()
    config = await anyio.to_thread.run_sync(tenant.config)
    await anyio.to_thread.run_sync(load_extruct)
    crawl_settings = config.crawl
    if options.max_pages is not None:
        crawl_settings = msgspec.structs.replace(crawl_settings, max_pages=options.max_pages)
    if options.rate is not None:
        crawl_settings = msgspec.structs.replace(crawl_settings, rate=options.rate)
    config = msgspec.structs.replace(config, crawl=crawl_settings)
    job_id = job_id or uuid.uuid4().hex[:12]
    # A child's start (~1 s) is more than a refresh of a few pages costs in threads.
    few = options.reparse or (options.urls is not None and len(options.urls) < FEW_PAGES)
    processes = page_processes if embedder.counts_tokens_alone and not few else 0
    job = _Job(tenant, PageIndexer(tenant, embedder, config.clean, defer_vectors=True), config, job_id,
               on_progress, cancel or asyncio.Event(), PageProcesses(processes, embedder.id))
    kind = "reparse" if options.reparse else "refresh" if options.urls else "full" if options.full else "delta"
    run_id = await anyio.to_thread.run_sync(_start_run, tenant, kind)
    trace = {"trace_id": job_id, "tenant": tenant.id, "kind": kind}
    log.info("crawl started", extra=trace)
    job.states = await tenant.read(tenant.store.pages.page_states)
    # A file from before the raw cache was scrubbed is cleaned by its first crawl (README, "Operations").
    await anyio.to_thread.run_sync(job.indexer.scrub_raw_cache)
    job.junk = JunkDetector(enabled=config.crawl.junk_detection,
                            exempt=[url for url, state in job.states.items() if state.status == "active"])
    if kind == "delta":  # a full crawl judges every family afresh
        job.junk.presume(await tenant.read(tenant.store.pages.junk_families))
    # The embedding stage starts with the job: chunks a killed or cancelled job left pending are
    # embedded first, then each page's new chunks as fetching writes them.
    job.stage = EmbedStage(tenant, embedder)
    job.progress.chunks_pending = await anyio.to_thread.run_sync(job.stage.pending)
    fetching_done, stage_stop = asyncio.Event(), asyncio.Event()
    stage = asyncio.create_task(job.stage.run(
        fetching_done, lambda: job.cancel.is_set() or stage_stop.is_set(), on_batch=job.embedded_batch,
        busy=job.page_path_busy))
    try:
        try:
            if options.reparse:
                await _reparse(job)
            else:
                await _crawl_site(job, config, options)
        finally:
            fetching_done.set()
            job.pages.close()  # its memory back before the embedding stage has the cores to itself
        job.summary.searchable_s = round(time.monotonic() - job.started, 3)
        if not job.cancel.is_set():
            job.progress.phase = "embedding"
            job.emit(force=True)
            # The text is all written: lookups get cheaper now, while the vectors are still coming.
            await anyio.to_thread.run_sync(_compact_text_index, job)
        await stage
        job.summary.status = "cancelled" if job.cancel.is_set() else "done"
    except FrontdeskError as exc:  # a known failure (a full disk): its message says it all, no traceback
        log.error("crawl of tenant %s failed: %s", tenant.id, exc.message, extra=trace)
        job.summary.status = "failed"
        job.errors.append(("", exc.code, exc.message[:500]))
        raise
    except Exception as exc:
        log.exception("crawl of tenant %s failed", tenant.id, extra=trace)
        job.summary.status = "failed"
        job.errors.append(("", "crawl_failed", repr(exc)[:500]))
        raise
    finally:
        if not stage.done():  # the job failed or was cancelled from outside: the batch in hand goes in
            stage_stop.set()
        # Its outcome is always collected: a stage that failed too (a full disk fails both) would
        # otherwise be logged at exit as a task exception never retrieved, with a traceback.
        await asyncio.gather(stage, return_exceptions=True)
        job.summary.chunks_embedded = job.stage.embedded
        job.summary.chunks_pending = job.progress.chunks_pending = await tenant.read(
            tenant.store.pending.pending_count)
        job.summary.skipped = dict(job.skipped)
        job.summary.page_limit = config.crawl.max_pages if job.skipped.get("max_pages") else 0
        job.summary.render = job.render.summary() if job.render is not None else {}
        job.summary.page_processes, job.summary.page_process_fallbacks = job.pages.processes, job.pages.fallbacks
        job.summary.errors = dict(Counter(reason for _, reason, _ in job.errors))
        job.summary.junk = job.junk.counts()
        job.summary.skipped_junk = sum(job.summary.junk.values())
        await anyio.to_thread.run_sync(_store_junk, job, run_id, kind == "full")
        job.summary.seconds = round(time.monotonic() - job.started, 3)
        job.progress.phase = job.summary.status
        job.emit(force=True)
        await anyio.to_thread.run_sync(_finish_run, tenant, run_id, job.summary, job.errors)
        log.info("crawl finished", extra={**trace, **msgspec.to_builtins(job.summary)})
    return job.summary


async def _crawl_site(job: _Job, config: SiteConfig, options: CrawlOptions) -> None:
    async with Fetcher(config.crawl, config.site) as fetcher, \
            RenderStage(job.tenant, config, fetcher.policy) as job.render:
        frontier = Frontier.for_fetcher(fetcher)
        frontier.checks.append(job.junk.refusal)
        job.progress.phase = "discovering"
        job.emit(force=True)
        sitemap_loaded = await _discover(job, fetcher, frontier, options)
        job.progress.phase = "crawling"
        job.progress.queued = len(frontier)
        idle = asyncio.Event()
        active = 0

        async def worker() -> None:
            nonlocal active
            while not job.cancel.is_set() and job.stopped_by is None:
                item = frontier.pop()
                if item is None:
                    if active == 0 and not frontier.waiting:
                        idle.set()
                        return
                    # Others may still add links; pages deferred after a failure come due.
                    await asyncio.sleep(0.02 if active else min(frontier.next_due_in(), 0.5))
                    continue
                active += 1
                url, depth = item
                if not frontier.rounds[url]:
                    job.summary.pages_found += 1
                try:
                    await _process(job, fetcher, frontier, url, depth, options)
                except StoreError as exc:
                    # Not a bad page: the tenant file cannot be written (a full disk, a read-only
                    # folder), so no later page could be either. Found by tests/chaos/faults.py:
                    # every page failed and the crawl still ended "done" with exit 0.
                    job.stopped_by = job.stopped_by or exc
                except Exception as exc:  # one bad page never stops the crawl
                    log.exception("page %s failed", url, extra={"trace_id": job.progress.job})
                    job.fail(url, "internal_error", repr(exc))
                finally:
                    active -= 1
                job.progress.queued = len(frontier)
                job.emit(url)

        await asyncio.gather(*(worker() for _ in range(WORKERS)))
        if job.stopped_by is not None:
            raise job.stopped_by
        job.summary.requests = fetcher.requests
        job.summary.loop_stalled_s = round(fetcher.stalls.stalled(), 2)
        for reason, count in frontier.rejected.items():
            job.skipped[reason] += count
        if not job.cancel.is_set() and not options.urls:
            # The site's actions.json (and those its pages point at), with the same fetcher.
            await refresh_manifests(job.tenant, fetcher, job.indexer.clean, config.site, job.manifest_hints,
                                    full=options.full)
            if job.indexer.contacts_learned:
                await _index_again_with_site_contacts(job, fetcher, frontier, options)
            job.summary.requests = fetcher.requests
        if not job.cancel.is_set() and not options.urls and not options.max_pages:
            job.progress.phase = "removing"
            await _remove_vanished(job, sitemap_loaded)


async def _index_again_with_site_contacts(job: _Job, fetcher: Fetcher, frontier: Frontier,
                                          options: CrawlOptions) -> None:
    """Pages indexed before this job learned the site's own contact points (clean.allow_site_contacts)
    had them scrubbed, in the raw cache too: fetch those pages once more (counted again)."""
    urls = await job.tenant.read(job.tenant.store.contacts.pages_with_placeholders)
    again = msgspec.structs.replace(options, full=True, urls=urls)
    for url in urls:
        if job.cancel.is_set():
            return
        await _process(job, fetcher, frontier, url, 0, again)


async def _reparse(job: _Job) -> None:
    """Rebuild every active page's chunks from its cached HTML: no network at all."""
    job.progress.phase = "crawling"
    pages = [s for s in job.states.values() if s.status == "active"]
    job.progress.queued = len(pages)
    for state in pages:
        if job.cancel.is_set():
            break
        job.summary.pages_found += 1
        cached = await job.tenant.read(partial(job.tenant.store.pages.page_html, page_id=state.id))
        if cached is None:
            job.fail(state.url, "no_cached_html")
            continue
        html, encoding = cached
        doc = await anyio.to_thread.run_sync(partial(extract, html, state.url, encoding=encoding))
        doc.canonical_url = state.url
        await job.index(doc, html=html, encoding=encoding, etag=state.etag, last_modified=state.last_modified,
                        sitemap_lastmod=state.sitemap_lastmod)
        job.progress.queued -= 1
        job.emit(state.url)
