"""Fuzz targets: each takes one input (bytes), runs an extractor in-process and checks what it
promises. Shared by the hypothesis properties (tests/test_fuzz.py), the long run
(`python -m tests.chaos.fuzz`) and the replay of found crashers (tests/fuzz_corpus/).

A target passes or raises. ``Broken`` means an output broke an invariant; any other exception is
one the extractor's documentation does not allow (all of them say "never raises").
"""

from __future__ import annotations

import codecs
import json
import math
import re
from collections.abc import Callable
from urllib.parse import urlsplit, urlunsplit

from ingest.charset import codec_for, decode_html
from ingest.clean import clean_document
from ingest.crawl.robots import parse_robots
from ingest.crawl.sitemaps import parse_sitemap
from ingest.crawl.urls import LinkResolver, UrlPolicy, http_url, normalize_url
from ingest.document import KINDS, Document
from ingest.extract import extract
from ingest.facts import facts_from_jsonld, structured_data_from_items
from ingest.facts.read import parse_json_ld_block, read_page
from ingest.rawhtml import scrub_html
from store.config import CleanSettings, CrawlSettings

#: The per-page deadline a parser must finish within: the crawl's default request timeout
#: (store/config.py CrawlSettings.timeout). An input slower than this counts as a hang.
PAGE_DEADLINE_S = CrawlSettings().timeout

PAGE_URL = "http://shop.example.test/dir/page.html?x=1"
BASES = (
    "http://shop.example.test/a/b/c.html?q=1",
    "https://shop.example.test/",
    "http://127.0.0.1:8766/guides/tool/",
    "http://[::1]:8080/x/y",
)
USER_AGENT = "frontdesk/0.1 (+https://example.test/bot)"
CLEAN = CleanSettings()
POLICY = UrlPolicy(CrawlSettings(), "http://shop.example.test/")

# What cleaned (indexed) text may not hold: C0/C1 controls other than tab and newline.
_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
_W3C_DATE = re.compile(r"^\d{4}(-\d{2}(-\d{2}([T ][\d:.]+(Z|[+-]\d{2}:?\d{2})?)?)?)?$")
_URL_FORBIDDEN = re.compile(r"[\x00-\x20\x7f#]")


class Broken(AssertionError):
    """An extractor's output broke one of its invariants."""


def _check(condition: object, message: str) -> None:
    if not condition:
        raise Broken(message)


def _text(data: bytes) -> str:
    return data.decode("utf-8", "replace")


# -- HTML ---------------------------------------------------------------------------------------


def _document_texts(doc: Document) -> list[str]:
    texts = [doc.title, doc.description, *doc.breadcrumbs]
    for section in doc.sections:
        texts += [section.text, *section.heading_path]
    texts += [fact.text for fact in doc.facts]
    for form in doc.forms:
        texts += [form.name, *(f.label for f in form.fields)]
    texts += [action.label for action in doc.actions]
    return texts


def check_html(data: bytes) -> None:
    """extract() → Document; then clean_document() and scrub_html() as the indexer runs them."""
    content_type = ("text/html", "text/html; charset=utf-8", "text/html; charset=shift_jis")[len(data) % 3]
    doc = extract(data, PAGE_URL, headers={"content-type": content_type})
    _check(isinstance(doc, Document), "extract() did not return a Document")
    for text in _document_texts(doc):
        _check(isinstance(text, str) and "\x00" not in text, f"extracted text holds NUL: {text[:80]!r}")
    for link in doc.links:
        _check(link.lower().startswith(("http://", "https://")) and "#" not in link, f"bad link {link[:80]!r}")
    _check(all(s.kind in KINDS for s in doc.sections), "a section of an unknown kind")
    _check(all(f.kind in ("fact", "faq") for f in doc.facts), "a fact of an unknown kind")
    cleaned = clean_document(doc, CLEAN)
    for text in _document_texts(cleaned):
        _check(not _CONTROL.search(text), f"cleaned text holds a control character: {text[:80]!r}")
    for fact in cleaned.facts:
        json.dumps(fact.data, ensure_ascii=False, default=str)  # stored as JSON: must encode
    scrubbed, encoding = scrub_html(data, None, CLEAN)
    _check(isinstance(scrubbed, bytes), "scrub_html did not return bytes")
    _check(encoding is None or codec_for(encoding) is not None, f"scrub_html named codec {encoding!r}")


# -- structured data ----------------------------------------------------------------------------


def _check_facts(facts: list) -> None:
    for fact in facts:
        _check(isinstance(fact.text, str) and fact.text.strip(), "an empty fact text")
        _check(fact.kind in ("fact", "faq"), f"fact kind {fact.kind!r}")
        json.dumps(fact.data, ensure_ascii=False, default=str)


def check_jsonld(data: bytes) -> None:
    """One ``<script type="application/ld+json">`` block: parsed leniently, then rendered.

    ``structured_data_from_items`` is called without the broad guard its callers wrap it in, so a
    rendering bug that would silently cost a page its facts shows up here as a crash."""
    text = _text(data)
    items = parse_json_ld_block(text)
    _check(isinstance(items, list) and all(isinstance(i, dict) for i in items), "items are not dicts")
    structured = structured_data_from_items({"json-ld": items})
    _check_facts(structured.facts)
    _check(all(isinstance(b, str) for b in structured.breadcrumbs), "a breadcrumb that is not text")
    # The widget sends a page's JSON-LD as already-parsed JSON (app/question.py page_context_text).
    try:
        parsed = json.loads(text)
    except (ValueError, RecursionError):
        parsed = items
    _check_facts(facts_from_jsonld(parsed))


def check_microdata(data: bytes) -> None:
    """A page's microdata, OpenGraph and JSON-LD through extruct, then rendered (unguarded)."""
    items_by_source, opengraph = read_page(_text(data), PAGE_URL)
    structured = structured_data_from_items(items_by_source, opengraph)
    _check_facts(structured.facts)


# -- crawl files --------------------------------------------------------------------------------


def _probe_urls(text: str) -> list[str]:
    """URLs to ask the rules about: fixed ones, and the paths the file itself names."""
    urls = ["http://shop.example.test/", "http://shop.example.test/a/b?c=d", "http://shop.example.test/%2A$"]
    for line in text.splitlines()[:20]:
        _, _, value = line.partition(":")
        value = value.strip()[:200]
        if value:
            urls.append("http://shop.example.test/" + value.lstrip("/").replace("*", "x").replace("$", ""))
    return urls


def check_robots(data: bytes) -> None:
    text = _text(data)
    rules = parse_robots(text, USER_AGENT)
    delay = rules.crawl_delay
    _check(delay is None or (math.isfinite(delay) and delay >= 0), f"crawl delay {delay!r}")
    _check(all(isinstance(s, str) for s in rules.sitemaps), "a sitemap that is not text")
    for url in _probe_urls(text):
        _check(rules.check(url) in (None, "robots_disallowed"), "check() gave an unknown reason")


def check_sitemap(data: bytes) -> None:
    children, entries = parse_sitemap(data)
    _check(all(isinstance(c, str) and c for c in children), "an empty child sitemap")
    for loc, lastmod in entries:
        _check(isinstance(loc, str) and loc, "an empty <loc>")
        _check(lastmod is None or _W3C_DATE.match(lastmod), f"lastmod {lastmod!r} is not a W3C date")
        normalized = normalize_url(loc)
        if normalized is not None:
            POLICY.allows(normalized)


def check_charset(data: bytes) -> None:
    """First line: a charset label (as Content-Type and as the transport would declare it)."""
    label_bytes, _, body = data.partition(b"\n")
    label = label_bytes[:60].decode("latin-1")
    codec = codec_for(label)
    if codec is not None:
        codecs.lookup(codec)
    for headers, encoding in ((None, None), ({"Content-Type": f"text/html; charset={label}"}, None),
                              (None, label)):
        decoded = decode_html(body, headers=headers, encoding=encoding)
        _check(isinstance(decoded, str), "decode_html did not return text")
        if not body.isascii() and not body.startswith((codecs.BOM_UTF8, codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
            try:
                as_utf8 = body.decode("utf-8")
            except UnicodeDecodeError:
                continue
            _check(decoded == as_utf8, "valid UTF-8 was not read as UTF-8")


# -- URLs ---------------------------------------------------------------------------------------


def _check_normalized(url: str | None, source: str) -> None:
    if url is None:
        return
    _check(url.startswith(("http://", "https://")), f"{source}: {url[:80]!r} is not http(s)")
    _check(not _URL_FORBIDDEN.search(url), f"{source}: {url[:80]!r} holds a space, control or '#'")
    again = normalize_url(url)
    _check(again == url, f"{source}: not idempotent: {url[:80]!r} → {again!r}")


def _urljoin_dropped_empty_params(fast: str, slow: str) -> bool:
    """Whether `slow` is `fast` as urljoin spells it: a last path segment "x;" is "x" with empty
    "params" to urlparse, and the ";" is dropped; to browsers (WHATWG URL) and LinkResolver it is a
    segment like any other. Found by the fuzzer: href "3;" (tests/fuzz_corpus/url/crash-f34fbc9a9769ba9e)."""
    parts = urlsplit(fast)
    last = parts.path.rsplit("/", 1)[-1]
    if not last.endswith(";") or last.index(";") != len(last) - 1:
        return False
    return normalize_url(urlunsplit(parts._replace(path=parts.path[:-1]))) == slow


def check_url(data: bytes) -> None:
    """First line: the href; the input's length picks the base it is resolved against."""
    href = _text(data).split("\n", 1)[0]
    base = BASES[len(data) % len(BASES)]
    _check_normalized(normalize_url(href), "normalize_url")
    _check_normalized(normalize_url(href, base), "normalize_url(base)")
    resolved = LinkResolver(base).resolve(href)
    _check(resolved == "" or (resolved[:8].lower().startswith(("http://", "https://")) and "#" not in resolved),
           f"LinkResolver gave {resolved[:80]!r}")
    slow = http_url(href, base)
    _check(slow == "" or slow[:8].lower().startswith(("http://", "https://")), f"http_url gave {slow[:80]!r}")
    # The fast resolver must name the same page as urljoin does (the crawler normalises both).
    # Where one of them yields no valid URL ("http://" alone: urljoin falls back to the base),
    # the link is dropped or points at the page itself: harmless either way. An href that starts
    # with ";" is a relative path to browsers and to LinkResolver; urljoin reads it as the base's
    # "params" and returns the base: its quirk, not ours.
    fast_page, slow_page = normalize_url(resolved) if resolved else None, normalize_url(slow) if slow else None
    if fast_page and slow_page and not href.strip().startswith(";"):
        _check(fast_page == slow_page or _urljoin_dropped_empty_params(fast_page, slow_page),
               f"LinkResolver {fast_page!r} != urljoin {slow_page!r} for {href[:80]!r}")
    for url in (resolved, slow):
        if url:
            POLICY.allows(url)


TARGETS: dict[str, Callable[[bytes], None]] = {
    "html": check_html,
    "jsonld": check_jsonld,
    "microdata": check_microdata,
    "robots": check_robots,
    "sitemap": check_sitemap,
    "charset": check_charset,
    "url": check_url,
}
