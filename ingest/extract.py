"""HTML → Document: charset, page metadata, links, and the main content as heading-scoped
sections, with navigation, sidebars, footers and hidden elements left out.
"""

from __future__ import annotations

import codecs
import re
from itertools import accumulate
from urllib.parse import urldefrag, urljoin, urlsplit

from selectolax.lexbor import LexborHTMLParser, LexborNode

from ingest.actions import extract_actions, extract_forms
from ingest.document import Document, Section
from ingest.facts import extract_structured
from ingest.lang import detect_language, primary_subtag

# ---------------------------------------------------------------------------------------------
# Charset
# ---------------------------------------------------------------------------------------------

_BOMS = (
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)
_META_CHARSET = re.compile(
    rb"""<meta[^>]{0,512}?charset\s*=\s*["']?\s*([A-Za-z0-9_:.\-]{1,40})""", re.I
)
_HEADER_CHARSET = re.compile(r"""charset\s*=\s*["']?\s*([A-Za-z0-9_:.\-]{1,40})""", re.I)
# One valid multi-byte UTF-8 sequence: its presence means the page is UTF-8 with a few bad bytes,
# its absence that it is a legacy single-byte page whose declaration is wrong.
_UTF8_MULTIBYTE = re.compile(
    rb"[\xc2-\xdf][\x80-\xbf]|[\xe0-\xef][\x80-\xbf]{2}|[\xf0-\xf4][\x80-\xbf]{3}"
)


def _header(headers: dict[str, str] | None, name: str) -> str:
    if not headers:
        return ""
    for key, value in headers.items():
        if key.lower() == name:
            return value or ""
    return ""


def codec_for(label: str | None) -> str | None:
    """Python codec for a charset label, or None for unknown or non-text codecs."""
    if not label:
        return None
    try:
        info = codecs.lookup(label.strip().strip("\"'").lower())
    except LookupError:
        return None
    if not getattr(info, "_is_text_encoding", True):  # base64, rot13, zlib …
        return None
    # WHATWG Encoding: "latin1" and "ascii" labels mean windows-1252, as in every browser.
    return "cp1252" if info.name in ("latin-1", "iso8859-1", "ascii") else info.name


def _decode_as_utf8(raw: bytes) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        if _UTF8_MULTIBYTE.search(raw):
            return raw.decode("utf-8", "replace")
        return raw.decode("cp1252", "replace")


def decode_html(
    html: bytes | str, *, headers: dict[str, str] | None = None, encoding: str | None = None
) -> str:
    """Bytes → text; never raises.

    Order: byte-order mark; then the declared charset: ``encoding`` (what the transport
    declared, e.g. the crawler's reading of Content-Type), the ``Content-Type`` header in
    ``headers``, ``<meta charset>`` / ``http-equiv`` in the first 4 KB; then UTF-8. Bytes that
    are valid UTF-8 (with non-ASCII in them) are read as UTF-8 whatever was declared, since
    legacy-encoded text is practically never valid UTF-8 by accident; a declared UTF-8 page
    without a single valid multi-byte sequence is read as windows-1252.
    """
    if isinstance(html, str):
        return html
    for bom, codec in _BOMS:
        if html.startswith(bom):
            return html[len(bom) :].decode(codec, "replace")
    if not html.isascii():
        try:
            return html.decode("utf-8")
        except UnicodeDecodeError:
            pass
    header_match = _HEADER_CHARSET.search(_header(headers, "content-type"))
    meta_match = _META_CHARSET.search(html[:4096])
    labels = [
        (encoding, False),
        (header_match.group(1) if header_match else None, False),
        (meta_match.group(1).decode("ascii") if meta_match else None, True),
    ]
    for label, in_meta in labels:
        codec = codec_for(label)
        # A page that can carry an ASCII <meta> is not UTF-16/32, whatever it says (WHATWG).
        if codec is None or (in_meta and codec.startswith(("utf-16", "utf-32"))):
            continue
        if codec == "utf-8":
            return _decode_as_utf8(html)
        return html.decode(codec, "replace")
    return _decode_as_utf8(html)


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
    rf"</?(?:{_BLOCK_CONTAINER_NAMES})(?![\w-])[^>]*>", re.IGNORECASE
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
# Page metadata
# ---------------------------------------------------------------------------------------------


def collapse(text: str) -> str:
    return " ".join(text.split())


def _meta_values(tree: LexborHTMLParser) -> dict[str, str]:
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


def http_url(href: str, base: str) -> str:
    """``href`` made absolute against ``base``, fragment removed; "" unless http(s)."""
    try:
        absolute = urldefrag(urljoin(base, href.strip()))[0]
        scheme = urlsplit(absolute).scheme
    except ValueError:
        return ""
    return absolute if scheme in ("http", "https") else ""


def _base_url(tree: LexborHTMLParser, url: str) -> str:
    base = tree.css_first("base[href]")
    if base is not None:
        resolved = http_url(base.attributes.get("href") or "", url)
        if resolved:
            return resolved
    return url


def _title(tree: LexborHTMLParser, meta: dict[str, str]) -> str:
    for title in tree.css("title"):
        if _has_ancestor(title, ("svg",)):  # SVG icons carry <title>s of their own
            continue
        text = collapse(title.text())
        if text:
            return text
    if meta.get("og:title"):
        return collapse(meta["og:title"])
    heading = tree.css_first("h1")
    return heading_text(heading) if heading is not None else ""


def _canonical(tree: LexborHTMLParser, base: str, page_url: str) -> str:
    for link in tree.css('link[rel~="canonical" i][href]'):
        resolved = http_url(link.attributes.get("href") or "", base)
        if resolved:
            return resolved
    return page_url


def _language(tree: LexborHTMLParser, meta: dict[str, str]) -> str:
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
    header = _header(headers, "x-robots-tag")
    agent = _ROBOTS_AGENT.match(header)
    if agent and agent.group(1).lower() not in _ROBOTS_FIELDS:
        # "googlebot: noindex" speaks to one crawler; only our own name or none applies to us.
        header = header[agent.end() :] if agent.group(1).lower() in _OUR_AGENTS else ""
    directives.update(d.strip().lower() for d in header.split(","))
    noindex = bool(directives & {"noindex", "none"})
    nofollow = bool(directives & {"nofollow", "none"})
    return noindex, nofollow


_URL_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


def remove_dot_segments(path: str) -> str:
    """RFC 3986 section 5.2.4 for an absolute path: "/a/b/../c/./d" → "/a/c/d"."""
    segments = path.split("/")
    output: list[str] = []
    for segment in segments[1:]:
        if segment == "..":
            if output:
                output.pop()
        elif segment != ".":
            output.append(segment)
    if segments[-1] in (".", ".."):
        output.append("")
    return "/" + "/".join(output)


class LinkResolver:
    """Resolves a page's hrefs against its base URL, fragments removed.

    Documentation sites link relatively ("../../guides/x/"), hundreds of times per page; the
    common shapes are resolved here directly, several times faster than ``urljoin``, and
    anything unusual goes through ``urljoin``.
    """

    def __init__(self, base: str) -> None:
        self.base = base
        parts = urlsplit(base)
        self.origin = f"{parts.scheme}://{parts.netloc}"
        self.path = parts.path
        self.directory = (self.path or "/")[: (self.path or "/").rfind("/") + 1]
        self.query = parts.query
        self.fast = parts.scheme in ("http", "https") and "//" not in self.path

    def resolve(self, href: str) -> str:
        """Absolute http(s) URL without fragment, or "" for other schemes and in-page links."""
        href = href.strip()
        if not href or href.startswith("#"):
            return ""
        if href[:8].lower().startswith(("http://", "https://")):
            return href.partition("#")[0]
        if _URL_SCHEME.match(href):
            return ""  # mailto:, tel:, javascript: …
        reference = href.partition("#")[0]
        if not self.fast or reference.startswith("//") or "\\" in reference:
            return http_url(href, self.base)
        path, _, query = reference.partition("?")
        if not path:  # "?page=2": this page with another query; "?" alone keeps the old one
            query = query or self.query
            return self.origin + self.path + (f"?{query}" if query else "")
        merged = path if path.startswith("/") else self.directory + path
        if "//" in merged:
            return http_url(href, self.base)
        return self.origin + remove_dot_segments(merged) + (f"?{query}" if query else "")


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


_BREADCRUMB_CONTAINERS = (
    'nav[aria-label*="breadcrumb" i], [itemtype*="BreadcrumbList"], ol[class*="breadcrumb" i],'
    ' ul[class*="breadcrumb" i], nav[class*="breadcrumb" i], div[class*="breadcrumb" i], .md-path'
)
_BREADCRUMB_SEPARATORS = {"/", ">", "›", "»", "|", "→", "·", "\\"}


def dom_breadcrumbs(tree: LexborHTMLParser) -> list[str]:
    container = tree.css_first(_BREADCRUMB_CONTAINERS)
    if container is None:
        return []
    items = container.css("li") or container.css("a")
    names = [heading_text(item) for item in items]
    return [n for n in names if n and n not in _BREADCRUMB_SEPARATORS][:20]


_DATE_META_KEYS = ("article:modified_time", "og:updated_time", "datemodified", "last-modified")


def _updated(meta: dict[str, str], structured_date: str | None, main: LexborNode) -> str | None:
    if structured_date:
        return structured_date
    for key in _DATE_META_KEYS:
        if meta.get(key):
            return meta[key]
    stamp = main.css_first("time[datetime]")
    if stamp is not None and (stamp.attributes.get("datetime") or "").strip():
        return (stamp.attributes.get("datetime") or "").strip()
    return None


# ---------------------------------------------------------------------------------------------
# Main content
# ---------------------------------------------------------------------------------------------

# Content-management fallbacks, tried only when a page has no <main>, role=main or <article>.
_CONTENT_FALLBACKS = (
    "#main-content, #content, #main, .main-content, .post-content, .entry-content,"
    " .article-body, div.body, div.document"
)


def _has_ancestor(node: LexborNode, tags: tuple[str, ...], stop: LexborNode | None = None) -> bool:
    parent = node.parent
    while parent is not None:
        if parent.tag in tags:
            return True
        if stop is not None and parent.mem_id == stop.mem_id:
            return False
        parent = parent.parent
    return False


def find_main(tree: LexborHTMLParser) -> LexborNode | None:
    """The element that holds the page's own content.

    ``<main>`` / ``role=main`` first (sidebars that themes put inside it are removed later as
    nav/aside); else the page's only ``<article>``; else a common content container; else
    ``<body>``.
    """
    body = tree.body or tree.root
    landmark = tree.css_first('main, [role="main"]')
    if landmark is not None:
        return landmark
    if body is None:
        return None
    articles = body.css("article")
    if len(articles) == 1:
        return articles[0]
    fallback = body.css_first(_CONTENT_FALLBACKS)
    return fallback if fallback is not None else body


_ALWAYS_DROPPED = ", ".join(
    (
        "script, style, noscript, template, svg, math, iframe, object, embed, canvas, nav",
        "footer, button, select, textarea, input, dialog, link, meta",
        '[aria-hidden="true"], [hidden], [role="banner"], [role="navigation"]',
        '[role="contentinfo"], [role="complementary"], [role="search"], [role="dialog"]',
        '[role="alertdialog"], [role="menu"], [role="menubar"], [role="toolbar"]',
        '[style*="display:none"], [style*="display: none"], [style*="visibility:hidden"]',
        ".headerlink, .visually-hidden, .sr-only, .screen-reader-text, .skip-link",
        ".linenos, .lineno, .linenodiv, .copybutton, .md-clipboard",
        '#onetrust-consent-sdk, #CybotCookiebotDialog, .cc-window, [id*="cookie-banner" i]',
        '[class*="cookie-banner" i], [id*="cookie-consent" i], [class*="cookie-consent" i]',
        '[id*="cookie-notice" i], [class*="cookie-notice" i]',
    )
)


# Cookie banners are matched by their id or class only: a selector as loose as
# [aria-label*=cookie] also matches <article aria-label="Rocky Road Cookies">.
def strip_boilerplate(main: LexborNode) -> None:
    """Remove non-content elements inside ``main``, in place.

    <header> and <aside> are page furniture only at page level: inside an article or section
    they hold the article's own title or notes (Sphinx renders footnotes as <aside>), so they
    stay there. A ``hidden`` tab panel is real content behind a tab, and stays too.
    """
    doomed = [
        node
        for node in main.css(_ALWAYS_DROPPED)  # note: css() can match ``main`` itself
        if node.mem_id != main.mem_id
        and not (node.attributes.get("role") == "tabpanel" and "hidden" in node.attributes)
    ]
    for node in main.css("header, aside"):
        if node.mem_id == main.mem_id:
            continue
        sectioning = (
            ("article", "section") if node.tag == "aside" else ("article", "section", "main")
        )
        if not (main.tag in sectioning or _has_ancestor(node, sectioning, stop=main)):
            doomed.append(node)
    # Children before ancestors (reverse document order), so no node is freed twice.
    doomed_ids = {node.mem_id for node in doomed}
    in_document_order = [node for node in main.traverse() if node.mem_id in doomed_ids]
    for node in reversed(in_document_order):
        node.decompose()


_HEADINGS = {"h1": 1, "h2": 2, "h3": 3, "h4": 4, "h5": 5, "h6": 6}
_BLOCKS = {
    "address", "article", "aside", "blockquote", "body", "caption", "center", "dd", "details",
    "dialog", "div", "dl", "dt", "fieldset", "figcaption", "figure", "footer", "form", "header",
    "hgroup", "legend", "main", "p", "section", "summary", "tbody", "td", "tfoot", "th",
    "thead", "tr", "li", "ul", "ol", "menu", "table", "html",
}  # fmt: skip
_LISTS = {"ul", "ol", "menu"}
_ENTER, _EXIT = 0, 1
# What enter() asks of the walk: skip the children, walk them, or walk them and call leave().
_SKIP, _DESCEND, _DESCEND_AND_LEAVE = 0, 1, 2
# Marks a <br> inside collected inline text (NUL never survives decoding, so it is free).
_LINE_BREAK = "\x00"
_MAX_BLOCK_CHARS = 1200
_PERMALINK_CHARS = "¶§#🔗"
_JUNK_BLOCK = re.compile(
    r"^(?:skip to (?:main )?content|skip to navigation|back to top|table of contents|contents"
    r"|toggle navigation|edit this page|view this page|copy(?: to clipboard)?|print)$",
    re.IGNORECASE,
)
_FILENAME_ALT = re.compile(r"^[\w-]+\.(?:png|jpe?g|gif|svg|webp|avif)$", re.IGNORECASE)


def flat_text(node: LexborNode) -> str:
    """Text of a subtree on one line, with a space wherever a block element breaks it."""
    pieces: list[str] = []
    stack = [node]
    while stack:
        current = stack.pop()
        tag = current.tag
        if tag == "-text":
            pieces.append(current.text_content or "")
            continue
        if tag == "-comment":
            continue
        if tag in _BLOCKS or tag == "br":
            pieces.append(" ")
        elif tag == "img":
            pieces.append(current.attributes.get("alt") or "")
        stack.extend(reversed(list(current.iter(include_text=True))))
    return collapse("".join(pieces))


def heading_text(node: LexborNode) -> str:
    return flat_text(node).strip(_PERMALINK_CHARS + " ")


def _split_lines(lines: list[str], header: str = "") -> list[str]:
    """Consecutive lines grouped into blocks of at most _MAX_BLOCK_CHARS, each starting with
    ``header`` (a table's header row) when given."""
    blocks: list[str] = []
    current: list[str] = [header] if header else []
    size = len(header)
    for line in lines:
        if size + len(line) > _MAX_BLOCK_CHARS and len(current) > (1 if header else 0):
            blocks.append("\n".join(current))
            current, size = ([header] if header else []), len(header)
        current.append(line)
        size += len(line) + 1
    if len(current) > (1 if header else 0):
        blocks.append("\n".join(current))
    return blocks


def _is_layout_table(table: LexborNode) -> bool:
    """A table used for page layout: it holds headings or other tables."""
    # selectolax's css() on a node matches the node itself too, hence the identity check.
    return any(n.mem_id != table.mem_id for n in table.css("table, h1, h2, h3, h4, h5, h6"))


def table_blocks(table: LexborNode) -> list[str]:
    """A data table as text rows ("cell | cell"), the header row repeated in each block."""
    rows: list[str] = []
    header = ""
    for index, row in enumerate(table.css("tr")):
        cells = [flat_text(cell) for cell in row.iter() if cell.tag in ("td", "th")]
        if not any(cells):
            continue
        line = " | ".join(cells)
        is_header = index == 0 and all(
            cell.tag == "th" for cell in row.iter() if cell.tag in ("td", "th")
        )
        if is_header and not header:
            header = line
        else:
            rows.append(line)
    caption = table.css_first("caption")
    blocks = _split_lines(rows, header) if rows else ([header] if header else [])
    if caption is not None and flat_text(caption):
        blocks.insert(0, "Table: " + flat_text(caption))
    return blocks


def pre_text(node: LexborNode) -> str:
    lines = [line.rstrip() for line in (node.text() or "").replace("\r", "").split("\n")]
    while lines and not lines[0].strip():
        lines.pop(0)
    while lines and not lines[-1].strip():
        lines.pop()
    return "\n".join(lines)


class _SectionBuilder:
    """Walks the main content once, in document order, and cuts it into Sections at headings."""

    def __init__(self, lead_path: tuple[str, ...]) -> None:
        self.sections: list[Section] = []
        self.headings: list[tuple[int, str]] = []
        self.path = lead_path
        self.blocks: list[str] = []
        self.inline: list[str] = []
        self.images: list[str] = []
        self.lists: list[list[int]] = []  # per open list: [is_ordered, items so far]
        self.list_lines: list[str] = []
        self.prefix = ""
        self.glue_next = False

    # -- output -------------------------------------------------------------------------------

    def add_block(self, text: str) -> None:
        text = text.replace("¶", "").strip("\n")
        if not text.strip() or _JUNK_BLOCK.match(text.strip()):
            return
        if self.lists:
            indent = "  " * len(self.lists)
            self.list_lines.append((self.prefix or indent) + text)
            self.prefix = ""
            return
        if self.glue_next and self.blocks:
            self.blocks[-1] += "\n" + text
        else:
            self.blocks.append(text)
        self.glue_next = False

    def flush(self) -> None:
        if self.inline:
            lines = (collapse(line) for line in "".join(self.inline).split(_LINE_BREAK))
            self.inline = []
            self.add_block("\n".join(line for line in lines if line))
        if self.images:
            images, self.images = self.images, []
            for alt in images:
                self.add_block(f"Image: {alt}")

    def end_section(self) -> None:
        self.flush()
        if self.blocks:
            self.sections.append(Section(heading_path=self.path, text="\n\n".join(self.blocks)))
        self.blocks = []
        self.glue_next = False

    def start_heading(self, level: int, text: str) -> None:
        self.end_section()
        while self.headings and self.headings[-1][0] >= level:
            self.headings.pop()
        self.headings.append((level, text))
        self.path = tuple(t for _, t in self.headings)

    # -- walking ------------------------------------------------------------------------------

    def walk(self, root: LexborNode) -> list[Section]:
        stack: list[tuple[int, LexborNode]] = [(_ENTER, root)]
        while stack:
            step, node = stack.pop()
            if step == _EXIT:
                self.leave(node)
                continue
            action = self.enter(node)
            if action == _SKIP:
                continue
            if action == _DESCEND_AND_LEAVE:
                stack.append((_EXIT, node))
            children = list(node.iter(include_text=True))
            stack.extend((_ENTER, child) for child in reversed(children))
        self.end_section()
        return self.sections

    def enter(self, node: LexborNode) -> int:
        """Handle an element on the way in; say whether to walk its children."""
        tag = node.tag
        if tag == "-text":
            self.inline.append(node.text_content or "")
            return _SKIP
        if tag in _HEADINGS:
            text = heading_text(node)
            if text:
                self.start_heading(_HEADINGS[tag], text)
            return _SKIP
        if tag == "pre":
            self.flush()
            self.add_block(pre_text(node))
            return _SKIP
        if tag == "table" and not _is_layout_table(node):
            self.flush()
            for block in table_blocks(node):
                self.add_block(block)
            return _SKIP
        if tag == "br":
            self.inline.append(_LINE_BREAK)
            return _SKIP
        if tag == "img":
            alt = collapse(node.attributes.get("alt") or "")
            if alt and not _FILENAME_ALT.match(alt) and alt not in self.images:
                self.images.append(alt)
            return _SKIP
        if tag == "hr":
            self.flush()
            return _SKIP
        if tag in _LISTS:
            self.flush()
            start = node.attributes.get("start") or ""
            self.lists.append([tag == "ol", int(start) - 1 if start.isdigit() else 0])
            return _DESCEND_AND_LEAVE
        if tag == "li":
            self.flush()
            self.prefix = self._list_marker()
            return _DESCEND_AND_LEAVE
        if tag in _BLOCKS:
            self.flush()
            return _DESCEND_AND_LEAVE
        return _SKIP if tag in ("-comment", None) else _DESCEND

    def leave(self, node: LexborNode) -> None:
        tag = node.tag
        self.flush()
        if tag == "dt" and not self.lists and self.blocks:
            # A term and its definition belong together: "Term:\nDefinition".
            if not self.blocks[-1].endswith((":", "?", ".")):
                self.blocks[-1] += ":"
            self.glue_next = True
        elif tag in _LISTS and self.lists:
            self.lists.pop()
            if not self.lists:
                lines, self.list_lines = self.list_lines, []
                for block in _split_lines(lines):
                    self.add_block(block)
        elif tag == "li":
            self.prefix = ""

    def _list_marker(self) -> str:
        current = self.lists[-1] if self.lists else [False, 0]
        indent = "  " * (len(self.lists) - 1)
        if current[0]:
            current[1] += 1
            return f"{indent}{current[1]}. "
        return f"{indent}- "


def main_sections(main: LexborNode, title: str) -> list[Section]:
    return _SectionBuilder((title,) if title else ()).walk(main)


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
    meta = _meta_values(tree)
    base = _base_url(tree, page_url)
    title = _title(tree, meta)
    noindex, nofollow = robots_directives(meta, headers)
    structured = extract_structured(text, base)
    breadcrumbs = structured.breadcrumbs or dom_breadcrumbs(tree)
    forms = extract_forms(tree, base)
    actions = extract_actions(tree, base)
    links = [] if nofollow else page_links(tree, base)

    sections: list[Section] = []
    updated = structured.date_modified
    main = find_main(tree)
    if main is not None:
        updated = _updated(meta, structured.date_modified, main)
        strip_boilerplate(main)
        sections = main_sections(main, title)
        body = tree.body
        if not sections and body is not None and body.mem_id != main.mem_id:
            # An empty <main> (a hero banner, a JavaScript mount point): use the whole page.
            strip_boilerplate(body)
            sections = main_sections(body, title)
    lang = _language(tree, meta) or detect_language(" ".join(s.text for s in sections[:8])[:3000])
    return Document(
        url=page_url,
        canonical_url=_canonical(tree, base, page_url),
        title=title,
        description=collapse(meta.get("description") or meta.get("og:description") or ""),
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
    )
