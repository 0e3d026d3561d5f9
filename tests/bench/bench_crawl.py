"""Ingestion benchmarks (README.md, "Speed"): a full crawl of the fastapi fixture over 127.0.0.1
(politeness off, default embedder, 2 cores) in pages/min, with time to answerable (seconds from
the crawl's start until a golden question about one of its pages is answered correctly through
the answer path, asked once a second while it crawls) and pages/min searchable (written with
their text) beside pages/min embedded (every vector in); an unchanged recrawl (time, requests,
chunks embedded), a recrawl after one page changed, and a crawl of the bike-club site, whose
calendar and shop filters are junk (pages and requests spent on it, URLs kept out)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import tempfile
import time
from pathlib import Path

from app.context import Context
from app.settings import Settings
from ingest.pipeline import CrawlOptions, crawl
from tests.bench.common import print_table, rss_mb
from tests.bikeclub import calendar_hits, serve_bikeclub
from tests.conftest import FASTAPI, FASTAPI_ORIGIN
from tests.sitesrv import serve_site

#: What `frontdesk crawl` and `serve` give a crawl on this machine (Settings.crawl_processes).
PAGE_PROCESSES = Settings.from_env().page_processes


def _run(tenant, embedder, **options):
    started = time.perf_counter()
    summary = asyncio.run(crawl(tenant, embedder, CrawlOptions(rate=0, **options), page_processes=PAGE_PROCESSES))
    return summary, time.perf_counter() - started


#: The golden question asked while the cold crawl runs (tests/eval/fastapi.jsonl, the first
#: answerable one): its page sits at 105 of the sitemap's 155 URLs, so it is neither the first
#: page written nor left out of the quick run's 120.
PROBE = "how do I run a task after returning the response, like sending an email"


def _probe_item():
    from app.eval.golden import load_golden

    return next(item for item in load_golden(Path(__file__).resolve().parents[1] / "eval" / "fastapi.jsonl")
                if item.q == PROBE)


def _answered_correctly(found, site: str, item) -> bool:
    from urllib.parse import urljoin

    from app.eval.golden import contains_expected, normalise_url

    expected = {normalise_url(urljoin(site, u)) for u in item.expect_url}
    cited = {normalise_url(c.url) for c in found.citations}
    return bool(found.answered and contains_expected(found.answer, item) and cited & expected)


def _cold_crawl(context, tenant, embedder, max_pages: int | None) -> tuple[object, float, dict]:
    """The cold crawl with the probe question asked once a second through the same answer path
    a visitor's question takes (no cache, nothing persisted). Returns the summary, the seconds,
    and the timings: time to answerable, and when the last page was searchable and embedded."""
    from app.events import ChatRequest
    from app.stack import answer_stack
    from store.errors import FrontdeskError

    item = _probe_item()
    site = tenant.config().site
    timings: dict = {"answerable_s": None, "searchable_s": None, "embedded_s": None, "probes": 0, "probe_errors": 0}

    def on_progress(event) -> None:
        # Searchable: the fetch stage wrote its last page (the code before deferred embedding has
        # no such moment: every page is searchable when it is embedded, at the end).
        if getattr(event, "phase", "") in ("embedding", "removing", "done") and timings["searchable_s"] is None:
            timings["searchable_s"] = time.perf_counter() - started

    async def main():
        stack = answer_stack(context)
        done = asyncio.Event()

        async def probe() -> None:
            while not done.is_set():
                try:
                    found = await stack.answerer.answer(tenant, ChatRequest(key=tenant.widget_key, question=item.q),
                                                        persist=False, use_cache=False)
                except FrontdeskError:  # a search over its time limit on a starved machine: ask again
                    timings["probe_errors"] += 1
                    continue
                timings["probes"] += 1
                if _answered_correctly(found, site, item):
                    timings["answerable_s"] = time.perf_counter() - started
                    return
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(done.wait(), 1.0)

        prober = asyncio.create_task(probe())
        try:
            return await crawl(tenant, embedder, CrawlOptions(rate=0, max_pages=max_pages), on_progress=on_progress,
                               page_processes=PAGE_PROCESSES)
        finally:
            done.set()
            await prober
            await stack.aclose()

    started = time.perf_counter()
    summary = asyncio.run(main())
    seconds = time.perf_counter() - started
    timings["embedded_s"] = seconds
    if timings["searchable_s"] is None:
        timings["searchable_s"] = seconds
    if timings["answerable_s"] is None:  # answered only after the crawl: ask once more now
        from app.stack import answer_stack as stack_for

        async def last() -> bool:
            stack = stack_for(context)
            try:
                found = await stack.answerer.answer(tenant, ChatRequest(key=tenant.widget_key, question=item.q),
                                                    persist=False, use_cache=False)
            finally:
                await stack.aclose()
            return _answered_correctly(found, site, item)

        if asyncio.run(last()):
            timings["answerable_s"] = time.perf_counter() - started
    return summary, seconds, timings


def _later(summary) -> dict:
    """A run's later retries and the junk it kept out."""
    return {"retried_later": summary.retried_later, "recovered_later": summary.recovered_later,
            "loop_stalled_s": summary.loop_stalled_s, "skipped_junk": summary.skipped_junk, "junk": summary.junk or ""}


def run(quick: bool = False, render: bool = False) -> dict:
    if render:  # `crawl --render`: the JavaScript-pages benchmark instead
        return run_render(quick)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        site = Path(tmp) / "fastapi"
        shutil.copytree(FASTAPI, site)
        context = Context(Settings(data_dir=str(Path(tmp) / "data")))
        with serve_site(site, FASTAPI_ORIGIN) as server:
            tenant, _ = context.create_tenant("fastapi", server.url + "/", allow_private_network=True)
            embedder = context.tenant_embedder(tenant)
            embedder.warm_up()
            max_pages = 120 if quick else None
            before = len(server.requests)
            summary, seconds, timings = _cold_crawl(context, tenant, embedder, max_pages)
            pages = summary.fetched
            answerable = timings["answerable_s"]
            rows.append({"run": "full crawl (cold)", "pages": pages, "requests": len(server.requests) - before,
                         "chunks_embedded": summary.chunks_embedded, "seconds": round(seconds, 1),
                         "pages_per_min": round(pages / seconds * 60, 1),
                         "answerable_s": round(answerable, 1) if answerable is not None else None,
                         "searchable_per_min": round(pages / timings["searchable_s"] * 60, 1),
                         "embedded_per_min": round(pages / timings["embedded_s"] * 60, 1),
                         "probes": timings["probes"], "probe_errors": timings["probe_errors"],
                         "failed": summary.failed,
                         "errors": summary.errors, **_later(summary)})

            before = len(server.requests)
            summary, seconds = _run(tenant, embedder, max_pages=max_pages)
            hits = server.requests[before:]
            rows.append({"run": "unchanged recrawl", "pages": summary.pages_found, "requests": len(hits),
                         "bodies": sum(1 for h in hits if h.status == 200 and h.body_bytes > 0),
                         "chunks_embedded": summary.chunks_embedded, "seconds": round(seconds, 2),
                         "not_modified": summary.not_modified, "failed": summary.failed, "errors": summary.errors,
                         **_later(summary)})

            page = site / "tutorial" / "first-steps" / "index.html"
            page.write_text(page.read_text().replace("</h1>", "</h1><p>One new paragraph for the benchmark.</p>", 1))
            future = time.time() + 60
            os.utime(page, (future, future))
            before = len(server.requests)
            summary, seconds = _run(tenant, embedder, max_pages=max_pages)
            rows.append({"run": "one page changed", "pages": summary.pages_found, "requests": len(server.requests) - before,
                         "chunks_embedded": summary.chunks_embedded, "seconds": round(seconds, 2),
                         "fetched": summary.fetched, "failed": summary.failed, "errors": summary.errors,
                         **_later(summary)})
        chunks = tenant.reader().execute("SELECT count(*) FROM chunks").fetchone()[0]
        links = tenant.reader().execute("SELECT count(*) FROM page_chunks").fetchone()[0]

        with serve_bikeclub() as club:
            tenant, _ = context.create_tenant("club", club.url + "/", allow_private_network=True)
            summary, seconds = _run(tenant, embedder)
            club.wait_idle()
            rows.append({"run": "bike club (calendar trap)", "pages": summary.fetched, "requests": len(club.requests),
                         "calendar_requests": len(calendar_hits(club)), "chunks_embedded": summary.chunks_embedded,
                         "seconds": round(seconds, 1), "failed": summary.failed, "errors": summary.errors,
                         **_later(summary)})
        context.close()
    print_table("Crawl of the fastapi fixture (en/es/de) over 127.0.0.1, politeness off, default embedder",
                rows, ["run", "pages", "requests", "bodies", "not_modified", "fetched", "chunks_embedded",
                       "seconds", "pages_per_min", "answerable_s", "searchable_per_min", "embedded_per_min", "failed", "errors", "retried_later", "recovered_later", "loop_stalled_s",
                       "calendar_requests", "skipped_junk", "junk"])
    print(f"\ndistinct chunks stored: {chunks}; page↔chunk links: {links} "
          f"(dedupe saved {links - chunks} embeddings); RSS {rss_mb():.0f} MB; "
          f"page processes {PAGE_PROCESSES} (FRONTDESK_CRAWL_PROCESSES)")
    print(f"answerable_s: seconds from the cold crawl's start until {PROBE!r} was answered correctly "
          "(answered, its expected page cited, the expected words in the answer), asked once a second; "
          "searchable_per_min: pages over the seconds until the last was written with its text; "
          "embedded_per_min: pages over the seconds until every vector was in")
    return {"runs": rows, "chunks": chunks, "chunk_links": links, "page_processes": PAGE_PROCESSES,
            "bar_pages_per_min": 300,
            "probe_question": PROBE, "bar_answerable_s": 60, "bar_searchable_per_min": 600}


# -- `python -m tests.bench crawl --render`: JavaScript pages -----------------------------------


class _PeakMemory:
    """Peak memory of this process and everything it started (the Playwright driver, Chromium
    and its renderers), sampled every 100 ms: proportional set size where /proc has it."""

    def __init__(self) -> None:
        import threading

        self.peak_mb = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def __enter__(self) -> _PeakMemory:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        self._thread.join()

    def reset(self) -> None:
        self.peak_mb = 0.0

    def _sample(self) -> None:
        from ingest.render.browser import process_tree_mb

        while not self._stop.wait(0.1):
            self.peak_mb = max(self.peak_mb, process_tree_mb(os.getpid()))


def _bigger_spa(target: Path, products: int) -> list[str]:
    """The fixture app with ``products`` products and no hostile pages in its sitemap; returns
    the product routes."""
    import json

    from tests.spa import ORIGIN
    from tests.spa import ROOT as SPA

    shutil.copytree(SPA, target, ignore=shutil.ignore_patterns("__pycache__", "*.py"))
    base = json.loads((SPA / "data" / "products.json").read_text())
    items = []
    for i in range(products):
        item = dict(base[i % len(base)])
        item["slug"] = f"{item['slug']}-{i}"
        item["name"] = f"{item['name']} no. {i}"
        item["description"] = f"{item['description']} Edition {i} of the collection."
        items.append(item)
        (target / "data" / "prices" / f"{item['slug']}.json").write_text(
            json.dumps({"price": f"{50 + i}.00", "currency": "EUR", "availability": "InStock"}))
    (target / "data" / "products.json").write_text(json.dumps(items))
    routes = [f"/products/{item['slug']}" for item in items]
    pages = ["/", "/products/", "/about", "/guides/", "/contact", *routes]
    (target / "sitemap.xml").write_text(
        '<?xml version="1.0" encoding="UTF-8"?>\n<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n'
        + "".join(f"  <url><loc>{ORIGIN}{p}</loc></url>\n" for p in pages) + "</urlset>\n")
    return routes


def _detector_on_static_sites() -> list[dict]:
    from ingest.render.shell import detect_shell
    from tests.conftest import PYPUG

    rows = []
    for name, root in (("pypug", PYPUG), ("fastapi", FASTAPI)):
        pages = sorted(root.rglob("*.html"))
        texts = [p.read_bytes().decode("utf-8", "replace") for p in pages]
        started = time.perf_counter()
        verdicts = [detect_shell(text) for text in texts]
        ms = (time.perf_counter() - started) * 1000 / len(texts)
        reasons: dict[str, int] = {}
        for verdict in verdicts:
            reasons[verdict.reason] = reasons.get(verdict.reason, 0) + 1
        rows.append({"site": name, "pages": len(pages), "false_renders": sum(v.render for v in verdicts),
                     "reasons": reasons, "ms_per_page": round(ms, 2)})
    return rows


def _installed_kib(package: str) -> int | None:
    import subprocess

    done = subprocess.run(["dpkg-query", "-Wf", "${Installed-Size}", package], capture_output=True, text=True)
    return int(done.stdout) if done.returncode == 0 and done.stdout.strip().isdigit() else None


def _snapshot(tenant, origin: str) -> dict[str, bytes]:
    """Each indexed page's cached HTML (the rendered DOM) by path, plus robots.txt and a sitemap:
    the same site as static pages."""
    import zlib

    files = {}
    for url, html in tenant.reader().execute(
            "SELECT p.url, h.html FROM pages p JOIN page_html h ON h.page_id = p.id WHERE p.status = 'active'"):
        files[url.removeprefix(origin) or "/"] = zlib.decompress(html)
    files["/robots.txt"] = b"User-agent: *\nDisallow: /private/\n"
    files["/sitemap.xml"] = (
        '<?xml version="1.0" encoding="UTF-8"?>\n<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n'
        + "".join(f"  <url><loc>{{origin}}{path}</loc></url>\n" for path in files if path.endswith("/") or "." not in path)
        + "</urlset>\n").encode()
    return files


def run_render(quick: bool = False) -> dict:
    """The fixture single-page app (tests/spa/, grown to 100 products) crawled over 127.0.0.1 with
    crawl.render = auto (every page rendered in Chromium) and, for comparison, the same pages as
    static HTML (the rendered DOMs served as files: the HTTP path, no browser) and the app's
    shells read as served (render = never); politeness off, the default embedder; peak memory of
    each crawl; and the auto detector's verdicts on every page of the static fixture sites."""
    import statistics

    import msgspec

    from tests.spa import serve_spa

    products = 20 if quick else 100
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        site = Path(tmp) / "spa"
        routes = _bigger_spa(site, products)
        context = Context(Settings(data_dir=str(Path(tmp) / "data")))

        def crawl_row(label: str, server, mode: str) -> tuple[dict, object]:
            tenant, _ = context.create_tenant(f"spa-{mode}-{len(rows)}", server.url + "/", allow_private_network=True)
            config = tenant.config()
            tenant.set_config(msgspec.structs.replace(config, crawl=msgspec.structs.replace(config.crawl, render=mode)))
            embedder = context.tenant_embedder(tenant)
            embedder.warm_up()
            memory.reset()
            before = len(server.requests)
            summary, seconds = _run(tenant, embedder)
            render_ms = [r[0] for r in tenant.reader().execute(
                "SELECT render_ms FROM render_decisions WHERE render_ms IS NOT NULL")]
            chunks = tenant.reader().execute("SELECT count(*) FROM chunks").fetchone()[0]
            pages = sum(summary.render.get(k, 0) for k in ("static", "rendered", "render_discarded"))
            return {"run": label, "render": mode, "pages": pages, "requests": len(server.requests) - before,
                    "chunks": chunks, "seconds": round(seconds, 1), "pages_per_min": round(pages / seconds * 60, 1),
                    "render_ms_p50": round(statistics.median(render_ms)) if render_ms else None,
                    "browser_peak_mb": summary.render.get("browser_peak_mb"), "peak_mb": round(memory.peak_mb),
                    "failed": summary.failed,
                    "decisions": {k: v for k, v in summary.render.items()
                                  if k in ("static", "rendered", "render_discarded", "render_failed")}}, tenant

        with _PeakMemory() as memory:
            with serve_spa(site, routes) as server:
                row, rendered = crawl_row("the app, rendered", server, "auto")
                rows.append(row)
                snapshot = _snapshot(rendered, server.url)
                rows.append(crawl_row("the app's shells as served", server, "never")[0])
            with serve_site(None) as static:
                for path, body in snapshot.items():
                    static.files[path] = body.replace(b"{origin}", static.url.encode())
                rows.append(crawl_row("the same pages as static HTML", static, "auto")[0])
        context.close()
    detector = _detector_on_static_sites()
    print_table(f"The fixture single-page app ({products} products) over 127.0.0.1, politeness off, default embedder",
                rows, ["run", "render", "pages", "requests", "chunks", "seconds", "pages_per_min", "render_ms_p50",
                       "browser_peak_mb", "peak_mb", "failed", "decisions"])
    print_table("crawl.render = auto: the shell detector on every page of the static fixture sites",
                detector, ["site", "pages", "false_renders", "reasons", "ms_per_page"])
    sizes = {name: _installed_kib(name) for name in ("chromium", "chromium-common")}
    print(f"\npeak_mb: this process + Playwright's driver + Chromium, PSS; browser_peak_mb: Chromium alone "
          f"(its processes' PSS after each page). Installed size (dpkg): {sizes} KiB")
    return {"runs": rows, "detector": detector, "installed_kib": sizes}
