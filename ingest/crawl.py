"""The network side of crawling: URL normalisation and policy, robots.txt, sitemaps, the polite
SSRF-guarded fetcher and the breadth-first frontier. The pipeline composes these pieces.
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import datetime as dt
import email.utils
import heapq
import ipaddress
import logging
import random
import re
import socket
import time
import zlib
from collections import Counter
from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from urllib.parse import unquote, urljoin, urlsplit, urlunsplit

import httpcore
import httpx
import msgspec

from store.config import CrawlSettings
from store.errors import FetchError

logger = logging.getLogger(__name__)

#: Media ranges for ``Fetcher.get(accept=...)``: sent as the Accept header, and any other
#: Content-Type is refused before the body is read.
HTML_ACCEPT = "text/html,application/xhtml+xml"
SITEMAP_ACCEPT = "application/xml,text/xml,application/gzip,application/x-gzip,application/octet-stream,text/plain"
ROBOTS_ACCEPT = "text/plain,*/*"

MAX_REDIRECTS = 5
#: Sitemap protocol limits: 50 MB uncompressed per file. Index nesting beyond 3 levels
#: and more than 1000 sitemap files are what runaway generators produce, not real sites.
SITEMAP_MAX_BYTES = 50_000_000
SITEMAP_MAX_DEPTH = 3
SITEMAP_MAX_FILES = 1000
SITEMAP_MAX_URLS = 500_000
#: RFC 9309 asks crawlers to parse at least 500 KiB of robots.txt.
ROBOTS_MAX_BYTES = 512 * 1024
#: Crawl-delay is honoured up to this many seconds: a larger value would stretch a crawl of a
#: few hundred pages over days, which no site owner who runs frontdesk on their site wants.
MAX_CRAWL_DELAY = 60.0
#: A decompressed/compressed ratio above this marks a decompression bomb (HTML compresses 5-20x).
BOMB_RATIO = 100

# ---------------------------------------------------------------------------------------------
# URL normalisation
# ---------------------------------------------------------------------------------------------

_DEFAULT_PORTS = {"http": 80, "https": 443}
_TRACKING_PARAMS = frozenset(
    {
        "gclid", "gbraid", "wbraid", "dclid", "fbclid", "msclkid", "yclid", "igshid", "twclid",
        "ttclid", "li_fat_id", "mc_cid", "mc_eid", "ref", "ref_src", "_ga", "_gl", "_hsenc",
        "_hsmi", "mkt_tok", "s_kwcid", "srsltid", "vero_id", "oly_anon_id", "oly_enc_id",
        "wickedid", "rb_clickid",
    }
)  # fmt: skip
_UNRESERVED = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
_ESCAPE = re.compile(r"%([0-9A-Fa-f]{2})")
_STRAY_PERCENT = re.compile(r"%(?![0-9A-Fa-f]{2})")
# Characters a path or query may carry unescaped (RFC 3986 pchar plus separators).
_PATH_UNSAFE = re.compile(r"[^A-Za-z0-9\-._~!$&'()*+,;=:@/%]")
_QUERY_UNSAFE = re.compile(r"[^A-Za-z0-9\-._~!$&'()*+,;=:@/%?]")
# Most URLs are plain ASCII http(s) with a simple host: split those without urlsplit's cost.
_SIMPLE_URL = re.compile(
    r"(https?)://([a-z0-9.-]+)(?::(\d{1,5}))?(/[^?#]*)?(?:\?([^#]*))?(?:#.*)?",
    re.IGNORECASE | re.DOTALL,
)
_CONTROL_WHITESPACE = re.compile(r"[\t\n\r]")


def normalize_url(url: str, base: str | None = None) -> str | None:
    """The canonical form of an http(s) URL, or None for anything else (mailto:, data:, ...).

    Resolves against ``base``; lowercases scheme and host; drops default ports, user info,
    fragments and tracking parameters; sorts the remaining query parameters; collapses ``//``
    and resolves ``.``/``..`` in the path; normalises percent-escapes.

    ``/a`` and ``/a/`` stay distinct: static hosts and Sphinx's dirhtml serve them as different
    resources or redirect one to the other, and the fetcher follows that redirect, so merging
    them here would only guess. A trailing ``index.html`` is kept for the same reason.
    """
    url = _CONTROL_WHITESPACE.sub("", url).strip(" \x00\x0b\x0c")
    if base:
        try:
            url = urljoin(base, url)
        except ValueError:  # a malformed IPv6 literal in either
            return None
    split = _split_url(url)
    if split is None:
        return None
    scheme, host, port, path, query = split
    host = _normalize_host(host)
    if not host:
        return None
    netloc = f"[{host}]" if ":" in host else host
    if port is not None and port != _DEFAULT_PORTS[scheme]:
        netloc = f"{netloc}:{port}"
    return urlunsplit((scheme, netloc, _normalize_path(path), _normalize_query(query), ""))


def _split_url(url: str) -> tuple[str, str, int | None, str, str] | None:
    """(scheme, host, port, path, query) of an http(s) URL, lowercased; None for others."""
    simple = _SIMPLE_URL.fullmatch(url)
    if simple is not None:
        scheme, host, port, path, query = simple.groups()
        if port is not None and int(port) > 65535:
            return None
        return scheme.lower(), host.lower(), int(port) if port else None, path or "", query or ""
    try:
        parts = urlsplit(url)
        port_number = parts.port
    except ValueError:  # a malformed IPv6 literal or port
        return None
    scheme = parts.scheme.lower()
    if scheme not in _DEFAULT_PORTS:
        return None
    return scheme, parts.hostname or "", port_number, parts.path, parts.query


def _normalize_host(host: str) -> str | None:
    host = host.lower().rstrip(".")
    if host.isascii():
        return host
    try:
        return host.encode("idna").decode("ascii")
    except UnicodeError:
        return None


def _normalize_escapes(text: str, unsafe: re.Pattern[str]) -> str:
    """Decode escaped unreserved characters, uppercase other escapes, escape what must be."""
    if "%" in text:
        text = _STRAY_PERCENT.sub("%25", _ESCAPE.sub(_unescape_unreserved, text))
    if unsafe.search(text) is None:
        return text
    return unsafe.sub(_percent_encode, text)


def _unescape_unreserved(match: re.Match[str]) -> str:
    char = chr(int(match.group(1), 16))
    return char if char in _UNRESERVED else "%" + match.group(1).upper()


def _percent_encode(match: re.Match[str]) -> str:
    return "".join(f"%{byte:02X}" for byte in match.group(0).encode("utf-8"))


def _normalize_path(path: str) -> str:
    path = _normalize_escapes(path, _PATH_UNSAFE)
    if "//" in path:
        path = re.sub(r"/{2,}", "/", path)
    if "." in path:
        path = _remove_dot_segments(path)
    return path if path.startswith("/") else "/" + path


def _remove_dot_segments(path: str) -> str:
    """RFC 3986 section 5.2.4, on whole segments."""
    output: list[str] = []
    segments = path.split("/")
    for index, segment in enumerate(segments):
        last = index == len(segments) - 1
        if segment == ".":
            if last:
                output.append("")
        elif segment == "..":
            if len(output) > 1:
                output.pop()
            if last:
                output.append("")
        else:
            output.append(segment)
    result = "/".join(output)
    return result if result.startswith("/") else "/" + result


def _normalize_query(query: str) -> str:
    if not query:
        return ""
    kept = []
    for pair in query.split("&"):
        if not pair:
            continue
        name = pair.split("=", 1)[0]
        name = (unquote(name) if "%" in name else name).lower()
        if name in _TRACKING_PARAMS or name.startswith("utm_"):
            continue
        kept.append(_normalize_escapes(pair, _QUERY_UNSAFE))
    return "&".join(sorted(kept))


# ---------------------------------------------------------------------------------------------
# URL policy: which URLs the crawl may visit
# ---------------------------------------------------------------------------------------------

_BINARY_EXTENSIONS = frozenset(
    """pdf ps eps jpg jpeg png gif webp svg svgz ico bmp tif tiff avif heic mp3 mp4 m4a m4v
    mov avi wmv webm ogg ogv oga wav flac aac mkv zip gz tgz bz2 xz zst 7z rar tar dmg exe msi
    apk deb rpm iso bin img jar whl egg css js mjs map json xml rss atom txt csv tsv woff woff2
    ttf otf eot doc docx xls xlsx ppt pptx odt ods odp rtf epub""".split()  # noqa: SIM905
)
MAX_URL_LENGTH = 1024
MAX_PATH_SEGMENTS = 15
MAX_SEGMENT_REPEATS = 2
MAX_QUERY_PARAMS = 12
#: Calendar pages a year or more ahead, or query dates before the Unix epoch, are what an
#: endless "next month" / "previous month" link chain produces; real content rarely lives there.
TRAP_FUTURE_DAYS = 366
TRAP_EARLIEST_QUERY_YEAR = 1970
_DATE_IN_TEXT = re.compile(
    r"(?<!\d)(\d{4})[-/._]?(0[1-9]|1[0-2])(?:[-/._]?(0[1-9]|[12]\d|3[01]))?(?!\d)"
)
_DATE_IN_PATH = re.compile(r"/(\d{4})/(\d{1,2})(?:/(\d{1,2}))?(?=/|$)")
_YEAR_PARAMS = frozenset({"year", "yr", "y"})


class UrlPolicy:
    """Decides whether a URL is in scope for the site's crawl, and says why not."""

    def __init__(self, config: CrawlSettings, site: str) -> None:
        self.site = site
        site_host = (urlsplit(site).hostname or "").lower()
        self.hosts = frozenset({site_host, *(h.lower().rstrip(".") for h in config.allowed_hosts)})
        self._allow = [re.compile(p) for p in config.allow]
        self._deny = [re.compile(p) for p in config.deny]

    def on_site(self, url: str) -> bool:
        """True for an http(s) URL whose host is the site's or an allowed host."""
        return self._split_on_site(url) is not None

    def allows(self, url: str) -> str | None:
        """None when the URL may be crawled, else the reason it may not."""
        parts = self._split_on_site(url)
        if parts is None:
            return "off_site"
        if any(pattern.search(url) for pattern in self._deny):
            return "denied_pattern"
        if self._allow and not any(pattern.search(url) for pattern in self._allow):
            return "not_allowed_pattern"
        path, query = parts
        if _extension(path) in _BINARY_EXTENSIONS:
            return "not_html_extension"
        if _looks_like_trap(url, path, query):
            return "calendar_trap"
        return None

    def _split_on_site(self, url: str) -> tuple[str, str] | None:
        """(path, query) of an on-site URL, None for anything else."""
        split = _split_url(url)
        if split is None or split[1].rstrip(".") not in self.hosts:
            return None
        return split[3], split[4]


def _extension(path: str) -> str:
    last = path.rsplit("/", 1)[-1]
    return last.rsplit(".", 1)[-1].lower() if "." in last else ""


def _looks_like_trap(url: str, path: str, query: str) -> bool:
    if len(url) > MAX_URL_LENGTH:
        return True
    segments = [s for s in path.split("/") if s]
    if len(segments) > MAX_PATH_SEGMENTS:
        return True
    repeated = len(segments) > MAX_SEGMENT_REPEATS and len(set(segments)) < len(segments)
    if repeated and max(Counter(segments).values()) > MAX_SEGMENT_REPEATS:
        return True
    pairs = [p for p in query.split("&") if p]
    if len(pairs) > MAX_QUERY_PARAMS:
        return True
    if not any(char.isdigit() for char in url):
        return False  # no date anywhere
    today = dt.datetime.now(dt.UTC).date()
    for match in _DATE_IN_PATH.finditer(path):
        if _date_is_far_ahead(match.groups(), today):
            return True
    for pair in pairs:
        name, _, value = pair.partition("=")
        value = unquote(value)
        is_year = name.lower() in _YEAR_PARAMS and value.isdigit() and len(value) == 4
        if is_year and _query_date_is_trap((value, "1", None), today):
            return True
        for match in _DATE_IN_TEXT.finditer(value):
            if _query_date_is_trap(match.groups(), today):
                return True
    return False


def _to_date(groups: Sequence[str | None]) -> dt.date | None:
    year, month, day = groups
    try:
        return dt.date(int(year or 0), int(month or 1), int(day or 1))
    except ValueError:
        return None


def _date_is_far_ahead(groups: Sequence[str | None], today: dt.date) -> bool:
    date = _to_date(groups)
    return date is not None and (date - today).days > TRAP_FUTURE_DAYS


def _query_date_is_trap(groups: Sequence[str | None], today: dt.date) -> bool:
    date = _to_date(groups)
    if date is None:
        return False
    return date.year < TRAP_EARLIEST_QUERY_YEAR or (date - today).days > TRAP_FUTURE_DAYS


# ---------------------------------------------------------------------------------------------
# robots.txt (RFC 9309)
# ---------------------------------------------------------------------------------------------

_ROBOTS_KEYS = {
    "user-agent": "user-agent", "useragent": "user-agent", "user agent": "user-agent",
    "allow": "allow", "disallow": "disallow", "dissallow": "disallow", "dissalow": "disallow",
    "disalow": "disallow", "disallaw": "disallow", "crawl-delay": "crawl-delay",
    "crawldelay": "crawl-delay", "sitemap": "sitemap", "site-map": "sitemap",
}  # fmt: skip


class _Group:
    __slots__ = ("agents", "rules", "crawl_delay")

    def __init__(self) -> None:
        self.agents: list[str] = []
        self.rules: list[tuple[str, bool]] = []
        self.crawl_delay: float | None = None


class RobotsRules:
    """The robots.txt rules that apply to our user agent on one host.

    ``check(url)`` gives the reason a URL may not be fetched (``robots_disallowed``, or
    ``robots_unavailable`` when robots.txt answered 5xx or could not be reached: RFC 9309 asks
    crawlers to assume complete disallow then).
    """

    def __init__(
        self,
        rules: Iterable[tuple[str, bool]] = (),
        crawl_delay: float | None = None,
        sitemaps: Iterable[str] = (),
        unavailable: bool = False,
    ) -> None:
        # Longest pattern first, measured in canonical octets; on equal length Allow first
        # (RFC 9309: the most specific match wins, and the least restrictive of equals).
        canonical = {(_canonical_robots_path(pattern), allow) for pattern, allow in rules}
        ordered = sorted(canonical, key=lambda rule: (-len(rule[0]), not rule[1]))
        self._rules = [(_compile_robots_pattern(p), allow) for p, allow in ordered]
        self.crawl_delay = crawl_delay
        self.sitemaps = list(dict.fromkeys(sitemaps))
        self.unavailable = unavailable

    @classmethod
    def allow_all(cls, sitemaps: Iterable[str] = ()) -> RobotsRules:
        return cls(sitemaps=sitemaps)

    @classmethod
    def disallow_all(cls) -> RobotsRules:
        return cls(unavailable=True)

    def check(self, url: str) -> str | None:
        """None when the URL may be fetched, else ``robots_disallowed``/``robots_unavailable``."""
        parts = urlsplit(url)
        if parts.path == "/robots.txt":
            return None
        if self.unavailable:
            return "robots_unavailable"
        target = _canonical_robots_path(parts.path or "/")
        if parts.query:
            target += "?" + _canonical_robots_path(parts.query)
        for pattern, allow in self._rules:
            if pattern.match(target):
                return None if allow else "robots_disallowed"
        return None

    def can_fetch(self, url: str) -> bool:
        return self.check(url) is None


def parse_robots(text: str, user_agent: str) -> RobotsRules:
    """Parse robots.txt leniently: unknown lines, junk and HTML are skipped, never raised on."""
    token = _product_token(user_agent)
    groups: list[_Group] = []
    current: _Group | None = None
    sitemaps: list[str] = []
    for raw_line in text[:ROBOTS_MAX_BYTES].lstrip("\ufeff").splitlines():
        line = raw_line.split("#", 1)[0].strip()
        key, sep, value = line.partition(":")
        key = _ROBOTS_KEYS.get(key.strip().lower()) if sep else None
        value = value.strip()
        if key is None:
            continue
        if key == "sitemap":
            if value:
                sitemaps.append(value)
        elif key == "user-agent":
            if current is None or current.rules or current.crawl_delay is not None:
                current = _Group()
                groups.append(current)
            current.agents.append(_product_token(value))
        elif current is None:
            continue  # rules before any user-agent line belong to no group
        elif key == "crawl-delay":
            current.crawl_delay = _parse_delay(value)
        elif value:  # an empty Disallow means "allow everything": no rule at all
            pattern = value if value.startswith(("/", "*")) else "/" + value
            current.rules.append((pattern, key == "allow"))
    chosen = [g for g in groups if token in g.agents] or [g for g in groups if "*" in g.agents]
    delays = [g.crawl_delay for g in chosen if g.crawl_delay is not None]
    return RobotsRules(
        rules=[rule for group in chosen for rule in group.rules],
        crawl_delay=max(delays) if delays else None,
        sitemaps=sitemaps,
    )


def _product_token(user_agent: str) -> str:
    words = user_agent.strip().split()
    return words[0].split("/", 1)[0].lower() if words else ""


def _parse_delay(value: str) -> float | None:
    try:
        delay = float(value)
    except ValueError:
        return None
    return delay if 0 <= delay < float("inf") else None


_ROBOTS_UNSAFE = re.compile(r"[^A-Za-z0-9\-._~!$&'()*+,;=:@/%?*]")


def _canonical_robots_path(text: str) -> str:
    """Percent-encoding normalised per RFC 9309 section 2.2.2, so patterns and paths compare."""
    return _normalize_escapes(text, _ROBOTS_UNSAFE)


def _compile_robots_pattern(pattern: str) -> re.Pattern[str]:
    """``*`` matches any run of characters; a final ``$`` anchors the end."""
    anchored = pattern.endswith("$")
    body = pattern[:-1] if anchored else pattern
    regex = ".*".join(re.escape(piece) for piece in body.split("*"))
    return re.compile(regex + (r"\Z" if anchored else ""), re.DOTALL)


async def fetch_robots(fetcher: Fetcher, url: str) -> RobotsRules:
    """Fetch and interpret robots.txt for ``url``'s origin, and register it with the fetcher.

    2xx: parsed. 4xx (404, 410, 403, ...): allow everything (RFC 9309). 429, 5xx, timeouts
    and network errors (after the fetcher's retries): disallow everything for this crawl,
    reason ``robots_unavailable``. With ``respect_robots=False`` everything is allowed, but
    the ``Sitemap:`` lines are still returned.
    """
    parts = urlsplit(url)
    robots_url = urlunsplit((parts.scheme, parts.netloc, "/robots.txt", "", ""))
    try:
        result = await fetcher.get(robots_url, accept=ROBOTS_ACCEPT, max_bytes=ROBOTS_MAX_BYTES)
    except FetchError as exc:
        rules = _robots_for_failure(exc)
    else:
        if 200 <= result.status < 300:
            text = result.body.decode(result.encoding or "utf-8", errors="replace")
            rules = parse_robots(text, fetcher.config.user_agent)
        else:
            rules = RobotsRules.allow_all()  # 404 / 410
    if not fetcher.config.respect_robots:
        rules = RobotsRules.allow_all(sitemaps=rules.sitemaps)
    fetcher.use_robots(parts.hostname or "", rules)
    return rules


def _robots_for_failure(exc: FetchError) -> RobotsRules:
    transient = exc.reason in ("timeout", "connection_error", "dns_error", "http_429")
    if transient or exc.reason.startswith("http_5"):
        logger.warning("robots.txt unavailable (%s): treating the site as disallowed", exc.reason)
        return RobotsRules.disallow_all()
    logger.info("robots.txt not usable (%s): allowing everything", exc.reason)
    return RobotsRules.allow_all()


# ---------------------------------------------------------------------------------------------
# SSRF guard: resolve, vet every address, connect to the vetted address
# ---------------------------------------------------------------------------------------------

#: Cloud metadata endpoints stay blocked even when a tenant allows private networks: they hand
#: out the server's credentials, and no website is published there.
_METADATA_ADDRESSES = frozenset(
    ipaddress.ip_address(a)
    for a in ("169.254.169.254", "169.254.170.2", "100.100.100.200", "fd00:ec2::254")
)
_NAT64 = ipaddress.ip_network("64:ff9b::/96")


def _addresses_to_judge(
    ip: ipaddress.IPv4Address | ipaddress.IPv6Address,
) -> list[ipaddress.IPv4Address | ipaddress.IPv6Address]:
    """The address itself plus any IPv4 address it tunnels to.

    IPv4-mapped and NAT64 addresses are judged by the IPv4 address alone (their IPv6 ranges
    count as reserved); 6to4 and Teredo addresses must pass as both.
    """
    if isinstance(ip, ipaddress.IPv4Address):
        return [ip]
    if ip.ipv4_mapped is not None:
        return [ip.ipv4_mapped]
    if ip in _NAT64:
        return [ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)]
    if ip.sixtofour is not None:
        return [ip, ip.sixtofour]
    if ip.teredo is not None:
        return [ip, ip.teredo[1]]
    return [ip]


def address_block_reason(address: str, allow_private: bool = False) -> str | None:
    """None when a crawler may connect to ``address``, else ``blocked_private_address``.

    Refuses loopback, private, link-local, multicast, reserved, unspecified, shared (CGNAT)
    and documentation ranges, for IPv4 and IPv6 and for IPv4 tunnelled in IPv6.
    """
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        return "blocked_private_address"
    candidates = _addresses_to_judge(ip)
    if any(c in _METADATA_ADDRESSES for c in candidates):
        return "blocked_private_address"
    if allow_private:
        return None
    for candidate in candidates:
        if not candidate.is_global or candidate.is_multicast or candidate.is_reserved:
            return "blocked_private_address"
        if candidate.is_unspecified or candidate.is_loopback or candidate.is_link_local:
            return "blocked_private_address"
    return None


class _GuardedBackend(httpcore.AsyncNetworkBackend):
    """Resolves the host itself, refuses blocked addresses and connects to the address it
    vetted, so a DNS answer that changes between check and connect (rebinding) cannot slip
    through. TLS still verifies and sends SNI for the URL's host name (httpcore does that).
    """

    def __init__(self, allow_private: bool) -> None:
        self._allow_private = allow_private
        self._backend = httpcore.AnyIOBackend()

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        addresses = await _resolve(host, port)
        for address in addresses:
            if (reason := address_block_reason(address, self._allow_private)) is not None:
                # One bad address refuses the host: a name that resolves to both a public and
                # a private address is the classic rebinding set-up.
                raise FetchError(f"{host} resolves to a refused address {address}", reason=reason)
        last_error: Exception | None = None
        for address in addresses:
            try:
                return await self._backend.connect_tcp(
                    address, port, timeout=timeout, local_address=local_address,
                    socket_options=socket_options,
                )  # fmt: skip
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as exc:
                last_error = exc
        assert last_error is not None
        raise last_error

    async def connect_unix_socket(
        self, *args: object, **kwargs: object
    ) -> httpcore.AsyncNetworkStream:
        raise FetchError("unix sockets are not crawled", reason="blocked_private_address")

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)


class _TransientFetchError(FetchError):
    """A failure worth retrying (the fetcher retries it; callers see a plain FetchError)."""


async def _resolve(host: str, port: int) -> list[str]:
    loop = asyncio.get_running_loop()
    try:
        infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        # EAI_AGAIN is the resolver saying "try later"; any other answer will not change.
        error = _TransientFetchError if exc.errno == socket.EAI_AGAIN else FetchError
        raise error(f"cannot resolve {host}: {exc.strerror}", reason="dns_error") from None
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


class _GuardedTransport(httpx.AsyncHTTPTransport):
    """httpx's own transport with the connection pool swapped for one on the guarded backend.

    Reusing AsyncHTTPTransport keeps httpx's request mapping and exception translation; the
    swap relies on its ``_pool`` attribute (stable since httpx 0.18), checked at construction.
    """

    def __init__(self, allow_private: bool) -> None:
        ssl_context = httpx.create_ssl_context()
        super().__init__(verify=ssl_context, trust_env=False)
        if not isinstance(getattr(self, "_pool", None), httpcore.AsyncConnectionPool):
            raise RuntimeError("unsupported httpx version: cannot install the SSRF guard")
        self._pool = httpcore.AsyncConnectionPool(
            ssl_context=ssl_context,
            max_connections=100,
            max_keepalive_connections=20,
            keepalive_expiry=5.0,
            network_backend=_GuardedBackend(allow_private),
        )


# ---------------------------------------------------------------------------------------------
# Fetcher
# ---------------------------------------------------------------------------------------------


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
    """Politeness state of one host: one request in flight, starts spaced by an interval."""

    def __init__(self) -> None:
        self.lock = asyncio.Lock()
        self.next_start = 0.0


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

    async def __aenter__(self) -> Fetcher:
        self._client = httpx.AsyncClient(
            transport=_GuardedTransport(self.config.allow_private_network),
            timeout=httpx.Timeout(self.config.timeout),
            follow_redirects=False,
            trust_env=False,
            headers={"User-Agent": self.config.user_agent, "Accept-Encoding": "gzip, deflate"},
        )
        return self

    async def __aexit__(self, *exc_info: object) -> None:
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
        split = _split_url(url)
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
                )
                delay = self._backoff(attempt)
                if exc.retry_after is not None:
                    if exc.retry_after > self.max_retry_after:
                        raise failure from None  # waiting that long is not this crawl's business
                    delay = max(delay, exc.retry_after)
            except (TimeoutError, httpx.TimeoutException):
                failure = FetchError(f"{url}: timed out", reason="timeout", url=url)
                delay = self._backoff(attempt)
            except httpx.TransportError as exc:
                failure = FetchError(f"{url}: {exc!r}", reason="connection_error", url=url)
                delay = self._backoff(attempt)
            except _TransientFetchError as exc:
                failure, delay = exc, self._backoff(attempt)
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
            # a byte every few seconds never trips the per-read timeout, but trips this.
            async with asyncio.timeout(self.config.timeout):
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
        decoder = _BoundedDecoder(headers.get("content-encoding", ""), limit, url)
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
            wait = slot.next_start - time.monotonic()
            if wait > 0:
                await asyncio.sleep(wait)
            slot.next_start = time.monotonic() + self._interval(host)
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


class _BoundedDecoder:
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


# ---------------------------------------------------------------------------------------------
# Sitemaps
# ---------------------------------------------------------------------------------------------

# Sitemaps are read by a linear scan for the few tags that matter, not by an XML parser:
# nothing is ever expanded (no DTD, no entities, so no billion laughs and no external
# entities), malformed or truncated files still yield every entry read so far, and a
# 50,000-entry file scans in a fraction of a second. A document that declares a DTD or
# entities is refused outright: no valid sitemap has one.
_DTD = re.compile(rb"<!(?:DOCTYPE|ENTITY)", re.IGNORECASE)
# Bounded attribute run, so a tag that never closes cannot make the scan quadratic.
_SITEMAP_TAG = re.compile(rb"<(/?)(?:[\w.-]{1,40}:)?(url|sitemap|loc|lastmod)\b[^<>]{0,500}>")
_CDATA = re.compile(rb"^\s*<!\[CDATA\[(.*?)\]\]>\s*$", re.DOTALL)
_XML_ENTITY = re.compile(r"&(amp|lt|gt|quot|apos|#\d{1,7}|#x[0-9a-fA-F]{1,6});")
_W3C_DATE = re.compile(r"^\d{4}(-\d{2}(-\d{2}([T ][\d:.]+(Z|[+-]\d{2}:?\d{2})?)?)?)?$")
_GZIP_MAGIC = b"\x1f\x8b"


async def load_sitemaps(fetcher: Fetcher, urls: Iterable[str]) -> dict[str, str | None]:
    """Page URL (normalised) → sitemap ``lastmod`` (or None), from sitemaps and their indexes.

    Follows sitemap indexes up to SITEMAP_MAX_DEPTH levels, reads gzip files, skips what
    cannot be fetched or parsed, drops URLs the policy or robots.txt exclude. Never raises.
    """
    pages: dict[str, str | None] = {}
    queue: list[tuple[str, int]] = [(url, 0) for url in urls]
    visited: set[str] = set()
    while queue and len(visited) < SITEMAP_MAX_FILES and len(pages) < SITEMAP_MAX_URLS:
        url, depth = queue.pop(0)
        key = normalize_url(url)
        if key is None or key in visited or not fetcher.policy.on_site(key):
            continue
        visited.add(key)
        body = await _fetch_sitemap(fetcher, key)
        if body is None:
            continue
        children, entries = parse_sitemap(body)
        if depth < SITEMAP_MAX_DEPTH:
            queue.extend((child, depth + 1) for child in children)
        _add_sitemap_pages(fetcher, entries, pages)
    return pages


async def _fetch_sitemap(fetcher: Fetcher, url: str) -> bytes | None:
    try:
        result = await fetcher.get(url, accept=SITEMAP_ACCEPT, max_bytes=SITEMAP_MAX_BYTES)
    except FetchError as exc:
        logger.info("sitemap %s skipped: %s", url, exc.reason)
        return None
    if result.status != 200:
        logger.info("sitemap %s skipped: HTTP %d", url, result.status)
        return None
    body = result.body
    if body.startswith(_GZIP_MAGIC):
        try:
            body = _gunzip_capped(body, SITEMAP_MAX_BYTES, url)
        except FetchError as exc:
            logger.warning("sitemap %s skipped: %s", url, exc.reason)
            return None
    return body


def _gunzip_capped(data: bytes, limit: int, url: str) -> bytes:
    decoder = _BoundedDecoder("gzip", limit, url)
    decoder.feed(data)
    return decoder.finish()


def parse_sitemap(body: bytes) -> tuple[list[str], list[tuple[str, str | None]]]:
    """(child sitemap URLs, [(page URL, lastmod)]) from a sitemap, index or plain-text list."""
    if _DTD.search(body):
        logger.warning("sitemap refused: it declares a DTD or entities")
        return [], []
    scan = _SitemapScan()
    for tag in _SITEMAP_TAG.finditer(body):
        scan.tag(body, tag)
    scan.close_entry()
    if not scan.found_tags and not body.lstrip().startswith(b"<"):
        scan.entries = [(line, None) for line in _text_sitemap_lines(body)]
    return scan.children, scan.entries


class _SitemapScan:
    """State of the tag scan: the open <url>/<sitemap> entry and the open <loc>/<lastmod>."""

    def __init__(self) -> None:
        self.children: list[str] = []
        self.entries: list[tuple[str, str | None]] = []
        self.found_tags = False
        self._kind: bytes | None = None
        self._loc: str | None = None
        self._lastmod: str | None = None
        self._field: bytes | None = None
        self._text_start = 0

    def tag(self, body: bytes, match: re.Match[bytes]) -> None:
        self.found_tags = True
        closing, name = match.group(1), match.group(2)
        if not closing and name in (b"url", b"sitemap"):
            self.close_entry()  # an unclosed entry in a malformed file still counts
            self._kind = name
        elif not closing:
            self._field, self._text_start = name, match.end()
        elif name == self._field:
            value = _xml_text(body[self._text_start : match.start()])
            if name == b"loc" and self._loc is None:  # the first <loc>, not <image:loc>
                self._loc = value
            elif name == b"lastmod" and self._lastmod is None:
                self._lastmod = value if _W3C_DATE.match(value) else None
            self._field = None
        elif name == self._kind:
            self.close_entry()

    def close_entry(self) -> None:
        if self._kind is not None and self._loc:
            if self._kind == b"sitemap":
                self.children.append(self._loc)
            else:
                self.entries.append((self._loc, self._lastmod))
        self._kind = self._loc = self._lastmod = self._field = None


def _xml_text(raw: bytes) -> str:
    cdata = _CDATA.match(raw)
    text = (cdata.group(1) if cdata else raw).decode("utf-8", errors="replace").strip()
    return _XML_ENTITY.sub(_unescape_xml_entity, text) if "&" in text else text


def _unescape_xml_entity(match: re.Match[str]) -> str:
    name = match.group(1)
    named = {"amp": "&", "lt": "<", "gt": ">", "quot": '"', "apos": "'"}
    if name in named:
        return named[name]
    try:
        return chr(int(name[2:], 16) if name[1] in "xX" else int(name[1:]))
    except (ValueError, OverflowError):
        return match.group(0)


def _text_sitemap_lines(body: bytes) -> list[str]:
    lines = body.decode("utf-8", errors="replace").splitlines()
    return [line.strip() for line in lines if line.strip().startswith(("http://", "https://"))]


def _add_sitemap_pages(
    fetcher: Fetcher, entries: list[tuple[str, str | None]], pages: dict[str, str | None]
) -> None:
    dropped: Counter[str] = Counter()
    for loc, lastmod in entries:
        url = normalize_url(loc)
        if url is None:
            dropped["invalid_url"] += 1
            continue
        reason = fetcher.policy.allows(url) or fetcher.robots_reason(url)
        if reason is not None:
            dropped[reason] += 1
            continue
        if pages.get(url) is None:
            pages[url] = lastmod
        if len(pages) >= SITEMAP_MAX_URLS:
            break
    if dropped:
        logger.info("sitemap entries dropped: %s", dict(dropped))


# ---------------------------------------------------------------------------------------------
# Frontier
# ---------------------------------------------------------------------------------------------


class Frontier:
    """Breadth-first queue of (url, depth): normalised, deduplicated, bounded.

    ``checks`` are callables returning a reason to refuse a URL or None (``UrlPolicy.allows``,
    ``Fetcher.robots_reason``); refusals are counted in ``rejected`` by reason. Once
    ``max_pages`` URLs were accepted, discovery stops (``rejected["max_pages"]``).
    """

    def __init__(
        self,
        max_pages: int,
        max_depth: int,
        *,
        checks: Sequence[Callable[[str], str | None]] = (),
    ) -> None:
        self.max_pages = max_pages
        self.max_depth = max_depth
        self.checks = list(checks)
        self.seen: set[str] = set()
        self.rejected: Counter[str] = Counter()
        self._heap: list[tuple[int, int, str]] = []
        self._order = 0

    @classmethod
    def for_fetcher(cls, fetcher: Fetcher) -> Frontier:
        """A frontier with the fetcher's limits, URL policy and robots rules."""
        config = fetcher.config
        return cls(
            config.max_pages,
            config.max_depth,
            checks=[fetcher.policy.allows, fetcher.robots_reason],
        )

    def add(self, url: str, depth: int = 0, base: str | None = None) -> bool:
        """Queue ``url`` (resolved against ``base``) unless seen, refused or over a limit."""
        normalized = normalize_url(url, base)
        if normalized is None:
            self.rejected["invalid_url"] += 1
            return False
        if normalized in self.seen:
            return False
        reason = self._refusal(normalized, depth)
        if reason is not None:
            self.rejected[reason] += 1
            return False
        self.seen.add(normalized)
        # Ordered by depth, then arrival, so links found late never jump ahead of sitemap pages.
        heapq.heappush(self._heap, (depth, self._order, normalized))
        self._order += 1
        return True

    def extend(self, urls: Iterable[str], depth: int = 0, base: str | None = None) -> int:
        """Queue many URLs at one depth; returns how many were accepted."""
        return sum(self.add(url, depth, base) for url in urls)

    def pop(self) -> tuple[str, int] | None:
        """The shallowest queued (url, depth), or None when the frontier is empty."""
        if not self._heap:
            return None
        depth, _, url = heapq.heappop(self._heap)
        return url, depth

    def __len__(self) -> int:
        return len(self._heap)

    def _refusal(self, url: str, depth: int) -> str | None:
        if depth > self.max_depth:
            return "max_depth"
        if len(self.seen) >= self.max_pages:
            return "max_pages"
        for check in self.checks:
            if (reason := check(url)) is not None:
                return reason
        return None
