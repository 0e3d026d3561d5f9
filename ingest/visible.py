"""What a visitor can see of a page: the rules that hide an element (``hidden``, aria-hidden,
display:none, visibility:hidden, zero or one-pixel fonts and boxes, off-screen positions, clipping,
transparent text, hiding utility classes, ``<template>``), the alt text of an image that is shown,
and the text of a subtree as one line. `ingest/maincontent.py` drops what these say is hidden and
keeps its text apart, so that extraction can look there for instructions aimed at an AI.
"""

from __future__ import annotations

import html as html_lib
import re

from selectolax.lexbor import LexborNode

from ingest.text import collapse_whitespace

# Inline styles that hide an element's text from sight (the style compacted: lower case, no
# spaces). Opacity 0 is left out on purpose: sites fade content in from it.
_HIDING_STYLE = re.compile(
    r"display:none|visibility:(?:hidden|collapse)|font-size:(?:0(?:\.\d+)?|1)(?:px|pt|em|rem|%)?(?:;|$|!)"
    r"|(?:left|top|right|bottom|margin-left|margin-top|text-indent):-\d{3,}"
    r"|clip:rect\(0(?:px)?[,)]|clip:rect\(0(?:px)?0|clip-path:inset\(50%|transform:scale\(0\)"
    r"|color:transparent|color:rgba\([\d.,]+,0\)"
)
_BOX_COLLAPSED = re.compile(r"(?:^|;)(?:max-)?(?:height|width):(?:0|1px)(?:px)?(?:;|$|!)")
_HIDING_CLASSES = {
    "visually-hidden", "visuallyhidden", "sr-only", "screen-reader-text", "screen-reader-only", "hidden",
    "is-hidden", "d-none", "hide", "invisible", "display-none", "u-hidden", "element-invisible", "offscreen",
}  # fmt: skip
# "hidden md:block", "d-none d-lg-block": hidden on small screens only, shown on others.
_SHOWN_AT_SOME_WIDTH = re.compile(r"^(?:[a-z0-9]+:(?:block|flex|inline|inline-block|grid|table|contents)"
                                  r"|d-(?:sm|md|lg|xl|xxl)-(?:block|flex|inline|inline-block|grid|table))$")


# The elements `is_hidden` can say yes to: a class attribute counts only when it holds one of
# the hiding classes' names (ASCII case aside). Asking `is_hidden` of every element with a class
# took ~8 ms on a documentation page with ~1,800 of them.
MAY_BE_HIDDEN = ", ".join(["[hidden]", "[aria-hidden]", "[style]", "template",
                            *(f'[class*="{name}" i]' for name in sorted(_HIDING_CLASSES))])


def hidden_by_style(style: str) -> bool:
    """Whether an inline style hides the element's text from sight."""
    compact = "".join(style.lower().split())
    if not compact:
        return False
    if _HIDING_STYLE.search(compact):
        return True
    return "overflow:hidden" in compact and _BOX_COLLAPSED.search(compact) is not None


def hidden_by_class(classes: str) -> bool:
    """Whether the element carries a utility class that hides it at every screen width."""
    names = classes.lower().split()
    return bool(_HIDING_CLASSES.intersection(names)) and not any(_SHOWN_AT_SOME_WIDTH.match(n) for n in names)


def is_hidden(node: LexborNode) -> bool:
    """Whether a visitor cannot see the element (its own attributes; ancestors are not checked).

    A ``hidden`` tab panel is real content behind a tab: it counts as shown.
    """
    attrs = node.attributes
    if node.tag == "template":
        return True
    if "hidden" in attrs and attrs.get("role") != "tabpanel":
        return True
    if (attrs.get("aria-hidden") or "").strip().lower() == "true":
        return True
    style = attrs.get("style")
    if style and hidden_by_style(style):
        return True
    classes = attrs.get("class")
    return bool(classes and hidden_by_class(classes))


def _tiny(value: str | None) -> bool:
    value = (value or "").strip().lower().removesuffix("px")
    return value.isdigit() and int(value) <= 2


def image_alt(node: LexborNode) -> str:
    """The alt text of an image a visitor sees ("" for tracking pixels and hidden images)."""
    attrs = node.attributes
    if _tiny(attrs.get("width")) or _tiny(attrs.get("height")) or is_hidden(node):
        return ""
    if (attrs.get("role") or "").lower() in ("presentation", "none"):
        return ""
    return collapse_whitespace(attrs.get("alt") or "")


#: Elements that break a line of text.
BLOCKS = {
    "address", "article", "aside", "blockquote", "body", "caption", "center", "dd", "details",
    "dialog", "div", "dl", "dt", "fieldset", "figcaption", "figure", "footer", "form", "header",
    "hgroup", "legend", "main", "p", "section", "summary", "tbody", "td", "tfoot", "th",
    "thead", "tr", "li", "ul", "ol", "menu", "table", "html",
}  # fmt: skip


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
        if tag in BLOCKS or tag == "br":
            pieces.append(" ")
        elif tag == "img":
            pieces.append(image_alt(current))
        stack.extend(reversed(list(current.iter(include_text=True))))
    return collapse_whitespace("".join(pieces))


_TAGS = re.compile(r"<[^<>]*>")  # [^<>]: linear on a run of "<" without ">" ([^>] is quadratic)


def hidden_text(node: LexborNode) -> str:
    """The text inside a hidden element, image alt text included (a template's too)."""
    if node.tag == "template":  # its content is a separate fragment: read it from the markup
        return collapse_whitespace(html_lib.unescape(_TAGS.sub(" ", node.html or "")))
    return flat_text(node)
