"""Pages and their chunks in a tenant's PostgreSQL schema: the `PageWrite` of store/pages.py
written in the caller's transaction, tombstones, and which chunk texts are already stored. The
same rules as the SQLite module: a chunk row per distinct text (by hash), shared by every page
that has it; chunks no page links to any more are deleted with their vectors.

Every text written here goes through `without_nul` (store/pg/nul.py): PostgreSQL text cannot hold
U+0000, which a crawled page may have; the SQLite side keeps it."""

from __future__ import annotations

import json
import time
import zlib
from collections.abc import Iterable

from store.pages import PageWrite, VectorMissing, WriteStats
from store.pg.connect import PgConnection
from store.pg.nul import strip_nul, without_nul
from store.pg.textsearch import config_for
from store.pg.vectors import to_pg

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
    (PgTenants.write): nothing of it is visible until all of it is."""
    now = time.time()
    without_vector = {c.hash for c in page.chunks if c.vector is None}
    if without_vector:
        lacking = without_vector & missing_hashes(conn, without_vector)
        if lacking:
            raise VectorMissing(lacking)
    page_id, changed = _upsert_page(conn, page, now)
    old_ids = [r[0] for r in conn.execute("SELECT chunk_id FROM page_chunks WHERE page_id = %s", (page_id,))]
    conn.execute("DELETE FROM page_chunks WHERE page_id = %s", (page_id,))
    hashes = list(dict.fromkeys(c.hash for c in page.chunks))
    known: dict[str, int] = {}
    if hashes:
        known = {h: int(i) for h, i in conn.execute("SELECT hash, id FROM chunks WHERE hash = ANY(%s)", (hashes,))}
    added = 0
    new_ids: list[int] = []
    links: dict[int, tuple] = {}
    for chunk in page.chunks:
        chunk_id = known.get(chunk.hash)
        if chunk_id is None:
            assert chunk.vector is not None  # checked above: a new text comes with its vector
            inserted = conn.execute(
                "INSERT INTO chunks(hash, kind, lang, text, title, heading, tokens, created_at, embedding, ts_config) "
                "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s::vector, %s::regconfig) RETURNING id",
                without_nul((chunk.hash, chunk.kind, chunk.lang, chunk.text, page.title,
                             " > ".join(chunk.heading_path), chunk.tokens, now, to_pg(chunk.vector),
                             config_for(chunk.lang))),
            ).fetchone()
            assert inserted is not None
            chunk_id = known[chunk.hash] = int(inserted[0])
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
                      chunks_deleted=deleted)


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
