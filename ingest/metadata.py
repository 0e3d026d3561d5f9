"""Page metadata read from the parsed HTML: ``<meta>`` values, base URL, title, canonical URL,
declared language, robots directives (meta and X-Robots-Tag), breadcrumbs, last-updated date.
"""

from __future__ import annotations

import re

from selectolax.lexbor import LexborHTMLParser, LexborNode

from ingest.charset import header_value
from ingest.crawl.urls import http_url
from ingest.lang import primary_subtag
from ingest.maincontent import has_ancestor, heading_text
from ingest.text import collapse_whitespace


def meta_values(tree: LexborHTMLParser) -> dict[str, str]:
    """``<meta name|property|http-equiv|itemprop=… content=…>``, keys lowercased, first wins."""
    values: dict[str, str] = {}
    for meta in tree.css("meta[content]"):
        attrs = meta.attributes
        content = attrs.get("content") or ""
        for key_attr in ("name", "property", "http-equiv", "itemprop"):
            key = attrs.get(key_attr)
            if key:
                values.setdefault(key.strip().lower(), content.strip())
    return values


def base_url(tree: LexborHTMLParser, url: str) -> str:
    """What the page's relative links resolve against: an http(s) ``<base href>``, else ``url``."""
    base = tree.css_first("base[href]")
    if base is not None:
        resolved = http_url(base.attributes.get("href") or "", url)
        if resolved:
            return resolved
    return url


def page_title(tree: LexborHTMLParser, meta: dict[str, str]) -> str:
    """``<title>`` (not an SVG icon's), else ``og:title``, else the first ``<h1>``."""
    for title in tree.css("title"):
        if has_ancestor(title, ("svg",)):  # SVG icons carry <title>s of their own
            continue
        text = collapse_whitespace(title.text())
        if text:
            return text
    if meta.get("og:title"):
        return collapse_whitespace(meta["og:title"])
    heading = tree.css_first("h1")
    return heading_text(heading) if heading is not None else ""


def canonical_url(tree: LexborHTMLParser, base: str, page_url: str) -> str:
    """The first http(s) ``<link rel=canonical>``, else ``page_url``."""
    for link in tree.css('link[rel~="canonical" i][href]'):
        resolved = http_url(link.attributes.get("href") or "", base)
        if resolved:
            return resolved
    return page_url


def declared_language(tree: LexborHTMLParser, meta: dict[str, str]) -> str:
    """Primary language subtag the page declares (``<html lang>``, Content-Language), or ""."""
    html = tree.css_first("html")
    if html is not None:
        for attr in ("lang", "xml:lang"):
            lang = primary_subtag(html.attributes.get(attr))
            if lang:
                return lang
    return primary_subtag(meta.get("content-language", "").split(",")[0])


_ROBOTS_AGENT = re.compile(r"^\s*([A-Za-z0-9_.-]+)\s*:")
_ROBOTS_FIELDS = {"unavailable_after", "max-snippet", "max-image-preview", "max-video-preview"}
_OUR_AGENTS = {"frontdesk", "frontdesk-bot", "*"}


def robots_directives(meta: dict[str, str], headers: dict[str, str] | None) -> tuple[bool, bool]:
    """(noindex, nofollow) from ``<meta name=robots>`` and the ``X-Robots-Tag`` header.

    Header directives aimed at another crawler ("googlebot: noindex") are ignored.
    """
    directives: set[str] = set()
    for content in (meta.get("robots", ""), meta.get("frontdesk", "")):
        directives.update(d.strip().lower() for d in content.split(","))
    header = header_value(headers, "x-robots-tag")
    agent = _ROBOTS_AGENT.match(header)
    if agent and agent.group(1).lower() not in _ROBOTS_FIELDS:
        # "googlebot: noindex" speaks to one crawler; only our own name or none applies to us.
        header = header[agent.end() :] if agent.group(1).lower() in _OUR_AGENTS else ""
    directives.update(d.strip().lower() for d in header.split(","))
    noindex = bool(directives & {"noindex", "none"})
    nofollow = bool(directives & {"nofollow", "none"})
    return noindex, nofollow


_BREADCRUMB_CONTAINERS = (
    'nav[aria-label*="breadcrumb" i], [itemtype*="BreadcrumbList"], ol[class*="breadcrumb" i],'
    ' ul[class*="breadcrumb" i], nav[class*="breadcrumb" i], div[class*="breadcrumb" i], .md-path'
)
_BREADCRUMB_SEPARATORS = {"/", ">", "›", "»", "|", "→", "·", "\\"}


def dom_breadcrumbs(tree: LexborHTMLParser) -> list[str]:
    """Names in the page's breadcrumb trail markup, for pages without BreadcrumbList data."""
    container = tree.css_first(_BREADCRUMB_CONTAINERS)
    if container is None:
        return []
    items = container.css("li") or container.css("a")
    names = [heading_text(item) for item in items]
    return [n for n in names if n and n not in _BREADCRUMB_SEPARATORS][:20]


_DATE_META_KEYS = ("article:modified_time", "og:updated_time", "datemodified", "last-modified")


def updated_date(meta: dict[str, str], structured_date: str | None, main: LexborNode) -> str | None:
    """Last change: structured data, else a date ``<meta>``, else ``<time datetime>`` in main."""
    if structured_date:
        return structured_date
    for key in _DATE_META_KEYS:
        if meta.get(key):
            return meta[key]
    stamp = main.css_first("time[datetime]")
    if stamp is not None and (stamp.attributes.get("datetime") or "").strip():
        return (stamp.attributes.get("datetime") or "").strip()
    return None
