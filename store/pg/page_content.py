"""Reading indexed pages back from a tenant's PostgreSQL schema: store/page_content.py's
functions, with its arguments and `PageContent` results, on a connection from PgTenants.read.

Same orders: a page's chunks by position (what SQLite's primary key gives), actions by page id
then as written. URLs are looked up without U+0000 (store/pg/nul.py), as they were stored."""

from __future__ import annotations

from collections.abc import Iterable

from store.page_content import PageContent, page_content_of
from store.pg.connect import PgConnection
from store.pg.limits import sqlite_limit
from store.pg.nul import strip_nul


def page_content(conn: PgConnection, urls: Iterable[str]) -> PageContent | None:
    """The first of `urls` that is an active page: its chunks in page order and its facts."""
    for url in urls:
        row = conn.execute(
            "SELECT id, url, title, description, lang, updated FROM pages WHERE url = %s AND status = 'active'",
            (strip_nul(url),),
        ).fetchone()
        if row is not None:
            break
    else:
        return None
    return page_content_of(
        row,
        conn.execute("SELECT pc.heading_path, c.kind, c.text FROM page_chunks pc JOIN chunks c ON c.id = pc.chunk_id "
                     "WHERE pc.page_id = %s ORDER BY pc.position", (row[0],)),
        conn.execute("SELECT type, kind, text, data FROM facts WHERE page_id = %s ORDER BY id", (row[0],)),
    )


def page_actions(conn: PgConnection, urls: list[str], limit: int = 10) -> list[tuple[str, str, str, str]]:
    """(name, label, selector, url) of the actions found on these active pages, at most `limit`:
    pages in the order they were first written, each page's actions as written."""
    if not urls:
        return []
    rows = conn.execute(
        "SELECT a.name, a.label, a.selector, a.url FROM actions a JOIN pages p ON p.id = a.page_id "
        "WHERE p.url = ANY(%s) AND p.status = 'active' ORDER BY p.id, a.id LIMIT %s",
        ([strip_nul(url) for url in urls], sqlite_limit(limit))).fetchall()
    return [(name, label, selector, url) for name, label, selector, url in rows]


def chunk_pages(conn: PgConnection) -> list[tuple[int, str]]:
    """(chunk id, page url) for every chunk of every active page, pages in id order (each page's
    chunks by position)."""
    return [(int(chunk_id), url) for chunk_id, url in conn.execute(
        "SELECT pc.chunk_id, p.url FROM page_chunks pc JOIN pages p ON p.id = pc.page_id "
        "WHERE p.status = 'active' ORDER BY p.id, pc.position")]
