"""The polite fetcher: one site's HTTP GETs through the SSRF-guarded transport, with per-host
politeness (rate, robots Crawl-delay), redirects kept on the site, retries with backoff, a
per-request deadline that counts only time the crawler could run, and bodies read under a size
cap and decompressed by a bounded decoder (no gzip bombs).
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import datetime as dt
import email.utils
import logging
import random
import re
import time
import zlib
from collections.abc import AsyncIterator
from urllib.parse import urljoin, urlsplit

import httpx
import msgspec

from ingest.crawl.deadline import StallMeter, runnable_deadline
from ingest.crawl.netguard import GuardedTransport, _TransientFetchError
from ingest.crawl.robots import RobotsRules
from ingest.crawl.urls import UrlPolicy, normalize_url, split_url
from store.config import CrawlSettings
from store.errors import FetchError

logger = logging.getLogger(__name__)

#: Media ranges for ``Fetcher.get(accept=...)``: sent as the Accept header, and any other
#: Content-Type is refused before the body is read.
HTML_ACCEPT = "text/html,application/xhtml+xml"

MAX_REDIRECTS = 5
#: Crawl-delay is honoured up to this many seconds: a larger value would stretch a crawl of a
#: few hundred pages over days, which no site owner who runs frontdesk on their site wants.
MAX_CRAWL_DELAY = 60.0
#: A decompressed/compressed ratio above this marks a decompression bomb (HTML compresses 5-20x).
BOMB_RATIO = 100
#: httpx's own timeouts are this many times the request deadline, and never under
#: ``BACKSTOP_MIN_S``: a backstop, never the limit. They count the time the loop was blocked (which
#: the deadline leaves out), so a short deadline on a busy machine must not make them fire first:
#: one read that waited through a few GIL-holding bursts of another thread is not a slow server.
BACKSTOP_FACTOR = 4
BACKSTOP_MIN_S = 30.0


class FetchResult(msgspec.Struct, kw_only=True):
    """One fetched URL after redirects. ``body`` is decompressed, and empty for 304/404/410."""

    url: str
    """The URL asked for."""
    final_url: str
    """The URL that answered, after redirects."""
    status: int
    """200-299, 304 (not modified), or 404/410 (gone: the pipeline tombstones the page)."""
    headers: dict[str, str]
    """Response headers of the final hop, names lowercased, repeated headers joined by ', '."""
    body: bytes
    content_type: str
    """Media type without parameters, lowercased; '' when the server sent none."""
    encoding: str | None
    """Charset from the Content-Type header when Python knows it, else None (sniff the body)."""
    elapsed_s: float
    """Network time of the successful attempt (all redirect hops), without politeness waits."""
    redirects: list[str]
    """The URLs that answered with a redirect, in order."""


class _RetryableStatus(Exception):
    """Raised by ``_read_response`` for 429 and transient 5xx answers and caught by
    ``Fetcher.get``, which retries or raises a FetchError: it never leaves this module."""

    def __init__(self, status: int, retry_after: float | None) -> None:
        super().__init__(f"HTTP {status}")
        self.status = status
        self.retry_after = retry_after


class _Hop(msgspec.Struct):
    status: int
    headers: dict[str, str]
    body: bytes = b""
    location: str | None = None
    elapsed_s: float = 0.0


class _HostSlot:
    """Politeness state of one host: one request in flight, starts spaced by an interval.

    The slot remembers when the last request started, not when the next may: the interval is
    worked out when the next request wants to go, so a Crawl-delay read from the robots.txt
    that the previous request fetched already spaces the request right after it.
    """

    def __init__(self) -> None:
        self.lock = asyncio.Lock()
        self.last_start: float | None = None


def is_transient(error: FetchError) -> bool:
    """Whether a page that failed this way may well load later: timeouts, connection and DNS
    failures, 429 and 5xx. The crawl retries such a page later in the job."""
    return bool(error.details.get("transient"))


_REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
_GONE_STATUSES = frozenset({404, 410})
_NOT_TRANSIENT_5XX = frozenset({501, 505})


class Fetcher:
    """Polite, SSRF-guarded HTTP GETs for one site's crawl; an async context manager.

    Every request goes through the host's politeness slot (``rate`` requests/s, one in
    flight, robots Crawl-delay if larger), resolves and vets the address, follows at most
    five redirects on the allowed hosts, and reads the body with a cap on raw and
    decompressed bytes inside a per-request deadline. Transient failures (timeouts,
    connection errors, 429, 5xx) are retried with exponential backoff and jitter.
    ``requests`` and ``bytes_received`` count what went over the wire.
    """

    def __init__(
        self,
        config: CrawlSettings,
        site: str,
        *,
        retry_backoff: float = 1.0,
        max_backoff: float = 30.0,
        max_retry_after: float = 120.0,
    ) -> None:
        self.config = config
        self.policy = UrlPolicy(config, site)
        self.requests = 0
        self.bytes_received = 0
        self.retry_backoff = retry_backoff
        self.max_backoff = max_backoff
        self.max_retry_after = max_retry_after
        self._robots: dict[str, RobotsRules] = {}
        self._slots: dict[str, _HostSlot] = {}
        self._client: httpx.AsyncClient | None = None
        self.stalls = StallMeter()

    async def __aenter__(self) -> Fetcher:
        self.stalls.start()
        self._client = httpx.AsyncClient(
            transport=GuardedTransport(self.config.allow_private_network),
            # The per-request deadline (``runnable_deadline``) is the real limit; httpx's own
            # per-operation timeouts count loop stalls too, so they only back it up.
            timeout=httpx.Timeout(max(self.config.timeout * BACKSTOP_FACTOR, BACKSTOP_MIN_S)),
            follow_redirects=False,
            trust_env=False,
            headers={"User-Agent": self.config.user_agent, "Accept-Encoding": "gzip, deflate"},
        )
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        self.stalls.stop()
        if self._client is not None:
            await self._client.aclose()
            self._client = None

    def use_robots(self, host: str, rules: RobotsRules) -> None:
        """Enforce ``rules`` on ``host`` from now on (and its Crawl-delay, if larger)."""
        self._robots[host.lower()] = rules

    def robots_reason(self, url: str) -> str | None:
        """Why robots.txt forbids ``url`` (None when allowed, or when not loaded / ignored)."""
        if not self.config.respect_robots or not self._robots:
            return None
        split = split_url(url)
        rules = self._robots.get(split[1]) if split is not None else None
        return rules.check(url) if rules is not None else None

    async def get(
        self,
        url: str,
        *,
        etag: str | None = None,
        last_modified: str | None = None,
        accept: str = HTML_ACCEPT,
        max_bytes: int | None = None,
    ) -> FetchResult:
        """GET ``url``; raise FetchError(reason=...) when the page cannot be had.

        404/410 and 304 come back as results (empty body) so the pipeline can tombstone or
        skip. ``accept`` lists the media types taken; anything else is refused unread.
        """
        if self._client is None:
            raise RuntimeError("Fetcher must be used as 'async with Fetcher(...)'")
        if not self.policy.on_site(url):
            raise FetchError(
                f"{url} is not on the site's allowed hosts", reason="off_site", url=url
            )
        headers = {"Accept": accept}
        if etag:
            headers["If-None-Match"] = etag
        if last_modified:
            headers["If-Modified-Since"] = last_modified
        limit = self.config.max_bytes if max_bytes is None else max_bytes
        attempts = max(1, self.config.retries)
        for attempt in range(1, attempts + 1):
            try:
                return await self._follow_redirects(url, headers, accept, limit)
            except _RetryableStatus as exc:
                failure = FetchError(
                    f"{url}: HTTP {exc.status}",
                    reason=f"http_{exc.status}",
                    url=url,
                    status=exc.status,
                    transient=True,
                    retry_after=exc.retry_after,
                )
                delay = self._backoff(attempt)
                if exc.retry_after is not None:
                    if exc.retry_after > self.max_retry_after:
                        raise failure from None  # waiting that long is not this crawl's business
                    delay = max(delay, exc.retry_after)
            except (TimeoutError, httpx.TimeoutException):
                failure = FetchError(f"{url}: timed out", reason="timeout", url=url, transient=True)
                delay = self._backoff(attempt)
            except httpx.TransportError as exc:
                failure = FetchError(
                    f"{url}: {exc!r}", reason="connection_error", url=url, transient=True
                )
                delay = self._backoff(attempt)
            except _TransientFetchError as exc:
                # the signal stays in here
                failure = FetchError(exc.message, reason=exc.reason, transient=True)
                delay = self._backoff(attempt)
            if attempt < attempts:
                logger.info("retrying %s in %.2fs (%s)", url, delay, failure.reason)
                await asyncio.sleep(delay)
        raise failure

    def _backoff(self, attempt: int) -> float:
        """Exponential backoff with jitter, so retrying crawlers do not hit a host in step."""
        ceiling = min(self.max_backoff, self.retry_backoff * 2 ** (attempt - 1))
        return ceiling * random.uniform(0.5, 1.0)

    async def _follow_redirects(
        self, url: str, headers: dict[str, str], accept: str, limit: int
    ) -> FetchResult:
        current = url
        seen = {normalize_url(url) or url}
        redirects: list[str] = []
        elapsed = 0.0
        for _ in range(MAX_REDIRECTS + 1):
            if (reason := self.robots_reason(current)) is not None:
                raise FetchError(f"{current} is disallowed by robots.txt", reason=reason, url=url)
            hop = await self._request(current, headers, accept, limit)
            elapsed += hop.elapsed_s
            if hop.location is None:
                return FetchResult(
                    url=url,
                    final_url=current,
                    status=hop.status,
                    headers=hop.headers,
                    body=hop.body,
                    content_type=_media_type(hop.headers.get("content-type", "")),
                    encoding=_charset(hop.headers.get("content-type", "")),
                    elapsed_s=elapsed,
                    redirects=redirects,
                )
            target = urljoin(current, hop.location.strip()).split("#", 1)[0]
            key = normalize_url(target)
            if key is None or not self.policy.on_site(key):
                raise FetchError(
                    f"{current} redirects off the site to {target}",
                    reason="off_site_redirect",
                    url=url,
                )
            if key in seen:
                raise FetchError(f"{url} redirects in a loop", reason="redirect_loop", url=url)
            seen.add(key)
            redirects.append(current)
            current = target
        raise FetchError(
            f"{url} redirects more than {MAX_REDIRECTS} times", reason="too_many_redirects", url=url
        )

    async def _request(self, url: str, headers: dict[str, str], accept: str, limit: int) -> _Hop:
        """One HTTP exchange inside the host's politeness slot and the per-request deadline."""
        assert self._client is not None
        async with self._slot(urlsplit(url).hostname or ""):
            self.requests += 1
            started = time.monotonic()
            # The deadline covers connect, headers and the whole body: a server that dribbles
            # a byte every few seconds never trips the per-read timeout, but trips this. It
            # starts inside the host's slot (politeness waits do not count) and leaves out the
            # time the loop was blocked: a busy machine is not a slow server.
            async with runnable_deadline(self.config.timeout, self.stalls):
                request = self._client.build_request("GET", url, headers=headers)
                try:
                    response = await self._client.send(request, stream=True)
                except httpx.InvalidURL:  # httpx parses Location eagerly, even unfollowed
                    raise FetchError(
                        f"{url} redirects to an unusable location", reason="bad_redirect", url=url
                    ) from None
                try:
                    hop = await self._read_response(response, url, accept, limit)
                finally:
                    await response.aclose()
            hop.elapsed_s = time.monotonic() - started
            logger.debug("GET %s -> %s (%d bytes)", url, hop.status, len(hop.body))
            return hop

    async def _read_response(
        self, response: httpx.Response, url: str, accept: str, limit: int
    ) -> _Hop:
        status = response.status_code
        headers = {name.lower(): value for name, value in response.headers.items()}
        if status in _REDIRECT_STATUSES and "location" in headers:
            return _Hop(status, headers, location=headers["location"])
        if status == 304 or status in _GONE_STATUSES:
            return _Hop(status, headers)
        if status == 429 or (status >= 500 and status not in _NOT_TRANSIENT_5XX):
            raise _RetryableStatus(status, _retry_after_seconds(headers.get("retry-after")))
        if not 200 <= status < 300:
            raise FetchError(
                f"{url}: HTTP {status}", reason=f"http_{status}", url=url, status=status
            )
        media = _media_type(headers.get("content-type", ""))
        if media and not _accepts(accept, media):
            reason = "not_html" if accept == HTML_ACCEPT else "unexpected_content_type"
            raise FetchError(f"{url} is {media}, not {accept}", reason=reason, url=url)
        body = await self._read_body(response, headers, url, limit)
        return _Hop(status, headers, body=body)

    async def _read_body(
        self, response: httpx.Response, headers: dict[str, str], url: str, limit: int
    ) -> bytes:
        declared = headers.get("content-length", "")
        if declared.isdigit() and int(declared) > limit:
            raise FetchError(
                f"{url} is {declared} bytes, over {limit}", reason="too_large", url=url
            )
        decoder = BoundedDecoder(headers.get("content-encoding", ""), limit, url)
        raw = 0
        async for chunk in response.aiter_raw():
            raw += len(chunk)
            self.bytes_received += len(chunk)
            if raw > limit:
                raise FetchError(f"{url} is over {limit} bytes", reason="too_large", url=url)
            decoder.feed(chunk)
        return decoder.finish()

    @contextlib.asynccontextmanager
    async def _slot(self, host: str) -> AsyncIterator[None]:
        slot = self._slots.setdefault(host.lower(), _HostSlot())
        async with slot.lock:
            # Asked again after each sleep: robots.txt may have raised the interval meanwhile.
            while slot.last_start is not None:
                wait = slot.last_start + self._interval(host) - time.monotonic()
                if wait <= 0:
                    break
                await asyncio.sleep(wait)
            slot.last_start = time.monotonic()
            yield

    def _interval(self, host: str) -> float:
        interval = 1.0 / self.config.rate if self.config.rate > 0 else 0.0
        rules = self._robots.get(host.lower())
        if self.config.respect_robots and rules is not None and rules.crawl_delay:
            interval = max(interval, min(rules.crawl_delay, MAX_CRAWL_DELAY))
        return interval


def _media_type(content_type: str) -> str:
    return content_type.split(";", 1)[0].strip().lower()


def _charset(content_type: str) -> str | None:
    match = re.search(r"charset\s*=\s*[\"']?([\w.:-]+)", content_type, re.IGNORECASE)
    if match is None:
        return None
    try:
        return codecs.lookup(match.group(1)).name
    except LookupError:
        return None


def _accepts(accept: str, media: str) -> bool:
    for item in accept.split(","):
        wanted = item.split(";", 1)[0].strip().lower()
        if wanted in ("*/*", media) or (wanted.endswith("/*") and media.startswith(wanted[:-1])):
            return True
    return False


def _retry_after_seconds(value: str | None) -> float | None:
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.UTC)
    return max(0.0, (when - dt.datetime.now(dt.UTC)).total_seconds())


class BoundedDecoder:
    """Undoes Content-Encoding incrementally, never producing more than ``limit`` bytes.

    zlib's ``max_length`` stops each step at the cap, so a gzip bomb costs at most ``limit``
    bytes of memory, unlike decoding whole chunks (one 64 KiB chunk can expand 1000-fold).
    """

    def __init__(self, content_encoding: str, limit: int, url: str) -> None:
        codings = [c.strip().lower() for c in content_encoding.split(",") if c.strip()]
        codings = [c for c in codings if c != "identity"]
        if len(codings) > 1 or (codings and codings[0] not in ("gzip", "x-gzip", "deflate")):
            raise FetchError(
                f"{url}: unsupported Content-Encoding {content_encoding!r}",
                reason="unsupported_encoding",
                url=url,
            )
        self._coding = codings[0] if codings else None
        self._limit = limit
        self._url = url
        self._parts: list[bytes] = []
        self._size = 0
        self._raw = 0
        self._unconsumed = 0  # input zlib has not read yet: not part of the expansion ratio
        self._inflater: zlib._Decompress | None = None
        self._members = 0

    def feed(self, data: bytes) -> None:
        self._raw += len(data)
        if self._coding is None:
            self._append(data)
            return
        while data:
            if self._inflater is None or self._inflater.eof:
                if self._members and not data.strip(b"\x00"):
                    return  # padding after the last gzip member
                self._inflater = self._new_inflater(data)
                self._members += 1
            try:
                out = self._inflater.decompress(data, self._limit - self._size + 1)
            except zlib.error as exc:
                if self._members > 1:
                    return  # trailing junk after a complete member: keep what decoded
                raise FetchError(
                    f"{self._url}: corrupt {self._coding} body ({exc})",
                    reason="decode_error",
                    url=self._url,
                ) from None
            self._unconsumed = len(self._inflater.unconsumed_tail)
            self._append(out)
            data = self._inflater.unconsumed_tail or (
                self._inflater.unused_data if self._inflater.eof else b""
            )

    def finish(self) -> bytes:
        if self._inflater is not None and not self._inflater.eof:
            with contextlib.suppress(zlib.error):  # a truncated body: keep what decoded
                self._append(self._inflater.flush())
        return b"".join(self._parts)

    def _new_inflater(self, data: bytes) -> zlib._Decompress:
        if self._coding == "deflate" and not _has_zlib_header(data):
            return zlib.decompressobj(-zlib.MAX_WBITS)  # raw deflate, as some servers send it
        return zlib.decompressobj(zlib.MAX_WBITS | (16 if self._coding != "deflate" else 0))

    def _append(self, data: bytes) -> None:
        self._size += len(data)
        if self._size > self._limit:
            consumed = max(self._raw - self._unconsumed, 1)
            bomb = self._coding is not None and self._size > BOMB_RATIO * consumed
            raise FetchError(
                f"{self._url} decompresses to over {self._limit} bytes",
                reason="decompression_bomb" if bomb else "too_large",
                url=self._url,
            )
        if data:
            self._parts.append(data)


def _has_zlib_header(data: bytes) -> bool:
    return len(data) >= 2 and data[0] & 0x0F == 8 and (data[0] << 8 | data[1]) % 31 == 0
