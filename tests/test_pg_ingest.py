"""Ingestion on PostgreSQL (issue 17): the real ingest code — a folder index, a crawl of a site
served over HTTP on 127.0.0.1 and its delta recrawls, the embedding stage, the scheduler — writing
into a tenant schema through the store seam (`tenant.store`), with the real ONNX model. The same
expectations as the SQLite tests these mirror (tests/test_pipeline.py, tests/test_embed_stage.py),
and a folder indexed into both backends gives the same pages and chunks."""

from __future__ import annotations

import asyncio
import json
import re
import shutil
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from app.__main__ import main as cli
from ingest.crawl_report import CrawlSummary
from ingest.embed import DEFAULT_MODEL, Embedder
from ingest.embed_stage import EmbedStage, pending_embedder
from ingest.extract import extract
from ingest.folder import index_folder
from ingest.indexer import PageIndexer
from ingest.pipeline import CrawlOptions, crawl
from ingest.scheduler import Scheduler
from store.config import CrawlSettings, SiteConfig, validate_config
from store.pages import Stats
from store.tenants import Registry, Tenant
from tests.conftest import ROOT, fresh_context
from tests.sitesrv import serve_site

pytestmark = pytest.mark.slow

DEMO = ROOT / "app" / "demo" / "site"
DEMO_ORIGIN = "http://127.0.0.1:8780"  # the demo site's absolute URLs (sitemap, robots, canonicals)

#: Questions of the demo site's golden set (tests/eval/heldout/demo.jsonl) and the page that answers.
QUESTIONS = {
    "my son is allergic to sesame, which of your breads should he avoid": "/allergens.html",
    "can I return a book I bought from you": "/delivery-returns.html",
    "do you buy second hand books and what do you pay for them": "/faq.html",
}


# -- fixtures ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def ctx(tmp_path_factory):
    """The embedders (the session's model cache) and an SQLite registry on a temp data dir."""
    context = fresh_context(tmp_path_factory, "pg-ingest")
    yield context
    context.close()


@pytest.fixture(scope="module")
def embedder(ctx) -> Embedder:
    return ctx.embedder(DEFAULT_MODEL)


@pytest.fixture(scope="module")
def registry(pg_url):
    from store.pg.connect import open_pool
    from store.pg.registry import PgTenantRegistry

    registry = PgTenantRegistry(open_pool(pg_url, max_size=4))
    yield registry
    registry.close_all()
    registry.pool.close()


def create_tenant(registry: Registry, embedder: Embedder, tenant_id: str, site: str) -> Tenant:
    """A tenant as `frontdesk tenant create` makes one (app/context.py), on either backend."""
    config = validate_config(SiteConfig(site=site, name=tenant_id, model=DEFAULT_MODEL,
                                        crawl=CrawlSettings(allow_private_network=True)))
    tenant, _ = registry.create(config, tenant_id, embedder_id=embedder.id, dim=embedder.dim,
                                fingerprint=embedder.fingerprint)
    return tenant


@contextmanager
def pg_tenant(registry, embedder: Embedder, site: str) -> Iterator[Tenant]:
    """A new tenant schema with a unique id, deleted after the block."""
    tenant_id = f"ingest-{uuid.uuid4().hex[:10]}"
    tenant = create_tenant(registry, embedder, tenant_id, site)
    try:
        yield tenant
    finally:
        registry.delete(tenant_id)


def run(tenant: Tenant, embedder: Embedder, **options) -> CrawlSummary:
    return asyncio.run(crawl(tenant, embedder, CrawlOptions(rate=0, **options)))


def stats(tenant: Tenant) -> Stats:
    with tenant.reading() as conn:
        result: Stats = tenant.store.pages.stats(conn)
    return result


def one(tenant: Tenant, sql: str, params: tuple = ()):
    """One value of a query on a PostgreSQL tenant's schema."""
    with tenant.reading() as conn:
        return conn.execute(sql, params).fetchone()[0]


def vectors(tenant: Tenant) -> int:
    return int(one(tenant, "SELECT count(*) FROM chunks WHERE embedding IS NOT NULL"))


def pending(tenant: Tenant) -> int:
    with tenant.reading() as conn:
        return int(tenant.store.pending.pending_count(conn))


def active_urls(tenant: Tenant) -> set[str]:
    with tenant.reading() as conn:
        return {r[0] for r in conn.execute("SELECT url FROM pages WHERE status = 'active'").fetchall()}


def search(tenant: Tenant, embedder: Embedder, query: str, *, k: int = 5, **kwargs):
    vector = None if kwargs.get("mode") == "bm25" else embedder.embed_query(query)
    with tenant.reading() as conn:
        return tenant.store.search.search(conn, query, vector, k=k, **kwargs).hits


def sitemap_urls(root: Path, origin: str) -> set[str]:
    locs = re.findall(r"<loc>([^<]+)</loc>", (root / "sitemap.xml").read_text())
    return {u.replace(DEMO_ORIGIN, origin) for u in locs}


# -- (a) a folder into PostgreSQL and into a tenant file -----------------------------------------


@pytest.fixture(scope="module")
def folder_indexed(ctx, embedder, registry):
    """The demo site's folder indexed into a PostgreSQL tenant and into an SQLite tenant file."""
    site = DEMO_ORIGIN + "/"
    sqlite = create_tenant(ctx.registry, embedder, "demo-folder", site)
    on_file = index_folder(sqlite, embedder, DEMO, site)
    with pg_tenant(registry, embedder, site) as tenant:
        summary = index_folder(tenant, embedder, DEMO, site)
        yield tenant, summary, sqlite, on_file


def test_a_folder_indexes_into_postgres_as_into_a_tenant_file(folder_indexed):
    tenant, summary, sqlite, on_file = folder_indexed
    assert summary.files == on_file.files and summary.indexed == on_file.indexed > 15
    assert summary.chunks_embedded == on_file.chunks_embedded > 0
    pg, file = stats(tenant), stats(sqlite)
    assert (pg.pages, pg.chunks, pg.chunk_links) == (file.pages, file.chunks, file.chunk_links)
    assert (pg.by_kind, pg.by_lang, pg.facts, pg.forms) == (file.by_kind, file.by_lang, file.facts, file.forms)
    assert pg.chunks_pending == 0 and vectors(tenant) == pg.chunks  # a folder index embeds before it writes
    with sqlite.reading() as conn:
        assert active_urls(tenant) == {r[0] for r in conn.execute("SELECT url FROM pages WHERE status = 'active'")}
    assert not any("/staff/" in url for url in active_urls(tenant))  # robots.txt disallows it
    assert tenant.generation() > 0


def test_search_on_postgres_finds_the_page_that_answers(folder_indexed, embedder):
    tenant, _, sqlite, _ = folder_indexed
    for question, page in QUESTIONS.items():
        hits = search(tenant, embedder, question)
        assert hits and hits[0].url == DEMO_ORIGIN + page, (question, [h.url for h in hits])
        assert hits[0].embedded and hits[0].dense_rank is not None
        with sqlite.reading() as conn:  # the tenant file answers with the same page
            assert sqlite.store.search.search(conn, question, embedder.embed_query(question), k=5).hits[0].url \
                == hits[0].url


def test_eval_golden_runs_on_postgres_as_on_the_tenant_file(folder_indexed, ctx, pg_url, monkeypatch, capsys):
    """`frontdesk eval ID --golden FILE` with FRONTDESK_DATABASE_URL set asks the PostgreSQL tenant."""
    tenant, _, _, _ = folder_indexed
    golden = ctx.data_dir.parent / "golden.jsonl"
    lines = [json.dumps({"q": q, "expect_url": [page.lstrip("/")], "kind": "answerable"})
             for q, page in QUESTIONS.items()]
    lines.append(json.dumps({"q": "what is the airspeed of an unladen swallow", "kind": "unanswerable"}))
    golden.write_text("\n".join(lines) + "\n")
    reports = {}
    for backend, url, tenant_id in (("postgres", pg_url, tenant.id), ("sqlite", "", "demo-folder")):
        monkeypatch.setenv("FRONTDESK_DATABASE_URL", url)
        assert cli(["--data-dir", str(ctx.data_dir), "--json", "eval", tenant_id, "--golden", str(golden)]) == 0
        reports[backend] = json.loads(capsys.readouterr().out)
    post, lite = reports["postgres"], reports["sqlite"]
    assert post["questions"] == lite["questions"] == len(QUESTIONS) + 1
    assert post["metrics"]["recall_at_5"] == lite["metrics"]["recall_at_5"] == 1.0
    assert post["metrics"]["honest_refusal"] == lite["metrics"]["honest_refusal"]


def _embeddings(tenant: Tenant) -> dict[int, str]:
    with tenant.reading() as conn:
        rows = conn.execute("SELECT id, embedding::text FROM chunks WHERE embedding IS NOT NULL")
        return {int(r[0]): r[1] for r in rows}


def test_reindex_on_postgres_rebuilds_the_vectors_and_switches_the_model(ctx, embedder, registry, pg_url,
                                                                        monkeypatch, capsys):
    """`frontdesk reindex ID` on a tenant schema: with its own model the same vectors and rankings
    again; with `--model` another dimension (384 → 512), the HNSW index rebuilt, the curated
    answer's vector and the pinned model changed in one go, and search answering with the new model."""
    site = DEMO_ORIGIN + "/"
    monkeypatch.setenv("FRONTDESK_DATABASE_URL", pg_url)
    data = ["--data-dir", str(ctx.data_dir), "--json"]
    with pg_tenant(registry, embedder, site) as tenant:
        index_folder(tenant, embedder, DEMO, site)
        with tenant.write() as conn:
            tenant.store.curated.add(conn, question="Do you deliver?", normalized="do you deliver",
                                     answer="Yes, within 5 km.", urls=[], lang="en",
                                     vector=embedder.embed_query("Do you deliver?"))
        before = _embeddings(tenant)
        top = {q: search(tenant, embedder, q)[0].url for q in QUESTIONS}
        generation = tenant.generation()

        assert cli([*data, "reindex", tenant.id, "--batch", "16"]) == 0
        summary = json.loads(capsys.readouterr().out)
        assert (summary["model"], summary["previous_model"]) == (embedder.id, embedder.id)
        assert summary["chunks"] == len(before)
        assert _embeddings(tenant) == before  # one text per run: the same text gives the same vector
        assert {q: search(tenant, embedder, q)[0].url for q in QUESTIONS} == top
        assert tenant.generation() > generation
        assert one(tenant, "SELECT to_regclass('reindex_vectors') IS NULL")

        assert cli([*data, "reindex", tenant.id, "--model", "use-multilingual-v3"]) == 0
        summary = json.loads(capsys.readouterr().out)
        assert (summary["model"], summary["dim"], summary["curated"]) == ("use-multilingual-v3", 512, 1)
        with tenant.reading() as conn:
            meta = tenant.store.migrations.read_meta(conn)
            assert (meta["embedder_id"], meta["embedder_dim"]) == ("use-multilingual-v3", "512")
            assert conn.execute("SELECT DISTINCT vector_dims(embedding) FROM chunks").fetchall() == [(512,)]
            assert conn.execute("SELECT length(embedding) FROM curated").fetchone() == (512 * 4,)
            assert conn.execute("SELECT count(*) FROM pg_indexes WHERE schemaname = current_schema() "
                                "AND indexname = 'chunks_embedding'").fetchone() == (1,)
        assert tenant.config().model == "use-multilingual-v3"
        switched = ctx.embedder("use-multilingual-v3")
        hits = search(tenant, switched, "what time do you open on sundays")
        assert hits and hits[0].dense_rank is not None and hits[0].url.startswith(DEMO_ORIGIN)


def test_indexing_the_same_folder_again_writes_and_embeds_nothing(folder_indexed, embedder):
    tenant, _, _, _ = folder_indexed
    before, generation = stats(tenant), tenant.generation()
    again = index_folder(tenant, embedder, DEMO, DEMO_ORIGIN + "/")
    assert again.chunks_embedded == 0 and again.chunks_deleted == 0
    after = stats(tenant)
    assert (after.pages, after.chunks, after.chunk_links) == (before.pages, before.chunks, before.chunk_links)
    assert tenant.generation() == generation  # nothing changed: caches stay valid


# -- (b) a crawl over HTTP and its delta recrawls -------------------------------------------------


@pytest.fixture(scope="module")
def demo_copy(tmp_path_factory) -> Path:
    """A private copy of the demo site that tests may edit."""
    target = tmp_path_factory.mktemp("site") / "demo"
    shutil.copytree(DEMO, target)
    return target


@pytest.fixture(scope="module")
def crawled(demo_copy, embedder, registry):
    """The demo copy served over HTTP and crawled once into a PostgreSQL tenant."""
    with serve_site(demo_copy, DEMO_ORIGIN) as server, \
            pg_tenant(registry, embedder, server.url + "/") as tenant:
        summary = run(tenant, embedder)
        yield tenant, server, summary


def test_a_crawl_into_postgres_indexes_every_sitemap_page(crawled, demo_copy):
    tenant, server, summary = crawled
    assert summary.status == "done" and summary.failed == 0, summary
    expected = sitemap_urls(demo_copy, server.url)
    indexed = active_urls(tenant)
    assert expected <= indexed, expected - indexed
    assert not any("/staff/" in u for u in indexed)  # robots.txt disallows it
    assert not [h for h in server.requests if h.path.startswith("/staff/")]
    coverage = stats(tenant)
    assert coverage.sitemap_urls == len(expected) and coverage.sitemap_covered == coverage.sitemap_urls
    assert coverage.last_crawl is not None and coverage.last_crawl["status"] == "done"
    with tenant.reading() as conn:  # the site's actions.json, fetched in the crawl
        manifests = tenant.store.manifests.manifest_states(conn)
    assert [s.actions for s in manifests.values() if s.status == "active"] and summary.requests > len(expected)


def test_a_crawl_into_postgres_ends_when_every_new_chunk_has_its_vector(crawled):
    tenant, _, summary = crawled
    chunks = stats(tenant).chunks
    assert summary.chunks_pending == 0 and pending(tenant) == 0
    assert chunks <= summary.chunks_embedded <= summary.chunks_added
    assert vectors(tenant) == chunks
    assert summary.searchable_s is not None and 0 < summary.searchable_s <= summary.seconds


def test_an_unchanged_recrawl_rewrites_nothing_and_transfers_no_bodies(crawled, embedder):
    tenant, server, _ = crawled
    before, generation = len(server.requests), tenant.generation()
    chunk_ids = one(tenant, "SELECT array_agg(id ORDER BY id) FROM chunks")
    summary = run(tenant, embedder)
    new = server.requests[before:]
    page_hits = [h for h in new if h.path.endswith("/") or h.path.endswith(".html")]
    assert summary.status == "done" and summary.chunks_embedded == 0 and summary.fetched == 0, summary
    assert summary.chunks_added == summary.chunks_deleted == summary.removed == 0
    # Pages with an unchanged sitemap lastmod are not requested at all; the rest answer 304.
    assert all(h.status in (304, 200) for h in page_hits)
    assert not [h for h in page_hits if h.status == 200 and h.body_bytes > 0]
    assert len(page_hits) <= 3
    assert tenant.generation() == generation  # no page rewritten: caches stay valid
    assert one(tenant, "SELECT array_agg(id ORDER BY id) FROM chunks") == chunk_ids


def test_touching_one_page_reembeds_only_its_changed_chunks_on_postgres(crawled, demo_copy, embedder):
    tenant, server, _ = crawled
    page = demo_copy / "faq.html"
    marker = "Frontdesk test paragraph: the zebra-striped loyalty card is stamped at the till."
    page.write_text(page.read_text().replace("</h1>", "</h1>\n<p>" + marker + "</p>", 1))
    sitemap = demo_copy / "sitemap.xml"
    text = sitemap.read_text()  # a site update also bumps the page's lastmod in the sitemap
    start = text.index(f"{DEMO_ORIGIN}/faq.html</loc>")
    lastmod_start = text.index("<lastmod>", start) + len("<lastmod>")
    sitemap.write_text(text[:lastmod_start] + "2099-01-01" + text[text.index("</lastmod>", lastmod_start):])
    summary = run(tenant, embedder)
    assert summary.fetched == 1 and summary.failed == 0, summary
    total = one(tenant, "SELECT count(*) FROM page_chunks pc JOIN pages p ON p.id = pc.page_id "
                        "WHERE p.url LIKE %s", ("%/faq.html",))
    assert 1 <= summary.chunks_embedded < total
    assert pending(tenant) == 0 and vectors(tenant) == stats(tenant).chunks
    hits = search(tenant, embedder, "zebra-striped loyalty card", k=3)
    assert hits[0].url.endswith("/faq.html") and "zebra" in hits[0].text


def test_deleting_a_page_removes_it_from_postgres_search(crawled, demo_copy, embedder):
    tenant, _, _ = crawled
    (demo_copy / "gift-cards.html").unlink()
    summary = run(tenant, embedder, full=True)
    assert summary.removed == 1, summary
    with tenant.reading() as conn:
        row = conn.execute("SELECT status, gone_reason FROM pages WHERE url LIKE %s", ("%/gift-cards.html",)).fetchone()
    assert tuple(row) == ("gone", "http_404")
    hits = search(tenant, embedder, "gift card balance and expiry", k=10)
    assert hits and not any("gift-cards" in h.url for h in hits)


def test_reparse_rebuilds_from_the_cached_html_in_postgres(crawled, embedder):
    tenant, server, _ = crawled
    before = len(server.requests)
    summary = run(tenant, embedder, reparse=True)
    assert len(server.requests) == before
    assert summary.status == "done" and summary.failed == 0 and summary.pages_found >= 18
    assert summary.chunks_embedded == 0  # same HTML → same chunk texts → nothing to embed


def test_the_scheduler_runs_a_job_on_a_postgres_tenant_and_knows_when_it_is_due(crawled, registry, embedder):
    tenant, _, _ = crawled

    async def scheduled():
        scheduler = Scheduler(registry, lambda _: embedder, periodic=False)
        info = scheduler.start_job(tenant.id, CrawlOptions(full=True, rate=0))
        assert info.kind == "full" and scheduler.queue_depth() == 1
        return await scheduler.wait(tenant.id), scheduler

    info, scheduler = asyncio.run(scheduled())
    assert info is not None and info.status == "done", info
    assert info.summary is not None and info.summary.fetched == 0 and info.summary.chunks_embedded == 0
    assert info.summary.skipped_unchanged >= 15  # every page read again, none changed
    # A full crawl just finished (analytics.last_done on PostgreSQL): nothing is due until the schedule says so.
    assert scheduler.due(tenant, time.time()) is None
    assert scheduler.due(tenant, time.time() + 8 * 86400) == CrawlOptions(full=True)


# -- (c) the embedding stage -----------------------------------------------------------------------

PROBE = "which breads contain sesame"
PAGES = ("menu.html", "about.html", "allergens.html")  # the answer's page last


def test_pages_written_pending_are_found_by_text_and_the_stage_gives_them_vectors(registry, embedder):
    with pg_tenant(registry, embedder, DEMO_ORIGIN + "/") as tenant:
        indexer = PageIndexer(tenant, embedder, defer_vectors=True)  # as a crawl writes pages
        for name in PAGES:
            html = (DEMO / name).read_bytes()
            written = indexer.index(extract(html, f"{DEMO_ORIGIN}/{name}"), html=html)
            assert written.chunks_added == written.chunks_pending > 0
        chunks = stats(tenant).chunks
        assert pending(tenant) == chunks > 8 and vectors(tenant) == 0
        target = f"{DEMO_ORIGIN}/allergens.html"

        lexical = search(tenant, embedder, PROBE, mode="bm25")
        assert lexical[0].url == target and not lexical[0].embedded
        assert search(tenant, embedder, PROBE, mode="dense") == []  # nothing to compare yet, no error
        hybrid = search(tenant, embedder, PROBE)
        assert hybrid[0].url == target and hybrid[0].similarity == 0.0 and not hybrid[0].embedded

        stage = EmbedStage(tenant, embedder, batch=4)
        generation = tenant.generation()
        assert stage.step() == 4 and vectors(tenant) == 4 and stage.pending() == chunks - 4
        assert stage.drain() == chunks - 4
        assert (vectors(tenant), pending(tenant)) == (chunks, 0) and tenant.generation() > generation
        dense = search(tenant, embedder, PROBE, mode="dense")
        assert dense[0].url == target and dense[0].embedded
        assert stage.step() == 0


def test_query_time_vectors_rank_pending_chunks_on_the_dense_side_on_postgres(registry, embedder):
    with pg_tenant(registry, embedder, DEMO_ORIGIN + "/") as tenant:
        indexer = PageIndexer(tenant, embedder, defer_vectors=True)
        for name in PAGES:
            html = (DEMO / name).read_bytes()
            indexer.index(extract(html, f"{DEMO_ORIGIN}/{name}"), html=html)
        EmbedStage(tenant, embedder, batch=4).step()  # some chunks embedded, the answer's page still pending
        measured = search(tenant, embedder, PROBE, k=10, embed_pending=pending_embedder(embedder))
        assert measured[0].url == f"{DEMO_ORIGIN}/allergens.html" and not measured[0].embedded
        assert measured[0].dense_rank is not None and measured[0].similarity > 0.3


def test_a_cancelled_crawl_leaves_pending_chunks_that_the_stage_embeds(demo_copy, registry, embedder):
    events = []
    with serve_site(demo_copy, DEMO_ORIGIN) as server, \
            pg_tenant(registry, embedder, server.url + "/") as tenant:

        async def cancelled():
            cancel = asyncio.Event()

            def on_progress(event):
                events.append(event)
                if event.fetched >= 3:
                    cancel.set()

            return await crawl(tenant, embedder, CrawlOptions(rate=0), on_progress=on_progress, cancel=cancel)

        summary = asyncio.run(cancelled())
        assert summary.status == "cancelled"
        left = pending(tenant)
        assert summary.chunks_pending == left == stats(tenant).chunks_pending > 0
        assert summary.chunks_added == summary.chunks_embedded + summary.chunks_pending
        assert events[-1].chunks_pending == summary.chunks_pending
        assert vectors(tenant) + left == stats(tenant).chunks

        # What `frontdesk serve` runs on opening the tenant (app/warm.py): the stage drains them.
        assert EmbedStage(tenant, embedder).drain() == left
        chunks = stats(tenant).chunks
        assert (vectors(tenant), pending(tenant)) == (chunks, 0)
        again = run(tenant, embedder, max_pages=3)
        assert again.status == "done" and again.chunks_pending == 0
