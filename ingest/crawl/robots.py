"""robots.txt (RFC 9309): a lenient parser, the rules that apply to our user agent on one host,
and ``fetch_robots``, which fetches them and answers for unreachable or failing robots.txt.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable
from typing import TYPE_CHECKING
from urllib.parse import urlsplit, urlunsplit

from ingest.crawl.urls import normalize_escapes
from store.errors import FetchError

if TYPE_CHECKING:
    from ingest.crawl.fetch import Fetcher

logger = logging.getLogger(__name__)

ROBOTS_ACCEPT = "text/plain,*/*"
#: RFC 9309 asks crawlers to parse at least 500 KiB of robots.txt.
ROBOTS_MAX_BYTES = 512 * 1024

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
        target = _robots_target(parts.path or "/")
        if parts.query:
            target += "?" + _robots_target(parts.query)
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
        field, sep, value = line.partition(":")
        key = _ROBOTS_KEYS.get(field.strip().lower()) if sep else None
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
    return normalize_escapes(text, _ROBOTS_UNSAFE)


def _robots_target(text: str) -> str:
    """A URL's path or query spelled as patterns spell it. Bare ``*`` and ``$`` are pattern syntax,
    so a pattern names the characters themselves as ``%2A`` and ``%24`` (RFC 9309 section 2.2.3).
    """
    return _canonical_robots_path(text).replace("*", "%2A").replace("$", "%24")


class _RobotsPattern:
    """One rule's path pattern: ``*`` matches any run of characters; a final ``$`` anchors the end;
    any other ``$`` is a dollar sign (spelled ``%24``, as ``_robots_target`` spells the URL's).

    Matched by finding the literal pieces between the stars left to right, each at its first
    place: linear in the URL's length. A regular expression of ``.*`` pieces backtracks
    polynomially (``/*/*/*…/*x$`` held a crawl for minutes on one URL): a site must not be able
    to stall the crawler with its own robots.txt."""

    __slots__ = ("pieces", "anchored")

    def __init__(self, pattern: str) -> None:
        self.anchored = pattern.endswith("$")
        body = pattern[:-1] if self.anchored else pattern
        self.pieces = [piece.replace("$", "%24") for piece in body.split("*")]

    def match(self, target: str) -> bool:
        first, *rest = self.pieces
        if not target.startswith(first):
            return False
        if not rest:  # no star: a prefix, or the whole path when anchored
            return not self.anchored or len(target) == len(first)
        end = len(target)
        if self.anchored:  # the last piece must end the path
            last = rest.pop()
            if not target.endswith(last) or end - len(last) < len(first):
                return False
            end -= len(last)
        position = len(first)
        for piece in rest:
            found = target.find(piece, position, end)
            if found < 0:
                return False
            position = found + len(piece)
        return True


def _compile_robots_pattern(pattern: str) -> _RobotsPattern:
    return _RobotsPattern(pattern)


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
