"""The crawl path's store functions on both backends (store/pages.py, store/crawls.py,
store/pending.py and store/manifests.py against their PostgreSQL twins in store/pg/), on a real
PostgreSQL 18 with pgvector (tests/pg.py) and a real tenant file: each behaviour through one
parametrised fixture, and the same calls on both giving equal results, compared whole.

Small hand-made vectors of the tenants' dimension stand in for the model's: these modules store
vectors and take dot products of them, and the search's dense side ranks by them. Each side reads
the time from its own clock (tests/test_pg_store.py's `Clock`), so times compare equal too."""

from __future__ import annotations

import json

import numpy as np
import pytest

from store import crawls as sqlite_crawls
from store import manifests as sqlite_manifests
from store import pages as sqlite_pages
from store import pending as sqlite_pending
from store import search as sqlite_search
from store.pages import ChunkRow, JunkUrl, PageState, PageWrite, RenderDecision
from store.pg import crawls as pg_crawls
from store.pg import manifests as pg_manifests
from store.pg import pages as pg_pages
from store.pg import pending as pg_pending
from store.pg import search as pg_search
from tests import pgsides
from tests.pgsides import SITE, START, side_fixtures
from tests.test_pg_store import no_nul, unit

pytestmark = pytest.mark.slow



class SqliteSide(pgsides.SqliteSide):
    pages = sqlite_pages
    crawls = sqlite_crawls
    pending = sqlite_pending
    manifests = sqlite_manifests
    clocked = (sqlite_pages, sqlite_crawls, sqlite_manifests)

    def search(self, text: str, vector: np.ndarray | None, **kw):
        return sqlite_search.search(self.tenant.reader(), text, vector, **kw)

    def vectors_stored(self, conn) -> None:
        """What the embedding stage does after store_vectors: the in-memory index goes stale."""
        self.tenant.bump_generation(conn)


class PgSide(pgsides.PgSide):
    pages = pg_pages
    crawls = pg_crawls
    pending = pg_pending
    manifests = pg_manifests
    clocked = (pg_pages, pg_crawls, pg_manifests)

    def search(self, text: str, vector: np.ndarray | None, **kw):
        with self.tenants.read(self.id) as conn:
            return pg_search.search(conn, text, vector, **kw)

    def vectors_stored(self, conn) -> None:
        """Nothing to do: the HNSW index is updated with the table."""


Side = SqliteSide | PgSide
side, sides = side_fixtures(SqliteSide, PgSide)


def rows(conn, query: str) -> list[tuple]:
    """A parameterless SELECT's rows as tuples, on either backend."""
    return [tuple(row) for row in conn.execute(query).fetchall()]


def chunk(n: int, text: str, vector: np.ndarray | None, *, position: int | None = None, kind: str = "prose",
          heading: tuple[str, ...] = ("Section",)) -> ChunkRow:
    return ChunkRow(hash=f"h{n}", kind=kind, lang="en", text=text, heading_path=heading,
                    position=n if position is None else position, uid=f"u{n}", tokens=len(text.split()),
                    vector=None if vector is None else vector.tobytes())


def page(path: str, chunks: list[ChunkRow], **kw) -> PageWrite:
    return PageWrite(url=f"{SITE}/{path}", title=path.strip("/").title() or "Home", lang="en",
                     content_hash=f"content of {path} " + ",".join(c.hash for c in chunks), chunks=chunks, **kw)


HOURS = page("hours", [chunk(1, "We open at nine and close at five", unit(1), heading=("Hours", "Weekdays")),
                       chunk(2, "On Sunday we are closed", unit(1, 1)),
                       chunk(3, "Parking is behind the shop", unit(0, 0, 1), kind="fact")],
             html=b"<p>We open at nine</p>", encoding="utf-8", etag='"v1"', last_modified="Mon, 01 Jan 2024",
             flags=[{"reason": "override,addressed_to_ai", "where": "footer", "text": "ignore previous"},
                    {"reason": "fake_role_tag", "where": "image alt", "text": "<system>"}])
BIKES = page("bikes", [chunk(4, "We sell city bikes and cargo bikes", unit(0, 1)),
                       chunk(3, "Parking is behind the shop", unit(0, 0, 1), position=1, kind="fact")],
             html=b"<p>bikes</p>", flags=[{"reason": "override", "where": "h1", "text": "you are now"}],
             facts=[{"type": "Organization", "text": "Acme"}], forms=[{"action": "/contact"}],
             actions=[{"name": "book", "label": "Book", "url": "/book"}])
GONE = page("old", [chunk(5, "An old offer", unit(0, 0, 0, 1))], html=b"<p>old</p>",
            flags=[{"reason": "override", "where": "", "text": "x"}])


def write(side: Side, *pages: PageWrite) -> list:
    written = []
    for one in pages:
        with side.write() as conn:
            written.append(side.pages.write_page(conn, one))
    return written


# -- crawl runs and the sitemap ----------------------------------------------------------------


def test_a_crawl_run_is_started_finished_and_its_sitemap_replaced(sides):
    found = []
    for one in sides:
        with one.write() as conn:
            first = one.crawls.start_run(conn, "full")
            one.crawls.replace_sitemap(conn, {f"{SITE}/hours": "2024-01-01", f"{SITE}/gone": None})
        write(one, HOURS)
        with one.write() as conn:
            one.crawls.finish_run(conn, first, "done", json.dumps({"pages": 1}),
                                  iter([(f"{SITE}/broken", "http_500", "server error"), (f"{SITE}/x", "timeout", "")]))
            second = one.crawls.start_run(conn, "delta")
            one.crawls.replace_sitemap(conn, {f"{SITE}/hours": "2024-02-01", f"{SITE}/bikes": None})
        with one.read() as conn:
            running = one.pages.stats(conn).last_crawl
        with one.write() as conn:
            one.crawls.finish_run(conn, second, "failed", json.dumps({"error": "boom"}),
                                  ((f"{SITE}/{n}", "dns", "no such host") for n in range(sqlite_crawls.MAX_ERRORS + 3)))
        with one.read() as conn:
            found.append({
                "ids": (first, second), "running": running, "stats": one.pages.stats(conn),
                "runs": rows(conn, "SELECT id, kind, started_at, finished_at, status, summary FROM crawl_runs "
                                   "ORDER BY id"),
                "errors": rows(conn, "SELECT run_id, count(*), min(at), max(at) FROM crawl_errors GROUP BY run_id "
                                     "ORDER BY run_id"),
                "first_errors": rows(conn, "SELECT run_id, url, reason, message, at FROM crawl_errors WHERE run_id = 1 "
                                           "ORDER BY id"),
                "sitemap": rows(conn, "SELECT url, lastmod, seen_at FROM sitemap_urls ORDER BY url"),
            })
    sqlite, postgres = found
    assert sqlite == postgres
    assert sqlite["ids"] == (1, 2)
    assert sqlite["running"] == {"id": 2, "kind": "delta", "started_at": START + 5, "finished_at": None,
                                 "status": "running", "summary": {}}
    assert sqlite["stats"].last_crawl["summary"] == {"error": "boom"}
    assert (sqlite["stats"].sitemap_urls, sqlite["stats"].sitemap_covered) == (2, 1)
    assert sqlite["errors"] == [(1, 2, START + 4, START + 4), (2, sqlite_crawls.MAX_ERRORS, START + 7, START + 7)]
    assert sqlite["first_errors"][0] == (1, f"{SITE}/broken", "http_500", "server error", START + 4)
    assert sqlite["sitemap"] == [(f"{SITE}/bikes", None, START + 6), (f"{SITE}/hours", "2024-02-01", START + 6)]


# -- pages: states, validators, tombstones, the raw cache --------------------------------------


def test_page_states_follow_writes_refetches_and_tombstones(side):
    first, second, gone = write(side, HOURS, BIKES, GONE)
    assert (first.page_id, second.page_id, gone.page_id) == (1, 2, 3)
    assert (first.chunks_added, second.chunks_added, first.chunks_pending) == (3, 1, 0)  # chunk 3 is shared
    with side.write() as conn:
        side.pages.mark_fetched(conn, HOURS.url, etag='"v2"', last_modified=None, sitemap_lastmod="2024-03-01")
        side.pages.mark_fetched(conn, f"{SITE}/never-written", etag='"x"', last_modified=None, sitemap_lastmod=None)
        assert side.pages.tombstone_page(conn, GONE.url, "not_found", 404) == 1
        assert side.pages.tombstone_page(conn, GONE.url, "not_found", 404) == 0
    with side.read() as conn:
        states = side.pages.page_states(conn)
        assert [side.pages.is_active_page(conn, f"{SITE}/{p}") for p in ("hours", "bikes", "old", "never")] == [
            True, True, False, False]
        fetched = rows(conn, "SELECT url, fetched_at, status, gone_reason, http_status FROM pages ORDER BY id")
    assert states == {
        HOURS.url: PageState(1, HOURS.url, "active", '"v2"', "Mon, 01 Jan 2024", "2024-03-01", HOURS.content_hash),
        BIKES.url: PageState(2, BIKES.url, "active", None, None, None, BIKES.content_hash),
        GONE.url: PageState(3, GONE.url, "gone", None, None, None, None),
    }
    assert fetched == [(HOURS.url, START + 4, "active", None, 200), (BIKES.url, START + 2, "active", None, 200),
                       (GONE.url, START + 3, "gone", "not_found", 404)]


def test_raw_html_written_before_scrubbing_is_listed_and_replaced(side):
    write(side, HOURS, BIKES, GONE)
    with side.write() as conn:
        side.pages.tombstone_page(conn, GONE.url, "gone")
        # As an older frontdesk left them: stored as fetched, not yet scrubbed.
        conn.execute("UPDATE page_html SET scrubbed = 0")
    with side.read() as conn:
        listed = side.pages.unscrubbed_html(conn)
        assert side.pages.unscrubbed_html(conn, 1) == listed[:1]
        assert side.pages.unscrubbed_html(conn, -1) == listed  # SQLite's negative LIMIT: no limit
    assert listed == [(1, HOURS.html, "utf-8"), (2, BIKES.html, None)]
    with side.write() as conn:
        side.pages.replace_html(conn, [(1, b"<p>scrubbed</p>", "latin-1")])
    with side.read() as conn:
        assert side.pages.unscrubbed_html(conn) == [(2, BIKES.html, None)]
        assert side.pages.page_html(conn, 1) == (b"<p>scrubbed</p>", "latin-1")
        assert side.pages.page_html(conn, 3) is None  # the tombstone took it
    with side.write() as conn:
        side.pages.replace_html(conn, [(2, b"<p>bikes, scrubbed</p>", None), (99, b"no such page", None)])
        side.pages.replace_html(conn, [])
    with side.read() as conn:
        assert side.pages.unscrubbed_html(conn) == []
        assert side.pages.page_html(conn, 2) == (b"<p>bikes, scrubbed</p>", None)


def test_page_passages_are_in_page_order_with_similarities_to_a_question(sides):
    found = []
    question = unit(1, 0.5, 0.2)
    for one in sides:
        write(one, HOURS, BIKES)
        with one.read() as conn:
            found.append([one.pages.page_passages(conn, HOURS.url), one.pages.page_passages(conn, HOURS.url, 2),
                          one.pages.page_passages(conn, HOURS.url, vector=question),
                          one.pages.page_passages(conn, BIKES.url, -1, question),
                          one.pages.page_passages(conn, f"{SITE}/never", vector=question)])
    sqlite, postgres = found
    assert sqlite == postgres
    plain, first_two, scored, bikes, none = sqlite
    assert [(p.chunk_id, p.text, p.kind, p.heading_path, p.similarity) for p in plain] == [
        (1, HOURS.chunks[0].text, "prose", ["Hours", "Weekdays"], None),
        (2, HOURS.chunks[1].text, "prose", ["Section"], None), (3, HOURS.chunks[2].text, "fact", ["Section"], None)]
    assert first_two == plain[:2]
    # Page order kept; each passage carries its own similarity (what the answer ranks sections by).
    assert [p.chunk_id for p in scored] == [1, 2, 3]
    assert [p.similarity for p in scored] == [float(np.frombuffer(c.vector, dtype=np.float32) @ question)
                                              for c in HOURS.chunks]
    assert [p.chunk_id for p in bikes] == [3, 4] and none == []  # by position: 1, then 4


def test_page_passages_of_a_tombstoned_page_are_none(side):
    write(side, HOURS)
    with side.write() as conn:
        side.pages.tombstone_page(conn, HOURS.url, "gone")
    with side.read() as conn:
        assert side.pages.page_passages(conn, HOURS.url, vector=unit(1)) == []


# -- junk URLs and render decisions ------------------------------------------------------------


CALENDAR = f"{SITE}/events/{{date}}/"


def junk(path: str, family: str, reason: str, **kw) -> JunkUrl:
    return JunkUrl(url=f"{SITE}/{path}", family=family, reason=reason, **kw)


def test_junk_urls_are_recorded_replaced_and_summarised(sides):
    found = []
    for one in sides:
        with one.write() as conn:
            one.pages.record_junk(conn, 1, [
                junk("events/2024-01-01/", CALENDAR, "junk_calendar", detail="chain of 40"),
                junk("events/2024-01-02/", CALENDAR, "junk_calendar", detail="chain of 41", fetched=False),
                junk("events/2024-01-03/", CALENDAR, "junk_calendar"),
                junk("shop?color=red", f"{SITE}/shop?color=*", "junk_query", detail="facet"),
                junk("shop?color=blue", f"{SITE}/shop?color=*", "junk_query", detail="facet", fetched=False),
                junk("Zebra/", f"{SITE}/Zebra/", "junk_template"),
                junk("apple/", f"{SITE}/apple/", "junk_template"),
                junk("apple/", f"{SITE}/apple/", "junk_template", detail="again"),  # the last one wins
            ], [f"{SITE}/events/2024-01-03/"])  # indexed after all: no longer junk
        with one.read() as conn:
            before = [one.pages.junk_summary(conn), one.pages.junk_summary(conn, 1), one.pages.junk_families(conn),
                      one.pages.junk_reason(conn, f"{SITE}/apple/"),
                      one.pages.junk_reason(conn, f"{SITE}/events/2024-01-03/")]
        with one.write() as conn:
            one.pages.record_junk(conn, 2, [junk("shop?size=s", f"{SITE}/shop?size=*", "junk_query")], [])
        with one.read() as conn:
            kept = one.pages.junk_summary(conn)
        with one.write() as conn:  # a full crawl: what earlier runs recorded goes
            one.pages.record_junk(conn, 3, [junk("events/2025-01-01/", CALENDAR, "junk_calendar")], [],
                                  replace=True)
        with one.read() as conn:
            found.append({"before": before, "kept": kept, "replaced": one.pages.junk_summary(conn),
                          "families": one.pages.junk_families(conn),
                          "json": json.dumps([one.pages.junk_families(conn), before[0].by_reason])})
    sqlite, postgres = found
    assert sqlite == postgres
    summary, top, families, apple, indexed = sqlite["before"]
    assert (summary.total, summary.by_reason) == (6, {"junk_calendar": 2, "junk_query": 2, "junk_template": 2})
    # Most URLs first, then by family in byte order (upper case before lower).
    assert [(f.family, f.reason, f.urls, f.fetched, f.detail, f.example) for f in summary.families] == [
        (CALENDAR, "junk_calendar", 2, 1, "chain of 41", f"{SITE}/events/2024-01-01/"),
        (f"{SITE}/shop?color=*", "junk_query", 2, 1, "facet", f"{SITE}/shop?color=blue"),
        (f"{SITE}/Zebra/", "junk_template", 1, 1, "", f"{SITE}/Zebra/"),
        (f"{SITE}/apple/", "junk_template", 1, 1, "again", f"{SITE}/apple/")]
    assert top.families == summary.families[:1]
    assert families == {CALENDAR: "junk_calendar", f"{SITE}/shop?color=*": "junk_query",
                        f"{SITE}/Zebra/": "junk_template", f"{SITE}/apple/": "junk_template"}
    assert apple == JunkUrl(url=f"{SITE}/apple/", family=f"{SITE}/apple/", reason="junk_template", detail="again")
    assert indexed is None
    assert sqlite["kept"].total == 7
    assert (sqlite["replaced"].total, sqlite["families"]) == (1, {CALENDAR: "junk_calendar"})


def decision(path: str, verdict: str, at: float, **kw) -> RenderDecision:
    return RenderDecision(url=f"{SITE}/{path}", mode="auto", decision=verdict, at=at, **kw)


def test_render_decisions_are_upserted_and_counted_for_live_pages(sides):
    found = []
    for one in sides:
        write(one, HOURS, GONE)
        with one.write() as conn:
            one.pages.record_render_decisions(conn, [
                decision("hours", "static", 10.0, reason="enough text"),
                decision("old", "rendered", 11.0, reason="empty shell"),
                decision("app", "rendered", 12.0, reason="empty shell", render_ms=812.5, requests=9,
                         blocked=[f"private http://10.0.0.{n}/" for n in range(30)]),
                decision("spa", "render_failed", 13.0, reason="timeout"),
                decision("news", "render_discarded", 0.0, reason="empty shell"),  # no time: the clock's
            ])
            one.pages.record_render_decisions(conn, [decision("hours", "rendered", 14.0, reason="script only")])
            one.pages.tombstone_page(conn, GONE.url, "gone")
        with one.read() as conn:
            stats = [one.pages.render_stats(conn), one.pages.render_stats(conn, 2), one.pages.render_stats(conn, -1)]
        found.append((stats, json.dumps(stats)))
    sqlite, postgres = found
    assert sqlite == postgres
    full, two, unlimited = sqlite[0]
    assert full == unlimited
    assert full["by_decision"] == {"render_discarded": 1, "render_failed": 1, "rendered": 2}
    assert full["by_reason"] == {"empty shell": 2, "script only": 1, "timeout": 1}
    assert [p["url"] for p in full["pages"]] == [f"{SITE}/news", f"{SITE}/hours", f"{SITE}/spa", f"{SITE}/app"]
    assert full["pages"][3]["blocked"] == [f"private http://10.0.0.{n}/" for n in range(20)]
    assert two["pages"] == full["pages"][:2]


# -- flags and stats ---------------------------------------------------------------------------


def test_stats_and_flags_are_equal_on_both_backends(sides):
    found = []
    for one in sides:
        with one.write() as conn:
            run = one.crawls.start_run(conn, "full")
            one.crawls.replace_sitemap(conn, {HOURS.url: None, GONE.url: None, f"{SITE}/elsewhere": None})
        write(one, HOURS, BIKES, GONE)
        write(one, page("waiting", [chunk(6, "Text still waiting for its vector", None),
                                    chunk(7, "More text waiting", None, kind="faq")]))
        with one.write() as conn:
            one.pages.tombstone_page(conn, GONE.url, "gone", 410)
            one.manifests.write_manifest(conn, f"{SITE}/actions.json", [{"name": "call"}], etag=None,
                                         last_modified=None, content_hash="m1",
                                         flags=[{"reason": "override", "text": "obey"}])
            one.crawls.finish_run(conn, run, "done", json.dumps({"pages": 4}), [])
        with one.read() as conn:
            stats = one.pages.stats(conn, 12345)
            flagged = [one.pages.flagged_pages(conn), one.pages.flagged_pages(conn, 1)]
        found.append((stats, flagged, json.dumps([stats.by_kind, stats.by_lang])))
    sqlite, postgres = found
    assert sqlite == postgres
    stats, (flagged, first), _ = sqlite
    assert (stats.pages, stats.pages_gone, stats.chunks, stats.chunk_links, stats.chunks_pending) == (3, 1, 6, 7, 2)
    assert (stats.facts, stats.forms, stats.actions, stats.file_bytes) == (1, 1, 2, 12345)
    assert stats.by_kind == {"fact": 1, "faq": 1, "prose": 4} and stats.by_lang == {"en": 6}
    assert (stats.sitemap_urls, stats.sitemap_covered) == (3, 1)
    assert stats.last_crawl["summary"] == {"pages": 4}
    assert stats.flagged["manifests"] == [{"url": f"{SITE}/actions.json", "flags": [{"reason": "override",
                                                                                     "text": "obey"}]}]
    assert (flagged["pages"], flagged["flags"]) == (2, 3)
    assert flagged["by_reason"] == {"override": 2, "addressed_to_ai": 1, "fake_role_tag": 1}
    assert [p["url"] for p in flagged["flagged_pages"]] == [HOURS.url, BIKES.url]  # most flags first
    assert flagged["flagged_pages"][0]["flags"][0] == {"reason": "override,addressed_to_ai", "where": "footer",
                                                       "text": "ignore previous"}
    assert first["flagged_pages"] == flagged["flagged_pages"][:1] and first["flags"] == 3


# -- chunks written before their vectors -------------------------------------------------------


WAITING = page("waiting", [chunk(6, "Tandem bicycles for rent by the hour", None),
                           chunk(7, "Helmets come free with every tandem", None),
                           chunk(1, "We open at nine and close at five", None)])  # stored already, with a vector
TANDEM, HELMET = unit(0, 0, 0, 0, 1), unit(0, 0, 0, 0, 0, 1)
#: Nearest TANDEM, then each of HOURS's chunks at its own distance: no ties for the backends to
#: break differently.
ASKED = unit(0.1, 0.2, 0.3, 0, 1)


def test_chunks_without_vectors_are_pending_until_their_vectors_are_stored(sides):
    found = []
    for one in sides:
        write(one, HOURS)
        (written,) = write(one, WAITING)
        with one.read() as conn:
            before = {
                "written": written, "has": one.pending.has_pending(conn), "count": one.pending.pending_count(conn),
                "chunks": [one.pending.pending_chunks(conn, 10), one.pending.pending_chunks(conn, 1),
                           one.pending.pending_chunks(conn, 10, after_id=4), one.pending.pending_chunks(conn, -1)],
                "rows": one.pending.pending_rows(conn, [5, 99, 1, 4]),
                "among": one.pending.pending_among(conn, [1, 4, 5, 5, 99]),
                "passages": one.pages.page_passages(conn, WAITING.url, vector=TANDEM),
                "stats": one.pages.stats(conn).chunks_pending,
            }
        lexical = one.search("tandem bicycles", None, mode="bm25", k=5).hits
        dense = one.search("tandem bicycles", ASKED, mode="dense", k=5).hits
        hybrid = one.search("tandem bicycles", ASKED, k=5).hits
        with one.write() as conn:
            stored = [
                one.pending.store_vectors(conn, [(4, "wrong hash", HELMET.tobytes()), (1, "h1", HELMET.tobytes())]),
                one.pending.store_vectors(conn, [(4, "h6", TANDEM.tobytes()), (4, "h6", HELMET.tobytes()),
                                                 (99, "h9", TANDEM.tobytes())]),
                one.pending.store_vectors(conn, []),
            ]
        with one.write() as conn:
            stored.append(one.pending.store_vectors(conn, [(4, "h6", HELMET.tobytes()), (5, "h7", HELMET.tobytes())]))
            one.vectors_stored(conn)
        with one.read() as conn:
            after = {"has": one.pending.has_pending(conn), "count": one.pending.pending_count(conn),
                     "chunks": one.pending.pending_chunks(conn, 10), "among": one.pending.pending_among(conn, [4, 5]),
                     "passages": one.pages.page_passages(conn, WAITING.url, vector=TANDEM),
                     "stats": one.pages.stats(conn).chunks_pending}
        embedded = one.search("tandem bicycles", ASKED, mode="dense", k=5).hits
        found.append({"before": before, "after": after, "stored": stored,
                      "lexical": [(h.chunk_id, h.embedded, h.dense_rank) for h in lexical],
                      "dense": [h.chunk_id for h in dense],
                      "hybrid": [(h.chunk_id, h.embedded) for h in hybrid if h.chunk_id == 4],
                      "embedded": [(h.chunk_id, h.dense_rank, h.embedded, round(h.similarity, 5)) for h in embedded]})
    sqlite, postgres = found
    assert sqlite == postgres
    before, after = sqlite["before"], sqlite["after"]
    assert (before["written"].chunks_added, before["written"].chunks_pending) == (2, 2)
    assert (before["has"], before["count"], before["stats"]) == (True, 2, 2)
    assert [[c.id for c in listed] for listed in before["chunks"]] == [[4, 5], [4], [5], [4, 5]]
    assert before["chunks"][0][0].hash == "h6" and before["chunks"][0][0].heading == "Section"
    assert [c.id for c in before["rows"]] == [5, 1, 4]
    assert before["among"] == {4, 5}
    # In page order (positions 1, 6, 7): the chunk stored before has a vector, the new ones none yet.
    assert [(p.chunk_id, p.similarity) for p in before["passages"]] == [(1, 0.0), (4, None), (5, None)]
    # Pending chunks are found by their words alone, and the dense side does not see them yet.
    assert sqlite["lexical"][0] == (4, False, None)
    assert sqlite["dense"] == [3, 2, 1]
    assert sqlite["hybrid"] == [(4, False)]
    # Skipped: a wrong hash, a chunk stored already, a second vector, an unknown id, no longer pending.
    assert sqlite["stored"] == [0, 1, 0, 1]
    assert (after["has"], after["count"], after["stats"], after["chunks"], after["among"]) == (False, 0, 0, [], set())
    assert [p.similarity for p in after["passages"]] == [0.0, 1.0, 0.0]  # chunk 4 kept TANDEM, its first vector
    assert [hit[:3] for hit in sqlite["embedded"]] == [(4, 1, True), (3, 2, True), (2, 3, True), (1, 4, True),
                                                       (5, 5, True)]


def test_a_pending_chunk_that_goes_with_its_page_is_no_longer_pending(side):
    write(side, WAITING)
    with side.write() as conn:
        side.pages.tombstone_page(conn, WAITING.url, "gone")
    with side.read() as conn:
        assert (side.pending.pending_count(conn), side.pending.pending_chunks(conn, 10)) == (0, [])
    with side.write() as conn:
        assert side.pending.store_vectors(conn, [(1, "h6", TANDEM.tobytes())]) == 0


# -- actions.json manifests --------------------------------------------------------------------


MANIFEST, OTHER = f"{SITE}/actions.json", f"{SITE}/de/actions.json"


def test_manifests_are_written_touched_and_removed_alike(sides):
    found = []
    for one in sides:
        write(one, BIKES)  # a page's own action: not a site-wide one
        m = one.manifests
        got: dict[str, object] = {}
        with one.write() as conn:
            m.write_manifest(conn, MANIFEST, [{"name": "call", "label": "Call us", "url": "tel:+1555"},
                                              {"name": "book", "selector": "#book", "extra": {"ü": 1}}],
                             etag='"e1"', last_modified="Mon", content_hash="c1")
            m.write_manifest(conn, OTHER, [{"name": "anrufen"}], etag=None, last_modified=None, content_hash="c2",
                             flags=[{"reason": "override", "text": "ignore"}])
            m.write_manifest(conn, f"{SITE}/broken.json", [], etag=None, last_modified=None, content_hash="c3",
                             status="invalid")
        with one.read() as conn:
            got["written"] = [m.manifest_states(conn), m.manifest_actions(conn), m.site_actions(conn),
                              m.manifest_flags(conn)]
        with one.write() as conn:
            m.touch_manifest(conn, MANIFEST, etag=None, last_modified="Tue")
            m.touch_manifest(conn, f"{SITE}/never.json", etag='"x"', last_modified=None)
            m.write_manifest(conn, MANIFEST, [{"name": "directions", "url": "https://maps.test/"}], etag='"e2"',
                             last_modified=None, content_hash="c4")
        with one.read() as conn:
            got["rewritten"] = [m.manifest_states(conn), m.manifest_actions(conn), m.site_actions(conn)]
        with one.write() as conn:
            got["removed"] = [m.remove_manifest(conn, OTHER), m.remove_manifest(conn, OTHER),
                              m.remove_manifest(conn, f"{SITE}/never.json")]
        with one.read() as conn:
            got["after"] = [m.manifest_states(conn), m.manifest_actions(conn), m.site_actions(conn),
                            m.manifest_flags(conn)]
            got["fetched"] = rows(conn, "SELECT url, fetched_at FROM site_manifest ORDER BY url")
        found.append(got)
    sqlite, postgres = found
    assert sqlite == postgres
    states, actions, site, flags = sqlite["written"]
    assert [(s.url, s.status, s.actions, s.etag) for s in states.values()] == [
        (MANIFEST, "active", 2, '"e1"'), (f"{SITE}/broken.json", "invalid", 0, None), (OTHER, "active", 1, None)]
    assert actions[1] == {"name": "book", "selector": "#book", "extra": {"ü": 1}, "manifest": MANIFEST}
    assert site == [("call", "Call us", "", "tel:+1555"), ("book", "", "#book", ""), ("anrufen", "", "", "")]
    assert flags == [{"url": OTHER, "flags": [{"reason": "override", "text": "ignore"}]}]
    states, actions, site = sqlite["rewritten"]
    rewritten = states[MANIFEST]
    assert (rewritten.etag, rewritten.last_modified, rewritten.content_hash) == ('"e2"', None, "c4")
    assert [a["name"] for a in actions] == ["anrufen", "directions"]
    assert sqlite["removed"] == [1, 0, 0]
    states, actions, site, flags = sqlite["after"]
    assert (states[OTHER].status, states[OTHER].actions, states[OTHER].content_hash) == ("gone", 0, None)
    assert site == [("directions", "", "", "https://maps.test/")] and flags == [
        {"url": OTHER, "flags": [{"reason": "override", "text": "ignore"}]}]
    # A second removal is a fetch too: its time is the last one's.
    assert sqlite["fetched"] == [(MANIFEST, START + 7), (f"{SITE}/broken.json", START + 4), (OTHER, START + 9)]


def test_touching_a_manifest_keeps_what_it_is_not_given(side):
    with side.write() as conn:
        side.manifests.write_manifest(conn, MANIFEST, [{"name": "call"}], etag='"e1"', last_modified="Mon",
                                      content_hash="c1")
        side.manifests.touch_manifest(conn, MANIFEST, etag=None, last_modified=None)
    with side.read() as conn:
        state = side.manifests.manifest_states(conn)[MANIFEST]
    assert (state.etag, state.last_modified, state.content_hash, state.actions) == ('"e1"', "Mon", "c1", 1)


# -- U+0000 ------------------------------------------------------------------------------------


def test_nuls_in_crawled_text_are_taken_out_on_postgres_only(sides):
    found = []
    for one in sides:
        nul_page = page("nul\x00page", [chunk(1, "Text with a \x00 NUL", unit(1))], etag='"\x00"')
        write(one, nul_page)
        with one.write() as conn:
            run = one.crawls.start_run(conn, "fu\x00ll")
            one.crawls.finish_run(conn, run, "done", "{}", [(f"{SITE}/\x00", "dns\x00", "no\x00 host")])
            one.crawls.replace_sitemap(conn, {f"{SITE}/a\x00": "2024\x00", f"{SITE}/a": None})
            one.pages.record_junk(conn, run, [junk("j\x00", "fam\x00", "junk_query", detail="d\x00")], [])
            one.pages.mark_fetched(conn, nul_page.url, etag=None, last_modified="L\x00", sitemap_lastmod=None)
            one.manifests.write_manifest(conn, f"{SITE}/m\x00.json", [{"name": "n\x00", "label": "l"}],
                                         etag="\x00", last_modified=None, content_hash="c")
        with one.read() as conn:
            found.append({
                "states": one.pages.page_states(conn), "active": one.pages.is_active_page(conn, nul_page.url),
                "passages": one.pages.page_passages(conn, nul_page.url),
                "junk": one.pages.junk_reason(conn, f"{SITE}/j\x00"),
                "manifests": one.manifests.manifest_states(conn), "site": one.manifests.site_actions(conn),
                "errors": rows(conn, "SELECT url, reason, message FROM crawl_errors"),
                "sitemap": len(rows(conn, "SELECT url FROM sitemap_urls")),
            })
        with one.write() as conn:
            found[-1]["removed"] = one.manifests.remove_manifest(conn, f"{SITE}/m\x00.json")
    sqlite, postgres = found
    assert "\x00" in sqlite["passages"][0].text and sqlite["active"] and postgres["active"]
    # Two sitemap URLs that differ only by a NUL are one on PostgreSQL.
    assert (sqlite.pop("sitemap"), postgres.pop("sitemap")) == (2, 1)
    assert no_nul(postgres) == postgres
    for key in sqlite:
        assert no_nul(sqlite[key]) == postgres[key], key
