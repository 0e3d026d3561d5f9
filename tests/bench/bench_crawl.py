"""Ingestion benchmarks (README.md, "Speed"): a full crawl of the fastapi fixture over 127.0.0.1
(politeness off, default embedder, 2 cores) in pages/min, an unchanged recrawl (time, requests,
chunks embedded), and a recrawl after one page changed."""

from __future__ import annotations

import asyncio
import os
import shutil
import tempfile
import time
from pathlib import Path

from app.context import Context
from app.settings import Settings
from ingest.pipeline import CrawlOptions, crawl
from tests.bench.common import print_table, rss_mb
from tests.conftest import FASTAPI, FASTAPI_ORIGIN
from tests.sitesrv import serve_site


def _run(tenant, embedder, **options):
    started = time.perf_counter()
    summary = asyncio.run(crawl(tenant, embedder, CrawlOptions(rate=0, **options)))
    return summary, time.perf_counter() - started


def run(quick: bool = False) -> dict:
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
            summary, seconds = _run(tenant, embedder, max_pages=max_pages)
            pages = summary.fetched
            rows.append({"run": "full crawl (cold)", "pages": pages, "requests": len(server.requests) - before,
                         "chunks_embedded": summary.chunks_embedded, "seconds": round(seconds, 1),
                         "pages_per_min": round(pages / seconds * 60, 1), "failed": summary.failed,
                         "errors": summary.errors})

            before = len(server.requests)
            summary, seconds = _run(tenant, embedder, max_pages=max_pages)
            hits = server.requests[before:]
            rows.append({"run": "unchanged recrawl", "pages": summary.pages_found, "requests": len(hits),
                         "bodies": sum(1 for h in hits if h.status == 200 and h.body_bytes > 0),
                         "chunks_embedded": summary.chunks_embedded, "seconds": round(seconds, 2),
                         "not_modified": summary.not_modified, "failed": summary.failed, "errors": summary.errors})

            page = site / "tutorial" / "first-steps" / "index.html"
            page.write_text(page.read_text().replace("</h1>", "</h1><p>One new paragraph for the benchmark.</p>", 1))
            future = time.time() + 60
            os.utime(page, (future, future))
            before = len(server.requests)
            summary, seconds = _run(tenant, embedder, max_pages=max_pages)
            rows.append({"run": "one page changed", "pages": summary.pages_found, "requests": len(server.requests) - before,
                         "chunks_embedded": summary.chunks_embedded, "seconds": round(seconds, 2),
                         "fetched": summary.fetched, "failed": summary.failed, "errors": summary.errors})
        chunks = tenant.reader().execute("SELECT count(*) FROM chunks").fetchone()[0]
        links = tenant.reader().execute("SELECT count(*) FROM page_chunks").fetchone()[0]
        context.close()
    print_table("Crawl of the fastapi fixture (en/es/de) over 127.0.0.1, politeness off, default embedder",
                rows, ["run", "pages", "requests", "bodies", "not_modified", "fetched", "chunks_embedded",
                       "seconds", "pages_per_min", "failed", "errors"])
    print(f"\ndistinct chunks stored: {chunks}; page↔chunk links: {links} "
          f"(dedupe saved {links - chunks} embeddings); RSS {rss_mb():.0f} MB")
    return {"runs": rows, "chunks": chunks, "chunk_links": links, "bar_pages_per_min": 300}
