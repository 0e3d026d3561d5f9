"""The browser's network: which requests a rendered page may make, and the guarded HTTP client
that makes them in the browser's place.

Chromium itself has no working network while it renders (a dead proxy, no name resolution; see
``browser.py``): every request it wants goes through route interception to ``BrowserNetwork``,
which refuses what the tenant's rules refuse (scheme, allowed hosts, images / media / fonts,
known trackers, private and metadata addresses) and fetches the rest itself through the
crawler's SSRF-guarded transport (``ingest.crawl.netguard``), following redirects one vetted hop
at a time under the crawl's size and time caps. Nothing here imports Playwright.
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import time
from collections.abc import Mapping
from urllib.parse import urljoin

import httpx
import msgspec

from ingest.crawl.fetch import BoundedDecoder
from ingest.crawl.netguard import GuardedTransport, address_block_reason
from ingest.crawl.urls import UrlPolicy, split_url
from store.config import CrawlSettings
from store.errors import FetchError

log = logging.getLogger(__name__)

#: Resource types a rendered page never loads: they add no text, and cost most of the bytes.
#: ``ping`` is navigator.sendBeacon and <a ping>; ``other`` covers prefetches and favicons.
BLOCKED_RESOURCE_TYPES = frozenset(
    {"image", "media", "font", "manifest", "texttrack", "eventsource", "websocket", "ping", "other"}
)
#: Analytics, advertising and session-recording hosts (and their subdomains): refused even when
#: a tenant lists them in allowed_hosts, since loading them only reports the crawler as a visit.
TRACKER_HOSTS = frozenset(
    """google-analytics.com googletagmanager.com googlesyndication.com googleadservices.com
    doubleclick.net adservice.google.com facebook.net connect.facebook.net hotjar.com hotjar.io
    segment.com segment.io mixpanel.com fullstory.com clarity.ms nr-data.net newrelic.com
    heapanalytics.com amplitude.com quantserve.com scorecardresearch.com adnxs.com criteo.com
    criteo.net taboola.com outbrain.com bat.bing.com ads.linkedin.com snap.licdn.com
    analytics.tiktok.com static.ads-twitter.com plausible.io matomo.cloud mouseflow.com
    crazyegg.com optimizely.com kissmetrics.com mc.yandex.ru""".split()  # noqa: SIM905
)
_TRACKER_SCRIPTS = ("/gtag/js", "/gtm.js", "/analytics.js", "/ga.js", "/matomo.js", "/piwik.js",
                    "/fbevents.js", "/hotjar-")
#: Methods a page's scripts may use. Documents are only ever GET (no form is submitted).
ALLOWED_METHODS = frozenset({"GET", "HEAD", "POST", "OPTIONS"})
MAX_REDIRECTS = 5
#: Concurrent requests per host from the page's scripts (the page itself went through the
#: crawler's politeness slot): enough for a bundle and its data, not a flood.
PER_HOST_CONCURRENCY = 4
#: Responses kept for the rest of the job (scripts, styles and data every page of an app
#: loads again), by total size.
CACHE_BYTES = 64_000_000
_CACHEABLE_TYPES = frozenset({"script", "stylesheet", "fetch", "xhr"})
#: Reasons that say the page tried to reach something it must not: logged as warnings.
SECURITY_REASONS = frozenset(
    {"off_site", "off_site_redirect", "blocked_private_address", "blocked_scheme",
     "blocked_method", "navigation_blocked", "form_submit_blocked", "websocket_blocked"}
)
_HOP_BY_HOP = frozenset(
    {"connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te", "trailer",
     "transfer-encoding", "upgrade", "content-length", "content-encoding", "set-cookie",
     "set-cookie2", "strict-transport-security", "alt-svc", "report-to", "nel"}
)
_REQUEST_HEADERS_DROPPED = frozenset({"host", "accept-encoding", "cookie", "connection", "content-length"})


def is_tracker(host: str, path: str = "") -> bool:
    """Whether ``host`` (or a parent domain of it) is a known tracker, or ``path`` a tracker's
    well-known script served from the site itself."""
    host = host.lower().rstrip(".")
    parts = host.split(".")
    if any(".".join(parts[i:]) in TRACKER_HOSTS for i in range(len(parts) - 1)):
        return True
    return any(marker in path for marker in _TRACKER_SCRIPTS)


def request_block_reason(url: str, resource_type: str, method: str, policy: UrlPolicy,
                         allow_private: bool) -> str | None:
    """Why the browser may not make this request (None: it may, subject to the address check
    at connect time). Cheap and synchronous: no name is resolved here."""
    split = split_url(url)
    if split is None:
        return "blocked_scheme"
    _, host, _, path, _ = split
    if is_tracker(host, path):
        return "tracker"
    if resource_type in BLOCKED_RESOURCE_TYPES:
        return f"blocked_{resource_type}"
    if method.upper() not in ALLOWED_METHODS:
        return "blocked_method"
    if not policy.on_site(url):
        return "off_site"
    literal = host.strip("[]")
    try:
        ipaddress.ip_address(literal)
    except ValueError:
        return None  # a name: GuardedTransport resolves it and vets every address at connect
    return address_block_reason(literal, allow_private)


class Fetched(msgspec.Struct):
    """One response handed back to the browser."""

    status: int
    headers: dict[str, str]
    body: bytes
    url: str
    """The URL that answered, after redirects."""


class PageBudget:
    """What one page's scripts may still spend: requests, bytes, and time until its deadline."""

    def __init__(self, max_requests: int, max_bytes: int, deadline: float) -> None:
        self.max_requests = max_requests
        self.max_bytes = max_bytes
        self.deadline = deadline
        self.requests = 0
        self.bytes = 0

    def take_request(self) -> bool:
        """Count one request; False once the page is over its request budget."""
        self.requests += 1
        return self.requests <= self.max_requests

    def remaining_s(self) -> float:
        return max(0.0, self.deadline - time.monotonic())


class BrowserNetwork:
    """The guarded HTTP client that answers the browser's requests for one crawl job.

    Same transport as the crawler's Fetcher (resolve, vet every address, connect to the vetted
    one), same user agent, the crawl's per-response size cap, redirects followed here one hop at
    a time with each hop checked again (a fulfilled response cannot redirect the browser, and a
    redirect the browser followed itself would escape interception).
    """

    def __init__(self, config: CrawlSettings, policy: UrlPolicy) -> None:
        self.config = config
        self.policy = policy
        self.requests = 0
        self.cache_hits = 0
        self._client = httpx.AsyncClient(
            transport=GuardedTransport(config.allow_private_network),
            timeout=httpx.Timeout(config.timeout),
            follow_redirects=False,
            trust_env=False,
        )
        self._hosts: dict[str, asyncio.Semaphore] = {}
        self._cache: dict[str, Fetched] = {}
        self._loading: dict[str, asyncio.Future[Fetched]] = {}
        self._cache_bytes = 0

    async def aclose(self) -> None:
        await self._client.aclose()

    def block_reason(self, url: str, resource_type: str, method: str) -> str | None:
        return request_block_reason(url, resource_type, method, self.policy,
                                    self.config.allow_private_network)

    async def fetch(self, method: str, url: str, headers: Mapping[str, str], body: bytes | None,
                    resource_type: str, budget: PageBudget) -> Fetched:
        """Fetch for the browser; raise FetchError(reason) when refused or failed."""
        cacheable = method == "GET" and resource_type in _CACHEABLE_TYPES
        if not cacheable:
            return await self._fetch(method, url, headers, body, resource_type, budget)
        if (hit := self._cache.get(url)) is not None:
            self.cache_hits += 1
            return hit
        if (pending := self._loading.get(url)) is not None:  # two pages want the same bundle
            self.cache_hits += 1
            return await asyncio.shield(pending)
        loading = asyncio.ensure_future(self._fetch(method, url, headers, body, resource_type, budget))
        loading.add_done_callback(_retrieved)
        self._loading[url] = loading
        try:
            fetched = await asyncio.shield(loading)
        finally:
            self._loading.pop(url, None)
        if fetched.status == 200 and "no-store" not in fetched.headers.get("cache-control", ""):
            self._remember(url, fetched)
        return fetched

    async def _fetch(self, method: str, url: str, headers: Mapping[str, str], body: bytes | None,
                     resource_type: str, budget: PageBudget) -> Fetched:
        sent = {k: v for k, v in headers.items() if k.lower() not in _REQUEST_HEADERS_DROPPED}
        sent["User-Agent"] = self.config.user_agent
        sent["Accept-Encoding"] = "gzip, deflate"
        current = url
        for _ in range(MAX_REDIRECTS + 1):
            timeout = budget.remaining_s()
            if timeout <= 0:
                raise FetchError(f"{url}: the page's deadline passed", reason="timeout", url=url)
            try:
                status, response_headers, content = await self._exchange(method, current, sent, body, timeout, budget)
            except TimeoutError:
                raise FetchError(f"{current}: timed out", reason="timeout", url=current) from None
            location = response_headers.get("location")
            if status in (301, 302, 303, 307, 308) and location:
                target = urljoin(current, location.strip()).split("#", 1)[0]
                if (reason := self.block_reason(target, resource_type, "GET")) is not None:
                    raise FetchError(f"{current} redirects to {target}",
                                     reason="off_site_redirect" if reason == "off_site" else reason, url=target)
                if status == 303 or (status in (301, 302) and method == "POST"):
                    method, body = "GET", None
                current = target
                continue
            return Fetched(status=status, headers=response_headers, body=content, url=current)
        raise FetchError(f"{url} redirects more than {MAX_REDIRECTS} times", reason="too_many_redirects", url=url)

    async def _exchange(self, method: str, url: str, headers: dict[str, str], body: bytes | None,
                        timeout: float, budget: PageBudget) -> tuple[int, dict[str, str], bytes]:
        host = (split_url(url) or ("", ""))[1]
        slot = self._hosts.setdefault(host, asyncio.Semaphore(PER_HOST_CONCURRENCY))
        limit = max(0, min(self.config.max_bytes, budget.max_bytes - budget.bytes))
        async with slot, asyncio.timeout(timeout):
            self.requests += 1
            request = self._client.build_request(method, url, headers=headers, content=body)
            try:
                response = await self._client.send(request, stream=True)
            except httpx.TimeoutException:
                raise FetchError(f"{url}: timed out", reason="timeout", url=url) from None
            except httpx.TransportError as exc:
                raise FetchError(f"{url}: {exc!r}", reason="connection_error", url=url) from None
            try:
                response_headers = {k.lower(): v for k, v in response.headers.items()}
                declared = response_headers.get("content-length", "")
                if declared.isdigit() and int(declared) > limit:
                    raise FetchError(f"{url} is {declared} bytes, over {limit}", reason="too_large", url=url)
                decoder = BoundedDecoder(response_headers.get("content-encoding", ""), limit, url)
                async for chunk in response.aiter_raw():
                    decoder.feed(chunk)
                content = decoder.finish()
            finally:
                await response.aclose()
        budget.bytes += len(content)
        kept = {k: v for k, v in response_headers.items() if k not in _HOP_BY_HOP}
        return response.status_code, kept, content

    def _remember(self, url: str, fetched: Fetched) -> None:
        if self._cache_bytes + len(fetched.body) > CACHE_BYTES:
            return
        self._cache[url] = fetched
        self._cache_bytes += len(fetched.body)


def _retrieved(future: asyncio.Future) -> None:
    """A shared fetch whose waiters all went away: its error was theirs, not the loop's."""
    if not future.cancelled():
        future.exception()
