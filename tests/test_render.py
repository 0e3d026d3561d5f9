"""JavaScript pages (crawl.render, ingest/render/): the shell detector on real fixture pages, and
real headless Chromium (Debian's /usr/bin/chromium through Playwright) crawling the fixture
single-page app in tests/spa/ served on 127.0.0.1 — rendered text indexed and answerable, links
that exist only after render followed, the browser's requests held to the tenant's rules, the
delta rules kept, hostile pages failed with reasons while the crawl goes on — and the static
fixture sites left on the plain HTTP path without a browser.
"""

from __future__ import annotations

import asyncio
import io
import json
import logging
import os
import shutil
import subprocess
import sys
import time
import zlib
from contextlib import redirect_stdout
from pathlib import Path

import httpx
import msgspec
import pytest

from app.__main__ import main
from ingest.crawl.fetch import FetchResult
from ingest.crawl.urls import UrlPolicy
from ingest.pipeline import CrawlOptions, crawl
from ingest.render import RenderStage, detect_shell
from ingest.render.network import is_tracker, request_block_reason
from ingest.render.shell import noscript_asks_for_javascript
from store.config import CrawlSettings, decode_config
from store.errors import FetchError, InvalidConfig
from store.pages import render_stats
from tests.conftest import FASTAPI, PYPUG, PYPUG_ORIGIN, ROOT, fresh_context
from tests.fakes import FAKE_MODEL
from tests.server import run_server
from tests.sitesrv import Fault, serve_site
from tests.spa import CONTENT_PAGES, HOSTILE_PAGES, ORIGIN, serve_spa
from tests.spa import ROOT as SPA

HAS_CHROMIUM = Path("/usr/bin/chromium").exists() or shutil.which("chromium") is not None


def browser_test(fn):
    """Real Chromium: marked browser and slow, skipped on a machine without chromium."""
    for mark in (pytest.mark.browser, pytest.mark.slow,
                 pytest.mark.skipif(not HAS_CHROMIUM, reason="needs Debian's chromium")):
        fn = mark(fn)
    return fn

#: The crawl's per-page deadline for the fixture app: a page that loops forever costs this much.
DEADLINE_S = 6.0


def configure(tenant, **crawl: object) -> None:
    config = tenant.config()
    tenant.set_config(msgspec.structs.replace(config, crawl=msgspec.structs.replace(config.crawl, **crawl)))


def run(tenant, embedder, **options) -> object:
    return asyncio.run(crawl(tenant, embedder, CrawlOptions(rate=0, **options)))


def render_rows(tenant) -> dict[str, tuple[str, str, list[str]]]:
    rows = tenant.reader().execute("SELECT url, decision, reason, blocked FROM render_decisions").fetchall()
    return {url: (decision, reason, json.loads(blocked)) for url, decision, reason, blocked in rows}


def page_text(tenant, url: str) -> str:
    rows = tenant.reader().execute(
        "SELECT c.text FROM pages p JOIN page_chunks pc ON pc.page_id = p.id JOIN chunks c ON c.id = pc.chunk_id "
        "WHERE p.url = ? AND p.status = 'active' ORDER BY pc.position", (url,)).fetchall()
    return "\n".join(r[0] for r in rows)


def browsers_of_this_process() -> list[int]:
    """Chromium browser processes (ours carry --frontdesk-render=) descended from this process."""
    parents: dict[int, int] = {}
    marked: list[int] = []
    with os.scandir("/proc") as entries:
        pids = [int(entry.name) for entry in entries if entry.name.isdigit()]
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat", "rb") as handle:
                parents[pid] = int(handle.read().rsplit(b")", 1)[1].split()[1])
            with open(f"/proc/{pid}/cmdline", "rb") as handle:
                if b"--frontdesk-render=" in handle.read():
                    marked.append(pid)
        except (OSError, IndexError, ValueError):
            continue
    mine = []
    for pid in marked:
        ancestor = parents.get(pid)
        while ancestor and ancestor != os.getpid():
            ancestor = parents.get(ancestor)
        if ancestor == os.getpid():
            mine.append(pid)
    return mine


class Captured(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


# -- the shell detector and the request rules (no browser) ------------------------------------


@pytest.mark.parametrize("site", [PYPUG, FASTAPI], ids=["pypug", "fastapi"])
def test_detector_never_renders_a_static_fixture_page(site):
    pages = sorted(site.rglob("*.html"))
    assert len(pages) > 80
    renders = {str(p.relative_to(site)): detect_shell(p.read_bytes().decode("utf-8", "replace")).reason
               for p in pages}
    assert {page: reason for page, reason in renders.items() if reason != "static_content"} == {}


def test_detector_renders_app_shells_and_says_why():
    shell = (SPA / "index.html").read_text()
    verdict = detect_shell(shell)
    assert verdict.render and verdict.reason == "empty_mount:#root" and verdict.body_chars == 0
    next_shell = '<body><div id="__next"><div class="spinner">Loading…</div></div><script src="/_next/app.js"></script>'
    assert detect_shell(next_shell).reason == "empty_mount:#__next"
    asks = '<body><noscript>This site requires JavaScript.</noscript><header>Shop</header><script src="/a.js"></script>'
    assert detect_shell(asks).reason == "noscript_asks_for_javascript"
    bare = '<body><div class="wrapper"></div><script>' + "x();" * 300 + "</script>"
    assert detect_shell(bare).reason == "little_text"
    assert detect_shell("<body><p>Hello.</p></body>").reason == "no_scripts"
    assert not detect_shell("<body><div id=root></div></body>").render  # no script: nothing to run
    # A server-rendered app mounts into #root too: with its text there, it is read as served.
    served = ('<body><div id="root"><article>' + "<p>Plenty of server-rendered text here.</p>" * 40
              + "</article></div><script src=/a.js></script>")
    assert detect_shell(served).reason == "static_content"
    assert detect_shell("<p>x</p>", main_chars=5000).reason == "static_content"  # the fast path
    # The app's rendered DOM saved as a file: #root holds text, the <noscript> is left over. However
    # short, it is read as served.
    snapshot = ('<body><noscript>You need to enable JavaScript to run this app.</noscript><div id="root">'
                "<main><h1>About</h1><p>" + "Real words of the page. " * 5 + "</p></main></div><script src=/app.js>")
    assert detect_shell(snapshot).reason == "static_content"


def test_noscript_wording():
    assert noscript_asks_for_javascript("You need to enable JavaScript to run this app.")
    assert noscript_asks_for_javascript("Please enable JavaScript to view the page content")
    # Sphinx's search page: a feature needs JavaScript, the page does not.
    assert not noscript_asks_for_javascript("Please activate JavaScript to enable the search functionality.")


def test_request_rules():
    config = CrawlSettings(allowed_hosts=["cdn.example.com"])
    policy = UrlPolicy(config, "https://shop.example.com/")

    def reason(url: str, kind: str = "fetch", method: str = "GET", allow_private: bool = False):
        return request_block_reason(url, kind, method, policy, allow_private)

    assert reason("https://shop.example.com/api/items") is None
    assert reason("https://cdn.example.com/app.js", "script") is None
    assert reason("https://evil.example.net/x") == "off_site"
    assert reason("http://10.0.0.1/admin") == "off_site"
    assert reason("https://shop.example.com/logo.png", "image") == "blocked_image"
    assert reason("https://shop.example.com/font.woff2", "font") == "blocked_font"
    assert reason("https://www.google-analytics.com/g/collect", "ping") == "tracker"
    assert reason("https://shop.example.com/gtag/js?id=G-1", "script") == "tracker"
    assert reason("data:text/plain,hi") == "blocked_scheme"
    assert reason("https://shop.example.com/api", method="DELETE") == "blocked_method"
    # An allowed host given as an address still passes the SSRF guard; metadata never does.
    metadata = UrlPolicy(CrawlSettings(allowed_hosts=["169.254.169.254", "10.0.0.1"]), "https://shop.example.com/")
    assert request_block_reason("http://10.0.0.1/", "fetch", "GET", metadata, False) == "blocked_private_address"
    assert request_block_reason("http://10.0.0.1/", "fetch", "GET", metadata, True) is None
    assert request_block_reason("http://169.254.169.254/latest/meta-data/", "fetch", "GET", metadata, True) \
        == "blocked_private_address"
    assert is_tracker("region1.google-analytics.com") and not is_tracker("analytics.example.com")


def test_render_setting_is_validated_with_its_field_named():
    assert decode_config({"site": "https://a.example/"}).crawl.render == "auto"
    assert decode_config({"site": "https://a.example/", "crawl": {"render": "always"}}).crawl.render == "always"
    for bad in ("sometimes", 1, None):
        with pytest.raises(InvalidConfig) as caught:
            decode_config({"site": "https://a.example/", "crawl": {"render": bad}})
        assert caught.value.details["field"] == "crawl.render"


def test_a_missing_render_extra_fails_the_page_with_a_reason(ctx, monkeypatch):
    """Without Playwright a shell page fails with render_unavailable and the fix in the message;
    a page that needs no browser is indexed as before."""
    tenant, _ = ctx.create_tenant("noextra", "https://app.example/", model=FAKE_MODEL)
    config = tenant.config()
    monkeypatch.setitem(sys.modules, "playwright.async_api", None)  # import fails as if not installed
    monkeypatch.delitem(sys.modules, "ingest.render.browser", raising=False)
    stage = RenderStage(tenant, config, UrlPolicy(config.crawl, config.site))

    def fetched(url: str, body: bytes) -> FetchResult:
        return FetchResult(url=url, final_url=url, status=200, headers={"content-type": "text/html"}, body=body,
                           content_type="text/html", encoding="utf-8", elapsed_s=0.0, redirects=[])

    async def go():
        async with stage:
            with pytest.raises(FetchError) as caught:
                await stage.prepare(fetched("https://app.example/", (SPA / "index.html").read_bytes()))
            article = b"<main><p>" + b"Words. " * 400 + b"</p></main>"
            plain = await stage.prepare(fetched("https://app.example/about", article))
        return caught.value, plain

    error, plain = asyncio.run(go())
    assert error.reason == "render_unavailable" and "frontdesk[render]" in error.message
    assert plain.doc.sections and plain.html.startswith(b"<main>")
    assert not stage.browser_started
    assert render_rows(tenant) == {
        "https://app.example/": ("render_failed", "render_unavailable", []),
        "https://app.example/about": ("static", "static_content", []),
    }


def test_a_missing_chromium_fails_the_pages_that_need_it_with_a_reason(ctx, monkeypatch):
    pytest.importorskip("playwright")
    from ingest.render import stage as stage_module
    from ingest.render.browser import RenderLimits

    monkeypatch.setattr(stage_module, "LIMITS", RenderLimits(executable="/nonexistent/chromium"))
    tenant, _ = ctx.create_tenant("nochromium", "https://app.example/", model=FAKE_MODEL)
    config = tenant.config()
    stage = RenderStage(tenant, config, UrlPolicy(config.crawl, config.site))
    shell = (SPA / "index.html").read_bytes()

    async def go() -> list[FetchError]:
        errors = []
        async with stage:
            for path in ("/", "/about"):
                url = "https://app.example" + path
                with pytest.raises(FetchError) as caught:
                    await stage.prepare(FetchResult(url=url, final_url=url, status=200, headers={}, body=shell,
                                                    content_type="text/html", encoding="utf-8", elapsed_s=0.0,
                                                    redirects=[]))
                errors.append(caught.value)
        return errors

    errors = asyncio.run(go())
    assert [e.reason for e in errors] == ["render_unavailable"] * 2
    assert "no chromium at /nonexistent/chromium" in errors[0].message
    assert "apt-get install chromium" in errors[0].message
    assert not stage.browser_started


# -- the static fixture sites stay on the HTTP path -------------------------------------------

NO_BROWSER_SCRIPT = """
import asyncio, json, sys
import msgspec
import tests.fakes
from app.context import Context
from app.settings import Settings
from ingest.pipeline import CrawlOptions, crawl
data, site, spa, mode = sys.argv[1:5]
ctx = Context(Settings(data_dir=data))
out = {}
for tenant_id, url, render in (("pypug", site, "auto"), ("spanever", spa, "never")):
    tenant, _ = ctx.create_tenant(tenant_id, url, model=tests.fakes.FAKE_MODEL, allow_private_network=True)
    config = tenant.config()
    tenant.set_config(msgspec.structs.replace(config, crawl=msgspec.structs.replace(config.crawl, render=render)))
    summary = asyncio.run(crawl(tenant, ctx.tenant_embedder(tenant), CrawlOptions(rate=0)))
    decisions = dict(tenant.reader().execute(
        "SELECT decision || ':' || reason, count(*) FROM render_decisions GROUP BY 1").fetchall())
    out[tenant_id] = {"summary": msgspec.to_builtins(summary), "decisions": decisions}
out["playwright_imported"] = any(name == "playwright" or name.startswith("playwright.") for name in sys.modules)
ctx.close()
print(json.dumps(out))
"""


@pytest.mark.slow
def test_auto_leaves_static_sites_on_http_and_never_tenants_never_load_a_browser(tmp_path):
    """In a fresh process: `auto` on pypug renders nothing, `never` on the app renders nothing,
    and neither so much as imports Playwright."""
    data = tmp_path / "data"
    data.mkdir()
    (data / "models").symlink_to(Path.home() / ".cache" / "frontdesk-tests", target_is_directory=True)
    with serve_site(PYPUG, PYPUG_ORIGIN) as pypug, serve_spa() as spa:
        done = subprocess.run([sys.executable, "-c", NO_BROWSER_SCRIPT, str(data), pypug.url + "/", spa.url + "/", "x"],
                              cwd=ROOT, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["playwright_imported"] is False
    pypug_run = out["pypug"]
    assert pypug_run["summary"]["status"] == "done" and pypug_run["summary"]["fetched"] > 80
    assert set(pypug_run["decisions"]) <= {"static:static_content", "static:noindex"}, pypug_run["decisions"]
    assert "browser_starts" not in pypug_run["summary"]["render"]
    never = out["spanever"]
    assert never["decisions"] and set(never["decisions"]) == {"static:render_never"}
    assert "browser_starts" not in never["summary"]["render"]


# -- the fixture app in real Chromium ---------------------------------------------------------


@pytest.fixture(scope="module")
def spa(tmp_path_factory):
    """The fixture app (a copy tests may edit) crawled once with crawl.render = auto, the real
    model, the metadata address listed in allowed_hosts (so the SSRF guard, not the host rule,
    is what stops it) and a 6 s per-page deadline."""
    copy = tmp_path_factory.mktemp("spa") / "spa"
    shutil.copytree(SPA, copy, ignore=shutil.ignore_patterns("__pycache__", "*.py"))
    context = fresh_context(tmp_path_factory, "spa")
    captured = Captured()
    logging.getLogger("ingest.render").addHandler(captured)
    logging.getLogger("ingest.render").setLevel(logging.INFO)
    try:
        with serve_spa(copy) as server:
            tenant, admin_token = context.create_tenant("spa", server.url + "/", allow_private_network=True)
            configure(tenant, timeout=DEADLINE_S, allowed_hosts=["169.254.169.254"])
            embedder = context.tenant_embedder(tenant)
            summary = run(tenant, embedder)
            server.wait_idle()
            first_hits = list(server.requests)
            yield {"context": context, "tenant": tenant, "embedder": embedder, "server": server, "copy": copy,
                   "summary": summary, "hits": first_hits, "log": captured.messages, "admin_token": admin_token}
    finally:
        logging.getLogger("ingest.render").removeHandler(captured)
        context.close()


def url_of(spa, path: str) -> str:
    return spa["server"].url + path


@browser_test
def test_every_app_page_is_indexed_with_its_rendered_text(spa):
    tenant, summary = spa["tenant"], spa["summary"]
    assert summary.status == "done", summary
    indexed = {r[0] for r in tenant.reader().execute("SELECT url FROM pages WHERE status = 'active'")}
    assert indexed == {url_of(spa, p) for p in CONTENT_PAGES}
    rows = render_rows(tenant)
    for path in CONTENT_PAGES:
        decision, reason, _ = rows[url_of(spa, path)]
        assert (decision, reason) == ("rendered", "empty_mount:#root"), path
    assert "Lumen & Co. is a small lighting workshop" in page_text(tenant, url_of(spa, "/"))
    assert "founded in 2014 by Ines Vermeulen" in page_text(tenant, url_of(spa, "/about"))
    assert "Halo Pendant" in page_text(tenant, url_of(spa, "/products/"))
    assert "Saturdays from 10:00 to 16:00" in page_text(tenant, url_of(spa, "/workshop"))
    # The rendered DOM goes to the same extractors: the form and the data-action the script built.
    forms = tenant.reader().execute("SELECT data FROM forms").fetchall()
    assert any('"email"' in f[0] for f in forms)
    actions = [r[0] for r in tenant.reader().execute("SELECT name FROM actions")]
    assert "book-visit" in actions
    # The cached copy is the rendered DOM: a reparse rebuilds the same pages without a browser.
    html = tenant.reader().execute("SELECT h.html FROM page_html h JOIN pages p ON p.id = h.page_id WHERE p.url = ?",
                                   (url_of(spa, "/about"),)).fetchone()
    assert b"Ines Vermeulen" in zlib.decompress(html[0])
    assert summary.render["rendered"] == len(CONTENT_PAGES)


@browser_test
def test_the_price_fetched_after_load_is_indexed_and_answerable(spa):
    tenant = spa["tenant"]
    product = url_of(spa, "/products/aurora-lamp")
    assert "Price: €89.00, in stock." in page_text(tenant, product)
    facts = tenant.reader().execute(
        "SELECT f.text FROM facts f JOIN pages p ON p.id = f.page_id WHERE p.url = ?", (product,)).fetchall()
    assert any("89" in text and "Aurora Lamp" in text for (text,) in facts), facts  # JSON-LD added by script
    out = io.StringIO()
    with redirect_stdout(out):
        code = main(["ask", "--data-dir", str(spa["context"].data_dir), "--json", "spa",
                     "How much does the Aurora lamp cost?"])
    assert code == 0
    answer = json.loads(out.getvalue().strip().splitlines()[-1])
    assert "89" in answer["answer"], answer["answer"]
    assert any(c["url"] == product for c in answer["citations"])


@browser_test
def test_links_that_exist_only_after_render_and_client_side_routes_are_followed(spa):
    tenant, summary = spa["tenant"], spa["summary"]
    indexed = {r[0] for r in tenant.reader().execute("SELECT url FROM pages WHERE status = 'active'")}
    static_html = "".join(p.read_text() for p in SPA.rglob("*.html")) + (SPA / "sitemap.xml").read_text()
    # Anchors the script writes (about → workshop, getting-started → lamp-care): in no static file.
    assert "/workshop" not in static_html and url_of(spa, "/workshop") in indexed
    assert url_of(spa, "/guides/lamp-care") in indexed
    # /guides/getting-started is an anchor nowhere, static or rendered: the guides index shows it
    # through history.replaceState, and the crawler saw that.
    cached = tenant.reader().execute("SELECT html FROM page_html").fetchall()
    assert not [h for (h,) in cached if b'href="/guides/getting-started"' in zlib.decompress(h)]
    assert url_of(spa, "/guides/getting-started") in indexed
    # robots.txt still applies to what the rendered pages link to.
    assert summary.skipped.get("robots_disallowed", 0) >= 1
    assert not [h for h in spa["hits"] if h.path.startswith("/private/")]


@browser_test
def test_the_browser_reaches_nothing_the_tenant_does_not_allow(spa):
    tenant = spa["tenant"]
    _, _, blocked = render_rows(tenant)[url_of(spa, "/contact")]
    assert "off_site http://10.0.0.1/admin" in blocked  # a private address off the allowed hosts
    # The metadata address is on allowed_hosts here: the SSRF guard refuses it anyway, by fetch and by iframe.
    assert "blocked_private_address http://169.254.169.254/latest/meta-data/" in blocked
    assert "blocked_private_address http://169.254.169.254/latest/meta-data/iam/" in blocked
    log = "\n".join(spa["log"])
    assert "refused fetch request to http://10.0.0.1/admin (off_site)" in log
    assert "refused fetch request to http://169.254.169.254/latest/meta-data/ (blocked_private_address)" in log
    assert "refused document request to http://169.254.169.254/latest/meta-data/iam/ (blocked_private_address)" in log
    # Each page was requested once, by the crawler's fetcher (robots, Crawl-delay, validators):
    # the browser got those bytes, and asked the server only for scripts and data.
    hits = spa["hits"]
    for path in [*CONTENT_PAGES, *HOSTILE_PAGES]:
        assert len([h for h in hits if h.path == path]) == 1, path
    assert {h.path for h in hits} - {*CONTENT_PAGES, *HOSTILE_PAGES} <= {
        "/robots.txt", "/sitemap.xml", "/actions.json", "/app.js", "/data/site.json", "/data/products.json",
        "/data/prices/aurora-lamp.json", "/data/prices/halo-pendant.json", "/data/flood.json"}
    assert not [h for h in hits if h.path.startswith("/popup/") or h.path == "/favicon.png"]
    # The scripts and data every page loads were fetched once for the whole job.
    assert len([h for h in hits if h.path == "/app.js"]) == 1


@browser_test
def test_hostile_pages_fail_with_reasons_and_the_crawl_goes_on(spa):
    tenant, summary = spa["tenant"], spa["summary"]
    rows = render_rows(tenant)
    failed = {r[0]: r[1] for r in tenant.reader().execute(
        "SELECT url, reason FROM crawl_errors WHERE run_id = (SELECT min(id) FROM crawl_runs)")}
    for path, reason in HOSTILE_PAGES.items():
        url = url_of(spa, path)
        if reason is None:
            assert rows[url][0] == "rendered", path
            continue
        assert rows[url][:2] == ("render_failed", reason), path
        assert failed[url] == reason
        # Nothing half-written: no page row, no chunks, no cached HTML for a failed render.
        assert tenant.reader().execute("SELECT count(*) FROM pages WHERE url = ?", (url,)).fetchone()[0] == 0
    # Popups opened nothing; the page that navigated away stayed put and was indexed.
    assert rows[url_of(spa, "/hostile/popups")][2][:2] == ["popup_blocked /popup/0", "popup_blocked /popup/1"]
    assert "All oak floor lamps are twenty percent off" in page_text(tenant, url_of(spa, "/hostile/popups"))
    away = rows[url_of(spa, "/hostile/away")][2]
    assert away == ["navigation_blocked http://10.0.0.1/steal", f"navigation_blocked {url_of(spa, '/workshop')}"]
    assert "Gift cards of 25, 50 and 100 euros" in page_text(tenant, url_of(spa, "/hostile/away"))
    # A failure recycles the browser (failures on one browser at once share a restart); when the
    # job ends none is left running.
    assert summary.render["browser_recycles"] >= 2
    assert summary.render["browser_starts"] == summary.render["browser_recycles"] + 1
    assert summary.errors == {reason: 1 for reason in HOSTILE_PAGES.values() if reason}
    assert browsers_of_this_process() == []


@browser_test
def test_stats_show_which_pages_needed_a_browser(spa):
    out = io.StringIO()
    with redirect_stdout(out):
        assert main(["stats", "--data-dir", str(spa["context"].data_dir), "--json", "spa"]) == 0
    render = json.loads(out.getvalue())["render"]
    assert render["by_decision"] == {"rendered": len(CONTENT_PAGES), "render_failed": 4}
    assert render["by_reason"]["empty_mount:#root"] == len(CONTENT_PAGES)
    assert {p["url"] for p in render["pages"]} >= {url_of(spa, p) for p in CONTENT_PAGES}
    auth = {"Authorization": f"Bearer {spa['admin_token']}"}
    with run_server(spa["context"].data_dir) as base, httpx.Client(base_url=base, headers=auth, timeout=30) as api:
        response = api.get("/admin/tenants/spa/stats")
        assert response.status_code == 200, response.text
        assert response.json()["render"] == render_stats(spa["tenant"].reader())
        # The server's own crawl jobs render too (Playwright inside granian's event loop): the
        # refresh webhook on the page that crashes its renderer.
        started = api.post("/admin/tenants/spa/pages:refresh", json={"urls": [url_of(spa, "/hostile/crash")]})
        assert started.status_code == 202, started.text
        for _ in range(300):
            job = api.get("/admin/tenants/spa/crawl").json()["job"]
            if job["status"] != "running":
                break
            time.sleep(0.1)
    assert job["status"] == "done", job
    assert job["summary"]["errors"] == {"render_crashed": 1}
    assert job["summary"]["render"]["browser_starts"] == 1


@browser_test
def test_recrawls_render_only_what_changed_and_reembed_nothing_unchanged(spa):
    tenant, embedder, server, copy = spa["tenant"], spa["embedder"], spa["server"], spa["copy"]
    good = [url_of(spa, p) for p in CONTENT_PAGES]
    # Delta: every shell in the sitemap answers 304 to its validators, so none is rendered again
    # (and, as on any site, the pages only their links lead to wait for the next full crawl).
    in_sitemap = [p for p in CONTENT_PAGES if f"{ORIGIN}{p}<" in (SPA / "sitemap.xml").read_text()]
    server.reset()
    summary = run(tenant, embedder)
    assert summary.chunks_embedded == 0 and summary.fetched == 0, summary
    assert summary.not_modified == len(in_sitemap) == 9, summary
    assert summary.render.get("rendered", 0) == 0, summary
    assert not [h for h in server.requests if h.path.startswith("/data/prices/")]
    # Full: rendered again, and the content hashes say nothing changed.
    summary = run(tenant, embedder, full=True, urls=good)
    assert summary.render["rendered"] == len(good), summary
    assert summary.chunks_embedded == 0 and summary.skipped_unchanged == len(good), (summary, render_rows(tenant))
    # The price behind the page changes: a full refresh renders it and embeds only what changed.
    (copy / "data" / "prices" / "halo-pendant.json").write_text(
        '{"price": "199.00", "currency": "EUR", "availability": "InStock"}')
    product = url_of(spa, "/products/halo-pendant")
    summary = run(tenant, embedder, full=True, urls=[product])
    assert summary.fetched == 1 and 1 <= summary.chunks_embedded <= 3, summary
    assert "Price: €199.00, in stock." in page_text(tenant, product)


# -- the browser session on its own -----------------------------------------------------------


@browser_test
def test_no_cookies_or_storage_outlive_a_job_and_the_guard_holds_without_allow_private():
    from ingest.render.browser import BrowserSession

    page = (b"<html><body><p id=out></p><script>"
            b"document.getElementById('out').textContent = 'storage:' + (localStorage.getItem('k') || 'none')"
            b" + ' cookie:' + (document.cookie || 'none');"
            b"localStorage.setItem('k', 'kept'); document.cookie = 'c=kept; max-age=86400';"
            b"fetch('/data/site.json').then(r => r.json()).then(d => document.body.append(d.name)).catch(() => {});"
            b"</script></body></html>")

    async def job(allow_private: bool) -> dict:
        """One job's browser: two pages of the same origin, then a fetch that redirects to the
        metadata address."""
        with serve_spa() as server:
            server.faults["/out"] = Fault(redirect="http://169.254.169.254/latest/meta-data/")
            config = CrawlSettings(allow_private_network=allow_private, timeout=DEADLINE_S)
            session = BrowserSession(config, UrlPolicy(config, server.url + "/"))
            await session.start()
            try:
                first = await session.render(server.url + "/one", page)
                second = await session.render(server.url + "/two", page)
                redirect = await session.render(server.url + "/three", b"<script>fetch('/out')</script>")
            finally:
                await session.close()
            server.wait_idle()
            return {"origin": server.url, "first": first, "second": second, "redirect": redirect,
                    "paths": {h.path for h in server.requests}}

    one, two = asyncio.run(job(True)), asyncio.run(job(True))
    assert "storage:none cookie:none" in one["first"].html
    assert "storage:kept cookie:c=kept" in one["second"].html  # one job shares one context…
    assert "storage:none cookie:none" in two["first"].html  # …a new job starts from nothing
    assert "Lumen &amp; Co." in one["first"].html and "/data/site.json" in one["paths"]
    # A redirect is followed hop by hop here, and the hop off the allowed hosts is refused.
    assert one["redirect"].blocked == ["off_site_redirect http://169.254.169.254/latest/meta-data/"]
    assert "/out" in one["paths"]
    # Without allow_private_network the site's own loopback address is refused to the browser:
    # the document came from the crawler, the data request never left.
    refused = asyncio.run(job(False))
    assert refused["first"].blocked == [f"blocked_private_address {refused['origin']}/data/site.json"]
    assert "Lumen" not in refused["first"].html and "/data/site.json" not in refused["paths"]


def test_the_container_can_carry_chromium_behind_a_build_argument():
    """The Containerfile's WITH_CHROMIUM steps, checked as tests/test_container.py checks the rest."""
    import re
    import tomllib

    from tests.test_container import CONTAINERFILE, parse

    args, stages = parse(CONTAINERFILE.read_text())
    assert args["WITH_CHROMIUM"] == "0"  # off unless asked for
    build, final = stages[0], stages[-1]
    assert "WITH_CHROMIUM" in build.all("ARG") and "WITH_CHROMIUM" in final.all("ARG")
    extra = next(r for r in build.all("RUN") if "optional-dependencies" in r)
    assert extra.startswith('if [ "$WITH_CHROMIUM" = "1" ]')
    one_liner = re.search(r'python -c "(import tomllib.*?)" >', extra).group(1)
    listed = subprocess.run([sys.executable, "-c", one_liner], cwd=ROOT, capture_output=True, text=True,
                            check=True).stdout.split()
    assert listed == tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]["render"]
    names = [name for name, _ in final.steps]
    apt = next(i for i, (name, text) in enumerate(final.steps) if name == "RUN" and "chromium" in text)
    assert final.steps[apt][1].startswith('if [ "$WITH_CHROMIUM" = "1" ]')
    assert "--no-install-recommends chromium" in final.steps[apt][1] and "pip install" not in final.steps[apt][1]
    assert apt < names.index("USER")


@browser_test
def test_the_browser_is_restarted_past_its_memory_ceiling():
    from ingest.render.browser import BrowserSession, RenderLimits

    async def go() -> BrowserSession:
        with serve_spa() as server:
            config = CrawlSettings(allow_private_network=True, timeout=DEADLINE_S)
            session = BrowserSession(config, UrlPolicy(config, server.url + "/"), RenderLimits(memory_mb=1))
            await session.start()
            try:
                for path in ("/about", "/workshop"):
                    rendered = await session.render(server.url + path, (SPA / "index.html").read_bytes())
                    assert "Lumen" in rendered.html
            finally:
                await session.close()
        return session

    session = asyncio.run(go())
    # Any real browser is over 1 MB: measured after the first page, restarted before the second.
    assert session.peak_mb > 50
    assert session.recycles == {"memory_ceiling": 1} and session.launches == 2
    assert browsers_of_this_process() == []


@browser_test
def test_always_renders_every_page_even_a_static_one(ctx):
    """`always` renders pages the detector would read as served, and keeps the rendering."""
    tenant, _ = ctx.create_tenant("always", PYPUG_ORIGIN + "/", model=FAKE_MODEL, allow_private_network=True)
    with serve_site(PYPUG, PYPUG_ORIGIN) as server:
        configure(tenant, render="always", timeout=DEADLINE_S)
        config = tenant.config()
        tenant.set_config(msgspec.structs.replace(config, site=server.url + "/"))
        summary = run(tenant, ctx.tenant_embedder(tenant), max_pages=3)
    assert summary.status == "done" and summary.failed == 0, summary
    rows = render_rows(tenant)
    assert len(rows) == 3 and {(d, r) for d, r, _ in rows.values()} == {("rendered", "always")}
    assert summary.render["browser_starts"] == 1
