"""The render stage of a crawl job: from a fetched page to the Document that gets indexed,
through headless Chromium when the tenant's ``crawl.render`` and the page call for it.

``never``: the HTML as served. ``auto``: rendered when ``detect_shell`` says the HTML is an app
shell, and the rendered result kept only when it adds content. ``always``: every page rendered.
The browser starts at the first page that needs it (Playwright is imported then, not before) and
stops with the job. Every decision is recorded per URL (table ``render_decisions``).
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from typing import TYPE_CHECKING

import anyio
import msgspec

from ingest.charset import decode_html
from ingest.crawl.fetch import FetchResult
from ingest.crawl.urls import UrlPolicy
from ingest.document import Document
from ingest.extract import extract
from ingest.render.shell import ShellVerdict, detect_shell
from store.config import SiteConfig
from store.errors import FetchError
from store.pages import RenderDecision
from store.tenants import Tenant

if TYPE_CHECKING:
    from ingest.render.browser import BrowserSession, RenderLimits

log = logging.getLogger(__name__)

#: A rendered page is kept (``auto``) when it has at least this many more characters of text
#: than the HTML as served, or a tenth more, or more structured facts.
MIN_GAIN_CHARS = 40
#: Decisions are written in batches of this many (and when the job ends).
FLUSH_EVERY = 50
#: The browser's bounds for every job (None: ``RenderLimits()``'s defaults); tests and
#: benchmarks set it to measure or to provoke.
LIMITS: RenderLimits | None = None


class PreparedPage(msgspec.Struct, kw_only=True):
    """What the pipeline indexes for a fetched page."""

    doc: Document
    html: bytes
    """The HTML kept as the page's cached copy: the rendered DOM when the rendering was kept, so
    ``crawl --reparse`` rebuilds the same chunks without a browser."""
    encoding: str | None


def text_size(doc: Document) -> int:
    """Characters of indexable text: main-content sections plus fact sentences."""
    return sum(len(s.text) for s in doc.sections) + sum(len(f.text) for f in doc.facts)


def adds_content(static: Document, rendered: Document) -> bool:
    """Whether the rendered page says more than the HTML as served."""
    before, after = text_size(static), text_size(rendered)
    return after >= before + max(MIN_GAIN_CHARS, before // 10) or len(rendered.facts) > len(static.facts)


def _read_static(result: FetchResult, judge: bool) -> tuple[Document, ShellVerdict | None]:
    doc = extract(result.body, result.final_url, headers=result.headers, encoding=result.encoding)
    if not judge or doc.noindex:
        return doc, None
    html = decode_html(result.body, headers=result.headers, encoding=result.encoding)
    return doc, detect_shell(html, main_chars=sum(len(s.text) for s in doc.sections))


class RenderStage:
    """Decides, per fetched page, whether to render it; renders; records why. An async context
    manager around one crawl job (the browser, when one was started, is closed on exit)."""

    def __init__(self, tenant: Tenant, config: SiteConfig, policy: UrlPolicy,
                 limits: RenderLimits | None = None) -> None:
        self.tenant = tenant
        self.config = config
        self.mode = config.crawl.render
        self.policy = policy
        self.limits = limits if limits is not None else LIMITS
        self.counts: Counter[str] = Counter()
        self._session: BrowserSession | None = None
        self._unavailable: FetchError | None = None
        self._pending: list[RenderDecision] = []

    async def __aenter__(self) -> RenderStage:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        try:
            if self._session is not None:
                await self._session.close()
        finally:
            await self._flush()

    @property
    def browser_started(self) -> bool:
        return self._session is not None and self._session.launches > 0

    def summary(self) -> dict[str, int]:
        """Counters for the crawl summary: pages by decision, browser starts and recycles,
        requests the pages' scripts made and had refused, the browser's peak memory (MB)."""
        counts = dict(self.counts)
        if self._session is not None:
            session = self._session
            counts["browser_starts"] = session.launches
            counts["browser_recycles"] = sum(session.recycles.values())
            counts["popups_blocked"] = session.popups_blocked
            counts["subrequests"] = session.network.requests
            counts["subrequest_cache_hits"] = session.network.cache_hits
            counts["browser_peak_mb"] = round(session.peak_mb)
        return counts

    async def prepare(self, result: FetchResult) -> PreparedPage:
        """The page to index for ``result``; FetchError(reason="render_…") if it had to be
        rendered and could not be."""
        try:
            return await self._prepare(result)
        finally:
            if len(self._pending) >= FLUSH_EVERY:
                await self._flush()

    async def _prepare(self, result: FetchResult) -> PreparedPage:
        judge = self.mode == "auto"
        static, verdict = await anyio.to_thread.run_sync(_read_static, result, judge)
        as_served = PreparedPage(doc=static, html=result.body, encoding=result.encoding)
        if self.mode == "never":
            self._record(result.url, "static", "render_never")
            return as_served
        if static.noindex:
            self._record(result.url, "static", "noindex")
            return as_served  # the pipeline drops it; a script cannot take noindex back
        if verdict is not None and not verdict.render:
            self._record(result.url, "static", verdict.reason)
            return as_served
        why = verdict.reason if verdict is not None else "always"
        try:
            rendered = await self._render(result)
        except FetchError as exc:
            self._record(result.url, "render_failed", exc.reason)
            raise
        doc = await anyio.to_thread.run_sync(
            lambda: extract(rendered.html, result.final_url, headers=result.headers, encoding="utf-8"))
        doc.links = list(dict.fromkeys([*doc.links, *rendered.routes]))
        details = {"render_ms": rendered.ms, "requests": rendered.requests, "blocked": rendered.blocked}
        self.counts["requests_blocked"] += rendered.blocked_count
        if self.mode == "auto" and not adds_content(static, doc):
            static.links = list(dict.fromkeys([*static.links, *doc.links]))
            self._record(result.url, "render_discarded", why, **details)
            return as_served
        self._record(result.url, "rendered", why, **details)
        return PreparedPage(doc=doc, html=rendered.html.encode("utf-8"), encoding="utf-8")

    async def _render(self, result: FetchResult):
        if self._unavailable is not None:
            raise FetchError(self._unavailable.message, reason=self._unavailable.reason, url=result.url)
        if self._session is None:
            try:
                from ingest.render.browser import BrowserSession  # Playwright: only now
            except ImportError as exc:
                self._unavailable = FetchError(
                    f"rendering needs the frontdesk[render] extra (pip install 'frontdesk[render]'): {exc}",
                    reason="render_unavailable")
                log.warning("crawl.render=%s but %s", self.mode, self._unavailable.message)
                raise FetchError(self._unavailable.message, reason="render_unavailable", url=result.url) from None
            self._session = BrowserSession(self.config.crawl, self.policy, self.limits)  # starts at its first page
        content_type = result.headers.get("content-type") or "text/html"
        try:
            return await self._session.render(result.final_url, result.body, content_type)
        except FetchError as exc:
            if exc.reason == "render_unavailable" and self._unavailable is None:
                self._unavailable = exc  # no chromium, or it would not start: the job's other pages fail fast
                log.warning("crawl.render=%s but %s", self.mode, exc.message)
            raise

    def _record(self, url: str, decision: str, reason: str, **details: object) -> None:
        self.counts[decision] += 1
        self._pending.append(RenderDecision(url=url, mode=self.mode, decision=decision, reason=reason,
                                            at=time.time(), **details))  # type: ignore[arg-type]

    async def _flush(self) -> None:
        batch, self._pending = self._pending, []
        if batch:
            await anyio.to_thread.run_sync(self._write, batch)

    def _write(self, batch: list[RenderDecision]) -> None:
        with self.tenant.write() as conn:
            self.tenant.store.pages.record_render_decisions(conn, batch)
