"""URL rules of the crawl: normalisation to one canonical form, RFC 3986 dot-segment removal,
resolving hrefs against a page (``http_url``, ``LinkResolver``), and ``UrlPolicy``, which says
whether a URL is in scope (allowed hosts, allow/deny patterns, binary extensions, crawler traps).
"""

from __future__ import annotations

import datetime as dt
import re
from collections import Counter
from collections.abc import Sequence
from urllib.parse import unquote, urldefrag, urljoin, urlsplit, urlunsplit

from store.config import CrawlSettings

# ---------------------------------------------------------------------------------------------
# URL normalisation
# ---------------------------------------------------------------------------------------------

_DEFAULT_PORTS = {"http": 80, "https": 443}
_TRACKING_PARAMS = frozenset(
    {
        "gclid", "gbraid", "wbraid", "dclid", "fbclid", "msclkid", "yclid", "igshid", "twclid",
        "ttclid", "li_fat_id", "mc_cid", "mc_eid", "ref", "ref_src", "_ga", "_gl", "_hsenc",
        "_hsmi", "mkt_tok", "s_kwcid", "srsltid", "vero_id", "oly_anon_id", "oly_enc_id",
        "wickedid", "rb_clickid",
    }
)  # fmt: skip
_UNRESERVED = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
_ESCAPE = re.compile(r"%([0-9A-Fa-f]{2})")
_STRAY_PERCENT = re.compile(r"%(?![0-9A-Fa-f]{2})")
# Characters a path or query may carry unescaped (RFC 3986 pchar plus separators).
_PATH_UNSAFE = re.compile(r"[^A-Za-z0-9\-._~!$&'()*+,;=:@/%]")
_QUERY_UNSAFE = re.compile(r"[^A-Za-z0-9\-._~!$&'()*+,;=:@/%?]")
# Most URLs are plain ASCII http(s) with a simple host: split those without urlsplit's cost.
_SIMPLE_URL = re.compile(
    r"(https?)://([a-z0-9.-]+)(?::(\d{1,5}))?(/[^?#]*)?(?:\?([^#]*))?(?:#.*)?",
    re.IGNORECASE | re.DOTALL,
)
_CONTROL_WHITESPACE = re.compile(r"[\t\n\r]")
# What a browser drops from an href (WHATWG URL): C0 controls and spaces at both ends (and the
# Unicode whitespace str.strip() trims), tabs and line breaks anywhere. urlsplit trims controls
# only at the start and urljoin can hand back its input with a tab in it, so both resolvers below
# trim here first and agree on "\x00page", "page\x1f" and "http:\t//host" (found by fuzzing).
_HREF_EDGES = re.compile(r"^[\s\x00-\x20]+|[\s\x00-\x20]+$|[\t\n\r]")


def normalize_url(url: str, base: str | None = None) -> str | None:
    """The canonical form of an http(s) URL, or None for anything else (mailto:, data:, ...).

    Resolves against ``base``; lowercases scheme and host; drops default ports, user info,
    fragments and tracking parameters; sorts the remaining query parameters; collapses ``//``
    and resolves ``.``/``..`` in the path; normalises percent-escapes.

    ``/a`` and ``/a/`` stay distinct: static hosts and Sphinx's dirhtml serve them as different
    resources or redirect one to the other, and the fetcher follows that redirect, so merging
    them here would only guess. A trailing ``index.html`` is kept for the same reason.
    """
    url = _CONTROL_WHITESPACE.sub("", url).strip(" \x00\x0b\x0c")
    if base:
        try:
            url = urljoin(base, url)
        except ValueError:  # a malformed IPv6 literal in either
            return None
    split = split_url(url)
    if split is None:
        return None
    scheme, raw_host, port, path, query = split
    host = _normalize_host(raw_host)
    if not host:
        return None
    netloc = f"[{host}]" if ":" in host else host
    if port is not None and port != _DEFAULT_PORTS[scheme]:
        netloc = f"{netloc}:{port}"
    return urlunsplit((scheme, netloc, _normalize_path(path), _normalize_query(query), ""))


def split_url(url: str) -> tuple[str, str, int | None, str, str] | None:
    """(scheme, host, port, path, query) of an http(s) URL, scheme and host lowercased; None
    for other schemes and malformed URLs."""
    simple = _SIMPLE_URL.fullmatch(url)
    if simple is not None:
        scheme, host, port, path, query = simple.groups()
        if port is not None and int(port) > 65535:
            return None
        return scheme.lower(), host.lower(), int(port) if port else None, path or "", query or ""
    try:
        parts = urlsplit(url)
        port_number = parts.port
    except ValueError:  # a malformed IPv6 literal or port
        return None
    scheme = parts.scheme.lower()
    if scheme not in _DEFAULT_PORTS:
        return None
    return scheme, parts.hostname or "", port_number, parts.path, parts.query


# Never part of a host name (WHATWG's forbidden domain code points, ":" aside for IPv6): urlsplit
# hands "git\x7fhub.com" or "a b" through as a host, and the URL would not be idempotent.
_HOST_FORBIDDEN = re.compile(r"[\x00-\x20\x7f#%/<>?@\[\\\]^|]")


def _normalize_host(host: str) -> str | None:
    host = host.lower().rstrip(".")
    if not host.isascii():
        try:
            host = host.encode("idna").decode("ascii")
        except UnicodeError:
            return None
    return None if _HOST_FORBIDDEN.search(host) else host


def normalize_escapes(text: str, unsafe: re.Pattern[str]) -> str:
    """Decode escaped unreserved characters, uppercase other escapes, and percent-encode (as
    UTF-8) every character ``unsafe`` matches."""
    if "%" in text:
        text = _ESCAPE.sub(_unescape_unreserved, _STRAY_PERCENT.sub("%25", text))  # stray first: "%%62" is "%25b"
    if unsafe.search(text) is None:
        return text
    return unsafe.sub(_percent_encode, text)


def _unescape_unreserved(match: re.Match[str]) -> str:
    char = chr(int(match.group(1), 16))
    return char if char in _UNRESERVED else "%" + match.group(1).upper()


def _percent_encode(match: re.Match[str]) -> str:
    return "".join(f"%{byte:02X}" for byte in match.group(0).encode("utf-8"))


def _normalize_path(path: str) -> str:
    path = normalize_escapes(path, _PATH_UNSAFE)
    if "//" in path:
        path = re.sub(r"/{2,}", "/", path)
    if "." in path:
        path = remove_dot_segments(path)
    return path if path.startswith("/") else "/" + path


def remove_dot_segments(path: str) -> str:
    """RFC 3986 section 5.2.4, exactly: "/a/b/c/./../../g" → "/a/g", "mid/content=5/../6" →
    "mid/6". Works on whole segments ("/a/..b" keeps "..b"); a relative path stays relative.
    """
    if "/." not in path and not path.startswith("."):
        return path  # no dot segment anywhere: the common case
    segments = path.split("/")
    last = len(segments) - 1
    start = 0
    # A relative path's leading "." and ".." go with the slash after them (rules 2A and 2D).
    while start < last and segments[start] in (".", ".."):
        start += 1
    if segments[start] in (".", ".."):
        return ""
    # "/".join(output) is the output buffer; output[0] == "" stands for a leading slash.
    output = [segments[start]]
    for index in range(start + 1, last + 1):
        segment = segments[index]
        if segment == "..":
            if len(output) > 1:
                output.pop()
            elif output[0]:
                output[0] = ""  # a relative path's first segment went: what follows keeps its "/"
        elif segment != ".":
            output.append(segment)
            continue
        if index == last:
            output.append("")  # "/a/b/.." and "/a/b/." end in a slash
    return "/".join(output)


def _normalize_query(query: str) -> str:
    if not query:
        return ""
    kept = []
    for pair in query.split("&"):
        if not pair:
            continue
        name = pair.split("=", 1)[0]
        name = (unquote(name) if "%" in name else name).lower()
        if name in _TRACKING_PARAMS or name.startswith("utm_"):
            continue
        kept.append(normalize_escapes(pair, _QUERY_UNSAFE))
    return "&".join(sorted(kept))


# ---------------------------------------------------------------------------------------------
# Resolving a page's links
# ---------------------------------------------------------------------------------------------

_URL_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


def http_url(href: str, base: str, *, keep_fragment: bool = False) -> str:
    """``href`` made absolute against ``base``; "" unless it is an http(s) URL.

    The fragment is dropped unless ``keep_fragment``: a page's links name pages, while a form
    or action target may point at a place on its page.
    """
    try:
        absolute = urljoin(base, _HREF_EDGES.sub("", href))
        if not keep_fragment:
            absolute = urldefrag(absolute)[0]
        parts = urlsplit(absolute)
    except ValueError:
        return ""
    # "http:" alone, against a base of another scheme, is returned by urljoin as it is: no host.
    return absolute if parts.scheme in ("http", "https") and parts.netloc else ""


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
        href = _HREF_EDGES.sub("", href)
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


# ---------------------------------------------------------------------------------------------
# URL policy: which URLs the crawl may visit
# ---------------------------------------------------------------------------------------------

_BINARY_EXTENSIONS = frozenset(
    """pdf ps eps jpg jpeg png gif webp svg svgz ico bmp tif tiff avif heic mp3 mp4 m4a m4v
    mov avi wmv webm ogg ogv oga wav flac aac mkv zip gz tgz bz2 xz zst 7z rar tar dmg exe msi
    apk deb rpm iso bin img jar whl egg css js mjs map json xml rss atom txt csv tsv woff woff2
    ttf otf eot doc docx xls xlsx ppt pptx odt ods odp rtf epub""".split()  # noqa: SIM905
)
MAX_URL_LENGTH = 1024
MAX_PATH_SEGMENTS = 15
MAX_SEGMENT_REPEATS = 2
MAX_QUERY_PARAMS = 12
#: Calendar pages a year or more ahead, or query dates before the Unix epoch, are what an
#: endless "next month" / "previous month" link chain produces; real content rarely lives there.
TRAP_FUTURE_DAYS = 366
TRAP_EARLIEST_QUERY_YEAR = 1970
_DATE_IN_TEXT = re.compile(
    r"(?<!\d)(\d{4})[-/._]?(0[1-9]|1[0-2])(?:[-/._]?(0[1-9]|[12]\d|3[01]))?(?!\d)"
)
_DATE_IN_PATH = re.compile(r"/(\d{4})/(\d{1,2})(?:/(\d{1,2}))?(?=/|$)")
_YEAR_PARAMS = frozenset({"year", "yr", "y"})


class UrlPolicy:
    """Decides whether a URL is in scope for the site's crawl, and says why not."""

    def __init__(self, config: CrawlSettings, site: str) -> None:
        self.site = site
        parts = split_url(site)
        site_host = parts[1].rstrip(".") if parts else ""
        self.allowed_hosts = frozenset(h.lower().rstrip(".") for h in config.allowed_hosts)
        self.hosts = frozenset({site_host, *self.allowed_hosts})
        self._site_host = site_host
        # The site's own host counts only on the site's port: another port is another server
        # (docs that show "http://127.0.0.1:8000/items/5" link to the reader's machine, not to
        # the site). An explicit port that is the scheme's default stays the site (http→https).
        self._site_port = parts[2] if parts and parts[2] not in (None, _DEFAULT_PORTS[parts[0]]) else None
        self._allow = [re.compile(p) for p in config.allow]
        self._deny = [re.compile(p) for p in config.deny]

    def on_site(self, url: str) -> bool:
        """True for an http(s) URL on the site's host and port, or on an allowed host."""
        return self._split_on_site(url) is not None

    def allows(self, url: str) -> str | None:
        """None when the URL may be crawled, else the reason it may not."""
        parts = self._split_on_site(url)
        if parts is None:
            return "off_site"
        if any(pattern.search(url) for pattern in self._deny):
            return "denied_pattern"
        if self._allow and not any(pattern.search(url) for pattern in self._allow):
            return "not_allowed_pattern"
        path, query = parts
        if _extension(path) in _BINARY_EXTENSIONS:
            return "not_html_extension"
        if _looks_like_trap(url, path, query):
            return "calendar_trap"
        return None

    def _split_on_site(self, url: str) -> tuple[str, str] | None:
        """(path, query) of an on-site URL, None for anything else."""
        split = split_url(url)
        if split is None:
            return None
        scheme, host, port, path, query = split
        host = host.rstrip(".")
        if host not in self.hosts:
            return None
        if host == self._site_host and host not in self.allowed_hosts:
            effective = None if port in (None, _DEFAULT_PORTS[scheme]) else port
            if effective != self._site_port:
                return None
        return path, query


def _extension(path: str) -> str:
    last = path.rsplit("/", 1)[-1]
    return last.rsplit(".", 1)[-1].lower() if "." in last else ""


def _looks_like_trap(url: str, path: str, query: str) -> bool:
    if len(url) > MAX_URL_LENGTH:
        return True
    segments = [s for s in path.split("/") if s]
    if len(segments) > MAX_PATH_SEGMENTS:
        return True
    repeated = len(segments) > MAX_SEGMENT_REPEATS and len(set(segments)) < len(segments)
    if repeated and max(Counter(segments).values()) > MAX_SEGMENT_REPEATS:
        return True
    pairs = [p for p in query.split("&") if p]
    if len(pairs) > MAX_QUERY_PARAMS:
        return True
    if not any(char.isdigit() for char in url):
        return False  # no date anywhere
    today = dt.datetime.now(dt.UTC).date()
    for match in _DATE_IN_PATH.finditer(path):
        if _date_is_far_ahead(match.groups(), today):
            return True
    for pair in pairs:
        name, _, value = pair.partition("=")
        value = unquote(value)
        is_year = name.lower() in _YEAR_PARAMS and value.isdigit() and len(value) == 4
        if is_year and _query_date_is_trap((value, "1", None), today):
            return True
        for match in _DATE_IN_TEXT.finditer(value):
            if _query_date_is_trap(match.groups(), today):
                return True
    return False


def _to_date(groups: Sequence[str | None]) -> dt.date | None:
    year, month, day = groups
    try:
        return dt.date(int(year or 0), int(month or 1), int(day or 1))
    except ValueError:
        return None


def _date_is_far_ahead(groups: Sequence[str | None], today: dt.date) -> bool:
    date = _to_date(groups)
    return date is not None and (date - today).days > TRAP_FUTURE_DAYS


def _query_date_is_trap(groups: Sequence[str | None], today: dt.date) -> bool:
    date = _to_date(groups)
    if date is None:
        return False
    return date.year < TRAP_EARLIEST_QUERY_YEAR or (date - today).days > TRAP_FUTURE_DAYS
