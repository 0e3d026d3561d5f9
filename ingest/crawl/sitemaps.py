"""Sitemaps: ``load_sitemaps`` follows sitemap indexes and gzip files to the site's page URLs
with their ``lastmod``; ``parse_sitemap`` reads one file by a bounded tag scan, never as XML.
"""

from __future__ import annotations

import logging
import re
from collections import Counter
from collections.abc import Iterable

from ingest.crawl.fetch import BoundedDecoder, Fetcher
from ingest.crawl.urls import normalize_url
from store.errors import FetchError

logger = logging.getLogger(__name__)

SITEMAP_ACCEPT = "application/xml,text/xml,application/gzip,application/x-gzip,application/octet-stream,text/plain"
#: Sitemap protocol limits: 50 MB uncompressed per file. Index nesting beyond 3 levels
#: and more than 1000 sitemap files are what runaway generators produce, not real sites.
SITEMAP_MAX_BYTES = 50_000_000
SITEMAP_MAX_DEPTH = 3
SITEMAP_MAX_FILES = 1000
SITEMAP_MAX_URLS = 500_000

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
    decoder = BoundedDecoder("gzip", limit, url)
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
