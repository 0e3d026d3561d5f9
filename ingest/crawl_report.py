"""What a crawl job reports: the progress snapshots its watchers get (the CLI's line, the admin
API's stream, the console), the summary it ends with (`frontdesk crawl --json`), and the notice
for a crawl that stopped at its page limit."""

from __future__ import annotations

import msgspec


class CrawlProgress(msgspec.Struct, kw_only=True):
    """A snapshot of a running job, sent to progress subscribers (CLI line, admin SSE)."""

    job: str
    phase: str = "starting"
    """starting | discovering | crawling | removing | embedding (every page fetched, vectors still
    going in) | done | cancelled | failed"""
    found: int = 0
    fetched: int = 0
    not_modified: int = 0
    unchanged: int = 0
    failed: int = 0
    removed: int = 0
    chunks_added: int = 0
    """New chunks written (searchable by their text from then on)."""
    chunks_embedded: int = 0
    """Vectors the embedding stage wrote."""
    chunks_pending: int = 0
    """Chunks of the tenant still waiting for their vectors."""
    queued: int = 0
    eta_s: float | None = None
    url: str = ""
    elapsed_s: float = 0.0


class CrawlSummary(msgspec.Struct, kw_only=True):
    """The `frontdesk crawl --json` document (README.md, "CLI") plus diagnostics."""

    pages_found: int = 0
    fetched: int = 0
    not_modified: int = 0
    skipped_unchanged: int = 0
    failed: int = 0
    removed: int = 0
    chunks_added: int = 0
    """New chunks written, each searchable by its text as soon as its page was."""
    chunks_embedded: int = 0
    """Vectors written by this job (new chunks, and any a killed or cancelled job left pending)."""
    chunks_pending: int = 0
    """Chunks still without a vector when the job ended (a cancelled job); embedded next time."""
    searchable_s: float | None = None
    """Seconds until the last page was written (searchable by its text); `seconds` is until every
    vector was in too."""
    chunks_deleted: int = 0
    seconds: float = 0.0
    requests: int = 0
    status: str = "done"
    skipped: dict[str, int] = msgspec.field(default_factory=dict)
    """URLs not crawled, by reason (robots, noindex, off_site, max_pages…)."""
    errors: dict[str, int] = msgspec.field(default_factory=dict)
    """Pages that failed, by reason (timeout, too_large, not_html, http_500…)."""
    skipped_junk: int = 0
    """URLs kept out of the index as generated junk (fetched and judged, or refused unfetched)."""
    junk: dict[str, int] = msgspec.field(default_factory=dict)
    """Those URLs by reason (junk_calendar, junk_query, junk_template)."""
    retried_later: int = 0
    """Later attempts at pages that had failed transiently (timeouts, connection errors, 5xx)."""
    recovered_later: int = 0
    """Pages that failed transiently and then loaded on a later attempt."""
    loop_stalled_s: float = 0.0
    """Seconds the crawler's event loop could not run (a busy machine); request deadlines leave
    them out."""
    render: dict[str, int] = msgspec.field(default_factory=dict)
    """JavaScript pages (crawl.render): pages by decision, browser starts and recycles, requests
    refused, the browser's peak memory in MB (ingest/render/)."""
    page_processes: int = 0
    """Child processes that extracted and chunked the pages (FRONTDESK_CRAWL_PROCESSES; 0: threads)."""
    page_process_fallbacks: int = 0
    """Pages that went to a thread because a page process had died (the rest of the crawl did too)."""
    page_limit: int = 0
    """The page limit (crawl.max_pages, or the job's own) when this crawl reached it: the site has
    more pages than it crawled (`skipped["max_pages"]` URLs found and left); 0 when not reached."""


def page_limit_notice(limit: int, not_crawled: int) -> str:
    """What the owner is told when a crawl stopped at its page limit, and how to raise it."""
    urls = (f"{not_crawled} more URLs of the site were found and not crawled, so they are" if not_crawled != 1
            else "1 more URL of the site was found and not crawled, so it is")
    return (f"The crawl stopped at its page limit (crawl.max_pages = {limit}): {urls} not in the index. "
            "Raise crawl.max_pages (the console's Config page, or PATCH "
            '/admin/tenants/{id}/config with {"crawl": {"max_pages": N}}) and crawl again.')


def summary_line(progress: CrawlProgress) -> str:
    """The one-line progress `frontdesk crawl` shows beside its bar."""
    eta = f" ETA {int(progress.eta_s)}s" if progress.eta_s else ""
    return (f"{progress.phase}: found {progress.found}, fetched {progress.fetched}, 304 {progress.not_modified}, "
            f"unchanged {progress.unchanged}, failed {progress.failed}, removed {progress.removed}, "
            f"chunks searchable +{progress.chunks_added}, embedded {progress.chunks_embedded}, "
            f"pending {progress.chunks_pending}, queued {progress.queued}{eta}")
