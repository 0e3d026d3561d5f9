"""The raw-HTML cache's copy of a page, scrubbed as the index is (`scrub_html`): the markup read
as text with the tenant's `clean` settings (ingest/clean.py `scrub`), link addresses kept, and
what character references spell caught in the parsed page."""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator

from selectolax.lexbor import LexborHTMLParser, LexborNode

from ingest.charset import decode_html
from ingest.clean import scrub, scrubs_anything
from store.config import CleanSettings


def scrub_html(html: bytes, encoding: str | None, settings: CleanSettings) -> tuple[bytes, str | None]:
    """A page's HTML as the raw cache keeps it: scrubbed with the tenant's settings like the index.

    The markup is scrubbed as text — element text, comments, scripts and JSON-LD, attribute
    values — except the addresses in URL attributes (href, src, action…): their scheme, host
    and path stay as they are; a query string, a fragment and a mailto:/tel: link are scrubbed.
    Then it is read back as a parser does, so that text spelled with character references
    ("jane&#64;example.com") is caught too. An untouched page keeps its bytes and encoding; a changed one is stored as
    UTF-8, which the extractor reads first whatever the page declares.
    """
    text = decode_html(html, encoding=encoding)
    scrubbed = _scrub_parsed(_scrub_markup(text.replace("\x00", ""), settings), settings)
    if scrubbed == text:
        return html, encoding
    return scrubbed.encode("utf-8"), "utf-8"


# An attribute value (found from its "=", which a fast search can look for), and the URL
# attributes' names that may come before it.
_ATTRIBUTE_VALUE = re.compile(r"""=[ \t\n]*(?:"([^"]*)"|'([^']*)'|([^\s>"'=]+))""")
_URL_ATTRIBUTE_NAME = re.compile(
    r"(?:^|[\s\"'/])(?:href|src|srcset|action|cite|poster|formaction|data|background|longdesc|ping|manifest"
    r"|xlink:href)[ \t\n]*$",
    re.IGNORECASE,
)


def _link_addresses(markup: str) -> Iterator[tuple[int, int]]:
    """Where the addresses of links (href, src… values up to a query string or fragment) are in
    the markup; mailto:, tel: and other contact links are not addresses to keep."""
    for match in _url_attribute_values(markup):
        group = 1 if match.start(1) >= 0 else 2 if match.start(2) >= 0 else 3
        value = match.group(group)
        if value.lower().lstrip().startswith(_CONTACT_SCHEMES):
            continue
        cut = min((i for i in (value.find("?"), value.find("#")) if i != -1), default=len(value))
        if cut:
            yield match.start(group), match.start(group) + cut


def _url_attribute_values(markup: str) -> Iterator[re.Match[str]]:
    """The attribute values (`_ATTRIBUTE_VALUE` matches) whose name is a URL attribute's."""
    for match in _ATTRIBUTE_VALUE.finditer(markup):
        start = match.start()
        # A page has thousands of attribute values (class, id, style…): the two characters
        # before the "=" rule most of them out without the name pattern.
        if start >= 2 and markup[start - 2 : start] not in _URL_NAME_ENDINGS and markup[start - 1] not in " \t\n":
            continue
        if _URL_ATTRIBUTE_NAME.search(markup, max(0, start - 16), start):
            yield match


# How each URL attribute's name ends (href, src, srcset, action, cite, poster, data,
# background, longdesc, ping, manifest), spelled every way the name pattern matches: either
# case, and "ſ" for "s" (Unicode case folding; no other letter of these has such a twin).
_URL_NAME_ENDINGS = frozenset(
    "".join(spelling)
    for ending in ("ef", "rc", "et", "on", "te", "er", "ta", "nd", "sc", "ng", "st")
    for spelling in itertools.product(*({c, c.upper(), *("ſ" if c == "s" else "")} for c in ending))
)
_CONTACT_SCHEMES = ("mailto:", "tel:", "sms:", "callto:")


def _scrub_markup(markup: str, settings: CleanSettings) -> str:
    """Scrub the markup as text, link addresses apart (see `scrub_html`)."""
    if not scrubs_anything(settings):
        return markup
    urls = list(_link_addresses(markup))
    pieces: list[str] = []
    last = 0
    for start, end in urls:
        pieces.append(markup[last:start])
        last = end
    pieces.append(markup[last:])
    # One scrub of all the text between the links, NUL-separated (no detector matches across it).
    joined = "\x00".join(pieces)
    scrubbed = scrub(joined, settings)
    parts = scrubbed.split("\x00") if scrubbed != joined else pieces
    if len(parts) != len(pieces):  # a match spanned a link after all (a private key around one)
        return scrub(markup, settings)
    out: list[str] = [parts[0]]
    for (start, end), part in zip(urls, parts[1:], strict=True):
        out.append(markup[start:end])
        out.append(part)
    return "".join(out)


_NUMERIC_REFERENCE = re.compile(r"&#(?:[xX]([0-9a-fA-F]{1,6})|([0-9]{1,7}));?")
_NAMED_REFERENCE = re.compile(r"&(?:commat|period|plus|lpar|rpar|hyphen|num|colon);", re.IGNORECASE)
_SPELLING = frozenset("@+.()-:_/" + "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")


def _spells_with_references(markup: str) -> bool:
    """Whether the markup writes a letter, digit or address character as a character reference
    (the way pages hide addresses from harvesters): only then can its parsed text differ."""
    if "&" not in markup:
        return False
    for match in _NUMERIC_REFERENCE.finditer(markup):
        hex_code, decimal = match.groups()
        code = int(hex_code, 16) if hex_code else int(decimal)
        if code < 0x110000 and chr(code) in _SPELLING:
            return True
    return _NAMED_REFERENCE.search(markup) is not None


def _scrub_parsed(markup: str, settings: CleanSettings) -> str:
    """What scrubbing the markup as text missed, found in the parsed page: a text node or an
    attribute value (character references resolved) that still holds something to scrub is
    scrubbed in place, and the page serialised again. Most pages need nothing of this."""
    if not _spells_with_references(markup):
        return markup  # the parsed text says nothing the markup does not
    tree = LexborHTMLParser(markup)
    root = tree.root
    if root is None:
        return markup
    text_nodes: list[tuple[LexborNode, str]] = []
    attribute_values: list[tuple[LexborNode, str, str]] = []
    for node in root.traverse(include_text=True):  # the tree is changed only after the walk
        if node.tag == "-text":
            if value := node.text_content or "":
                text_nodes.append((node, value))
            continue
        for name, attribute in node.attributes.items():
            if attribute:
                attribute_values.append((node, name, attribute))
    texts = _scrub_each([value for _, value in text_nodes], settings)
    attributes = _scrub_each([value for _, _, value in attribute_values], settings)
    changed = False
    for (node, name, value), cleaned in zip(attribute_values, attributes, strict=True):
        if cleaned != value:
            node.attrs[name] = cleaned
            changed = True
    for (node, value), cleaned in zip(text_nodes, texts, strict=True):
        if cleaned != value:
            node.replace_with(cleaned)
            changed = True
    if not changed:
        return markup
    return tree.html or markup


def _scrub_each(values: list[str], settings: CleanSettings) -> list[str]:
    """Each value scrubbed: one scrub of them all, NUL-separated as in `_scrub_markup` (a page
    can hold thousands of text nodes; one scrub each took ~0.4 s on a long one), or one by one
    if a match spanned a separator after all."""
    joined = "\x00".join(values)
    scrubbed = scrub(joined, settings)
    if scrubbed == joined:
        return values
    parts = scrubbed.split("\x00")
    return parts if len(parts) == len(values) else [scrub(value, settings) for value in values]

