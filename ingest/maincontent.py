"""Main-content finding: the element that holds the page's own content, the boilerplate removed
from it (navigation, sidebars, footers, hidden and cookie-banner elements, readers' comments and
related-post lists), and its text cut into heading-scoped Sections (lists, tables, code blocks,
definition lists and image alt text kept).

Indexable text is what a visitor can see (`ingest/visible.py` says what is hidden): element text,
and the alt text of an image that is shown; never hidden elements, ``<template>``, HTML comments,
or the alt text of hidden or tracking-pixel images. `strip_boilerplate` returns the text of the
hidden elements it removed, so that extraction can look there for instructions aimed at an AI.
"""

from __future__ import annotations

import html
import re

from selectolax.lexbor import LexborHTMLParser, LexborNode

from ingest.document import IMAGE_PREFIX, Section
from ingest.text import collapse_whitespace
from ingest.visible import BLOCKS, MAY_BE_HIDDEN, flat_text, hidden_text, image_alt, is_hidden

# Content-management fallbacks, tried only when a page has no <main>, role=main or <article>.
_CONTENT_FALLBACKS = (
    "#main-content, #content, #main, .main-content, .post-content, .entry-content,"
    " .article-body, div.body, div.document"
)


def has_ancestor(node: LexborNode, tags: tuple[str, ...], stop: LexborNode | None = None) -> bool:
    """Whether an ancestor of ``node`` is one of ``tags``, looking no higher than ``stop``."""
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
        "script, style, noscript, svg, math, iframe, object, embed, canvas, nav",
        "footer, button, select, textarea, input, dialog, link, meta",
        '[role="banner"], [role="navigation"]',
        '[role="contentinfo"], [role="complementary"], [role="search"], [role="dialog"]',
        '[role="alertdialog"], [role="menu"], [role="menubar"], [role="toolbar"]',
        ".headerlink, .skip-link",
        ".linenos, .lineno, .linenodiv, .copybutton, .md-clipboard",
        '#onetrust-consent-sdk, #CybotCookiebotDialog, .cc-window, [id*="cookie-banner" i]',
        '[class*="cookie-banner" i], [id*="cookie-consent" i], [class*="cookie-consent" i]',
        '[id*="cookie-notice" i], [class*="cookie-notice" i]',
        # A diagram's source ("sequenceDiagram / rect rgba(0, 255, 0, .1) / code ->> function"),
        # which a script draws as a picture: the visitor sees the picture, never this text.
        ".mermaid",
        # An API reference's collapsed "Source code in starlette/middleware/cors.py": the library's
        # implementation, not its documentation (mkdocstrings). Answers quoted its internals
        # ("if failures: failure_text = 'Disallowed CORS '…") for how a setting behaves.
        "details.mkdocstrings-source",
        # A footnote's way back to its mark ("↩"); the marks themselves: _SectionBuilder.enter.
        '[role="doc-backlink"], .footnote-backref',
    )
)


# Readers' comments and the form to add one: what visitors wrote, not what the site says (a
# recipe blog's "I baked these at 325°F" under the recipe that says 350°F), and anyone's way to
# put text on the page. The classes are the comment systems' own (WordPress, Genesis,
# Squarespace, Disqus); the ids `comments` and `respond` are common words, so an element with one
# of them goes only when it holds comment markup (a documentation section titled "Comments" does
# not).
_COMMENT_THREADS = (".comment-list, .commentlist, .comments-area, .comment-respond, .entry-comments,"
                    " .comments-list, .comment-section, .squarespace-comments, #disqus_thread")
_COMMENT_LANDMARKS = "#comments, #respond"
_COMMENT_MARKUP = ".comment, .comment-body, .comment-content, .comment-meta, [id^='comment-'], form, textarea"
# "Related recipes", "You'll also love", "Relaterade matrecept": lists of links to other pages,
# whose teasers would otherwise answer for this page. Matched by a class word that starts with
# "related" (related-posts, c-related-recipes, td_block_related_posts, Sphinx's and Furo's
# related-pages) on a block that holds such a list.
_RELATED_CLASS = re.compile(r"(?:^|[-_])related", re.IGNORECASE)
_RELATED_TAGS = frozenset(("div", "section", "aside", "ul", "ol"))
# WordPress names a post's tags and categories in its classes ("tag-related-reading"): not a list.
_TAXONOMY_CLASS = re.compile(r"^(?:tag|category|categories|post_tag|post|type|format)-", re.IGNORECASE)


def _is_related_list(node: LexborNode, main_chars: int) -> bool:
    """A block marked as related content that is a list of other pages, not the page itself: it
    holds no <h1> (the page's title sits in the page's own content) and under half of its text."""
    names = (node.attributes.get("class") or "").split()
    if node.tag not in _RELATED_TAGS or not any(
            _RELATED_CLASS.search(name) and not _TAXONOMY_CLASS.match(name) for name in names):
        return False
    return node.css_first("h1") is None and len(node.text(deep=True)) * 2 < main_chars


def _readers_and_related(main: LexborNode) -> list[LexborNode]:
    """The comment threads and related-content lists inside ``main`` (see above)."""
    found = list(main.css(_COMMENT_THREADS))
    found += [node for node in main.css(_COMMENT_LANDMARKS) if node.css_first(_COMMENT_MARKUP) is not None]
    related = main.css('[class*="related" i]')
    if related:
        main_chars = len(main.text(deep=True))
        found += [node for node in related if _is_related_list(node, main_chars)]
    return [node for node in found if node.mem_id != main.mem_id]


# Cookie banners are matched by their id or class only: a selector as loose as
# [aria-label*=cookie] also matches <article aria-label="Rocky Road Cookies">.
def strip_boilerplate(main: LexborNode) -> list[str]:
    """Remove non-content elements inside ``main``, in place; return the text of the removed
    elements a visitor could not see (see the module docstring).

    <header> and <aside> are page furniture only at page level: inside an article or section
    they hold the article's own title or notes (Sphinx renders footnotes as <aside>), so they
    stay there. A ``hidden`` tab panel is real content behind a tab, and stays too.
    """
    doomed = [node for node in main.css(_ALWAYS_DROPPED) if node.mem_id != main.mem_id]  # css() can match main
    hidden = [node for node in main.css(MAY_BE_HIDDEN) if node.mem_id != main.mem_id and is_hidden(node)]
    hidden_ids = {node.mem_id for node in hidden}
    # The outermost hidden elements, for their text (an inner one's text is in its ancestor's).
    hidden_texts = [hidden_text(node) for node in hidden
                    if not _has_ancestor_in(node, hidden_ids, stop=main)]
    doomed.extend(hidden)
    doomed.extend(_readers_and_related(main))
    for node in main.css("header, aside"):
        if node.mem_id == main.mem_id:
            continue
        sectioning = (
            ("article", "section") if node.tag == "aside" else ("article", "section", "main")
        )
        if not (main.tag in sectioning or has_ancestor(node, sectioning, stop=main)):
            doomed.append(node)
    # Children before ancestors (reverse document order), so no node is freed twice.
    doomed_ids = {node.mem_id for node in doomed}
    in_document_order = [node for node in main.traverse() if node.mem_id in doomed_ids]
    for node in reversed(in_document_order):
        node.decompose()
    return [text for text in hidden_texts if text]


def _has_ancestor_in(node: LexborNode, ids: set[int], stop: LexborNode) -> bool:
    parent = node.parent
    while parent is not None and parent.mem_id != stop.mem_id:
        if parent.mem_id in ids:
            return True
        parent = parent.parent
    return False


_HEADINGS = {"h1": 1, "h2": 2, "h3": 3, "h4": 4, "h5": 5, "h6": 6}
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


_LAYOUT_MARKERS = frozenset(("table", "h1", "h2", "h3", "h4", "h5", "h6"))


def _is_layout_table(table: LexborNode) -> bool:
    """A table used for page layout: it holds headings or other tables.

    A lazy walk that stops at the first marker: layout tables nest, and a full search of each
    one's subtree made N nested tables cost O(N²) (5,000 took 15 s; found by fuzzing)."""
    walk = table.traverse()
    next(walk, None)  # the table itself
    return any(node.tag in _LAYOUT_MARKERS for node in walk)


def _row_headed(cells: list[LexborNode]) -> bool:
    """A data row headed by its own first cell ("<th scope=row>Monday</th><td>Closed</td>"),
    not a table's header row (all `th`, or all `td` with an empty corner: Sphinx's tables)."""
    return bool(cells) and cells[0].tag == "th" and (
        cells[0].attributes.get("scope") == "row" or any(cell.tag == "td" for cell in cells[1:]))


def table_blocks(table: LexborNode) -> list[str]:
    """A data table as text rows ("cell | cell"), the header row repeated in each block. A table
    whose first row is already data, headed by its own `th` ("Monday | Closed"), gets a header of
    empty cells (" | "): read as the header, that row was never an answer."""
    rows: list[str] = []
    header = ""
    widest = 0
    headed = False
    for index, row in enumerate(table.css("tr")):
        cells = [cell for cell in row.iter() if cell.tag in ("td", "th")]
        texts = [flat_text(cell) for cell in cells]
        if not any(texts):
            continue
        line = " | ".join(texts)
        widest = max(widest, len(texts))
        if index == 0 and _row_headed(cells):
            headed = True
        is_header = index == 0 and all(cell.tag == "th" for cell in cells) and not headed
        if is_header and not header:
            header = line
        else:
            rows.append(line)
    if headed and not header and widest > 1:
        header = " | ".join([""] * widest)
    caption = table.css_first("caption")
    blocks = _split_lines(rows, header) if rows else ([header] if header else [])
    if caption is not None and flat_text(caption):
        blocks.insert(0, "Table: " + flat_text(caption))
    return blocks


#: Terminal colours written as text inside a <pre>, for a script to paint (the "termynal" blocks
#: of MkDocs sites: `$ <font color="#4E9A06">fastapi</font> run`). Only in a block that has a
#: `<font color>`, an obsolete tag no code example needs, so an HTML example keeps its markup.
_TERMINAL_COLOUR = re.compile(r"<font\s+color=", re.I)
_COLOUR_TAG = re.compile(r"</?font\b[^<>\n]*>|<(?:span|u|b)\s+style=\"[^\"<>]*\">|</?(?:span|u|b)>", re.I)


#: What a program printed in a terminal session, as Pygments marks it (Sphinx, MkDocs: "Generic.
#: Output"). Twenty lines of `pipx list` output or a server's start-up log answer no visitor's
#: question, yet use the words of many; the commands typed (class "gp" is their prompt) stay.
_PRINTED_OUTPUT = "span.go"
_OUTPUT_MARK = "\x00"


#: A code annotation's anchor (Material for MkDocs: `# (1)!`, `// (2)!`), which the page shows as a
#: numbered bubble with the note in a list below the block; as text it read "# (6)!" above a
#: Dockerfile's CMD line in an answer. A line that held only the anchor goes with it.
_ANNOTATION_ANCHOR = re.compile(r"[ \t]*(?:#|//|--|/\*|<!--)[ \t]*\(\d{1,2}\)![ \t]*(?:\*/|-->)?[ \t]*$")


def _without_annotation_anchors(text: str) -> str:
    if ")!" not in text:
        return text
    kept = []
    for line in text.split("\n"):
        bare = _ANNOTATION_ANCHOR.sub("", line)
        if bare.strip() or not line.strip():
            kept.append(bare)
    return "\n".join(kept)


def _is_footnote_mark(node: LexborNode) -> bool:
    """A footnote's mark in the text ("repository [1], you can…"): Docutils' `footnote-reference`,
    Python-Markdown's `footnote-ref` and `<sup id="fnref…">`, DPUB-ARIA's `doc-noteref`. An
    answer's own citations are "[1]": quoted, the page's mark read as one. The notes stay."""
    attributes = node.attributes
    classes = (attributes.get("class") or "").split()
    return (attributes.get("role") == "doc-noteref" or "footnote-reference" in classes or "footnote-ref" in classes
            or (node.tag == "sup" and (attributes.get("id") or "").startswith("fnref")))


def pre_text(node: LexborNode) -> str:
    if node.css_first(_PRINTED_OUTPUT) is not None:
        copy = LexborHTMLParser(node.html or "").css_first("pre")  # the page's own tree stays whole
        if copy is not None:
            for output in copy.css(_PRINTED_OUTPUT):
                output.replace_with(_OUTPUT_MARK)
            node = copy
    text = node.text() or ""
    if _OUTPUT_MARK in text:  # a line that held only output goes; the rest of a line stays
        text = "\n".join(line.replace(_OUTPUT_MARK, "") for line in text.split("\n")
                          if line.replace(_OUTPUT_MARK, "").strip() or _OUTPUT_MARK not in line)
    if _TERMINAL_COLOUR.search(text):
        text = html.unescape(_COLOUR_TAG.sub("", text))  # its text was escaped twice ("&apos;")
    lines = [line.rstrip() for line in _without_annotation_anchors(text.replace("\r", "")).split("\n")]
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
            lines = (collapse_whitespace(line) for line in "".join(self.inline).split(_LINE_BREAK))
            self.inline = []
            self.add_block("\n".join(line for line in lines if line))
        if self.images:
            images, self.images = self.images, []
            for alt in images:
                self.add_block(IMAGE_PREFIX + alt)

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
        if tag in ("a", "sup") and _is_footnote_mark(node):
            if self.inline:  # "repository [1], you can" reads "repository, you can"
                self.inline[-1] = self.inline[-1].rstrip(" \t\n")
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
            alt = image_alt(node)
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
        if tag in BLOCKS:
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
