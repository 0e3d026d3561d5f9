"""HTML → Document: decode, defuse pathological nesting, parse, then gather what the other
readers find: metadata (``metadata``), main-content sections (``maincontent``), structured facts
(``facts``), forms and actions (``actions``) and the page's links.
"""

from __future__ import annotations

import re
from itertools import accumulate
from urllib.parse import urldefrag

from selectolax.lexbor import LexborHTMLParser

from ingest.actions import extract_actions, extract_forms, manifest_link
from ingest.charset import decode_html
from ingest.crawl.urls import LinkResolver
from ingest.document import Document, Section
from ingest.facts import extract_structured
from ingest.injection import Finding, strip_injections
from ingest.lang import detect_language
from ingest.maincontent import find_main, main_sections, strip_boilerplate
from ingest.metadata import (
    base_url,
    canonical_url,
    declared_language,
    dom_breadcrumbs,
    meta_values,
    page_title,
    robots_directives,
    updated_date,
)
from ingest.text import collapse_whitespace

# ---------------------------------------------------------------------------------------------
# Pathological nesting
# ---------------------------------------------------------------------------------------------

# Lexbor (like the HTML standard's algorithm) checks the stack of open elements at each of these
# start tags, so parsing N of them nested costs O(N²): 20,000 nested <div>s take a second, a
# 5 MB page of "<ul><li>" would take hours. Blink stops nesting at 512; so do we, by dropping
# these tags (keeping their text) from a page nested deeper than that.
MAX_NESTING = 512
_BLOCK_CONTAINER_NAMES = (
    "address|article|aside|blockquote|center|details|dialog|dir|div|dl|dd|dt|fieldset|figcaption"
    "|figure|footer|header|hgroup|li|main|menu|nav|ol|section|summary|ul"
)
# li, dt and dd are left out of the depth count: their end tags are optional ("<li>a<li>b" is a
# list, not nesting), and the <ul>/<dl> around them nests anyway. The scan runs on lowercased
# UTF-8 bytes: several times faster than a case-insensitive search of the str.
_NESTING_TAG = re.compile(
    rb"<(/?)(?:address|article|aside|blockquote|center|details|dialog|dir|div|dl|fieldset"
    rb"|figcaption|figure|footer|header|hgroup|main|menu|nav|ol|section|summary|ul)(?![\w-])"
)
_BLOCK_CONTAINER_ELEMENT = re.compile(
    rf"</?(?:{_BLOCK_CONTAINER_NAMES})(?![\w-])[^<>]*>", re.IGNORECASE  # [^<>]: linear on "<div<div<div…"
)


def _clamped_depth(depth: int, step: int) -> int:
    return max(0, depth + step)


def nesting_exceeds(html: str, limit: int = MAX_NESTING) -> bool:
    """Whether block containers nest deeper than ``limit`` (a linear, approximate scan)."""
    if html.count("<") <= limit:
        return False
    slashes = _NESTING_TAG.findall(html.encode("utf-8", "replace").lower())
    if slashes.count(b"") <= limit:  # too few opening tags to nest that deep: the usual case
        return False
    steps = [-1 if slash else 1 for slash in slashes]
    # Clamped at zero, so stray closing tags first cannot hide deep nesting after them.
    return max(accumulate(steps, _clamped_depth)) > limit


def defuse_deep_nesting(html: str) -> str:
    """``html`` unchanged, or without block-container tags if they nest pathologically deep."""
    if not nesting_exceeds(html):
        return html
    return _BLOCK_CONTAINER_ELEMENT.sub(" ", html)


# ---------------------------------------------------------------------------------------------
# Links
# ---------------------------------------------------------------------------------------------


def contact_links(tree: LexborHTMLParser, limit: int = 20) -> list[str]:
    """The page's tel:, fax: and mailto: links, as written, once each."""
    found: dict[str, None] = {}
    for anchor in tree.css('a[href^="tel:" i], a[href^="fax:" i], a[href^="mailto:" i]'):
        href = (anchor.attributes.get("href") or "").strip()
        if href and len(href) < 200:
            found[href] = None
        if len(found) >= limit:
            break
    return list(found)


def page_links(tree: LexborHTMLParser, base: str) -> list[str]:
    """Every http(s) link on the page, absolute, without fragments, in order, once."""
    resolver = LinkResolver(base)
    links: dict[str, None] = {}
    seen_hrefs: set[str] = set()
    for anchor in tree.css("a[href], area[href]"):
        href = anchor.attributes.get("href") or ""
        if href in seen_hrefs:
            continue
        seen_hrefs.add(href)
        absolute = resolver.resolve(href)
        if absolute:
            links[absolute] = None
    return list(links)


# ---------------------------------------------------------------------------------------------
# Text a visitor never sees
# ---------------------------------------------------------------------------------------------

MAX_UNSEEN_CHARS = 200_000
MAX_COMMENT_SCAN = 2_000_000


def html_comments(html: str, limit: int = MAX_COMMENT_SCAN) -> list[str]:
    """The text of the page's comments, in the first ``limit`` characters. One pass with
    str.find: a lazy ``<!--(.*?)-->`` regex rescans to the end from every unclosed ``<!--``,
    O(N²) on a page of them (found by fuzzing). An unclosed comment runs to the end, as in HTML."""
    comments: list[str] = []
    position = 0
    while (start := html.find("<!--", position, limit)) >= 0:
        end = html.find("-->", start + 4, limit)
        if end < 0:
            comments.append(html[start + 4 : limit])
            break
        comments.append(html[start + 4 : end])
        position = end + 3
    return comments


def unseen_injections(hidden_texts: list[str], html: str) -> list[Finding]:
    """Prompt injection in what the page hides from visitors: hidden elements' text and HTML
    comments. None of it is indexed; the findings tell the site owner it is there."""
    findings: list[Finding] = []
    budget = MAX_UNSEEN_CHARS
    sources = [("hidden element", text) for text in hidden_texts]
    if "<!--" in html:
        sources += [("HTML comment", comment) for comment in html_comments(html)]
    for where, text in sources:
        if budget <= 0:
            break
        text = collapse_whitespace(text)[:budget]
        budget -= len(text)
        findings.extend(strip_injections(text, where)[1])
    return findings


# ---------------------------------------------------------------------------------------------
# The whole page
# ---------------------------------------------------------------------------------------------


def extract(
    html: bytes | str,
    url: str,
    *,
    headers: dict[str, str] | None = None,
    encoding: str | None = None,
) -> Document:
    """Everything frontdesk keeps from one page. Never raises on bad input: garbage, empty or
    mis-declared pages give a Document with whatever could be read (possibly nothing)."""
    page_url = urldefrag(url)[0]
    text = decode_html(html, headers=headers, encoding=encoding).replace("\x00", "")
    tree = LexborHTMLParser(defuse_deep_nesting(text), scripting=True)
    meta = meta_values(tree)
    base = base_url(tree, page_url)
    title = page_title(tree, meta)
    noindex, nofollow = robots_directives(meta, headers)
    structured = extract_structured(text, base)
    breadcrumbs = structured.breadcrumbs or dom_breadcrumbs(tree)
    forms = extract_forms(tree, base)
    contacts = contact_links(tree)
    actions = extract_actions(tree, base)
    links = [] if nofollow else page_links(tree, base)

    sections: list[Section] = []
    hidden: list[str] = []
    updated = structured.date_modified
    main = find_main(tree)
    if main is not None:
        updated = updated_date(meta, structured.date_modified, main)
        hidden = strip_boilerplate(main)
        sections = main_sections(main, title)
        body = tree.body
        if not sections and body is not None and body.mem_id != main.mem_id:
            # An empty <main> (a hero banner, a JavaScript mount point): use the whole page.
            hidden += strip_boilerplate(body)
            sections = main_sections(body, title)
    lang = declared_language(tree, meta) or detect_language(
        " ".join(s.text for s in sections[:8])[:3000]
    )
    return Document(
        url=page_url,
        canonical_url=canonical_url(tree, base, page_url),
        title=title,
        description=collapse_whitespace(
            meta.get("description") or meta.get("og:description") or ""
        ),
        lang=lang,
        sections=sections,
        facts=structured.facts,
        forms=forms,
        actions=actions,
        breadcrumbs=breadcrumbs,
        updated=updated,
        links=links,
        noindex=noindex,
        nofollow=nofollow,
        contact_links=contacts,
        actions_manifest=manifest_link(tree, base),
        flags=unseen_injections(hidden, text),
    )
