"""A crawl's page process (ingest/page_procs.py): a page extracted and made ready in a child
process comes out as it does in a thread, a crawl with one stores what a crawl without stores,
and a child that dies leaves the crawl to threads with no page lost."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
import zlib
from pathlib import Path

import msgspec
import pytest

from app import workers
from app.settings import Settings
from app.workers import resolve_crawl_processes
from ingest.extract import extract
from ingest.indexer import prepare_page
from ingest.page_procs import PageProcesses
from ingest.pipeline import CrawlOptions, crawl
from store.config import CleanSettings
from store.errors import InvalidConfig
from tests.conftest import FASTAPI, PYPUG, fresh_context
from tests.sitesrv import serve_site

HOSTILE = Path(__file__).parent / "sites" / "hostile"
MODEL = "minilm-l6-v2-int8"


def _pages() -> list[Path]:
    """Every hostile page (secrets, personal data, injection in every hiding place) and every
    twelfth page of the two documentation fixtures (en/es/de, code, tables)."""
    docs = sorted(FASTAPI.rglob("*.html"))[::12] + sorted(PYPUG.rglob("*.html"))[::12]
    return sorted(HOSTILE.rglob("*.html")) + docs


def test_a_page_comes_out_of_a_page_process_as_it_does_in_a_thread(ctx):
    counter = ctx.embedder(MODEL)
    clean = CleanSettings(allow=["+1-207-555-0199"])
    pages = _pages()
    assert len(pages) > 40

    async def both() -> list[tuple]:
        compared = []
        async with PageProcesses(1, MODEL) as procs:
            for path in pages:
                body, url = path.read_bytes(), f"http://127.0.0.1:9/{path.name}"
                doc = await procs.extract(body, url, {"content-type": "text/html"}, None)
                here = extract(body, url, headers={"content-type": "text/html"}, encoding=None)
                prepared = await procs.prepare(doc, clean, 256, html=body, encoding=None, previous_hash=None)
                assert prepared is not None
                expected = prepare_page(here, clean, counter.count_tokens, 256, html=body, encoding=None)
                compared.append((path, doc, here, prepared, expected))
            assert procs.fallbacks == 0
        return compared

    for path, doc, here, prepared, expected in asyncio.run(both()):
        assert doc == here, path
        assert prepared == expected, path
        assert prepared.chunks and prepared.html is not None, path


def test_an_unchanged_page_is_not_scrubbed_again_in_a_page_process():
    body = (HOSTILE / "index.html").read_bytes()
    clean = CleanSettings()

    async def twice():
        async with PageProcesses(1, MODEL) as procs:
            doc = await procs.extract(body, "http://127.0.0.1:9/", {}, None)
            first = await procs.prepare(doc, clean, 256, html=body, encoding=None, previous_hash=None)
            again = await procs.prepare(doc, clean, 256, html=body, encoding=None, previous_hash=first.content_hash)
            return first, again

    first, again = asyncio.run(twice())
    assert first.html is not None and again.html is None  # the write only refreshes the validators
    assert again.content_hash == first.content_hash and again.chunks == first.chunks


def test_a_page_process_that_dies_leaves_the_rest_to_threads():
    body = (HOSTILE / "index.html").read_bytes()

    async def run():
        async with PageProcesses(1, MODEL) as procs:
            first = await procs.extract(body, "http://127.0.0.1:9/", {}, None)
            assert procs._pool is not None
            for pid in list(procs._pool._processes):  # the child, killed as the OOM killer would
                os.kill(pid, signal.SIGKILL)
            await asyncio.sleep(0.5)
            second = await procs.extract(body, "http://127.0.0.1:9/", {}, None)
            third = await procs.extract(body, "http://127.0.0.1:9/", {}, None)
            ready = await procs.prepare(second, CleanSettings(), 256, html=body, encoding=None, previous_hash=None)
            return first, second, third, ready, procs.fallbacks

    first, second, third, ready, fallbacks = asyncio.run(run())
    assert first == second == third
    assert fallbacks == 1 and ready is None  # the write prepares the page itself


_HOLDS_A_CHILD = """
import asyncio, sys, time
from ingest.page_procs import PageProcesses

async def main():
    procs = PageProcesses(1, "minilm-l6-v2-int8")
    await procs.extract(b"<p>Fresh bread every morning.</p>", "http://127.0.0.1:9/", {}, None)
    print(*procs._pool._processes, flush=True)
    time.sleep(60)

if __name__ == "__main__":
    asyncio.run(main())
"""


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state not in ("Z", "X")


def test_a_page_process_dies_with_the_crawls_process_when_that_is_killed(tmp_path):
    script = tmp_path / "holds_a_child.py"
    script.write_text(_HOLDS_A_CHILD)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    with subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True, env=env) as crawler:
        try:
            child = int(crawler.stdout.readline())
            assert _alive(child)
        finally:
            crawler.kill()
    deadline = time.monotonic() + 10
    while _alive(child) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _alive(child)  # not left waiting for pages forever


def _warn_from_a_child(text: str) -> bytes:
    import logging

    logging.getLogger("ingest.facts").warning("structured data of %s could not be rendered", text)
    return b"done"


def test_a_page_process_logs_through_the_crawls_own_handlers(caplog):
    async def run():
        async with PageProcesses(1, MODEL) as procs:
            done = await procs._run(_warn_from_a_child, "http://127.0.0.1:9/odd")
            await asyncio.sleep(0.3)  # the record crosses a queue
            return done

    with caplog.at_level("WARNING"):
        assert asyncio.run(run()) == b"done"
    record = next(r for r in caplog.records if r.name == "ingest.facts")
    assert record.getMessage() == "structured data of http://127.0.0.1:9/odd could not be rendered"
    assert record.process != os.getpid()


def _store(tenant) -> dict:
    """What a crawl left in the tenant file, in a comparable form."""
    reader = tenant.reader()
    pages = reader.execute("SELECT url, content_hash, lang, title FROM pages WHERE status = 'active' ORDER BY url")
    html = reader.execute("SELECT p.url, h.html, h.encoding FROM page_html h JOIN pages p ON p.id = h.page_id "
                          "ORDER BY p.url")
    chunks = reader.execute("SELECT p.url, pc.position, c.hash, c.text FROM pages p JOIN page_chunks pc "
                            "ON pc.page_id = p.id JOIN chunks c ON c.id = pc.chunk_id ORDER BY p.url, pc.position")
    contacts = reader.execute("SELECT value FROM site_contacts ORDER BY value")
    return {"pages": list(pages), "html": [(u, zlib.decompress(h), e) for u, h, e in html],
            "chunks": list(chunks), "contacts": list(contacts)}


@pytest.mark.slow
def test_a_crawl_with_a_page_process_stores_what_a_crawl_without_one_stores(tmp_path_factory):
    ctx = fresh_context(tmp_path_factory, "page-procs")
    stored = {}
    try:
        with serve_site(HOSTILE, "http://127.0.0.1:8799") as site:
            for processes in (0, 1):
                tenant, _ = ctx.create_tenant(f"p{processes}", site.url + "/", allow_private_network=True)
                config = tenant.config()  # the site's own contacts learned mid-crawl: prepared pages go stale
                tenant.set_config(msgspec.structs.replace(
                    config, clean=msgspec.structs.replace(config.clean, allow_site_contacts=True)))
                summary = asyncio.run(crawl(tenant, ctx.tenant_embedder(tenant), CrawlOptions(rate=0),
                                            page_processes=processes))
                assert summary.status == "done" and summary.failed == 0, summary
                assert summary.page_processes == processes and summary.page_process_fallbacks == 0
                stored[processes] = _store(tenant)
            # A refresh of a page or two is done in threads: a child's start costs more.
            refresh = asyncio.run(crawl(tenant, ctx.tenant_embedder(tenant), CrawlOptions(
                rate=0, full=True, urls=[site.url + "/"]), page_processes=1))
            assert refresh.status == "done" and refresh.page_processes == 0
    finally:
        ctx.close()
    assert stored[1]["contacts"] and stored[1]["pages"]
    assert stored[1] == stored[0]


def test_the_page_processes_setting(monkeypatch):
    assert Settings.from_env({}).crawl_processes == -1
    assert Settings.from_env({"FRONTDESK_CRAWL_PROCESSES": "0"}).page_processes == 0
    assert Settings.from_env({"FRONTDESK_CRAWL_PROCESSES": "3"}).page_processes == 3
    with pytest.raises(InvalidConfig, match="FRONTDESK_CRAWL_PROCESSES"):
        Settings.from_env({"FRONTDESK_CRAWL_PROCESSES": "-2"})
    # Automatic: one fewer than the cores (a cgroup's quota counts), at most two.
    for cores, expected in ((1, 0), (2, 1), (3, 2), (16, 2)):
        monkeypatch.setattr(workers, "usable_cpus", lambda cores=cores: cores)
        assert resolve_crawl_processes(-1) == expected
