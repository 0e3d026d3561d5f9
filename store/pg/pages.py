"""Pages and their chunks in a tenant's PostgreSQL schema: store/pages.py's functions, with its
arguments and results (its Structs and dicts), on a connection from PgTenants.read or .write. The
`PageWrite` written in the caller's transaction, tombstones, page states, the raw-HTML cache, junk
URLs, render decisions and the tenant's stats. The same rules as the SQLite module: a chunk row per
distinct text (by hash), shared by every page that has it; chunks no page links to any more are
deleted with their vectors; a chunk new to the tenant without a vector is written pending.

Where PostgreSQL alone would give another result, this side does what SQLite does:
- text is ordered, and the least or greatest text picked, in byte order (COLLATE "C"), SQLite's,
  whatever the database's locale; counts grouped by a text come in that order too, as SQLite's
  GROUP BY gives them;
- a negative LIMIT means no limit (store/pg/limits.py);
- `page_passages` computes each passage's similarity with numpy from the fetched vectors, one
  matrix-vector product as store/vector_index.py's exact scan does on SQLite, not with pgvector's
  `<=>`, whose arithmetic agrees only to within rounding.
`replace_html` cannot zero what it overwrites as SQLite's secure_delete does: PostgreSQL keeps the
old row version until VACUUM reclaims it (and it stays in WAL and base backups).

Every text written here goes through `without_nul` (store/pg/nul.py): PostgreSQL text cannot hold
U+0000, which a crawled page may have; the SQLite side keeps it. The URLs looked up are read the
same way, so a URL with a NUL finds the page stored without it."""

from __future__ import annotations

import json
import time
import zlib
from collections.abc import Iterable

import numpy as np

from store.pages import (
    JunkSummary,
    JunkUrl,
    PagePassage,
    PageState,
    PageWrite,
    RenderDecision,
    Stats,
    WriteStats,
    crawl_view,
    decision_row,
    flag_summary,
    junk_summary_of,
    junk_url,
    page_passage_rows,
    render_summary,
)
from store.pg.connect import PgConnection
from store.pg.limits import sqlite_limit
from store.pg.manifests import manifest_flags
from store.pg.nul import strip_nul, without_nul
from store.pg.textsearch import config_for
from store.pg.vectors import query_to_pg, to_pg

_PAGE_FIELDS = ("url", "fetched_url", "title", "description", "lang", "breadcrumbs", "updated", "etag",
                "last_modified", "sitemap_lastmod", "content_hash", "http_status", "fetched_at")


def missing_hashes(conn: PgConnection, hashes: Iterable[str]) -> set[str]:
    """The content hashes not yet stored: only these chunks need embedding."""
    wanted = list(dict.fromkeys(hashes))
    if not wanted:
        return set()
    found = {r[0] for r in conn.execute("SELECT hash FROM chunks WHERE hash = ANY(%s)", (wanted,))}
    return set(wanted) - found


def _delete_orphans(conn: PgConnection, chunk_ids: Iterable[int]) -> int:
    ids = list(set(chunk_ids))
    if not ids:
        return 0
    cursor = conn.execute(
        "DELETE FROM chunks c WHERE c.id = ANY(%s) "
        "AND NOT EXISTS (SELECT 1 FROM page_chunks pc WHERE pc.chunk_id = c.id)", (ids,))
    return cursor.rowcount


def _upsert_page(conn: PgConnection, page: PageWrite, now: float) -> tuple[int, bool]:
    row = conn.execute("SELECT id, content_hash, status FROM pages WHERE url = %s FOR UPDATE",
                       (strip_nul(page.url),)).fetchone()
    values = without_nul((page.url, page.fetched_url or page.url, page.title, page.description, page.lang,
              json.dumps(page.breadcrumbs, ensure_ascii=False), page.updated, page.etag, page.last_modified,
              page.sitemap_lastmod, page.content_hash, page.http_status, now))
    if row is None:
        inserted = conn.execute(
            f"INSERT INTO pages({', '.join(_PAGE_FIELDS)}, changed_at) "
            f"VALUES ({', '.join(['%s'] * len(_PAGE_FIELDS))}, %s) RETURNING id",
            (*values, now),
        ).fetchone()
        assert inserted is not None  # INSERT … RETURNING always returns the row
        return int(inserted[0]), True
    page_id, old_hash, status = row
    changed = old_hash != page.content_hash or status != "active"
    assignments = ", ".join(f"{name} = %s" for name in _PAGE_FIELDS)
    conn.execute(
        f"UPDATE pages SET {assignments}, status = 'active', gone_reason = NULL, removed_at = NULL, "
        "changed_at = CASE WHEN %s THEN %s ELSE changed_at END WHERE id = %s",
        (*values, changed, now, page_id),
    )
    return int(page_id), changed


def write_page(conn: PgConnection, page: PageWrite) -> WriteStats:
    """Write one page with its chunks, facts, forms and actions, in the caller's transaction
    (PgTenants.write): nothing of it is visible until all of it is. A chunk new to the tenant is
    stored with its vector, or pending without one (a NULL embedding, listed in chunk_pending)."""
    now = time.time()
    page_id, changed = _upsert_page(conn, page, now)
    old_ids = [r[0] for r in conn.execute("SELECT chunk_id FROM page_chunks WHERE page_id = %s", (page_id,))]
    conn.execute("DELETE FROM page_chunks WHERE page_id = %s", (page_id,))
    hashes = list(dict.fromkeys(c.hash for c in page.chunks))
    known: dict[str, int] = {}
    if hashes:
        known = {h: int(i) for h, i in conn.execute("SELECT hash, id FROM chunks WHERE hash = ANY(%s)", (hashes,))}
    added = 0
    waiting: list[tuple[int, float]] = []
    new_ids: list[int] = []
    links: dict[int, tuple] = {}
    for chunk in page.chunks:
        chunk_id = known.get(chunk.hash)
        if chunk_id is None:
            inserted = conn.execute(
                "INSERT INTO chunks(hash, kind, lang, text, title, heading, tokens, created_at, embedding, ts_config) "
                "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s::vector, %s::regconfig) RETURNING id",
                without_nul((chunk.hash, chunk.kind, chunk.lang, chunk.text, page.title,
                             " > ".join(chunk.heading_path), chunk.tokens, now,
                             None if chunk.vector is None else to_pg(chunk.vector), config_for(chunk.lang))),
            ).fetchone()
            assert inserted is not None
            chunk_id = known[chunk.hash] = int(inserted[0])
            if chunk.vector is None:  # searchable by its text now; store/pg/pending.py gives it its vector
                waiting.append((chunk_id, now))
            added += 1
        new_ids.append(chunk_id)
        # Positions are unique per page; a repeated one replaces the earlier (SQLite's INSERT OR REPLACE).
        links[chunk.position] = without_nul((page_id, chunk.position, chunk_id, chunk.uid,
                                             json.dumps(list(chunk.heading_path), ensure_ascii=False)))
    configs = sorted({config_for(c.lang) for c in page.chunks})
    if added and configs:
        conn.execute("INSERT INTO chunk_configs(cfg) SELECT unnest(%s::regconfig[]) ON CONFLICT DO NOTHING",
                     (configs,))
    with conn.cursor() as cursor:
        cursor.executemany(
            "INSERT INTO page_chunks(page_id, position, chunk_id, uid, heading_path) VALUES (%s, %s, %s, %s, %s)",
            list(links.values()),
        )
        cursor.executemany("INSERT INTO chunk_pending(chunk_id, queued_at) VALUES (%s, %s)", waiting)
        deleted = _delete_orphans(conn, set(old_ids) - set(new_ids))
        for table in ("facts", "forms", "actions", "page_flags"):
            cursor.execute(f"DELETE FROM {table} WHERE page_id = %s", (page_id,))
        cursor.executemany(
            "INSERT INTO facts(page_id, type, kind, text, data) VALUES (%s, %s, %s, %s, %s)",
            [without_nul((page_id, fact.get("type", ""), fact.get("kind", "fact"), fact.get("text", ""),
                          json.dumps(fact.get("data", {}), ensure_ascii=False, default=str)))
             for fact in page.facts],
        )
        cursor.executemany("INSERT INTO forms(page_id, data) VALUES (%s, %s)",
                           [(page_id, json.dumps(form, ensure_ascii=False)) for form in page.forms])
        cursor.executemany(
            "INSERT INTO actions(page_id, name, label, selector, url, source, data) "
            "VALUES (%s, %s, %s, %s, %s, %s, %s)",
            [without_nul((page_id, a.get("name", ""), a.get("label", ""), a.get("selector", ""), a.get("url", ""),
                          a.get("source", "data-action"), json.dumps(a, ensure_ascii=False))) for a in page.actions],
        )
        cursor.executemany(
            "INSERT INTO page_flags(page_id, reason, location, text, at) VALUES (%s, %s, %s, %s, %s)",
            [without_nul((page_id, f.get("reason", ""), f.get("where", ""), f.get("text", ""), now))
             for f in page.flags],
        )
    if page.html is not None:
        conn.execute(
            "INSERT INTO page_html(page_id, encoding, html, scrubbed) VALUES (%s, %s, %s, 1) "
            "ON CONFLICT (page_id) DO UPDATE SET encoding = excluded.encoding, html = excluded.html, scrubbed = 1",
            without_nul((page_id, page.encoding, zlib.compress(page.html, 6))),
        )
    return WriteStats(page_id=page_id, changed=changed or bool(added or deleted), chunks_added=added,
                      chunks_deleted=deleted, chunks_pending=len(waiting))


def tombstone_page(conn: PgConnection, url: str, reason: str, http_status: int | None = None) -> int:
    """Remove a page from search (status 'gone'); delete the chunks only it had. Returns chunks deleted."""
    row = conn.execute("SELECT id FROM pages WHERE url = %s AND status = 'active' FOR UPDATE",
                       (strip_nul(url),)).fetchone()
    if row is None:
        return 0
    page_id = row[0]
    old_ids = [r[0] for r in conn.execute("SELECT chunk_id FROM page_chunks WHERE page_id = %s", (page_id,))]
    conn.execute("DELETE FROM page_chunks WHERE page_id = %s", (page_id,))
    for table in ("facts", "forms", "actions", "page_html", "page_flags"):
        conn.execute(f"DELETE FROM {table} WHERE page_id = %s", (page_id,))
    conn.execute(
        "UPDATE pages SET status = 'gone', gone_reason = %s, http_status = COALESCE(%s, http_status), "
        "removed_at = %s, etag = NULL, last_modified = NULL, sitemap_lastmod = NULL, content_hash = NULL "
        "WHERE id = %s",
        (strip_nul(reason), http_status, time.time(), page_id),
    )
    return _delete_orphans(conn, old_ids)


def page_html(conn: PgConnection, page_id: int) -> tuple[bytes, str | None] | None:
    row = conn.execute("SELECT html, encoding FROM page_html WHERE page_id = %s", (page_id,)).fetchone()
    return (zlib.decompress(row[0]), row[1]) if row else None


def counts(conn: PgConnection) -> dict[str, int]:
    """Active pages, chunks and links: what a write or an import left."""
    row = conn.execute(
        "SELECT (SELECT count(*) FROM pages WHERE status = 'active'), (SELECT count(*) FROM chunks), "
        "(SELECT count(*) FROM page_chunks)").fetchone()
    assert row is not None
    return {"pages": int(row[0]), "chunks": int(row[1]), "chunk_links": int(row[2])}


def mark_fetched(conn: PgConnection, url: str, *, etag: str | None, last_modified: str | None,
                 sitemap_lastmod: str | None) -> None:
    """A 304 or an unchanged body: refresh the validators and fetch time, nothing else."""
    conn.execute(
        "UPDATE pages SET etag = COALESCE(%s, etag), last_modified = COALESCE(%s, last_modified), "
        "sitemap_lastmod = COALESCE(%s, sitemap_lastmod), fetched_at = %s WHERE url = %s",
        (*without_nul((etag, last_modified, sitemap_lastmod)), time.time(), strip_nul(url)),
    )


def page_states(conn: PgConnection) -> dict[str, PageState]:
    rows = conn.execute(
        "SELECT id, url, status, etag, last_modified, sitemap_lastmod, content_hash FROM pages ORDER BY id"
    ).fetchall()
    return {r[1]: PageState(int(r[0]), *r[1:]) for r in rows}


def unscrubbed_html(conn: PgConnection, limit: int = 100) -> list[tuple[int, bytes, str | None]]:
    """Raw-cache rows written before the cache was scrubbed: (page id, html, encoding)."""
    rows = conn.execute(
        "SELECT page_id, html, encoding FROM page_html WHERE scrubbed = 0 ORDER BY page_id LIMIT %s",
        (sqlite_limit(limit),),
    ).fetchall()
    return [(int(page_id), zlib.decompress(html), encoding) for page_id, html, encoding in rows]


def replace_html(conn: PgConnection, rows: Iterable[tuple[int, bytes, str | None]]) -> None:
    """Store re-scrubbed raw HTML in place of the old, in the caller's transaction. The old
    version stays in the table's storage until VACUUM (see the module's docstring)."""
    with conn.cursor() as cursor:
        cursor.executemany(
            "UPDATE page_html SET html = %s, encoding = %s, scrubbed = 1 WHERE page_id = %s",
            [(zlib.compress(html, 6), None if encoding is None else strip_nul(encoding), page_id)
             for page_id, html, encoding in rows],
        )


def _count(conn: PgConnection, query: str) -> int:
    row = conn.execute(query).fetchone()
    assert row is not None  # an aggregate without GROUP BY returns one row
    return int(row[0])


def _counted(conn: PgConnection, query: str, args: tuple = ()) -> dict[str, int]:
    """(text, count) rows as a dict, the counts as int (PostgreSQL's count is a bigint)."""
    return {key: int(n) for key, n in conn.execute(query, args)}


def stats(conn: PgConnection, file_bytes: int = 0) -> Stats:
    last = conn.execute(
        "SELECT id, kind, started_at, finished_at, status, summary FROM crawl_runs ORDER BY id DESC LIMIT 1"
    ).fetchone()
    return Stats(
        pages=_count(conn, "SELECT count(*) FROM pages WHERE status = 'active'"),
        pages_gone=_count(conn, "SELECT count(*) FROM pages WHERE status = 'gone'"),
        chunks=_count(conn, "SELECT count(*) FROM chunks"),
        chunk_links=_count(conn, "SELECT count(*) FROM page_chunks"),
        facts=_count(conn, "SELECT count(*) FROM facts"),
        forms=_count(conn, "SELECT count(*) FROM forms"),
        actions=_count(conn, "SELECT count(*) FROM actions"),
        by_kind=_counted(conn, 'SELECT kind, count(*) FROM chunks GROUP BY kind ORDER BY kind COLLATE "C"'),
        by_lang=_counted(conn, 'SELECT lang, count(*) FROM chunks GROUP BY lang ORDER BY lang COLLATE "C"'),
        file_bytes=file_bytes,
        last_crawl=crawl_view(last) if last else None,
        sitemap_urls=_count(conn, "SELECT count(*) FROM sitemap_urls"),
        sitemap_covered=_count(
            conn, "SELECT count(*) FROM sitemap_urls s JOIN pages p ON p.url = s.url AND p.status = 'active'"),
        flagged={**flagged_pages(conn), "manifests": manifest_flags(conn)},
        chunks_pending=_count(conn, "SELECT count(*) FROM chunk_pending"),
    )


_LIVE_FLAGS = "FROM page_flags f JOIN pages p ON p.id = f.page_id AND p.status = 'active'"


def flagged_pages(conn: PgConnection, limit: int = 50) -> dict:
    """For the site owner: active pages with passages kept out of the index as prompt injection,
    how many by reason, and the pages (most flags first) with each passage and where it was."""
    rows = conn.execute(
        f"SELECT p.id, p.url, p.title, f.reason, f.location, f.text {_LIVE_FLAGS} "
        "ORDER BY (SELECT count(*) FROM page_flags g WHERE g.page_id = p.id) DESC, p.url COLLATE \"C\", f.id"
    ).fetchall()
    reasons = [r[0] for r in conn.execute(f"SELECT f.reason {_LIVE_FLAGS} ORDER BY f.id")]
    pages = _count(conn, f"SELECT count(DISTINCT f.page_id) {_LIVE_FLAGS}")
    return flag_summary(rows, reasons, pages, limit)


def is_active_page(conn: PgConnection, url: str) -> bool:
    """Whether `url` is an indexed, searchable page of the tenant."""
    row = conn.execute("SELECT 1 FROM pages WHERE url = %s AND status = 'active'", (strip_nul(url),)).fetchone()
    return row is not None


def page_passages(conn: PgConnection, url: str, limit: int = 40,
                  vector: np.ndarray | None = None) -> list[PagePassage]:
    """An active page's chunks in page order: the whole page an answer may quote from when one of
    its passages was retrieved. With the question's `vector`, each passage carries its similarity
    to it (a pending chunk, without a vector yet, none)."""
    # The similarity is computed where the vectors are (inner product: they are unit vectors, as
    # store/vector_index.py's exact scan on SQLite); shipping them as text and parsing them here
    # took ~4 ms a page.
    rows = conn.execute(
        "SELECT c.id, c.text, c.kind, pc.heading_path, -(c.embedding <#> %s::vector) FROM pages p "
        "JOIN page_chunks pc ON pc.page_id = p.id JOIN chunks c ON c.id = pc.chunk_id "
        "WHERE p.url = %s AND p.status = 'active' ORDER BY pc.position LIMIT %s",
        (query_to_pg(vector) if vector is not None else None, strip_nul(url), sqlite_limit(limit))).fetchall()
    passages = page_passage_rows((int(r[0]), *r[1:4]) for r in rows)
    if vector is not None:
        for passage, row in zip(passages, rows, strict=True):
            if row[4] is not None:  # a pending chunk has no vector yet, so no similarity
                passage.similarity = float(row[4])
    return passages


def record_render_decisions(conn: PgConnection, decisions: Iterable[RenderDecision]) -> None:
    """Upsert the latest decision per URL, in the caller's transaction."""
    with conn.cursor() as cursor:
        cursor.executemany(
            "INSERT INTO render_decisions(url, mode, decision, reason, render_ms, requests, blocked, at) "
            "VALUES (%s, %s, %s, %s, %s, %s, %s, %s) ON CONFLICT (url) DO UPDATE SET mode = excluded.mode, "
            "decision = excluded.decision, reason = excluded.reason, render_ms = excluded.render_ms, "
            "requests = excluded.requests, blocked = excluded.blocked, at = excluded.at",
            [without_nul(decision_row(d)) for d in decisions],
        )


_LIVE_DECISIONS = ("FROM render_decisions r LEFT JOIN pages p ON p.url = r.url "
                   "WHERE p.status IS NULL OR p.status = 'active'")


def render_stats(conn: PgConnection, limit: int = 100) -> dict:
    """Which pages needed a browser: counts by decision and reason (pages that are gone left
    out), and the rendered or failed pages themselves, newest first, up to ``limit``."""
    rows = conn.execute(
        f"SELECT r.url, r.decision, r.reason, r.render_ms, r.requests, r.blocked {_LIVE_DECISIONS} "
        "AND r.decision != 'static' ORDER BY r.at DESC LIMIT %s", (sqlite_limit(limit),)).fetchall()
    return render_summary(
        _counted(conn, f'SELECT r.decision, count(*) {_LIVE_DECISIONS} GROUP BY r.decision '
                       'ORDER BY r.decision COLLATE "C"').items(),
        _counted(conn, f'SELECT r.reason, count(*) {_LIVE_DECISIONS} GROUP BY r.reason '
                       'ORDER BY r.reason COLLATE "C"').items(),
        rows)


def record_junk(conn: PgConnection, run_id: int, urls: Iterable[JunkUrl], indexed: Iterable[str],
                *, replace: bool = False) -> None:
    """Record a crawl's junk URLs. URLs now indexed lose their record; with `replace` (a crawl
    that saw the whole site) records of earlier runs go. Call inside a transaction."""
    now = time.time()
    if replace:
        conn.execute("DELETE FROM junk_urls WHERE run_id IS DISTINCT FROM %s", (run_id,))
    with conn.cursor() as cursor:
        # One statement per URL, as SQLite's INSERT OR REPLACE: of one URL given twice the last wins.
        cursor.executemany(
            "INSERT INTO junk_urls(url, family, reason, detail, fetched, run_id, at) "
            "VALUES (%s, %s, %s, %s, %s, %s, %s) ON CONFLICT (url) DO UPDATE SET family = excluded.family, "
            "reason = excluded.reason, detail = excluded.detail, fetched = excluded.fetched, "
            "run_id = excluded.run_id, at = excluded.at",
            [without_nul((u.url, u.family, u.reason, u.detail, int(u.fetched), run_id, now)) for u in urls],
        )
        cursor.executemany("DELETE FROM junk_urls WHERE url = %s", [(strip_nul(url),) for url in indexed])


def junk_summary(conn: PgConnection, families: int = 10) -> JunkSummary:
    by_reason = _counted(conn, 'SELECT reason, count(*) FROM junk_urls GROUP BY reason ORDER BY reason COLLATE "C"')
    rows = conn.execute(
        'SELECT family, reason, count(*), sum(fetched), max(detail COLLATE "C"), min(url COLLATE "C") '
        'FROM junk_urls GROUP BY family, reason ORDER BY count(*) DESC, family COLLATE "C" LIMIT %s',
        (sqlite_limit(families),)).fetchall()
    return junk_summary_of(by_reason, [(f, r, int(n), None if k is None else int(k), d, e)
                                       for f, r, n, k, d, e in rows])


def junk_reason(conn: PgConnection, url: str) -> JunkUrl | None:
    """Why `url` was kept out of the index as junk, or None."""
    row = conn.execute("SELECT url, family, reason, detail, fetched FROM junk_urls WHERE url = %s",
                       (strip_nul(url),)).fetchone()
    return junk_url(row) if row else None


def junk_families(conn: PgConnection) -> dict[str, str]:
    """Family → reason of every URL family recorded as junk: a delta crawl refuses their URLs
    without fetching them again (a full crawl judges afresh)."""
    return dict(conn.execute(
        'SELECT family, min(reason COLLATE "C") FROM junk_urls GROUP BY family ORDER BY family COLLATE "C"'
    ).fetchall())
