"""Crawler network layer against a real HTTP server on 127.0.0.1 (tests/sitesrv.py): URL
normalisation and policy, robots.txt, sitemaps, the guarded polite fetcher and the frontier.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import email.utils
import gzip
import re
import socket
import time
import zlib
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ingest.crawl import netguard, urls
from ingest.crawl.fetch import MAX_REDIRECTS, Fetcher, FetchResult, is_transient
from ingest.crawl.frontier import MAX_LATER_DELAY, Frontier
from ingest.crawl.junk import JunkDetector, Verdict, url_family
from ingest.crawl.netguard import address_block_reason
from ingest.crawl.robots import fetch_robots, parse_robots
from ingest.crawl.sitemaps import load_sitemaps, parse_sitemap
from ingest.crawl.urls import UrlPolicy, normalize_url, remove_dot_segments
from ingest.document import Document, Fact, Section
from store.config import CrawlSettings
from store.errors import FetchError
from tests.busy import GilHog
from tests.sitesrv import Fault, SiteServer, serve_site

SITES = Path(__file__).resolve().parents[2] / "shared" / "fixtures" / "sites"
PYPUG, PYPUG_ORIGIN = SITES / "pypug", "http://127.0.0.1:8766"
FASTAPI, FASTAPI_ORIGIN = SITES / "fastapi", "http://127.0.0.1:8765"
UA = "frontdesk-bot/0.1 (+https://github.com/frontdesk)"
TODAY = dt.datetime.now(dt.UTC).date()


# -- helpers ----------------------------------------------------------------------------------


def settings_for(**overrides: object) -> CrawlSettings:
    """Test settings: the server is on 127.0.0.1, politeness off, short timeouts."""
    values: dict[str, object] = {
        "allow_private_network": True,
        "rate": 0.0,
        "timeout": 2.0,
        "retries": 2,
    }
    return CrawlSettings(**(values | overrides))  # type: ignore[arg-type]


def fetcher_for(server: SiteServer, config: CrawlSettings | None = None) -> Fetcher:
    return Fetcher(config or settings_for(), server.url + "/", retry_backoff=0.01)


def fetch(
    server: SiteServer, path: str, config: CrawlSettings | None = None, **kwargs: object
) -> FetchResult:
    async def run() -> FetchResult:
        async with fetcher_for(server, config) as fetcher:
            return await fetcher.get(server.url + path, **kwargs)  # type: ignore[arg-type]

    return asyncio.run(run())


def fetch_error(
    server: SiteServer, path: str, config: CrawlSettings | None = None, **kwargs: object
) -> FetchError:
    with pytest.raises(FetchError) as caught:
        fetch(server, path, config, **kwargs)
    return caught.value


def sitemap_pages(
    server: SiteServer, *paths: str, config: CrawlSettings | None = None
) -> dict[str, str | None]:
    async def run() -> dict[str, str | None]:
        async with fetcher_for(server, config) as fetcher:
            return await load_sitemaps(fetcher, [server.url + p for p in paths])

    return asyncio.run(run())


def urlset(*locs: str) -> bytes:
    entries = "".join(f"<url><loc>{loc}</loc></url>" for loc in locs)
    return f'<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{entries}</urlset>'.encode()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def pypug():
    with serve_site(PYPUG, PYPUG_ORIGIN) as server:
        yield server


@pytest.fixture
def fastapi():
    with serve_site(FASTAPI, FASTAPI_ORIGIN) as server:
        yield server


@pytest.fixture
def bare():
    """A server with no folder: tests put what it serves into ``server.files`` / ``faults``."""
    with serve_site() as server:
        yield server


# -- URL normalisation ------------------------------------------------------------------------

NORMALIZE_CASES = [
    ("HTTP://Example.COM/a", None, "http://example.com/a"),
    ("http://example.com", None, "http://example.com/"),
    ("http://example.com:80/a", None, "http://example.com/a"),
    ("https://example.com:443/", None, "https://example.com/"),
    ("http://example.com:8080/a", None, "http://example.com:8080/a"),
    ("http://example.com/a#frag", None, "http://example.com/a"),
    (
        "http://example.com/a?utm_source=x&b=2&a=1&gclid=z&fbclid=q",
        None,
        "http://example.com/a?a=1&b=2",
    ),
    ("http://example.com/a?UTM_Medium=x", None, "http://example.com/a"),
    (
        "http://example.com/a?ref=home&_ga=1&mc_cid=2&mc_eid=3&id=7",
        None,
        "http://example.com/a?id=7",
    ),
    ("http://example.com/a?b=%2f&a=&&", None, "http://example.com/a?a=&b=%2F"),
    ("http://example.com//a///b", None, "http://example.com/a/b"),
    ("http://example.com/a/./b/../c", None, "http://example.com/a/c"),
    ("http://example.com/../../a", None, "http://example.com/a"),
    ("http://example.com/a/b/..", None, "http://example.com/a/"),
    ("http://example.com/a/", None, "http://example.com/a/"),
    ("http://example.com/docs/index.html", None, "http://example.com/docs/index.html"),
    ("../b/c.html?x=1#top", "http://example.com/a/d/e.html", "http://example.com/a/b/c.html?x=1"),
    ("//other.org/x", "https://example.com/", "https://other.org/x"),
    ("?page=2", "http://example.com/list?page=1", "http://example.com/list?page=2"),
    ("#section", "http://example.com/a", "http://example.com/a"),
    ("", "http://example.com/a?b=1", "http://example.com/a?b=1"),
    ("http://user:secret@example.com/a", None, "http://example.com/a"),
    ("http://example.com/%7euser/%e2%82%ac", None, "http://example.com/~user/%E2%82%AC"),
    ("http://example.com/a b", None, "http://example.com/a%20b"),
    ("http://example.com/café", None, "http://example.com/caf%C3%A9"),
    ("http://example.com/100%", None, "http://example.com/100%25"),
    ("http://BÜCHER.example/", None, "http://xn--bcher-kva.example/"),
    ("http://[::1]:80/", None, "http://[::1]/"),
    ("http://example.com./a", None, "http://example.com/a"),
    ("  http://example.com/a\n", None, "http://example.com/a"),
    ("http://exam\tple.com/a", None, "http://example.com/a"),
    ("mailto:someone@example.com", None, None),
    ("javascript:void(0)", "http://example.com/", None),
    ("tel:+15550100", None, None),
    ("data:text/html,hello", None, None),
    ("ftp://example.com/file", None, None),
    ("http://example.com:99999/", None, None),
    ("http://[::1/", None, None),
    ("http:///no-host", None, None),
]


@pytest.mark.parametrize(("url", "base", "expected"), NORMALIZE_CASES)
def test_normalize_url(url: str, base: str | None, expected: str | None) -> None:
    assert normalize_url(url, base) == expected


_SEGMENTS = st.sampled_from(
    ["a", "B", ".", "..", "", "%41", "%7e", "a b", "é", "index.html", "%", "x%2fy"]
)
_PAIRS = st.sampled_from(["a=1", "b=", "utm_source=x", "q=a+b", "c=%2F", "ref=1", "z", "é=ü"])


@settings(max_examples=300, deadline=None)
@given(
    scheme=st.sampled_from(["http", "HTTPS"]),
    host=st.sampled_from(["example.com", "Example.COM.", "127.0.0.1", "[::1]", "bücher.de"]),
    port=st.sampled_from(["", ":80", ":443", ":8080"]),
    segments=st.lists(_SEGMENTS, max_size=6),
    pairs=st.lists(_PAIRS, max_size=4),
    trailing_slash=st.booleans(),
)
def test_normalize_url_is_idempotent(scheme, host, port, segments, pairs, trailing_slash) -> None:
    url = f"{scheme}://{host}{port}/" + "/".join(segments) + ("/" if trailing_slash else "")
    if pairs:
        url += "?" + "&".join(pairs)
    once = normalize_url(url)
    assert once is not None
    assert normalize_url(once) == once
    assert "#" not in once and "utm_" not in once


# RFC 3986 section 5.2.4's two worked examples, then the resolved paths of section 5.4's normal
# and abnormal examples (base path /b/c/d;p, merged per section 5.2.3).
RFC3986_DOT_SEGMENTS = [
    ("/a/b/c/./../../g", "/a/g"),
    ("mid/content=5/../6", "mid/6"),
    ("/b/c/./g", "/b/c/g"),
    ("/b/c/.", "/b/c/"),
    ("/b/c/./", "/b/c/"),
    ("/b/c/..", "/b/"),
    ("/b/c/../", "/b/"),
    ("/b/c/../g", "/b/g"),
    ("/b/c/../..", "/"),
    ("/b/c/../../", "/"),
    ("/b/c/../../g", "/g"),
    ("/b/c/../../../g", "/g"),
    ("/b/c/../../../../g", "/g"),
    ("/./g", "/g"),
    ("/../g", "/g"),
    ("/b/c/g.", "/b/c/g."),
    ("/b/c/.g", "/b/c/.g"),
    ("/b/c/g..", "/b/c/g.."),
    ("/b/c/..g", "/b/c/..g"),
    ("/b/c/./../g", "/b/g"),
    ("/b/c/./g/.", "/b/c/g/"),
    ("/b/c/g/./h", "/b/c/g/h"),
    ("/b/c/g/../h", "/b/c/h"),
    ("/b/c/g;x=1/./y", "/b/c/g;x=1/y"),
    ("/b/c/g;x=1/../y", "/b/c/y"),
    ("", ""),
    ("/", "/"),
    ("../a", "a"),
    (".", ""),
]


@pytest.mark.parametrize(("path", "expected"), RFC3986_DOT_SEGMENTS)
def test_remove_dot_segments_follows_rfc_3986(path: str, expected: str) -> None:
    assert remove_dot_segments(path) == expected


# -- URL policy -------------------------------------------------------------------------------

_FAR = TODAY + dt.timedelta(days=800)
_NEAR = TODAY + dt.timedelta(days=30)
POLICY_CASES = [
    ("https://example.com/docs/", None),
    ("https://cdn.example.com/page", None),
    ("https://evil.example.org/", "off_site"),
    ("https://sub.example.com/", "off_site"),
    ("ftp://example.com/", "off_site"),
    ("https://example.com/private/report", "denied_pattern"),
    ("https://example.com/files/report.PDF", "not_html_extension"),
    ("https://example.com/img/logo.jpg", "not_html_extension"),
    ("https://example.com/dl/source.zip", "not_html_extension"),
    ("https://example.com/static/site.css", "not_html_extension"),
    ("https://example.com/static/app.js?v=3", "not_html_extension"),
    ("https://example.com/page.html", None),
    ("https://example.com/v1.2/guide", None),
    ("https://example.com/" + "/".join(f"d{i}" for i in range(20)), "calendar_trap"),
    ("https://example.com/a/b/a/b/a/b/", "calendar_trap"),
    ("https://example.com/a/b/a/b/", None),
    ("https://example.com/" + "x" * 1100, "calendar_trap"),
    (f"https://example.com/calendar?date={_FAR.isoformat()}", "calendar_trap"),
    (f"https://example.com/calendar?date={_NEAR.isoformat()}", None),
    (f"https://example.com/events?month={_FAR:%Y%m}", "calendar_trap"),
    (f"https://example.com/events?year={_FAR.year + 1}", "calendar_trap"),
    ("https://example.com/archive?date=1901-05-01", "calendar_trap"),
    (f"https://example.com/events/{_FAR.year + 1}/03/01/", "calendar_trap"),
    ("https://example.com/blog/2019/03/release-notes/", None),
    ("https://example.com/search?" + "&".join(f"p{i}=1" for i in range(20)), "calendar_trap"),
    ("https://example.com/item?id=20261399", None),
]


@pytest.mark.parametrize(("url", "expected"), POLICY_CASES)
def test_url_policy(url: str, expected: str | None) -> None:
    policy = UrlPolicy(
        settings_for(allowed_hosts=["cdn.example.com"], deny=[r"/private/"]), "https://example.com/"
    )
    assert policy.allows(url) == expected


def test_another_port_on_the_site_host_is_another_server() -> None:
    """Docs that show "http://127.0.0.1:8000/items/5" link to the reader's machine: on a site
    served from 127.0.0.1 (the tests, a local preview) those are not the site's pages."""
    local = UrlPolicy(settings_for(), "http://127.0.0.1:41235/")
    assert local.allows("http://127.0.0.1:41235/docs/") is None
    assert local.allows("http://127.0.0.1:8000/items/5?q=somequery") == "off_site"
    assert local.allows("http://127.0.0.1/docs") == "off_site"
    public = UrlPolicy(settings_for(allowed_hosts=["cdn.example.com"]), "https://example.com/")
    assert public.on_site("http://example.com/a") and public.on_site("https://example.com:443/a")
    assert not public.on_site("https://example.com:8443/a")
    assert public.on_site("https://cdn.example.com:8443/a")  # an allowed host, any port


def test_url_policy_allow_patterns_restrict_the_crawl() -> None:
    policy = UrlPolicy(settings_for(allow=[r"^https://example\.com/docs/"]), "https://example.com/")
    assert policy.allows("https://example.com/docs/install") is None
    assert policy.allows("https://example.com/blog/") == "not_allowed_pattern"


# -- robots.txt -------------------------------------------------------------------------------

PRECEDENCE = """\
User-agent: *
Disallow: /private/
Allow: /private/public/
Disallow: /*.pdf$
Disallow: /tmp
Allow: /tmp$
Disallow: /page
Allow: /page
Disallow: /a*b
Disallow: /*?sort=
Disallow: /caf%c3%a9
Disallow: /%7Euser
"""
AGENTS = """\
Disallow: /before-any-group

User-agent: *
Disallow: /

User-agent: FrontDesk-Bot
Disallow: /secret/

user-agent: other-bot
User-agent: frontdesk-bot/2.0
Disallow: /also-secret
Crawl-delay: 2.5
"""
EMPTY_DISALLOW = "User-agent: *\nDisallow:\n"
# RFC 9309 section 2.2.3: a pattern names a literal "*" or "$" percent-encoded.
LITERAL_SPECIALS = """\
User-agent: *
Disallow: /path/file-with-a-%2A.html
Disallow: /path/foo-%24
Disallow: /price$5
"""
PYPUG_ROBOTS = (PYPUG / "robots.txt").read_text()

ROBOTS_CASES = [
    (PRECEDENCE, UA, "/private/x", False),
    (PRECEDENCE, UA, "/private/", False),
    (PRECEDENCE, UA, "/private/public/x", True),  # the longer Allow wins
    (PRECEDENCE, UA, "/doc.pdf", False),
    (PRECEDENCE, UA, "/dir/doc.pdf", False),
    (PRECEDENCE, UA, "/doc.pdf?download=1", True),  # $ anchors the end
    (PRECEDENCE, UA, "/doc.pdfx", True),
    (PRECEDENCE, UA, "/tmp", True),  # Allow: /tmp$ is longer than Disallow: /tmp
    (PRECEDENCE, UA, "/tmp/file", False),
    (PRECEDENCE, UA, "/tmpfile", False),
    (PRECEDENCE, UA, "/page", True),  # equal length: the least restrictive rule wins
    (PRECEDENCE, UA, "/a-to-b", False),
    (PRECEDENCE, UA, "/ab", False),
    (PRECEDENCE, UA, "/ba", True),
    (PRECEDENCE, UA, "/list?sort=asc", False),
    (PRECEDENCE, UA, "/list", True),
    (PRECEDENCE, UA, "/caf%C3%A9", False),  # percent-escapes compare case-insensitively
    (PRECEDENCE, UA, "/~user/home", False),  # %7E is an escaped unreserved "~"
    (PRECEDENCE, UA, "/robots.txt", True),
    (AGENTS, UA, "/page", True),  # our group, not "*", applies
    (AGENTS, UA, "/secret/plan", False),
    (AGENTS, UA, "/also-secret", False),  # groups naming us are merged
    (AGENTS, UA, "/before-any-group", True),
    (AGENTS, "SomeOtherBot/1.0", "/page", False),  # others fall back to "*"
    (EMPTY_DISALLOW, UA, "/anything", True),
    (LITERAL_SPECIALS, UA, "/path/file-with-a-*.html", False),
    (LITERAL_SPECIALS, UA, "/path/file-with-a-x.html", True),  # %2A is no wildcard
    (LITERAL_SPECIALS, UA, "/path/foo-$", False),
    (LITERAL_SPECIALS, UA, "/price$5", False),  # a "$" before the end is a dollar sign
    (PYPUG_ROBOTS, UA, "/_sources/index.rst.txt", False),
    (PYPUG_ROBOTS, UA, "/_sources", True),
    (PYPUG_ROBOTS, UA, "/guides/", True),
]


@pytest.mark.parametrize(("robots", "agent", "path", "allowed"), ROBOTS_CASES)
def test_robots_precedence(robots: str, agent: str, path: str, allowed: bool) -> None:
    assert parse_robots(robots, agent).can_fetch("http://example.com" + path) is allowed


def test_robots_crawl_delay_and_sitemaps() -> None:
    rules = parse_robots(
        AGENTS + "\nSitemap: https://example.com/s1.xml\nsitemap:https://example.com/s2.xml", UA
    )
    assert rules.crawl_delay == 2.5
    assert rules.sitemaps == ["https://example.com/s1.xml", "https://example.com/s2.xml"]
    assert parse_robots(PYPUG_ROBOTS, UA).sitemaps == [PYPUG_ORIGIN + "/sitemap.xml"]


def test_robots_garbage_is_parsed_leniently() -> None:
    garbage = "\ufeff\x00\xff<html><body>Not here</body></html>\nDisallow /x\n:::\nUser-agent\nCrawl-delay: soon\n"
    rules = parse_robots(garbage, UA)
    assert rules.can_fetch("http://example.com/x") and rules.crawl_delay is None


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.sampled_from("Usera-gntDiloAw:*/$ \n#?%\x00é"), max_size=300))
def test_robots_parser_never_raises(text: str) -> None:
    rules = parse_robots(text, UA)
    assert isinstance(rules.can_fetch("http://example.com/some/path?q=1"), bool)


# -- SSRF address checks ----------------------------------------------------------------------

BLOCKED = [
    "127.0.0.1", "127.8.9.1", "10.0.0.5", "172.16.3.4", "192.168.1.1", "169.254.169.254",
    "169.254.1.1", "0.0.0.0", "100.64.0.1", "224.0.0.1", "240.0.0.1", "255.255.255.255",
    "192.0.2.1", "::1", "::", "::ffff:127.0.0.1", "::ffff:10.0.0.1", "fe80::1", "fe80::1%eth0",
    "fc00::1", "ff02::1", "64:ff9b::a00:1", "2002:7f00:1::", "2001:db8::1", "not-an-address",
]  # fmt: skip
PUBLIC = ["93.184.216.34", "8.8.8.8", "2606:4700:4700::1111", "::ffff:8.8.8.8", "64:ff9b::808:808"]


@pytest.mark.parametrize("address", BLOCKED)
def test_private_addresses_are_blocked(address: str) -> None:
    assert address_block_reason(address) == "blocked_private_address"


@pytest.mark.parametrize("address", PUBLIC)
def test_public_addresses_are_allowed(address: str) -> None:
    assert address_block_reason(address) is None


@pytest.mark.parametrize(
    ("address", "expected"),
    [
        ("127.0.0.1", None),
        ("10.0.0.1", None),
        ("::1", None),
        ("169.254.169.254", "blocked_private_address"),  # cloud metadata: never
        ("::ffff:169.254.169.254", "blocked_private_address"),
        ("fd00:ec2::254", "blocked_private_address"),
    ],
)
def test_allow_private_network_still_blocks_metadata(address: str, expected: str | None) -> None:
    assert address_block_reason(address, allow_private=True) == expected


# -- frontier ---------------------------------------------------------------------------------


def test_frontier_is_breadth_first_deduplicated_and_bounded() -> None:
    policy = UrlPolicy(settings_for(), "https://example.com/")
    frontier = Frontier(max_pages=4, max_depth=2, checks=[policy.allows])
    assert frontier.add("https://example.com/deep", 2)
    assert frontier.add("https://example.com/a", 1)
    assert frontier.add("https://EXAMPLE.com/sitemap-page#top", 0)
    assert not frontier.add("https://example.com/sitemap-page?utm_source=feed", 0)  # duplicate
    assert not frontier.add("https://example.com/too-deep", 3)
    assert not frontier.add("https://other.example.org/", 1)
    assert not frontier.add("mailto:someone@example.com", 1)
    assert frontier.add("b", 1, base="https://example.com/a")
    assert not frontier.add("https://example.com/over-the-limit", 0)
    assert frontier.rejected == {"max_depth": 1, "off_site": 1, "invalid_url": 1, "max_pages": 1}
    popped = [frontier.pop() for _ in range(len(frontier))]
    assert popped == [
        ("https://example.com/sitemap-page", 0),
        ("https://example.com/a", 1),
        ("https://example.com/b", 1),
        ("https://example.com/deep", 2),
    ]
    assert frontier.pop() is None


def test_frontier_counts_each_refused_url_once() -> None:
    policy = UrlPolicy(settings_for(), "https://example.com/")
    frontier = Frontier(max_pages=10, max_depth=2, checks=[policy.allows])
    for _ in range(3):  # the same off-site link in the footer of three pages
        frontier.add("https://other.example.org/", 1)
    assert frontier.rejected == {"off_site": 1}


def test_frontier_checks_again_when_a_url_is_taken() -> None:
    refused: set[str] = set()
    frontier = Frontier(max_pages=10, max_depth=2, checks=[lambda url: "judged" if url in refused else None])
    assert frontier.add("https://example.com/a", 0) and frontier.add("https://example.com/b", 0)
    refused.add("https://example.com/a")  # a verdict reached after the URL was queued
    assert frontier.pop() == ("https://example.com/b", 0)
    assert frontier.pop() is None and frontier.rejected == {"judged": 1}


def test_frontier_defers_transient_failures_with_backoff_and_a_bound() -> None:
    frontier = Frontier(max_pages=10, max_depth=2, later_retries=2, later_delay=0.05)
    assert frontier.add("https://example.com/a", 1)
    assert frontier.pop() == ("https://example.com/a", 1)
    assert frontier.defer("https://example.com/a", 1)
    assert len(frontier) == 1 and frontier.waiting == 1
    assert frontier.pop() is None  # not due yet: 50 ms ± 20 %
    assert 0.03 < frontier.next_due_in() <= 0.06
    time.sleep(0.07)
    assert frontier.pop() == ("https://example.com/a", 1) and frontier.rounds["https://example.com/a"] == 1
    assert frontier.defer("https://example.com/a", 1)
    assert 0.1 < frontier.next_due_in() <= 0.18  # three times as long the second time
    assert not frontier.defer("https://example.com/a", 1)  # rounds used up: the page is given up
    assert not frontier.defer("https://example.com/b", 1, retry_after=MAX_LATER_DELAY + 1)
    assert frontier.defer("https://example.com/c", 1, retry_after=2.0) and frontier.next_due_in() > 0.1


def test_frontier_without_later_retries_gives_up_at_once() -> None:
    assert not Frontier(max_pages=10, max_depth=2).defer("https://example.com/a", 0)


# -- fetching ---------------------------------------------------------------------------------


def test_fetch_decompresses_gzip_and_reports_validators(pypug: SiteServer) -> None:
    result = fetch(pypug, "/")
    expected = (
        (PYPUG / "index.html").read_bytes().replace(PYPUG_ORIGIN.encode(), pypug.url.encode())
    )
    assert (result.status, result.content_type, result.encoding) == (200, "text/html", "utf-8")
    assert result.body == expected
    assert result.headers["content-encoding"] == "gzip"
    assert result.headers["etag"] and result.headers["last-modified"]
    assert result.final_url == result.url == pypug.url + "/" and result.redirects == []
    pypug.wait_idle()
    (hit,) = pypug.hits("/")
    assert hit.gzip and hit.body_bytes < len(expected) / 2


def test_fetcher_counts_requests_and_bytes(pypug: SiteServer) -> None:
    async def run() -> Fetcher:
        async with fetcher_for(pypug) as fetcher:
            await fetcher.get(pypug.url + "/")
            await fetcher.get(pypug.url + "/guides")  # a 301 to /guides/ and the page
            return fetcher

    fetcher = asyncio.run(run())
    pypug.wait_idle()
    assert fetcher.requests == 3 == len(pypug.hits())
    assert fetcher.bytes_received == sum(hit.body_bytes for hit in pypug.hits())


def test_redirects_are_followed_and_recorded(pypug: SiteServer) -> None:
    result = fetch(pypug, "/guides")
    assert result.status == 200 and result.final_url == pypug.url + "/guides/"
    assert result.redirects == [pypug.url + "/guides"]


def test_conditional_get_gives_304_with_empty_body(pypug: SiteServer) -> None:
    first = fetch(pypug, "/guides/")
    by_etag = fetch(pypug, "/guides/", etag=first.headers["etag"])
    by_date = fetch(pypug, "/guides/", last_modified=first.headers["last-modified"])
    assert (by_etag.status, by_etag.body) == (304, b"")
    assert (by_date.status, by_date.body) == (304, b"")
    pypug.wait_idle()
    assert [(h.status, h.conditional, h.body_bytes) for h in pypug.hits()][1:] == [
        (304, True, 0)
    ] * 2


def test_changed_page_is_sent_again_despite_validators(bare: SiteServer) -> None:
    bare.files["/page.html"] = b"<html><body>version 1</body></html>"
    first = fetch(bare, "/page.html")
    bare.files["/page.html"] = b"<html><body>version 2</body></html>"
    second = fetch(bare, "/page.html", etag=first.headers["etag"])
    assert second.status == 200 and b"version 2" in second.body


def test_404_and_410_are_results_not_errors(pypug: SiteServer) -> None:
    pypug.faults["/gone/"] = Fault(status=410)
    missing = fetch(pypug, "/no/such/page/")
    gone = fetch(pypug, "/gone/")
    assert (missing.status, missing.body) == (404, b"")
    assert (gone.status, gone.body) == (410, b"")


def test_other_client_errors_raise_without_retry(pypug: SiteServer) -> None:
    pypug.faults["/members/"] = Fault(status=403)
    assert fetch_error(pypug, "/members/", settings_for(retries=3)).reason == "http_403"
    pypug.wait_idle()
    assert len(pypug.hits("/members/")) == 1


def test_off_site_url_is_refused(pypug: SiteServer) -> None:
    async def run() -> None:
        async with fetcher_for(pypug) as fetcher:
            await fetcher.get("https://example.org/")

    with pytest.raises(FetchError) as caught:
        asyncio.run(run())
    assert caught.value.reason == "off_site"


def test_wrong_charset_is_reported_and_the_bytes_kept(pypug: SiteServer) -> None:
    original = (
        (PYPUG / "index.html").read_bytes().replace(PYPUG_ORIGIN.encode(), pypug.url.encode())
    )
    pypug.faults["/"] = Fault(content_type="text/html; charset=Shift_JIS")
    declared_wrong = fetch(pypug, "/")
    pypug.faults["/"] = Fault(content_type="text/html; charset=no-such-charset")
    unknown = fetch(pypug, "/")
    assert (declared_wrong.encoding, declared_wrong.body) == ("shift_jis", original)
    assert (unknown.encoding, unknown.content_type, unknown.body) == (None, "text/html", original)


def test_empty_body_is_fetched(bare: SiteServer) -> None:
    bare.faults["/empty"] = Fault(body=b"")
    result = fetch(bare, "/empty")
    assert (result.status, result.body, result.content_type) == (200, b"", "text/html")


def raw_deflate(data: bytes) -> bytes:
    compressor = zlib.compressobj(wbits=-zlib.MAX_WBITS)
    return compressor.compress(data) + compressor.flush()


PAGE = b"<html><body>" + b"hello " * 200 + b"</body></html>"


@pytest.mark.parametrize(
    ("coding", "body"),
    [
        ("gzip", gzip.compress(PAGE)),
        ("x-gzip", gzip.compress(PAGE)),
        ("deflate", zlib.compress(PAGE)),
        ("deflate", raw_deflate(PAGE)),  # what some servers send as "deflate"
        ("gzip", gzip.compress(PAGE[:100]) + gzip.compress(PAGE[100:])),  # two members
        ("identity", PAGE),
    ],
)
def test_content_encodings_are_decoded(bare: SiteServer, coding: str, body: bytes) -> None:
    bare.faults["/page"] = Fault(body=body, headers={"Content-Encoding": coding})
    assert fetch(bare, "/page").body == PAGE


def test_truncated_gzip_keeps_what_decoded(bare: SiteServer) -> None:
    bare.faults["/page"] = Fault(
        body=gzip.compress(PAGE)[:-8], headers={"Content-Encoding": "gzip"}
    )
    assert fetch(bare, "/page").body == PAGE  # only the CRC trailer was lost


def test_unknown_content_encoding_is_refused(bare: SiteServer) -> None:
    bare.faults["/page"] = Fault(body=b"\x0b\x01\x80", headers={"Content-Encoding": "br"})
    assert fetch_error(bare, "/page").reason == "unsupported_encoding"


def test_non_html_is_refused_without_reading_the_body(bare: SiteServer) -> None:
    bare.faults["/report"] = Fault(huge=20_000_000, content_type="application/pdf")

    async def run() -> Fetcher:
        async with fetcher_for(bare) as fetcher:
            with pytest.raises(FetchError) as caught:
                await fetcher.get(bare.url + "/report")
            assert caught.value.reason == "not_html"
            return fetcher

    assert asyncio.run(run()).bytes_received == 0


def test_huge_page_with_content_length_is_refused_unread(bare: SiteServer) -> None:
    bare.faults["/huge"] = Fault(huge=50_000_000)
    started = time.monotonic()
    assert fetch_error(bare, "/huge").reason == "too_large"
    assert time.monotonic() - started < 2
    assert bare.wait_idle()
    assert bare.hits("/huge")[0].body_bytes < 25_000_000  # the server could not push it all


def test_huge_chunked_page_is_cut_at_max_bytes(bare: SiteServer) -> None:
    bare.faults["/huge"] = Fault(huge=50_000_000, chunked=True)

    async def run() -> Fetcher:
        async with fetcher_for(bare, settings_for(max_bytes=1_000_000)) as fetcher:
            with pytest.raises(FetchError) as caught:
                await fetcher.get(bare.url + "/huge")
            assert caught.value.reason == "too_large"
            return fetcher

    assert asyncio.run(run()).bytes_received < 1_200_000


def test_gzip_bomb_is_refused(bare: SiteServer) -> None:
    bare.faults["/bomb"] = Fault(gzip_bomb=110_000_000)
    started = time.monotonic()
    assert fetch_error(bare, "/bomb").reason == "decompression_bomb"
    assert time.monotonic() - started < 5


def test_redirect_loop_is_detected(bare: SiteServer) -> None:
    bare.faults["/a"] = Fault(redirect="/b")
    bare.faults["/b"] = Fault(redirect="/a?utm_source=loop", status=301)
    assert fetch_error(bare, "/a").reason == "redirect_loop"


def test_too_many_redirects(bare: SiteServer) -> None:
    for hop in range(10):
        bare.faults[f"/r{hop}"] = Fault(redirect=f"/r{hop + 1}", status=307)
    assert fetch_error(bare, "/r0").reason == "too_many_redirects"
    bare.wait_idle()
    assert len(bare.hits()) == MAX_REDIRECTS + 1


def test_redirect_off_the_site_is_refused(bare: SiteServer) -> None:
    bare.faults["/login"] = Fault(redirect=f"http://localhost:{bare.port}/landing")
    assert fetch_error(bare, "/login").reason == "off_site_redirect"
    bare.faults["/ftp"] = Fault(redirect="ftp://127.0.0.1/file")
    assert fetch_error(bare, "/ftp").reason == "off_site_redirect"
    bare.faults["/js"] = Fault(redirect="javascript:alert(1)")
    assert fetch_error(bare, "/js").reason == "bad_redirect"
    bare.wait_idle()
    assert bare.hits("/landing") == []


def test_redirect_to_cloud_metadata_is_blocked_even_on_allowed_hosts(bare: SiteServer) -> None:
    bare.faults["/meta"] = Fault(redirect="http://169.254.169.254/latest/meta-data/")
    config = settings_for(allowed_hosts=["169.254.169.254"], timeout=5.0)
    started = time.monotonic()
    assert fetch_error(bare, "/meta", config).reason == "blocked_private_address"
    assert time.monotonic() - started < 1  # refused before any connection attempt


def fetch_from_site(site: str, path: str, config: CrawlSettings) -> FetchResult:
    """Fetch ``site + path`` with a fetcher for ``site`` (for sites other than server.url)."""

    async def run() -> FetchResult:
        async with Fetcher(config, site + "/", retry_backoff=0.01) as fetcher:
            return await fetcher.get(site + path)

    return asyncio.run(run())


def test_private_network_is_refused_unless_allowed(bare: SiteServer) -> None:
    bare.files["/index.html"] = b"<html></html>"
    config = settings_for(allow_private_network=False)
    for site in (
        bare.url,
        f"http://localhost:{bare.port}",
        f"http://[::ffff:127.0.0.1]:{bare.port}",
        f"http://0.0.0.0:{bare.port}",
    ):
        with pytest.raises(FetchError) as caught:
            fetch_from_site(site, "/index.html", config)
        assert caught.value.reason == "blocked_private_address", site
    assert bare.hits() == []
    assert fetch(bare, "/index.html").status == 200  # the same fetch with private allowed


def test_each_redirect_hop_passes_the_address_guard(
    bare: SiteServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A public site redirecting into the private network. The test server is on 127.0.0.1,
    so this test (only) counts exactly 127.0.0.1 as public to play the public site."""
    real_check = netguard.address_block_reason
    monkeypatch.setattr(
        netguard,
        "address_block_reason",
        lambda address, allow_private=False: (
            None if address == "127.0.0.1" else real_check(address, allow_private)
        ),
    )
    targets = [
        "http://10.0.0.1/admin",
        f"http://[::1]:{bare.port}/",
        "http://192.168.1.1/",
        f"http://0.0.0.0:{bare.port}/",
    ]
    config = settings_for(
        allow_private_network=False, allowed_hosts=["10.0.0.1", "::1", "192.168.1.1", "0.0.0.0"]
    )
    bare.files["/ok"] = b"<html>public page</html>"
    assert fetch(bare, "/ok", config).status == 200
    for index, target in enumerate(targets):
        bare.faults[f"/hop{index}"] = Fault(redirect=target)
        assert fetch_error(bare, f"/hop{index}", config).reason == "blocked_private_address", target


def test_fetcher_connects_to_the_address_it_vetted(
    bare: SiteServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """DNS rebinding: the guard's own answer is the one connected to. ``rebind.test`` does not
    resolve on this machine, so a 200 proves the connection went to the vetted address, while
    the request still names the host (the Host header; TLS would send it as SNI)."""
    answers = {"rebind.test": ["127.0.0.1"]}

    async def resolve(host: str, port: int) -> list[str]:
        return answers[host]

    monkeypatch.setattr(netguard, "_resolve", resolve)
    bare.files["/"] = b"<html>hello</html>"
    site = f"http://rebind.test:{bare.port}"
    assert fetch_from_site(site, "/", settings_for()).body == b"<html>hello</html>"
    bare.wait_idle()
    assert [hit.host for hit in bare.hits()] == [f"rebind.test:{bare.port}"]
    answers["rebind.test"] = ["93.184.216.34", "127.0.0.1"]  # one public answer, one private
    with pytest.raises(FetchError) as caught:
        fetch_from_site(site, "/", settings_for(allow_private_network=False))
    assert caught.value.reason == "blocked_private_address"


def test_a_transient_dns_failure_is_retried_then_raised_as_a_plain_fetch_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The resolver's "try again later" is retried; the package's retry signal never leaves it."""
    asked: list[str] = []

    async def resolve(host: str, port: int) -> list[str]:
        asked.append(host)
        raise netguard._TransientFetchError(f"cannot resolve {host}", reason="dns_error")

    monkeypatch.setattr(netguard, "_resolve", resolve)
    with pytest.raises(FetchError) as caught:
        fetch_from_site("http://flaky.test", "/", settings_for(retries=2))
    assert type(caught.value) is FetchError and caught.value.reason == "dns_error"
    assert asked == ["flaky.test", "flaky.test"]


def test_slow_loris_is_cut_off_by_the_deadline(pypug: SiteServer) -> None:
    pypug.faults["/"] = Fault(dribble=0.25)  # a byte every quarter second: reads never time out
    started = time.monotonic()
    assert fetch_error(pypug, "/", settings_for(timeout=1.0, retries=1)).reason == "timeout"
    assert time.monotonic() - started < 2


def fetch_while_the_loop_is_blocked(server: SiteServer, path: str, config: CrawlSettings,
                                     block: float) -> tuple[FetchResult | FetchError, float]:
    """Fetch ``path`` while a blocking call holds the event loop for ``block`` seconds just after
    the request went out; returns the outcome and the wall time it took."""

    async def run() -> FetchResult | FetchError:
        async with fetcher_for(server, config) as fetcher:
            asyncio.get_running_loop().call_later(0.05, time.sleep, block)
            try:
                return await fetcher.get(server.url + path)
            except FetchError as exc:
                return exc

    started = time.monotonic()
    outcome = asyncio.run(run())
    return outcome, time.monotonic() - started


def test_time_the_event_loop_was_blocked_does_not_count_against_the_deadline(bare: SiteServer) -> None:
    bare.files["/page.html"] = b"<html><body>answered in 0.2 s</body></html>"
    bare.faults["/page.html"] = Fault(delay=0.2)
    outcome, took = fetch_while_the_loop_is_blocked(bare, "/page.html", settings_for(timeout=0.5, retries=1), 1.5)
    assert isinstance(outcome, FetchResult) and outcome.status == 200, outcome
    assert took >= 1.5 and len(bare.hits("/page.html")) == 1  # one attempt, no retry needed


def test_a_slow_server_still_times_out_beside_a_blocked_loop(bare: SiteServer) -> None:
    bare.files["/slow.html"] = b"<html></html>"
    bare.faults["/slow.html"] = Fault(delay=3.0)
    outcome, took = fetch_while_the_loop_is_blocked(bare, "/slow.html", settings_for(timeout=0.5, retries=1), 0.5)
    assert isinstance(outcome, FetchError) and outcome.reason == "timeout" and is_transient(outcome)
    assert took < 1.6  # 0.5 s of the loop's own stall given back, then the 0.5 s deadline


def test_a_thread_holding_the_gil_does_not_make_pages_time_out(pypug: SiteServer) -> None:
    # A deadline shorter than one stretch of the hog, with room for the server (it shares the GIL)
    # and a machine busy with more than this test.
    config = settings_for(timeout=0.5, retries=1)

    async def run() -> tuple[list[FetchResult | BaseException], float]:
        async with fetcher_for(pypug, config) as fetcher:
            results: list[FetchResult | BaseException] = []
            # Rounds until the hog has shut the loop out several times: on a fast machine one
            # round of five pages could be done before its first stretch ended.
            for _ in range(40):
                results += await asyncio.gather(*(fetcher.get(pypug.url + p) for p in PAGES), return_exceptions=True)
                if hog.stretches >= 3:
                    break
            return results, fetcher.stalls.stalled()

    with GilHog(stretch=1.0) as hog:
        results, stalled = asyncio.run(run())
    assert hog.stretches >= 2 and stalled > 1.0  # the loop really was shut out, more than once
    assert all(isinstance(r, FetchResult) and r.status == 200 for r in results), results


def test_transient_failures_are_marked_transient(pypug: SiteServer) -> None:
    pypug.faults["/guides/"] = Fault(status=503, retry_after="1")
    error = fetch_error(pypug, "/guides/", settings_for(retries=1))
    assert is_transient(error) and error.details["retry_after"] == 1.0
    pypug.faults["/glossary/"] = Fault(status=403)
    assert not is_transient(fetch_error(pypug, "/glossary/", settings_for(retries=1)))


def test_slow_first_answer_times_out_then_retry_succeeds(pypug: SiteServer) -> None:
    pypug.faults["/"] = Fault(delay=1.5, times=1)
    result = fetch(pypug, "/", settings_for(timeout=0.5, retries=2))
    assert result.status == 200


def test_server_errors_are_retried_until_success(pypug: SiteServer) -> None:
    pypug.faults["/guides/"] = Fault(status=500, times=2)
    result = fetch(pypug, "/guides/", settings_for(retries=3))
    assert result.status == 200
    pypug.wait_idle()
    assert [hit.status for hit in pypug.hits("/guides/")] == [500, 500, 200]


def test_persistent_server_error_gives_up_after_the_retries(pypug: SiteServer) -> None:
    pypug.faults["/guides/"] = Fault(status=503)
    assert fetch_error(pypug, "/guides/", settings_for(retries=3)).reason == "http_503"
    pypug.wait_idle()
    assert len(pypug.hits("/guides/")) == 3


def test_429_retry_after_is_honoured(pypug: SiteServer) -> None:
    pypug.faults["/guides/"] = Fault(status=429, retry_after="1", times=1)
    assert fetch(pypug, "/guides/").status == 200
    pypug.wait_idle()
    first, second = pypug.hits("/guides/")
    assert (first.status, second.status) == (429, 200)
    assert second.started - first.started >= 0.95


def test_503_retry_after_as_http_date_is_honoured(pypug: SiteServer) -> None:
    when = email.utils.format_datetime(
        dt.datetime.now(dt.UTC) + dt.timedelta(seconds=2), usegmt=True
    )
    pypug.faults["/guides/"] = Fault(status=503, retry_after=when, times=1)
    assert fetch(pypug, "/guides/").status == 200
    pypug.wait_idle()
    first, second = pypug.hits("/guides/")
    assert second.started - first.started >= 0.5  # the date has one-second resolution


def test_429_retry_after_beyond_the_cap_gives_up_at_once(pypug: SiteServer) -> None:
    pypug.faults["/guides/"] = Fault(status=429, retry_after="3600")
    started = time.monotonic()
    error = fetch_error(pypug, "/guides/", settings_for(retries=5))
    assert error.reason == "http_429" and time.monotonic() - started < 1


def test_connection_refused_and_unknown_host() -> None:
    closed_port = f"http://127.0.0.1:{free_port()}"
    for site, reason in (
        (closed_port, "connection_error"),
        ("http://no-such-host.invalid", "dns_error"),
    ):
        with pytest.raises(FetchError) as caught:
            fetch_from_site(site, "/", settings_for(retries=2))
        assert caught.value.reason == reason


# -- politeness -------------------------------------------------------------------------------


def gather_pages(server: SiteServer, config: CrawlSettings, paths: list[str]) -> float:
    async def run() -> float:
        async with fetcher_for(server, config) as fetcher:
            started = time.monotonic()
            await asyncio.gather(*(fetcher.get(server.url + path) for path in paths))
            return time.monotonic() - started

    elapsed = asyncio.run(run())
    server.wait_idle()
    return elapsed


PAGES = ["/guides/", "/tutorials/", "/discussions/", "/overview/", "/glossary/"]


def test_rate_spaces_requests_to_one_host(pypug: SiteServer) -> None:
    elapsed = gather_pages(pypug, settings_for(rate=2.0), PAGES)
    starts = sorted(hit.started for hit in pypug.hits())
    gaps = [b - a for a, b in zip(starts, starts[1:], strict=False)]
    assert elapsed >= (len(PAGES) - 1) / 2 - 0.02
    # Server-side times carry thread-scheduling jitter: the mean is exact, each gap roughly.
    assert sum(gaps) / len(gaps) >= 0.5 - 0.02 and min(gaps) >= 0.5 - 0.1
    assert pypug.max_in_flight == 1


def test_one_request_in_flight_per_host_even_without_a_rate(pypug: SiteServer) -> None:
    for path in PAGES[:4]:
        pypug.faults[path] = Fault(delay=0.2)
    gather_pages(pypug, settings_for(rate=0.0), PAGES[:4])
    hits = sorted(pypug.hits(), key=lambda hit: hit.started)
    assert pypug.max_in_flight == 1
    assert all(
        later.started >= earlier.finished for earlier, later in zip(hits, hits[1:], strict=False)
    )


def test_robots_crawl_delay_overrides_a_faster_rate(bare: SiteServer) -> None:
    bare.files["/robots.txt"] = b"User-agent: *\nCrawl-delay: 0.6\n"
    for name in ("a", "b", "c"):
        bare.files[f"/{name}.html"] = b"<html></html>"

    async def run() -> None:
        async with fetcher_for(bare, settings_for(rate=100.0)) as fetcher:
            await fetch_robots(fetcher, bare.url)
            await asyncio.gather(*(fetcher.get(f"{bare.url}/{name}.html") for name in "abc"))

    asyncio.run(run())
    bare.wait_idle()
    starts = [hit.started for hit in bare.hits() if hit.path != "/robots.txt"]
    gaps = [b - a for a, b in zip(starts, starts[1:], strict=False)]
    assert sum(gaps) / len(gaps) >= 0.6 - 0.02 and min(gaps) >= 0.6 - 0.1


def test_crawl_delay_spaces_the_request_right_after_robots_txt(bare: SiteServer) -> None:
    """robots.txt says Crawl-delay: 1 and the rate allows 2/s: the sitemap request that follows
    robots.txt waits the full second (the wait is worked out once robots.txt is read)."""
    bare.files["/robots.txt"] = b"User-agent: *\nCrawl-delay: 1\n"
    bare.files["/sitemap.xml"] = urlset(bare.url + "/a.html")

    async def run() -> None:
        async with fetcher_for(bare, settings_for(rate=2.0)) as fetcher:
            await fetch_robots(fetcher, bare.url)
            await load_sitemaps(fetcher, [bare.url + "/sitemap.xml"])
            await fetcher.get(bare.url + "/missing.html")

    asyncio.run(run())
    bare.wait_idle()
    starts = {hit.path: hit.started for hit in bare.hits()}
    # Server-side start times carry up to ~0.1 s of thread-scheduling jitter; before the fix the
    # gap was the rate's 0.5 s.
    assert starts["/sitemap.xml"] - starts["/robots.txt"] >= 1.0 - 0.1
    assert starts["/missing.html"] - starts["/sitemap.xml"] >= 1.0 - 0.1


# -- robots over HTTP -------------------------------------------------------------------------


def robots_for(server: SiteServer, config: CrawlSettings | None = None, then: str | None = None):
    """Fetch robots.txt, then optionally ``then``; returns (rules, FetchResult | FetchError)."""

    async def run():
        async with fetcher_for(server, config) as fetcher:
            rules = await fetch_robots(fetcher, server.url + "/")
            if then is None:
                return rules, None
            try:
                return rules, await fetcher.get(server.url + then)
            except FetchError as exc:
                return rules, exc

    return asyncio.run(run())


def test_pypug_robots_are_enforced_by_the_fetcher(pypug: SiteServer) -> None:
    pypug.faults["/old-sources"] = Fault(redirect="/_sources/index.rst.txt")
    rules, outcome = robots_for(pypug, then="/_sources/index.rst.txt")
    assert rules.sitemaps == [pypug.url + "/sitemap.xml"]
    assert isinstance(outcome, FetchError) and outcome.reason == "robots_disallowed"
    _, redirected = robots_for(pypug, then="/old-sources")
    assert isinstance(redirected, FetchError) and redirected.reason == "robots_disallowed"
    pypug.wait_idle()
    assert not [hit for hit in pypug.hits() if hit.path.startswith("/_sources/")]


@pytest.mark.parametrize("status", [404, 410, 403])
def test_robots_client_errors_allow_everything(pypug: SiteServer, status: int) -> None:
    pypug.faults["/robots.txt"] = Fault(status=status)
    rules, outcome = robots_for(pypug, then="/_sources/index.rst.txt")
    assert rules.can_fetch(pypug.url + "/_sources/index.rst.txt") and rules.sitemaps == []
    assert isinstance(outcome, FetchResult)


def test_robots_server_error_disallows_the_crawl(pypug: SiteServer) -> None:
    pypug.faults["/robots.txt"] = Fault(status=500)
    rules, outcome = robots_for(pypug, then="/guides/")
    assert not rules.can_fetch(pypug.url + "/guides/")
    assert isinstance(outcome, FetchError) and outcome.reason == "robots_unavailable"
    pypug.wait_idle()
    assert pypug.statuses() == {500: 2}  # robots.txt tried twice (retries=2), no page fetched


def test_robots_can_be_ignored_by_config(bare: SiteServer) -> None:
    bare.files["/robots.txt"] = (
        f"User-agent: *\nDisallow: /\nSitemap: {bare.url}/sitemap.xml\n".encode()
    )
    bare.files["/page.html"] = b"<html></html>"
    obeyed, refused = robots_for(bare, then="/page.html")
    ignored, fetched = robots_for(bare, settings_for(respect_robots=False), then="/page.html")
    assert isinstance(refused, FetchError) and refused.reason == "robots_disallowed"
    assert isinstance(fetched, FetchResult) and fetched.status == 200
    assert ignored.sitemaps == obeyed.sitemaps == [bare.url + "/sitemap.xml"]  # still used


def test_robots_server_error_is_ignored_by_config(pypug: SiteServer) -> None:
    pypug.faults["/robots.txt"] = Fault(status=500)
    rules, outcome = robots_for(pypug, settings_for(respect_robots=False), then="/guides/")
    assert rules.can_fetch(pypug.url + "/guides/")
    assert isinstance(outcome, FetchResult) and outcome.status == 200


def test_robots_garbage_over_http_allows_everything(bare: SiteServer) -> None:
    bare.files["/robots.txt"] = bytes(range(256)) * 4 + b"<html><body>Oops</body></html>"
    bare.files["/page.html"] = b"<html></html>"
    rules, outcome = robots_for(bare, then="/page.html")
    assert rules.can_fetch(bare.url + "/anything") and isinstance(outcome, FetchResult)


# -- sitemaps ---------------------------------------------------------------------------------


def test_pypug_sitemap_pages_and_lastmods(pypug: SiteServer) -> None:
    pages = sitemap_pages(pypug, "/sitemap.xml")
    assert len(pages) == 93 and all(url.startswith(pypug.url + "/") for url in pages)
    assert sum(lastmod is not None for lastmod in pages.values()) == 91
    assert pages[pypug.url + "/contribute/"] == "2025-08-21T17:55:40Z"


def test_fastapi_sitemap_index_found_through_robots(fastapi: SiteServer) -> None:
    async def run() -> dict[str, str | None]:
        async with fetcher_for(fastapi) as fetcher:
            rules = await fetch_robots(fetcher, fastapi.url)
            return await load_sitemaps(fetcher, rules.sitemaps)

    pages = asyncio.run(run())
    # three language sitemaps of 155 pages; robots.txt drops the root /_llm-test/ page
    assert len(pages) == 3 * 155 - 1
    assert fastapi.url + "/_llm-test/" not in pages and fastapi.url + "/es/_llm-test/" in pages
    assert {url.split("/")[3] for url in pages} >= {"es", "de", "tutorial"}
    assert set(pages.values()) == {None}


def test_gzip_sitemaps_nested_in_an_index(bare: SiteServer) -> None:
    u = bare.url
    bare.files["/index.xml"] = (
        '<?xml version="1.0"?><sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
        f"<sitemap><loc>{u}/a.xml.gz</loc></sitemap><sitemap><loc>{u}/nested.xml</loc></sitemap>"
        f"<sitemap><loc>{u}/missing.xml</loc></sitemap></sitemapindex>"
    ).encode()
    bare.files["/nested.xml"] = (
        f"<sitemapindex><sitemap><loc>{u}/b.xml</loc></sitemap><sitemap><loc>{u}/index.xml</loc></sitemap></sitemapindex>"
    ).encode()
    bare.files["/a.xml.gz"] = gzip.compress(urlset(f"{u}/a1", f"{u}/a2"))
    bare.files["/b.xml"] = urlset(f"{u}/b1")
    assert set(sitemap_pages(bare, "/index.xml")) == {f"{u}/a1", f"{u}/a2", f"{u}/b1"}
    bare.wait_idle()
    assert bare.statuses("/index.xml") == {200: 1}  # the cycle back to the index is not followed


def test_malformed_sitemap_yields_what_parsed(bare: SiteServer) -> None:
    u = bare.url
    bare.files["/broken.xml"] = (
        '<?xml version="1.0"?>\n<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
        f"<url><loc>{u}/a</loc><lastmod>2024-01-02</lastmod></url>"
        f"<url><loc>{u}/b?y=2&x=1</loc><lastmod>last tuesday</lastmod></url>"
        f"<url><loc><![CDATA[{u}/c]]></loc></url>"
        f"<sm:url><sm:loc>{u}/d&amp;more</sm:loc></sm:url>"
        f"<url><loc>{u}/e</loc><image:image><image:loc>{u}/e.png</image:loc></image:image>"
        f"<url><loc>{u}/f"
    ).encode()
    bare.files["/not-xml.xml"] = b"\x00\x01 this is not a sitemap <<<>>>"
    pages = sitemap_pages(bare, "/broken.xml", "/not-xml.xml")
    assert pages == {
        f"{u}/a": "2024-01-02",
        f"{u}/b?x=1&y=2": None,
        f"{u}/c": None,
        f"{u}/d&more": None,
        f"{u}/e": None,
    }


def test_text_sitemap(bare: SiteServer) -> None:
    bare.files["/sitemap.txt"] = f"{bare.url}/one\n\n{bare.url}/two\nnot a url\n".encode()
    assert set(sitemap_pages(bare, "/sitemap.txt")) == {f"{bare.url}/one", f"{bare.url}/two"}


def test_xml_bombs_are_refused(bare: SiteServer) -> None:
    laughs = "".join(f'<!ENTITY lol{i} "{f"&lol{i - 1};" * 10}">' for i in range(1, 10))
    bare.files["/laughs.xml"] = (
        f'<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol0 "lol">{laughs}]>'
        f"<urlset><url><loc>{bare.url}/&lol9;</loc></url><url><loc>{bare.url}/inside-bomb</loc></url></urlset>"
    ).encode()
    bare.files["/xxe.xml"] = (
        '<?xml version="1.0"?><!DOCTYPE u [<!ENTITY xxe SYSTEM "file:///etc/passwd">]>'
        f"<urlset><url><loc>{bare.url}/&xxe;</loc></url></urlset>"
    ).encode()
    bare.files["/good.xml"] = urlset(f"{bare.url}/fine")
    started = time.monotonic()
    pages = sitemap_pages(bare, "/laughs.xml", "/xxe.xml", "/good.xml")
    assert pages == {f"{bare.url}/fine": None}
    assert time.monotonic() - started < 2


def test_gzip_bomb_sitemap_is_skipped(bare: SiteServer) -> None:
    bare.files["/bomb.xml.gz"] = gzip.compress(b"<urlset>" + b" " * 60_000_000 + b"</urlset>", 1)
    bare.files["/good.xml"] = urlset(f"{bare.url}/fine")
    assert sitemap_pages(bare, "/bomb.xml.gz", "/good.xml") == {f"{bare.url}/fine": None}


def test_sitemap_with_50k_urls_is_fast(bare: SiteServer) -> None:
    u = bare.url
    locs = [f"{u}/docs/page-{i}/?utm_source=sitemap" for i in range(50_000)]
    bare.files["/big.xml"] = urlset(*locs)
    started = time.monotonic()
    pages = sitemap_pages(bare, "/big.xml")
    elapsed = time.monotonic() - started
    assert len(pages) == 50_000 and f"{u}/docs/page-49999/" in pages
    assert elapsed < 5, elapsed


def test_off_site_sitemap_entries_are_dropped(bare: SiteServer) -> None:
    u = bare.url
    bare.files["/index.xml"] = (
        f"<sitemapindex><sitemap><loc>{u}/mixed.xml</loc></sitemap>"
        "<sitemap><loc>http://evil.example.org/sitemap.xml</loc></sitemap></sitemapindex>"
    ).encode()
    bare.files["/mixed.xml"] = urlset(
        f"{u}/kept", "http://evil.example.org/page", f"http://localhost:{bare.port}/other-host",
        f"{u}/manual.pdf", "mailto:someone@example.com",
    )  # fmt: skip
    assert sitemap_pages(bare, "/index.xml") == {f"{u}/kept": None}


def test_parse_sitemap_distinguishes_indexes_from_urlsets() -> None:
    children, entries = parse_sitemap(
        b"<sitemapindex><sitemap><loc>https://e.com/s.xml</loc><lastmod>2024-01-01</lastmod></sitemap></sitemapindex>"
    )
    assert (children, entries) == (["https://e.com/s.xml"], [])


# -- crawling with the pieces together --------------------------------------------------------

_HREF = re.compile(rb"""href=["']([^"'#]+)""")


def crawl_site(
    server: SiteServer,
    config: CrawlSettings,
    seeds: list[str],
    validators: dict[str, str] | None = None,
) -> tuple[dict[str, FetchResult], Frontier]:
    """What the pipeline does, minimally: robots, sitemaps, then breadth-first links."""

    async def run() -> tuple[dict[str, FetchResult], Frontier]:
        results: dict[str, FetchResult] = {}
        async with fetcher_for(server, config) as fetcher:
            rules = await fetch_robots(fetcher, server.url)
            frontier = Frontier.for_fetcher(fetcher)
            frontier.extend(await load_sitemaps(fetcher, rules.sitemaps))
            frontier.extend(server.url + seed for seed in seeds)
            while (item := frontier.pop()) is not None:
                url, depth = item
                try:
                    result = await fetcher.get(url, etag=(validators or {}).get(url))
                except FetchError:
                    continue
                results[url] = result
                for link in _HREF.findall(result.body):
                    frontier.add(link.decode(), depth + 1, base=result.final_url)
            return results, frontier

    return asyncio.run(run())


def test_second_crawl_of_unchanged_site_transfers_no_bodies(pypug: SiteServer) -> None:
    config = settings_for(max_depth=1)
    first, frontier = crawl_site(pypug, config, ["/"])
    assert len(first) >= 93 and all(result.status == 200 for result in first.values())
    assert frontier.rejected["not_html_extension"] > 0  # stylesheets, images, sources
    pypug.wait_idle()
    assert not [hit for hit in pypug.hits() if hit.path.startswith("/_sources/")]
    pypug.reset()
    validators = {url: result.headers["etag"] for url, result in first.items()}
    second, _ = crawl_site(pypug, config, ["/"], validators)
    assert {result.status for result in second.values()} == {304}
    pypug.wait_idle()
    pages = [hit for hit in pypug.hits() if hit.path not in ("/robots.txt", "/sitemap.xml")]
    assert len(pages) == len(first) and all(
        hit.status == 304 and hit.body_bytes == 0 for hit in pages
    )


def calendar_page(target: str) -> bytes:
    """An events calendar that links to the next day, month and year, forever."""
    day = dt.date.fromisoformat(parse_qs(urlsplit(target).query)["date"][0])
    links = [
        day + dt.timedelta(days=1),
        day + dt.timedelta(days=31),
        day + dt.timedelta(days=366),
    ]
    anchors = "".join(f'<a href="/calendar?date={d.isoformat()}">{d}</a>' for d in links)
    return f"<html><body><h1>{day}</h1>{anchors}</body></html>".encode()


def test_calendar_trap_is_stopped(bare: SiteServer) -> None:
    bare.faults["/calendar"] = Fault(body=calendar_page)
    start = TODAY.replace(day=1)
    results, frontier = crawl_site(
        bare, settings_for(max_depth=6, max_pages=5000), [f"/calendar?date={start}"]
    )
    dates = [dt.date.fromisoformat(parse_qs(urlsplit(url).query)["date"][0]) for url in results]
    assert frontier.rejected["calendar_trap"] > 0 and frontier.rejected["max_depth"] > 0
    assert max(dates) <= TODAY + dt.timedelta(days=urls.TRAP_FUTURE_DAYS)
    assert len(results) < 200


# -- junk pages: URL families and near-duplicate content --------------------------------------


@pytest.mark.parametrize(
    ("url", "key", "kind"),
    [
        ("https://club.example/events/2026/07/", "club.example/events/{date}/{date}/", "calendar"),
        ("https://club.example/events/2026-07-14", "club.example/events/{date}", "calendar"),
        ("https://club.example/calendar?month=2026-07", "club.example/calendar?", "calendar"),
        ("https://club.example/calendar?view=month&month=7", "club.example/calendar?", "calendar"),
        ("https://club.example/shop/?color=red&size=m", "club.example/shop/?", "query"),
        ("https://club.example/guide/?page=3", "club.example/guide/?", "query"),
        ("https://club.example/product/1234", "club.example/product/{n}", "template"),
        ("https://club.example/post-17/comments", "club.example/post-{n}/comments", "template"),
        ("https://club.example:8080/a/3f2a9c1e-77b0-4c1d-9f00-1b2c3d4e5f60/", "club.example:8080/a/{id}/", "template"),
    ],
)
def test_url_families(url: str, key: str, kind: str) -> None:
    family = url_family(url)
    assert family is not None and (family.key, family.kind) == (key, kind)


def test_one_of_a_kind_urls_have_no_family() -> None:
    assert url_family("https://club.example/rides/roles/") is None
    assert url_family("https://club.example/guide/?page=2").parent == "https://club.example/guide/"


def page(url: str, *blocks: str, facts: tuple[str, ...] = ()) -> Document:
    return Document(url=url, canonical_url=url, title="Riverside Wheelers",
                    sections=[Section(heading_path=("Main",), text="\n\n".join(blocks))],
                    facts=[Fact(type="Product", text=text) for text in facts])


MONTH_TEXT = ("Club rides, workshops and socials for {m} {y}. Group rides leave the shop car park and "
              "every ride has a leader and a sweep. Saturday {d} {m} {y}: club ride at 9 am. "
              "No other events have been announced for {m} {y} yet, check back before you set out.")


def calendar_month(year: int, month: int) -> Document:
    name = dt.date(year, month, 1).strftime("%B")
    return page(f"https://club.example/events/{year}/{month:02}/", MONTH_TEXT.format(m=name, y=year, d=month + 3))


def test_a_calendar_chain_is_judged_junk_after_a_few_months() -> None:
    detector = JunkDetector()
    months = [(2026, 6), (2026, 5), (2026, 7), (2026, 4), (2026, 8), (2026, 3)]
    verdicts = [detector.observe(doc.url, depth, doc)
                for depth, doc in enumerate(calendar_month(y, m) for y, m in months)]
    # Months 2-3 are near-duplicates, but two is not yet a verdict; the fourth month makes it.
    assert all(v.exclude is None and not v.retract for v in verdicts[:3])
    retracted = {record.url for record in verdicts[3].retract}
    assert verdicts[3].exclude is not None and verdicts[3].exclude.reason == "junk_calendar"
    # The earlier members go too, the first month included: it is generated like the rest.
    assert retracted == {calendar_month(y, m).url for y, m in months[:3]}
    assert all(v.exclude is not None for v in verdicts[4:])
    assert detector.refusal("https://club.example/events/2026/09/") == "junk_calendar"
    assert detector.refusal("https://club.example/events/") is None  # the events page is its own
    record = detector.records()[-1]
    assert (record.fetched, record.family) == (False, "club.example/events/{date}/{date}/")
    assert "growing over" in verdicts[3].exclude.detail
    assert detector.counts() == {"junk_calendar": 7}


GUIDE_PARTS = [
    "A clean chain shifts better and lasts longer. Wipe it after every wet ride and scrub it with "
    "degreaser every few weeks, then oil each roller and wipe off the excess.",
    "Check tyre pressure before every ride with a track pump. Road tyres run between seventy and "
    "ninety psi, gravel tyres lower; too low and the tube pinches against the rim.",
    "To fix a puncture, remove the wheel, lever one side of the tyre off, find the thorn by feeling "
    "inside the tyre, and fit a spare tube with a little air in it.",
    "Brake pads should meet the rim squarely a millimetre below the tyre. Loosen the pad bolt, align "
    "the pad and tighten it while squeezing the lever.",
    "When the chain hesitates between sprockets, turn the barrel adjuster a quarter turn at a time "
    "until it climbs cleanly; leave the limit screws alone once set.",
]


def test_paginated_docs_with_their_own_text_are_never_junk() -> None:
    detector = JunkDetector()
    first = page("https://club.example/guide/", GUIDE_PARTS[0], "Next: part two.")
    assert detector.observe(first.url, 1, first) == Verdict()
    for number, text in enumerate(GUIDE_PARTS[1:], start=2):
        doc = page(f"https://club.example/guide/?page={number}", text, "Previous and next parts of the guide.")
        verdict = detector.observe(doc.url, number, doc)
        assert verdict.exclude is None and not verdict.retract
    assert detector.counts() == {} and detector.refusal("https://club.example/guide/?page=9") is None


def test_dated_posts_and_their_archives_are_never_junk() -> None:
    detector = JunkDetector()
    for number, text in enumerate(GUIDE_PARTS, start=1):  # five posts, each with its own story
        post = page(f"https://club.example/blog/2025/0{number}/1{number}/post-{number}/", "Ride report.", text)
        archive = page(f"https://club.example/blog/2025/0{number}/", "Posts from this month:", text[:120])
        assert detector.observe(post.url, 2, post).exclude is None
        assert detector.observe(archive.url, 2, archive).exclude is None
    assert detector.counts() == {}


SHOP = ["Club jersey, red, size M: $65", "Club jersey, blue, size S: $65", "Winter jacket, black, size L: $120",
        "Bib shorts, black, size S: $70", "Cycling cap, blue, size M: $18", "Water bottle, white: $9"]


def test_faceted_filters_are_judged_against_the_unfiltered_page() -> None:
    detector = JunkDetector()
    shop = page("https://club.example/shop/", "Club kit is sold at the shop counter; members pay these prices.", *SHOP)
    assert detector.observe(shop.url, 1, shop) == Verdict()
    facets = [("color=red", [0]), ("color=blue", [1, 4]), ("color=black", [2, 3]), ("sort=price", [5, 4, 0, 1, 3, 2]),
              ("size=s", [1, 3])]
    verdicts = []
    for query, rows in facets:
        doc = page(f"https://club.example/shop/?{query}", "Club kit is sold at the shop counter; members pay "
                   "these prices.", *(SHOP[i] for i in rows))
        verdicts.append(detector.observe(doc.url, 2, doc))
    assert verdicts[2].exclude is not None and verdicts[2].exclude.reason == "junk_query"
    assert len(verdicts[2].retract) == 2  # the two filtered pages seen before the verdict
    assert "query parameters: color" in verdicts[2].exclude.detail
    assert detector.refusal("https://club.example/shop/?color=red&size=m") == "junk_query"
    assert detector.refusal("https://club.example/shop/") is None


def test_template_pages_with_facts_of_their_own_are_kept() -> None:
    detector = JunkDetector()
    for number, product in enumerate(SHOP):  # one product page per id, same words around the fact
        doc = page(f"https://club.example/product/{number}", "Add to basket. Free collection at the shop.",
                   facts=(product,))
        assert detector.observe(doc.url, 2, doc).exclude is None
    assert detector.counts() == {}


def test_junk_detection_can_be_switched_off_and_spares_pages_indexed_before() -> None:
    off = JunkDetector(enabled=False)
    for y, m in [(2026, 1), (2026, 2), (2026, 3), (2026, 4), (2026, 5)]:
        assert off.observe(calendar_month(y, m).url, 1, calendar_month(y, m)).exclude is None
    known = "https://club.example/events/2025/12/"
    detector = JunkDetector(exempt=[known])
    detector.presume({"club.example/events/{date}/{date}/": "junk_calendar"})
    assert detector.refusal("https://club.example/events/2026/01/") == "junk_calendar"
    assert detector.refusal(known) is None  # indexed before: fetched and judged on its content
    assert "earlier crawl" in detector.records()[0].detail
