"""Answerable while it crawls (issue 15, item 1): pages written before their vectors are found by
BM25 and answered from at once, the embedding stage fills the dense side in, a kill mid-embedding
leaves a sound file that the next start finishes, and each distinct text is embedded once. Real
tenant files with sqlite-vec, the real ONNX model, real fixture pages."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
import time

import apsw
import numpy as np
import pytest

from ingest.document import Document, Section
from ingest.embed_stage import EmbedStage, pending_embedder
from ingest.extract import extract
from ingest.indexer import PageIndexer
from ingest.pipeline import CrawlOptions, crawl
from store import migrations, vector_index
from store.connect import open_connection
from store.pages import stats
from store.pending import pending_count
from store.search import cosine_similarities, search
from tests.conftest import FASTAPI, FASTAPI_ORIGIN, PYPUG, ROOT
from tests.sitesrv import serve_site

pytestmark = pytest.mark.slow

PROBE = "how do I run a task after returning the response, like sending an email"
PAGES = ("tutorial/cors/", "tutorial/static-files/", "tutorial/background-tasks/")  # the answer's page last


def index_pending(ctx, tenant_id: str, pages=PAGES):
    """A fastapi tenant with `pages` written as a crawl writes them: text now, vectors later."""
    tenant, _ = ctx.create_tenant(tenant_id, FASTAPI_ORIGIN + "/", allow_private_network=True)
    embedder = ctx.tenant_embedder(tenant)
    indexer = PageIndexer(tenant, embedder, defer_vectors=True)
    for path in pages:
        html = (FASTAPI / path / "index.html").read_bytes()
        stats = indexer.index(extract(html, FASTAPI_ORIGIN + "/" + path), html=html)
        assert stats.chunks_added == stats.chunks_pending > 0
    return tenant, embedder


def counts(conn: apsw.Connection) -> tuple[int, int, int, int]:
    """(chunks, vectors, pending, chunks both with a vector and pending)."""
    one = lambda sql: conn.execute(sql).fetchone()[0]  # noqa: E731
    return (one("SELECT count(*) FROM chunks"), one("SELECT count(*) FROM chunk_vec"),
            one("SELECT count(*) FROM chunk_pending"),
            one("SELECT count(*) FROM chunk_pending p JOIN chunk_vec v ON v.rowid = p.chunk_id"))


def assert_sound(conn: apsw.Connection) -> None:
    """Integrity, FTS in step with chunks, and every chunk with exactly one of: a vector, a pending entry."""
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    conn.execute("INSERT INTO chunk_fts(chunk_fts, rank) VALUES ('integrity-check', 1)")
    chunks, vectors, pending, both = counts(conn)
    assert (chunks, both) == (vectors + pending, 0)
    assert conn.execute("SELECT count(*) FROM chunk_vec WHERE rowid NOT IN (SELECT id FROM chunks)").fetchone()[0] == 0


def ask(ctx, tenant, question: str):
    from app.events import ChatRequest
    from app.stack import answer_stack

    async def run():
        stack = answer_stack(ctx)
        try:
            return await stack.answerer.answer(tenant, ChatRequest(key=tenant.widget_key, question=question),
                                               persist=False, use_cache=False)
        finally:
            await stack.aclose()

    return asyncio.run(run())


def test_a_page_is_searchable_and_answered_before_its_vectors_and_dense_search_finds_it_after(ctx, monkeypatch):
    tenant, embedder = index_pending(ctx, "early")
    conn = tenant.reader()
    chunks, vectors, pending, _ = counts(conn)
    assert vectors == 0 and pending == chunks > 0
    assert_sound(conn)
    vector = embedder.embed_query(PROBE)
    target = FASTAPI_ORIGIN + "/tutorial/background-tasks/"

    # Both dense paths: vec0's scan, and the vectors held in memory.
    monkeypatch.setattr(vector_index, "REBUILD_INTERVAL_S", 0.0)
    for memory_mb in (0, 256):  # vec0's scan, then the vectors held in memory
        vector_index.configure(memory_mb)
        lexical = search(conn, PROBE, None, mode="bm25", k=5).hits
        assert lexical[0].url == target and not lexical[0].embedded
        assert search(conn, PROBE, vector, mode="dense", k=5).hits == []  # nothing to compare yet, no error
        hybrid = search(conn, PROBE, vector, mode="hybrid", k=5).hits
        assert hybrid[0].url == target and hybrid[0].similarity == 0.0 and not hybrid[0].embedded
        assert cosine_similarities(conn, vector, [h.chunk_id for h in hybrid]) == {}

    # The answer path measures the pending passages itself and answers from them.
    found = ask(ctx, tenant, PROBE)
    assert found.answered, found.answer
    assert "BackgroundTasks" in found.answer
    assert target in {c.url for c in found.citations}

    stage = EmbedStage(tenant, embedder, batch=16)
    generation = tenant.generation()
    stage.step()  # one batch in (other pages' chunks): the dense side knows them, not the answer's page
    assert 0 < counts(conn)[1] < chunks
    for memory_mb in (0, 256):  # vec0's scan, then the vectors held in memory
        vector_index.configure(memory_mb)
        hits = search(conn, PROBE, vector, mode="dense", k=200).hits
        assert len(hits) == counts(conn)[1] and all(h.embedded for h in hits) and target not in {h.url for h in hits}
        # The best BM25 candidates without vectors are measured at query time and ranked on the
        # dense side as well, so an embedded page does not outrank them for lack of a vector.
        hybrid = search(conn, PROBE, vector, mode="hybrid", k=10, embed_pending=pending_embedder(embedder)).hits
        assert hybrid[0].url == target and not hybrid[0].embedded
        assert hybrid[0].dense_rank is not None and hybrid[0].similarity > 0.3
    assert stage.drain() == chunks - 16
    assert counts(conn) == (chunks, chunks, 0, 0) and tenant.generation() > generation
    for memory_mb in (0, 256):  # vec0's scan, then the vectors held in memory
        vector_index.configure(memory_mb)
        dense = search(conn, PROBE, vector, mode="dense", k=5).hits
        assert dense[0].url == target and dense[0].embedded and dense[0].similarity > 0.3
        hybrid = search(conn, PROBE, vector, mode="hybrid", k=5).hits
        assert hybrid[0].url == target and hybrid[0].embedded and hybrid[0].dense_rank is not None
    assert stage.step() == 0


def test_while_pages_are_fetched_the_stage_embeds_only_in_the_gaps_the_page_path_leaves(ctx):
    """The page path comes first: while it is busy the stage waits, in a gap it embeds, and once
    fetching is done it embeds what is left whatever the page path says."""
    tenant, embedder = index_pending(ctx, "gaps")
    stage = EmbedStage(tenant, embedder, batch=8)
    page_path = {"busy": True}

    async def crawl_like() -> tuple[int, int]:
        fetching_done = asyncio.Event()
        task = asyncio.create_task(stage.run(fetching_done, lambda: False, busy=lambda: page_path["busy"]))
        await asyncio.sleep(1.0)
        while_busy = stage.embedded
        page_path["busy"] = False
        deadline = time.monotonic() + 60
        while stage.embedded == 0 and time.monotonic() < deadline:
            await asyncio.sleep(0.02)
        page_path["busy"] = True
        in_the_gap = stage.embedded
        fetching_done.set()
        await asyncio.wait_for(task, 300)
        return while_busy, in_the_gap

    while_busy, in_the_gap = asyncio.run(crawl_like())
    assert while_busy == 0 and in_the_gap > 0
    with tenant.reading() as conn:
        assert pending_count(conn) == 0 and stage.embedded == counts(conn)[1]


def test_passages_a_question_measured_are_not_embedded_again_by_the_stage(ctx):
    from ingest import embed_stage
    from ingest.embed_stage import chunk_embedding_text

    tenant, embedder = index_pending(ctx, "measured")
    conn = tenant.reader()
    chunks = tenant.store.pending.pending_chunks(conn, 1000)
    asked = chunks[:5]
    measured = pending_embedder(embedder)(asked)  # what a visitor's question during the crawl embeds
    embedded: list[str] = []
    real_embed = embedder.embed

    def recording(texts):
        embedded.extend(texts)
        return real_embed(texts)

    embedder.embed = recording
    try:
        stage = EmbedStage(tenant, embedder, batch=16)
        assert stage.drain() == len(chunks)
    finally:
        del embedder.embed
    assert sorted(embedded) == sorted(chunk_embedding_text(c) for c in chunks[5:])
    assert counts(conn) == (len(chunks), len(chunks), 0, 0)
    assert_sound(conn)
    for chunk, vector in zip(asked, measured, strict=True):
        stored = np.frombuffer(conn.execute("SELECT embedding FROM chunk_vec WHERE rowid = ?",
                                            (chunk.id,)).fetchone()[0], dtype=np.float32)
        assert np.allclose(stored, vector, atol=1e-6)
        assert (embedder.fingerprint, chunk.hash) not in embed_stage._measured  # handed over, not kept twice


def test_dedupe_embeds_each_distinct_text_once(ctx):
    tenant, _ = ctx.create_tenant("dedupe", "https://dedupe.test/")
    embedder = ctx.tenant_embedder(tenant)
    indexer = PageIndexer(tenant, embedder, defer_vectors=True)
    shared = "Opening hours: Monday to Friday from 8 am to 6 pm, Saturday from 9 am to noon."
    for n in range(4):
        indexer.index(Document(
            url=f"https://dedupe.test/p{n}", canonical_url=f"https://dedupe.test/p{n}", title="Bakery", lang="en",
            sections=[Section(heading_path=("Bakery",), text=f"Page {n} is about rye bread number {n}."),
                      Section(heading_path=("Hours",), text=shared)]))
    conn = tenant.reader()
    chunks, _, pending, _ = counts(conn)
    links = conn.execute("SELECT count(*) FROM page_chunks").fetchone()[0]
    assert pending == chunks < links  # the shared text is one chunk, listed once

    embedded: list[str] = []

    class Counting:  # the real model, counting what it is asked to embed
        fingerprint = embedder.fingerprint

        def embed(self, texts):
            embedded.extend(texts)
            return embedder.embed(texts)

    assert EmbedStage(tenant, Counting(), batch=3).drain() == chunks
    assert len(embedded) == len(set(embedded)) == chunks
    # A later page with the same text adds no chunk and nothing to embed.
    stats = indexer.index(Document(url="https://dedupe.test/p9", canonical_url="https://dedupe.test/p9",
                                   title="Bakery", lang="en", sections=[Section(heading_path=("Hours",), text=shared)]))
    assert (stats.chunks_added, pending_count(conn)) == (0, 0)
    assert_sound(conn)


_CHILD = """
import sys
from app.context import Context
from app.settings import Settings
from ingest.embed_stage import EmbedStage
ctx = Context(Settings(data_dir=sys.argv[1]))
tenant = ctx.tenant("killed")
EmbedStage(tenant, ctx.tenant_embedder(tenant), batch=4).drain()
"""


def test_a_kill_mid_embedding_leaves_a_sound_file_and_serve_finishes_it(ctx, data_dir):
    from app.stack import answer_stack
    from app.warm import Warmer

    tenant, _ = index_pending(ctx, "killed", PAGES[:2])
    chunks = counts(tenant.reader())[0]
    child = subprocess.Popen([sys.executable, "-c", _CHILD, str(data_dir)], cwd=ROOT,
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    db = data_dir / "tenants" / "killed.db"
    deadline = time.monotonic() + 60
    vectors = 0
    while time.monotonic() < deadline and child.poll() is None:
        time.sleep(0.05)
        conn = open_connection(db, readonly=True)
        vectors = conn.execute("SELECT count(*) FROM chunk_vec").fetchone()[0]
        conn.close()
        if vectors:
            break
    child.send_signal(signal.SIGKILL)
    _, stderr = child.communicate()
    assert 0 < vectors < chunks, stderr.decode()[-2000:]
    conn = open_connection(db)
    assert_sound(conn)
    left = counts(conn)[2]
    conn.close()
    assert 0 < left < chunks

    # `frontdesk serve` opening the tenant (app/warm.py) embeds what the kill left, off the request path.
    warmer = Warmer(ctx, answer_stack(ctx).answerer)
    try:
        warmer.warm_tenant("killed")
        deadline = time.monotonic() + 60
        while pending_count(tenant.reader()) and time.monotonic() < deadline:
            time.sleep(0.1)
    finally:
        warmer.close()
    conn = tenant.reader()
    assert counts(conn) == (chunks, chunks, 0, 0)  # none left, none twice
    assert_sound(conn)


def test_a_cancelled_crawl_says_how_many_wait_and_the_next_crawl_embeds_them(ctx, tmp_path):
    import shutil

    site = tmp_path / "site"
    shutil.copytree(PYPUG, site)
    events = []
    with serve_site(site, "http://127.0.0.1:8766") as server:
        tenant, _ = ctx.create_tenant("cancel", server.url + "/", allow_private_network=True)
        embedder = ctx.tenant_embedder(tenant)

        async def cancelled():
            cancel = asyncio.Event()

            def on_progress(event):
                events.append(event)
                if event.fetched >= 3:
                    cancel.set()

            return await crawl(tenant, embedder, CrawlOptions(rate=0), on_progress=on_progress, cancel=cancel)

        summary = asyncio.run(cancelled())
        assert summary.status == "cancelled"
        assert summary.chunks_pending == pending_count(tenant.reader()) == counts(tenant.reader())[2]
        assert summary.chunks_added == summary.chunks_embedded + summary.chunks_pending
        assert summary.chunks_pending > 0 and events[-1].chunks_pending == summary.chunks_pending
        assert stats(tenant.reader()).chunks_pending == summary.chunks_pending  # `frontdesk stats`, admin API
        assert all(isinstance(e.chunks_pending, int) for e in events)
        assert_sound(tenant.reader())

        again = asyncio.run(crawl(tenant, embedder, CrawlOptions(rate=0, max_pages=3)))
        assert again.status == "done" and again.chunks_pending == 0
        assert again.chunks_embedded >= summary.chunks_pending
        chunks = counts(tenant.reader())[0]
        assert counts(tenant.reader()) == (chunks, chunks, 0, 0)


def test_an_old_file_upgrades_and_lists_chunks_without_vectors(ctx):
    tenant, embedder = index_pending(ctx, "upgrade", PAGES[:1])
    EmbedStage(tenant, embedder).drain()
    path = tenant.path
    chunk_id = tenant.reader().execute("SELECT min(id) FROM chunks").fetchone()[0]
    ctx.registry.close("upgrade")
    conn = open_connection(path)
    with conn:  # the file as the schema before left it, one vector lost
        conn.execute("DROP TRIGGER chunks_ad_pending")
        conn.execute("DROP TABLE chunk_pending")
        conn.execute("DELETE FROM chunk_vec WHERE rowid = ?", (chunk_id,))
        migrations.set_meta(conn, schema_version=migrations.SCHEMA_VERSION - 1)
    conn.close()
    tenant = ctx.tenant("upgrade")
    assert migrations.schema_version(tenant.reader()) == migrations.SCHEMA_VERSION
    assert [r[0] for r in tenant.reader().execute("SELECT chunk_id FROM chunk_pending")] == [chunk_id]
    assert EmbedStage(tenant, embedder).drain() == 1
    assert_sound(tenant.reader())


def test_reindex_gives_pending_chunks_their_vectors_and_clears_the_list(ctx):
    from app.reindex import reindex

    tenant, _ = ctx.create_tenant("rebuild", "https://rebuild.test/")
    indexer = PageIndexer(tenant, ctx.tenant_embedder(tenant), defer_vectors=True)
    for n in range(3):
        indexer.index(Document(
            url=f"https://rebuild.test/p{n}", canonical_url=f"https://rebuild.test/p{n}", title="Garage", lang="en",
            sections=[Section(heading_path=("Brakes",), text=f"Brake pads for car model {n} are fitted in an hour.")]))
    EmbedStage(tenant, ctx.tenant_embedder(tenant), batch=1).step()  # one embedded, the rest pending
    chunks, vectors, pending, _ = counts(tenant.reader())
    assert vectors == 1 and pending == chunks - 1 > 0
    summary = reindex(ctx, "rebuild")
    assert summary.chunks == chunks
    assert counts(tenant.reader()) == (chunks, chunks, 0, 0)
    assert EmbedStage(tenant, ctx.tenant_embedder(tenant)).step() == 0  # nothing left to embed twice
    assert_sound(tenant.reader())
