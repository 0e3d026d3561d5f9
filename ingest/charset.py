"""Bytes → text for an HTML page: byte-order mark, declared charset (transport, Content-Type,
``<meta>``), and the UTF-8 / windows-1252 fallbacks browsers use. Never raises.
"""

from __future__ import annotations

import codecs
import re

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


def header_value(headers: dict[str, str] | None, name: str) -> str:
    """The value of header ``name`` (lowercase) in ``headers`` whatever their case, or ""."""
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
    except (LookupError, ValueError):  # ValueError: a NUL in the label (found by fuzzing)
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
    for bom, bom_codec in _BOMS:
        if html.startswith(bom):
            return html[len(bom) :].decode(bom_codec, "replace")
    if not html.isascii():
        try:
            return html.decode("utf-8")
        except UnicodeDecodeError:
            pass
    header_match = _HEADER_CHARSET.search(header_value(headers, "content-type"))
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
