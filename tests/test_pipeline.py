"""The crawl pipeline end to end: a real HTTP server on 127.0.0.1 serving the fixture sites,
real extraction, the real model, a real tenant file."""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import msgspec
import pytest

from ingest.pipeline import CrawlOptions, crawl
from store.connect import open_connection
from store.pages import junk_summary, stats
from store.search import text_index_segments
from tests.bikeclub import REAL_PAGES, calendar_hits, serve_bikeclub
from tests.busy import GilHog
from tests.conftest import FASTAPI, FASTAPI_ORIGIN, PYPUG, PYPUG_ORIGIN, ROOT
from tests.server import run_server
from tests.sitesrv import Fault, serve_site

pytestmark = pytest.mark.slow


def run(tenant, embedder, **options):
    return asyncio.run(crawl(tenant, embedder, CrawlOptions(rate=0, **options)))


@pytest.fixture(scope="module")
def pypug_copy(tmp_path_factory):
    """A private copy of the pypug fixture that tests may edit (the shared one is read-only)."""
    target = tmp_path_factory.mktemp("site") / "pypug"
    shutil.copytree(PYPUG, target)
    return target


@pytest.fixture(scope="module")
def crawled(pypug_copy, tmp_path_factory):
    """The pypug copy served over HTTP and crawled once into a tenant."""
    from app.context import Context
    from app.settings import Settings

    data = tmp_path_factory.mktemp("crawl") / "data"
    context = Context(Settings(data_dir=str(data)))
    with serve_site(pypug_copy, PYPUG_ORIGIN) as server:
        tenant, _ = context.create_tenant("pypug", server.url + "/", allow_private_network=True)
        embedder = context.tenant_embedder(tenant)
        summary = run(tenant, embedder)
        yield context, tenant, embedder, server, summary
    context.close()


def sitemap_urls(root: Path, origin: str) -> set[str]:
    import re

    return set(re.findall(r"<loc>([^<]+)</loc>", (root / "sitemap.xml").read_text()))


def test_full_crawl_indexes_every_sitemap_page_not_excluded(crawled, pypug_copy):
    context, tenant, _, server, summary = crawled
    assert summary.status == "done" and summary.failed == 0, summary
    expected = {u.replace(PYPUG_ORIGIN, server.url) for u in sitemap_urls(pypug_copy, PYPUG_ORIGIN)}
    indexed = {
        r[0] for r in tenant.reader().execute("SELECT url FROM pages WHERE status = 'active'")
    }
    noindex = expected - indexed
    # Every sitemap page is indexed except those that ask not to be (meta robots noindex).
    assert len(noindex) <= 1, noindex
    for url in noindex:
        assert (
            b"noindex"
            in (pypug_copy / url.replace(server.url + "/", "")).joinpath("index.html").read_bytes()
        )
    assert not any("/_sources/" in u for u in indexed)  # robots.txt disallows it
    assert all(h.path != "/_sources/" for h in server.requests if h.path.startswith("/_sources"))
    assert not [h for h in server.requests if h.path.startswith("/_sources")]
    coverage = stats(tenant.reader())
    assert coverage.sitemap_covered >= coverage.sitemap_urls - 1


def test_a_crawl_leaves_its_text_index_merged(crawled):
    # Written page by page, a crawl's FTS5 index ends in up to 15 segments a level (FTS5 merges
    # them itself only at 16); the job merges them into one once they are more than a few.
    _, tenant, _, _, _ = crawled
    with tenant.reading() as conn:
        assert text_index_segments(conn) == 1


def test_a_crawl_ends_when_every_new_chunk_has_its_vector(crawled):
    # Pages are written before their vectors (the embedding stage runs beside fetching); the job
    # ends only when that stage has drained, each distinct text embedded once.
    _, tenant, _, _, summary = crawled
    conn = tenant.reader()
    chunks = conn.execute("SELECT count(*) FROM chunks").fetchone()[0]
    assert summary.chunks_pending == 0 and conn.execute("SELECT count(*) FROM chunk_pending").fetchone()[0] == 0
    assert chunks <= summary.chunks_embedded <= summary.chunks_added  # (a page removed meanwhile takes its chunks)
    assert conn.execute("SELECT count(*) FROM chunk_vec").fetchone()[0] == chunks
    assert summary.searchable_s is not None and 0 < summary.searchable_s <= summary.seconds


def test_unchanged_recrawl_embeds_nothing_and_transfers_no_bodies(crawled):
    _, tenant, embedder, server, _ = crawled
    before = len(server.requests)
    summary = run(tenant, embedder)
    new = server.requests[before:]
    page_hits = [h for h in new if h.path.endswith("/") or h.path.endswith(".html")]
    assert summary.chunks_embedded == 0 and summary.fetched == 0
    # Pages with an unchanged sitemap lastmod are not requested at all; the rest answer 304.
    assert all(h.status in (304, 200) for h in page_hits)
    bodies = [h for h in page_hits if h.status == 200 and h.body_bytes > 0]
    assert len(bodies) <= 1, bodies  # only the noindex page, which is never stored, is re-read
    assert len(page_hits) <= 3


def test_touching_one_page_reembeds_only_its_changed_chunks(crawled, pypug_copy):
    _, tenant, embedder, server, _ = crawled
    page = pypug_copy / "guides" / "using-testpypi" / "index.html"
    html = page.read_text()
    marker = "Frontdesk test paragraph: the zebra-striped upload checklist lives here."
    page.write_text(html.replace("</h1>", "</h1>\n<p>" + marker + "</p>", 1))
    os.utime(page, (time.time() + 5, time.time() + 5))
    sitemap = pypug_copy / "sitemap.xml"
    sitemap_text = sitemap.read_text()
    # A site update also bumps the page's lastmod in the sitemap.
    loc = f"{PYPUG_ORIGIN}/guides/using-testpypi/</loc>"
    start = sitemap_text.index(loc)
    lastmod_start = sitemap_text.index("<lastmod>", start) + len("<lastmod>")
    lastmod_end = sitemap_text.index("</lastmod>", lastmod_start)
    sitemap.write_text(sitemap_text[:lastmod_start] + "2099-01-01" + sitemap_text[lastmod_end:])
    summary = run(tenant, embedder)
    assert summary.fetched == 1, summary
    total = (
        tenant.reader()
        .execute(
            "SELECT count(*) FROM page_chunks pc JOIN pages p ON p.id = pc.page_id WHERE p.url LIKE '%using-testpypi/'"
        )
        .fetchone()[0]
    )
    assert 1 <= summary.chunks_embedded < total
    from app.context import Context  # noqa: F401  (search through the store directly)
    from store.search import search

    hits = search(
        tenant.reader(),
        "zebra-striped upload checklist",
        embedder.embed_query("zebra-striped upload checklist"),
        k=3,
    ).hits
    assert hits[0].url.endswith("/guides/using-testpypi/") and "zebra" in hits[0].text


def test_deleting_a_page_removes_it_from_search(crawled, pypug_copy):
    _, tenant, embedder, server, _ = crawled
    victim = pypug_copy / "guides" / "analyzing-pypi-package-downloads" / "index.html"
    victim.unlink()
    summary = run(tenant, embedder, full=True)
    assert summary.removed == 1, summary
    row = (
        tenant.reader()
        .execute(
            "SELECT status, gone_reason FROM pages WHERE url LIKE '%analyzing-pypi-package-downloads/'"
        )
        .fetchone()
    )
    assert row == ("gone", "http_404")
    from store.search import search

    query = "analyze download statistics of my package with bigquery"
    hits = search(tenant.reader(), query, embedder.embed_query(query), k=10).hits
    assert not any("analyzing-pypi-package-downloads" in h.url for h in hits)


def test_faults_are_skipped_with_reasons_and_nothing_is_lost(crawled, pypug_copy):
    _, tenant, embedder, server, _ = crawled
    before = stats(tenant.reader())
    server.faults["/guides/using-manifest-in/"] = Fault(status=500)
    server.faults["/specifications/pypirc/"] = Fault(gzip_bomb=200_000_000)
    server.faults["/glossary/"] = Fault(content_type="application/pdf")
    server.faults["/tutorials/index.html"] = Fault(
        redirect="http://169.254.169.254/latest/meta-data/"
    )
    config = tenant.config()
    tenant.set_config(
        msgspec.structs.replace(
            config, crawl=msgspec.structs.replace(config.crawl, retries=2, timeout=5.0)
        )
    )
    try:
        summary = run(tenant, embedder, full=True)
    finally:
        server.faults.clear()
    assert summary.failed >= 3, summary
    assert {"http_500", "not_html"} <= set(summary.errors), summary.errors
    after = stats(tenant.reader())
    assert (
        after.pages == before.pages and after.chunks == before.chunks
    )  # nothing already indexed is lost
    errors = dict(
        tenant.reader()
        .execute(
            "SELECT url, reason FROM crawl_errors WHERE run_id = (SELECT max(id) FROM crawl_runs)"
        )
        .fetchall()
    )
    assert any(u.endswith("/guides/using-manifest-in/") for u in errors)


def test_reparse_rebuilds_from_cached_html_without_the_network(crawled):
    _, tenant, embedder, server, _ = crawled
    before_requests = len(server.requests)
    summary = run(tenant, embedder, reparse=True)
    assert len(server.requests) == before_requests
    assert summary.status == "done" and summary.failed == 0 and summary.pages_found > 80
    assert summary.chunks_embedded == 0  # same HTML → same chunk texts → nothing to embed


def test_fastapi_languages_per_chunk(tmp_path):
    """es/ and de/ pages index as Spanish and German; their untranslated pages as English."""
    from app.context import Context
    from app.settings import Settings

    context = Context(Settings(data_dir=str(tmp_path / "data")))
    with serve_site(FASTAPI, FASTAPI_ORIGIN) as server:
        tenant, _ = context.create_tenant("fastapi", server.url + "/", allow_private_network=True)
        config = tenant.config()
        # A translated page in each language and an untranslated API page under es/ and de/
        # keep this test fast; the whole site is the crawl benchmark.
        tenant.set_config(msgspec.structs.replace(config, crawl=msgspec.structs.replace(
            config.crawl, allow=[r"^https?://[^/]+/((es|de)/)?(features|reference/openapi)/$"])))
        summary = run(tenant, context.tenant_embedder(tenant))
    assert summary.status == "done" and summary.fetched == 6 and summary.failed == 0, summary
    rows = tenant.reader().execute(
        "SELECT p.url, p.lang, c.lang FROM chunks c JOIN page_chunks pc ON pc.chunk_id = c.id "
        "JOIN pages p ON p.id = pc.page_id WHERE c.kind = 'prose'"
    ).fetchall()
    languages: dict[str, set[str]] = {}
    for url, page_lang, chunk_lang in rows:
        path = url.removeprefix(server.url + "/")
        languages.setdefault(path, set()).update({page_lang, chunk_lang})
    assert languages == {"features/": {"en"}, "es/features/": {"es"}, "de/features/": {"de"},
                         "reference/openapi/": {"en"}, "es/reference/openapi/": {"en"},
                         "de/reference/openapi/": {"en"}}
    context.close()


def test_kill_9_mid_crawl_leaves_a_sound_file_and_a_rerun_completes(tmp_path):
    data = tmp_path / "data"
    site = tmp_path / "site"
    shutil.copytree(PYPUG, site)  # not the module's copy: other tests edit and delete its pages
    env = {**os.environ, "FRONTDESK_DATA_DIR": str(data)}
    with serve_site(site, PYPUG_ORIGIN) as server:
        subprocess.run(
            [
                sys.executable,
                "-m",
                "app",
                "tenant",
                "create",
                "kill",
                "--site",
                server.url + "/",
                "--allow-private-network",
                "--json",
            ],
            check=True,
            env=env,
            cwd=ROOT,
            capture_output=True,
        )
        child = subprocess.Popen(
            [sys.executable, "-m", "app", "crawl", "kill", "--rate", "0"],
            env=env,
            cwd=ROOT,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        db = data / "tenants" / "kill.db"
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            time.sleep(0.5)
            conn = open_connection(db, readonly=True)
            pages = conn.execute("SELECT count(*) FROM pages").fetchone()[0]
            conn.close()
            if pages >= 10:
                break
        child.send_signal(signal.SIGKILL)
        child.wait()
        conn = open_connection(db)
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        conn.execute("INSERT INTO chunk_fts(chunk_fts) VALUES ('integrity-check')")
        # No half page: every stored page has its chunks, every chunk its vector or a pending entry
        # (the embedding stage runs behind fetching), never both.
        assert (
            conn.execute("SELECT count(*) FROM chunks").fetchone()[0]
            == conn.execute("SELECT count(*) FROM chunk_vec").fetchone()[0]
            + conn.execute("SELECT count(*) FROM chunk_pending").fetchone()[0]
        )
        assert conn.execute("SELECT count(*) FROM chunk_pending p JOIN chunk_vec v ON v.rowid = p.chunk_id"
                            ).fetchone()[0] == 0
        assert (
            conn.execute(
                "SELECT count(*) FROM pages p WHERE status = 'active' AND NOT EXISTS "
                "(SELECT 1 FROM page_chunks WHERE page_id = p.id)"
            ).fetchone()[0]
            == 0
        )
        done_before = conn.execute("SELECT count(*) FROM pages").fetchone()[0]
        conn.close()
        assert 10 <= done_before < 92
        rerun = subprocess.run(
            [sys.executable, "-m", "app", "crawl", "kill", "--rate", "0", "--json"],
            env=env,
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert rerun.returncode == 0, rerun.stderr
        import json

        summary = json.loads(rerun.stdout)
        assert summary["status"] == "done" and summary["failed"] == 0, summary
        assert (
            summary["fetched"] <= 92 - done_before + 2
        )  # the pages done before the kill are not redone
        assert summary["chunks_pending"] == 0
        conn = open_connection(db)
        assert (
            conn.execute("SELECT count(*) FROM pages WHERE status = 'active'").fetchone()[0] == 92
        )
        # The rerun embedded what the killed run left pending: every chunk has its vector.
        assert conn.execute("SELECT count(*) FROM chunk_pending").fetchone()[0] == 0
        assert (conn.execute("SELECT count(*) FROM chunks").fetchone()[0]
                == conn.execute("SELECT count(*) FROM chunk_vec").fetchone()[0])
        conn.close()


# -- the bike-club site: junk pages kept out, pages that fail transiently retried later ----------


def crawl_settings(tenant, **changes):
    config = tenant.config()
    tenant.set_config(msgspec.structs.replace(config, crawl=msgspec.structs.replace(config.crawl, **changes)))


def active_paths(tenant, server) -> set[str]:
    rows = tenant.reader().execute("SELECT url FROM pages WHERE status = 'active'").fetchall()
    return {url.removeprefix(server.url) for (url,) in rows}


def test_pages_that_fail_transiently_are_retried_later_and_none_is_lost(tmp_path):
    from app.context import Context
    from app.settings import Settings

    context = Context(Settings(data_dir=str(tmp_path / "data")))
    with serve_bikeclub() as server:
        tenant, _ = context.create_tenant("club", server.url + "/", allow_private_network=True)
        crawl_settings(tenant, retries=2, timeout=1.0, later_retries=3, later_retry_delay=0.3)
        server.faults["/repairs/"] = Fault(status=503, times=4)  # both attempts, then the first later round
        server.faults["/about/"] = Fault(delay=2.0, times=2)  # times out twice, then answers
        summary = run(tenant, context.tenant_embedder(tenant))
        server.wait_idle()
        repairs_hits = server.statuses("/repairs/")
    assert summary.failed == 0 and summary.errors == {}, summary
    assert summary.recovered_later == 2 and summary.retried_later >= 3, summary
    assert repairs_hits == {503: 4, 200: 1}
    assert {"/repairs/", "/about/"} <= active_paths(tenant, server)
    context.close()


def test_no_page_is_lost_while_another_thread_holds_the_gil(tmp_path):
    """The event loop shut out for ~0.8 s at a time (a CPU-bound thread that holds the GIL, as
    embedding and extraction threads do in bursts): with one attempt per page, a 0.4 s deadline
    and no later retries, only the deadline that leaves the loop's lost time out keeps every page.
    (0.4 s, not less: the site's server shares the GIL and the machine may be busy with more.)"""
    from app.context import Context
    from app.settings import Settings

    context = Context(Settings(data_dir=str(tmp_path / "data")))
    with serve_bikeclub() as server:
        tenant, _ = context.create_tenant("club", server.url + "/", allow_private_network=True)
        crawl_settings(tenant, retries=1, timeout=0.4, later_retries=0)
        embedder = context.tenant_embedder(tenant)
        embedder.warm_up()
        with GilHog(stretch=0.8) as hog:
            summary = run(tenant, embedder)
    assert hog.stretches >= 3
    assert summary.status == "done" and summary.failed == 0 and summary.errors == {}, (
        summary.status, summary.failed, summary.errors, summary.loop_stalled_s)
    assert set(REAL_PAGES) <= active_paths(tenant, server)
    context.close()


@pytest.fixture(scope="module")
def bikeclub(tmp_path_factory):
    """The bike-club site crawled once with junk detection on (the default)."""
    from app.context import Context
    from app.settings import Settings

    data = tmp_path_factory.mktemp("club") / "data"
    context = Context(Settings(data_dir=str(data)))
    with serve_bikeclub() as server:
        tenant, _ = context.create_tenant("club", server.url + "/", allow_private_network=True)
        summary = run(tenant, context.tenant_embedder(tenant))
        server.wait_idle()
        yield context, tenant, server, summary, data
    context.close()


def test_the_calendar_chain_is_capped_early_with_the_reason_recorded(bikeclub):
    context, tenant, server, summary, _ = bikeclub
    assert summary.status == "done" and summary.failed == 0, summary
    # A handful of month pages fetched, not the chain down to max_depth; none of them indexed.
    assert 3 <= len(calendar_hits(server)) <= 6, calendar_hits(server)
    assert not [path for path in active_paths(tenant, server) if path.startswith("/events/20")]
    assert summary.junk["junk_calendar"] >= 4 and summary.skipped_junk == sum(summary.junk.values())
    junk = junk_summary(tenant.reader())
    families = {f.family.removeprefix(server.url.removeprefix("http://")): f for f in junk.families}
    calendar = families["/events/{date}/{date}/"]
    assert calendar.reason == "junk_calendar" and calendar.urls >= 4 and "add no text of their own" in calendar.detail
    reasons = dict(tenant.reader().execute("SELECT url, gone_reason FROM pages WHERE status = 'gone'").fetchall())
    assert reasons and set(reasons.values()) <= {"junk_calendar", "junk_query"}  # indexed, then judged
    assert summary.removed == 0  # junk is not counted as pages gone from the site


def test_faceted_shop_filters_are_kept_out_and_the_shop_stays(bikeclub):
    _, tenant, server, summary, _ = bikeclub
    assert summary.junk["junk_query"] >= 3
    shop_pages = [path for path in active_paths(tenant, server) if path.startswith("/shop/")]
    assert shop_pages == ["/shop/"]
    requested = {hit.path + "?" + hit.query for hit in server.hits("/shop/") if hit.query}
    assert len(requested) <= 8, requested  # of 80-odd filter combinations


def test_every_real_page_is_indexed_paginated_guide_and_dated_posts_included(bikeclub):
    _, tenant, server, _, _ = bikeclub
    assert set(REAL_PAGES) <= active_paths(tenant, server)


def test_group_ride_roles_rank_first_and_no_calendar_page_answers(bikeclub):
    context, tenant, server, _, _ = bikeclub
    hits = context.search(tenant, "what roles are there on a group ride?", k=5).hits
    assert hits[0].url == server.url + "/rides/roles/"
    for question in ("what is the capital of France?", "how do I renew my passport?",
                     "are new riders introduced to the ride leader?", "when is the next club ride?"):
        hits = context.search(tenant, question, k=10).hits
        assert not [h.url for h in hits if "/events/20" in h.url], question
    hits = context.search(tenant, "how much is a hydraulic brake bleed?", k=3).hits
    assert hits[0].url == server.url + "/repairs/" and "$45" in hits[0].text


def test_stats_show_the_junk_in_the_cli_and_the_admin_api(bikeclub):
    _, _, server, _, data = bikeclub
    env = {**os.environ, "FRONTDESK_DATA_DIR": str(data)}
    shown = subprocess.run([sys.executable, "-m", "app", "stats", "club"], env=env, cwd=ROOT,
                           capture_output=True, text=True, check=True).stdout
    assert "URLs kept out of the index" in shown and "/events/{date}/{date}/" in shown
    import json

    document = json.loads(subprocess.run([sys.executable, "-m", "app", "stats", "club", "--json"], env=env,
                                         cwd=ROOT, capture_output=True, text=True, check=True).stdout)
    assert document["junk"]["by_reason"]["junk_calendar"] >= 4
    import httpx

    with run_server(data, admin_token="admin-secret") as base:
        body = httpx.get(f"{base}/admin/tenants/club/stats", headers={"Authorization": "Bearer admin-secret"},
                         timeout=30).json()
    assert body["junk"]["total"] == document["junk"]["total"]
    assert {f["reason"] for f in body["junk"]["families"]} == {"junk_calendar", "junk_query"}


def test_a_delta_recrawl_refuses_known_junk_without_fetching_it(bikeclub):
    context, tenant, server, _, _ = bikeclub
    before = junk_summary(tenant.reader())
    # The home and events pages changed (a delta crawl follows links only from changed pages).
    for path in ("/", "/events/"):
        changed = server.lookup(path)
        server.files[path] = changed[0].replace(b"</main>", b"<p>Spring rides start in March.</p></main>")
    server.reset()
    summary = run(tenant, context.tenant_embedder(tenant))
    server.wait_idle()
    assert summary.status == "done" and summary.fetched == 2 and summary.failed == 0, summary
    assert calendar_hits(server) == [] and not [h for h in server.hits("/shop/") if h.query]
    # This month's page (linked from /events/) and the filters of the shop (served without
    # validators, so read again) are refused unfetched.
    assert summary.junk["junk_calendar"] == 1 and summary.junk["junk_query"] >= 3, summary.junk
    assert junk_summary(tenant.reader()).by_reason == before.by_reason  # a delta run adds, never wipes


def test_without_junk_detection_the_calendar_floods_the_index(tmp_path):
    """The control: the same site with detection off indexes the calendar down to max_depth."""
    from app.context import Context
    from app.settings import Settings

    context = Context(Settings(data_dir=str(tmp_path / "data")))
    with serve_bikeclub() as server:
        tenant, _ = context.create_tenant("club", server.url + "/", allow_private_network=True)
        crawl_settings(tenant, junk_detection=False, max_depth=6)
        summary = run(tenant, context.tenant_embedder(tenant))
        calendar = [p for p in active_paths(tenant, server) if p.startswith("/events/20")]
    assert summary.skipped_junk == 0 and len(calendar) >= 8, (summary, calendar)
    context.close()


def test_a_crawl_that_reaches_its_page_limit_says_so_in_the_cli_and_the_console(tmp_path):
    """A site with more pages than crawl.max_pages: the crawl's summary, the CLI and the console
    say that the limit stopped it, how many URLs were left and where to raise it, rather than only
    counting `skipped: max_pages`."""
    import json
    import re

    import httpx

    from app.context import Context
    from app.settings import Settings

    data = tmp_path / "data"
    context = Context(Settings(data_dir=str(data)))
    env = {**os.environ, "FRONTDESK_DATA_DIR": str(data)}
    with serve_bikeclub() as server:
        tenant, _ = context.create_tenant("limited", server.url + "/", allow_private_network=True)
        crawl_settings(tenant, max_pages=4)
        context.close()
        done = subprocess.run([sys.executable, "-m", "app", "crawl", "limited", "--json", "--rate", "100"], env=env,
                              cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["page_limit"] == 4 and summary["skipped"]["max_pages"] > 0, summary
    left = summary["skipped"]["max_pages"]
    assert f"The crawl stopped at its page limit (crawl.max_pages = 4): {left} more URL" in done.stderr
    assert "Raise crawl.max_pages" in done.stderr

    with run_server(data, admin_token="admin-secret") as base, httpx.Client(base_url=base, timeout=30) as client:
        form = client.get("/console/login")
        csrf = re.search(r'name="_csrf" value="([^"]+)"', form.text).group(1)
        signed = client.post("/console/login", data={"_csrf": csrf, "token": "admin-secret", "next": "/console"})
        assert signed.status_code == 303, signed.text
        for path in ("/console/t/limited", "/console/t/limited/coverage"):
            notice = re.search(r'<p class="warn" role="status" id="page-limit">(.*?)</p>', client.get(path).text, re.S)
            assert notice is not None, path
            text = re.sub(r"<[^>]+>", "", notice.group(1))
            assert f"{left} more URLs of the site were found and not crawled" in text
            assert "crawl.max_pages) is now 4" in text and 'href="/console/t/limited/config"' in notice.group(1)


def test_a_crawl_within_its_page_limit_has_no_limit_to_report(crawled):
    *_, summary = crawled
    assert summary.page_limit == 0 and "max_pages" not in summary.skipped


def test_a_folder_page_whose_canonical_names_no_file_keeps_its_own_url(ctx, tmp_path: Path):
    """A saved page may name a canonical that is not in the folder ("page_files/copy_002.html"):
    indexed under it, every citation of the page would lead nowhere. A canonical that names one of
    the folder's files (a directory's index.html included) is still the page's identity."""
    from ingest.folder import index_folder

    root = tmp_path / "site"
    (root / "guide").mkdir(parents=True)
    page = ("<html><head><title>{title}</title><link rel='canonical' href='{canonical}'></head>"
            "<body><main><h1>{title}</h1><p>{text}</p></main></body></html>")
    (root / "saved.html").write_text(page.format(
        title="Ramen bowl", canonical="saved_files/ramen-bowl_002.html",
        text="Simmer the broth for twenty minutes, then add the escarole and the noodles."))
    (root / "guide" / "index.html").write_text(page.format(
        title="Packaging guide", canonical="http://127.0.0.1:8799/guide/",
        text="Build a wheel with the build frontend, then upload it with twine."))
    tenant, _ = ctx.create_tenant("folder", "http://127.0.0.1:8799/")
    summary = index_folder(tenant, ctx.tenant_embedder(tenant), root, "http://127.0.0.1:8799/")
    assert summary.indexed == 2
    with tenant.reading() as conn:
        urls = {url for url, state in tenant.store.pages.page_states(conn).items() if state.status == "active"}
    assert urls == {"http://127.0.0.1:8799/saved.html", "http://127.0.0.1:8799/guide/"}


def test_a_crawled_page_whose_canonical_is_missing_keeps_its_own_url(ctx):
    """A canonical that names a missing page (a template's wrong path) is asked for once; the page
    that names it stays under its own URL, so its citations lead somewhere. A canonical that is
    there is still the identity of the pages that name it."""
    page = ("<html><head><title>{title}</title><link rel='canonical' href='{canonical}'></head><body><main>"
            "<h1>{title}</h1><p>{text}</p>{links}</main></body></html>")
    with serve_site() as site:
        site.files["/"] = page.format(title="Home", canonical="/", text="Welcome to the harbour bakery.",
                                      links="<a href='/saved.html'>a</a> <a href='/a.html'>b</a>").encode()
        site.files["/saved.html"] = page.format(
            title="Sourdough", canonical="/saved_files/copy_002.html", links="",
            text="Our sourdough ferments for thirty-six hours before it is baked at dawn.").encode()
        site.files["/a.html"] = page.format(title="Rye", canonical="/rye.html", links="",
                                            text="The seeded rye is baked on Tuesdays and Fridays.").encode()
        site.files["/rye.html"] = site.files["/a.html"]
        tenant, _ = ctx.create_tenant("canon", site.url + "/", allow_private_network=True)
        summary = run(tenant, ctx.tenant_embedder(tenant))
        asked = len(site.hits("/saved_files/copy_002.html"))
    with tenant.reading() as conn:
        active = {url.removeprefix(site.url) for url, state in tenant.store.pages.page_states(conn).items()
                  if state.status == "active"}
    assert summary.failed == 0, summary
    assert active == {"/", "/saved.html", "/rye.html"}, active
    assert asked == 1
